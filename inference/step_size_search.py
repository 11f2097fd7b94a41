"""Stan's initial step-size heuristic (Hoffman & Gelman 2014, Algorithm 4, in the form of
Stan's ``init_stepsize``), run at the start of each warmup stage, for every chain at once.

* :func:`find_reasonable_step_size` takes the heuristic's single leapfrog steps itself;
* :func:`search_step_size` takes them as one-step transitions of the kernel, in one loop with
  the transition that follows, so a program compiled whole (JAX, TensorFlow) holds the model's
  gradient once.

Both apply the same rule (:func:`_next_trial`) and draw trial ``k``'s momentum from
``fold_in(rng_key, k)``.

References
----------
Hoffman, M. D. and Gelman, A. (2014). The No-U-Turn Sampler. JMLR 15, 1593-1623.
Stan Development Team. stan/src/stan/mcmc/hmc/base_hmc.hpp (``init_stepsize``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ppl import ops, random
from ppl.inference.integrators import IntegratorState, velocity_verlet
from ppl.inference.metrics import gaussian_euclidean
from ppl.inference.proposal import log_weight

__all__ = ["find_reasonable_step_size", "search_step_size"]


def _next_trial(trial, step_size, direction, searching, accept_prob, target_accept: float,
                max_trials: int):
    """Stan's rule after trial number ``trial`` (a scalar) with acceptance ``accept_prob``
    ``(C,)`` at ``step_size``: ``(step_size, direction, searching)`` for the next trial."""
    good = accept_prob > target_accept                  # (NaN: not good)
    first = trial == 0
    direction = ops.where(first, ops.where(good, 1.0, -1.0), direction)
    crossed = ops.logical_and(ops.logical_not(first),
                              ops.where(direction > 0, ops.logical_not(good), good))
    stuck = (step_size > 1e7) | (step_size < 1e-12) | (trial + 1 >= max_trials)
    searching = searching & ops.logical_not(crossed | stuck)
    grow = searching & ops.logical_not(first)
    step_size = ops.where(grow, step_size * ops.where(direction > 0, 2.0, 0.5), step_size)
    return step_size, direction, searching


class _Search(NamedTuple):
    calls: object        # transitions made so far (scalar)
    step_size: object    # (C,) the step size of the next call
    direction: object    # (C,) +1 doubling, -1 halving (set by the first trial)
    searching: object    # (C,) bool
    done: object         # scalar bool: the last call was the full transition
    out: tuple           # the last call's (state, info)


def find_reasonable_step_size(rng_key, state, potential_and_grad_fn: Callable, step_size,
                              inverse_mass_matrix, *, target_accept: float = 0.8,
                              max_trials: int = 100):
    """Stan's step-size heuristic, for every chain at once.

    The heuristic (Hoffman & Gelman 2014, Algorithm 4, in the form of Stan's
    ``init_stepsize``) takes single leapfrog steps from the current point, trial ``k`` from a
    fresh momentum drawn with ``fold_in(rng_key, k)``: the first fixes the direction (up if its
    acceptance ``exp(H_0 - H_1)`` is above ``target_accept``, else down); from the second on,
    the step size doubles (or halves) until a step's acceptance falls below (or rises above)
    ``target_accept``, and that step's size is kept. Chains search together; a chain that is
    done keeps its step size.

    Parameters
    ----------
    rng_key
        A ``ppl.random`` key.
    state
        An :class:`~ppl.inference.hmc.HMCState` with ``(C, D)`` positions.
    potential_and_grad_fn
        Batched ``q -> (U, grad U)``.
    step_size
        ``(C,)`` starting step sizes.
    inverse_mass_matrix
        ``(C, D)`` or ``(C, D, D)``.

    Returns
    -------
    ``(C,)`` step sizes.
    """
    metric = gaussian_euclidean(inverse_mass_matrix)
    leapfrog = velocity_verlet(potential_and_grad_fn, metric.velocity)
    shape = ops.shape(state.position)

    def body(carry):
        trial, eps, direction, searching = carry
        p = metric.sample_momentum(random.fold_in(rng_key, trial), shape)
        new = leapfrog(IntegratorState(state.position, p, state.potential_energy,
                                       state.potential_energy_grad), ops.expand_dims(eps, -1))
        log_w = log_weight(state.potential_energy + metric.kinetic_energy(p),
                           new.potential_energy + metric.kinetic_energy(new.momentum))
        accept = ops.exp(ops.minimum(log_w, 0.0))
        return (trial + 1, *_next_trial(trial, eps, direction, searching, accept,
                                        target_accept, max_trials))

    init = (ops.zeros((), "int32"), step_size, ops.zeros_like(step_size),
            ops.ones(ops.shape(step_size), bool))
    return ops.while_loop(lambda c: ops.any(c[3]), body, init)[1]


def search_step_size(transition: Callable, rng_key, step_size, search, empty_out, *,
                     target_accept: float = 0.8, max_trials: int = 100):
    """:func:`find_reasonable_step_size` through the kernel's own transition, then the
    transition: ``(state, info, step_size)``.

    ``transition(rng_key, step_size, one_step) -> (state, info)`` is the kernel's transition
    from the current point; with ``one_step`` (a scalar bool) it is a single leapfrog step from
    a fresh momentum, whose ``info.accept_prob`` is ``min(1, exp(H_0 - H_1))``: the
    heuristic's trial. The trials and the transition that follows are one call of
    ``transition`` inside a loop (call ``k`` with ``fold_in(rng_key, k)``), so a program
    compiled whole holds the model's gradient once: on JAX a leapfrog of the heuristic's own
    was 7-14 % of a first run's compile. ``empty_out`` is a ``(state, info)`` of the structure
    ``transition`` returns (the loop's initial value); without ``search`` the loop makes one
    call, the transition.
    """
    def body(c: _Search) -> _Search:
        trial = ops.any(c.searching)
        out = transition(random.fold_in(rng_key, c.calls), c.step_size, trial)
        step_size, direction, searching = _next_trial(
            c.calls, c.step_size, c.direction, c.searching, out[1].accept_prob, target_accept,
            max_trials)
        return _Search(c.calls + 1, step_size, direction, searching, ops.logical_not(trial), out)

    init = _Search(ops.zeros((), "int32"), step_size, ops.zeros_like(step_size),
                   ops.logical_and(ops.ones(ops.shape(step_size), bool), search),
                   ops.zeros((), bool), empty_out)
    end = ops.while_loop(lambda c: ops.logical_not(c.done), body, init)
    state, info = end.out
    return state, info, end.step_size
