"""jax backend: random keys and samplers (``jax.random``).

Keys are JAX's legacy ``uint32[2]`` keys (``jax.random.PRNGKey``): plain data, so they stack,
``vmap`` and ``scan`` like any other array. Every sampler passes an explicit dtype (``self.dtype``
unless ``dtype`` is given), so a float32 backend draws float32 even once x64 is on.

Splits and uniform draws of a *concrete* key (outside ``jit``, ``vmap`` and the like: a run's
key split into its parts, the chains' starting points) are computed on the host with the same
Threefry-2x32 hash JAX uses, bit for bit (:func:`_host_threefry`): eagerly, JAX would trace and
compile a program for each of them, ~0.25 CPU s of a first run on a fresh process.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.random import threefry_2x32

from ppl.backends.jax.core import _shape

__all__ = ["JaxRandom"]


def _flat(sampler, key, shape, *args):
    """``sampler(key, shape, *args)`` drawn as a vector and reshaped: the same bits (JAX's
    Threefry draws ``prod(shape)`` values in order, whatever the shape), but XLA on CPU compiles
    a 1-D draw in about half the time of a 2-D one (0.17 against 0.38 CPU s for ``(4, 10)``),
    which matters for a sampler's first run (issue 13: a NUTS iteration has several draws)."""
    shape = _shape(shape)
    if len(shape) < 2:
        return sampler(key, shape, *args)
    return jnp.reshape(sampler(key, (int(np.prod(shape)),), *args), shape)


#: XORed into a key before hashing ``(index, j)`` counters (:meth:`random_indexed_uniform`):
#: ``fold_in``, ``split`` and the samplers hash other counter patterns under the key itself, so
#: the indexed draws get a key of their own, without a hash to derive it
_INDEXED = np.array([0x9E3779B9, 0x7F4A7C15], np.uint32)


#: Threefry-2x32's rotation constants, alternating per group of four rounds (Salmon et al. 2011,
#: "Parallel random numbers: as easy as 1, 2, 3", SC'11; Random123's ``threefry2x32`` with 20
#: rounds, as JAX's ``threefry2x32_p``)
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


def _host_threefry(key, n: int):
    """The Threefry-2x32 hash of the counters ``(0, i)``, ``i < n``, under ``key`` (NumPy
    ``uint32[2]``): two ``uint32[n]`` words, which is what JAX's partitionable ``split`` and
    random bits compute on a device."""
    k0, k1 = np.uint32(key[0]), np.uint32(key[1])
    ks = (k0, k1, k0 ^ k1 ^ _PARITY)
    with np.errstate(over="ignore"):        # additions are modulo 2^32
        a = np.zeros(n, np.uint32) + ks[0]
        b = np.arange(n, dtype=np.uint32) + ks[1]
        for group in range(5):
            for r in _ROTATIONS[group % 2]:
                a = a + b
                b = ((b << np.uint32(r)) | (b >> np.uint32(32 - r))) ^ a
            a = a + ks[(group + 1) % 3]
            b = b + ks[(group + 2) % 3] + np.uint32(group + 1)
    return a, b


def _host_key(key):
    """``key`` as a NumPy ``uint32[2]`` when it is concrete and JAX's keys are partitionable
    Threefry keys (JAX's default), else ``None`` (then JAX draws)."""
    if isinstance(key, jax.core.Tracer) or not isinstance(key, (jax.Array, np.ndarray)) \
            or key.shape != (2,) or key.dtype != np.uint32 \
            or jax.config.jax_default_prng_impl != "threefry2x32" \
            or not jax.config.jax_threefry_partitionable:
        return None
    return np.asarray(key)


def _host_split(key, num):
    """``split(key, num)`` computed on the host, NumPy ``uint32[num, 2]``, or ``None`` where
    JAX must split (a traced key, another key type, more than :data:`_HOST_MAX` keys)."""
    host = _host_key(key)
    if host is None or int(num) > _HOST_MAX:
        return None
    return np.stack(_host_threefry(host, int(num)), axis=1)


def _exact_scale(dtype, minval, maxval) -> bool:
    """Whether the host's draw is JAX's bit for bit: ``maxval - minval`` a power of two in
    ``dtype`` (then ``u * scale + minval`` rounds once, whether XLA fuses it into a
    multiply-add or not: ``(0, 1)``, ``init_to_uniform``'s ``(-2, 2)``), and no result that
    XLA's CPU would flush to zero as a subnormal (every result a multiple of a normal quantum:
    ``u * scale``'s and ``minval``'s ulp at least the smallest normal); other bounds draw on
    JAX."""
    if not (isinstance(minval, (int, float)) and isinstance(maxval, (int, float))):
        return False
    info = np.finfo(dtype)
    with np.errstate(all="ignore"):
        lo, hi = dtype.type(minval), dtype.type(maxval)
        scale = float(hi - lo)
    quantum = 2.0 ** -info.nmant       # u's ulp on [0, 1)
    return (np.isfinite(scale) and scale > 0 and math.frexp(scale)[0] == 0.5
            and scale * quantum >= info.tiny
            and (lo == 0 or abs(float(lo)) >= float(info.tiny) / quantum))


#: the most numbers the host draws for one call: NumPy's Threefry runs ~5x slower than XLA's
#: once that is compiled, so large draws go to JAX
_HOST_MAX = 1 << 14


def _host_uniform(key, n: int, dtype, minval, maxval):
    """``jax.random.uniform(key, (n,), dtype, minval, maxval)`` on the host, bit for bit where
    :func:`_exact_scale`: the random bits' top mantissa bits under the exponent of 1.0, minus 1,
    scaled."""
    a, b = _host_threefry(key, n)
    if dtype == np.float32:
        bits = (a ^ b) >> np.uint32(9)
        u = (bits | np.uint32(0x3F800000)).view(np.float32) - np.float32(1.0)
    else:
        bits = ((a.astype(np.uint64) << np.uint64(32)) | b) >> np.uint64(12)
        u = (bits | np.uint64(0x3FF0000000000000)).view(np.float64) - 1.0
    lo, hi = dtype.type(minval), dtype.type(maxval)
    return np.maximum(lo, u * (hi - lo) + lo)


def _standard(sampler):
    def method(self, key, shape=(), dtype=None):
        return _flat(sampler, key, shape, self._dt(dtype))

    method.__name__ = f"random_{sampler.__name__}"
    method.__doc__ = f"``jax.random.{sampler.__name__}(key, shape, dtype)``."
    return method


class JaxRandom:
    """Random keys and samplers of :class:`~ppl.backends.jax.JaxBackend`."""

    def _param(self, x, dtype):
        return self.asarray(x, self._dt(dtype))

    def random_key(self, seed):
        """``jax.random.PRNGKey(seed)`` for an int seed in ``[-2**63, 2**64)`` (``ppl.random.key``
        checks it); a seed from ``2**63`` is taken as its 64-bit two's complement, as
        ``PRNGKey(np.uint64(seed))`` does."""
        seed = int(seed)
        if 0 <= seed < 2**32 and jax.config.jax_default_prng_impl == "threefry2x32":
            # JAX's Threefry key of such a seed is [0, seed]: made on the host, it needs no
            # compiled program (a first run's cost), and it is the same key
            return jax.device_put(np.array([0, seed], np.uint32), self._device)
        return self._put(jax.random.PRNGKey(seed - (1 << 64) if seed >= 1 << 63 else seed))

    def random_split(self, key, num=2):
        rows = _host_split(key, num)
        if rows is None:
            return jax.random.split(key, int(num))
        return jax.device_put(rows, self._device)

    def random_split_keys(self, key, num=2):
        """A concrete key's split as separate device arrays: unpacking or indexing one array of
        keys compiles a program per shape on a first run (``unstack``, ~0.15 CPU s)."""
        rows = _host_split(key, num)
        if rows is None:
            return tuple(jax.random.split(key, int(num)))
        return tuple(jax.device_put(list(rows), self._device))

    def random_fold_in(self, key, data): return jax.random.fold_in(key, data)

    def random_uniform(self, key, shape=(), dtype=None, minval=0.0, maxval=1.0):
        host = _host_key(key)
        dt = np.dtype(jax.dtypes.canonicalize_dtype(self._dt(dtype)))   # float32 without x64
        n = int(np.prod(_shape(shape)))
        if host is not None and n <= _HOST_MAX and dt in (np.float32, np.float64) \
                and _exact_scale(dt, minval, maxval):
            u = _host_uniform(host, n, dt, minval, maxval)
            return jax.device_put(u.reshape(_shape(shape)), self._device)
        if np.ndim(minval) or np.ndim(maxval):      # bounds broadcast against ``shape``
            return jax.random.uniform(key, _shape(shape), self._dt(dtype), minval, maxval)
        return _flat(jax.random.uniform, key, shape, self._dt(dtype), minval, maxval)

    def random_indexed_uniform(self, key, index, shape=(), dtype=None):
        """One Threefry-2x32 hash per pair of counters ``(index, j)`` (see the protocol's
        docstring), where ``uniform(fold_in(key, index), shape)`` hashes twice: on XLA CPU
        every hash site of a program is a loop that costs ~0.1 s to compile."""
        shape, dt = _shape(shape), self._dt(dtype)
        n = int(np.prod(shape))
        words = n * (2 if jnp.dtype(dt).itemsize == 8 else 1)
        half = (words + 1) // 2
        index = jnp.broadcast_to(jnp.asarray(index).astype(jnp.uint32), (half,))
        counts = jnp.concatenate([index, jnp.arange(half, dtype=jnp.uint32)])
        w = threefry_2x32(jnp.asarray(key, jnp.uint32) ^ _INDEXED, counts)[:words]
        if words == n:       # 23 random mantissa bits under the exponent of 1.0, minus 1
            u = jax.lax.bitcast_convert_type((w >> 9) | np.uint32(0x3F800000), jnp.float32)
        else:                # two words per float64: 52 random mantissa bits
            w64 = (w[:n].astype(jnp.uint64) << np.uint64(32)) | w[n:].astype(jnp.uint64)
            u = jax.lax.bitcast_convert_type((w64 >> np.uint64(12))
                                             | np.uint64(0x3FF0000000000000), jnp.float64)
        return jnp.reshape(u - 1.0, shape).astype(dt)

    random_normal = _standard(jax.random.normal)
    random_exponential = _standard(jax.random.exponential)
    random_cauchy = _standard(jax.random.cauchy)
    random_laplace = _standard(jax.random.laplace)
    random_logistic = _standard(jax.random.logistic)

    def random_gamma(self, key, a, shape=None, dtype=None):
        return jax.random.gamma(key, self._param(a, dtype), _shape(shape), self._dt(dtype))

    def random_poisson(self, key, lam, shape=None, dtype=None):
        """Poisson counts, integer (as ``jax.random.poisson``) unless ``dtype`` is a float."""
        lam = self._param(lam, None)
        if dtype is not None and jnp.issubdtype(self._dt(dtype), jnp.floating):
            return jax.random.poisson(key, lam, _shape(shape)).astype(self._dt(dtype))
        return jax.random.poisson(key, lam, _shape(shape),
                                  None if dtype is None else self._dt(dtype))

    def random_randint(self, key, shape, minval, maxval, dtype=None):
        dt = self._dt("int64" if dtype is None else dtype)
        return jax.random.randint(key, _shape(shape), minval, maxval, dt)

    def random_binomial(self, key, n, p, shape=None, dtype=None):
        """Binomial counts as floats of ``dtype`` (as ``jax.random.binomial``)."""
        dt = self._dt(dtype)
        return jax.random.binomial(key, self._param(n, dt), self._param(p, dt), _shape(shape),
                                   dt)

    def random_beta(self, key, a, b, shape=None, dtype=None):
        dt = self._dt(dtype)
        return jax.random.beta(key, self._param(a, dt), self._param(b, dt), _shape(shape), dt)

    def random_dirichlet(self, key, alpha, shape=None, dtype=None):
        dt = self._dt(dtype)
        return jax.random.dirichlet(key, self._param(alpha, dt), _shape(shape), dt)

    def random_bernoulli(self, key, p=0.5, shape=None):
        return jax.random.bernoulli(key, self._in(p), _shape(shape))

    def random_categorical(self, key, logits, axis=-1, shape=None):
        return jax.random.categorical(key, self._in(logits), axis=axis, shape=_shape(shape))

    def random_t(self, key, df, shape=None, dtype=None):
        dt = self._dt(dtype)
        return jax.random.t(key, self._param(df, dt), _shape(shape), dt)

    def random_permutation(self, key, x, axis=0, independent=False):
        x = int(x) if isinstance(x, (int, np.integer)) else x
        return jax.random.permutation(key, x, axis=axis, independent=independent)

    def random_multivariate_normal(self, key, mean, cov, shape=None, dtype=None):
        dt = self._dt(dtype)
        return jax.random.multivariate_normal(key, self._param(mean, dt), self._param(cov, dt),
                                              _shape(shape), dt)
