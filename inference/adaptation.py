"""Warmup adaptation as Stan does it: step size by dual averaging, mass matrix by windows.

* Stan's initial step-size heuristic, re-run at each stage's start, is in
  :mod:`~ppl.inference.step_size_search`; :func:`restart_dual_averaging` restarts dual
  averaging from the step size it finds.
* Dual averaging (Nesterov 2009; Hoffman & Gelman 2014, sec. 3.2.1) drives the mean acceptance
  statistic of each transition toward ``target_accept_prob``; at the end of warmup the step size
  is the weighted average of the iterates.
* Welford's streaming estimates of the variance (diagonal) or covariance (dense) of the draws in
  each slow window, regularised toward the identity as Stan does,
  ``(n / (n + 5)) * cov + 1e-3 * (5 / (n + 5)) * I``.
* With ``estimator="gradients"`` the diagonal inverse mass matrix of a window is
  ``sqrt(var(draws) / var(gradients))`` instead (Welford over both), the diagonal that minimises
  the Fisher divergence between the posterior and its Gaussian approximation (Seyboldt, Carlson
  & Carpenter, nutpie's adaptation); exact for a Gaussian posterior with diagonal
  covariance, and informed by the gradients when a window holds few draws.
* :func:`warmup_schedule` — Stan's windows: an initial fast buffer (75 iterations), slow windows
  starting at 25 iterations and doubling, the last stretched to the terminal fast buffer;
  scaled down to 15% / 75% / 10% when warmup is shorter than 150 iterations. The terminal
  buffer, where only the step size adapts to the final mass matrix, is 15 % of warmup (at least
  Stan's 50 iterations; ``term_buffer=50`` gives Stan's schedule): dual averaging restarted for
  50 iterations leaves a step size biased low (realised acceptance 0.86-0.91 for a target of
  0.8 on the benchmark's logistic regression), which a longer final stage removes, as nutpie's
  final step-size window does; measured in ESS per gradient in ``benchmarks/PROFILE.md``.

Every state is a NamedTuple of ``(C, ...)`` arrays (one entry per chain); updates use
``ops.where`` so they compile inside the sampling loop.

References
----------
Hoffman, M. D. and Gelman, A. (2014). The No-U-Turn Sampler. JMLR 15.
Nesterov, Y. (2009). Primal-dual subgradient methods for convex problems. Math. Program. 120.
Welford, B. P. (1962). Note on a method for calculating corrected sums of squares and products.
Technometrics 4(3).
Seyboldt, A., Carlson, E. and Carpenter, B. Preconditioning Hamiltonian Monte Carlo by
minimizing Fisher divergence (nutpie's mass-matrix adaptation).
Stan Reference Manual, "HMC algorithm parameters: automatic parameter tuning";
stan/src/stan/mcmc/windowed_adaptation.hpp, stepsize_adaptation.hpp.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ppl import ops
from ppl.inference.batching import select

__all__ = ["DualAveragingState", "WelfordState", "dual_averaging_init", "dual_averaging_update",
           "welford_init", "welford_update", "welford_covariance",
           "warmup_schedule", "WarmupSchedule", "AdaptState", "adapt_init", "take_mass_estimate",
           "restart_dual_averaging", "adapt_update", "ESTIMATORS"]

#: mass-matrix estimators: ``"draws"`` (Stan: the draws' variance) or ``"gradients"``
ESTIMATORS = ("draws", "gradients")


# ------------------------------------------------------------------------------ dual averaging
class DualAveragingState(NamedTuple):
    """Dual-averaging state of ``log(step_size)``, one entry per chain.

    Attributes
    ----------
    log_step_size
        ``(C,)`` current iterate ``x_t``.
    log_step_size_avg
        ``(C,)`` weighted average ``x_bar_t`` (the step size used after warmup).
    error_avg
        ``(C,)`` running average ``H_bar_t`` of ``target - accept_prob``.
    count
        ``(C,)`` number of updates since the last restart.
    mu
        ``(C,)`` shrinkage target, ``log(10 * step_size)`` at (re)start.
    """

    log_step_size: object
    log_step_size_avg: object
    error_avg: object
    count: object
    mu: object


def dual_averaging_init(step_size) -> DualAveragingState:
    """Start (or restart) dual averaging from ``step_size`` (``(C,)``)."""
    log_eps = ops.log(step_size)
    zeros = ops.zeros_like(log_eps)
    return DualAveragingState(log_eps, zeros, zeros, zeros, log_eps + math.log(10.0))


def dual_averaging_update(state: DualAveragingState, accept_prob, target_accept_prob: float, *,
                          gamma: float = 0.05, t0: float = 10.0,
                          kappa: float = 0.75) -> DualAveragingState:
    """One dual-averaging update with the acceptance statistic ``accept_prob`` (``(C,)``).

    Stan's constants by default (``gamma=0.05, t0=10, kappa=0.75``).
    """
    accept_prob = ops.minimum(accept_prob, 1.0)
    count = state.count + 1.0
    eta = 1.0 / (count + t0)
    error_avg = (1.0 - eta) * state.error_avg + eta * (target_accept_prob - accept_prob)
    log_eps = state.mu - ops.sqrt(count) / gamma * error_avg
    x_eta = ops.pow(count, -kappa)
    log_avg = x_eta * log_eps + (1.0 - x_eta) * state.log_step_size_avg
    return DualAveragingState(log_eps, log_avg, error_avg, count, state.mu)


# ------------------------------------------------------------------------------ Welford
class WelfordState(NamedTuple):
    """Streaming mean and (co)variance sums, one estimate per chain.

    Attributes
    ----------
    mean
        ``(C, D)`` running mean.
    m2
        ``(C, D)`` sums of squared deviations, or ``(C, D, D)`` of outer products (dense).
    count
        ``(C,)`` number of draws added.
    """

    mean: object
    m2: object
    count: object


def welford_init(num_chains: int, dim: int, *, dense: bool = False, dtype=None) -> WelfordState:
    """An empty estimator for ``(num_chains, dim)`` draws."""
    m2_shape = (num_chains, dim, dim) if dense else (num_chains, dim)
    return WelfordState(ops.zeros((num_chains, dim), dtype), ops.zeros(m2_shape, dtype),
                        ops.zeros((num_chains,), dtype))


def welford_update(state: WelfordState, x) -> WelfordState:
    """Add the draws ``x`` (``(C, D)``)."""
    count = state.count + 1.0
    delta = x - state.mean
    mean = state.mean + delta / ops.expand_dims(count, -1)
    delta2 = x - mean
    if ops.ndim(state.m2) == 3:
        m2 = state.m2 + ops.expand_dims(delta, -1) * ops.expand_dims(delta2, -2)
    else:
        m2 = state.m2 + delta * delta2
    return WelfordState(mean, m2, count)


def welford_covariance(state: WelfordState, *, regularize: bool = True):
    """The sample (co)variance ``m2 / (n - 1)``, shrunk toward ``1e-3 * I`` as Stan does."""
    n = state.count
    dense = ops.ndim(state.m2) == 3
    shape = (-1, 1, 1) if dense else (-1, 1)
    n_b = ops.reshape(n, shape)
    cov = state.m2 / ops.maximum(n_b - 1.0, 1.0)
    if not regularize:
        return cov
    eye = ops.eye(ops.shape(state.mean)[-1], dtype=ops.dtype_of(cov)) if dense else 1.0
    return (n_b / (n_b + 5.0)) * cov + 1e-3 * (5.0 / (n_b + 5.0)) * eye


# ------------------------------------------------------------------------------ schedule
class WarmupSchedule(NamedTuple):
    """Per-iteration warmup flags (NumPy arrays of length ``num_warmup``).

    Attributes
    ----------
    reset
        Before this iteration: re-run the step-size heuristic and restart dual averaging
        (iteration 0 and the one after each slow window).
    update_mass
        Before this iteration: replace the inverse mass matrix by the estimate of the window
        that just ended, and empty the estimator.
    collect
        After this iteration: add the draw to the Welford estimator.
    windows
        The slow windows as ``(first, last)`` iteration pairs.
    """

    reset: np.ndarray
    update_mass: np.ndarray
    collect: np.ndarray
    windows: list


def warmup_schedule(num_warmup: int, *, adapt_step_size: bool = True,
                    adapt_mass_matrix: bool = True, init_buffer: int = 75,
                    term_buffer: int | None = None, base_window: int = 25) -> WarmupSchedule:
    """Stan's windowed adaptation schedule; ``term_buffer`` (the final step-size-only stage)
    defaults to ``max(50, round(0.15 * num_warmup))``, Stan's is 50.

    Examples
    --------
    >>> warmup_schedule(1000).windows
    [(75, 99), (100, 149), (150, 249), (250, 449), (450, 849)]
    >>> warmup_schedule(1000, term_buffer=50).windows     # Stan's
    [(75, 99), (100, 149), (150, 249), (250, 449), (450, 949)]
    """
    num_warmup = int(num_warmup)
    if term_buffer is None:
        term_buffer = max(50, round(0.15 * num_warmup))
    windows: list[tuple[int, int]] = []
    if adapt_mass_matrix and num_warmup >= 20:
        if init_buffer + base_window + term_buffer > num_warmup:
            init_buffer = int(0.15 * num_warmup)
            term_buffer = int(0.1 * num_warmup)
            base_window = num_warmup - (init_buffer + term_buffer)
        last = num_warmup - term_buffer - 1
        size, start = base_window, init_buffer
        end = init_buffer + base_window - 1
        while True:
            windows.append((start, end))
            if end >= last:
                break
            size *= 2
            start, end = end + 1, end + size
            if end != last and end + 2 * size >= num_warmup - term_buffer:
                end = last
    reset = np.zeros(num_warmup, bool)
    update_mass = np.zeros(num_warmup, bool)
    collect = np.zeros(num_warmup, bool)
    if num_warmup and adapt_step_size:
        reset[0] = True
    for first, last in windows:
        collect[first:last + 1] = True
        if last + 1 < num_warmup:
            update_mass[last + 1] = True
            reset[last + 1] = reset[last + 1] or adapt_step_size
    return WarmupSchedule(reset, update_mass, collect, windows)


# ------------------------------------------------------------------------------ combined state
class AdaptState(NamedTuple):
    """Everything warmup tunes, per chain.

    Attributes
    ----------
    step_size
        ``(C,)`` step size used by the next transition.
    inverse_mass_matrix
        ``(C, D)`` or ``(C, D, D)``.
    dual_averaging
        :class:`DualAveragingState`.
    welford
        :class:`WelfordState` of the current slow window.
    """

    step_size: object
    inverse_mass_matrix: object
    dual_averaging: DualAveragingState
    welford: WelfordState
    grad_welford: WelfordState | None = None   # the gradients' (estimator="gradients")
    #: ``(C, D, D)`` 0/1 pattern of a block-diagonal dense matrix (``dense_mass`` as site
    #: groups, :mod:`~ppl.inference.mass_matrix`): the covariance outside it is not estimated
    structure: object = None


def _fisher_diagonal(draws: WelfordState, grads: WelfordState):
    """``sqrt(var(x) / var(grad))`` per coordinate, shrunk toward ``1e-3`` as Stan shrinks its
    variance estimate, and kept in ``[1e-10, 1e10]``."""
    var_x = welford_covariance(draws, regularize=False)
    var_g = welford_covariance(grads, regularize=False)
    est = ops.clip(ops.sqrt(var_x / ops.maximum(var_g, 1e-30)), 1e-10, 1e10)
    n = ops.expand_dims(draws.count, -1)
    return (n / (n + 5.0)) * est + 1e-3 * (5.0 / (n + 5.0))


def _empty(w: WelfordState) -> WelfordState:
    return WelfordState(ops.zeros_like(w.mean), ops.zeros_like(w.m2), ops.zeros_like(w.count))


def _per_chain(matrix, num_chains: int, dtype):
    """A NumPy ``(D,)`` or ``(D, D)`` array as ``(C, ...)`` copies in the backend's ``dtype``."""
    matrix = ops.asarray(np.asarray(matrix, np.float64), dtype=dtype)
    ones = ops.ones((num_chains,) + (1,) * ops.ndim(matrix), dtype)
    return ops.expand_dims(matrix, 0) * ones


def adapt_init(step_size, num_chains: int, dim: int, *, dense: bool = False,
               dtype=None, estimator: str = "draws", initial=None,
               structure=None) -> AdaptState:
    """Initial adaptation state: ``step_size`` everywhere and the inverse mass matrix
    ``initial`` (a NumPy ``(D,)`` or, ``dense``, ``(D, D)`` array; ``None``: the identity);
    ``estimator`` is one of :data:`ESTIMATORS` (``"gradients"``: diagonal only);
    ``structure`` (NumPy ``(D, D)`` 0/1, ``dense`` only) the blocks a dense estimate keeps."""
    dtype = dtype or ops.backend().dtype
    eps = ops.full((num_chains,), float(step_size), dtype)
    if initial is None:
        initial = np.eye(dim) if dense else np.ones(dim)
    inv_mass = _per_chain(initial, num_chains, dtype)
    grads = welford_init(num_chains, dim, dtype=dtype) if estimator == "gradients" else None
    return AdaptState(eps, inv_mass, dual_averaging_init(eps),
                      welford_init(num_chains, dim, dense=dense, dtype=dtype), grads,
                      None if structure is None else _per_chain(structure, num_chains, dtype))


def take_mass_estimate(adapt: AdaptState) -> AdaptState:
    """The end of a slow window: the window's estimate becomes the inverse mass matrix and the
    estimators start empty."""
    grads = adapt.grad_welford
    estimate = welford_covariance(adapt.welford) if grads is None else \
        _fisher_diagonal(adapt.welford, grads)
    if adapt.structure is not None:
        estimate = estimate * adapt.structure
    return AdaptState(adapt.step_size, estimate, adapt.dual_averaging, _empty(adapt.welford),
                      None if grads is None else _empty(grads), adapt.structure)


def restart_dual_averaging(adapt: AdaptState, step_size, restart) -> AdaptState:
    """Where ``restart`` (a scalar bool): step size ``step_size`` (the heuristic's,
    :mod:`~ppl.inference.step_size_search`) and dual averaging restarted at
    ``mu = log(10 * step_size)`` (Stan's order)."""
    da = select(restart, dual_averaging_init(step_size), adapt.dual_averaging)
    return AdaptState(ops.where(restart, step_size, adapt.step_size),
                      adapt.inverse_mass_matrix, da, adapt.welford, adapt.grad_welford,
                      adapt.structure)


def adapt_update(adapt: AdaptState, position, accept_prob, *, warmup, collect, last,
                 target_accept_prob: float, adapt_step_size: bool,
                 grad=None) -> AdaptState:
    """After a warmup transition: dual-averaging update (when ``warmup``), Welford update with
    the new draw (and its potential's gradient ``grad``, for ``estimator="gradients"``) when
    ``collect``, and the averaged step size at the ``last`` warmup iteration. The flags are
    scalar bools (traced or concrete). A sampling iteration (neither flag) changes nothing, and
    skips the arithmetic (~30 array ops on an eager backend)."""
    def update(adapt):
        eps, da = adapt.step_size, adapt.dual_averaging
        if adapt_step_size:
            new_da = dual_averaging_update(da, accept_prob, target_accept_prob)
            da = select(warmup, new_da, da)
            new_eps = ops.exp(ops.where(last, da.log_step_size_avg, da.log_step_size))
            eps = ops.where(warmup, new_eps, eps)
        welford = select(collect, welford_update(adapt.welford, position), adapt.welford)
        grads = adapt.grad_welford
        if grads is not None:
            grads = select(collect, welford_update(grads, grad), grads)
        return AdaptState(eps, adapt.inverse_mass_matrix, da, welford, grads, adapt.structure)

    return ops.cond(ops.logical_or(warmup, collect), update, lambda a: a, adapt)
