"""The No-U-Turn Sampler as pure functions, batched over chains in lock-step.

* :func:`init` ``(position, potential_and_grad_fn) -> HMCState``
* :func:`build_kernel` ``(*, max_tree_depth, max_delta_energy) -> kernel`` with
  ``kernel(rng_key, state, potential_and_grad_fn, step_size, inverse_mass_matrix)
  -> (HMCState, NUTSInfo)``, in the style of BlackJAX: structural choices are arguments of the
  factory, what adaptation tunes is an argument of the kernel. The factory compiles the
  trajectory pieces (``ops.jit``) once; the kernel is a pure function of its inputs.
* :func:`build_transition` gives the same transition with its random inputs passed in (the
  momentum, the first direction, and the uniforms of each leaf and merge,
  :class:`TrajectoryUniforms`), so it can be checked against a hand computation or across
  backends with identical draws.

One transition (Hoffman & Gelman 2014, with Betancourt 2017's multinomial sampling and Stan's
checks): draw a momentum, then double the trajectory (:mod:`~ppl.inference.trajectory`) until a
U-turn, a divergence or ``max_tree_depth``; return the multinomially chosen point.

References
----------
Hoffman, M. D. and Gelman, A. (2014). The No-U-Turn Sampler. JMLR 15, 1593-1623.
Betancourt, M. (2017). A Conceptual Introduction to Hamiltonian Monte Carlo. arXiv:1701.02434.
Stan Development Team. stan/src/stan/mcmc/hmc/nuts/base_nuts.hpp.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ppl import ops, random
from ppl.inference.hmc import HMCState, init
from ppl.inference.integrators import IntegratorState
from ppl.inference.metrics import gaussian_euclidean
from ppl.inference.trajectory import Trajectory, extend_subtree, merge_subtree, start_subtree

__all__ = ["HMCState", "NUTSInfo", "TrajectoryUniforms", "init", "build_kernel",
           "build_transition", "empty_info"]


class TrajectoryUniforms(NamedTuple):
    """The uniform draws of a transition, by the index ``i`` of a leaf in the whole trajectory
    (``i = 0, 1, ...`` in the order leaves are built)."""

    #: ``i -> (C,)``: leaf ``i``'s candidate draw (progressive sampling within its subtree)
    leaf: Callable
    #: ``i -> (C, 2)``: the merge draw and the next direction (``< 0.5`` is forward) of the
    #: subtree whose last leaf is ``i``; drawn once per doubling, not at every leaf
    merge: Callable


class NUTSInfo(NamedTuple):
    """What one NUTS transition reports, per chain.

    Attributes
    ----------
    diverging
        ``(C,)`` bool, a leapfrog step's energy error exceeded ``max_delta_energy``.
    num_steps
        ``(C,)`` number of leapfrog steps (gradient evaluations).
    accept_prob
        ``(C,)`` mean of ``min(1, exp(H_0 - H))`` over every point built (Stan's
        ``accept_stat__``, the statistic dual averaging adapts).
    energy
        ``(C,)`` Hamiltonian of the returned point.
    tree_depth
        ``(C,)`` number of trajectory doublings kept.
    """

    diverging: object
    num_steps: object
    accept_prob: object
    energy: object
    tree_depth: object


def empty_info(position) -> NUTSInfo:
    """All-zero statistics of the chains at ``position`` ``(C, D)`` (a skipped iteration)."""
    zeros = ops.zeros(ops.shape(position)[:1], ops.dtype_of(position))
    return NUTSInfo(ops.zeros(ops.shape(position)[:1], bool), zeros, zeros, zeros, zeros)


def _check_depth(max_tree_depth) -> int:
    if isinstance(max_tree_depth, bool) or not isinstance(max_tree_depth, int) \
            or not 1 <= max_tree_depth <= 30:
        raise ValueError(f"max_tree_depth must be an int in [1, 30], got {max_tree_depth!r}.")
    return max_tree_depth


def build_transition(*, max_tree_depth: int = 10, max_delta_energy: float = 1000.0,
                     jit: bool = True) -> Callable:
    """A NUTS transition with its random inputs given.

    Returns ``transition(state, momentum, forward, uniforms, potential_and_grad_fn,
    step_size, inverse_mass_matrix) -> (HMCState, NUTSInfo)`` where ``momentum`` ``(C, D)`` is
    the momentum drawn for this transition, ``forward`` ``(C,)`` bool the direction of the first
    doubling, and ``uniforms`` a :class:`TrajectoryUniforms`.

    With ``one_step`` (a scalar bool) the trajectory stops after its first doubling: a single
    leapfrog step, the step-size heuristic's trial
    (:func:`~ppl.inference.step_size_search.search_step_size`).

    With ``jit`` the trajectory pieces are compiled here, once, with ``ops.jit``.
    """
    L = _check_depth(max_tree_depth)
    max_delta_energy = float(max_delta_energy)
    compile_ = ops.jit if jit else (lambda f, static_argnums=(): f)
    extend = compile_(extend_subtree, static_argnums=(5, 6, 7))
    start = compile_(start_subtree, static_argnums=(2,))
    merge = compile_(merge_subtree)

    def transition(state: HMCState, momentum, forward, uniforms, potential_and_grad_fn,
                   step_size, inverse_mass_matrix, one_step=False):
        C = ops.shape(state.position)[0]
        dtype = ops.dtype_of(state.position)
        int_dtype = ops.dtype_of(ops.asarray([1]))
        ps0 = gaussian_euclidean(inverse_mass_matrix).velocity(momentum)
        energy0 = state.potential_energy + 0.5 * ops.sum(momentum * ps0, axis=-1)
        z0 = IntegratorState(state.position, momentum, state.potential_energy,
                             state.potential_energy_grad)
        step_size = ops.asarray(step_size, dtype)

        def doubling(trajectory: Trajectory) -> Trajectory:
            eps, sub = start(trajectory, step_size, L)
            offset = trajectory.size - 1        # leaves built before this subtree

            def leaf(s):
                return extend(s, uniforms.leaf(offset + s.n), eps, energy0,
                              inverse_mass_matrix, potential_and_grad_fn, L, max_delta_energy)

            # (stops early only when no chain is building: then no chain uses more draws)
            sub = ops.while_loop(lambda s: (s.n < trajectory.size) & ops.any(s.building),
                                 leaf, sub)
            # a chain that stopped early does not merge: the draws of a full subtree serve all
            return merge(trajectory, sub, uniforms.merge(offset + trajectory.size - 1))

        zeros = ops.zeros((C,), dtype)
        flags = ops.zeros((C,), bool)
        trajectory = Trajectory(
            z0, z0, ps0, ps0, momentum, zeros, state, energy0, zeros, forward,
            ops.ones((C,), bool), flags, flags, zeros, zeros, ops.zeros((), int_dtype),
            ops.ones((), int_dtype))
        # the heuristic's trial stops after one doubling (a traced bound: one compiled loop)
        depth = L if one_step is False else ops.astype(ops.where(one_step, 1, L), int_dtype)
        trajectory = ops.while_loop(lambda t: (t.d < depth) & ops.any(t.active), doubling,
                                    trajectory)
        info = NUTSInfo(trajectory.diverging, trajectory.num_steps,
                        trajectory.sum_accept / ops.maximum(trajectory.num_steps, 1.0),
                        trajectory.proposal_energy, trajectory.depth)
        return trajectory.proposal, info

    return transition


def build_kernel(*, max_tree_depth: int = 10, max_delta_energy: float = 1000.0,
                 jit: bool = True) -> Callable:
    """The NUTS kernel ``kernel(rng_key, state, potential_and_grad_fn, step_size,
    inverse_mass_matrix, one_step=False) -> (HMCState, NUTSInfo)`` for a batch of ``C`` chains.

    Parameters
    ----------
    max_tree_depth
        At most ``2^max_tree_depth - 1`` leapfrog steps per transition.
    max_delta_energy
        Energy error above which a leapfrog step is divergent.
    jit
        Compile the trajectory pieces (``ops.jit``), once, here.

    The kernel's arguments: ``rng_key`` one key for the batch; ``state`` an
    :class:`~ppl.inference.hmc.HMCState` with ``(C, D)`` positions; ``potential_and_grad_fn``
    the batched ``q (C, D) -> (U (C,), grad U (C, D))``; ``step_size`` ``(C,)``;
    ``inverse_mass_matrix`` ``(C, D)`` diagonal or ``(C, D, D)`` dense; ``one_step`` (a scalar
    bool) makes the transition a single leapfrog step (one doubling of depth 0), whose
    ``accept_prob`` is ``min(1, exp(H_0 - H_1))``: the step-size heuristic's trial.

    Examples
    --------
    >>> import ppl
    >>> from ppl import ops
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     vg = lambda q: (0.5 * ops.sum(q * q, -1), q)
    ...     kernel = build_kernel(max_tree_depth=5)
    ...     s = init(ops.zeros((2, 3)), vg)
    ...     s, info = kernel(ppl.random.key(0), s, vg, ops.full((2,), 0.5), ops.ones((2, 3)))
    ...     s.position.shape, info.num_steps.shape
    ((2, 3), (2,))
    """
    transition = build_transition(max_tree_depth=max_tree_depth,
                                  max_delta_energy=max_delta_energy, jit=jit)

    def kernel(rng_key, state: HMCState, potential_and_grad_fn: Callable, step_size,
               inverse_mass_matrix, one_step=False):
        C, D = ops.shape(state.position)
        dtype = ops.dtype_of(state.position)
        # one normal draw: the momentum, and (sign of the last column) the first direction;
        # the leaves' uniforms are indexed draws of the same key (streams of their own), the
        # merges' those of a key folded from it (indexed alike, so they need another stream)
        normal = random.normal(rng_key, (C, D + 1), dtype)
        momentum = gaussian_euclidean(inverse_mass_matrix).momentum_from_normal(normal[:, :D])
        merge_key = random.fold_in(rng_key, 1)
        uniforms = TrajectoryUniforms(
            lambda i: random.indexed_uniform(rng_key, i, (C,), dtype),
            lambda i: random.indexed_uniform(merge_key, i, (C, 2), dtype))
        return transition(state, momentum, normal[:, D] > 0, uniforms, potential_and_grad_fn,
                          step_size, inverse_mass_matrix, one_step)

    return kernel
