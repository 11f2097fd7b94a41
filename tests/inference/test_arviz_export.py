"""``MCMC.to_arviz`` on eight schools, every backend: groups, plate dimensions shared between the
posterior and the data, the pointwise log-likelihood against SciPy, ``az.loo`` and ``az.waic``
against the same formulas evaluated by hand, coords/dims, and ``Predictive`` groups."""

import warnings

import numpy as np
import pytest
from scipy import special, stats

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.inference import MCMC, NUTS, Predictive

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import arviz as az

Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def eight_schools(sigma, y=None):
    mu = ppl.sample("mu", dist.Normal(0.0, 5.0))
    tau = ppl.sample("tau", dist.HalfCauchy(5.0))
    with ppl.plate("J", 8):
        theta_tilde = ppl.sample("theta_tilde", dist.Normal(0.0, 1.0))
        theta = ppl.deterministic("theta", mu + tau * theta_tilde)
        ppl.sample("obs", dist.Normal(theta, sigma), obs=y)


_RUNS = {}


@pytest.fixture
def run(backend):
    """One run per backend, shared by the tests of this file."""
    if backend.name in _RUNS:
        return _RUNS[backend.name]
    mcmc = MCMC(NUTS(eight_schools), num_warmup=100, num_samples=100, num_chains=2,
                progress_bar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mcmc.run(0, ops.asarray(SIGMA), y=ops.asarray(Y))
    _RUNS[backend.name] = mcmc
    return mcmc


def _idata(mcmc, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mcmc.to_arviz(**kw)


@pytest.mark.dtypes("float64")
def test_groups_dims_and_log_likelihood(run):
    idata = _idata(run)
    assert {"posterior", "sample_stats", "observed_data", "log_likelihood"} <= set(idata.groups())
    assert idata.posterior["theta"].dims == ("chain", "draw", "J")
    assert idata.posterior["theta_tilde"].dims == ("chain", "draw", "J")
    assert idata.observed_data["obs"].dims == ("J",)
    assert idata.log_likelihood["obs"].dims == ("chain", "draw", "J")
    np.testing.assert_array_equal(idata.observed_data["obs"].values, Y)
    # sample_stats under NumPyro's names and ArviZ's
    st = idata.sample_stats
    for name in ("diverging", "accept_prob", "acceptance_rate", "num_steps", "n_steps",
                 "potential_energy", "lp", "energy", "step_size", "tree_depth"):
        assert st[name].shape == (2, 100), name
    np.testing.assert_array_equal(st["lp"].values, -st["potential_energy"].values)
    np.testing.assert_array_equal(st["n_steps"].values, st["num_steps"].values)
    # log p(y_j | theta_j) by SciPy from the exported draws
    theta = idata.posterior["theta"].values
    by_hand = stats.norm.logpdf(Y, theta, SIGMA)
    np.testing.assert_allclose(idata.log_likelihood["obs"].values, by_hand, rtol=1e-6)


@pytest.mark.dtypes("float64")
def test_loo_and_waic_match_by_hand(run):
    idata = _idata(run)
    theta = idata.posterior["theta"].values
    ll = stats.norm.logpdf(Y, theta, SIGMA)                       # (chain, draw, J)
    flat = ll.reshape(-1, 8)
    # WAIC (Watanabe 2010; Vehtari et al. 2017, eqs. 3-5): lppd - sum of pointwise variances
    # (ArviZ takes the variances over the draws with ddof=0)
    lppd = special.logsumexp(flat, axis=0) - np.log(flat.shape[0])
    p_waic = np.var(flat, axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        waic = az.waic(idata)
        # reff fixed: ArviZ otherwise derives it from the ESS of all posterior variables
        loo = az.loo(idata, pointwise=True, reff=1.0)
        hand = az.from_dict(posterior={"theta": theta}, log_likelihood={"obs": ll})
        loo_hand = az.loo(hand, reff=1.0)
    np.testing.assert_allclose(waic.elpd_waic, np.sum(lppd - p_waic), rtol=1e-8)
    np.testing.assert_allclose(waic.p_waic, np.sum(p_waic), rtol=1e-8)
    # PSIS-LOO (Vehtari et al. 2017/2024) given the pointwise log-likelihood computed here
    np.testing.assert_allclose(loo.elpd_loo, loo_hand.elpd_loo, rtol=1e-8)
    assert loo.loo_i.shape == (8,) and np.isfinite(loo.elpd_loo)
    # and PSIS-LOO is close to its plain importance-sampling estimate on this easy model
    is_loo = -(special.logsumexp(-flat, axis=0) - np.log(flat.shape[0]))
    np.testing.assert_allclose(loo.elpd_loo, np.sum(is_loo), atol=1.0)


@pytest.mark.dtypes("float64")
def test_coords_dims_and_predictive_groups(run):
    names = [f"school_{j}" for j in range(8)]
    sigma = ops.asarray(SIGMA)
    post = Predictive(eight_schools, run.get_samples())(1, sigma)
    prior = Predictive(eight_schools, num_samples=50)(2, sigma)
    idata = _idata(run, coords={"school": names}, dims={"theta": ["school"]},
                   posterior_predictive=post, prior=prior)
    assert idata.posterior["theta"].dims == ("chain", "draw", "school")
    assert list(idata.posterior["school"].values) == names
    assert idata.posterior["theta_tilde"].dims == ("chain", "draw", "J")   # plate name kept
    assert idata.posterior_predictive["obs"].shape == (2, 100, 8)
    assert idata.posterior_predictive["obs"].dims == ("chain", "draw", "J")
    assert set(idata.prior.data_vars) == {"mu", "tau", "theta_tilde", "theta"}
    assert idata.prior["mu"].shape == (1, 50)
    assert idata.prior_predictive["obs"].dims == ("chain", "draw", "J")
    np.testing.assert_allclose(idata.posterior_predictive["obs"].values,
                               ops.to_numpy(post["obs"]).reshape(2, 100, 8))
