"""LowRankMultivariateNormal against ``scipy.stats.multivariate_normal`` with the full
covariance ``W W^T + diag(D)`` formed in NumPy, crossed with every backend and float dtype.

Per parametrization of the batch (parameters batched, or ``loc`` batched against one shared
factor): ``log_prob`` and its gradients in ``loc``, ``cov_factor``, ``cov_diag`` and the value
against central finite differences of SciPy's ``logpdf``; ``mean``, ``variance``,
``covariance_matrix``, ``precision_matrix``, ``scale_tril`` and ``entropy`` against NumPy; draws
whitened with NumPy's Cholesky factor (Kolmogorov-Smirnov against N(0, 1) on a fixed key, sample
covariance); pathwise gradients; argument errors. NUTS on a LowRankMultivariateNormal prior is
in ``test_dist_more_continuous.py`` (one run per backend for the new families).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from conftest import fd_grad, to_numpy

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.distributions import biject_to, constraints

RTOL = {"float64": 1e-7, "float32": 1e-4}
_RNG = np.random.default_rng(0)
N_DIM, RANK = 5, 2
LOC = _RNG.normal(size=(2, N_DIM))
W = _RNG.normal(size=(2, N_DIM, RANK))
D = _RNG.uniform(0.3, 1.5, size=(2, N_DIM))
# (id, loc, cov_factor, cov_diag): batched parameters, or a batch of locs sharing one factor
PARAMS = [("batched", LOC, W, D), ("shared-factor", LOC, W[0], D[0])]


def _round(x, dtype):
    return np.asarray(x, dtype=np.float64).astype(dtype).astype(np.float64)


def _close(got, expected, dtype, *, scale=1.0, msg=""):
    expected = np.asarray(expected, dtype=np.float64)
    tol = RTOL[dtype] * scale
    np.testing.assert_allclose(to_numpy(got), expected, rtol=tol,
                               atol=tol * max(1.0, float(np.abs(expected).max())), err_msg=msg)


def _cov(w, d):
    return w @ np.swapaxes(w, -1, -2) + d[..., None, :] * np.eye(w.shape[-2])


def _ref_logpdf(loc, w, d, x):
    """SciPy's logpdf of each batch entry, for ``x`` of shape ``(m, 2, n)``."""
    cov = np.broadcast_to(_cov(w, d), (2, N_DIM, N_DIM))
    return np.stack([np.atleast_1d(st.multivariate_normal(loc[j], cov[j]).logpdf(x[:, j]))
                     for j in range(2)], axis=1)


def _make(loc, w, d):
    return dist.LowRankMultivariateNormal(ops.asarray(loc), ops.asarray(w), ops.asarray(d))


@pytest.mark.parametrize("pid,loc,w,d", PARAMS, ids=[p[0] for p in PARAMS])
def test_log_prob_moments_and_matrices(pid, loc, w, d, backend, dtype):
    loc, w, d = _round(loc, dtype), _round(w, dtype), _round(d, dtype)
    lr = _make(loc, w, d)
    assert lr.batch_shape == (2,) and lr.event_shape == (N_DIM,)
    x = _round(LOC + np.random.default_rng(1).normal(size=(4, 2, N_DIM)), dtype)
    _close(lr.log_prob(ops.asarray(x)), _ref_logpdf(loc, w, d, x), dtype, scale=3.0)
    cov = np.broadcast_to(_cov(w, d), (2, N_DIM, N_DIM))
    _close(lr.mean, loc, dtype)
    _close(lr.variance, np.diagonal(cov, axis1=-2, axis2=-1), dtype, scale=3.0)
    _close(lr.covariance_matrix, cov, dtype, scale=3.0)
    _close(lr.precision_matrix, np.linalg.inv(cov), dtype, scale=30.0)
    _close(lr.scale_tril, np.linalg.cholesky(cov), dtype, scale=10.0)
    _close(lr.entropy(), [st.multivariate_normal(loc[j], cov[j]).entropy() for j in range(2)],
           dtype, scale=3.0)
    # a value with more sample dims broadcasts; one event broadcasts over the batch
    lp1 = lr.log_prob(ops.asarray(x[0, 0]))
    assert tuple(ops.shape(lp1)) == (2,)
    _close(lp1, _ref_logpdf(loc, w, d, np.broadcast_to(x[0, 0], (1, 2, N_DIM)))[0], dtype,
           scale=3.0)


def test_log_prob_grad(backend, dtype):
    loc, w, d = _round(LOC, dtype), _round(W, dtype), _round(D, dtype)
    x = _round(LOC + np.random.default_rng(2).normal(size=(3, 2, N_DIM)), dtype)

    def f(loc_, w_, d_, x_):
        return ops.sum(dist.LowRankMultivariateNormal(loc_, w_, d_).log_prob(x_))

    grads = ops.grad(f, argnums=(0, 1, 2, 3))(*(ops.asarray(a) for a in (loc, w, d, x)))
    refs = [fd_grad(lambda v: _ref_logpdf(v, w, d, x).sum(), loc),
            fd_grad(lambda v: _ref_logpdf(loc, v, d, x).sum(), w),
            fd_grad(lambda v: _ref_logpdf(loc, w, v, x).sum(), d),
            fd_grad(lambda v: _ref_logpdf(loc, w, d, v).sum(), x)]
    scale = 10.0 if dtype == "float64" else 100.0
    for name, g, ref in zip(["loc", "cov_factor", "cov_diag", "value"], grads, refs):
        _close(g, ref, dtype, scale=scale, msg=f"d log_prob / d {name}")


def test_sample(backend, dtype):
    n = 4000
    lr = _make(LOC, W, D)
    x = lr.sample(ppl.random.key(0), (n,))
    assert tuple(ops.shape(x)) == (n, 2, N_DIM) and ops.dtype_of(x) == dtype
    x = to_numpy(x).astype(np.float64)
    l = np.linalg.cholesky(_cov(W, D))
    z = np.linalg.solve(l, (x - LOC)[..., None])[..., 0]       # should be iid N(0, 1)
    for j in range(2):
        p = st.kstest(z[:, j].ravel(), st.norm.cdf).pvalue
        assert p > 1e-3, f"batch {j}: KS p-value {p:.2e}"
        # entries of a sample covariance of iid N(0, 1): sd 1/sqrt(n) off, sqrt(2/n) on the diag
        np.testing.assert_allclose(np.cov(z[:, j].T), np.eye(N_DIM), atol=6 * np.sqrt(2.0 / n))
        assert np.all(np.abs(z[:, j].mean(0)) < 6 / np.sqrt(n))


@pytest.mark.dtypes("float64")
def test_reparameterized_sample_grad(backend):
    """``loc + W e1 + sqrt(D) e2``: the pathwise gradient of the draws' mean of ``|x|^2``
    against that of its expectation ``|loc|^2 + sum(W^2) + sum(D)``, within ~6 standard
    errors of the estimator."""
    n = 20_000
    lr_args = tuple(ops.asarray(a) for a in (LOC[0], W[0], D[0]))
    assert _make(LOC[0], W[0], D[0]).has_rsample

    def second_moment(loc, w, d):
        x = dist.LowRankMultivariateNormal(loc, w, d).sample(ppl.random.key(4), (n,))
        return ops.sum(x * x) / n

    g_loc, g_w, g_d = ops.grad(second_moment, argnums=(0, 1, 2))(*lr_args)
    np.testing.assert_allclose(to_numpy(g_loc), 2.0 * LOC[0], atol=0.2)
    np.testing.assert_allclose(to_numpy(g_w), 2.0 * W[0], atol=0.25)
    np.testing.assert_allclose(to_numpy(g_d), np.ones(N_DIM), atol=0.15)


@pytest.mark.dtypes("float64")
def test_support_and_arguments(backend):
    lr = _make(LOC, W, D)
    assert lr.support is constraints.real_vector
    assert tuple(ops.shape(biject_to(lr.support)(ops.zeros((3, N_DIM))))) == (3, N_DIM)
    scalar_loc = dist.LowRankMultivariateNormal(0.0, ops.asarray(W[0]), ops.asarray(D[0]))
    assert scalar_loc.batch_shape == () and scalar_loc.event_shape == (N_DIM,)
    assert tuple(ops.shape(lr.expand((3, 2)).sample(ppl.random.key(0), (4,)))) == (4, 3, 2,
                                                                                      N_DIM)
    bad = [(lambda: _make(LOC, W[..., 0], D), "cov_factor"),
           (lambda: _make(LOC, W, D[..., :3]), "cov_diag"),
           (lambda: _make(LOC[..., :3], W, D), "loc"),
           (lambda: _make(LOC, W, np.ones((3, N_DIM))), "do not broadcast")]
    for make, word in bad:
        with pytest.raises(ValueError, match=word):
            make()
    with pytest.raises(ValueError, match="'cov_diag'"):
        dist.LowRankMultivariateNormal(ops.asarray(LOC[0]), ops.asarray(W[0]),
                                       ops.asarray(-D[0]), validate_args=True)
