"""tensorflow backend: functional random keys and samplers over TensorFlow's stateless ops.

A key is an ``int64`` tensor of shape ``(2,)``: plain data, so keys stack, ``vmap``, ``scan``
and cross ``jit`` boundaries like any other tensor. Every derivation and draw is one of
TensorFlow's stateless Philox ops (Salmon et al. 2011, "Parallel random numbers: as easy as 1,
2, 3", SC'11), whose seed is scrambled into a Philox key and counter, so distinct seeds give
unrelated streams:

* ``split(key, n)``: ``n`` pairs of full-range 64-bit integers drawn from ``key`` (with a tag
  XOR-ed into its first word, so splitting and drawing from one key differ);
* ``fold_in(key, data)``: two 64-bit integers drawn from ``key`` with ``data`` XOR-ed into its
  second word (and another tag into the first); ``data`` may be a traced integer tensor;
* ``uniform``/``normal``: full-range integer bits turned into floats by integer arithmetic
  (the top 24 bits in float32, 52-53 in float64), ``normal`` through ``sqrt(2) erfinv(v)``.
  TensorFlow's own float samplers give different numbers under XLA than eagerly; its integer
  bits do not, so the same key gives the same uniform draw inside and outside ``jit``.

``gamma``, ``poisson`` and ``binomial`` are TensorFlow's stateless samplers seeded with the key
(``gamma`` is reparameterised: differentiable in ``a``). They have no XLA kernels: ``jit`` of a
function that draws them runs as a TensorFlow graph instead (:mod:`.compile`).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from ppl.backends.tensorflow.core import _shape, _Tensor

__all__ = ["TensorflowRandom"]

_M64 = (1 << 64) - 1
_TAG_SPLIT, _TAG_FOLD, _TAG_DRAW = 0x5851F42D4C957F2D, 0x2545F4914F6CDD1D, 0x14057B7EF767814F


def _signed(w: int) -> int:
    w &= _M64
    return w - (1 << 64) if w >> 63 else w


def _mix(z: int) -> int:
    """SplitMix64 finaliser (Steele, Lea & Flood 2014): a seed's key words."""
    z = (z + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _tagged(key, tag: int, data=None):
    """The Philox seed of ``key`` with ``tag`` XOR-ed into its first word (and ``data`` into
    its second)."""
    key = tf.cast(key, tf.int64)
    second = tf.zeros((), tf.int64) if data is None else tf.cast(data, tf.int64)
    return tf.bitwise.bitwise_xor(key, tf.stack([tf.constant(_signed(tag), tf.int64), second]))


def _words(key, tag, shape, dtype=tf.int64, data=None):
    return tf.random.stateless_uniform(shape, seed=_tagged(key, tag, data), minval=None,
                                       maxval=None, dtype=dtype, alg="philox")


def _check_key(key):
    if not isinstance(key, _Tensor):
        key = tf.constant(np.asarray(key), tf.int64)
    if key.shape.rank != 1 or key.shape[0] != 2 or not key.dtype.is_integer:
        raise ValueError(
            f"key must be an integer array of shape (2,), got shape {tuple(key.shape)} and "
            f"dtype {key.dtype.name}. Make one with ppl.random.key(seed); pick one row of "
            "ppl.random.split(key, n).")
    return key


def uniform_bits(key, shape, dtype: tf.DType, open_interval: bool = False):
    """Uniform floats on ``[0, 1)`` (``(-1, 1)`` with ``open_interval``, symmetric and never
    reaching the ends), computed exactly from integer bits."""
    bits = _words(key, _TAG_DRAW, shape, tf.uint64)
    keep = 24 if dtype == tf.float32 else 52 if open_interval else 53
    top = tf.cast(tf.bitwise.right_shift(bits, tf.constant(64 - keep, tf.uint64)), tf.int64)
    if open_interval:      # odd integers in (-2^keep, 2^keep): exact in the float dtype
        return tf.cast(2 * top + 1 - (1 << keep), dtype) * (2.0 ** -keep)
    return tf.cast(top, dtype) * (2.0 ** -keep)


class TensorflowRandom:
    """Random keys and samplers of :class:`~ppl.backends.tensorflow.TensorflowBackend`."""

    def random_key(self, seed):
        if isinstance(seed, _Tensor | np.ndarray):
            seed = np.asarray(seed).item()
        if not isinstance(seed, int | np.integer) or isinstance(seed, bool):
            raise TypeError(f"random.key: seed must be an integer, got {seed!r}.")
        if not -(1 << 63) <= int(seed) < (1 << 64):
            raise ValueError(f"random.key: seed must fit in 64 bits, got {seed}.")
        s = int(seed) & _M64
        with self._on_device():
            return tf.constant([_signed(_mix(s ^ _TAG_SPLIT)), _signed(_mix(_mix(s) ^ _TAG_FOLD))],
                               tf.int64)

    def random_split(self, key, num=2):
        return _words(_check_key(key), _TAG_SPLIT, (int(num), 2))

    def random_fold_in(self, key, data):
        if isinstance(data, int | np.integer):
            data = _signed(int(data))
        return _words(_check_key(key), _TAG_FOLD, (2,), data=data)

    def random_uniform(self, key, shape=(), dtype=None, minval=0.0, maxval=1.0):
        dt = self._dt(dtype)
        u = uniform_bits(_check_key(key), _shape(shape), dt)
        if not (isinstance(minval, int | float) and isinstance(maxval, int | float)
                and minval == 0.0 and maxval == 1.0):
            lo, hi = tf.cast(self._in(minval), dt), tf.cast(self._in(maxval), dt)
            u = lo + u * (hi - lo)
        return u

    def random_normal(self, key, shape=(), dtype=None):
        v = uniform_bits(_check_key(key), _shape(shape), self._dt(dtype), open_interval=True)
        return np.sqrt(2.0) * tf.math.erfinv(v)

    def _sample_dt(self, dtype, *params):
        if dtype is not None:
            return self._dt(dtype)
        for p in params:
            if isinstance(p, _Tensor) and p.dtype.is_floating:
                return p.dtype
        return self._float

    def _seed(self, key):
        return _tagged(_check_key(key), _TAG_DRAW)

    def random_gamma(self, key, a, shape=None, dtype=None):
        """Standard gamma draws, reparameterised (differentiable in ``a``)."""
        dt = self._sample_dt(dtype, a)
        a = tf.cast(self._in(a), dt)
        shape = self.shape(a) if shape is None else _shape(shape)
        a = tf.broadcast_to(a, shape)
        draws = tf.random.stateless_gamma(shape, self._seed(key), alpha=a, dtype=dt)
        # a = 0 is a point mass at 0, as jax.random.gamma gives (TensorFlow: the dtype's tiny)
        return tf.where(tf.equal(a, 0.0), tf.zeros_like(draws), draws)

    def random_poisson(self, key, lam, shape=None, dtype=None):
        """Poisson counts, ``int64`` unless ``dtype`` says otherwise.

        A NaN or negative rate gives -1, as ``jax.random.poisson`` does, and ``+inf`` the
        largest value of ``dtype`` (JAX saturates there for finite rates beyond the integer
        range; its draws at ``+inf`` itself are a mix of 0 and that value). TensorFlow's sampler
        never returns for a NaN rate, so such rates are drawn at rate 0 and replaced; valid
        rates draw exactly what they drew before.
        """
        lam = tf.cast(self._in(lam), self._sample_dt(None, lam))
        shape = self.shape(lam) if shape is None else _shape(shape)
        lam = tf.broadcast_to(lam, shape)
        dt = tf.int64 if dtype is None else self._dt(dtype)
        # (not ``~(lam >= 0)``: TensorFlow's graph optimiser rewrites that to ``lam < 0``)
        invalid = tf.math.is_nan(lam) | (lam < 0)
        infinite = tf.equal(lam, np.inf)
        safe = tf.where(invalid | infinite, tf.zeros_like(lam), lam)
        draws = tf.random.stateless_poisson(shape, self._seed(key), safe, dtype=dt)
        top = tf.constant(dt.max if dt.is_integer else np.inf, dt)
        return tf.where(invalid, tf.constant(-1, dt), tf.where(infinite, top, draws))

    def random_randint(self, key, shape, minval, maxval, dtype=None):
        dt = tf.int64 if dtype is None else self._dt(dtype)
        # an empty range (maxval <= minval) gives minval, as jax.random.randint
        if isinstance(minval, _Tensor) or isinstance(maxval, _Tensor):
            # in float64: a float32 uniform has 24 bits (randint(0, 1e8) drew 8 % odd numbers)
            lo = tf.cast(self._in(minval), tf.float64)
            hi = tf.maximum(tf.cast(self._in(maxval), tf.float64), lo + 1)
            u = self.random_uniform(key, shape, dtype="float64")
            return tf.cast(tf.minimum(tf.floor(lo + u * (hi - lo)), hi - 1), dt)
        r = tf.random.stateless_uniform(_shape(shape), self._seed(key), minval=int(minval),
                                        maxval=max(int(maxval), int(minval) + 1),
                                        dtype=tf.int64, alg="philox")
        return tf.cast(r, dt)

    def random_binomial(self, key, n, p, shape=None, dtype=None):
        """Binomial counts as floats of ``dtype`` (as ``jax.random.binomial``)."""
        dt = self._sample_dt(dtype, p)
        n, p = tf.cast(self._in(n), dt), tf.cast(self._in(p), dt)
        shape = tuple(tf.broadcast_static_shape(n.shape, p.shape).as_list()) if shape is None \
            else _shape(shape)
        n, p = tf.broadcast_to(n, shape), tf.broadcast_to(p, shape)
        # n < 0, p outside [0, 1] or NaN give NaN, as jax.random.binomial (TensorFlow: numbers)
        bad = (n < 0) | (p < 0) | (p > 1) | tf.math.is_nan(n) | tf.math.is_nan(p)
        draws = tf.random.stateless_binomial(
            shape, self._seed(key), tf.where(bad, tf.zeros_like(n), n),
            tf.where(bad, tf.fill(shape, tf.constant(0.5, dt)), p), output_dtype=dt)
        return tf.where(bad, tf.fill(shape, tf.constant(np.nan, dt)), draws)

    def random_permutation(self, key, x, axis=0, independent=False):
        if isinstance(x, _Tensor | np.ndarray) and np.ndim(x) > 0:
            return super().random_permutation(key, self._in(x), axis=axis,
                                              independent=independent)
        return self.argsort(self.random_uniform(key, (int(x),), "float64"))
