"""MultivariateStudentT (``distributions/multivariate_t.py``) and Kumaraswamy
(``distributions/bounded.py``), NumPyro's families, against independent references on every
backend and float dtype (the ``backend`` fixture of ``tests/conftest.py``).

References: ``scipy.stats.multivariate_t.logpdf`` (with the scale matrix ``L L^T``), the
F(n, df) law of the squared Mahalanobis distance over n and the t(df) law of each standardized
marginal; for Kumaraswamy (not in SciPy) its density, CDF, inverse CDF and raw moments
``b B(1 + k/a, b)`` written here in NumPy/SciPy, checked once against ``scipy.integrate.quad``
and against ``scipy.stats.beta`` (Kumaraswamy(1, b) is Beta(1, b), Kumaraswamy(a, 1) is
Beta(a, 1)). Per family: ``log_prob`` and its gradients in the parameters and the value (against
central finite differences of the reference), moments, draws (moments within 6 standard errors,
Kolmogorov-Smirnov at alpha = 1e-4 on a fixed key), reparameterized gradients of draws, shapes
and bad arguments; and one NUTS run of a model holding both priors (no data) against the
analytic moments. Over seeds 0-7 on numpy and 0-2 on the other backends the NUTS means were
within 2.5 MCSE, the sds within 3.2 MCSE (of the sd) and the t draws' correlation within 0.11.

Log-densities and gradients are mostly computed under ``ops.jit``: on JAX one compilation of a
test's function costs less than compiling each eager op for its shapes (draws, the edge cases
and one ``log_prob`` test keep the eager path covered; tracing samplers costs torch more).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.stats as st
from conftest import assert_close, fd_grad, to_numpy
from scipy import integrate
from scipy.special import beta as beta_fn

import ppl
from ppl import ops
from ppl.diagnostics import mcse
from ppl.distributions import constraints
from ppl.distributions.bounded import Kumaraswamy
from ppl.distributions.multivariate_t import MultivariateStudentT
from ppl.inference import MCMC, NUTS


def _rounded(a, dtype):
    """``a`` as the backend holds it in ``dtype``, back in float64 (the reference's input)."""
    return np.asarray(a, dtype=np.float64).astype(dtype).astype(np.float64)


def _compiled(fn, *args):
    """``fn(*args)`` compiled (``ops.jit``; one compilation rather than one per eager op on
    JAX) and in NumPy."""
    return to_numpy(ops.jit(fn)(*args))


def _assert_nuts_moments(draws, mean, sd, what):
    """Means within 5 MCSE and sds within 5 MCSE (of the sd) of the exact ones."""
    err_mean, err_sd = np.abs(draws.mean((0, 1)) - mean), np.abs(draws.std((0, 1)) - sd)
    assert np.all(err_mean <= 5.0 * mcse(draws)), (what, draws.mean((0, 1)), mean, mcse(draws))
    assert np.all(err_sd <= 5.0 * mcse(draws, method="sd")), (what, draws.std((0, 1)), sd)


# ================================================================ multivariate Student's t
_L = np.array([[1.0, 0.0, 0.0], [0.3, 0.8, 0.0], [-0.5, 0.2, 1.5]])
_L_BATCH = np.stack([_L, np.array([[0.7, 0.0, 0.0], [-0.2, 1.3, 0.0], [0.4, 0.1, 0.6]])])
_LOC = np.array([[0.5, -1.0, 2.0], [0.0, 0.3, -0.4]])          # batch (2,)
_DF = np.array([[1.5], [4.0], [30.0]])                          # (3, 1): batch (3, 2)
_TRIL = np.tril_indices(3)


def _mvt_ref_logpdf(x, df, loc, scale_tril):
    """``scipy.stats.multivariate_t.logpdf`` over the broadcast batch; shape
    ``broadcast(x.shape[:-1], batch)``."""
    x, df, loc, scale_tril = (np.asarray(v, dtype=np.float64) for v in (x, df, loc, scale_tril))
    batch = np.broadcast_shapes(df.shape, loc.shape[:-1], scale_tril.shape[:-2])
    df = np.broadcast_to(df, batch)
    loc = np.broadcast_to(loc, batch + loc.shape[-1:])
    scale_tril = np.broadcast_to(scale_tril, batch + scale_tril.shape[-2:])
    out = np.empty(np.broadcast_shapes(x.shape[:-1], batch))
    xb = np.broadcast_to(x, out.shape + x.shape[-1:])
    lead = out.ndim - len(batch)
    for idx in np.ndindex(*batch):
        l = scale_tril[idx]
        ref = st.multivariate_t(loc[idx], l @ l.T, df=df[idx])
        sel = (slice(None),) * lead + idx
        out[sel] = ref.logpdf(xb[sel].reshape(-1, x.shape[-1])).reshape(out[sel].shape)
    return out


def _mvt_values(shape=(4, 3, 2)):
    return np.random.default_rng(0).standard_t(5.0, size=shape + (3,)) * 1.5


@pytest.mark.parametrize("case", ["batched", "shared"])
def test_mvt_log_prob_against_scipy(case, backend, dtype):
    """Eager on a (3, 2) batch from df (3, 1), loc (2, 3) and one L; compiled with NumPyro's
    defaults (a scalar loc) and a batch of scale_tril."""
    if case == "batched":
        df, loc, l, batch = _DF, _LOC, _L, (3, 2)
    else:
        df, loc, l, batch = 3.0, 0.0, _L_BATCH, (2,)
    d = MultivariateStudentT(ops.asarray(df), ops.asarray(loc), scale_tril=ops.asarray(l))
    assert d.batch_shape == batch and d.event_shape == (3,)
    assert d.support is constraints.real_vector and d.has_rsample and not d.is_discrete
    x = _mvt_values((4,) + batch)
    loc_ref = np.zeros(3) if case == "shared" else _rounded(loc, dtype)
    expected = _mvt_ref_logpdf(_rounded(x, dtype), _rounded(df, dtype), loc_ref,
                               _rounded(l, dtype))
    if case == "batched":
        assert_close(d.log_prob(ops.asarray(x)), expected)
    else:
        def lp(df, loc, l, x):
            return MultivariateStudentT(df, loc, scale_tril=l).log_prob(x)

        assert_close(_compiled(lp, *(ops.asarray(a) for a in (df, loc, l, x))), expected)


@functools.lru_cache(maxsize=2)
def _mvt_ref_grads(dtype):
    df, loc, l, x = (_rounded(a, dtype) for a in (_DF, _LOC, _L_BATCH, _mvt_values((2, 3, 2))))

    def total(**kw):
        args = {"x": x, "df": df, "loc": loc, "scale_tril": l} | kw
        return _mvt_ref_logpdf(args["x"], args["df"], args["loc"], args["scale_tril"]).sum()

    return (df, loc, l, x), {
        "df": fd_grad(lambda v: total(df=v), df),
        "loc": fd_grad(lambda v: total(loc=v), loc),
        "scale_tril": fd_grad(lambda v: total(scale_tril=np.tril(v)), l),
        "x": fd_grad(lambda v: total(x=v), x)}


def test_mvt_log_prob_grad(backend, dtype):
    """Gradients in df, loc, the lower triangle of scale_tril (the upper one is not a
    parameter) and the value, against finite differences of SciPy's log-density."""
    (df, loc, l, x), refs = _mvt_ref_grads(dtype)

    def f(p):
        d = MultivariateStudentT(p["df"], p["loc"], scale_tril=p["scale_tril"])
        return ops.sum(d.log_prob(p["x"]))

    params = {"df": df, "loc": loc, "scale_tril": l, "x": x}
    grads = _compiled(ops.grad(f), {k: ops.asarray(v) for k, v in params.items()})
    grads["scale_tril"] = grads["scale_tril"][(slice(None),) + _TRIL]
    refs = dict(refs, scale_tril=refs["scale_tril"][(slice(None),) + _TRIL])
    for name, ref in refs.items():
        assert_close(grads[name], ref, kind="grad", err_msg=name)


def test_mvt_moments_and_properties(backend, dtype):
    df = np.array([0.5, 1.0, 1.5, 2.0, 2.5, 7.0])
    loc = np.array([0.5, -1.0, 2.0])
    d = MultivariateStudentT(ops.asarray(df), ops.asarray(loc), scale_tril=ops.asarray(_L))
    sigma = _L @ _L.T
    with np.errstate(divide="ignore"):
        factor = np.where(df > 2, df / (df - 2), np.where(df > 1, np.inf, np.nan))
    var = factor[:, None] * np.diag(sigma)
    mean = np.where(df[:, None] > 1, loc, np.nan) + np.zeros((6, 3))
    got_mean, got_var = to_numpy(d.mean), to_numpy(d.variance)
    np.testing.assert_array_equal(np.isnan(got_mean), np.isnan(mean))
    np.testing.assert_array_equal(np.isnan(got_var), np.isnan(var))
    np.testing.assert_array_equal(np.isposinf(got_var), np.isposinf(var))
    fin = np.isfinite(var)
    assert_close(got_mean[~np.isnan(mean)], mean[~np.isnan(mean)])
    assert_close(got_var[fin], var[fin])
    # NumPyro's meaning: covariance_matrix is the scale matrix L L^T
    assert_close(d.covariance_matrix, sigma)
    assert_close(d.precision_matrix, np.linalg.inv(sigma), tol=10.0)


def test_mvt_draws(backend, dtype):
    """One (4, 2) batch (df 7, 1.5, 4 and 30; two locs): each member's squared Mahalanobis
    distance over 3 follows F(3, df); at df 7 (finite fourth moments) the means and covariances
    are within 6 standard errors and each standardized marginal follows t(7)."""
    df, n = np.array([[7.0], [1.5], [4.0], [30.0]]), 20_000
    d = MultivariateStudentT(ops.asarray(df), ops.asarray(_LOC), scale_tril=ops.asarray(_L))
    x = to_numpy(d.sample(ppl.random.key(0), (n,))).astype(np.float64)
    assert x.shape == (n, 4, 2, 3) and np.all(np.isfinite(x))
    sigma = _L @ _L.T
    for i, j in np.ndindex(4, 2):
        xi, loc = x[:, i, j], _LOC[j]
        r = np.linalg.solve(_L, (xi - loc).T)
        p = st.kstest((r * r).sum(0) / 3.0, st.f(3, df[i, 0]).cdf).pvalue
        assert p > 1e-4, (df[i, 0], j, p)
        if i:
            continue
        cov = 7.0 / 5.0 * sigma
        assert np.all(np.abs(xi.mean(0) - loc) < 6.0 * np.sqrt(np.diag(cov) / n)), xi.mean(0)
        c = xi - xi.mean(0)
        prods = c[:, :, None] * c[:, None, :]
        se = prods.std(0) / np.sqrt(n)
        assert np.all(np.abs(prods.mean(0) - cov) < 6.0 * se), (prods.mean(0), cov)
        for k in range(3):
            z = (xi[:, k] - loc[k]) / np.sqrt(sigma[k, k])
            assert st.kstest(z, st.t(7.0).cdf).pvalue > 1e-4, (j, k)


def test_mvt_reparameterized_gradients(backend, dtype):
    """d/dtheta of the draws' mean of |x|^2 against d/dtheta of its expectation
    ``df / (df - 2) tr(L L^T) + |loc|^2``, within 6 standard errors: 40 independent copies of
    the parameters (a batch) give 40 independent gradient estimates."""
    groups, m, df = 40, 500, 7.0
    loc = np.array([0.5, -1.0, 2.0])
    params = {"df": np.full(groups, df), "loc": np.tile(loc, (groups, 1)),
              "scale_tril": np.tile(_L, (groups, 1, 1))}

    def f(p):
        d = MultivariateStudentT(p["df"], p["loc"], scale_tril=p["scale_tril"])
        x = d.sample(ppl.random.key(2), (m,))
        return ops.sum(x * x) / m

    grads = _compiled(ops.grad(f), {k: ops.asarray(v) for k, v in params.items()})
    expected = {"df": -2.0 / (df - 2.0) ** 2 * np.sum(_L * _L), "loc": 2.0 * loc,
                "scale_tril": 2.0 * df / (df - 2.0) * _L}
    for name, ref in expected.items():
        g = grads[name].reshape(groups, -1).astype(np.float64)
        se = g.std(0, ddof=1) / np.sqrt(groups)
        ref = np.ravel(ref)
        ok = (se > 0) | (np.abs(ref) < 1e-12)
        assert np.all(np.abs(g.mean(0) - ref)[ok] < 6.0 * se[ok] + 1e-6), (name, g.mean(0), ref)


@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("df_shape, loc_shape, l_shape, batch", [
    ((), (3,), (3, 3), ()),
    ((3, 1), (2, 3), (3, 3), (3, 2)),
    ((), (), (2, 3, 3), (2,)),
    ((), (5, 1, 3), (2, 3, 3), (5, 2)),
])
def test_mvt_shapes(df_shape, loc_shape, l_shape, batch, backend):
    """Batch shapes broadcast from df, loc and scale_tril; the shapes of draws, log_prob,
    moments and of the wrappers (``ops.eval_shape``: JAX compiles nothing)."""
    params = (ops.full(df_shape, 5.0), ops.zeros(loc_shape),
              ops.asarray(np.broadcast_to(_L, l_shape)))
    d = MultivariateStudentT(*params[:2], scale_tril=params[2])
    assert d.batch_shape == batch and d.event_shape == (3,)

    def shapes(key, df, loc, l):
        d = MultivariateStudentT(df, loc, scale_tril=l)
        x = d.sample(key, (2,))
        e = d.expand((4,) + batch)
        ind = d.expand((4,) + batch).to_event(1)
        return {"x": x, "lp": d.log_prob(x), "lp0": d.log_prob(ops.zeros(3)), "mean": d.mean,
                "variance": d.variance, "seven": d.sample(key, 7), "expand": e.sample(key),
                "to_event": ind.log_prob(ind.sample(key, (3,)))}

    out = ops.eval_shape(shapes, ppl.random.key(3), *params)
    expected = {"x": (2,) + batch + (3,), "lp": (2,) + batch, "lp0": batch,
                "mean": batch + (3,), "variance": batch + (3,), "seven": (7,) + batch + (3,),
                "expand": (4,) + batch + (3,), "to_event": (3,) + ((4,) + batch)[:-1]}
    assert {k: tuple(v.shape) for k, v in out.items()} == expected


@pytest.mark.dtypes("float64")
def test_mvt_bad_arguments(backend):
    l = ops.asarray(_L)
    with pytest.raises(ValueError, match="scale_tril is required"):
        MultivariateStudentT(3.0, ops.zeros(3))
    with pytest.raises(ValueError, match="scale_tril must have at least 2 dimension"):
        MultivariateStudentT(3.0, ops.zeros(3), scale_tril=ops.ones(3))
    with pytest.raises(ValueError, match="scale_tril must be square"):
        MultivariateStudentT(3.0, ops.zeros(3), scale_tril=ops.ones((3, 2)))
    with pytest.raises(ValueError, match="loc has size 2 in its last dim but scale_tril is 3 x 3"):
        MultivariateStudentT(3.0, ops.zeros(2), scale_tril=l)
    with pytest.raises(ValueError, match="do not broadcast"):
        MultivariateStudentT(ops.ones(4), ops.zeros(3), scale_tril=ops.asarray(_L_BATCH))
    with pytest.raises(ValueError, match="'df'"):
        MultivariateStudentT(-1.0, ops.zeros(3), scale_tril=l, validate_args=True)
    with pytest.raises(ValueError, match="'scale_tril'"):
        MultivariateStudentT(3.0, ops.zeros(3), scale_tril=ops.asarray(_L.T), validate_args=True)
    with pytest.raises(ValueError, match="'scale_tril'"):
        MultivariateStudentT(3.0, ops.zeros(3), scale_tril=-l, validate_args=True)
    with pytest.raises(ValueError, match="does not broadcast"):
        MultivariateStudentT(3.0, ops.zeros(3), scale_tril=l).log_prob(ops.zeros(4))
    with pytest.raises(TypeError, match="unexpected keyword argument 'covariance_matrix'"):
        MultivariateStudentT(3.0, ops.zeros(3), covariance_matrix=l)
    with pytest.raises(ValueError, match="sample_shape must have non-negative sizes"):
        MultivariateStudentT(3.0, ops.zeros(3), scale_tril=l).sample(ppl.random.key(0), (-1,))


# ============================================================================ Kumaraswamy
_A = np.array([[0.5], [1.0], [2.5]])        # (3, 1): batch (3, 2)
_B = np.array([0.7, 3.0])
_X = np.array([1e-4, 0.05, 0.3, 0.5, 0.8, 0.97, 0.9999])


def _kuma_ref_logpdf(x, a, b):
    return np.log(a) + np.log(b) + (a - 1.0) * np.log(x) + (b - 1.0) * np.log1p(-x ** a)


def _kuma_ref_cdf(x, a, b):
    return -np.expm1(b * np.log1p(-x ** a))


def _kuma_ref_icdf(q, a, b):
    return (-np.expm1(np.log1p(-q) / b)) ** (1.0 / a)


def _kuma_ref_moment(k, a, b):
    return b * beta_fn(1.0 + k / a, b)


def _kuma_ref_mean_var(a, b):
    m1 = _kuma_ref_moment(1.0, a, b)
    return m1, _kuma_ref_moment(2.0, a, b) - m1 * m1


@pytest.mark.parametrize("a, b", [(0.5, 0.7), (2.5, 3.0), (1.0, 4.0), (3.0, 1.0), (7.0, 0.3)])
def test_kuma_reference_against_quadrature(a, b):
    """The NumPy reference itself: the density integrates to 1 and to the CDF, and the raw
    moments; at a = 1 or b = 1 it is a Beta density (scipy.stats.beta)."""
    def pdf(x):
        return np.exp(_kuma_ref_logpdf(x, a, b))

    opts = {"limit": 200, "epsabs": 1e-13, "epsrel": 1e-11}
    assert abs(integrate.quad(pdf, 0.0, 1.0, **opts)[0] - 1.0) < 1e-8
    for x0 in (0.1, 0.5, 0.9):
        assert abs(integrate.quad(pdf, 0.0, x0, **opts)[0] - _kuma_ref_cdf(x0, a, b)) < 1e-8
        assert abs(_kuma_ref_icdf(_kuma_ref_cdf(x0, a, b), a, b) - x0) < 1e-10
    m1 = integrate.quad(lambda x: x * pdf(x), 0.0, 1.0, **opts)[0]
    m2 = integrate.quad(lambda x: x * x * pdf(x), 0.0, 1.0, **opts)[0]
    mean, var = _kuma_ref_mean_var(a, b)
    np.testing.assert_allclose([mean, var], [m1, m2 - m1 * m1], rtol=1e-7)
    if a == 1.0 or b == 1.0:
        ref = st.beta(a, b)
        np.testing.assert_allclose(_kuma_ref_logpdf(_X, a, b), ref.logpdf(_X), rtol=1e-10)
        np.testing.assert_allclose([mean, var], [ref.mean(), ref.var()], rtol=1e-10)


def test_kuma_log_prob_cdf_icdf(backend, dtype):
    """log_prob, cdf and icdf (compiled) on a (3, 2) batch from a (3, 1) and b (2,), outside
    [0, 1] and at its ends."""
    d = Kumaraswamy(ops.asarray(_A), ops.asarray(_B))
    assert d.batch_shape == (3, 2) and d.event_shape == ()
    assert d.support is constraints.unit_interval and d.has_rsample and not d.is_discrete
    a, b, x = _rounded(_A, dtype), _rounded(_B, dtype), _rounded(_X, dtype)[:, None, None]
    q = _rounded([1e-6, 0.01, 0.25, 0.5, 0.9, 0.999], dtype)[:, None, None]
    outside = np.array([-0.1, 1.1])[:, None, None]
    # the edges: a density of a b at x = 0 when a = 1 and at x = 1 when b = 1, 0 otherwise
    edge_a, edge_b = np.array([1.0, 2.0, 2.0, 3.0]), np.array([2.0, 1.0, 3.0, 3.0])
    ends = np.array([[0.0], [1.0]])

    def evaluate(a, b, x, q, outside, edge_a, edge_b, ends):
        d, edge = Kumaraswamy(a, b), Kumaraswamy(edge_a, edge_b)
        return {"lp": d.log_prob(x), "cdf": d.cdf(x), "icdf": d.icdf(q),
                "lp_out": d.log_prob(outside), "cdf_out": d.cdf(outside),
                "lp_edge": edge.log_prob(ends), "icdf_edge": edge.icdf(ends),
                "icdf_out": d.icdf(2.0 * outside)}

    out = _compiled(evaluate, *(ops.asarray(v) for v in (_A, _B, x + np.zeros((3, 2)), q,
                                                          outside, edge_a, edge_b, ends)))
    lp = _kuma_ref_logpdf(x, a, b)
    assert_close(out["lp"], lp, tol=10.0)
    assert_close(out["cdf"], _kuma_ref_cdf(x, a, b), tol=10.0)
    assert_close(out["icdf"], _kuma_ref_icdf(q, a, b), tol=10.0)
    assert out["lp_out"].shape == (2, 3, 2) and np.all(np.isneginf(out["lp_out"]))
    np.testing.assert_array_equal(out["cdf_out"], [[[0.0] * 2] * 3, [[1.0] * 2] * 3])
    assert_close(out["lp_edge"][0, :1], np.log([2.0]))
    assert_close(out["lp_edge"][1, 1:2], np.log([2.0]))
    assert np.all(np.isneginf(out["lp_edge"][0, 1:])) and np.all(np.isneginf(out["lp_edge"][1, 2:]))
    np.testing.assert_array_equal(out["icdf_edge"], [[0.0] * 4, [1.0] * 4])
    assert out["icdf_out"].shape == (2, 3, 2) and np.all(np.isnan(out["icdf_out"]))


_EDGE_CASES = {     # method: [(a, b, x or q)]
    "log_prob": [(0.5, 3.0, 1.0 - 1e-6),     # 1 - x^a = 5e-7: from log x, not from x^a
                 (0.01, 2.0, 0.999)],        # 1 - x^a = 1e-5
    "cdf": [(1.0, 2.0, 1e-10),               # F = 2e-10: no 1 - (1 - ...) cancellation
            (5.0, 0.5, 1e-3)],               # F = 5e-16
    "icdf": [(2.0, 3.0, 1e-10),              # x = sqrt(q / 3): 1 - q rounds to 1 in float32
             (0.5, 0.5, 1e-12)],
}


def test_kuma_stable_near_the_edges(backend, dtype):
    """Where the naive formulas lose every digit in float32 (x^a rounded to 1, 1 - q to 1),
    the results (eager) keep the dtype's relative precision."""
    ref = {"log_prob": _kuma_ref_logpdf, "cdf": _kuma_ref_cdf, "icdf": _kuma_ref_icdf}
    for what, cases in _EDGE_CASES.items():
        a, b, at = (np.array(c) for c in zip(*cases))
        v = _rounded(at, dtype)
        got = to_numpy(getattr(Kumaraswamy(ops.asarray(a), ops.asarray(b)), what)(ops.asarray(v)))
        rtol = 2e-5 if dtype == "float32" else 1e-9
        np.testing.assert_allclose(got, ref[what](v, a, b), rtol=rtol, err_msg=what)


def test_kuma_log_prob_grad(backend, dtype):
    a, b, x = _rounded(_A, dtype), _rounded(_B, dtype), _rounded(_X[1:-1], dtype)[:, None, None]
    x = x + np.zeros((3, 2))

    def f(p):
        return ops.sum(Kumaraswamy(p["a"], p["b"]).log_prob(p["x"]))

    grads = _compiled(ops.grad(f), {"a": ops.asarray(a), "b": ops.asarray(b),
                                    "x": ops.asarray(x)})
    refs = {"a": fd_grad(lambda v: _kuma_ref_logpdf(x, v, b).sum(), a),
            "b": fd_grad(lambda v: _kuma_ref_logpdf(x, a, v).sum(), b),
            "x": fd_grad(lambda v: _kuma_ref_logpdf(v, a, b).sum(), x)}
    for name, ref in refs.items():
        assert_close(grads[name], ref, kind="grad", err_msg=name)


def test_kuma_moments_and_draws(backend, dtype):
    """Mean and variance against b B(1 + k/a, b); draws: means within 6 standard errors and a
    KS test against the reference CDF, per batch member."""
    n = 20_000
    d = Kumaraswamy(ops.asarray(_A), ops.asarray(_B))
    mean, var = _kuma_ref_mean_var(_rounded(_A, dtype), _rounded(_B, dtype))
    assert_close(d.mean, mean, tol=10.0)
    assert_close(d.variance, var, tol=30.0)
    x = to_numpy(d.sample(ppl.random.key(0), (n,))).astype(np.float64)
    assert x.shape == (n, 3, 2) and np.all((x > 0) & (x < 1))
    assert np.all(np.abs(x.mean(0) - mean) < 6.0 * np.sqrt(var / n)), (x.mean(0), mean)
    for i, j in np.ndindex(3, 2):
        p = st.kstest(x[:, i, j], lambda v: _kuma_ref_cdf(v, _A[i, 0], _B[j])).pvalue
        assert p > 1e-4, (i, j, p)


def test_kuma_reparameterized_gradients(backend, dtype):
    """Inverse-CDF draws move with the parameters as ``dx/da = -(dF/da) / f`` at fixed u:
    the gradient of the draws' sum against that, with dF/da by finite differences of the
    reference CDF at each draw. At extreme concentrations (0.05) draws stay inside (0, 1)
    with a finite gradient."""
    a, b = 2.0, 3.0

    def evaluate(key, p, c):
        def total(p):
            return ops.sum(Kumaraswamy(p["a"], p["b"]).sample(key, (200,)))

        def extreme(c):
            return ops.sum(Kumaraswamy(c, c).sample(key, (500,)))

        return {"grad": ops.grad(total)(p), "x": Kumaraswamy(p["a"], p["b"]).sample(key, (200,)),
                "grad_extreme": ops.grad(extreme)(c),
                "x_extreme": Kumaraswamy(c, c).sample(key, (500,))}

    out = _compiled(evaluate, ppl.random.key(3), {"a": ops.asarray(a), "b": ops.asarray(b)},
                    ops.asarray(0.05))
    x = out["x"].astype(np.float64)
    dens = np.exp(_kuma_ref_logpdf(x, a, b))
    h = 1e-6
    dfa = (_kuma_ref_cdf(x, a + h, b) - _kuma_ref_cdf(x, a - h, b)) / (2 * h)
    dfb = (_kuma_ref_cdf(x, a, b + h) - _kuma_ref_cdf(x, a, b - h)) / (2 * h)
    rtol = 1e-3 if dtype == "float32" else 1e-6
    np.testing.assert_allclose(float(out["grad"]["a"]), np.sum(-dfa / dens), rtol=rtol)
    np.testing.assert_allclose(float(out["grad"]["b"]), np.sum(-dfb / dens), rtol=rtol)
    assert np.isfinite(float(out["grad_extreme"]))
    assert np.all((out["x_extreme"] > 0) & (out["x_extreme"] < 1))


@pytest.mark.dtypes("float64")
def test_kuma_shapes_and_bad_arguments(backend):
    def shapes(key, a, b):
        d = Kumaraswamy(a, b)
        x = d.sample(key, (4,))
        s = Kumaraswamy(2.0, 3.0)
        return {"x": x, "lp": d.log_prob(x), "mean": d.mean, "variance": d.variance,
                "cdf": d.cdf(0.5), "icdf": d.icdf(0.5), "scalar_mean": s.mean,
                "expand": s.expand((5,)).sample(key), "to_event": d.to_event(2).log_prob(x)}

    out = ops.eval_shape(shapes, ppl.random.key(5), ops.asarray(_A), ops.asarray(_B))
    assert {k: tuple(v.shape) for k, v in out.items()} == {
        "x": (4, 3, 2), "lp": (4, 3, 2), "mean": (3, 2), "variance": (3, 2), "cdf": (3, 2),
        "icdf": (3, 2), "scalar_mean": (), "expand": (5,), "to_event": (4,)}
    d = Kumaraswamy(ops.asarray(_A), ops.asarray(_B))
    assert d.to_event(2).event_shape == (3, 2)
    with pytest.raises(ValueError, match="'concentration1'"):
        Kumaraswamy(-1.0, 2.0, validate_args=True)
    with pytest.raises(ValueError, match="'concentration0'"):
        Kumaraswamy(1.0, 0.0, validate_args=True)
    with pytest.raises(ValueError, match="outside the support"):
        Kumaraswamy(1.0, 2.0, validate_args=True).log_prob(1.5)
    with pytest.raises(ValueError, match="do not broadcast"):
        Kumaraswamy(ops.ones(3), ops.ones(2))
    with pytest.raises(ValueError, match="does not broadcast"):
        d.log_prob(ops.zeros(4))
    with pytest.raises(TypeError, match="unexpected keyword argument 'alpha'"):
        Kumaraswamy(alpha=1.0, concentration0=2.0)


# ========================================================================== NUTS on both
_MVT_LOC = np.array([1.0, -2.0])
_MVT_L = np.array([[1.0, 0.0], [0.6, 0.5]])


def priors_model():
    """x ~ MultivariateStudentT(5, loc, L) and p ~ Kumaraswamy(2, 5), no data."""
    ppl.sample("x", MultivariateStudentT(5.0, ops.asarray(_MVT_LOC),
                                         scale_tril=ops.asarray(_MVT_L)))
    ppl.sample("p", Kumaraswamy(2.0, 5.0))


@pytest.mark.filterwarnings("ignore::ppl.inference.run_warnings.SamplingWarning")  # 2 x 300
@pytest.mark.dtypes("float64")
def test_nuts_on_both_priors(backend):
    """One NUTS run (2 chains of 300 + 300) of the two priors alone: each site's means and sds
    against the analytic ones (loc and sqrt(df / (df - 2) diag(L L^T)); b B(1 + k/a, b)), and
    the t draws' correlation against the scale matrix's."""
    mcmc = MCMC(NUTS(priors_model), num_warmup=300, num_samples=300, num_chains=2,
                progress_bar=False)
    mcmc.run(0)
    assert int(np.sum(to_numpy(mcmc.get_extra_fields()["diverging"]))) == 0
    samples = to_numpy(mcmc.get_samples(group_by_chain=True))
    x, p = samples["x"].astype(np.float64), samples["p"].astype(np.float64)
    assert x.shape == (2, 300, 2) and p.shape == (2, 300) and np.all((p > 0) & (p < 1))
    sigma = _MVT_L @ _MVT_L.T
    _assert_nuts_moments(x, _MVT_LOC, np.sqrt(5.0 / 3.0 * np.diag(sigma)), "mvt")
    corr = np.corrcoef(x.reshape(-1, 2).T)[0, 1]
    assert abs(corr - sigma[0, 1] / np.sqrt(sigma[0, 0] * sigma[1, 1])) < 0.15, corr
    mean, var = _kuma_ref_mean_var(2.0, 5.0)
    _assert_nuts_moments(p, mean, np.sqrt(var), "kumaraswamy")


@pytest.mark.dtypes("float32")
def test_mvt_small_df_draws_are_finite(backend):
    """With df = 0.2 the chi-square draw underflows to 0 in float32 now and then (numpy and
    JAX: 4-10 in 20,000 draws gave inf/NaN); the clamp keeps every draw finite, and the
    draws' marginal is still t(0.2) (KS against SciPy)."""
    d = MultivariateStudentT(0.2, ops.zeros(2), scale_tril=ops.eye(2))
    x = to_numpy(d.sample(ppl.random.key(3), (20_000,))).astype(np.float64)
    assert np.all(np.isfinite(x))
    assert st.kstest(x[:, 0], st.t(0.2).cdf).pvalue > 1e-4
