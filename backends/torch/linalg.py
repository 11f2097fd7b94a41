"""torch backend: linear algebra (``torch.linalg``)."""

from __future__ import annotations

import math

import torch

from ppl.backends.torch.tracing import tracing as _tracing

__all__ = ["TorchLinalg"]


class TorchLinalg:
    """Linear algebra of :class:`~ppl.backends.torch.TorchBackend`.

    ``cholesky`` returns NaNs for a matrix that is not positive definite (as JAX does) instead
    of raising, so a sampler sees a NaN log-density (a divergence) rather than an exception.
    """

    def matmul(self, a, b):
        a, b = self._t(a), self._t(b)
        if a.ndim == 2 and b.ndim == 1 and a.shape[1] == b.shape[0]:   # (else torch's own error)
            # ``x @ beta`` as ``beta @ x.T``: the same product, but under ``vmap`` over chains
            # (``beta`` batched) torch's matrix-vector rule computes ``x @ betas.T``, an
            # ``(N, chains)`` result whose elementwise work inductor then vectorizes along the
            # chains (4 of 16 lanes) and transposes for the gradient's product; the
            # vector-matrix rule gives ``(chains, N)``, rows along the data. Logistic regression
            # (N = 2000, 4 chains), a compiled leapfrog: ~200 -> ~55 us of kernels. ``b`` copied:
            # a slice of the chains' positions (strided rows) made the batched product a ``bmm``
            # against ``x.T`` expanded per chain, which inductor computes as 8000 dot products
            # of 25 (2.3 -> 1.9 s of compiled loop per run); a contiguous ``b`` makes it one ``mm``
            return torch.matmul(b.clone(), a.mT)
        return torch.matmul(a, b)

    def einsum(self, subscripts, *operands):
        return torch.einsum(subscripts, *[self._t(o) for o in operands])

    def matrix_transpose(self, x):
        return torch.transpose(self._t(x), -1, -2)

    def diagonal(self, x, offset=0, axis1=-2, axis2=-1):
        return torch.diagonal(self._t(x), offset=offset, dim1=axis1, dim2=axis2)

    def cholesky(self, a):
        """Lower Cholesky factor; NaN where ``a`` is not positive definite (as in JAX)."""
        l, info = torch.linalg.cholesky_ex(a)
        if torch._C._are_functorch_transforms_active() or _tracing() or (
                info.item() != 0 if info.ndim == 0 else bool(info.any())):
            l = torch.where((info == 0)[..., None, None], l, math.nan)
        return l

    def solve_triangular(self, a, b, lower=True):
        if b.ndim == 1:
            return torch.linalg.solve_triangular(a, b[:, None], upper=not lower)[..., 0]
        return torch.linalg.solve_triangular(a, b, upper=not lower)

    def cho_solve(self, c, b, lower=True):
        if b.ndim == 1:
            return torch.cholesky_solve(b[:, None], c, upper=not lower)[..., 0]
        return torch.cholesky_solve(b, c, upper=not lower)

    def solve(self, a, b): return torch.linalg.solve(a, b)
    def inv(self, a): return torch.linalg.inv(a)
    def det(self, a): return torch.linalg.det(a)

    def slogdet(self, a):
        sign, logabsdet = torch.linalg.slogdet(a)
        return sign, logabsdet
