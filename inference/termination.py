"""The no-U-turn termination criterion, generalised to Riemannian/Euclidean metrics.

A trajectory segment with end points ``a`` (earlier) and ``b`` (later), summed momentum ``rho``
and "sharp" momenta ``p_sharp = M^{-1} p`` at its ends keeps going while

    p_sharp_a . rho > 0   and   p_sharp_b . rho > 0

(Betancourt 2017, section A.4.2; Stan's ``compute_criterion``). NUTS checks it on every balanced
sub-tree as it completes; Stan adds two checks across each merge of two halves, which catch
U-turns that fall between the halves (Stan 2.26, ``base_nuts.hpp``).

The iterative tree builder keeps, for every level ``k`` of the subtree under construction, a
*checkpoint* of the leaf that started the level's current balanced sub-tree: its sharp momentum,
momentum, the sharp momentum and momentum of the leaf before it, and the summed momentum before
it. :func:`subtree_turning` checks every sub-tree a new leaf completes, all levels at once.

References
----------
Hoffman, M. D. and Gelman, A. (2014). The No-U-Turn Sampler. JMLR 15, 1593-1623.
Betancourt, M. (2017). A Conceptual Introduction to Hamiltonian Monte Carlo. arXiv:1701.02434.
"""

from __future__ import annotations

from ppl import ops

__all__ = ["PS", "P", "PREV_PS", "PREV_P", "RHO", "NUM_FIELDS", "no_u_turn", "subtree_turning",
           "merge_turning"]

#: checkpoint fields, stacked on axis 2 of the ``(C, L, NUM_FIELDS, D)`` checkpoint array
PS, P, PREV_PS, PREV_P, RHO = range(5)
NUM_FIELDS = 5


def _dot(a, b):
    return ops.sum(a * b, axis=-1)


def no_u_turn(ps_a, ps_b, rho):
    """Whether a segment with end sharp momenta ``ps_a``, ``ps_b`` (``(..., D)``) and summed
    momentum ``rho`` keeps going (both projections positive)."""
    return (_dot(ps_a, rho) > 0) & (_dot(ps_b, rho) > 0)


def subtree_turning(ckpt, rho, ps, completes):
    """Whether any balanced sub-tree completed by the current leaf turns, per chain.

    Parameters
    ----------
    ckpt
        ``(C, L, NUM_FIELDS, D)`` checkpoints (level ``j`` holds the first leaf of the current
        sub-tree of size ``2^j``).
    rho
        ``(C, D)`` summed momentum of the subtree including the current leaf.
    ps
        ``(C, D)`` sharp momentum of the current leaf.
    completes
        ``(L,)`` bool: the leaf completes a balanced sub-tree of size ``2^k``.

    Returns
    -------
    ``(C,)`` bool.
    """
    start, left = ckpt[:, 1:], ckpt[:, :-1]
    rho_n, ps_n = rho[:, None], ps[:, None]
    # the whole sub-tree, then Stan's two checks across its two halves
    ok = (no_u_turn(start[:, :, PS], ps_n, rho_n - start[:, :, RHO])
          & no_u_turn(start[:, :, PS], left[:, :, PS],
                      left[:, :, RHO] - start[:, :, RHO] + left[:, :, P])
          & no_u_turn(left[:, :, PREV_PS], ps_n, rho_n - left[:, :, RHO] + left[:, :, PREV_P]))
    return ops.any(completes[None, 1:] & ~ok, axis=1)


def merge_turning(far_ps, near_ps, near_p, rho_old, sub_first_ps, sub_first_p, sub_last_ps,
                  sub_rho):
    """Whether the trajectory turns once a subtree is merged into it, per chain.

    ``far_ps`` is the sharp momentum at the far end of the old trajectory, ``near_ps`` /
    ``near_p`` at the end the subtree was attached to, ``rho_old`` its summed momentum;
    ``sub_first_*`` / ``sub_last_ps`` describe the subtree's first and last leaves and
    ``sub_rho`` its summed momentum. Checks the merged trajectory and Stan's two extra checks
    across the junction.
    """
    rho = rho_old + sub_rho
    ok = (no_u_turn(far_ps, sub_last_ps, rho)
          & no_u_turn(far_ps, sub_first_ps, rho_old + sub_first_p)
          & no_u_turn(near_ps, sub_last_ps, sub_rho + near_p))
    return ~ok
