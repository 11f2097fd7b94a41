"""Predictive's NumPyro options on every backend: ``batch_ndims`` (0: one posterior point,
2: ``(chains, draws, ...)`` samples), ``exclude_deterministic``, ``return_sites`` with
posterior sites, and ``parallel``; shapes, values at fixed posterior points against
hand-computed ones, and each row against the seeded run it stands for."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_close, to_numpy

import ppl
import ppl.distributions as dist
from ppl import handlers, ops
from ppl.inference import Predictive

pytestmark = pytest.mark.dtypes("float64")


def model(y=None):
    mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
    m2 = ppl.deterministic("m2", 2.0 * mu)
    with ppl.plate("N", 3):
        return ppl.sample("y", dist.Normal(m2, 1.0), obs=y)


MU = np.arange(6.0).reshape(2, 3) / 2        # (chains, draws)


def _seeded_y(key, mu):
    run = handlers.substitute(handlers.seed(model, rng_seed=key), data={"mu": mu})
    return to_numpy(handlers.trace(run).get_trace()["y"]["value"])


def test_batch_ndims_2_keeps_chains_and_draws(backend):
    out = Predictive(model, {"mu": MU}, batch_ndims=2)(5)
    assert sorted(out) == ["m2", "y"]
    assert ops.shape(out["y"]) == (2, 3, 3) and ops.shape(out["m2"]) == (2, 3)
    assert_close(out["m2"], 2.0 * MU)
    keys = ppl.random.split(ppl.random.key(5), 6)       # C order over (chain, draw)
    for c, d in ((0, 0), (0, 2), (1, 1)):
        assert_close(out["y"][c, d], _seeded_y(keys[3 * c + d], MU[c, d]))
    # the same draws as batch_ndims=1 on the flattened samples
    flat = Predictive(model, {"mu": MU.reshape(6)})(5)
    assert_close(out["y"], to_numpy(flat["y"]).reshape(2, 3, 3))
    # return_sites may name posterior sites; data given: the observed site returns them
    out = Predictive(model, {"mu": MU}, batch_ndims=2, return_sites=["mu", "y"])(
        0, np.array([1.0, 2.0, 3.0]))
    assert_close(out["mu"], MU)
    assert_close(out["y"], np.broadcast_to([1.0, 2.0, 3.0], (2, 3, 3)))


def test_batch_ndims_0_one_point(backend):
    out = Predictive(model, {"mu": 1.5}, batch_ndims=0)(7)
    assert ops.shape(out["y"]) == (3,) and ops.shape(out["m2"]) == ()
    assert_close(out["m2"], np.asarray(3.0))
    assert_close(out["y"], _seeded_y(ppl.random.key(7), 1.5))    # rng_key itself, as NumPyro
    # a point with a site dimension is not mistaken for draws
    def vec():
        w = ppl.sample("w", dist.Normal(ops.zeros(4), 1.0).to_event(1))
        return ppl.deterministic("s", ops.sum(w))

    out = Predictive(vec, {"w": np.arange(4.0)}, batch_ndims=0)(0)
    assert_close(out["s"], np.asarray(6.0))


def test_batch_ndims_prior_shapes(backend):
    """No posterior samples: leading shape (1,) * (batch_ndims - 1) + (num_samples,)."""
    for bn, lead in ((0, (4,)), (2, (1, 4))):
        out = Predictive(model, num_samples=4, batch_ndims=bn)(0)
        assert ops.shape(out["y"]) == lead + (3,) and ops.shape(out["mu"]) == lead
        assert_close(out["m2"], 2.0 * to_numpy(out["mu"]))


def test_posterior_point_mean_over_many_draws(backend):
    """Every draw at the posterior point mu = 1.25: y ~ N(2.5, 1) entrywise."""
    n = 2000
    out = Predictive(model, {"mu": np.full((2, n // 2), 1.25)}, batch_ndims=2)(3)
    y = to_numpy(out["y"])
    assert y.shape == (2, n // 2, 3)
    assert abs(y.mean() - 2.5) < 5 / np.sqrt(3 * n)
    assert abs(y.var() - 1.0) < 5 * np.sqrt(2.0 / (3 * n))


def test_exclude_deterministic(backend):
    """Default: deterministic sites in the samples are recomputed; False: taken from them,
    and the sites downstream see the taken value."""
    samples = {"mu": MU, "m2": np.full((2, 3), 100.0)}
    out = Predictive(model, samples, batch_ndims=2)(0)
    assert_close(out["m2"], 2.0 * MU)
    assert float(np.max(np.abs(to_numpy(out["y"]) - 2.0 * MU[..., None]))) < 6.0
    out = Predictive(model, samples, batch_ndims=2, exclude_deterministic=False)(0)
    assert_close(out["m2"], np.full((2, 3), 100.0))
    assert float(np.max(np.abs(to_numpy(out["y"]) - 100.0))) < 6.0


def test_parallel_false_gives_the_same_draws(backend):
    a = Predictive(model, {"mu": MU}, batch_ndims=2, parallel=False)(1)
    b = Predictive(model, {"mu": MU}, batch_ndims=2, parallel=True)(1)
    assert_close(a["y"], to_numpy(b["y"]))
    assert ops.shape(a["y"]) == (2, 3, 3)


def test_batch_ndims_errors(backend):
    for bad in (-1, 1.0, True, "2"):
        with pytest.raises(ValueError, match="batch_ndims must be an int >= 0"):
            Predictive(model, {"mu": MU}, batch_ndims=bad)
    with pytest.raises(ValueError, match=r"has shape \(6,\), but batch_ndims=2 needs 2 leading"):
        Predictive(model, {"mu": MU.reshape(6)}, batch_ndims=2)
    with pytest.raises(ValueError, match="different numbers of draws"):
        Predictive(model, {"mu": MU, "m2": np.zeros((3, 2))}, batch_ndims=2)
    with pytest.warns(UserWarning, match="using 6"):
        p = Predictive(model, {"mu": MU}, num_samples=4, batch_ndims=2)
    assert p.num_samples == 6 and p.batch_shape == (2, 3)
