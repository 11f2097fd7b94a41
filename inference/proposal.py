"""Multinomial proposal sampling along a trajectory (Betancourt 2017, section A.3).

Every point ``z`` of a trajectory has weight ``w(z) = exp(H_0 - H(z))``. NUTS draws its next
state in proportion to these weights without storing the trajectory:

* *progressive (uniform) sampling* inside a subtree: the ``n``-th new point replaces the current
  candidate with probability ``w_n / (w_1 + ... + w_n)``, which leaves every point of the subtree
  chosen in proportion to its weight;
* *biased progressive sampling* when a finished subtree is merged into the trajectory: the
  subtree's candidate replaces the trajectory's with probability
  ``min(1, W_subtree / W_trajectory_old)``, which favours points far from the start and still
  leaves the target invariant (Betancourt 2017, A.3.2; Stan's ``base_nuts.hpp``).

Both functions take the uniform draw ``u`` explicitly, so a transition is a pure function of its
random inputs (and the selection frequencies can be tested exactly).

References
----------
Betancourt, M. (2017). A Conceptual Introduction to Hamiltonian Monte Carlo. arXiv:1701.02434.
"""

from __future__ import annotations

from ppl import ops

__all__ = ["progressive_take", "biased_take", "log_weight"]


def log_weight(energy0, energy):
    """``log w = H_0 - H``; a NaN energy (a trajectory that blew up) gets weight 0."""
    log_w = energy0 - energy
    return ops.where(log_w == log_w, log_w, -float("inf"))


def progressive_take(log_weight_sum, log_w, u):
    """Progressive uniform sampling: ``(new log weight sum, take)``, where ``take`` says whether
    the new point (log weight ``log_w``) replaces the candidate; ``u ~ Uniform(0, 1)``."""
    total = ops.logaddexp(log_weight_sum, log_w)
    return total, u < ops.exp(log_w - total)


def biased_take(log_weight_old, log_weight_sub, u):
    """Biased progressive sampling: whether a subtree's candidate replaces the trajectory's,
    with probability ``min(1, W_sub / W_old)``; ``u ~ Uniform(0, 1)``."""
    return u < ops.exp(log_weight_sub - log_weight_old)
