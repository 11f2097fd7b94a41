"""tensorflow backend: special functions (``tf.math``; nothing from TensorFlow Probability, so
the backend runs without it). ``log_ndtr`` is written out here: TensorFlow has no native."""

from __future__ import annotations

import math

import tensorflow as tf

from ppl.backends.tensorflow.core import _axis, _unary

__all__ = ["TensorflowSpecial", "erf", "log_ndtr"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


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
    gammaln = _unary(tf.math.lgamma)
    digamma = _unary(tf.math.digamma)
    erf = _unary(erf, "``erf(x)``, elementwise (+-1 at +-inf in every dtype).")
    erfc = _unary(tf.math.erfc)
    erfinv = _unary(tf.math.erfinv)
    ndtri = _unary(tf.math.ndtri)
    log_ndtr = _unary(log_ndtr, "``log(ndtr(x))``, stable in both tails.")

    def xlogy(self, x, y): return self._ew(tf.math.xlogy, x, y)
    def xlog1py(self, x, y): return self._ew(tf.math.xlog1py, x, y)
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
