"""numpy's random draws are those of a fresh ``Generator(Philox(key=key))`` per draw (the
backend reuses one generator per thread, reset to the key's starting state)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import to_numpy

import ppl
from ppl import ops

pytestmark = pytest.mark.backends("numpy")


def _fresh(key):
    return np.random.Generator(np.random.Philox(key=np.asarray(key)))


def test_draws_are_those_of_a_fresh_generator(backend, dtype):
    keys = ppl.random.split(ppl.random.key(11), 3)
    dt = np.dtype(dtype)
    # interleaved keys: a reused generator must not carry state from one draw to the next
    for key in (keys[0], keys[1], keys[0], keys[2]):
        k = to_numpy(key)
        np.testing.assert_array_equal(to_numpy(ppl.random.normal(key, (5,))),
                                      _fresh(k).standard_normal(5, dtype=dt))
        np.testing.assert_array_equal(to_numpy(ppl.random.uniform(key, (2, 3))),
                                      _fresh(k).random((2, 3), dtype=dt))
        np.testing.assert_array_equal(to_numpy(ppl.random.split(key, 3)),
                                      _fresh(k).integers(0, 2**64 - 1, size=(3, 2),
                                                         dtype=np.uint64, endpoint=True))
        a = np.array([0.5, 3.0])
        np.testing.assert_array_equal(to_numpy(ppl.random.gamma(key, ops.asarray(a))),
                                      _fresh(k).standard_gamma(a.astype(dt)).astype(dt))
        lam = np.array([1.0, 4.0])
        np.testing.assert_array_equal(to_numpy(ppl.random.poisson(key, ops.asarray(lam))),
                                      _fresh(k).poisson(lam.astype(dt)))
