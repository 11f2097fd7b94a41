"""jax backend: special functions (``jax.scipy.special``)."""

from __future__ import annotations

import jax.numpy as jnp
import jax.scipy.special as jsp

from ppl.backends.jax.core import _axis, _unary

__all__ = ["JaxSpecial"]


class JaxSpecial:
    """Special functions of :class:`~ppl.backends.jax.JaxBackend`."""

    log1p = _unary(jnp.log1p)
    expm1 = _unary(jnp.expm1)
    gammaln = _unary(jsp.gammaln)
    digamma = _unary(jsp.digamma)
    erf = _unary(jsp.erf)
    erfc = _unary(jsp.erfc)
    erfinv = _unary(jsp.erfinv)
    ndtr = _unary(jsp.ndtr)
    ndtri = _unary(jsp.ndtri)
    log_ndtr = _unary(jsp.log_ndtr)
    logit = _unary(jsp.logit)

    def xlogy(self, x, y): return self._ew(jsp.xlogy, x, y)
    def xlog1py(self, x, y): return self._ew(jsp.xlog1py, x, y)
    def betaln(self, a, b): return self._ew(jsp.betaln, a, b)
    def gammainc(self, a, x): return self._ew(jsp.gammainc, a, x)
    def gammaincc(self, a, x): return self._ew(jsp.gammaincc, a, x)
    def betainc(self, a, b, x): return self._ew(jsp.betainc, a, b, x)

    def polygamma(self, n, x):
        """``jax.scipy.special.polygamma``; ``n`` (integer-valued) is cast to an integer dtype."""
        n = self._in(n)
        if not jnp.issubdtype(n.dtype, jnp.integer):
            n = n.astype(self._dt("int64"))
        return jsp.polygamma(n, x)

    def logsumexp(self, x, axis=None, keepdims=False):
        return jsp.logsumexp(x, axis=_axis(axis), keepdims=keepdims)
