"""tensorflow backend: special functions (``tf.math``; nothing from TensorFlow Probability, so
the backend runs without it). ``log_ndtr`` is written out here: TensorFlow has no native. So are
``ndtri`` and ``erfinv`` (:func:`ndtri`, :func:`erfinv`): TensorFlow's own kernels and XLA's
lowerings disagree, and each is wrong somewhere (see there). ``digamma``, ``gammaln``, ``xlogy``
and ``xlog1py`` wrap ``tf.math``'s with SciPy's values where those differ (at 0 and float64's
subnormals, at ``-inf``, at a NaN ``y``)."""

from __future__ import annotations

import math

import tensorflow as tf

from ppl.backends.tensorflow.core import _axis, _unary

__all__ = ["TensorflowSpecial", "digamma", "erf", "erfinv", "gammaln", "log_ndtr", "ndtri"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_EULER = 0.5772156649015329
#: below this ``|x|``, ``digamma(x) = -1/x - euler`` and ``gammaln(x) = -log|x| - euler x`` to
#: float64's rounding (the next terms are ``(pi^2/6) x`` and ``(pi^2/12) x^2``)
_NEAR_ZERO = 1e-9

# Cephes' ndtri (S. L. Moshier, Cephes Math Library 2.8, 2000; SciPy's ``ndtri``): rational
# approximations of the normal quantile, coefficients from the highest degree down. P0/Q0 on the
# central part, x = w + w^3 P0(w^2)/Q0(w^2) (times sqrt(2 pi)) for w = p - 1/2,
# |w| <= 1/2 - e^-2; in the tails z = sqrt(-2 log q), q = min(p, 1 - p), and
# |x| = z - log(z)/z - (1/z) P(1/z)/Q(1/z) with P1/Q1 for z < 8, P2/Q2 beyond.
_P0 = (-5.99633501014107895267e1, 9.80010754185999661536e1, -5.66762857469070293439e1,
       1.39312609387279679503e1, -1.23916583867381258016e0)
_Q0 = (1.0, 1.95448858338141759834e0, 4.67627912898881538453e0, 8.63602421390890590575e1,
       -2.25462687854119370527e2, 2.00260212380060660359e2, -8.20372256168333339912e1,
       1.59056225126211695515e1, -1.18331621121330003142e0)
_P1 = (4.05544892305962419923e0, 3.15251094599893866154e1, 5.71628192246421288162e1,
       4.40805073893200834700e1, 1.46849561928858024014e1, 2.18663306850790267539e0,
       -1.40256079171354495875e-1, -3.50424626827848203418e-2, -8.57456785154685413611e-4)
_Q1 = (1.0, 1.57799883256466749731e1, 4.53907635128879210584e1, 4.13172038254672030440e1,
       1.50425385692907503408e1, 2.50464946208309415979e0, -1.42182922854787788574e-1,
       -3.80806407691578277194e-2, -9.33259480895457427372e-4)
_P2 = (3.23774891776946035970e0, 6.91522889068984211695e0, 3.93881025292474443415e0,
       1.33303460815807542389e0, 2.01485389549179081538e-1, 1.23716634817820021358e-2,
       3.01581553508235416007e-4, 2.65806974686737550832e-6, 6.23974539184983293730e-9)
_Q2 = (1.0, 6.02427039364742014255e0, 3.67983563856160859403e0, 1.37702099489081330271e0,
       2.16236993594496635890e-1, 1.34204006088543189037e-2, 3.28014464682127739104e-4,
       2.89247864745380683936e-6, 6.79019408009981274425e-9)
_CENTRAL = 0.5 - math.exp(-2.0)


def _full(x, value):
    """A tensor of ``value`` with ``x``'s shape and dtype."""
    return tf.fill(tf.shape(x), tf.constant(value, x.dtype))


def _polyval(coefficients, x):
    out = coefficients[0] * tf.ones_like(x)
    for c in coefficients[1:]:
        out = out * x + c
    return out


def _normal_quantile(w_ratio, w, q, upper):
    """The normal quantile ``ndtri(p)``, scaled, from exact pieces of ``p``.

    ``w`` is ``p - 1/2``; near the centre the result is ``w_ratio * (1 + w^2 P0(w^2)/Q0(w^2))``
    where ``w_ratio = sqrt(2 pi) w`` (passed separately so that ``erfinv`` of a subnormal ``x``
    need not halve it). ``q = min(p, 1 - p)`` feeds the tails, ``upper`` says ``p > 1/2``.
    ``q = 0`` gives +-inf, a NaN ``q`` NaN. Each branch sees safe arguments only."""
    central = tf.abs(w) <= _CENTRAL
    ww = tf.square(tf.where(central, w, tf.zeros_like(w)))
    middle = w_ratio * (1.0 + ww * _polyval(_P0, ww) / _polyval(_Q0, ww))
    tail_q = tf.where(central | (q <= 0.0), _full(q, 0.1), q)
    z = tf.sqrt(-2.0 * tf.math.log(tail_q))
    r = 1.0 / z
    near = tf.where(z < 8.0, r * _polyval(_P1, r) / _polyval(_Q1, r),
                    r * _polyval(_P2, r) / _polyval(_Q2, r))
    tail = z - tf.math.log(z) / z - near
    tail = tf.where(q <= 0.0, _full(q, math.inf), tail)
    return tf.where(central, middle, tf.where(upper, tail, -tail))


@tf.custom_gradient
def ndtri(p):
    """``scipy.special.ndtri(p)``: the standard normal quantile, NaN outside ``[0, 1]``.

    Cephes' algorithm, written out so that eager runs and ``jit`` agree: TensorFlow's eager
    kernel is Cephes' too, but XLA lowers ``tf.math.ndtri`` to ``sqrt(2) erfinv(2p - 1)``, where
    ``2p - 1`` rounds to -1 for small ``p``: ``-inf`` from ``p ~ 1e-8`` in float32 and
    ``p ~ 1e-17`` in float64. Here ``p - 1/2`` and ``min(p, 1 - p)`` are exact where used. The
    derivative is ``sqrt(2 pi) exp(x^2 / 2)``."""
    q = tf.minimum(p, 1.0 - p)
    x = _normal_quantile(math.sqrt(2.0 * math.pi) * (p - 0.5), p - 0.5, q, p > 0.5)
    x = tf.where((p < 0.0) | (p > 1.0), _full(p, math.nan), x)

    def grad(dy):
        return dy * math.sqrt(2.0 * math.pi) * tf.exp(0.5 * tf.square(x))

    return x, grad


@tf.custom_gradient
def erfinv(x):
    """``scipy.special.erfinv(x)``, NaN outside ``[-1, 1]``: ``ndtri((1 + x)/2) / sqrt(2)``
    through the pieces of :func:`ndtri`, ``x/2`` and ``(1 - |x|)/2``, both exact.

    TensorFlow's eager kernel computes ``ndtri((1 + x)/2)`` with the rounded ``(1 + x)/2``:
    ``erfinv(x)`` is 0 for ``|x|`` up to 1e-16 in float64 (1e-7 in float32) and wrong in its
    leading digits above; XLA's (``jit``) is accurate, and this is one algorithm for both. The
    derivative is ``sqrt(pi)/2 exp(y^2)``."""
    half = 0.5 * x
    q = 0.5 * (1.0 - tf.abs(x))
    y = _normal_quantile(math.sqrt(0.5 * math.pi) * x, half, q, x > 0.0) / math.sqrt(2.0)
    y = tf.where(tf.abs(x) > 1.0, _full(x, math.nan), y)

    def grad(dy):
        return dy * (0.5 * math.sqrt(math.pi)) * tf.exp(tf.square(y))

    return y, grad


def digamma(x):
    """``tf.math.digamma`` with SciPy's values near 0: ``-1/x - euler`` for ``|x| < 1e-9``, so
    ``-inf`` at +0 and ``+inf`` at -0 (TensorFlow gives NaN at both, and at float64's
    subnormals)."""
    small = tf.abs(x) < _NEAR_ZERO
    near_zero = -1.0 / x - _EULER
    return tf.where(small, near_zero, tf.math.digamma(tf.where(small, tf.ones_like(x), x)))


def gammaln(x):
    """``tf.math.lgamma`` (``log|Gamma(x)|``) with SciPy's ``-inf`` at ``-inf`` (TensorFlow:
    ``+inf``) and ``-log|x| - euler x`` for ``|x| < 1e-9``: TensorFlow's kernel gave 745.1 at
    float64's subnormal 1e-310, this gives SciPy's ``inf`` there (``log`` of a subnormal is
    ``-inf`` in TensorFlow)."""
    small = tf.abs(x) < _NEAR_ZERO
    near_zero = -tf.math.log(tf.abs(x)) - _EULER * x
    out = tf.where(small, near_zero, tf.math.lgamma(tf.where(small, tf.ones_like(x), x)))
    return tf.where(x == -math.inf, x, out)


def _nan_where_y_is(fn):
    """``fn(x, y)`` with NaN where ``y`` is NaN, as SciPy (TensorFlow gives 0 where ``x`` is)."""
    def op(x, y):
        out = fn(x, y)
        return tf.where(tf.math.is_nan(y), _full(out, math.nan), out)

    return op


def _xlogy(x, y):
    """``x log(y)``, 0 where ``x = 0``; written out because ``tf.math.xlogy``'s gradient in
    ``x`` is 0 at ``x = 0`` where it is ``log(y)`` (``Beta(1.0, b)``'s gradient in its
    concentration was wrong). Where ``x = 0`` and ``y`` is not in ``(0, inf)`` the log sees 1."""
    x = tf.broadcast_to(x, tf.broadcast_dynamic_shape(tf.shape(x), tf.shape(y)))
    ok = tf.logical_and(y > 0, y < math.inf)
    safe = tf.where(tf.logical_and(tf.equal(x, 0), tf.logical_not(ok)), tf.ones_like(x), y)
    return x * tf.math.log(safe)


def _xlog1py(x, y):
    """``x log(1 + y)``, 0 where ``x = 0`` (as :func:`_xlogy`)."""
    x = tf.broadcast_to(x, tf.broadcast_dynamic_shape(tf.shape(x), tf.shape(y)))
    ok = tf.logical_and(y > -1, y < math.inf)
    safe = tf.where(tf.logical_and(tf.equal(x, 0), tf.logical_not(ok)), tf.zeros_like(x), y)
    return x * tf.math.log1p(safe)


def log_ndtr(x):
    """``log(Phi(x))``, stable in both tails.

    Above the lower threshold (-10 in float32, -20 in float64) it is ``log(erfc(-x/sqrt 2)/2)``
    (``log1p(-Phi(-x))`` for ``x > 0``, which keeps the upper tail's precision); below it, the
    asymptotic series of Abramowitz & Stegun (1964), 26.2.12, to ``x^-12``. Each branch gets
    inputs clamped to its own range, so neither puts a NaN into the other's gradient.
    """
    lower = -10.0 if x.dtype == tf.float32 else -20.0
    s = -1.0 / math.sqrt(2.0)
    mid = tf.clip_by_value(x, lower, 0.0)
    up = tf.maximum(x, 0.0)
    low = tf.minimum(x, lower)
    mid_v = tf.math.log(0.5 * tf.math.erfc(mid * s))
    up_v = tf.math.log1p(-0.5 * tf.math.erfc(up * -s))
    z = 1.0 / tf.square(low)
    series = 1.0 + z * (-1.0 + z * (3.0 + z * (-15.0 + z * (105.0 + z * (-945.0
                                                                          + z * 10395.0)))))
    low_v = -0.5 * tf.square(low) - tf.math.log(-low) - _LOG_SQRT_2PI + tf.math.log(series)
    return tf.where(x > 0, up_v, tf.where(x < lower, low_v, mid_v))


def erf(x):
    """``tf.math.erf`` of ``x`` clamped to ``[-30, 30]``: TensorFlow's own kernel (XLA's is
    fine) gives NaN in float64 from ``|x|`` ~ 1e154, where ``x * x`` overflows, and beyond 30
    ``erf`` is exactly +-1 and its derivative exactly 0 in every float dtype, so the clamp
    changes neither. (Not ``clip_by_value``: its gradient at NaN is 0, not NaN.)"""
    return tf.math.erf(tf.where(tf.abs(x) > 30.0, tf.sign(x) * 30.0, x))


class TensorflowSpecial:
    """Special functions of :class:`~ppl.backends.tensorflow.TensorflowBackend`."""

    log1p = _unary(tf.math.log1p)
    expm1 = _unary(tf.math.expm1)
    gammaln = _unary(gammaln, "``log|Gamma(x)|``, elementwise (``-inf`` at ``-inf``).")
    digamma = _unary(digamma, "``digamma(x)``, elementwise (``-1/x`` at +-0).")
    erf = _unary(erf, "``erf(x)``, elementwise (+-1 at +-inf in every dtype).")
    erfc = _unary(tf.math.erfc)
    erfinv = _unary(erfinv, "``erfinv(x)``, elementwise, the same eagerly and under ``jit``.")
    ndtri = _unary(ndtri, "``ndtri(p)``, elementwise, the same eagerly and under ``jit``.")
    log_ndtr = _unary(log_ndtr, "``log(ndtr(x))``, stable in both tails.")

    def xlogy(self, x, y): return self._ew(_nan_where_y_is(_xlogy), x, y)
    def xlog1py(self, x, y): return self._ew(_nan_where_y_is(_xlog1py), x, y)
    def gammainc(self, a, x): return self._ew(tf.math.igamma, a, x)
    def gammaincc(self, a, x): return self._ew(tf.math.igammac, a, x)

    def betainc(self, a, b, x):
        """``tf.math.betainc`` (differentiable in ``x`` only), broadcast first (TensorFlow
        broadcasts only scalars against arrays)."""
        a, b, x = self._ins(a, b, x)
        shape = tf.broadcast_static_shape(tf.broadcast_static_shape(a.shape, b.shape), x.shape)
        return tf.math.betainc(*(tf.broadcast_to(t, shape) for t in (a, b, x)))

    def logaddexp(self, x, y):
        x, y = self._ins(x, y)
        m = tf.maximum(x, y)
        finite = tf.where(tf.math.is_finite(m), m, tf.zeros_like(m))
        return m + tf.math.log1p(tf.exp(tf.minimum(x, y) - finite))

    def polygamma(self, n, x):
        """``tf.math.polygamma``; ``n`` (integer-valued) is passed in ``x``'s dtype."""
        x = self._in(x)
        n, x = self._ins(tf.cast(self._in(n), x.dtype), x)
        return tf.math.polygamma(n, x)

    def logsumexp(self, x, axis=None, keepdims=False):
        return tf.reduce_logsumexp(x, axis=_axis(axis), keepdims=keepdims)
