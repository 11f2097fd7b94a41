"""Shared statistical checks of MCMC output against analytic posterior moments."""

import numpy as np

from ppl import ops
from ppl.diagnostics import mcse, split_gelman_rubin


def check_moments(draws, mean, sd, *, name="x", n_mcse=5.0, sd_rtol=0.15, max_rhat=1.01):
    """``draws`` (chains, draws, ...) against the exact ``mean`` and ``sd`` (broadcastable)."""
    x = np.asarray(ops.to_numpy(draws), dtype=np.float64)
    mean = np.broadcast_to(np.asarray(mean, float), x.shape[2:])
    sd = np.broadcast_to(np.asarray(sd, float), x.shape[2:])
    err = np.abs(x.mean(axis=(0, 1)) - mean)
    se = mcse(x)
    assert np.all(err <= n_mcse * se), (
        f"{name}: |mean - truth| = {err} exceeds {n_mcse} MCSE = {n_mcse * se}")
    ratio = x.reshape((-1,) + x.shape[2:]).std(axis=0, ddof=1) / sd
    assert np.all(np.abs(ratio - 1.0) <= sd_rtol), f"{name}: sd / truth = {ratio}"
    rhat = split_gelman_rubin(x)
    assert np.all(rhat < max_rhat), f"{name}: R-hat = {rhat}"


def num_divergences(mcmc):
    return int(np.sum(ops.to_numpy(mcmc.get_extra_fields()["diverging"])))
