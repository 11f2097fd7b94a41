"""NUTS with ``sample(..., obs_mask=...)`` on every backend: a conjugate Normal model with
missing observations, whose posterior of the mean and of the imputed values is analytic, and
the posterior predictive of its draws (trace-level checks: tests/model/test_obs_mask.py)."""

from __future__ import annotations

import numpy as np
import pytest
from _checks import check_moments
from conftest import assert_close, to_numpy

import ppl
import ppl.distributions as dist
from ppl.inference import MCMC, NUTS, Predictive

Y = np.array([0.3, np.nan, 1.2, np.nan, -0.5, 0.8])
MASK = ~np.isnan(Y)
PRIOR_SD = 2.0


def model(y=None, mask=None):
    mu = ppl.sample("mu", dist.Normal(0.0, PRIOR_SD))
    with ppl.plate("N", 6):
        return ppl.sample("y", dist.Normal(mu, 1.0), obs=y, obs_mask=mask)


@pytest.mark.dtypes("float64")
@pytest.mark.filterwarnings("ignore::ppl.inference.run_warnings.SamplingWarning")  # R-hat 1.01
def test_nuts_imputation_matches_the_conjugate_posterior(backend):
    """mu ~ N(0, 2^2), y_i ~ N(mu, 1): the posterior of mu is normal with precision
    1/4 + n_obs; an imputed y_j is mu + noise, N(mean, 1 + var_post). The latent entries at
    observed places are draws of that same predictive (their prior density is kept)."""
    mcmc = MCMC(NUTS(model), num_warmup=300, num_samples=300, num_chains=2, progress_bar=False)
    mcmc.run(3, Y, MASK)
    draws = mcmc.get_samples(group_by_chain=True)
    prec = 1 / PRIOR_SD**2 + MASK.sum()
    mean, var = Y[MASK].sum() / prec, 1 / prec
    check_moments(draws["mu"], mean, np.sqrt(var), name="mu", max_rhat=1.05)
    y, latent = to_numpy(draws["y"]), to_numpy(draws["y_unobserved"])
    np.testing.assert_array_equal(y[..., MASK], np.broadcast_to(Y[MASK], y[..., MASK].shape))
    check_moments(y[..., ~MASK], mean, np.sqrt(1 + var), name="imputed y", max_rhat=1.05)
    check_moments(latent[..., MASK], mean, np.sqrt(1 + var), name="latent at observed places",
                  max_rhat=1.05)
    # the posterior predictive with the data given recomputes y from y_unobserved and the data
    pred = Predictive(model, draws, batch_ndims=2)(0, Y, MASK)
    assert sorted(pred) == ["y", "y_observed"]
    assert_close(pred["y"], np.where(MASK, Y, latent))
