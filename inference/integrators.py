"""Symplectic integrators for Hamiltonian dynamics.

The velocity Verlet (leapfrog) integrator alternates half steps of the momentum with full steps
of the position:

    p_{1/2} = p_0 - (eps/2) grad U(q_0)
    q_1     = q_0 + eps M^{-1} p_{1/2}
    p_1     = p_{1/2} - (eps/2) grad U(q_1)

It is symplectic and time-reversible, and its energy error is ``O(eps^2)`` over a fixed
trajectory length (Leimkuhler & Reich 2004; Neal 2011, sec. 5.2.3). The gradient at the end of a
step is carried in the state, so each step costs exactly one gradient evaluation.

References
----------
Leimkuhler, B. and Reich, S. (2004). Simulating Hamiltonian Dynamics. Cambridge Univ. Press.
Neal, R. M. (2011). MCMC using Hamiltonian dynamics. Handbook of Markov Chain Monte Carlo.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

__all__ = ["IntegratorState", "velocity_verlet"]


class IntegratorState(NamedTuple):
    """A point in phase space, batched over chains.

    Attributes
    ----------
    position
        ``(C, D)`` unconstrained positions.
    momentum
        ``(C, D)`` momenta.
    potential_energy
        ``(C,)`` potential energy ``U(q)`` (minus the log density).
    potential_energy_grad
        ``(C, D)`` gradient of ``U`` at ``position``.
    """

    position: object
    momentum: object
    potential_energy: object
    potential_energy_grad: object


def velocity_verlet(potential_and_grad_fn: Callable, velocity_fn: Callable) -> Callable:
    """Build one velocity Verlet step.

    Parameters
    ----------
    potential_and_grad_fn
        ``q (C, D) -> (U (C,), grad U (C, D))``, batched over chains.
    velocity_fn
        ``p (C, D) -> M^{-1} p`` (see :func:`ppl.inference.metrics.gaussian_euclidean`).

    Returns
    -------
    Callable
        ``one_step(state, step_size) -> IntegratorState``; ``step_size`` broadcasts against the
        position (a scalar or a ``(C, 1)`` array; negative values integrate backwards in time).

    Examples
    --------
    >>> import ppl
    >>> from ppl import ops
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     vg = lambda q: (0.5 * ops.sum(q * q, -1), q)
    ...     step = velocity_verlet(vg, lambda p: p)
    ...     q = ops.ones((1, 2)); u, g = vg(q)
    ...     s = step(IntegratorState(q, ops.zeros((1, 2)), u, g), 0.1)
    ...     s.position.shape
    (1, 2)
    """

    def one_step(state: IntegratorState, step_size) -> IntegratorState:
        half = 0.5 * step_size
        momentum = state.momentum - half * state.potential_energy_grad
        position = state.position + step_size * velocity_fn(momentum)
        potential_energy, grad = potential_and_grad_fn(position)
        momentum = momentum - half * grad
        return IntegratorState(position, momentum, potential_energy, grad)

    return one_step
