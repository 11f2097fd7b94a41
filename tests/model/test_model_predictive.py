"""Predictive: prior and posterior predictive shapes, moments (within 5 standard errors of the
analytic values) and arguments, on every backend."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import assert_close, to_numpy

import ppl
import ppl.distributions as dist
from ppl import handlers, ops
from ppl.inference import Predictive

pytestmark = pytest.mark.dtypes("float64")

N = 1000


def model(y=None):
    mu = ppl.sample("mu", dist.Normal(2.0, 0.5))
    with ppl.plate("obs", 4):
        ppl.deterministic("mu_b", mu + ops.zeros(4))
        ppl.sample("y", dist.Normal(mu, 1.0), obs=y)


def _within(x, mean, sd, n, k=5.0):
    assert abs(float(np.mean(x)) - mean) < k * sd / np.sqrt(n), (float(np.mean(x)), mean)


def test_prior_predictive_shapes_and_moments(backend):
    out = Predictive(model, num_samples=N)(0)
    assert sorted(out) == ["mu", "mu_b", "y"]
    assert ops.shape(out["mu"]) == (N,)
    assert ops.shape(out["y"]) == (N, 4)
    mu, y = to_numpy(out["mu"]), to_numpy(out["y"])
    _within(mu, 2.0, 0.5, N)
    _within(y[:, 0], 2.0, np.sqrt(1.25), N)
    # var(y) = 0.5^2 + 1: within 5 standard errors of a normal sample variance
    assert abs(np.var(y[:, 1]) - 1.25) < 5 * 1.25 * np.sqrt(2.0 / N)
    assert_close(out["mu_b"], np.repeat(mu[:, None], 4, axis=1))
    # same key, same draws
    assert_close(Predictive(model, num_samples=N)(0)["y"], y)


def test_posterior_predictive(backend):
    mu = np.linspace(-3.0, 3.0, N)
    out = Predictive(model, {"mu": mu})(1)
    assert sorted(out) == ["mu_b", "y"]            # sites in the samples are not returned
    assert ops.shape(out["y"]) == (N, 4)
    resid = to_numpy(out["y"]) - mu[:, None]
    _within(resid.ravel(), 0.0, 1.0, 4 * N)
    assert abs(np.var(resid) - 1.0) < 5 * np.sqrt(2.0 / (4 * N))
    assert_close(out["mu_b"], np.repeat(mu[:, None], 4, axis=1))


def test_predictive_rows_are_seeded_runs(backend):
    """Row i is the model run with the i-th key of split(rng_key, num_samples), whether the
    backend vectorises (vmap) or loops."""
    mu = np.array([0.0, 1.0, 2.0])
    out = Predictive(model, {"mu": mu}, return_sites=["y"])(7)
    keys = ppl.random.split(ppl.random.key(7), 3)
    for i in range(3):
        tr = handlers.trace(handlers.substitute(handlers.seed(model, rng_seed=keys[i]),
                                                data={"mu": mu[i]})).get_trace()
        assert_close(out["y"][i], to_numpy(tr["y"]["value"]))


def test_predictive_return_sites_and_observed_data(backend):
    out = Predictive(model, num_samples=5, return_sites=["mu"])(0)
    assert list(out) == ["mu"]
    # with data given, the observed site returns the data
    data = np.array([1.0, 2.0, 3.0, 4.0])
    out = Predictive(model, num_samples=3)(0, y=data)
    assert_close(out["y"], np.tile(data, (3, 1)))
    with pytest.raises(ValueError, match=r"return_sites \['nope'\] are not sites"):
        Predictive(model, num_samples=2, return_sites=["nope"])(0)


def test_predictive_argument_errors(backend):
    with pytest.raises(ValueError, match="num_samples"):
        Predictive(model)
    for bad in (2.5, "3", 0, True):          # were truncated, parsed, or (0) refused late
        with pytest.raises(ValueError, match="num_samples must be a positive int"):
            Predictive(model, num_samples=bad)
    with pytest.raises(ValueError, match="different numbers of draws"):
        Predictive(model, {"mu": np.zeros(3), "y": np.zeros((4, 4))})
    with pytest.raises(ValueError, match="leading sample dimension"):
        Predictive(model, {"mu": 1.0})
    with pytest.raises(TypeError, match="callable"):
        Predictive("model", num_samples=3)
    with pytest.raises(TypeError, match="int seed or a key"):
        Predictive(model, num_samples=3)(1.5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = Predictive(model, {"mu": np.zeros(3)}, num_samples=10)
    assert p.num_samples == 3 and any("using 3" in str(w.message) for w in caught)
