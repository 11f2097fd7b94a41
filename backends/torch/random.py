"""torch backend: random keys and samplers.

Keys (:mod:`ppl.backends.torch.keys`) are ``int64`` tensors of shape ``(2,)`` kept on the CPU
(key material, not data). ``split``, ``fold_in``, ``uniform`` and ``normal`` hash the key with a
counter (:mod:`ppl.backends.torch.counter_rng`: the same bits eagerly and inside a compiled
graph); the other samplers draw from a fresh ``torch.Generator`` seeded from the key. Either way
the same key gives the same draw and no global random state is read or written. Samplers work
under ``vmap`` over keys (one draw per key) and, as in JAX, an unbatched key inside ``vmap``
gives the same draw to every batch member. ``random_gamma`` is ``torch._standard_gamma`` with
that generator: reparameterised (implicit gradient in ``a``, Figurnov et al. 2018), also under
``torch.func.grad``.
"""

from __future__ import annotations

import numpy as np
import torch

from ppl.backends.torch import counter_rng, keys
from ppl.backends.torch.core import _shape

__all__ = ["TorchRandom"]


class TorchRandom:
    """Random keys and samplers of :class:`~ppl.backends.torch.TorchBackend`."""

    def _sample_dt(self, dtype, *params):
        if dtype is not None:
            return self._dt(dtype)
        for p in params:
            if isinstance(p, torch.Tensor) and p.is_floating_point():
                return p.dtype
        return self._float

    def _param(self, p, shape, dt):
        p = self.asarray(p, dt)
        return p if shape is None else torch.broadcast_to(p, _shape(shape))

    def _draw(self, key, kind, shape=(), dtype=None, params=(), ints=()):
        return keys.draw(key, params, kind, _shape(shape), ints, self._dt(dtype),
                         self._gen_device)

    def random_key(self, seed):
        if isinstance(seed, torch.Tensor | np.ndarray):
            seed = seed.item()
        if not isinstance(seed, int | np.integer) or isinstance(seed, bool):
            raise TypeError(f"random.key: seed must be an integer, got {seed!r}.")
        if not -(1 << 63) <= int(seed) < (1 << 64):
            raise ValueError(f"random.key: seed must fit in 64 bits, got {seed}.")
        return keys.make_key(int(seed))

    def random_split(self, key, num=2):
        return counter_rng.split(key, int(num))

    def random_fold_in(self, key, data):
        return counter_rng.fold_in(key, data)

    def random_uniform(self, key, shape=(), dtype=None, minval=0.0, maxval=1.0):
        u = counter_rng.uniform(key, _shape(shape), self._dt(dtype), self._gen_device)
        if not (isinstance(minval, int | float) and isinstance(maxval, int | float)
                and minval == 0.0 and maxval == 1.0):
            minval, maxval = self._t(minval), self._t(maxval)
            u = minval + u * (maxval - minval)
        return u

    def random_normal(self, key, shape=(), dtype=None):
        return counter_rng.normal(key, _shape(shape), self._dt(dtype), self._gen_device)

    # Invalid parameters give what jax.random gives (NaN, -1, ``minval``) where torch would
    # clamp, raise or return garbage: those entries are drawn with a valid stand-in and
    # replaced, so valid draws are unchanged.
    def random_gamma(self, key, a, shape=None, dtype=None):
        """Standard gamma draws, reparameterised (differentiable in ``a``). ``torch`` clamps
        draws to the smallest normal float; ``a = 0`` gives 0 and ``a < 0`` or NaN gives NaN."""
        a = self._param(a, shape, self._sample_dt(dtype, a))
        ok = a > 0
        g = keys.gamma(key, torch.where(ok, a, 1.0), self._gen_device)
        return torch.where(ok, g, torch.where(a == 0, 0.0, torch.nan))

    def random_poisson(self, key, lam, shape=None, dtype=None):
        """Poisson counts, ``int64`` unless ``dtype`` says otherwise."""
        lam = self._param(lam, shape, self._sample_dt(None, lam))
        bad = ~(lam >= 0)
        draws = self._draw(key, "poisson", lam.shape, lam.dtype, (torch.where(bad, 0.0, lam),))
        return torch.where(bad, -1.0, draws).to(torch.int64 if dtype is None else self._dt(dtype))

    def random_randint(self, key, shape, minval, maxval, dtype=None):
        dt = torch.int64 if dtype is None else self._dt(dtype)
        if isinstance(minval, torch.Tensor) or isinstance(maxval, torch.Tensor):
            # in float64: a float32 uniform has 24 bits (randint(0, 1e8) drew 8 % odd numbers)
            lo, hi = self._t(minval).to(torch.float64), self._t(maxval).to(torch.float64)
            hi = torch.maximum(hi, lo + 1)                  # an empty range gives minval
            u = self.random_uniform(key, shape, dtype="float64")
            return torch.minimum(torch.floor(lo + u * (hi - lo)), hi - 1).to(dt)
        ints = (int(minval), max(int(maxval), int(minval) + 1))
        return self._draw(key, "randint", shape, dt, ints=ints)

    def random_binomial(self, key, n, p, shape=None, dtype=None):
        """Binomial counts as floats of ``dtype`` (as ``jax.random.binomial``)."""
        dt = self._sample_dt(dtype, p)
        n, p = self._param(n, None, dt), self._param(p, None, dt)
        shape = torch.broadcast_shapes(n.shape, p.shape) if shape is None else _shape(shape)
        n, p = torch.broadcast_to(n, shape), torch.broadcast_to(p, shape)
        bad = ~((n >= 0) & (p >= 0) & (p <= 1))
        draws = self._draw(key, "binomial", shape, dt,
                           (torch.where(bad, 0.0, n), torch.where(bad, 0.5, p)))
        return torch.where(bad, torch.nan, draws)

    def random_permutation(self, key, x, axis=0, independent=False):
        if isinstance(x, torch.Tensor | np.ndarray) and np.ndim(x) > 0:
            return super().random_permutation(key, self._t(x), axis=axis,
                                              independent=independent)
        return self._draw(key, "randperm", dtype=torch.int64, ints=(int(x),))
