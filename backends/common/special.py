"""Special functions. Every one is a floating op (:mod:`ppl.backends.common.dtypes`): integer and
boolean arguments are computed in the backend's float dtype."""

from __future__ import annotations

import math

from ppl.backends.common.core import not_implemented
from ppl.backends.common.dtypes import floating

__all__ = ["Special"]

_LOG_2PI = math.log(2.0 * math.pi)
#: below this ``y``, :meth:`Special.ndtri_exp` solves ``log_ndtr(z) = y`` by Newton's method
_TAIL_LOG_P = -10.0
#: above this ``y`` (``exp(y) > 0.8647``, as SciPy's ``ndtri_exp``), it takes ``-ndtri(-expm1(y))``
_TOP_LOG_P = -0.14541345786885906


class Special:
    """``scipy.special``'s functions that probabilistic code needs (primitives and composites)."""

    @floating()
    def log1p(self, x): raise not_implemented(self, "log1p")
    @floating()
    def expm1(self, x): raise not_implemented(self, "expm1")
    @floating()
    def gammaln(self, x): raise not_implemented(self, "gammaln")
    @floating()
    def digamma(self, x): raise not_implemented(self, "digamma")
    @floating()
    def erf(self, x): raise not_implemented(self, "erf")
    @floating()
    def erfc(self, x): raise not_implemented(self, "erfc")
    @floating()
    def erfinv(self, x): raise not_implemented(self, "erfinv")
    @floating()
    def ndtri(self, x): raise not_implemented(self, "ndtri")
    @floating()
    def log_ndtr(self, x): raise not_implemented(self, "log_ndtr")
    @floating("x", "y")
    def xlogy(self, x, y): raise not_implemented(self, "xlogy")
    @floating("x", "y")
    def xlog1py(self, x, y): raise not_implemented(self, "xlog1py")
    @floating()
    def logsumexp(self, x, axis=None, keepdims=False): raise not_implemented(self, "logsumexp")
    @floating("x")
    def polygamma(self, n, x): raise not_implemented(self, "polygamma")
    @floating("a", "x")
    def gammainc(self, a, x): raise not_implemented(self, "gammainc")
    @floating("a", "x")
    def gammaincc(self, a, x): raise not_implemented(self, "gammaincc")
    @floating("a", "b", "x")
    def betainc(self, a, b, x): raise not_implemented(self, "betainc")

    @floating("x", "y")
    def logaddexp(self, x, y):
        """``log(exp(x) + exp(y))`` elementwise, exact when both are ``-inf`` (composite;
        backends with a native ``logaddexp`` should override it)."""
        m = self.maximum(x, y)
        finite_m = self.where(self.isfinite(m), m, 0.0)
        return m + self.log1p(self.exp(self.minimum(x, y) - finite_m))

    @floating()
    def logit(self, x):
        return self.log(x) - self.log1p(-x)

    @floating("a", "b")
    def betaln(self, a, b):
        return self.gammaln(a) + self.gammaln(b) - self.gammaln(a + b)

    @floating()
    def ndtr(self, x):
        return 0.5 * self.erfc(-x / math.sqrt(2.0))

    @floating()
    def ndtri_exp(self, y):
        """``ndtri(exp(y))`` for ``y <= 0``, NaN above (``scipy.special.ndtri_exp``), accurate where
        ``exp(y)`` underflows or ``ndtri`` loses its tail (XLA's, under TensorFlow's ``jit``, is
        ``-inf`` from ``p ~ 1e-8`` in float32). Near 0 (``y > -0.1454``, where ``exp(y)`` rounds
        to 1) it solves for ``1 - p = -expm1(y)`` instead and negates (the normal's symmetry).
        Down to ``y = -10``: ``ndtri(exp(y))``. Below:
        Newton's method on ``log_ndtr(z) = y`` (slope ``phi(z) / Phi(z)``) from the root of its
        asymptotic form ``log Phi(z) ~ -z^2/2 - log(-z) - log(2 pi)/2`` (Abramowitz & Stegun
        1964, 26.2.12), ``z^2 ~ t - log t - log 2 pi`` with ``t = -2 y``: the start is within
        0.5 % of the root and each step squares the error, so three reach float64's precision.
        Both branches see safe arguments, so gradients stay finite."""
        # near 0, exp(y) rounds to 1: ndtri(p) = -ndtri(1 - p), 1 - p = -expm1(y) exact, so
        # solve at q = log(1 - p) <= -2 instead; below the top, at q = y
        upper = y > _TOP_LOG_P
        one_minus_p = -self.expm1(self.maximum(y, _TOP_LOG_P))
        finite = self.where(upper, one_minus_p > 0, y > -math.inf)      # not y = 0 or -inf
        q = self.where(upper, self.log(self.where(one_minus_p > 0, one_minus_p, 1.0)),
                       self.where(finite, y, _TAIL_LOG_P))
        tail = q < _TAIL_LOG_P
        t = -2.0 * self.minimum(q, _TAIL_LOG_P)
        z = -self.sqrt(t - self.log(t) - _LOG_2PI)
        for _ in range(3):
            lz = self.log_ndtr(z)
            z = z - (lz + 0.5 * t) * self.exp(lz + 0.5 * z * z + 0.5 * _LOG_2PI)
        z = self.where(tail, z, self.ndtri(self.exp(self.maximum(q, _TAIL_LOG_P))))
        z = self.where(finite, z, -math.inf * self.ones_like(z))
        z = self.where(upper, -z, z)
        return self.where(y <= 0, z, math.nan * self.ones_like(z))      # y > 0 or NaN: NaN
