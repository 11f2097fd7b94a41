"""A reference NUTS transition in plain NumPy, for one chain, written independently of the
library's iterative, batched, checkpoint-based tree builder.

It keeps the whole trajectory as an explicit list of points ordered left to right, checks the
no-U-turn criterion on explicit segments (every balanced sub-tree of a new subtree, then the
merged trajectory), with Stan's two extra checks across the halves of each segment (Stan 2.26,
``base_nuts.hpp``; Betancourt 2017, appendix A.4), and samples multinomially: progressively leaf
by leaf inside a subtree, and with the biased probability ``min(1, W_sub / W_old)`` at a merge
(Betancourt 2017, appendix A.3).

Its random inputs are those of :func:`ppl.inference.nuts.build_transition`: the momentum, the
first direction, and a table ``u`` of uniforms, row ``i`` for the ``i``-th leaf built
(0-based): ``u[i, 0]`` the candidate draw, and for the last leaf of a subtree ``u[i, 1]`` the
merge draw and ``u[i, 2]`` the next direction (forward when below 0.5) (the library's
:class:`~ppl.inference.nuts.TrajectoryUniforms` of the table).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Point(NamedTuple):
    x: np.ndarray
    p: np.ndarray
    u: float          # potential energy
    g: np.ndarray     # its gradient


class Result(NamedTuple):
    x: np.ndarray
    potential_energy: float
    grad: np.ndarray
    energy: float
    accept_prob: float
    num_steps: int
    tree_depth: int
    diverging: bool


def _sharp(minv, p):
    return minv * p if minv.ndim == 1 else minv @ p


def _leapfrog(point, eps, minv, potential_and_grad):
    p = point.p - 0.5 * eps * point.g
    x = point.x + eps * _sharp(minv, p)
    u, g = potential_and_grad(x)
    return Point(x, p - 0.5 * eps * g, float(u), np.asarray(g, dtype=np.float64))


def _energy(point, minv):
    return point.u + 0.5 * float(point.p @ _sharp(minv, point.p))


def _keeps_going(ps_left, ps_right, rho):
    return float(ps_left @ rho) > 0 and float(ps_right @ rho) > 0


def _segments_keep_going(left, right, minv, decided=None, where="", forward=True):
    """The criterion on ``left + right`` (two lists of points in trajectory order) and Stan's
    checks across the junction. When exactly one extra check stops the trajectory (so dropping it
    would change the result), ``decided`` (a ``collections.Counter``) counts it as
    ``where + "-first"`` or ``where + "-last"``: the check between the two parts' points built
    first, or built last (``forward``: the direction the right part was built in)."""
    ps = lambda pt: _sharp(minv, pt.p)
    rho_left = sum(pt.p for pt in left)
    rho_right = sum(pt.p for pt in right)
    whole = _keeps_going(ps(left[0]), ps(right[-1]), rho_left + rho_right)
    start = _keeps_going(ps(left[0]), ps(right[0]), rho_left + right[0].p)
    end = _keeps_going(ps(left[-1]), ps(right[-1]), rho_right + left[-1].p)
    if decided is not None and whole and start != end:
        # name the deciding check in build order: across the first points built or the last
        first = (not start) == forward
        decided[where + ("-first" if first else "-last")] += 1
    return whole and start and end


def _balanced_turns(segment, forward, minv, decided=None):
    """Whether a balanced segment (points in build order) turns."""
    ordered = segment if forward else segment[::-1]
    half = len(ordered) // 2
    return not _segments_keep_going(ordered[:half], ordered[half:], minv, decided, "subtree",
                                    forward)


def transition(x0, p0, forward, u, potential_and_grad, step_size, minv, *, max_tree_depth,
               max_delta_energy=1000.0, decided=None) -> Result:
    """One NUTS transition from ``x0`` with momentum ``p0`` (see the module docstring);
    ``decided``: a ``collections.Counter`` of the U-turns only Stan's extra checks found, and
    (``"turned-k"``) of the sizes ``k`` of the balanced sub-trees that turned."""
    x0 = np.asarray(x0, dtype=np.float64)
    u0, g0 = potential_and_grad(x0)
    start = Point(x0, np.asarray(p0, dtype=np.float64), float(u0), np.asarray(g0, np.float64))
    h0 = _energy(start, minv)
    trajectory = [start]
    log_w_total = 0.0                              # log weight of the start point: H0 - H0
    candidate, candidate_energy = start, h0
    sum_accept, num_steps, depth, diverging = 0.0, 0, 0, False
    for d in range(max_tree_depth):
        offset, size = 2 ** d - 1, 2 ** d
        eps = step_size if forward else -step_size
        point = trajectory[-1] if forward else trajectory[0]
        subtree, sub_log_w, sub_candidate, sub_energy = [], -np.inf, None, None
        valid = True
        for n in range(size):
            point = _leapfrog(point, eps, minv, potential_and_grad)
            h = _energy(point, minv)
            log_w = h0 - h if np.isfinite(h) else -np.inf
            num_steps += 1
            sum_accept += min(1.0, float(np.exp(log_w)))
            new_total = np.logaddexp(sub_log_w, log_w)
            if u[offset + n, 0] < np.exp(log_w - new_total):
                sub_candidate, sub_energy = point, h
            sub_log_w = new_total
            subtree.append(point)
            if log_w < -max_delta_energy:
                diverging, valid = True, False
                break
            # the balanced sub-trees this leaf completes (sizes 2, 4, ... up to the subtree)
            k = 2
            while k <= len(subtree) and (n + 1) % k == 0:
                if _balanced_turns(subtree[n + 1 - k:n + 1], forward, minv, decided):
                    valid = False
                    if decided is not None:      # the size of a balanced sub-tree that turned
                        decided[f"turned-{k}"] += 1
                k *= 2
            if not valid:
                break
        if not valid:
            break
        last = offset + size - 1
        if u[last, 1] < np.exp(sub_log_w - log_w_total):
            candidate, candidate_energy = sub_candidate, sub_energy
        log_w_total = np.logaddexp(log_w_total, sub_log_w)
        ordered = subtree if forward else subtree[::-1]
        left, right = (trajectory, ordered) if forward else (ordered, trajectory)
        trajectory = left + right
        depth += 1
        if not _segments_keep_going(left, right, minv, decided, "merge", forward):
            break
        forward = u[last, 2] < 0.5
    return Result(candidate.x, candidate.u, candidate.g, candidate_energy,
                  sum_accept / max(num_steps, 1), num_steps, depth, diverging)
