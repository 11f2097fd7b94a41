"""numpy backend: random keys and samplers.

A key is two ``uint64`` words of key material for NumPy's counter-based Philox generator: every
draw is that of a fresh ``Generator(Philox(key=key))`` (one generator per thread, reset to the
key's starting state), so no global random state is touched and the same key gives the same
draw. Gamma draws are reparameterised in ``a`` through the autograd primitive
:func:`ppl.backends.numpy.primitives.standard_gamma`.
"""

from __future__ import annotations

import threading

import numpy as np
from autograd.tracer import Box

from ppl.backends.numpy import primitives as prims
from ppl.backends.numpy.tape import concrete

__all__ = ["NumpyRandom"]

_LOCAL = threading.local()


class NumpyRandom:
    """Random keys and samplers of :class:`~ppl.backends.numpy.NumpyBackend`."""

    def random_key(self, seed):
        """The key of an int seed in ``[-2**63, 2**64)`` (``ppl.random.key`` checks it): NumPy's
        ``SeedSequence`` takes only non-negative entropy, so a negative seed ``s`` is entropy
        ``2**64 - s``, above every non-negative seed's (distinct seeds stay distinct keys)."""
        seed = int(seed)
        return np.random.SeedSequence(seed if seed >= 0 else (1 << 64) - seed).generate_state(
            2, np.uint64)

    def _gen(self, key):
        key = np.asarray(concrete(key))
        if key.shape != (2,) or key.dtype != np.uint64:
            raise TypeError(
                f"expected a key from ppl.random.key / ppl.random.split (uint64[2]), got an "
                f"array of dtype {key.dtype} and shape {key.shape}. Make one with "
                "ppl.random.key(seed)."
            )
        # one Philox generator per thread, set to the state Philox(key=key) starts in (4x
        # cheaper than building one per draw; the same draws)
        cached = getattr(_LOCAL, "generator", None)
        if cached is None:
            bits = np.random.Philox(key=key)
            _LOCAL.generator = cached = (bits, np.random.Generator(bits))
            return cached[1]
        cached[0].state = {"bit_generator": "Philox",
                           "state": {"counter": np.zeros(4, np.uint64), "key": key},
                           "buffer": np.zeros(4, np.uint64), "buffer_pos": 4, "has_uint32": 0,
                           "uinteger": 0}
        return cached[1]

    def random_split(self, key, num=2):
        return self._gen(key).integers(0, 2**64 - 1, size=(int(num), 2), dtype=np.uint64,
                                       endpoint=True)

    def random_fold_in(self, key, data):
        words = [int(w) for w in np.asarray(concrete(key))] + [int(concrete(data)) & (2**64 - 1)]
        return np.random.SeedSequence(words).generate_state(2, np.uint64)

    def random_uniform(self, key, shape=(), dtype=None, minval=0.0, maxval=1.0):
        u = self._gen(key).random(tuple(shape), dtype=self._dt(dtype))
        return u if (minval, maxval) == (0.0, 1.0) else minval + (maxval - minval) * u

    def random_normal(self, key, shape=(), dtype=None):
        return self._gen(key).standard_normal(tuple(shape), dtype=self._dt(dtype))

    # NumPy's samplers return Python scalars for 0-d parameters: np.asarray keeps arrays. NumPy
    # raises for invalid parameters where jax.random returns a value (NaN, -1, ``minval``):
    # those entries are drawn with a valid stand-in and replaced, so valid draws are unchanged.
    def random_gamma(self, key, a, shape=None, dtype=None):
        shape = self._shape_of(shape, a)
        a_c = np.broadcast_to(concrete(a), shape)
        bad = a_c < 0
        noise = np.asarray(self._gen(key).standard_gamma(np.where(bad, 1.0, a_c) if bad.any()
                                                         else a_c))
        noise = np.where(bad, np.nan, noise).astype(self._dt(dtype))
        return prims.standard_gamma(a, noise) if isinstance(a, Box) else noise

    def random_poisson(self, key, lam, shape=None, dtype=None):
        shape = self._shape_of(shape, lam)
        lam = np.broadcast_to(concrete(lam), shape)
        bad = ~(lam >= 0)
        out = np.asarray(self._gen(key).poisson(np.where(bad, 0.0, lam) if bad.any() else lam))
        return np.where(bad, -1, out).astype(self._dt(dtype or "int64"))

    def random_randint(self, key, shape, minval, maxval, dtype=None):
        minval, maxval = concrete(minval), concrete(maxval)
        if np.any(np.asarray(maxval) <= minval):        # an empty range gives minval
            maxval = np.maximum(maxval, np.asarray(minval) + 1)
        return self._gen(key).integers(minval, maxval, size=tuple(shape),
                                       dtype=self._dt(dtype or "int64"))

    def random_binomial(self, key, n, p, shape=None, dtype=None):
        shape = self._shape_of(shape, n, p)
        n, p = np.broadcast_to(concrete(n), shape), np.broadcast_to(concrete(p), shape)
        bad = ~((n >= 0) & (p >= 0) & (p <= 1))
        if bad.any():
            n, p = np.where(bad, 0, n), np.where(bad, 0.5, p)
        out = self._gen(key).binomial(n.astype(np.int64), p)
        return np.where(bad, np.nan, out).astype(self._dt(dtype))
