"""The No-U-Turn Sampler, iterative and batched over chains in lock-step.

One transition (Hoffman & Gelman 2014, with Betancourt 2017's refinements, as in Stan):

* draw a momentum, then double the trajectory ``max_tree_depth`` times at most, each time in a
  random direction, by integrating a new subtree of ``2^depth`` leapfrog steps from the end of
  the trajectory;
* *multinomial* sampling: inside a subtree each new point replaces the subtree's proposal with
  probability ``w / W`` (progressive uniform sampling, ``w = exp(H_0 - H)``); a valid subtree
  replaces the trajectory's proposal with probability ``min(1, W_sub / W_old)`` (biased
  progressive sampling);
* the *generalised* no-U-turn criterion ``p_sharp^- . rho > 0`` and ``p_sharp^+ . rho > 0``
  (``rho`` the sum of the momenta, ``p_sharp = M^{-1} p``) is checked on every balanced sub-tree
  as it completes, plus Stan's two extra checks across each merge (left half + first point of
  the right half, last point of the left half + right half);
* a subtree whose energy error exceeds ``max_delta_energy`` is *divergent*; a divergent or
  U-turning subtree ends the transition and is not sampled from.

The tree is built without recursion: leaf ``n`` of a subtree writes its momentum data to the
checkpoint slots ``j`` with ``n % 2^j == 0`` (the starts of the balanced sub-trees it begins) and
checks every sub-tree of size ``2^k`` that it completes (``(n + 1) % 2^k == 0``), all levels at
once with masks. Chains share the leaf counter and depth; a finished chain is frozen by masks,
so one ``while_loop`` (compiled on JAX, eager Python on numpy and torch) runs every chain.

References
----------
Hoffman, M. D. and Gelman, A. (2014). The No-U-Turn Sampler. JMLR 15.
Betancourt, M. (2017). A Conceptual Introduction to Hamiltonian Monte Carlo. arXiv:1701.02434.
Stan Development Team. stan/src/stan/mcmc/hmc/nuts/base_nuts.hpp.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import NamedTuple

import ppl
from ppl import ops
from ppl.inference.hmc import HMCState, init
from ppl.inference.integrators import IntegratorState, velocity_verlet
from ppl.inference.metrics import gaussian_euclidean

__all__ = ["HMCState", "NUTSInfo", "init", "step", "build_kernel"]


class NUTSInfo(NamedTuple):
    """What one NUTS transition reports, per chain.

    Attributes
    ----------
    diverging
        ``(C,)`` bool, a leapfrog step's energy error exceeded ``max_delta_energy``.
    num_steps
        ``(C,)`` number of leapfrog steps (gradient evaluations).
    accept_prob
        ``(C,)`` mean Metropolis acceptance ``min(1, exp(H_0 - H))`` over every point built
        (Stan's ``accept_stat__``, the statistic dual averaging adapts).
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


# Checkpoint fields, stacked on axis 2 of the (C, L, 5, D) checkpoint array.
_PS, _P, _PREV_PS, _PREV_P, _RHO = range(5)


class _Tree(NamedTuple):
    left: IntegratorState      # leftmost point of the trajectory
    right: IntegratorState     # rightmost point
    left_ps: object            # M^{-1} p at the left end
    right_ps: object
    rho: object                # sum of the momenta of the whole trajectory
    log_weight: object         # log sum of the weights exp(H0 - H)
    proposal: HMCState
    proposal_energy: object
    depth: object              # (C,) doublings kept
    forward: object            # (C,) direction of the next doubling
    active: object             # (C,) still doubling
    diverging: object
    turning: object
    sum_accept: object
    num_steps: object
    d: object                  # scalar: depth of the next subtree
    size: object               # scalar: 2^d


class _Subtree(NamedTuple):
    leaf: IntegratorState      # last point integrated
    leaf_ps: object
    ckpt: object               # (C, L, 5, D)
    rho: object                # sum of the momenta of the subtree so far
    log_weight: object
    proposal: HMCState
    proposal_energy: object
    sum_accept: object
    num_steps: object
    turning: object
    diverging: object
    building: object           # (C,) still integrating this subtree
    u_next: object             # (C, 2) uniforms of the last leaf: merge, next direction
    n: object                  # scalar leaf index


def _dot(a, b):
    return ops.sum(a * b, axis=-1)


def _no_uturn(ps_a, ps_b, rho):
    return (_dot(ps_a, rho) > 0) & (_dot(ps_b, rho) > 0)


def _select(mask, new, old):
    """``where`` over matching NamedTuples of ``(C,)`` and ``(C, D)`` arrays; ``mask`` ``(C,)``.

    (Python operators ``&``, ``|``, ``~`` on bool arrays, and ``x[:, None]``, work on every
    backend and skip the op dispatch; this is the innermost loop.)"""
    wide = mask[:, None]
    return type(new)(*[ops.where(wide if len(ops.shape(n)) == 2 else mask, n, o)
                       for n, o in zip(new, old)])


def _checks(ckpt, rho, ps, done):
    """Whether a sub-tree completed by this leaf turns (any level), per chain; ``done[k]``
    says whether the leaf completes a balanced sub-tree of size ``2^k``."""
    s, m = ckpt[:, 1:], ckpt[:, :-1]
    rho_n, ps_n = rho[:, None], ps[:, None]
    ok = (_no_uturn(s[:, :, _PS], ps_n, rho_n - s[:, :, _RHO])
          & _no_uturn(s[:, :, _PS], m[:, :, _PS], m[:, :, _RHO] - s[:, :, _RHO] + m[:, :, _P])
          & _no_uturn(m[:, :, _PREV_PS], ps_n, rho_n - m[:, :, _RHO] + m[:, :, _PREV_P]))
    return ops.any(done[None, 1:] & ~ok, axis=1)


def _leaf(sub: _Subtree, u, eps, energy0, inverse_mass_matrix, potential_and_grad_fn, L,
          max_delta_energy) -> _Subtree:
    """One leapfrog step of a subtree, for every chain, with its uniforms ``u`` ``(C, 3)``: the
    multinomial draw, and the merge / next-direction draws of the subtree. A pure array
    function (no branches on values), so it compiles as one graph on every backend."""
    metric = gaussian_euclidean(inverse_mass_matrix)
    n = sub.n
    pow2 = ops.asarray([2 ** j for j in range(L)])
    prev, prev_ps = sub.leaf, sub.leaf_ps
    new = velocity_verlet(potential_and_grad_fn, metric.velocity)(prev, eps)
    ps = metric.velocity(new.momentum)
    energy = new.potential_energy + 0.5 * _dot(new.momentum, ps)
    log_w = energy0 - energy
    log_w = ops.where(log_w == log_w, log_w, -float("inf"))       # NaN -> weight 0
    building = sub.building
    diverging = building & (log_w < -max_delta_energy)
    sum_accept = sub.sum_accept + ops.where(building, ops.exp(ops.minimum(log_w, 0.0)), 0.0)
    num_steps = sub.num_steps + ops.astype(building, ops.dtype_of(sub.num_steps))
    # progressive (uniform) multinomial sampling within the subtree
    log_weight = ops.logaddexp(sub.log_weight, log_w)
    take = u[:, 0] < ops.exp(log_w - log_weight)
    proposal = _select(take, HMCState(new.position, new.potential_energy,
                                      new.potential_energy_grad), sub.proposal)
    proposal_energy = ops.where(take, energy, sub.proposal_energy)
    rho = sub.rho + new.momentum
    # checkpoints: this leaf starts the balanced sub-trees of sizes 2^j with n % 2^j == 0
    start = (n // pow2) * pow2 == n
    entry = ops.stack([ps, new.momentum, prev_ps, prev.momentum, sub.rho], axis=1)
    ckpt = ops.where(ops.reshape(start, (1, L, 1, 1)), entry[:, None], sub.ckpt)
    # U-turn checks on every sub-tree of size 2^k (k >= 1) this leaf completes (masked: a
    # branch on `done` would not compile into one graph on torch)
    if L > 1:
        turn = _checks(ckpt, rho, ps, ((n + 1) // pow2) * pow2 == n + 1)
    else:
        turn = ops.zeros_like(building)
    turning = sub.turning | (building & turn)
    diverging = sub.diverging | diverging
    building = building & ~(turn | diverging)
    return _Subtree(new, ps, ckpt, rho, log_weight, proposal, proposal_energy, sum_accept,
                    num_steps, turning, diverging, building, u[:, 1:], n + 1)


def _start_subtree(tree: _Tree, step_size, L):
    """The direction, step and empty subtree of the next doubling."""
    forward = tree.forward
    C, D = ops.shape(tree.left.position)
    dtype = ops.dtype_of(tree.left.position)
    eps = ops.where(forward[:, None], step_size[:, None], -step_size[:, None])
    start = _select(forward, tree.right, tree.left)
    start_ps = ops.where(forward[:, None], tree.right_ps, tree.left_ps)
    sub0 = _Subtree(
        start, start_ps, ops.zeros((C, L, 5, D), dtype), ops.zeros((C, D), dtype),
        ops.full((C,), -float("inf"), dtype), tree.proposal, tree.proposal_energy,
        ops.zeros((C,), dtype), ops.zeros((C,), dtype), ops.zeros((C,), bool),
        ops.zeros((C,), bool), tree.active, ops.zeros((C, 2), dtype),
        ops.zeros((), ops.dtype_of(tree.d)))
    return eps, sub0


def _merge(tree: _Tree, sub: _Subtree) -> _Tree:
    """Merge a finished subtree into the trajectory (biased progressive sampling) and check
    the U-turn criterion on the result."""
    forward = tree.forward
    start = _select(forward, tree.right, tree.left)
    start_ps = ops.where(forward[:, None], tree.right_ps, tree.left_ps)
    far_ps = ops.where(forward[:, None], tree.left_ps, tree.right_ps)
    u_merge, u_dir = sub.u_next[:, 0], sub.u_next[:, 1]
    valid = tree.active & ~(sub.turning | sub.diverging)
    take = valid & (u_merge < ops.exp(sub.log_weight - tree.log_weight))
    proposal = _select(take, sub.proposal, tree.proposal)
    proposal_energy = ops.where(take, sub.proposal_energy, tree.proposal_energy)
    log_weight = ops.where(valid, ops.logaddexp(tree.log_weight, sub.log_weight),
                           tree.log_weight)
    fwd_valid = valid & forward
    bwd_valid = valid & ~forward
    right = _select(fwd_valid, sub.leaf, tree.right)
    left = _select(bwd_valid, sub.leaf, tree.left)
    right_ps = ops.where(fwd_valid[:, None], sub.leaf_ps, tree.right_ps)
    left_ps = ops.where(bwd_valid[:, None], sub.leaf_ps, tree.left_ps)
    rho = tree.rho + sub.rho
    # criterion on the merged trajectory, plus Stan's checks across the merge (the first
    # leaf of the subtree is in checkpoint slot d)
    first = ops.sum(ops.where(ops.reshape(ops.arange(ops.shape(sub.ckpt)[1]) == tree.d,
                                          (1, -1, 1, 1)), sub.ckpt, 0.0), axis=1)
    ok = (_no_uturn(far_ps, sub.leaf_ps, rho)
          & _no_uturn(far_ps, first[:, _PS], tree.rho + first[:, _P])
          & _no_uturn(start_ps, sub.leaf_ps, sub.rho + start.momentum))
    turning = valid & ~ok
    depth = tree.depth + ops.astype(valid, ops.dtype_of(tree.depth))
    return _Tree(left, right, left_ps, right_ps, ops.where(valid[:, None], rho, tree.rho),
                 log_weight, proposal, proposal_energy, depth, u_dir < 0.5,
                 valid & ~turning, tree.diverging | sub.diverging, tree.turning | turning,
                 tree.sum_accept + sub.sum_accept, tree.num_steps + sub.num_steps,
                 tree.d + 1, tree.size * 2)


# the pure pieces of a transition, compiled once per backend (``ops.jit`` caches its traces by
# argument shapes and static arguments, so they are reused across transitions and runs)
_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _compiled():
    backend = ppl.get_backend()
    fns = _COMPILED.get(backend)
    if fns is None:
        fns = (ops.jit(_leaf, static_argnums=(5, 6, 7)),
               ops.jit(_start_subtree, static_argnums=(2,)), ops.jit(_merge))
        _COMPILED[backend] = fns
    return fns


def step(rng_key, state: HMCState, potential_and_grad_fn: Callable, step_size,
         inverse_mass_matrix, *, max_tree_depth: int = 10, max_delta_energy: float = 1000.0):
    """One NUTS transition for every chain.

    Parameters
    ----------
    rng_key
        A ``ppl.random`` key (one for the whole batch).
    state
        The current :class:`~ppl.inference.hmc.HMCState` (``(C, D)`` positions).
    potential_and_grad_fn
        Batched ``q (C, D) -> (U (C,), grad U (C, D))``.
    step_size
        ``(C,)`` step sizes.
    inverse_mass_matrix
        ``(C, D)`` diagonal or ``(C, D, D)`` dense.
    max_tree_depth
        At most ``2^max_tree_depth - 1`` leapfrog steps per transition.
    max_delta_energy
        Energy error above which a leapfrog step is divergent.

    Returns
    -------
    (HMCState, NUTSInfo)

    Examples
    --------
    >>> import ppl
    >>> from ppl import ops
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     vg = lambda q: (0.5 * ops.sum(q * q, -1), q)
    ...     s = init(ops.zeros((2, 3)), vg)
    ...     s, info = step(ppl.random.key(0), s, vg, ops.full((2,), 0.5), ops.ones((2, 3)))
    ...     s.position.shape, info.num_steps.shape
    ((2, 3), (2,))
    """
    L = int(max_tree_depth)
    if L < 1:
        raise ValueError(f"max_tree_depth must be a positive integer, got {max_tree_depth!r}.")
    max_delta_energy = float(max_delta_energy)
    leaf, start_subtree, merge = _compiled()
    metric = gaussian_euclidean(inverse_mass_matrix)
    C, D = ops.shape(state.position)
    dtype = ops.dtype_of(state.position)
    k_mom, k_leaf = ppl.random.split(rng_key, 2)

    # one normal draw: the momentum, and (sign of the last column) the first direction
    normal = ppl.random.normal(k_mom, (C, D + 1), dtype)
    p0 = metric.momentum_from_normal(normal[:, :D])
    ps0 = metric.velocity(p0)
    energy0 = state.potential_energy + 0.5 * _dot(p0, ps0)
    z0 = IntegratorState(state.position, p0, state.potential_energy,
                         state.potential_energy_grad)
    step_size = ops.asarray(step_size, dtype)

    def leaf_body(sub: _Subtree, eps, leaf_offset):
        u = ppl.random.uniform(ppl.random.fold_in(k_leaf, leaf_offset + sub.n), (C, 3), dtype)
        return leaf(sub, u, eps, energy0, inverse_mass_matrix, potential_and_grad_fn, L,
                    max_delta_energy)

    def tree_body(tree: _Tree) -> _Tree:
        eps, sub0 = start_subtree(tree, step_size, L)
        leaf_offset = tree.size - 1
        sub = ops.while_loop(
            lambda s: (s.n < tree.size) & ops.any(s.building),
            lambda s: leaf_body(s, eps, leaf_offset), sub0)
        # (the loop only stops early when no chain is building: then none uses these draws)
        return merge(tree, sub)

    int_dtype = ops.dtype_of(ops.asarray([1]))
    tree0 = _Tree(z0, z0, ps0, ps0, p0, ops.zeros((C,), dtype), state, energy0,
                  ops.zeros((C,), dtype), normal[:, D] > 0, ops.ones((C,), bool),
                  ops.zeros((C,), bool),
                  ops.zeros((C,), bool), ops.zeros((C,), dtype), ops.zeros((C,), dtype),
                  ops.zeros((), int_dtype), ops.ones((), int_dtype))
    tree = ops.while_loop(lambda t: (t.d < L) & ops.any(t.active), tree_body, tree0)
    info = NUTSInfo(tree.diverging, tree.num_steps,
                    tree.sum_accept / ops.maximum(tree.num_steps, 1.0),
                    tree.proposal_energy, tree.depth)
    return tree.proposal, info


def build_kernel(*, max_tree_depth: int = 10, max_delta_energy: float = 1000.0) -> Callable:
    """``kernel(rng_key, state, potential_and_grad_fn, step_size, inverse_mass_matrix)`` with
    the structural settings bound (BlackJAX's ``build_kernel``)."""

    def kernel(rng_key, state, potential_and_grad_fn, step_size, inverse_mass_matrix):
        return step(rng_key, state, potential_and_grad_fn, step_size, inverse_mass_matrix,
                    max_tree_depth=max_tree_depth, max_delta_energy=max_delta_energy)

    return kernel

