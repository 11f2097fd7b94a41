"""LKJ over correlation matrices (``distributions/lkj.py``) and CorrMatrixCholeskyTransform
with ``biject_to(corr_matrix)`` (``distributions/matrix_transforms.py``), against independent
references on every backend and float dtype (the ``backend`` fixture of ``tests/conftest.py``).

References:

* the density ``det(C)^(eta - 1) / Z`` with ``Z`` in the C-vine product form of Lewandowski,
  Kurowicka & Joe (2009), written here with ``scipy.special.betaln`` (ppl writes it as the
  onion product of Gamma functions); ``Z`` itself is checked independently: for ``d = 2``
  against ``scipy.stats.beta`` of ``(r + 1) / 2`` (Jacobian 1/2), for ``d = 3`` by
  ``scipy.integrate.tplquad`` over the elliptope and by Monte Carlo over the cube ``[-1, 1]^3``
  (the density integrates to 1; eta = 1 gives the elliptope's volume pi^2 / 2);
* draws: every correlation's marginal ``(r + 1) / 2 ~ Beta(eta - 1 + d/2, eta - 1 + d/2)``
  (Kolmogorov-Smirnov at alpha = 1e-4 on a fixed key);
* log-Jacobians: central finite differences (NumPy, float64) of maps written here with NumPy
  (Stan's partial-correlation construction; ``L -> L L^T``) on the free coordinates;
* gradients wrt ``concentration`` and the correlations: finite differences of the reference;
* NUTS on ``LKJ(3, 2)`` alone: posterior means (0) and sds (the Beta marginal's) within 5 MCSE.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from conftest import fd_grad, to_numpy
from scipy import integrate
from scipy.special import betaln

import ppl
from ppl import ops
from ppl.diagnostics import mcse
from ppl.distributions import biject_to, constraints
from ppl.distributions.lkj import LKJ
from ppl.distributions.matrix_transforms import CorrMatrixCholeskyTransform
from ppl.inference import MCMC, NUTS


def _tol(dtype, grad=False):
    if dtype == "float64":
        return (1e-6, 1e-7) if grad else (1e-9, 1e-9)
    return (2e-3, 2e-3) if grad else (2e-5, 2e-4)


# ================================================================================ reference
def _ref_log_z(d, eta):
    """log of the integral of det(C)^(eta - 1) over d x d correlation matrices, as the C-vine
    product of Beta functions (Lewandowski, Kurowicka & Joe 2009, section 3)."""
    eta = np.asarray(eta, dtype=np.float64)
    return sum((d - k) * ((2.0 * eta - 2.0 + d - k) * np.log(2.0)
                          + betaln(eta + (d - k - 1) / 2.0, eta + (d - k - 1) / 2.0))
               for k in range(1, d))


def _ref_log_prob(c, eta):
    """(eta - 1) log det C - log Z, over the leading dims of ``c`` (float64)."""
    c = np.asarray(c, dtype=np.float64)
    return (np.asarray(eta) - 1.0) * np.linalg.slogdet(c)[1] - _ref_log_z(c.shape[-1], eta)


def _corr_from_upper(v, d):
    """Symmetric unit-diagonal matrices from their strict upper triangles (row-major)."""
    v = np.asarray(v, dtype=np.float64)
    rows, cols = np.triu_indices(d, 1)
    c = np.broadcast_to(np.eye(d), v.shape[:-1] + (d, d)).copy()
    c[..., rows, cols] = v
    c[..., cols, rows] = v
    return c


def _random_corr(d, n, rng, df=2):
    """``n`` random d x d correlation matrices (normalized Wishart draws)."""
    a = rng.normal(size=(n, d, d + df))
    s = a @ np.swapaxes(a, -1, -2)
    sd = np.sqrt(np.diagonal(s, axis1=-2, axis2=-1))
    return s / (sd[..., :, None] * sd[..., None, :])


def _rounded(a, dtype):
    """``a`` rounded to ``dtype``, as float64 in C order (``conftest.fd_grad`` perturbs its
    argument through a reshape, which copies an F-ordered array)."""
    return np.ascontiguousarray(np.asarray(a).astype(dtype).astype(np.float64))


# =========================================================================== the normalizer
@pytest.mark.parametrize("eta", [0.5, 1.0, 2.7])
def test_d2_density_is_a_scaled_beta(eta, backend, dtype):
    """d = 2: r = C_01 has density Beta(eta, eta)((r + 1) / 2) / 2."""
    r = np.array([-0.95, -0.4, 0.0, 0.3, 0.99])
    beta_ref = st.beta(eta, eta).logpdf((r + 1.0) / 2.0) - np.log(2.0)
    np.testing.assert_allclose(_ref_log_prob(_corr_from_upper(r[:, None], 2), eta), beta_ref,
                               rtol=1e-12, atol=1e-12)
    c = _corr_from_upper(_rounded(r, dtype)[:, None], 2)
    got = to_numpy(LKJ(2, eta).log_prob(ops.asarray(c)))
    ref = st.beta(eta, eta).logpdf((_rounded(r, dtype) + 1.0) / 2.0) - np.log(2.0)
    rtol, atol = _tol(dtype)
    np.testing.assert_allclose(got, ref, rtol=rtol * 10, atol=atol * 10)


def test_d3_reference_normalizer_by_quadrature():
    """The reference Z(3, eta) against tplquad over the elliptope (for fixed r01, r02 the
    positive-definite r12 form an interval), and Z(3, 1) = pi^2 / 2, its volume."""
    assert np.isclose(np.exp(_ref_log_z(3, 1.0)), np.pi ** 2 / 2, rtol=1e-12)
    eta = 2.5

    def det_power(r12, r02, r01):
        det = 1.0 - r01 ** 2 - r02 ** 2 - r12 ** 2 + 2.0 * r01 * r02 * r12
        return max(det, 0.0) ** (eta - 1.0)

    def half(r01, r02):      # det = half^2 - (r12 - r01 r02)^2
        return np.sqrt((1 - r01 ** 2) * (1 - r02 ** 2))

    val, _ = integrate.tplquad(det_power, -1, 1, -1, 1,
                               lambda a, b: a * b - half(a, b), lambda a, b: a * b + half(a, b),
                               epsabs=1e-9, epsrel=1e-9)
    assert abs(np.log(val) - _ref_log_z(3, eta)) < 1e-7, (val, np.exp(_ref_log_z(3, eta)))


@pytest.mark.backends("numpy")          # a check of the normalizer: one backend suffices
@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("eta", [0.8, 2.5])
def test_d3_density_integrates_to_one(eta, backend):
    """Monte Carlo over the cube [-1, 1]^3 of the three correlations: 8 E[p(C)] = 1, with
    ppl's log_prob (-inf where C is not positive definite) and with the reference (masked by
    the eigenvalues); within 5 standard errors (about 1.5 %)."""
    n = 300_000
    r = np.random.default_rng(7).uniform(-1.0, 1.0, size=(n, 3))
    c = _corr_from_upper(r, 3)
    pd = np.all(np.linalg.eigvalsh(c) > 0.0, axis=-1)
    lp = to_numpy(LKJ(3, eta).log_prob(ops.asarray(c)))
    assert np.all(np.isneginf(lp[~pd])) and np.all(np.isfinite(lp[pd]))
    np.testing.assert_allclose(lp[pd], _ref_log_prob(c[pd], eta), rtol=1e-9, atol=1e-9)
    w = 8.0 * np.exp(lp)
    se = w.std() / np.sqrt(n)
    assert se < 0.003 and abs(w.mean() - 1.0) < 5.0 * se, (w.mean(), se)


# =============================================================================== log_prob
def test_log_prob_and_grad(backend, dtype):
    """d = 4 (d = 2 is checked above on every backend, d = 3 by the Monte Carlo integral on
    numpy and through NUTS below on every backend)."""
    d = 4
    rng = np.random.default_rng(d)
    eta = _rounded([0.6, 1.0, 3.2], dtype)
    c = _random_corr(d, 3, rng)
    rows, cols = np.triu_indices(d, 1)
    v = _rounded(c[:, rows, cols], dtype)
    c = _corr_from_upper(v, d)
    dd = LKJ(d, ops.asarray(eta))
    assert dd.batch_shape == (3,) and dd.event_shape == (d, d)
    assert dd.support is constraints.corr_matrix and not dd.has_rsample
    rtol, atol = _tol(dtype)
    np.testing.assert_allclose(to_numpy(dd.log_prob(ops.asarray(c))), _ref_log_prob(c, eta),
                               rtol=rtol * 10, atol=atol * 10)
    # every batch entry on every matrix (the value broadcasts against the batch)
    both = to_numpy(dd.log_prob(ops.asarray(c[:, None])))
    np.testing.assert_allclose(both, _ref_log_prob(c[:, None], eta), rtol=rtol * 10,
                               atol=atol * 10)

    # gradients wrt concentration and the free correlations (C built symmetric from them)
    basis = np.zeros((len(rows), d, d))
    basis[np.arange(len(rows)), rows, cols] = basis[np.arange(len(rows)), cols, rows] = 1.0

    def f(p):
        mats = ops.eye(d) + ops.einsum("bk,kij->bij", p["v"], ops.asarray(basis))
        return ops.sum(LKJ(d, p["eta"]).log_prob(mats))

    grads = ops.grad(f)({"eta": ops.asarray(eta), "v": ops.asarray(v)})
    refs = {"eta": fd_grad(lambda e: _ref_log_prob(c, e).sum(), eta),
            "v": fd_grad(lambda w: _ref_log_prob(_corr_from_upper(w, d), eta).sum(), v)}
    rtol, atol = _tol(dtype, grad=True)
    for name, ref in refs.items():
        np.testing.assert_allclose(to_numpy(grads[name]), ref, rtol=rtol,
                                   atol=atol * max(1.0, np.abs(ref).max()), err_msg=name)


# ================================================================================== draws
def _check_draws(d):
    """Every correlation of the draws: (r + 1) / 2 ~ Beta(eta - 1 + d/2, eta - 1 + d/2); the
    draws are exactly symmetric with an exact unit diagonal, inside corr_matrix."""
    dtype = ppl.get_backend().dtype
    n = 3000
    eta = np.array([0.7, 3.0])
    dd = LKJ(d, ops.asarray(eta))
    x = dd.sample(ppl.random.key(0), (n,))
    assert tuple(ops.shape(x)) == (n, 2, d, d) and ops.dtype_of(x) == dtype
    assert np.all(to_numpy(constraints.corr_matrix.check(x)))
    assert np.all(np.isfinite(to_numpy(dd.log_prob(x))))
    c = to_numpy(x)
    np.testing.assert_array_equal(c, np.swapaxes(c, -1, -2))
    np.testing.assert_array_equal(np.diagonal(c, axis1=-2, axis2=-1), 1.0)
    c = c.astype(np.float64)
    rows, cols = np.triu_indices(d, 1)
    for j, e in enumerate(eta):
        b = e - 1.0 + d / 2.0
        marginal = st.beta(b, b)
        for a, k in zip(rows, cols):
            p = st.kstest((c[:, j, a, k] + 1.0) / 2.0, marginal.cdf).pvalue
            assert p > 1e-4, f"eta={e}, C[{a},{k}]: KS p-value {p:.2e}"
    # the moments the family states: mean I, variance 1 / (2 eta - 1 + d) off the diagonal
    var = (1.0 - np.eye(d)) / (2.0 * eta[:, None, None] - 1.0 + d)
    np.testing.assert_allclose(to_numpy(dd.mean), np.broadcast_to(np.eye(d), (2, d, d)))
    np.testing.assert_allclose(to_numpy(dd.variance), var, rtol=1e-6)
    beta_var = np.array([4.0 * st.beta(e - 1 + d / 2, e - 1 + d / 2).var() for e in eta])
    np.testing.assert_allclose(var[:, 0, 1], beta_var, rtol=1e-12)


def test_draws_d4(backend):
    _check_draws(4)


@pytest.mark.dtypes("float64")        # JAX compiles its Beta sampler per shape and dtype (~5 s)
def test_draws_d3(backend):
    _check_draws(3)


# ============================================================================== transforms
def _cpc_corr(u, d):
    """Stan's map from unconstrained reals to a correlation matrix (NumPy, float64): tanh gives
    canonical partial correlations z (row-major strict lower triangle), L_ij = z_ij times the
    remaining length of row i, L_ii the rest; C = L L^T."""
    z = np.tanh(np.asarray(u, dtype=np.float64))
    l = np.zeros((d, d))
    l[0, 0] = 1.0
    pos = 0
    for i in range(1, d):
        left = 1.0
        for j in range(i):
            l[i, j] = z[pos] * np.sqrt(left)
            left -= l[i, j] ** 2
            pos += 1
        l[i, i] = np.sqrt(left)
    return l @ l.T


def _fd_log_det(fn, x):
    """log|det| of the central finite-difference Jacobian of ``fn`` (vector -> vector) at x."""
    h = 1e-6
    jac = np.stack([(fn(x + h * e) - fn(x - h * e)) / (2.0 * h) for e in np.eye(len(x))], 1)
    return np.linalg.slogdet(jac)[1]


@pytest.mark.parametrize("d", [2, 4])
def test_biject_to_corr_matrix(d, backend, dtype):
    """biject_to(corr_matrix): reals (d(d-1)/2) -> correlation matrices, against Stan's
    construction, with log_abs_det_jacobian against finite differences of the map onto the
    strict upper triangle of C; the inverse recovers the reals."""
    m = d * (d - 1) // 2
    rows, cols = np.triu_indices(d, 1)
    t = biject_to(constraints.corr_matrix)
    assert t.codomain is constraints.corr_matrix and t.domain.event_dim == 1
    assert t.inverse_shape((5, d, d)) == (5, m) and t.forward_shape((5, m)) == (5, d, d)
    u = _rounded(np.random.default_rng(d).normal(size=(3, m)) * 1.2, dtype)
    y = t(ops.asarray(u))
    ref_c = np.stack([_cpc_corr(ui, d) for ui in u])
    rtol, atol = _tol(dtype)
    np.testing.assert_allclose(to_numpy(y), ref_c, rtol=rtol * 10, atol=atol * 10)
    assert np.all(to_numpy(constraints.corr_matrix.check(y)))
    ref_ld = np.array([_fd_log_det(lambda w: _cpc_corr(w, d)[rows, cols], ui) for ui in u])
    ld = to_numpy(t.log_abs_det_jacobian(ops.asarray(u), y))
    assert ld.shape == (3,)
    np.testing.assert_allclose(ld, ref_ld, rtol=1e-6 if dtype == "float64" else 1e-3,
                               atol=1e-6 if dtype == "float64" else 1e-3)
    back = to_numpy(t.inv(y))
    np.testing.assert_allclose(back, u, rtol=1e-6 if dtype == "float64" else 1e-3,
                               atol=1e-6 if dtype == "float64" else 1e-3)


@pytest.mark.parametrize("d", [2, 5])
def test_corr_matrix_cholesky_transform(d, backend, dtype):
    """C -> L is numpy's Cholesky factor; L -> L L^T is exactly symmetric with a unit
    diagonal; the forward log-Jacobian is minus log|det dC/dL| on the strict lower triangles
    (finite differences of L -> C, each row of L closed with its positive diagonal)."""
    rng = np.random.default_rng(10 + d)
    upper = np.triu_indices(d, 1)
    c = _random_corr(d, 3, rng)
    c = _corr_from_upper(_rounded(c[:, upper[0], upper[1]], dtype), d)
    t = CorrMatrixCholeskyTransform()
    assert t.domain is constraints.corr_matrix and t.codomain is constraints.corr_cholesky
    l = t(ops.asarray(c))
    ref_l = np.linalg.cholesky(c)
    rtol, atol = _tol(dtype)
    np.testing.assert_allclose(to_numpy(l), ref_l, rtol=rtol * 10, atol=atol * 10)
    back = to_numpy(t.inv(l))
    np.testing.assert_array_equal(back, np.swapaxes(back, -1, -2))
    np.testing.assert_array_equal(np.diagonal(back, axis1=-2, axis2=-1), 1.0)
    np.testing.assert_allclose(back, c, rtol=rtol * 10, atol=atol * 10)

    rows, cols = np.tril_indices(d, -1)

    def c_of(w):
        lw = np.zeros((d, d))
        lw[rows, cols] = w
        lw[np.diag_indices(d)] = np.sqrt(1.0 - np.sum(lw ** 2, axis=-1))
        return (lw @ lw.T)[rows, cols]

    ref = np.array([-_fd_log_det(c_of, li[rows, cols]) for li in ref_l])
    ld = to_numpy(t.log_abs_det_jacobian(ops.asarray(c), l))
    np.testing.assert_allclose(ld, ref, rtol=1e-6 if dtype == "float64" else 1e-4,
                               atol=1e-6 if dtype == "float64" else 1e-4)
    np.testing.assert_allclose(to_numpy(t.inv.log_abs_det_jacobian(l, ops.asarray(c))), -ref,
                               rtol=1e-6 if dtype == "float64" else 1e-4,
                               atol=1e-6 if dtype == "float64" else 1e-4)


# ===================================================================== shapes and bad input
@pytest.mark.dtypes("float64")
def test_shapes(backend):
    eta = ops.asarray(np.array([[0.5], [1.0], [4.0]]))
    dd = LKJ(3, eta)
    assert dd.batch_shape == (3, 1) and dd.event_shape == (3, 3)
    x = dd.sample(ppl.random.key(1), (2,))
    assert tuple(ops.shape(x)) == (2, 3, 1, 3, 3)
    assert tuple(ops.shape(dd.log_prob(x))) == (2, 3, 1)
    assert tuple(ops.shape(dd.log_prob(ops.eye(3)))) == (3, 1)
    assert tuple(ops.shape(dd.mean)) == (3, 1, 3, 3)
    assert tuple(ops.shape(dd.variance)) == (3, 1, 3, 3)
    e = dd.expand((3, 2))
    assert e.batch_shape == (3, 2) and tuple(ops.shape(e.log_prob(x[:, :, :1]))) == (2, 3, 2)
    assert LKJ(4).batch_shape == () and LKJ(4).event_shape == (4, 4)
    assert LKJ(2, 1.5, sample_method="onion", validate_args=True).sample_method == "onion"


@pytest.mark.dtypes("float64")
def test_bad_arguments(backend):
    for dim in (1, 0, -2, 3.0, True, "3", None):
        with pytest.raises(ValueError, match=r"LKJ: dimension must be an int >= 2"):
            LKJ(dim)
    for eta in (0.0, -1.0, ops.asarray([1.0, -0.5])):
        with pytest.raises(ValueError, match="LKJ: parameter 'concentration'"):
            LKJ(3, eta, validate_args=True)
    with pytest.raises(ValueError, match=r"sample_method must be one of \('onion',\).*'cvine'"):
        LKJ(3, sample_method="cvine")
    assert LKJ(3, 1.0, "onion").sample_method == "onion"   # positional, as NumPyro's
    with pytest.raises(TypeError):
        LKJ(3, 1.0, "onion", None)           # validate_args is keyword-only
    with pytest.raises(TypeError, match="unexpected keyword argument 'eta'"):
        LKJ(3, eta=2.0)
    for shape in [(3,), (1, 1), (2, 2), (3, 1), (4, 3, 3)]:
        with pytest.raises(ValueError, match=r"LKJ.log_prob|does not broadcast"):
            LKJ(3, ops.ones(2)).log_prob(ops.ones(shape))
    checked = LKJ(2, validate_args=True)
    for bad in ([[1.0, 0.3], [0.2, 1.0]], [[1.0, 0.3], [0.3, 0.9]], [[1.0, 1.5], [1.5, 1.0]]):
        with pytest.raises(ValueError, match="outside the support corr_matrix"):
            checked.log_prob(ops.asarray(np.array(bad)))
    # unchecked, a symmetric matrix that is not positive definite has density 0
    lp = LKJ(3, 2.0).log_prob(ops.asarray(np.array([[1.0, 2.0, 2.0], [2.0, 1.0, 2.0],
                                                     [2.0, 2.0, 1.0]])))
    assert np.isneginf(float(to_numpy(lp)))


# =================================================================================== NUTS
def lkj_model():
    ppl.sample("C", LKJ(3, 2.0))


@pytest.mark.filterwarnings("ignore::ppl.inference.run_warnings.SamplingWarning")  # R-hat, 2 x 300
@pytest.mark.dtypes("float64")
def test_nuts_samples_the_prior(backend):
    """NUTS on the LKJ(3, 2) site alone, through biject_to(corr_matrix): each correlation's
    mean (0) and sd (that of 2 Beta(2.5, 2.5) - 1, i.e. 1 / sqrt(6)) within 5 MCSE."""
    d, eta = 3, 2.0
    b = eta - 1.0 + d / 2.0
    sd_true = 2.0 * np.sqrt(b * b / ((2 * b) ** 2 * (2 * b + 1)))
    mcmc = MCMC(NUTS(lkj_model), num_warmup=300, num_samples=300, num_chains=2,
                progress_bar=False)
    mcmc.run(0)
    c = to_numpy(mcmc.get_samples(group_by_chain=True)["C"])
    assert c.shape == (2, 300, d, d)
    np.testing.assert_allclose(np.diagonal(c, axis1=-2, axis2=-1), 1.0, atol=1e-12)
    rows, cols = np.triu_indices(d, 1)
    r = c[..., rows, cols]                                           # (2, 300, 3)
    err, se = np.abs(r.mean((0, 1))), mcse(r)
    assert np.all(err <= 5.0 * se), (r.mean((0, 1)), se)
    sd, se_sd = r.reshape(-1, len(rows)).std(0, ddof=1), mcse(r, method="sd")
    assert np.all(np.abs(sd - sd_true) <= 5.0 * se_sd), (sd, sd_true, se_sd)
    assert int(np.sum(to_numpy(mcmc.get_extra_fields()["diverging"]))) == 0
