"""Warmup adaptation does what it is told (issue 20), end to end through the NUTS kernel.

The runs drive the kernel contract of :mod:`ppl.inference.kernels` (``init``, ``warmup_flags``,
``build_iteration``) one iteration at a time, as the MCMC driver does, so that the warmup draws,
acceptance statistics, step sizes and inverse mass matrices of every iteration can be checked:

* the acceptance statistic is a probability;
* dual averaging drives the mean acceptance statistic to ``target_accept_prob``: over the longest
  stretch between two restarts of step-size adaptation its mean is within ``ACCEPT_TOL`` of the
  target in each chain (dual averaging, Hoffman & Gelman 2014, sec. 3.2.1: after ``t`` updates
  the mean of ``target - accept`` is ``gamma (mu - log eps_t) (t + t0) / t^1.5``, ~0.01 here);
* after warmup, the step size adapted to 0.6 is larger than the one adapted to 0.95 in every
  chain, and the mean acceptance statistic of the sampling draws is near the target. It lands
  *above* a low target: the final step size is the average of the log-step-size iterates, and the
  acceptance statistic is concave in the log step size where it is above ~0.5, so by Jensen's
  inequality the averaged step size accepts more than the iterates did on average. NumPyro
  0.22 gives 0.69-0.79 for a target of 0.6 on Gaussians of 1 to 100 dimensions (0.88-0.92 for
  0.8, 0.95 for 0.95), so the sampling band is ``[target - 0.05, target + 0.25]``;
* each inverse mass matrix is Stan's regularised (co)variance of exactly the draws of its window
  (a NumPy reference on the recorded draws: Welford's update and the window bookkeeping);
* and it converges to the target's variance (diagonal, scales 0.1, 1 and 10) or covariance
  (dense; compared after whitening by the true covariance).
"""

import functools

import numpy as np
import pytest

import ppl
from ppl import ops
from ppl.inference import NUTS
from ppl.inference.adaptation import warmup_schedule
from ppl.inference.kernels import WarmupFlags

NUM_CHAINS = 4
NUM_WARMUP = 500          # slow windows 75-99, 100-149, 150-424 (terminal buffer 75)
NUM_SAMPLES = 200
ACCEPT_TOL = 0.05
# Before the first mass-matrix update the metric is the identity, and a scale ratio of 100 takes
# NUTS ~350 leapfrog steps per draw (48 s of a 60 s run on torch); depth 6 (<= 63 steps) caps
# that, and the windows after the first still see a well-mixed chain.
MAX_TREE_DEPTH = 6

SCALES = np.array([0.1, 0.3, 1.0, 3.0, 10.0])
_CORR = np.array([[1.0, 0.5, 0.3], [0.5, 1.0, -0.4], [0.3, -0.4, 1.0]])
DENSE_SD = np.array([0.1, 1.0, 10.0])
DENSE_COV = _CORR * np.outer(DENSE_SD, DENSE_SD)


def _gaussian_potential(cov):
    prec = ops.asarray(np.linalg.inv(cov))

    def potential(z):
        return 0.5 * ops.sum(z * ops.matmul(prec, z))

    return potential


def _drive(kernel, potential_fn, init, seed):
    """Run ``NUM_WARMUP`` warmup then ``NUM_SAMPLES`` sampling iterations of ``kernel`` by its
    contract; NumPy records of every iteration."""
    with ops.backend().sampling_scope():
        vg = ops.jit(ops.vmap(ops.value_and_grad(potential_fn)))
        carry = kernel.init(ops.asarray(init), vg)
        iteration = ops.jit(kernel.build_iteration(vg))
        flags = np.zeros((5, NUM_WARMUP + NUM_SAMPLES), bool)
        flags[:, :NUM_WARMUP] = kernel.warmup_flags(NUM_WARMUP)
        key = ppl.random.key(seed)
        records = {"position": [], "accept_prob": [], "step_size": [], "inverse_mass": []}
        with np.errstate(over="ignore", invalid="ignore"):
            for i in range(flags.shape[1]):
                f = WarmupFlags(*[ops.asarray(flags[j, i]) for j in range(5)])
                carry, draw = iteration(ppl.random.fold_in(key, i), carry, f)
                records["position"].append(ops.to_numpy(draw.position))
                records["accept_prob"].append(ops.to_numpy(draw.info.accept_prob))
                records["step_size"].append(ops.to_numpy(draw.step_size))
                records["inverse_mass"].append(ops.to_numpy(carry[1].inverse_mass_matrix))
    out = {k: np.asarray(v, dtype=np.float64) for k, v in records.items()}
    out["final_step_size"] = np.asarray(ops.to_numpy(carry[1].step_size), np.float64)
    out["reset"] = flags[1]
    return out


@functools.cache
def _run(backend_name, target_accept_prob, dense):
    """One warmup and sampling run (cached: several tests read it)."""
    cov = DENSE_COV if dense else np.diag(SCALES ** 2)
    kernel = NUTS(potential_fn=_gaussian_potential(cov), dense_mass=dense,
                  target_accept_prob=target_accept_prob, max_tree_depth=MAX_TREE_DEPTH)
    rng = np.random.default_rng(7)
    init = rng.normal(size=(NUM_CHAINS, len(cov))) * np.sqrt(np.diag(cov))
    return _drive(kernel, kernel.potential_fn, init, seed=int(100 * target_accept_prob))


def _longest_stretch(reset):
    """``(start, stop)`` of the longest run of warmup iterations between two step-size
    restarts (a restart happens before its iteration)."""
    starts = list(np.flatnonzero(reset)) + [len(reset)]
    return max(zip(starts[:-1], starts[1:]), key=lambda s: s[1] - s[0])


def _stan_regularised(draws, dense):
    """Stan's ``n / (n + 5) * cov + 1e-3 * 5 / (n + 5) * I`` of ``draws`` ``(n, C, D)``."""
    n = draws.shape[0]
    if dense:
        cov = np.stack([np.cov(draws[:, c].T) for c in range(draws.shape[1])])
        eye = np.eye(draws.shape[2])
    else:
        cov, eye = draws.var(axis=0, ddof=1), 1.0
    return n / (n + 5.0) * cov + 1e-3 * 5.0 / (n + 5.0) * eye


TARGETS = [0.6, 0.95]
_ON = [pytest.mark.backends("jax", "torch"), pytest.mark.dtypes("float64")]
_SLOW_NUMPY = [pytest.mark.slow, pytest.mark.backends("numpy"), pytest.mark.dtypes("float64")]


def _check_accept_targets(backend, target):
    run = _run(backend.name, target, False)
    accept = run["accept_prob"]
    assert np.all((accept >= 0) & (accept <= 1)), \
        f"acceptance statistic outside [0, 1]: {accept.min()}, {accept.max()}"
    start, stop = _longest_stretch(run["reset"][:NUM_WARMUP])
    assert stop - start >= 150, (start, stop)
    during = accept[start:stop].mean(axis=0)         # per chain
    assert np.all(np.abs(during - target) <= ACCEPT_TOL), (
        f"mean acceptance over warmup iterations {start}-{stop - 1}: {during}, "
        f"target {target}")
    sampling = accept[NUM_WARMUP:].mean()
    assert target - ACCEPT_TOL <= sampling <= target + 0.25, (
        f"mean acceptance of the sampling draws {sampling:.3f}, target {target}")
    # sampling uses the final (averaged) step size, the same in every sampling iteration
    np.testing.assert_allclose(run["step_size"][NUM_WARMUP:],
                               np.broadcast_to(run["final_step_size"], (NUM_SAMPLES, NUM_CHAINS)))


def _check_ordered(backend):
    low = _run(backend.name, TARGETS[0], False)["final_step_size"]
    high = _run(backend.name, TARGETS[1], False)["final_step_size"]
    assert low.min() > high.max(), (low, high)


def _check_windows(backend, dense):
    run = _run(backend.name, 0.8 if dense else TARGETS[0], dense)
    windows = warmup_schedule(NUM_WARMUP).windows
    assert len(windows) == 3
    for first, last in windows:
        expected = _stan_regularised(run["position"][first:last + 1], dense)
        got = run["inverse_mass"][last + 1]
        np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-12,
                                   err_msg=f"window {first}-{last}")
    # and it is what the sampling iterations use
    np.testing.assert_allclose(run["inverse_mass"][-1], run["inverse_mass"][windows[-1][1] + 1])


def _check_diagonal_converges(backend):
    # the last window has 275 draws: over 100 effective ones for x^2, so each chain's estimate
    # of a variance has a relative sd of sqrt(2 / 100) = 14 %: within a factor 2 is > 4 sd; the
    # mean of the 8 chains of both runs has a relative sd of ~5 %: within 20 % is 4 sd
    n = warmup_schedule(NUM_WARMUP).windows[-1]
    n = n[1] - n[0] + 1
    expected = n / (n + 5.0) * SCALES ** 2 + 1e-3 * 5.0 / (n + 5.0)
    ratio = np.concatenate([_run(backend.name, t, False)["inverse_mass"][-1] for t in TARGETS])
    ratio = ratio / expected
    assert np.all(np.abs(np.log(ratio)) < np.log(2.0)), ratio
    assert np.all(np.abs(ratio.mean(axis=0) - 1.0) < 0.2), ratio.mean(axis=0)


def _check_dense_converges(backend):
    # whitened by the true covariance, the estimate should be the identity: per chain each
    # entry within 0.5 (~3.5 sd for ~100 effective draws), the chain mean within 0.25
    inv_mass = _run(backend.name, 0.8, True)["inverse_mass"][-1]
    chol_inv = np.linalg.inv(np.linalg.cholesky(DENSE_COV))
    white = chol_inv @ inv_mass @ chol_inv.T
    eye = np.eye(len(DENSE_SD))
    assert np.all(np.abs(white - eye) < 0.5), white
    assert np.all(np.abs(white.mean(axis=0) - eye) < 0.25), white.mean(axis=0)


# ---------------------------------------------------------------------------------- tests
@pytest.mark.parametrize("target", TARGETS)
@_ON[0]
@_ON[1]
def test_acceptance_reaches_target(backend, target):
    _check_accept_targets(backend, target)


@_ON[0]
@_ON[1]
def test_step_sizes_ordered_by_target(backend):
    _check_ordered(backend)


@pytest.mark.parametrize("dense", [False, True], ids=["diag", "dense"])
@_ON[0]
@_ON[1]
def test_mass_matrix_is_the_window_estimate(backend, dense):
    _check_windows(backend, dense)


@_ON[0]
@_ON[1]
def test_diagonal_mass_matrix_converges_to_variance(backend):
    _check_diagonal_converges(backend)


@_ON[0]
@_ON[1]
def test_dense_mass_matrix_converges_to_covariance(backend):
    _check_dense_converges(backend)


@pytest.mark.parametrize("check", ["accept-0.6", "accept-0.95", "ordered", "windows-diag",
                                   "windows-dense", "diag-converges", "dense-converges"])
@_SLOW_NUMPY[0]
@_SLOW_NUMPY[1]
@_SLOW_NUMPY[2]
def test_adaptation_targets_numpy(backend, check):
    {"accept-0.6": lambda: _check_accept_targets(backend, 0.6),
     "accept-0.95": lambda: _check_accept_targets(backend, 0.95),
     "ordered": lambda: _check_ordered(backend),
     "windows-diag": lambda: _check_windows(backend, False),
     "windows-dense": lambda: _check_windows(backend, True),
     "diag-converges": lambda: _check_diagonal_converges(backend),
     "dense-converges": lambda: _check_dense_converges(backend)}[check]()
