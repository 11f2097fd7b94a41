"""Issue 16, point 6: every initialisation strategy with param, reparam and enumerated models;
Predictive with deterministic sites and with infer_discrete, on every backend."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from conftest import assert_close, to_numpy

import ppl
import ppl.distributions as dist
from ppl import handlers, ops
from ppl.distributions import constraints
from ppl.inference import (
    Predictive,
    config_enumerate,
    init_to_feasible,
    init_to_mean,
    init_to_median,
    init_to_sample,
    init_to_uniform,
    init_to_value,
    initialize_model,
)
from ppl.inference.reparam import LocScaleReparam

pytestmark = pytest.mark.dtypes("float64")

Y = np.array([-1.8, -2.2, 0.1, 2.1, 1.7])


def param_model(y):
    s = ppl.param("s", 1.5, constraint=constraints.positive)
    mu = ppl.sample("mu", dist.Normal(0.0, 3.0))
    with ppl.plate("N", len(y)):
        ppl.sample("y", dist.Normal(mu, s), obs=y)


def reparam_model(y):
    mu = ppl.sample("mu", dist.Normal(0.0, 3.0))
    tau = ppl.sample("tau", dist.HalfNormal(2.0))
    with ppl.plate("N", len(y)):
        theta = ppl.sample("theta", dist.Normal(mu, tau))
        ppl.sample("y", dist.Normal(theta, 1.0), obs=y)


@config_enumerate
def enum_model(y):
    locs = ppl.sample("locs", dist.Normal(0.0, 3.0).expand([2]).to_event(1))
    with ppl.plate("N", len(y)):
        z = ppl.sample("z", dist.Bernoulli(0.4))
        ppl.sample("y", dist.Normal(locs[z], 1.0), obs=y)


MODELS = {
    "param": (param_model, ["mu"]),
    "reparam-0": (handlers.reparam(reparam_model, config={"theta": LocScaleReparam(0)}),
                  ["mu", "tau", "theta_decentered"]),
    "reparam-None": (handlers.reparam(reparam_model, config={"theta": LocScaleReparam(None)}),
                     ["mu", "tau", "theta_centered", "theta_decentered"]),
    "enumerated": (enum_model, ["locs"]),
}
STRATEGIES = {
    "uniform": init_to_uniform(), "median": init_to_median(), "mean": init_to_mean(),
    "sample": init_to_sample(), "feasible": init_to_feasible(),
    "value": init_to_value(values={"mu": 0.5, "locs": np.array([-1.0, 1.0])}),
}


@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("model_name", list(MODELS))
def test_init_strategies(backend, model_name, strategy):
    model, latents = MODELS[model_name]
    info = initialize_model(0, model, (Y,), init_strategy=STRATEGIES[strategy], num_chains=2)
    assert list(info.layout.names) == latents
    pe = [float(to_numpy(info.potential_fn(info.init_position[c]))) for c in range(2)]
    assert np.all(np.isfinite(pe))
    values = info.postprocess_fn(info.init_position[0])
    if strategy == "value" and "mu" in latents:
        assert_close(values["mu"], 0.5)
    if model_name == "enumerated":
        locs = to_numpy(values["locs"])
        if strategy == "value":
            assert_close(locs, np.array([-1.0, 1.0]))
        marginal = np.logaddexp(np.log(0.6) + st.norm(locs[0]).logpdf(Y),
                                np.log(0.4) + st.norm(locs[1]).logpdf(Y)).sum()
        expected = -(st.norm(0, 3).logpdf(locs).sum() + marginal)  # identity transform
        assert_close(pe[0], expected)


def test_predictive_deterministic_and_infer_discrete(backend):
    def model(y=None):
        mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
        ppl.deterministic("mu2", 2.0 * mu)
        with ppl.plate("N", 5):
            z = ppl.sample("z", dist.Bernoulli(0.5), infer={"enumerate": "parallel"})
            ppl.sample("y", dist.Normal(mu + 8.0 * z, 1.0), obs=y)

    post = {"mu": ops.asarray(np.array([0.0, 1.0, -1.0]))}
    out = Predictive(model, post, infer_discrete=True)(0, Y * 0 + np.array([0, 8, 0, 8, 8.0]))
    assert_close(out["mu2"], np.array([0.0, 2.0, -2.0]))
    # z is nearly certain given y (8 standard deviations apart)
    np.testing.assert_array_equal(to_numpy(out["z"]), np.tile([0, 1, 0, 1, 1], (3, 1)))
    prior = Predictive(model, num_samples=4)(1)
    assert set(prior) == {"mu", "mu2", "z", "y"}
    assert_close(prior["mu2"], 2.0 * to_numpy(prior["mu"]))
