"""Wishart and WishartCholesky (``distributions/wishart.py``), NumPyro's families, against
independent references on every backend and float dtype (the ``backend`` fixture of
``tests/conftest.py``).

References:

* ``scipy.stats.wishart.logpdf`` for Wishart (each of ``scale_matrix``, ``rate_matrix`` and
  ``scale_tril``; p = 1..3; batches from the concentration, the matrix and the value), and the
  same plus ``log|det d(L L^T)/dL| = p log 2 + sum_i (p - i) log L_ii`` (0-indexed) for
  WishartCholesky; that Jacobian itself against the central finite-difference Jacobian of
  ``L -> L L^T`` on the lower triangles, in NumPy;
* gradients in the concentration, the matrix parameter and the value: central finite
  differences of the SciPy reference (``conftest.fd_grad``);
* draws: means and variances (``n S`` and ``n (S_ij^2 + S_ii S_jj)``, also as
  ``scipy.stats.wishart.mean``/``var``) within 6 standard errors; Kolmogorov-Smirnov of
  ``W_ii / S_ii ~ Chi2(n)`` and ``L_00 / A_00 ~ Chi(n)`` at alpha = 1e-4 on a fixed key; the
  Cholesky factor's moments from ``scipy.stats.chi``; entropy against
  ``scipy.stats.wishart.entropy``;
* reparameterized draws: the gradient of ``sum(M * W)`` in ``scale_tril`` against the exact
  ``(M + M^T) A C`` (``C = B B^T`` recovered from the draw), and in the concentration against
  the implicit-reparameterization derivative of each chi-square draw (SciPy's ``gammainc``);
* NUTS on the conjugate model ``Lambda ~ Wishart(nu, V)``, ``x_i ~ MVN(0, Lambda^{-1})``,
  whose posterior is ``Wishart(nu + N, (V^{-1} + sum x x^T)^{-1})``: posterior means within
  5 MCSE, sds within 25 %.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.stats as st
from conftest import fd_grad, to_numpy
from scipy.special import gammainc

import ppl
from ppl import ops
from ppl.diagnostics import mcse
from ppl.distributions import constraints
from ppl.distributions.multivariate import MultivariateNormal
from ppl.distributions.wishart import Wishart, WishartCholesky
from ppl.inference import MCMC, NUTS


def _tol(dtype, grad=False):
    if dtype == "float64":
        return (1e-6, 1e-7) if grad else (1e-9, 1e-9)
    return (3e-3, 3e-3) if grad else (3e-5, 3e-4)


def _rounded(a, dtype):
    """``a`` as the backend holds it in ``dtype``, back in float64 (C order for fd_grad)."""
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64).astype(dtype).astype(np.float64))


def _spd(p, rng, batch=()):
    """Random well-conditioned p x p positive-definite matrices."""
    a = rng.normal(size=batch + (p, p + 3))
    return a @ np.swapaxes(a, -1, -2) / (p + 3) + 0.3 * np.eye(p)


# ================================================================================ reference
def _ref_logpdf(w, n, s):
    """``scipy.stats.wishart.logpdf`` of matrices ``w`` over the broadcast batch of ``w``'s
    leading dims, ``n`` and ``s``'s leading dims."""
    w, n, s = (np.asarray(v, dtype=np.float64) for v in (w, n, s))
    out_shape = np.broadcast_shapes(w.shape[:-2], n.shape, s.shape[:-2])
    w = np.broadcast_to(w, out_shape + w.shape[-2:])
    n = np.broadcast_to(n, out_shape)
    s = np.broadcast_to(s, out_shape + s.shape[-2:])
    out = np.empty(out_shape)
    for idx in np.ndindex(*out_shape):
        out[idx] = st.wishart(df=n[idx], scale=s[idx]).logpdf(w[idx])
    return out


def _ref_log_jacobian(l):
    """``log|det d(L L^T)/dL|`` on the lower triangles: ``p log 2 + sum_i (p - i) log L_ii``."""
    p = l.shape[-1]
    diag = np.diagonal(l, axis1=-2, axis2=-1)
    return p * np.log(2.0) + np.sum(np.arange(p, 0, -1) * np.log(diag), axis=-1)


def _ref_chol_logpdf(l, n, s):
    """The density of the Cholesky factor: Wishart of ``L L^T`` plus the Jacobian."""
    l = np.asarray(l, dtype=np.float64)
    return _ref_logpdf(l @ np.swapaxes(l, -1, -2), n, s) + _ref_log_jacobian(l)


@pytest.mark.parametrize("p", [1, 2, 4])
def test_reference_jacobian_by_finite_differences(p):
    """The Jacobian of L -> L L^T on the lower triangles (p(p+1)/2 coordinates each side),
    by central differences in NumPy, against the closed form used in the reference."""
    rows, cols = np.tril_indices(p)
    rng = np.random.default_rng(p)
    for _ in range(3):
        l = np.tril(rng.normal(size=(p, p)))
        l[np.diag_indices(p)] = rng.uniform(0.3, 2.0, size=p)

        def fwd(v):
            m = np.zeros((p, p))
            m[rows, cols] = v
            return (m @ m.T)[rows, cols]

        v0, h = l[rows, cols], 1e-6
        jac = np.stack([(fwd(v0 + h * e) - fwd(v0 - h * e)) / (2 * h)
                        for e in np.eye(len(v0))], axis=1)
        assert abs(np.linalg.slogdet(jac)[1] - _ref_log_jacobian(l)) < 1e-7


# =============================================================================== log_prob
# (p, concentration, batch of the matrix, parametrization, batch of the value)
_CASES = [
    (1, 0.7, (), "scale_matrix", (3,)),
    (2, [1.5, 6.0], (), "rate_matrix", (4, 1)),
    (3, [[2.5], [9.0]], (3,), "scale_tril", (2, 1, 1)),
]


def _case_values(p, conc, mat_batch, value_batch, dtype):
    rng = np.random.default_rng(10 * p + len(value_batch))
    s = _rounded(_spd(p, rng, mat_batch), dtype)
    n = _rounded(conc, dtype)
    w = _spd(p, rng, value_batch) * np.sqrt(float(np.max(n)))
    return n, s, _rounded(w, dtype)


def _matrix_arg(param, s, dtype):
    """The parametrization's matrix for the scale matrix ``s``, rounded as the backend holds
    it, and the scale matrix the reference sees (computed from the rounded matrix)."""
    if param == "scale_matrix":
        return s, s
    if param == "rate_matrix":
        r = _rounded(np.linalg.inv(s), dtype)
        return r, np.linalg.inv(r)
    a = _rounded(np.linalg.cholesky(s), dtype)
    return a, a @ np.swapaxes(a, -1, -2)


def test_log_prob_against_scipy(backend, dtype):
    """Both families on every case of ``_CASES`` (p = 1..3, each parametrization, batches from
    the concentration, the matrix and the value), run eagerly (compiling them cost
    TensorFlow and torch ~20x more than running them; JAX pays for its eager op compiles)."""
    params, args, refs = [], [], []
    for p, conc, mat_batch, param, value_batch in _CASES:
        n, s, w = _case_values(p, conc, mat_batch, value_batch, dtype)
        m, s_ref = _matrix_arg(param, s, dtype)
        l = _rounded(np.linalg.cholesky(w), dtype)
        for cls in (Wishart, WishartCholesky):
            d = cls(ops.asarray(n), **{param: ops.asarray(m)})
            assert d.batch_shape == np.broadcast_shapes(np.shape(n), mat_batch)
            assert d.event_shape == (p, p) and d.has_rsample and not d.is_discrete
        assert Wishart(ops.asarray(n), **{param: ops.asarray(m)}).support is \
            constraints.positive_definite
        assert WishartCholesky(ops.asarray(n), **{param: ops.asarray(m)}).support is \
            constraints.lower_cholesky
        params.append(param)
        args.append([ops.asarray(v) for v in (n, m, w, l)])
        refs += [_ref_logpdf(w, n, s_ref), _ref_chol_logpdf(l, n, s_ref)]

    def all_log_probs(args):
        out = []
        for param, (n, m, w, l) in zip(params, args):
            out += [Wishart(n, **{param: m}).log_prob(w),
                    WishartCholesky(n, **{param: m}).log_prob(l)]
        return out

    rtol, atol = _tol(dtype)
    for i, (got, ref) in enumerate(zip(to_numpy(all_log_probs(args)), refs)):
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol * max(1.0, np.abs(ref).max()),
                                   err_msg=f"case {_CASES[i // 2]}, {('Wishart', 'Chol')[i % 2]}")


_P = 3
_ROWS, _COLS = np.tril_indices(_P)
_BASIS = np.zeros((len(_ROWS), _P, _P))
_BASIS[np.arange(len(_ROWS)), _ROWS, _COLS] = 1.0
#: symmetric matrices from their lower triangles
_SYM_BASIS = _BASIS + np.swapaxes(_BASIS, -1, -2) * (_ROWS != _COLS)[:, None, None]
_PARAMS = ("scale_tril", "scale_matrix", "rate_matrix")
_TO_SCALE = {"scale_tril": lambda a: a @ np.swapaxes(a, -1, -2),
             "scale_matrix": lambda a: a, "rate_matrix": np.linalg.inv}


def _mat(v, basis):
    return np.einsum("bk,kij->bij", v, basis)


def _grad_ref_total(n, coords):
    """The SciPy log-densities summed over both families and the three parametrizations, as
    a function of the concentration and the lower-triangle coordinates ``coords``."""
    total = 0.0
    w, l = _mat(coords["w"], _SYM_BASIS), _mat(coords["l"], _BASIS)
    for param in _PARAMS:
        s = _TO_SCALE[param](_mat(coords[param], _BASIS if param == "scale_tril" else _SYM_BASIS))
        total += _ref_logpdf(w, n, s).sum() + _ref_chol_logpdf(l, n, s).sum()
    return total


@functools.lru_cache(maxsize=2)
def _grad_refs(dtype):
    n, s, w = _case_values(_P, [3.5, 7.0], (2,), (2,), dtype)
    coords = {param: _matrix_arg(param, s, dtype)[0][..., _ROWS, _COLS] for param in _PARAMS}
    coords["w"] = w[..., _ROWS, _COLS]
    coords["l"] = _rounded(np.linalg.cholesky(w), dtype)[..., _ROWS, _COLS]
    refs = {"n": fd_grad(lambda v: _grad_ref_total(v, coords), n)}
    for k in coords:
        refs[k] = fd_grad(lambda v, k=k: _grad_ref_total(n, coords | {k: v}), coords[k])
    return n, coords, refs


def test_log_prob_grad(backend, dtype):
    """Gradients of both families' log_prob in the concentration, each parametrization's
    matrix (the lower triangle of scale_tril; symmetric perturbations of the others) and the
    value (symmetric for Wishart, lower-triangular for WishartCholesky), against central
    differences of the SciPy reference, in lower-triangle coordinates."""
    n, coords, refs = _grad_refs(dtype)

    def f(q):
        def mat(v, basis):
            return ops.einsum("bk,kij->bij", v, ops.asarray(basis))

        w, l = mat(q["w"], _SYM_BASIS), mat(q["l"], _BASIS)
        total = 0.0
        for param in _PARAMS:
            m = mat(q[param], _BASIS if param == "scale_tril" else _SYM_BASIS)
            total = (total + ops.sum(Wishart(q["n"], **{param: m}).log_prob(w))
                     + ops.sum(WishartCholesky(q["n"], **{param: m}).log_prob(l)))
        return total

    args = {"n": n} | coords
    grads = to_numpy(ops.grad(f)({k: ops.asarray(v) for k, v in args.items()}))
    rtol, atol = _tol(dtype, grad=True)
    for k, r in refs.items():
        np.testing.assert_allclose(grads[k], r, rtol=rtol, atol=atol * max(1.0, np.abs(r).max()),
                                   err_msg=k)

# ================================================================================== draws
_S3 = np.array([[2.0, 0.6, -0.4], [0.6, 1.0, 0.3], [-0.4, 0.3, 0.8]])
_N = np.array([4.5, 7.5])          # batch (2,)


def _draws_in_support(d, seed, num, dtype):
    """``num`` draws of ``d`` (batch (2,), 3 x 3 events) as float64 NumPy, after checking their
    shape, dtype, that they lie in ``d.support`` and have a finite log density."""
    x = d.sample(ppl.random.key(seed), (num,))
    assert tuple(ops.shape(x)) == (num, 2, 3, 3) and ops.dtype_of(x) == dtype
    assert np.all(to_numpy(d.support.check(x)))
    assert np.all(np.isfinite(to_numpy(d.log_prob(x))))
    return to_numpy(x).astype(np.float64)


def test_wishart_draws(backend, dtype):
    """Means and variances within 6 standard errors of n S and n (S_ij^2 + S_ii S_jj) (and the
    family's own moments against those and SciPy's); KS of W_ii / S_ii ~ Chi2(n); every draw
    positive definite with a finite log density; entropy against SciPy."""
    num = 4000
    d = Wishart(ops.asarray(_N), scale_matrix=ops.asarray(_S3))
    w = _draws_in_support(d, 0, num, dtype)
    np.testing.assert_array_equal(w, np.swapaxes(w, -1, -2))
    mean = _N[:, None, None] * _S3
    diag = np.diag(_S3)
    var = _N[:, None, None] * (_S3 ** 2 + diag[:, None] * diag[None, :])
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(to_numpy(d.mean), mean, rtol=rtol)
    np.testing.assert_allclose(to_numpy(d.variance), var, rtol=rtol)
    for j, n in enumerate(_N):
        np.testing.assert_allclose(st.wishart(n, _S3).mean(), mean[j], rtol=1e-12)
        np.testing.assert_allclose(st.wishart(n, _S3).var(), var[j], rtol=1e-12)
        np.testing.assert_allclose(float(to_numpy(d.entropy())[j]),
                                   st.wishart(n, _S3).entropy(), rtol=rtol, atol=rtol)
    se_mean = w.std(0) / np.sqrt(num)
    assert np.all(np.abs(w.mean(0) - mean) <= 6 * se_mean), (w.mean(0), mean)
    dev2 = (w - w.mean(0)) ** 2
    se_var = dev2.std(0) / np.sqrt(num)
    assert np.all(np.abs(dev2.mean(0) - var) <= 6 * se_var), (dev2.mean(0), var)
    for j, n in enumerate(_N):
        for i in range(3):
            pval = st.kstest(w[:, j, i, i] / _S3[i, i], st.chi2(n).cdf).pvalue
            assert pval > 1e-4, (n, i, pval)


def test_wishart_cholesky_draws(backend, dtype):
    """The factor's mean and variance (the family's, NumPyro's meaning) against
    scipy.stats.chi moments of the Bartlett diagonal; draws within 6 standard errors; KS of
    L_00 / A_00 ~ Chi(n); every draw lower triangular with a positive diagonal."""
    num = 4000
    a = np.linalg.cholesky(_S3)
    d = WishartCholesky(ops.asarray(_N), scale_tril=ops.asarray(a))
    l = _draws_in_support(d, 1, num, dtype)
    k = _N[:, None] - np.arange(3)                               # (2, 3)
    eb = st.chi(k).mean()
    eb2 = np.tril(np.ones((3, 3)), -1) + k[:, None, :] * np.eye(3)   # E[B_kj^2], (2, k, j)
    mean = a * eb[:, None, :]
    var = np.einsum("ik,bkj->bij", a ** 2, eb2) - mean ** 2
    rtol, atol = (2e-5, 2e-6) if dtype == "float32" else (1e-10, 1e-12)
    np.testing.assert_allclose(to_numpy(d.mean), mean, rtol=rtol, atol=atol)
    np.testing.assert_allclose(to_numpy(d.variance), var, rtol=rtol, atol=atol)
    se_mean = l.std(0) / np.sqrt(num)
    assert np.all(np.abs(l.mean(0) - mean) <= 6 * se_mean + 1e-12)
    dev2 = (l - l.mean(0)) ** 2
    assert np.all(np.abs(dev2.mean(0) - var) <= 6 * dev2.std(0) / np.sqrt(num) + 1e-12)
    for j, n in enumerate(_N):
        pval = st.kstest(l[:, j, 0, 0] / a[0, 0], st.chi(n).cdf).pvalue
        assert pval > 1e-4, (n, pval)


def _dgamma_da(a, g):
    """d g / d a of a Gamma(a, 1) draw g at fixed CDF value (implicit reparameterization):
    -(dP/da) / pdf, with dP/da by central differences of scipy's gammainc."""
    h = 1e-6 * a
    dp_da = (gammainc(a + h, g) - gammainc(a - h, g)) / (2 * h)
    return -dp_da / st.gamma(a).pdf(g)


def test_reparameterized_draws(backend, dtype):
    """Gradients of sum(M * W) over draws W: in scale_tril exactly (M + M^T) A C summed over
    draws, with C = B B^T = A^{-1} W A^{-T} from the draws; in the concentration, each draw's
    chi-square diagonals moved by the implicit-reparameterization derivative. (The draws have
    the shape of test_wishart_draws', whose sampler JAX has compiled already.)"""
    num, p = 4000, 3
    a = _rounded(np.linalg.cholesky(_S3), dtype)
    n = _rounded(_N, dtype)
    mw = np.arange(1.0, 10.0).reshape(3, 3) / 10.0
    key = ppl.random.key(3)

    def f(q):
        w = Wishart(q["n"], scale_tril=q["a"]).sample(key, (num,))
        return ops.sum(w * ops.asarray(mw))

    grads = to_numpy(ops.grad(f)({"n": ops.asarray(n), "a": ops.asarray(a)}))
    w = to_numpy(Wishart(ops.asarray(n), scale_tril=ops.asarray(a)).sample(key, (num,)))
    w = w.astype(np.float64)
    b = np.linalg.solve(a, np.linalg.cholesky(w))                 # the Bartlett factors
    c = b @ np.swapaxes(b, -1, -2)
    ref_a = np.sum((mw + mw.T) @ a @ c, axis=(0, 1))
    g = np.diagonal(b, axis1=-2, axis2=-1) ** 2 / 2.0             # Gamma((n - i) / 2) draws
    shape = (n[:, None] - np.arange(p)) / 2.0
    d_diag = 0.5 * _dgamma_da(shape, g) / np.sqrt(2.0 * g)       # d B_ii / d n
    db = d_diag[..., None] * np.eye(p)
    dc = db @ np.swapaxes(b, -1, -2) + b @ np.swapaxes(db, -1, -2)
    ref_n = np.sum(mw * (a @ dc @ a.T), axis=(0, 2, 3))
    tol = 1e-6 if dtype == "float64" else 2e-3
    np.testing.assert_allclose(grads["a"], ref_a, rtol=tol, atol=tol * np.abs(ref_a).max())
    # torch's derivative of a gamma draw in its shape is an approximation (4e-5 here)
    np.testing.assert_allclose(grads["n"], ref_n, rtol=2e-4)
    # just above p - 1 the last chi-square has 0.05 degrees of freedom: float32 draws of it
    # underflow, and are clamped so that every factor keeps a positive diagonal
    near = WishartCholesky(ops.asarray([2.05, 2.5]), scale_tril=ops.asarray(a))
    assert np.all(to_numpy(constraints.lower_cholesky.check(near.sample(key, (num,)))))


# ===================================================================== shapes and bad input
@pytest.mark.dtypes("float64")
def test_shapes_expand_and_parameters(backend):
    """Batch shapes from the concentration (2, 1) and the matrices (3,); the derived
    parameters; expand by leading dims (checked against the unexpanded log_prob) and by an
    interior dim. (Few distinct draw shapes: JAX compiles its gamma sampler for each.)"""
    s = _spd(2, np.random.default_rng(5), (3,))
    conc = ops.asarray(np.array([[3.0], [4.0]]))                   # (2, 1) with (3,): (2, 3)
    for cls in (Wishart, WishartCholesky):
        d = cls(conc, scale_matrix=ops.asarray(s))
        assert d.batch_shape == (2, 3) and d.event_shape == (2, 2)
        x = d.sample(ppl.random.key(0), (4,))
        assert tuple(ops.shape(x)) == (4, 2, 3, 2, 2)
        assert tuple(ops.shape(d.log_prob(x))) == (4, 2, 3)
        assert tuple(ops.shape(d.log_prob(x[0, 0]))) == (2, 3)
        assert tuple(ops.shape(d.mean)) == (2, 3, 2, 2)
        assert tuple(ops.shape(d.variance)) == (2, 3, 2, 2)
        np.testing.assert_allclose(to_numpy(d.scale_matrix), s, rtol=1e-12)
        np.testing.assert_allclose(to_numpy(d.rate_matrix), np.linalg.inv(s), rtol=1e-10)
        np.testing.assert_allclose(to_numpy(d.scale_tril), np.linalg.cholesky(s), rtol=1e-12)
        np.testing.assert_allclose(to_numpy(d.concentration), [[3.0] * 3, [4.0] * 3])
        e = d.expand((4, 2, 3))
        assert e.batch_shape == (4, 2, 3) and e.event_shape == (2, 2)
        xe = e.sample(ppl.random.key(1))
        assert tuple(ops.shape(xe)) == (4, 2, 3, 2, 2)
        np.testing.assert_allclose(to_numpy(e.log_prob(xe)), to_numpy(d.log_prob(xe)))
        assert tuple(ops.shape(e.mean)) == (4, 2, 3, 2, 2)
        e1 = cls(conc, scale_tril=ops.eye(2)).expand((2, 3))       # an interior dim grows
        assert e1.batch_shape == (2, 3) and tuple(ops.shape(e1.log_prob(x))) == (4, 2, 3)


@pytest.mark.dtypes("float64")
def test_bad_arguments(backend):
    eye = ops.eye(3)
    for cls in (Wishart, WishartCholesky):
        name = cls.__name__
        with pytest.raises(ValueError, match=rf"{name}: pass exactly one of scale_matrix="):
            cls(4.0)
        with pytest.raises(ValueError, match=r"exactly one .*got scale_matrix and scale_tril"):
            cls(4.0, scale_matrix=eye, scale_tril=eye)
        with pytest.raises(ValueError, match=rf"{name}: scale_tril must be square"):
            cls(4.0, scale_tril=ops.ones((3, 2)))
        with pytest.raises(ValueError, match=rf"{name}: rate_matrix must have at least 2"):
            cls(4.0, rate_matrix=ops.ones(3))
        for bad in (2.0, 1.0, -1.0, ops.asarray([5.0, 1.5]), float("nan")):
            with pytest.raises(ValueError, match=rf"{name}: concentration .* greater than "
                                                 r"p - 1 = 2"):
                cls(bad, scale_matrix=eye, validate_args=True)
            cls(bad, scale_matrix=eye)     # checked under validate_args only, as other params
        cls(2.01, scale_matrix=eye, validate_args=True)             # just above p - 1
        with pytest.raises(ValueError, match=r"batch shape .* do not broadcast"):
            cls(ops.ones(4) * 5.0, scale_matrix=ops.broadcast_to(eye, (3, 3, 3)))
        with pytest.raises(ValueError, match="parameter 'scale_matrix'"):
            cls(4.0, scale_matrix=ops.asarray(np.diag([1.0, -1.0, 1.0])), validate_args=True)
        with pytest.raises(ValueError, match="parameter 'scale_tril'"):
            cls(4.0, scale_tril=ops.asarray(np.ones((3, 3))), validate_args=True)
        with pytest.raises(TypeError, match="unexpected keyword argument 'df'"):
            cls(df=4.0, scale_matrix=eye)
        with pytest.raises(TypeError):
            cls(4.0, eye, None, None, None)                         # validate_args: keyword
        with pytest.raises(ValueError, match="does not broadcast"):
            cls(4.0, scale_matrix=eye).log_prob(ops.eye(2))
    # off the support: -inf, or an error when validating
    not_pd = ops.asarray(np.array([[1.0, 2.0], [2.0, 1.0]]))
    assert np.isneginf(to_numpy(Wishart(3.0, scale_matrix=ops.eye(2)).log_prob(not_pd)))
    with pytest.raises(ValueError, match="outside the support positive_definite"):
        Wishart(3.0, scale_matrix=ops.eye(2), validate_args=True).log_prob(not_pd)
    for bad in ([[1.0, 0.5], [0.2, 1.0]], [[-1.0, 0.0], [0.2, 1.0]], [[1.0, 0.0], [0.2, 0.0]]):
        lp = WishartCholesky(3.0, scale_matrix=ops.eye(2)).log_prob(ops.asarray(np.array(bad)))
        assert np.isneginf(to_numpy(lp))
        with pytest.raises(ValueError, match="outside the support lower_cholesky"):
            WishartCholesky(3.0, scale_tril=ops.eye(2), validate_args=True).log_prob(
                ops.asarray(np.array(bad)))


# =================================================================================== NUTS
_NU = 4.0
_V = np.array([[1.0, 0.3], [0.3, 0.8]])
_X = np.random.default_rng(11).multivariate_normal(
    np.zeros(2), np.linalg.inv(np.array([[2.0, -0.8], [-0.8, 1.5]])), size=8)


def wishart_model(x):
    lam = ppl.sample("Lambda", Wishart(_NU, scale_matrix=ops.asarray(_V)))
    with ppl.plate("N", x.shape[0]):
        ppl.sample("x", MultivariateNormal(ops.zeros(2), precision_matrix=lam), obs=x)


@pytest.mark.filterwarnings("ignore::ppl.inference.run_warnings.SamplingWarning")  # R-hat, 2 x 300
@pytest.mark.dtypes("float64")
def test_nuts_conjugate_posterior(backend):
    """Lambda ~ Wishart(nu, V), x_i ~ MVN(0, precision Lambda): the posterior is
    Wishart(nu + N, (V^{-1} + X^T X)^{-1}). Two chains of 300 + 300: the posterior means of the
    three free entries within 5 MCSE of (nu + N) V_post, their sds within 25 % of the exact."""
    v_post = np.linalg.inv(np.linalg.inv(_V) + _X.T @ _X)
    nu_post = _NU + len(_X)
    mean = nu_post * v_post
    sd = np.sqrt(nu_post * (v_post ** 2 + np.outer(np.diag(v_post), np.diag(v_post))))
    mcmc = MCMC(NUTS(wishart_model), num_warmup=300, num_samples=300, num_chains=2,
                progress_bar=False)
    mcmc.run(0, ops.asarray(_X))
    lam = to_numpy(mcmc.get_samples(group_by_chain=True)["Lambda"])
    assert lam.shape == (2, 300, 2, 2)
    rows, cols = np.tril_indices(2)
    draws = lam[..., rows, cols]
    err, se = np.abs(draws.mean((0, 1)) - mean[rows, cols]), mcse(draws)
    assert np.all(err <= 5.0 * se), (draws.mean((0, 1)), mean[rows, cols], se)
    sds = draws.reshape(-1, len(rows)).std(0, ddof=1)
    assert np.all(np.abs(sds / sd[rows, cols] - 1.0) <= 0.25), (sds, sd[rows, cols])
    assert int(np.sum(to_numpy(mcmc.get_extra_fields()["diverging"]))) == 0
