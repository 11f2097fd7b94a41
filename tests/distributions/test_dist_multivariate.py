"""Dirichlet, MultivariateNormal and LKJCholesky against independent references, crossed with
every backend and float dtype.

* Dirichlet / MultivariateNormal: ``log_prob`` and its gradients against ``scipy.stats``
  (finite differences), moments, draws (marginal Kolmogorov-Smirnov tests on a fixed key),
  pathwise gradients through ``sample``.
* LKJCholesky: ``log_prob`` against the LKJ density of ``C = L L^T`` with the normalizing
  constant of Lewandowski, Kurowicka and Joe (2009, eq. 16) times the Jacobian of
  ``L -> C`` computed by finite differences in NumPy; draws against the known marginal of one
  correlation, ``(r + 1) / 2 ~ Beta(eta - 1 + d / 2, eta - 1 + d / 2)`` (KS test).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from conftest import fd_grad, to_numpy
from scipy.special import betaln

import ppl
import ppl.distributions as dist
from ppl import ops

RTOL = {"float64": 1e-6, "float32": 1e-4}


def _close(got, expected, dtype, *, scale=1.0, msg=""):
    expected = np.asarray(expected, dtype=np.float64)
    atol = RTOL[dtype] * scale * max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(to_numpy(got), expected, rtol=RTOL[dtype] * scale, atol=atol,
                               err_msg=msg)


def _round(x, dtype):
    return np.asarray(x, dtype=np.float64).astype(dtype).astype(np.float64)


# ----------------------------------------------------------------------------- Dirichlet
ALPHA = np.array([[0.7, 2.0, 3.5], [1.2, 1.2, 5.0]])


def _dirichlet_points(dtype, n=4):
    rng = np.random.default_rng(0)
    x = _round(np.stack([rng.dirichlet(a, size=n) for a in ALPHA], axis=1), dtype)  # (n, 2, 3)
    return x / x.sum(-1, keepdims=True)   # back on the simplex for SciPy


def _dirichlet_ref(alpha, x):
    return np.stack([st.dirichlet(alpha[j]).logpdf(x[:, j].T) for j in range(2)], axis=1)


def test_dirichlet_log_prob_and_grad(backend, dtype):
    alpha = _round(ALPHA, dtype)
    d = dist.Dirichlet(ops.asarray(alpha))
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    x = _dirichlet_points(dtype)
    _close(d.log_prob(ops.asarray(x)), _dirichlet_ref(alpha, x), dtype)
    bad = np.array([[-0.1, 0.6, 0.5], [0.2, 0.3, 0.5]])
    assert to_numpy(d.log_prob(ops.asarray(bad)))[0] == -np.inf

    grad = ops.grad(lambda a: ops.sum(dist.Dirichlet(a).log_prob(ops.asarray(x))))(
        ops.asarray(alpha))
    ref = fd_grad(lambda a: _dirichlet_ref(a, x).sum(), alpha)
    _close(grad, ref, dtype, scale=10.0 if dtype == "float64" else 20.0)
    _close(d.mean, [st.dirichlet(a).mean() for a in alpha], dtype)
    _close(d.variance, [st.dirichlet(a).var() for a in alpha], dtype)


def test_dirichlet_sample(backend, dtype):
    n = 5000
    d = dist.Dirichlet(ops.asarray(ALPHA))
    x = d.sample(ppl.random.key(0), (n,))
    assert tuple(ops.shape(x)) == (n, 2, 3) and ops.dtype_of(x) == dtype
    x = to_numpy(x).astype(np.float64)
    np.testing.assert_allclose(x.sum(-1), 1.0, atol=1e-5)
    for j, a in enumerate(ALPHA):
        for k in range(3):   # marginals are Beta(a_k, a0 - a_k)
            p = st.kstest(x[:, j, k], st.beta(a[k], a.sum() - a[k]).cdf).pvalue
            assert p > 1e-4, f"batch {j} component {k}: KS p-value {p:.2e}"

    w = ops.asarray(np.array([1.0, 2.0, 3.0]))

    def f(a):
        return ops.sum(ops.mean(dist.Dirichlet(a).sample(ppl.random.key(5), (n,)), axis=0) * w)

    grad = to_numpy(ops.grad(f)(ops.asarray(ALPHA)))
    ref = fd_grad(lambda a: (a / a.sum(-1, keepdims=True) * np.array([1, 2, 3.0])).sum(), ALPHA)
    assert np.all(np.isfinite(grad))
    np.testing.assert_allclose(grad, ref, atol=0.05)


# ----------------------------------------------------------------------------- MVN
LOC = np.array([[0.5, -1.0, 2.0], [0.0, 0.3, -0.7]])
_A = np.array([[[1.0, 0.0, 0.0], [0.6, 1.5, 0.0], [-0.4, 0.2, 0.8]],
               [[2.0, 0.0, 0.0], [-0.5, 0.7, 0.0], [0.3, 0.9, 1.1]]])
COV = _A @ np.swapaxes(_A, -1, -2)
MVN_PARAMS = ["covariance_matrix", "precision_matrix", "scale_tril"]


def _mvn_param(name, cov):
    if name == "covariance_matrix":
        return cov
    if name == "precision_matrix":
        return np.linalg.inv(cov)
    return np.linalg.cholesky(cov)


def _cov_from(name, m):
    if name == "covariance_matrix":
        return m
    if name == "precision_matrix":
        return np.linalg.inv(m)
    return m @ np.swapaxes(m, -1, -2)


def _mvn_ref(loc, name, m, x):
    cov = _cov_from(name, m)
    return np.stack([st.multivariate_normal(loc[j], cov[j]).logpdf(x[:, j]) for j in range(2)],
                    axis=1)


def _only(e, j, batch=2):
    """The perturbation ``e`` on batch entry ``j`` only."""
    out = np.zeros((batch,) + e.shape)
    out[j] = e
    return out


def _sym_directions(name, n=3):
    """Perturbation directions of the matrix parameter (symmetric, or lower for scale_tril)."""
    dirs = []
    for i in range(n):
        for j in range(i + 1):
            e = np.zeros((n, n))
            e[i, j] = 1.0
            if name != "scale_tril" and i != j:
                e[j, i] = 1.0
            dirs.append(e)
    return dirs


@pytest.mark.parametrize("name", MVN_PARAMS)
def test_mvn_log_prob_and_grad(name, backend, dtype):
    loc, m = _round(LOC, dtype), _round(_mvn_param(name, COV), dtype)
    if name != "scale_tril":
        m = 0.5 * (m + np.swapaxes(m, -1, -2))
    d = dist.MultivariateNormal(ops.asarray(loc), **{name: ops.asarray(m)})
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    rng = np.random.default_rng(1)
    x = _round(LOC + rng.normal(size=(4, 2, 3)), dtype)
    _close(d.log_prob(ops.asarray(x)), _mvn_ref(loc, name, m, x), dtype, scale=3.0)
    cov = _cov_from(name, m)
    _close(d.mean, loc, dtype)
    _close(d.variance, np.diagonal(cov, axis1=-2, axis2=-1), dtype, scale=3.0)
    _close(d.covariance_matrix, cov, dtype, scale=3.0)
    _close(d.precision_matrix, np.linalg.inv(cov), dtype, scale=10.0)
    _close(d.scale_tril, np.linalg.cholesky(cov), dtype, scale=3.0)

    def f(loc_, m_):
        return ops.sum(dist.MultivariateNormal(loc_, **{name: m_}).log_prob(ops.asarray(x)))

    g_loc, g_m = ops.grad(f, argnums=(0, 1))(ops.asarray(loc), ops.asarray(m))
    ref_loc = fd_grad(lambda v: _mvn_ref(v, name, m, x).sum(), loc)
    scale = 1.0 if dtype == "float64" else 30.0
    _close(g_loc, ref_loc, dtype, scale=10 * scale)
    g_m = to_numpy(g_m)
    for e in _sym_directions(name):   # directional derivatives along valid perturbations
        got = np.einsum("bij,ij->b", g_m, e)
        ref = np.array([fd_grad(lambda t, j=j: _mvn_ref(loc, name, m + t * _only(e, j), x).sum(),
                                0.0) for j in range(2)]).ravel()
        _close(got, ref, dtype, scale=10 * scale, msg=f"direction {e.tolist()}")


def test_mvn_sample_and_broadcast(backend, dtype):
    n = 5000
    cov = COV
    d = dist.MultivariateNormal(ops.asarray(LOC), covariance_matrix=ops.asarray(cov))
    x = d.sample(ppl.random.key(0), (n,))
    assert tuple(ops.shape(x)) == (n, 2, 3) and ops.dtype_of(x) == dtype
    x = to_numpy(x).astype(np.float64)
    l = np.linalg.cholesky(cov)
    z = np.linalg.solve(l, (x - LOC)[..., None])[..., 0]   # should be iid N(0, 1)
    for j in range(2):
        p = st.kstest(z[:, j].ravel(), st.norm.cdf).pvalue
        assert p > 1e-4, f"batch {j}: KS p-value {p:.2e}"
    np.testing.assert_allclose(np.cov(z[:, 0].T), np.eye(3), atol=0.1)

    def f(loc):
        return ops.sum(dist.MultivariateNormal(loc, scale_tril=ops.asarray(l))
                       .sample(ppl.random.key(3), (10,)))

    np.testing.assert_allclose(to_numpy(ops.grad(f)(ops.asarray(LOC))), 10.0, rtol=1e-5)
    # loc (3,) against a batch of matrices; scalar loc; a value with extra sample dims.
    d2 = dist.MultivariateNormal(ops.asarray(LOC[0]), scale_tril=ops.asarray(l))
    assert d2.batch_shape == (2,) and tuple(ops.shape(d2.mean)) == (2, 3)
    d3 = dist.MultivariateNormal(0.0, covariance_matrix=ops.asarray(cov[0]))
    assert d3.batch_shape == () and d3.event_shape == (3,)
    xx = _round(np.random.default_rng(2).normal(size=(4, 5, 3)), dtype)
    lp = to_numpy(d3.log_prob(ops.asarray(xx)))
    _close(lp, st.multivariate_normal(np.zeros(3), cov[0]).logpdf(xx), dtype, scale=3.0)
    ind = dist.MultivariateNormal(ops.asarray(LOC), covariance_matrix=ops.asarray(cov)).to_event(1)
    assert ind.event_shape == (2, 3) and tuple(ops.shape(ind.log_prob(ops.asarray(LOC)))) == ()
    e = d.expand((4, 2))
    assert tuple(ops.shape(e.sample(ppl.random.key(1), (3,)))) == (3, 4, 2, 3)


# ----------------------------------------------------------------------------- LKJ
def _log_c(d, eta):
    """log of the integral of det(C)^(eta - 1) over d x d correlation matrices (LKJ 2009)."""
    return sum((d - k) * ((2 * eta - 2 + d - k) * np.log(2.0)
                          + betaln(eta + (d - k - 1) / 2, eta + (d - k - 1) / 2))
               for k in range(1, d))


def _l_from_free(w, d):
    l = np.zeros((d, d))
    l[0, 0] = 1.0
    pos = 0
    for i in range(1, d):
        l[i, :i] = w[pos:pos + i]
        l[i, i] = np.sqrt(1.0 - np.sum(w[pos:pos + i] ** 2))
        pos += i
    return l


def _lkj_ref(l, eta):
    """Density of L: LKJ density of C = L L^T times |det dC/dL| (by finite differences)."""
    d = l.shape[-1]
    rows, cols = np.tril_indices(d, -1)
    w0 = l[rows, cols]

    def c_of(w):
        lw = _l_from_free(w, d)
        return (lw @ lw.T)[rows, cols]

    h = 1e-6
    jac = np.stack([(c_of(w0 + h * e) - c_of(w0 - h * e)) / (2 * h) for e in np.eye(len(w0))], 1)
    log_jac = np.linalg.slogdet(jac)[1] if len(w0) else 0.0
    c = l @ l.T
    return (eta - 1.0) * np.linalg.slogdet(c)[1] - _log_c(d, eta) + log_jac


def _random_corr_cholesky(d, rng):
    a = rng.normal(size=(d, d + 2))
    s = a @ a.T
    c = s / np.sqrt(np.outer(np.diag(s), np.diag(s)))
    return np.linalg.cholesky(c)


@pytest.mark.parametrize("d", [2, 3, 5])
def test_lkj_log_prob_and_grad(d, backend, dtype):
    rng = np.random.default_rng(d)
    eta = _round([0.5, 1.0, 2.7], dtype)
    ls = np.stack([_random_corr_cholesky(d, rng) for _ in range(3)])
    ls = ls / np.linalg.norm(_round(ls, dtype), axis=-1, keepdims=True)   # unit rows
    dd = dist.LKJCholesky(d, ops.asarray(eta))
    assert dd.batch_shape == (3,) and dd.event_shape == (d, d)
    ref = np.array([_lkj_ref(ls[i], eta[i]) for i in range(3)])
    _close(dd.log_prob(ops.asarray(_round(ls, dtype))), ref, dtype, scale=10.0)
    # every batch entry on every L (the value broadcasts against the batch)
    both = dd.log_prob(ops.asarray(_round(ls[:, None], dtype)))
    assert tuple(ops.shape(both)) == (3, 3)
    g = ops.grad(lambda e: ops.sum(dist.LKJCholesky(d, e).log_prob(ops.asarray(ls))))(
        ops.asarray(eta))
    ref_g = fd_grad(lambda e: sum(_lkj_ref(ls[i], e[i]) for i in range(3)), eta)
    _close(g, ref_g, dtype, scale=100.0)


@pytest.mark.parametrize("d", [2, 4])
def test_lkj_sample(d, backend, dtype):
    n = 4000
    eta = np.array([0.7, 3.0])
    dd = dist.LKJCholesky(d, ops.asarray(eta))
    l = dd.sample(ppl.random.key(0), (n,))
    assert tuple(ops.shape(l)) == (n, 2, d, d) and ops.dtype_of(l) == dtype
    assert np.all(to_numpy(dist.constraints.corr_cholesky.check(l)))
    assert np.all(np.isfinite(to_numpy(dd.log_prob(l))))
    l = to_numpy(l).astype(np.float64)
    c = l @ np.swapaxes(l, -1, -2)
    for j, e in enumerate(eta):
        marginal = st.beta(e - 1 + d / 2, e - 1 + d / 2)
        for (a, b) in [(1, 0)] + ([(3, 1), (2, 0)] if d > 2 else []):
            p = st.kstest((c[:, j, a, b] + 1) / 2, marginal.cdf).pvalue
            assert p > 1e-4, f"eta={e}, C[{a},{b}]: KS p-value {p:.2e}"


def test_lkj_dimension_one(backend, dtype):
    dd = dist.LKJCholesky(1, 2.0)
    x = dd.sample(ppl.random.key(0), (3,))
    assert tuple(ops.shape(x)) == (3, 1, 1)
    np.testing.assert_array_equal(to_numpy(dd.log_prob(x)), np.zeros(3))


# ----------------------------------------------------------------------------- bad input
BAD = [
    ("Dirichlet", "concentration",
     lambda: dist.Dirichlet(ops.asarray(np.array([1.0, -1.0])), validate_args=True)),
    ("MultivariateNormal", "covariance_matrix",
     lambda: dist.MultivariateNormal(ops.zeros(2), ops.asarray(np.array([[1.0, 2.0],
                                                                         [2.0, 1.0]])),
                                     validate_args=True)),
    ("MultivariateNormal", "scale_tril",
     lambda: dist.MultivariateNormal(ops.zeros(2), scale_tril=ops.asarray(np.diag([1.0, -1.0])),
                                     validate_args=True)),
    ("LKJCholesky", "concentration", lambda: dist.LKJCholesky(3, -1.0, validate_args=True)),
]


@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("family,param,make", BAD, ids=[f"{b[0]}-{b[1]}" for b in BAD])
def test_bad_parameters(family, param, make, backend):
    with pytest.raises(ValueError) as err:
        make()
    msg = str(err.value)
    assert family in msg and repr(param) in msg, msg


@pytest.mark.dtypes("float64")
def test_bad_arguments(backend):
    eye = ops.eye(2)
    with pytest.raises(ValueError, match="exactly one of covariance_matrix"):
        dist.MultivariateNormal(ops.zeros(2))
    with pytest.raises(ValueError, match="exactly one of covariance_matrix"):
        dist.MultivariateNormal(ops.zeros(2), covariance_matrix=eye, scale_tril=eye)
    with pytest.raises(ValueError, match="loc has size 3"):
        dist.MultivariateNormal(ops.zeros(3), covariance_matrix=eye)
    with pytest.raises(ValueError, match="square"):
        dist.MultivariateNormal(ops.zeros(2), covariance_matrix=ops.ones((2, 3)))
    with pytest.raises(ValueError, match="dimension must be an int"):
        dist.LKJCholesky(0)
    with pytest.raises(ValueError, match="dimension must be an int"):
        dist.LKJCholesky(2.0)
    with pytest.raises(ValueError, match="sample_method"):
        dist.LKJCholesky(3, sample_method="cvine")
    with pytest.raises(ValueError, match="at least 1 dimension"):
        dist.Dirichlet(1.0)
    with pytest.raises(ValueError, match="outside the support"):
        dist.Dirichlet(ops.ones(2), validate_args=True).log_prob(ops.asarray([0.7, 0.7]))
    with pytest.raises(ValueError, match="outside the support"):
        dist.LKJCholesky(2, validate_args=True).log_prob(ops.asarray([[1.0, 0.0], [0.5, 0.5]]))
