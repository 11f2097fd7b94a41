"""Hamiltonian Monte Carlo with a fixed (or per-draw jittered) number of leapfrog steps.

Pure functions over NamedTuples, batched over chains that advance in lock-step:

* :func:`init` ``(position, potential_and_grad_fn) -> HMCState``
* :func:`step` ``(rng_key, state, potential_and_grad_fn, step_size, inverse_mass_matrix, *,
  num_steps, max_delta_energy) -> (HMCState, HMCInfo)``

``num_steps`` may differ between chains (an integer array of shape ``(C,)``); a chain that has
done its steps is frozen while the others finish, so one ``while_loop`` serves every chain and
every backend. The end point is accepted with probability ``min(1, exp(H_0 - H_L))``
(Duane et al. 1987; Neal 2011).

References
----------
Duane, S., Kennedy, A. D., Pendleton, B. J. and Roweth, D. (1987). Hybrid Monte Carlo.
Physics Letters B 195(2).
Neal, R. M. (2011). MCMC using Hamiltonian dynamics. Handbook of Markov Chain Monte Carlo.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ppl import ops, random
from ppl.inference.batching import select
from ppl.inference.integrators import IntegratorState, velocity_verlet
from ppl.inference.metrics import gaussian_euclidean
from ppl.inference.proposal import log_weight

__all__ = ["HMCState", "HMCInfo", "init", "step"]


class HMCState(NamedTuple):
    """The state of a batch of HMC/NUTS chains: one flat unconstrained vector per chain.

    Attributes
    ----------
    position
        ``(C, D)`` unconstrained positions.
    potential_energy
        ``(C,)`` potential energy (minus the log joint density, Jacobians included).
    potential_energy_grad
        ``(C, D)`` its gradient, kept so a transition does not recompute it.
    """

    position: object
    potential_energy: object
    potential_energy_grad: object


class HMCInfo(NamedTuple):
    """What one HMC transition reports, per chain.

    Attributes
    ----------
    diverging
        ``(C,)`` bool, the energy error exceeded ``max_delta_energy`` (or was NaN).
    num_steps
        ``(C,)`` number of leapfrog steps (gradient evaluations).
    accept_prob
        ``(C,)`` Metropolis acceptance probability ``min(1, exp(H_0 - H_L))``.
    energy
        ``(C,)`` Hamiltonian of the returned point.
    is_accepted
        ``(C,)`` bool, whether the proposal was accepted.
    """

    diverging: object
    num_steps: object
    accept_prob: object
    energy: object
    is_accepted: object


def empty_info(position) -> HMCInfo:
    """All-zero statistics of the chains at ``position`` ``(C, D)`` (a skipped iteration)."""
    zeros = ops.zeros(ops.shape(position)[:1], ops.dtype_of(position))
    flags = ops.zeros(ops.shape(position)[:1], bool)
    return HMCInfo(flags, zeros, zeros, zeros, flags)


def init(position, potential_and_grad_fn: Callable) -> HMCState:
    """The state at ``position`` (``(C, D)``).

    Parameters
    ----------
    position
        ``(C, D)`` unconstrained positions.
    potential_and_grad_fn
        ``q (C, D) -> (U (C,), grad U (C, D))``, e.g.
        ``ops.vmap(ops.value_and_grad(potential_fn))``.
    """
    potential_energy, grad = potential_and_grad_fn(position)
    return HMCState(position, potential_energy, grad)


def step(rng_key, state: HMCState, potential_and_grad_fn: Callable, step_size,
         inverse_mass_matrix, *, num_steps, max_delta_energy: float = 1000.0):
    """One HMC transition for every chain.

    Parameters
    ----------
    rng_key
        A ``ppl.random`` key.
    state
        The current :class:`HMCState`.
    potential_and_grad_fn
        Batched ``q -> (U, grad U)``.
    step_size
        ``(C,)`` step sizes.
    inverse_mass_matrix
        ``(C, D)`` diagonal or ``(C, D, D)`` dense.
    num_steps
        Leapfrog steps: an int or an integer array ``(C,)``.
    max_delta_energy
        Energy error above which a transition is flagged divergent.

    Returns
    -------
    (HMCState, HMCInfo)
    """
    metric = gaussian_euclidean(inverse_mass_matrix)
    k_mom, k_acc = random.split(rng_key, 2)
    shape = ops.shape(state.position)
    momentum = metric.sample_momentum(k_mom, shape)
    energy0 = state.potential_energy + metric.kinetic_energy(momentum)
    eps = ops.expand_dims(step_size, -1)
    leapfrog = velocity_verlet(potential_and_grad_fn, metric.velocity)

    num_steps = ops.asarray(num_steps)
    if ops.ndim(num_steps) == 0:
        num_steps = ops.full((shape[0],), 1, dtype=ops.dtype_of(num_steps)) * num_steps
    max_steps = ops.max(num_steps)

    def cond_fn(carry):
        return carry[0] < max_steps

    def body_fn(carry):
        i, s = carry
        new = leapfrog(s, eps)
        s = select(i < num_steps, new, s)
        return i + 1, s

    start = IntegratorState(state.position, momentum, state.potential_energy,
                            state.potential_energy_grad)
    _, end = ops.while_loop(cond_fn, body_fn, (ops.zeros((), dtype=ops.dtype_of(num_steps)),
                                               start))
    energy1 = end.potential_energy + metric.kinetic_energy(end.momentum)
    log_ratio = log_weight(energy0, energy1)
    accept_prob = ops.exp(ops.minimum(log_ratio, 0.0))
    diverging = -log_ratio > max_delta_energy
    u = random.uniform(k_acc, (shape[0],))
    accepted = u < accept_prob
    end_state = HMCState(end.position, end.potential_energy, end.potential_energy_grad)
    new_state = select(accepted, end_state, state)
    energy = ops.where(accepted, energy1, energy0)
    info = HMCInfo(diverging, num_steps, accept_prob, energy, accepted)
    return new_state, info
