"""torch backend: special functions (``torch.special``; ``betainc``, which torch lacks, from
:mod:`ppl.backends.torch.betainc`)."""

from __future__ import annotations

import torch

from ppl.backends.torch.betainc import betainc as _betainc

__all__ = ["TorchSpecial"]


class TorchSpecial:
    """Special functions of :class:`~ppl.backends.torch.TorchBackend` (their operands arrive
    as floating tensors, see :mod:`ppl.backends.common.dtypes`)."""

    def log1p(self, x): return torch.log1p(x)
    def expm1(self, x): return torch.expm1(x)
    def gammaln(self, x): return torch.special.gammaln(x)
    def digamma(self, x): return torch.special.digamma(x)
    def erf(self, x): return torch.special.erf(x)
    def erfc(self, x): return torch.special.erfc(x)
    def erfinv(self, x): return torch.special.erfinv(x)
    def ndtri(self, x): return torch.special.ndtri(x)
    def log_ndtr(self, x): return torch.special.log_ndtr(x)
    def xlogy(self, x, y): return torch.special.xlogy(x, y)
    def xlog1py(self, x, y): return torch.special.xlog1py(x, y)
    def logit(self, x): return torch.special.logit(x)

    def ndtr(self, x):
        # 0.5 erfc(-x / sqrt 2): torch.special.ndtr loses the left tail in float32.
        return 0.5 * torch.special.erfc(x * -0.7071067811865476)

    def logsumexp(self, x, axis=None, keepdims=False):
        return torch.logsumexp(x, dim=self._all(x, axis), keepdim=keepdims)

    def polygamma(self, n, x):
        return torch.special.polygamma(int(n), x)

    def gammainc(self, a, x):
        """Regularised lower incomplete gamma ``P(a, x)`` (differentiable in ``x`` only)."""
        return torch.special.gammainc(a, x)

    def gammaincc(self, a, x):
        """Regularised upper incomplete gamma ``Q(a, x)`` (differentiable in ``x`` only)."""
        return torch.special.gammaincc(a, x)

    def betainc(self, a, b, x):
        """Regularised incomplete beta ``I_x(a, b)``; differentiable in ``x`` only."""
        return _betainc(a.to(x.dtype), b.to(x.dtype), x)
