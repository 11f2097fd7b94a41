"""Precise moment checks of NUTS on targets with known answers (issue 20: a biased sampler must
fail).

Each case draws from a target whose moments are known in closed form (or from SciPy) and checks
the mean, the (co)variances and, where it has a finite variance, the fourth moment, each within
``N_MCSE`` Monte Carlo standard errors. The MCSE of a statistic is ``ppl.diagnostics.mcse`` of
the transformed draws (``x``, ``(x - m)^2``, ``(x - m)^4``, an indicator, ...), so it accounts for
the autocorrelation of the chains.

Power. For a Gaussian, ``Var((x - m)^2) = 2 sigma^4``, so the MCSE of the estimated variance is
``sigma^2 sqrt(2 / ESS)``. A sampler whose variance is 10 % off must fail the 4.5-MCSE check,
so 4.5 MCSE must stay below 10 %, i.e. the relative MCSE of the variance below ~2 %, which
needs ``ESS > 2 / 0.02^2 = 5000`` effective draws of ``(x - m)^2``. NUTS gives about 0.4-0.5
effective draws of ``x^2`` per draw on these targets, hence ~12 000 draws. Every case asserts
this power (its ``power`` statistics have a relative MCSE below ``MAX_REL_MCSE``), so a run made
shorter later cannot silently lose it. StudentT(5) is the exception: ``x^2`` has no finite
fourth moment worth the name there (``Var(x^2)`` is finite but ``x^4``'s is not, so the MCSE of
``x^2`` converges slowly), so its power comes from the bounded ``P(|x| < 1)``.

Cost. On torch every leapfrog step is an eager call whatever the number of chains, while on JAX
a run costs mostly its compilation: so the draws come from many short chains run in lock-step
(32 x 500 after 250 warmup iterations: 26 s on torch for the 1-D normal, where 4 x 3000 after
300 took 39 s; the same ~12 s on JAX). The correlated Gaussian with a diagonal metric needs twice
the draws and deeper trees (60 s on torch): it runs on JAX in the default suite and on torch and
numpy in the slow one.
"""

import numpy as np
import pytest
from scipy import stats

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.diagnostics import effective_sample_size, mcse, split_gelman_rubin
from ppl.inference import MCMC, NUTS

N_MCSE = 4.5            # tolerance of every moment check, in Monte Carlo standard errors
MAX_REL_MCSE = 0.02     # power: relative MCSE of each case's variance-like statistic
NUM_CHAINS = 32
NUM_WARMUP = 250


# ---------------------------------------------------------------------------------- targets
def _gaussian_potential(mean, cov):
    prec, m = ops.asarray(np.linalg.inv(cov)), ops.asarray(mean)

    def potential(z):
        r = z - m
        return 0.5 * ops.sum(r * ops.matmul(prec, r))

    return potential


def _student_t_potential(df):
    def potential(z):            # -log density of StudentT(df), up to a constant
        return 0.5 * (df + 1.0) * ops.sum(ops.log1p(z * z / df))

    return potential


def beta_model():
    ppl.sample("x", dist.Beta(2.0, 5.0))


def _gaussian_stats(mean, cov):
    """Means, every central second moment and the central fourth moments ``3 sigma^4``."""
    mean, cov = np.asarray(mean, float), np.asarray(cov, float)

    def statistics(x):
        r = x - mean
        out = [(f"E[x{i}]", x[..., i], mean[i], False) for i in range(len(mean))]
        for i in range(len(mean)):
            for j in range(i, len(mean)):
                out.append((f"E[(x{i}-m)(x{j}-m)]", r[..., i] * r[..., j], cov[i, j], i == j))
        out += [(f"E[(x{i}-m)^4]", r[..., i] ** 4, 3 * cov[i, i] ** 2, False)
                for i in range(len(mean))]
        return out

    return statistics


def _student_t_stats(df):
    t = stats.t(df)

    def statistics(x):
        x = x[..., 0]
        return [("E[x]", x, 0.0, False),
                ("E[x^2]", x * x, df / (df - 2.0), False),
                ("P(x > 2)", (x > 2.0).astype(float), t.sf(2.0), False),
                ("P(|x| < 1)", (np.abs(x) < 1.0).astype(float), t.cdf(1.0) - t.cdf(-1.0),
                 True)]

    return statistics


def _beta_stats(a, b):
    def raw(k):       # E[x^k] = prod_{i<k} (a + i) / (a + b + i)
        return float(np.prod([(a + i) / (a + b + i) for i in range(k)]))

    m = raw(1)

    def statistics(x):
        x = x[..., 0]
        return [("E[x]", x, m, False),
                ("E[x^2]", x ** 2, raw(2), False),
                ("E[x^4]", x ** 4, raw(4), False),
                ("E[(x-m)^2]", (x - m) ** 2, raw(2) - m * m, True)]

    return statistics


_CORR_COV = np.array([[1.0, 0.9 * 3.0], [0.9 * 3.0, 9.0]])     # scales 1 and 3, correlation 0.9
_CORR_MEAN = np.array([1.0, -2.0])

# (id, potential factory (called under the active backend) or None for beta_model, kernel
#  options, dimension, statistics, draws in all, seed). ~16 000 draws give a relative MCSE of the
# variance of 1.5-1.7 % (power, above); the diagonal metric on the correlated Gaussian mixes
# about half as well per draw, so it gets twice as many.
CASES = [
    ("normal-1d", lambda: _gaussian_potential(np.zeros(1), np.eye(1)), {}, 1,
     _gaussian_stats(np.zeros(1), np.eye(1)), 16000, 1),
    ("normal-5d", lambda: _gaussian_potential(np.zeros(5), np.eye(5)), {}, 5,
     _gaussian_stats(np.zeros(5), np.eye(5)), 14000, 2),
    ("corr-2d-dense", lambda: _gaussian_potential(_CORR_MEAN, _CORR_COV), {"dense_mass": True},
     2, _gaussian_stats(_CORR_MEAN, _CORR_COV), 16000, 4),
    ("student-t5", lambda: _student_t_potential(5.0), {}, 1, _student_t_stats(5.0), 16000, 5),
    ("beta-2-5-model", None, {}, 1, _beta_stats(2.0, 5.0), 16000, 6),
]
# default suite on JAX only (torch and numpy: slow)
JAX_CASES = [
    ("corr-2d-diag", lambda: _gaussian_potential(_CORR_MEAN, _CORR_COV), {}, 2,
     _gaussian_stats(_CORR_MEAN, _CORR_COV), 32000, 3),
]


# ---------------------------------------------------------------------------------- checks
def _draws(case):
    """``(C, N, D)`` NumPy draws of the case (constrained values for the model)."""
    _, make_potential, opts, dim, _, total, seed = case
    num_samples = total // NUM_CHAINS
    if make_potential is None:
        mcmc = MCMC(NUTS(beta_model, **opts), num_warmup=NUM_WARMUP, num_samples=num_samples,
                    num_chains=NUM_CHAINS, progress_bar=False)
        mcmc.run(seed)
        x = ops.to_numpy(mcmc.get_samples(group_by_chain=True)["x"])[..., None]
    else:
        mcmc = MCMC(NUTS(potential_fn=make_potential(), **opts), num_warmup=NUM_WARMUP,
                    num_samples=num_samples, num_chains=NUM_CHAINS, progress_bar=False)
        init = np.random.default_rng(seed).uniform(-1.0, 1.0, size=(NUM_CHAINS, dim))
        mcmc.run(seed, init_params=ops.asarray(init))
        x = ops.to_numpy(mcmc.get_samples(group_by_chain=True))
    diverging = ops.to_numpy(mcmc.get_extra_fields()["diverging"])
    assert not diverging.any(), f"{int(diverging.sum())} divergences"
    return np.asarray(x, dtype=np.float64)


def _check_case(case):
    name, statistics = case[0], case[4]
    x = _draws(case)
    assert np.all(split_gelman_rubin(x) < 1.01), split_gelman_rubin(x)
    if name.startswith("beta"):
        assert np.all((x > 0) & (x < 1))
    failures, power = [], []
    for label, f, exact, is_power in statistics(x):
        f = np.asarray(f, dtype=np.float64)
        estimate, se = float(f.mean()), float(mcse(f))
        if abs(estimate - exact) > N_MCSE * se:
            failures.append(f"{label}: {estimate:.5g} vs exact {exact:.5g} "
                            f"({(estimate - exact) / se:+.1f} MCSE, MCSE {se:.3g})")
        if is_power and se > MAX_REL_MCSE * abs(exact):
            power.append(f"{label}: relative MCSE {se / abs(exact):.3f}, ESS "
                         f"{float(effective_sample_size(f, method='mean')):.0f}")
    assert not failures, f"{name}: " + "; ".join(failures)
    assert not power, f"{name}: run too short to see a 10 % error: " + "; ".join(power)


@pytest.mark.backends("jax", "torch")
@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_moments(backend, case):
    _check_case(case)


@pytest.mark.backends("jax")
@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("case", JAX_CASES, ids=[c[0] for c in JAX_CASES])
def test_moments_jax(backend, case):
    _check_case(case)


@pytest.mark.slow
@pytest.mark.backends("torch", "numpy")
@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("case", CASES + JAX_CASES, ids=[c[0] for c in CASES + JAX_CASES])
def test_moments_slow(backend, case):
    if backend.name == "torch" and case in CASES:
        pytest.skip("in the default suite on torch")
    _check_case(case)
