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
_HALF_LOG_2PI = 0.5 * _LOG_2PI
#: from this larger argument on, :meth:`Special.betaln` takes ``gammaln``'s differences from
#: Stirling's series (the composite ``gammaln(a) + gammaln(b) - gammaln(a + b)`` cancels)
_STIRLING_FROM = 10.0
#: ``gammaln(x) - [(x - 1/2) log x - x + log(2 pi)/2] = (1/x) sum_k c_k x^(-2k)``, ``c_k =
#: B_2(k+1) / ((2k + 2)(2k + 1))`` (Abramowitz & Stegun 1964, 6.1.40); from ``x = 10`` on the
#: first term left out is below ``3e-17``
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)


def _stirling_remainder(b, x):
    """The remainder of Stirling's series, ``gammaln(x) - (x - 1/2) log x + x - log(2 pi)/2``,
    for ``x >= 10`` (backend ``b``'s ops)."""
    z = 1.0 / x
    z2 = z * z
    acc = _STIRLING[-1] * b.ones_like(z)
    for c in reversed(_STIRLING[:-1]):
        acc = acc * z2 + c
    return z * acc


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
        """``log|B(a, b)|`` (``scipy.special.betaln``), accurate for large arguments and with
        SciPy's values where an argument is 0 or infinite.

        With ``x = min(a, b) > 0`` and ``y = max(a, b) >= 10``, ``gammaln(y) - gammaln(x + y)``
        is not the difference of two large numbers (it cancels to nothing in float32 from
        ``y ~ 1e7``, and ``betaln(1, 1e30)`` was 0) but Stirling's series differenced by hand,
        as in DiDonato & Morris (1992, ACM TOMS 18, Algorithm 708, ``betaln``):
        ``x (1 - log s) - (y - 1/2) log1p(x/y) + r(y) - r(s)`` with ``s = x + y`` and ``r`` the
        series' remainder; for ``x >= 10`` too, ``gammaln(x)`` joins the sum in the same form.
        Elsewhere (small or negative arguments) ``gammaln(a) + gammaln(b) - gammaln(a + b)``.
        The arguments are ordered with ``where`` (not ``minimum``/``maximum``, whose gradients
        at ties differ between frameworks), and each branch sees safe arguments only."""
        first = a <= b                   # NaN: False; made NaN at the end
        x, y = self.where(first, a, b), self.where(first, b, a)
        series = self.logical_and(x > 0, y >= _STIRLING_FROM)
        both = self.logical_and(series, x >= _STIRLING_FROM)
        one = self.ones_like(x)
        xs, ys = self.where(series, x, one), self.where(series, y, _STIRLING_FROM * one)
        s = xs + ys
        log1p_ratio = self.log1p(xs / ys)
        remainders = _stirling_remainder(self, ys) - _stirling_remainder(self, s)
        # gammaln(y) - gammaln(x + y), then gammaln(x) added as a number or as a series
        tail = xs * (1.0 - self.log(s)) - (ys - 0.5) * log1p_ratio + remainders
        x_small = self.gammaln(self.where(both, one, xs)) + tail
        xb = self.where(both, xs, _STIRLING_FROM * one)
        x_large = (xb * self.log(xb / s) - 0.5 * self.log(xb) - (ys - 0.5) * log1p_ratio
                   + _HALF_LOG_2PI + _stirling_remainder(self, xb) + remainders)
        xn, yn = self.where(series, one, x), self.where(series, one, y)
        out = self.where(series, self.where(both, x_large, x_small),
                         self.gammaln(xn) + self.gammaln(yn) - self.gammaln(xn + yn))
        # SciPy at the edges: B(x, inf) = 0 for x > 0 (NaN at x = inf), +inf from x <= 0 or
        # an argument -inf or 0
        at_inf = self.where(x > 0, self.where(x == math.inf, math.nan * one, -math.inf * one),
                            math.inf * one)
        out = self.where(y == math.inf, at_inf, out)
        out = self.where(self.logical_or(x == -math.inf, x == 0), math.inf * one, out)
        return self.where(self.isnan(x + y), math.nan * one, out)

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
