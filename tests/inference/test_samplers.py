"""NUTS and HMC on analytic Gaussian posteriors, on every backend: posterior means within
5 Monte Carlo standard errors, sds within 15 %, split R-hat < 1.01, no divergences."""

import numpy as np
import pytest
from _checks import check_moments, num_divergences

from ppl import ops
from ppl.inference import HMC, MCMC, NUTS


def _gaussian(dim, seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(dim, dim))
    cov = a @ a.T / dim + np.diag(np.linspace(0.5, 3.0, dim))
    if dim == 2:
        cov = np.array([[1.0, 1.6], [1.6, 4.0]])     # correlation 0.8
    return np.linspace(-2.0, 2.0, dim), cov


# (id, kernel class, kernel options, dimension, draws per chain); the first group runs on every
# backend in the default suite, the second on JAX (numpy and torch: slow suite).
CASES = [
    ("nuts-5d-diag", NUTS, {}, 5, 400),
    ("nuts-2d-dense", NUTS, {"dense_mass": True}, 2, 400),
    ("hmc-5d-diag-jitter", HMC, {"trajectory_length": 2.0, "num_steps_jitter": 0.9}, 5, 800),
]
MORE_CASES = [
    ("nuts-2d-diag", NUTS, {}, 2, 1000),
    ("nuts-5d-dense", NUTS, {"dense_mass": True}, 5, 500),
    ("hmc-2d-dense-fixed", HMC, {"dense_mass": True, "num_steps": 2}, 2, 500),
]


def _run(kernel_cls, opts, dim, *, num_chains=4, num_samples=500, seed=0):
    mean, cov = _gaussian(dim, seed=dim)
    prec, m = ops.asarray(np.linalg.inv(cov)), ops.asarray(mean)

    def potential(z):
        r = z - m
        return 0.5 * ops.sum(r * ops.matmul(prec, r))

    mcmc = MCMC(kernel_cls(potential_fn=potential, **opts), num_warmup=300,
                num_samples=num_samples, num_chains=num_chains, progress_bar=False)
    init = np.random.default_rng(seed).uniform(-2, 2, size=(num_chains, dim))
    mcmc.run(seed, init_params=ops.asarray(init))
    return mcmc, mean, cov


def _check_case(case):
    name, kernel_cls, opts, dim, num_samples = case
    mcmc, mean, cov = _run(kernel_cls, opts, dim, num_samples=num_samples)
    draws = mcmc.get_samples(group_by_chain=True)
    assert ops.shape(draws) == (4, num_samples, dim)
    # 4 x 400-800 draws: split R-hat of a well-mixed chain reaches 1.01-1.015 by chance in a
    # few of the ~30 backend x case runs, so the bound is 1.02 (the moments are the check)
    check_moments(draws, mean, np.sqrt(np.diag(cov)), name=name, max_rhat=1.02)
    assert num_divergences(mcmc) == 0


@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gaussian_posterior(backend, case):
    _check_case(case)


@pytest.mark.backends("jax")
@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("case", MORE_CASES, ids=[c[0] for c in MORE_CASES])
def test_gaussian_posterior_more(backend, case):
    _check_case(case)


@pytest.mark.slow
@pytest.mark.backends("numpy", "torch")
@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("case", MORE_CASES, ids=[c[0] for c in MORE_CASES])
def test_gaussian_posterior_more_slow_backends(backend, case):
    _check_case(case)


@pytest.mark.dtypes("float32")
def test_gaussian_posterior_float32(backend):
    mcmc, mean, cov = _run(NUTS, {}, 5, seed=1)
    draws = mcmc.get_samples(group_by_chain=True)
    assert ops.dtype_of(draws) == "float32"
    check_moments(draws, mean, np.sqrt(np.diag(cov)), name="float32")
    assert num_divergences(mcmc) == 0


@pytest.mark.backends("jax")
@pytest.mark.dtypes("float64")
def test_dense_mass_matrix_learns_the_covariance(backend):
    mcmc, _, cov = _run(NUTS, {"dense_mass": True}, 2, num_samples=100)
    inv_mass = ops.to_numpy(mcmc.last_state.inverse_mass_matrix)
    assert inv_mass.shape == (4, 2, 2)
    corr = inv_mass[:, 0, 1] / np.sqrt(inv_mass[:, 0, 0] * inv_mass[:, 1, 1])
    # each chain's estimate from its last warmup window scatters by ~0.06 around 0.8 (sd over
    # 60 seeds x 4 chains); a diagonal or mis-scaled estimate gives ~0
    assert abs(corr.mean() - 0.8) < 0.09 and np.all(np.abs(corr - 0.8) < 0.25), corr
    ppl_steps = ops.to_numpy(mcmc.get_extra_fields()["num_steps"]).mean()
    assert ppl_steps < 8, ppl_steps      # a whitened 2-D Gaussian needs short trajectories
