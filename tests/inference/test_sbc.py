"""Simulation-based calibration (Talts et al. 2018) of NUTS on a small hierarchical model.

``R`` data sets are simulated from the prior; their posteriors are sampled in *one* NUTS run of
the product model (a plate over replications: the posteriors are independent, so each
replication's marginal draws come from its own posterior). For each replication and parameter
the rank of the true value among thinned posterior draws must be uniform (chi-square test).
"""

import numpy as np
import pytest
from scipy import stats

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.inference import MCMC, NUTS

R, J = 100, 4


def hierarchical(y=None):
    with ppl.plate("rep", R, dim=-2):
        mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
        tau = ppl.sample("tau", dist.HalfNormal(1.0))
        with ppl.plate("J", J, dim=-1):
            theta = ppl.sample("theta", dist.Normal(0.0, 1.0))
            ppl.sample("y", dist.Normal(mu + tau * theta, 1.0), obs=y)


def _simulate(seed):
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=(R, 1))
    tau = np.abs(rng.normal(size=(R, 1)))
    theta = rng.normal(size=(R, J))
    y = mu + tau * theta + rng.normal(size=(R, J))
    return {"mu": mu[:, 0], "tau": tau[:, 0], "theta": theta}, y


@pytest.mark.slow
@pytest.mark.backends("jax")
@pytest.mark.dtypes("float64")
def test_simulation_based_calibration(backend):
    truth, y = _simulate(0)
    mcmc = MCMC(NUTS(hierarchical), num_warmup=1000, num_samples=1000, num_chains=4,
                thinning=10, progress_bar=False)
    mcmc.run(0, y=ops.asarray(y))
    samples = mcmc.get_samples()            # 400 thinned draws
    divergences = int(np.sum(ops.to_numpy(mcmc.get_extra_fields()["diverging"])))
    assert divergences <= 4, divergences
    bins = 10
    for name in ("mu", "tau", "theta"):
        draws = ops.to_numpy(samples[name]).reshape(400, R, -1)
        true = truth[name].reshape(R, -1)
        ranks = (draws < true[None]).sum(axis=0).ravel()          # in 0..400
        counts = np.histogram(ranks, bins=bins, range=(0, 401))[0]
        p = stats.chisquare(counts).pvalue
        assert p > 1e-3, (name, counts, p)
