"""The sampler's snapshot between runs (``MCMC.last_state``, ``MCMC.post_warmup_state``)."""

from __future__ import annotations

from typing import NamedTuple

from ppl.inference import hmc
from ppl.inference.adaptation import AdaptState

__all__ = ["MCMCState"]


class MCMCState(NamedTuple):
    """A snapshot of the sampler, for ``last_state`` / ``post_warmup_state``.

    Attributes
    ----------
    hmc_state
        :class:`~ppl.inference.hmc.HMCState` with ``(C, D)`` positions.
    adapt_state
        :class:`~ppl.inference.adaptation.AdaptState` (step size, inverse mass matrix, ...).
    rng_key
        A fresh key to continue with: ``mcmc.run(mcmc.last_state.rng_key)``.
    """

    hmc_state: hmc.HMCState
    adapt_state: AdaptState
    rng_key: object

    @property
    def position(self):
        return self.hmc_state.position

    @property
    def step_size(self):
        return self.adapt_state.step_size

    @property
    def inverse_mass_matrix(self):
        return self.adapt_state.inverse_mass_matrix
