"""``CircularReparam`` on every backend: the log density of the reparameterized sites against
SciPy's ``vonmises``, the prior law of the wrapped site, and NUTS on a VonMises posterior whose
mass straddles ``pi`` against a numerically integrated reference (circular mean and mean
resultant length)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.stats as st
from conftest import assert_close, to_numpy

import ppl
import ppl.distributions as dist
from ppl import handlers
from ppl.diagnostics import mcse, split_gelman_rubin
from ppl.inference import MCMC, NUTS, Predictive, log_density
from ppl.inference.reparam import CircularReparam
from ppl.inference.run_warnings import SamplingWarning

PRIOR_LOC, PRIOR_KAPPA, OBS_KAPPA = 3.0, 2.0, 1.5
Y = np.array([3.0, -3.0, 2.8, -2.9, 3.1, -2.6])  # around pi, on both of its sides


def wrap(x):
    return np.remainder(np.asarray(x) + np.pi, 2 * np.pi) - np.pi


def model(y=Y):
    theta = ppl.sample("theta", dist.VonMises(PRIOR_LOC, PRIOR_KAPPA))
    with ppl.plate("N", len(Y)):
        ppl.sample("y", dist.VonMises(theta, OBS_KAPPA), obs=y)


def reparameterized(fn=model):
    return handlers.reparam(fn, config={"theta": CircularReparam()})


def posterior_reference(n=200_000):
    """E[cos theta], E[sin theta] of the posterior, by quadrature on a grid over [-pi, pi)."""
    grid = np.linspace(-np.pi, np.pi, n, endpoint=False)
    logp = st.vonmises.logpdf(grid, PRIOR_KAPPA, loc=PRIOR_LOC) \
        + st.vonmises.logpdf(Y[:, None], OBS_KAPPA, loc=grid).sum(0)
    w = np.exp(logp - logp.max())
    w /= w.sum()
    return np.sum(w * np.cos(grid)), np.sum(w * np.sin(grid))


# (site, params of the unwrapped site): scalar, in a plate, as one event of two angles
LOG_DENSITY_CASES = {
    "scalar": (lambda: ppl.sample("t", dist.VonMises(PRIOR_LOC, PRIOR_KAPPA)), 7.5),
    "in a plate": (lambda: _in_plate(), np.array([-4.0, 0.3])),
    "to_event": (lambda: ppl.sample("t", dist.VonMises(np.array([PRIOR_LOC, -1.0]),
                                                       PRIOR_KAPPA).to_event(1)),
                 np.array([9.0, -20.0])),
}


def _in_plate():
    with ppl.plate("M", 2):
        ppl.sample("t", dist.VonMises(np.array([PRIOR_LOC, -1.0]), PRIOR_KAPPA))


@pytest.mark.parametrize("case", list(LOG_DENSITY_CASES))
def test_circular_reparam_log_density(backend, case):
    site, u = LOG_DENSITY_CASES[case]
    lp, tr = log_density(handlers.reparam(site, config={"t": CircularReparam()}), (), {},
                         {"t_unwrapped": u})
    assert [(n, s["type"]) for n, s in tr.items() if n != "M"] == \
        [("t_unwrapped", "sample"), ("t", "deterministic")]
    locs = np.broadcast_to(np.array([PRIOR_LOC, -1.0]) if case != "scalar" else PRIOR_LOC,
                           np.shape(u))
    # the density of the wrapped angle (SciPy's vonmises is 2 pi-periodic, so both agree)
    expected = st.vonmises.logpdf(wrap(u), PRIOR_KAPPA, loc=locs).sum()
    assert_close(lp, expected)
    assert_close(lp, st.vonmises.logpdf(u, PRIOR_KAPPA, loc=locs).sum())
    assert_close(tr["t"]["value"], wrap(u))
    # the new site lives on the whole real line
    far = ppl.ops.asarray(np.asarray(u) + 100.0)
    assert bool(ppl.ops.all(tr["t_unwrapped"]["fn"].support.check(far)))


def test_circular_reparam_model_log_density(backend):
    u = -3.5  # wraps to 2.78
    lp, tr = log_density(reparameterized(), (), {}, {"theta_unwrapped": u})
    theta = wrap(u)
    expected = st.vonmises.logpdf(theta, PRIOR_KAPPA, loc=PRIOR_LOC) \
        + st.vonmises.logpdf(Y, OBS_KAPPA, loc=theta).sum()
    assert_close(lp, expected)
    assert_close(tr["theta"]["value"], theta)
    assert "theta_factor" not in tr  # unlike NumPyro, the density sits on theta_unwrapped


def test_circular_reparam_keeps_the_prior(backend):
    """The new site can be drawn from (NumPyro's flat ImproperUniform cannot): one run of the
    model draws 4000 angles, which have the law of the original site."""
    def prior():
        with ppl.plate("draws", 4000):
            ppl.sample("theta", dist.VonMises(PRIOR_LOC, PRIOR_KAPPA))

    tr = handlers.trace(handlers.seed(reparameterized(prior), rng_seed=0)).get_trace()
    theta, u = to_numpy(tr["theta"]["value"]), to_numpy(tr["theta_unwrapped"]["value"])
    assert theta.shape == (4000,)
    assert np.all((theta >= -np.pi) & (theta < np.pi))
    assert_close(theta, wrap(u), tol=10.0)
    # circular mean and mean resultant length of VonMises(3, 2): loc and I1(2) / I0(2)
    c, s = np.cos(theta).mean(), np.sin(theta).mean()
    r = st.vonmises(PRIOR_KAPPA).expect(np.cos)
    se = 1 / np.sqrt(len(theta))
    assert abs(np.hypot(c, s) - r) < 5 * se
    assert abs(wrap(np.arctan2(s, c) - PRIOR_LOC)) < 5 * se / r
    # and Predictive draws the reparameterized model's prior predictive
    draws = Predictive(reparameterized(), num_samples=5)(0, None)
    assert sorted(draws) == ["theta", "theta_unwrapped", "y"]
    assert to_numpy(draws["y"]).shape == (5, len(Y))


def test_circular_reparam_errors(backend):
    normal = reparameterized(lambda: ppl.sample("theta", dist.Normal(0.0, 1.0)))
    with pytest.raises(TypeError, match=r"'theta'.*Normal.*constraints.circular"):
        log_density(normal, (), {}, {"theta_unwrapped": 0.0})
    observed = handlers.reparam(model, config={"y": CircularReparam()})
    with pytest.raises(ValueError, match="'y' is observed"):
        log_density(observed, (), {}, {"theta": 0.0})


@pytest.mark.dtypes("float64")
@pytest.mark.filterwarnings("ignore::ppl.inference.run_warnings.SamplingWarning")
def test_circular_reparam_nuts_matches_quadrature(backend):
    """The posterior straddles pi: the draws of theta have the circular mean and the mean
    resultant length of the quadrature reference within Monte Carlo error."""
    steps = 250 if backend.name == "numpy" else 400
    mcmc = MCMC(NUTS(reparameterized()), num_warmup=steps, num_samples=steps, num_chains=2,
                progress_bar=False)
    mcmc.run(1)
    draws = mcmc.get_samples(group_by_chain=True)
    theta = to_numpy(draws["theta"])
    assert theta.shape == (2, steps)
    assert np.all((theta >= -np.pi) & (theta < np.pi))
    assert_close(theta, wrap(to_numpy(draws["theta_unwrapped"])), tol=10.0)
    assert (theta > 2.5).mean() > 0.2 and (theta < -2.5).mean() > 0.2  # both sides of pi

    ref_c, ref_s = posterior_reference()
    ref_r, ref_mean = np.hypot(ref_c, ref_s), np.arctan2(ref_s, ref_c)
    cs = np.stack([np.cos(theta), np.sin(theta)], axis=-1)  # (chains, draws, 2)
    assert np.all(split_gelman_rubin(cs) < 1.05)
    (c, s), (se_c, se_s) = cs.mean(axis=(0, 1)), mcse(cs)
    se = np.hypot(se_c, se_s)  # bounds the standard errors of r and of r * mean direction
    r, mean = np.hypot(c, s), np.arctan2(s, c)
    assert abs(c - ref_c) < 5 * se_c and abs(s - ref_s) < 5 * se_s, (c, s, ref_c, ref_s)
    assert abs(r - ref_r) < 5 * se, (r, ref_r, se)
    assert abs(wrap(mean - ref_mean)) < 5 * se / ref_r, (mean, ref_mean, se / ref_r)


@pytest.mark.dtypes("float64")
@pytest.mark.backends("numpy", "jax")
def test_chains_on_different_copies_of_the_circle_do_not_warn(backend):
    """Started 10 pi apart, the chains of theta_unwrapped sit on different copies of one
    posterior: MCMC's warnings judge the site by its cos and sin and stay quiet."""
    mcmc = MCMC(NUTS(reparameterized()), num_warmup=300, num_samples=400, num_chains=2,
                progress_bar=False)
    start = {"theta_unwrapped": ppl.ops.asarray([3.0, 3.0 + 10 * np.pi])}
    with warnings.catch_warnings():
        warnings.simplefilter("error", SamplingWarning)
        mcmc.run(2, init_params=start)
    unwrapped = to_numpy(mcmc.get_samples(group_by_chain=True)["theta_unwrapped"])
    assert abs(unwrapped[1].mean() - unwrapped[0].mean()) > 2 * np.pi       # they stayed apart
