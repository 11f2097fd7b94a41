"""Issue 16, points 2 and 3: ``ppl.param`` sites and plate subsampling, on every backend,
against SciPy log-densities."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from conftest import assert_close, to_numpy

import ppl
import ppl.distributions as dist
from ppl import handlers
from ppl.distributions import constraints
from ppl.inference import log_density

pytestmark = pytest.mark.dtypes("float64")

Y = np.array([0.3, -1.2, 0.8, 2.0, -0.1, 0.7, 1.1, -0.4, 0.0, 0.9])


def param_model(y=Y):
    loc = ppl.param("loc", 0.5)
    scale = ppl.param("scale", np.ones(2), constraint=constraints.positive)
    mu = ppl.sample("mu", dist.Normal(loc, scale[0]))
    with ppl.plate("N", len(y)):
        ppl.sample("y", dist.Normal(mu, scale[1]), obs=y)


def test_param_site(backend):
    tr = handlers.trace(handlers.seed(param_model, rng_seed=0)).get_trace(Y)
    assert list(tr) == ["loc", "scale", "mu", "N", "y"]
    assert tr["loc"]["type"] == "param" and tr["scale"]["type"] == "param"
    assert tr["scale"]["kwargs"]["constraint"] is constraints.positive
    assert_close(tr["loc"]["value"], 0.5)
    assert_close(tr["scale"]["value"], np.ones(2))
    # substitute sets a param; log_density counts only sample sites
    model = handlers.substitute(param_model, data={"loc": 2.0, "scale": np.array([3.0, 0.5])})
    lp, tr = log_density(model, (Y,), {}, {"mu": 1.0})
    assert_close(tr["loc"]["value"], 2.0)
    expected = st.norm(2.0, 3.0).logpdf(1.0) + st.norm(1.0, 0.5).logpdf(Y).sum()
    assert_close(lp, expected)


def test_param_init_function_and_errors(backend):
    def model():
        return ppl.param("w", lambda key: ppl.random.normal(key, (3,)))

    a = to_numpy(handlers.seed(model, rng_seed=0)())
    b = to_numpy(handlers.seed(model, rng_seed=0)())
    assert a.shape == (3,)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="needs a random key"):
        model()
    with pytest.raises(ValueError, match="outside its constraint"):
        ppl.param("s", -1.0, constraint=constraints.positive)
    with pytest.raises(TypeError, match="constraint"):
        ppl.param("s", 1.0, constraint="positive")


def subsampled(y, m, subsample=None):
    mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
    with ppl.plate("N", len(y), subsample_size=m, subsample=subsample) as idx:
        ppl.sample("y", dist.Normal(mu, 1.0), obs=ppl.ops.asarray(y)[idx])
    return idx


@pytest.mark.parametrize("m", [3, 10])
def test_plate_subsample_scales_log_density(backend, m):
    model = handlers.seed(subsampled, rng_seed=4)
    lp, tr = log_density(model, (Y, m), {}, {"mu": 0.2})
    idx = to_numpy(tr["N"]["value"])
    assert idx.shape == (m,) and len(set(idx.tolist())) == m
    assert idx.min() >= 0 and idx.max() < len(Y)
    if m == len(Y):
        np.testing.assert_array_equal(idx, np.arange(len(Y)))
    expected = st.norm().logpdf(0.2) + len(Y) / m * st.norm(0.2, 1.0).logpdf(Y[idx]).sum()
    assert_close(lp, expected)
    assert tr["y"]["cond_indep_stack"][0].size == m
    # the same seed gives the same subsample, another seed (usually) another one
    again = to_numpy(handlers.seed(subsampled, rng_seed=4)(Y, m))
    np.testing.assert_array_equal(again, idx)


def test_plate_given_subsample(backend):
    lp, tr = log_density(subsampled, (Y, None, [1, 4]), {}, {"mu": -0.3})
    np.testing.assert_array_equal(to_numpy(tr["N"]["value"]), [1, 4])
    expected = st.norm().logpdf(-0.3) + 5.0 * st.norm(-0.3, 1.0).logpdf(Y[[1, 4]]).sum()
    assert_close(lp, expected)
    with pytest.raises(ValueError, match="subsample"):
        log_density(subsampled, (Y, 3), {}, {"mu": 0.0})  # no seed: cannot draw indices
