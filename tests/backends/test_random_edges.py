"""``ppl.random`` at its edges, on every backend and dtype: truncated normals far in the tails
(against SciPy's ``truncnorm``), ``categorical``'s ``shape``, the seed rule of ``key`` and
``as_key``, and invalid sampler parameters (against ``jax.random``'s behaviour).

Moments are checked within 5 standard errors and the distribution with a Kolmogorov-Smirnov test
at alpha = 1e-3; seeds are fixed, so the tests are deterministic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st

from ppl import ops
from ppl import random as rnd

N = 4000
ALPHA = 1e-3
INF = math.inf

#: (lower, upper): the middle, both tails, one-sided, and beyond ``ndtr``'s underflow
#: (~13 standard deviations in float32, ~37.5 in float64)
INTERVALS = [(-1.0, 2.0), (3.0, 4.0), (5.0, 6.0), (10.0, 11.0), (-11.0, -10.0), (12.0, 13.0),
             (30.0, 31.0), (-31.0, -30.0), (5.0, INF), (-INF, -6.0), (40.0, 41.0)]


def _check_truncnorm(x, lower, upper):
    ref = st.truncnorm(lower, upper)
    assert np.all(np.isfinite(x)) and np.all((x >= lower) & (x <= upper)), (x.min(), x.max())
    se_mean = ref.std() / math.sqrt(N)
    assert abs(x.mean() - ref.mean()) < 5 * se_mean, (x.mean(), ref.mean())
    assert abs(x.std() / ref.std() - 1) < 0.1, (x.std(), ref.std())
    assert st.kstest(x, ref.cdf).pvalue > ALPHA


@pytest.mark.parametrize("lower, upper", INTERVALS, ids=lambda v: str(v))
def test_truncated_normal_matches_scipy(backend, lower, upper):
    x = rnd.truncated_normal(rnd.key(1), lower, upper, (N,))
    assert ops.dtype_of(x) == backend.dtype
    _check_truncnorm(ops.to_numpy(x).astype(np.float64), lower, upper)


@pytest.mark.parametrize("lower, upper", [(5.0, 6.0), (12.0, 13.0), (30.0, 31.0)],
                         ids=lambda v: str(v))
def test_truncated_normal_under_jit(backend, lower, upper):
    """Compiled, the same draws as eagerly (and so as accurate)."""
    draw = ops.jit(lambda key, lo, hi: rnd.truncated_normal(key, lo, hi, (N,)))
    x = draw(rnd.key(2), ops.asarray(lower), ops.asarray(upper))
    _check_truncnorm(ops.to_numpy(x).astype(np.float64), lower, upper)


def test_truncated_normal_array_bounds_and_invalid(backend):
    """Bounds broadcast per entry; an empty interval or a NaN bound gives NaN (an invalid
    parameter, as for the other samplers); ``lower == upper`` gives that value."""
    lower = ops.asarray([10.0, 1.0, math.nan, 0.0, 2.0, -INF])
    upper = ops.asarray([11.0, -1.0, 1.0, math.nan, 2.0, INF])
    x = ops.to_numpy(rnd.truncated_normal(rnd.key(3), lower, upper, (N, 6))).astype(np.float64)
    _check_truncnorm(x[:, 0], 10.0, 11.0)
    assert np.all(np.isnan(x[:, 1:4]))
    assert np.all(x[:, 4] == 2.0)
    _check_truncnorm(x[:, 5], -INF, INF)


# ------------------------------------------------------------------------------ categorical
@pytest.mark.parametrize("logits_shape, axis, shape", [
    ((2, 3), -1, (5,)),          # does not end with the batch shape (2,)
    ((2, 3), -1, (2, 5)),
    ((2, 3), -1, ()),
    ((2, 3), 0, (5, 2)),         # batch shape (3,) along axis 0
], ids=str)
def test_categorical_shape_must_end_with_batch_shape(backend, logits_shape, axis, shape):
    with pytest.raises(ValueError, match=r"shape .* must end with the batch shape"):
        rnd.categorical(rnd.key(0), ops.zeros(logits_shape), axis=axis, shape=shape)


@pytest.mark.parametrize("logits_shape, axis, shape", [
    ((2, 3), -1, (5, 2)),
    ((2, 3), 0, (5, 3)),
    ((1, 3), -1, (5,)),          # size-1 batch dimensions broadcast, as in jax.random
    ((1, 3), -1, (4, 5)),
], ids=str)
def test_categorical_shape(backend, logits_shape, axis, shape):
    x = ops.to_numpy(rnd.categorical(rnd.key(0), ops.zeros(logits_shape), axis=axis,
                                     shape=shape))
    k = logits_shape[axis]
    assert x.shape == shape and x.min() >= 0 and x.max() < k
    # uniform logits: every category is drawn
    assert set(np.unique(x)) == set(range(k)) or x.size < 3 * k


# ------------------------------------------------------------------------------ seeds
@pytest.mark.parametrize("seed, error", [
    (1.5, TypeError), ("1", TypeError), (None, TypeError), (True, TypeError),
    (np.float64(2.0), TypeError), (np.bool_(False), TypeError),
    (2**64, ValueError), (-(2**63) - 1, ValueError),
], ids=repr)
def test_key_rejects_bad_seeds(backend, seed, error):
    with pytest.raises(error, match="seed"):
        rnd.key(seed)
    with pytest.raises(error, match="rng_key"):
        rnd.as_key(seed)


@pytest.mark.parametrize("seed", [-1, -(2**63), 2**64 - 1, np.int64(-7), np.uint64(2**64 - 1),
                                  np.int32(5)], ids=repr)
def test_key_accepts_64_bit_seeds(backend, seed):
    for k in (rnd.key(seed), rnd.as_key(seed)):
        assert np.all(np.isfinite(ops.to_numpy(rnd.normal(k, (3,)))))
    np.testing.assert_array_equal(ops.to_numpy(rnd.key(seed)), ops.to_numpy(rnd.as_key(seed)))


def test_negative_seeds_give_distinct_keys(backend):
    seeds = list(range(-3, 4))
    keys = {tuple(ops.to_numpy(rnd.key(s)).tolist()) for s in seeds}
    assert len(keys) == len(seeds)


@pytest.mark.backends("numpy")
def test_numpy_negative_seed_differs_from_its_64_bit_twin(backend):
    """NumPy's SeedSequence takes any non-negative int: a negative seed maps above 2**64."""
    for s in (-1, -(2**63)):
        assert not np.array_equal(ops.to_numpy(rnd.key(s)), ops.to_numpy(rnd.key(s + 2**64)))


# ------------------------------------------------------------------------------ invalid params
#: (id, draw(key), expected values): what jax.random returns for these parameters
INVALID = [
    ("gamma a<0", lambda k: rnd.gamma(k, -1.0, (3,)), np.nan),
    ("gamma a=nan", lambda k: rnd.gamma(k, math.nan, (3,)), np.nan),
    ("gamma a=0", lambda k: rnd.gamma(k, 0.0, (3,)), 0.0),
    ("beta a<0", lambda k: rnd.beta(k, -1.0, 1.0, (3,)), np.nan),
    ("dirichlet alpha<0", lambda k: rnd.dirichlet(k, ops.asarray([-1.0, 1.0]), (2,)), np.nan),
    ("t df<0", lambda k: rnd.t(k, -1.0, (3,)), np.nan),
    ("poisson lam<0", lambda k: rnd.poisson(k, -1.0, (3,)), -1),
    ("poisson lam=nan", lambda k: rnd.poisson(k, math.nan, (3,)), -1),
    ("randint lo>hi", lambda k: rnd.randint(k, (5,), 3, 0), 3),
    ("randint lo=hi", lambda k: rnd.randint(k, (5,), 3, 3), 3),
    ("binomial n<0", lambda k: rnd.binomial(k, -10.0, 0.3, (3,)), np.nan),
    ("binomial p>1", lambda k: rnd.binomial(k, 10.0, 1.5, (3,)), np.nan),
    ("binomial p=nan", lambda k: rnd.binomial(k, 10.0, math.nan, (3,)), np.nan),
]


@pytest.mark.parametrize("case, draw, expected",
                         [pytest.param(i, d, e, id=i) for i, d, e in INVALID])
def test_invalid_parameters_as_jax_random(backend, case, draw, expected):
    x = ops.to_numpy(draw(rnd.key(0))).astype(np.float64)
    np.testing.assert_array_equal(x, np.full(x.shape, expected))


def test_invalid_entries_leave_valid_ones_alone(backend):
    """Only the invalid entries of a parameter array are replaced."""
    a = ops.to_numpy(rnd.gamma(rnd.key(0), ops.asarray([2.0, -1.0, 3.0])))
    assert np.isnan(a[1]) and np.all(a[[0, 2]] > 0)
    lam = ops.to_numpy(rnd.poisson(rnd.key(0), ops.asarray([4.0, math.nan, 0.0])))
    assert lam[1] == -1 and lam[0] >= 0 and lam[2] == 0
    b = ops.to_numpy(rnd.binomial(rnd.key(0), ops.asarray([10.0, -1.0, 10.0]),
                                  ops.asarray([0.3, 0.3, 1.5])))
    assert np.isnan(b[1]) and np.isnan(b[2]) and 0 <= b[0] <= 10 and b[0] == int(b[0])
    g = ops.to_numpy(rnd.gamma(rnd.key(0), ops.asarray([0.0, 2.0])))
    assert g[0] == 0.0 and g[1] > 0
