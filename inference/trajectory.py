"""The NUTS trajectory, built iteratively and for a batch of chains in lock-step.

A transition doubles the trajectory up to ``max_tree_depth`` times, each time in a random
direction, by integrating a new subtree of ``2^d`` leapfrog steps from the end it extends. The
three pure pieces here are what one doubling is made of:

* :func:`start_subtree` -- the direction's step size and an empty subtree at the chosen end;
* :func:`extend_subtree` -- one leapfrog step (a *leaf*): multinomial candidate update
  (:mod:`~ppl.inference.proposal`), divergence check, and the U-turn checks of every balanced
  sub-tree the leaf completes (:mod:`~ppl.inference.termination`);
* :func:`merge_subtree` -- biased progressive sampling of the subtree's candidate and the U-turn
  check of the merged trajectory.

The tree is built without recursion: leaf ``n`` writes its momentum data into the checkpoint
levels ``j`` with ``n % 2^j == 0`` (the starts of the balanced sub-trees it begins) and checks
the levels ``k`` with ``(n + 1) % 2^k == 0`` (those it completes). Where control flow compiles
(JAX, TensorFlow) those levels are visited in nested branches, the next level only when the
leaf reaches it: two levels per leaf on average. Elsewhere every level is written and checked
at once, with masks, so that the leaf stays one branch-free array function. Chains share the
leaf counter and depth; a chain that stopped is frozen by masks, so one ``while_loop`` serves
every chain.

References
----------
Hoffman, M. D. and Gelman, A. (2014). The No-U-Turn Sampler. JMLR 15, 1593-1623.
Betancourt, M. (2017). A Conceptual Introduction to Hamiltonian Monte Carlo. arXiv:1701.02434.
Stan Development Team. stan/src/stan/mcmc/hmc/nuts/base_nuts.hpp.
"""

from __future__ import annotations

from typing import NamedTuple

from ppl import ops
from ppl.inference import proposal, termination
from ppl.inference.batching import select
from ppl.inference.hmc import HMCState
from ppl.inference.integrators import IntegratorState, velocity_verlet
from ppl.inference.metrics import gaussian_euclidean

__all__ = ["Trajectory", "Subtree", "start_subtree", "extend_subtree", "merge_subtree"]


class Trajectory(NamedTuple):
    """The trajectory of one transition so far, per chain (``(C, ...)`` arrays)."""

    left: IntegratorState      # leftmost point
    right: IntegratorState     # rightmost point
    left_ps: object            # M^{-1} p at the left end
    right_ps: object
    rho: object                # summed momenta of the whole trajectory
    log_weight: object         # log of the summed weights exp(H0 - H)
    proposal: HMCState         # the current candidate
    proposal_energy: object
    depth: object              # doublings kept
    forward: object            # direction of the next doubling
    active: object             # still doubling
    diverging: object
    turning: object
    sum_accept: object         # summed min(1, exp(H0 - H)) over the points built
    num_steps: object
    d: object                  # scalar: depth of the next subtree
    size: object               # scalar: 2^d


class Subtree(NamedTuple):
    """A subtree under construction, per chain."""

    leaf: IntegratorState      # last point integrated
    leaf_ps: object
    ckpt: object               # (C, L, termination.NUM_FIELDS, D) checkpoints
    rho: object                # summed momenta of the subtree so far
    log_weight: object
    proposal: HMCState
    proposal_energy: object
    sum_accept: object
    num_steps: object
    turning: object
    diverging: object
    building: object           # still integrating this subtree
    n: object                  # scalar leaf index within the subtree


def _end(trajectory: Trajectory, forward):
    """The end point (and its sharp momentum) the next subtree starts from."""
    point = select(forward, trajectory.right, trajectory.left)
    ps = ops.where(forward[:, None], trajectory.right_ps, trajectory.left_ps)
    return point, ps


def start_subtree(trajectory: Trajectory, step_size, max_tree_depth: int):
    """The signed step ``(C, 1)`` and the empty subtree of the next doubling."""
    forward = trajectory.forward
    C, D = ops.shape(trajectory.left.position)
    dtype = ops.dtype_of(trajectory.left.position)
    eps = ops.where(forward[:, None], step_size[:, None], -step_size[:, None])
    start, start_ps = _end(trajectory, forward)
    empty = Subtree(
        start, start_ps, ops.zeros((C, max_tree_depth, termination.NUM_FIELDS, D), dtype),
        ops.zeros((C, D), dtype), ops.full((C,), -float("inf"), dtype), trajectory.proposal,
        trajectory.proposal_energy, ops.zeros((C,), dtype), ops.zeros((C,), dtype),
        ops.zeros((C,), bool), ops.zeros((C,), bool), trajectory.active,
        ops.zeros((), ops.dtype_of(trajectory.d)))
    return eps, empty


def extend_subtree(sub: Subtree, u, eps, energy0, inverse_mass_matrix, potential_and_grad_fn,
                   max_tree_depth: int, max_delta_energy: float) -> Subtree:
    """One leapfrog step of the subtree, for every chain still building it.

    ``u`` ``(C,)`` is the leaf's candidate draw.
    """
    metric = gaussian_euclidean(inverse_mass_matrix)
    n = sub.n
    new = velocity_verlet(potential_and_grad_fn, metric.velocity)(sub.leaf, eps)
    ps = metric.velocity(new.momentum)
    energy = new.potential_energy + 0.5 * ops.sum(new.momentum * ps, axis=-1)
    log_w = proposal.log_weight(energy0, energy)
    building = sub.building
    diverging = building & (log_w < -max_delta_energy)
    sum_accept = sub.sum_accept + ops.where(building, ops.exp(ops.minimum(log_w, 0.0)), 0.0)
    num_steps = sub.num_steps + ops.astype(building, ops.dtype_of(sub.num_steps))
    log_weight, take = proposal.progressive_take(sub.log_weight, log_w, u)
    candidate = select(take, HMCState(new.position, new.potential_energy,
                                      new.potential_energy_grad), sub.proposal)
    candidate_energy = ops.where(take, energy, sub.proposal_energy)
    rho = sub.rho + new.momentum
    # this leaf starts the balanced sub-trees of sizes 2^j with n % 2^j == 0 and completes
    # those of sizes 2^k with (n + 1) % 2^k == 0: write and check those
    entry = ops.stack([ps, new.momentum, sub.leaf_ps, sub.leaf.momentum, sub.rho], axis=1)
    if max_tree_depth == 1:                 # one leaf per subtree: nothing to check
        ckpt, turn = entry[:, None], ops.zeros_like(building)
    elif ops.backend().compiles_control_flow:
        # in branches: a leaf writes two levels and checks one on average, where masks
        # cost every level at every leaf (eight schools: 3.6 -> 1.8 us per leaf of 4 chains)
        ckpt = _write_from(0, sub.ckpt, entry, n)
        turn = ops.cond((n % 2) == 1, lambda c: _turning_from(1, c, rho, ps, n),
                        lambda c: ops.zeros_like(building), ckpt)
    else:
        # branch-free, every level masked: a branch inside the leaf would stop numpy's
        # recorded pieces and torch's compiled loops (numpy: 3.1 -> 4.4 s on eight schools)
        ckpt = _masked_write(sub.ckpt, entry, n)
        turn = _masked_turning(1, ckpt, rho, ps, n)
    turning = sub.turning | (building & turn)
    diverging = sub.diverging | diverging
    building = building & ~(turn | diverging)
    return Subtree(new, ps, ckpt, rho, log_weight, candidate, candidate_energy,
                   sum_accept, num_steps, turning, diverging, building, n + 1)


#: levels visited one by one, each in a branch of its own; the levels above are written and
#: checked together, with masks, in one more branch (a branch per level up to
#: ``max_tree_depth`` cost 0.9 s more compile)
NESTED = 2


def _write_from(j, ckpt, entry, n):
    """``ckpt`` with ``entry`` ``(C, F, D)`` at level ``j`` and every higher level ``i`` with
    ``n % 2^i == 0`` (the sub-trees leaf ``n`` starts, given that it starts the one of
    ``2^j``), the higher ones in a branch taken only when the leaf starts them."""
    levels = ops.shape(ckpt)[1]
    if j >= NESTED:         # (the levels below j, written already, get the same entry again)
        return _masked_write(ckpt, entry, n)
    ckpt = ops.index_update(ckpt, (slice(None), j), entry)
    if j + 1 >= levels:
        return ckpt
    return ops.cond((n % 2 ** (j + 1)) == 0, lambda c: _write_from(j + 1, c, entry, n),
                    lambda c: c, ckpt)


def _turning_from(k, ckpt, rho, ps, n):
    """Whether the sub-trees of sizes ``2^k, 2^(k+1), ..`` (up to ``ckpt``'s levels) that leaf
    ``n`` completes turn, given that it completes the one of ``2^k``: the larger ones are
    checked in a branch taken only when the leaf completes them."""
    levels = ops.shape(ckpt)[1]
    if k >= NESTED:
        return _masked_turning(k, ckpt, rho, ps, n)
    turn = termination.subtree_turning(ckpt[:, k - 1:k + 1], rho, ps, ops.asarray([True, True]))
    if k + 1 >= levels:
        return turn
    return turn | ops.cond(((n + 1) % 2 ** (k + 1)) == 0,
                           lambda c: _turning_from(k + 1, c, rho, ps, n),
                           lambda c: ops.zeros_like(turn), ckpt)


def _masked_write(ckpt, entry, n):
    """``ckpt`` with ``entry`` ``(C, F, D)`` at every level ``j`` with ``n % 2^j == 0``, through
    a mask over all levels."""
    pow2 = ops.asarray([2 ** j for j in range(ops.shape(ckpt)[1])])
    return ops.where(ops.reshape((n // pow2) * pow2 == n, (1, -1, 1, 1)), entry[:, None], ckpt)


def _masked_turning(k, ckpt, rho, ps, n):
    """Whether any sub-tree of size ``2^k`` or more that leaf ``n`` completes turns, checked
    through a mask over those levels."""
    pow2 = ops.asarray([2 ** j for j in range(k - 1, ops.shape(ckpt)[1])])
    return termination.subtree_turning(ckpt[:, k - 1:], rho, ps,
                                       ((n + 1) // pow2) * pow2 == n + 1)


def merge_subtree(trajectory: Trajectory, sub: Subtree, u) -> Trajectory:
    """Merge a finished subtree into the trajectory: biased progressive sampling of its
    candidate (``u[:, 0]``), new end point, the U-turn check of the merged trajectory, and the
    next direction (``u[:, 1] < 0.5``: forward)."""
    forward = trajectory.forward
    near, near_ps = _end(trajectory, forward)
    far_ps = ops.where(forward[:, None], trajectory.left_ps, trajectory.right_ps)
    u_merge, u_direction = u[:, 0], u[:, 1]
    valid = trajectory.active & ~(sub.turning | sub.diverging)
    take = valid & proposal.biased_take(trajectory.log_weight, sub.log_weight, u_merge)
    candidate = select(take, sub.proposal, trajectory.proposal)
    candidate_energy = ops.where(take, sub.proposal_energy, trajectory.proposal_energy)
    log_weight = ops.where(valid, ops.logaddexp(trajectory.log_weight, sub.log_weight),
                           trajectory.log_weight)
    grow_right = valid & forward
    grow_left = valid & ~forward
    right = select(grow_right, sub.leaf, trajectory.right)
    left = select(grow_left, sub.leaf, trajectory.left)
    right_ps = ops.where(grow_right[:, None], sub.leaf_ps, trajectory.right_ps)
    left_ps = ops.where(grow_left[:, None], sub.leaf_ps, trajectory.left_ps)
    # the subtree's first leaf sits in checkpoint level d
    first = _level(sub.ckpt, trajectory.d)
    turning = valid & termination.merge_turning(
        far_ps, near_ps, near.momentum, trajectory.rho, first[:, termination.PS],
        first[:, termination.P], sub.leaf_ps, sub.rho)
    depth = trajectory.depth + ops.astype(valid, ops.dtype_of(trajectory.depth))
    rho = ops.where(valid[:, None], trajectory.rho + sub.rho, trajectory.rho)
    return Trajectory(left, right, left_ps, right_ps, rho, log_weight, candidate,
                      candidate_energy, depth, u_direction < 0.5, valid & ~turning,
                      trajectory.diverging | sub.diverging, trajectory.turning | turning,
                      trajectory.sum_accept + sub.sum_accept,
                      trajectory.num_steps + sub.num_steps, trajectory.d + 1,
                      trajectory.size * 2)


def _level(ckpt, d):
    """Level ``d`` of ``ckpt`` ``(C, L, F, D)``: ``(C, F, D)``."""
    level = ops.arange(0, ops.shape(ckpt)[1]) == d
    return ops.sum(ops.where(ops.reshape(level, (1, -1, 1, 1)), ckpt, 0.0), axis=1)
