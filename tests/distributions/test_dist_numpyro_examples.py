"""Families that NumPyro's examples use: GaussianRandomWalk (``time_series.py``),
OrderedLogistic (``ordinal.py``) and DiscreteUniform (``uniform_discrete.py``), against
independent references on every backend and float dtype (the ``backend`` fixture of
``tests/conftest.py``).

References: ``scipy.stats.norm`` log-densities of the walk's increments; the ordered-logistic
class probabilities as differences of ``scipy.special.expit`` in float64 (taken on the side of
the logistic where they do not cancel); ``scipy.stats.randint``. Per family: ``log_prob`` and its
gradients (against central finite differences of the reference), moments, draws (moments within
6 standard errors, chi-square goodness of fit at alpha = 1e-4 on a fixed key), shapes and bad
arguments, and NUTS on a small model against its exact posterior (a Gaussian computed with NumPy;
a quadrature); over seeds 0-5 on numpy the NUTS means were within 2.3 MCSE, the sds within 9 %.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from conftest import fd_grad, to_numpy
from scipy.special import expit

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.diagnostics import mcse
from ppl.distributions import constraints
from ppl.distributions.transforms import OrderedTransform
from ppl.inference import MCMC, NUTS


def _tol(dtype, grad=False):
    if dtype == "float64":
        return (1e-6, 1e-8) if grad else (1e-9, 1e-10)
    return (2e-3, 2e-3) if grad else (1e-5, 1e-5)


# =============================================================================== random walk
_SCALES = np.array([0.5, 2.0])
_STEPS = 5


def _grw_ref_logpdf(x, scale):
    """Sum over steps of the Normal(0, scale) log-density of the increments (x_{-1} = 0)."""
    steps = np.diff(x, axis=-1, prepend=0.0)
    return st.norm(0.0, np.asarray(scale)[..., None]).logpdf(steps).sum(-1)


def _grw_values():
    return np.random.default_rng(0).normal(size=(3, 2, _STEPS)) * 2.0


def test_grw_log_prob(backend, dtype):
    d = dist.GaussianRandomWalk(ops.asarray(_SCALES), num_steps=_STEPS)
    assert d.batch_shape == (2,) and d.event_shape == (_STEPS,)
    assert d.support is constraints.real_vector and d.has_rsample and not d.is_discrete
    x = _grw_values()
    scale = _SCALES.astype(dtype).astype(np.float64)
    rtol, atol = _tol(dtype)
    got = to_numpy(d.log_prob(ops.asarray(x)))
    np.testing.assert_allclose(got, _grw_ref_logpdf(x, scale), rtol=rtol, atol=atol * 50)
    # a scalar scale, one value; and NumPyro's defaults (scale 1, one step)
    one = to_numpy(dist.GaussianRandomWalk(1.5, num_steps=_STEPS).log_prob(ops.asarray(x[0, 0])))
    np.testing.assert_allclose(one, _grw_ref_logpdf(x[0, 0], 1.5), rtol=rtol, atol=atol * 50)
    d1 = dist.GaussianRandomWalk()
    assert d1.batch_shape == () and d1.event_shape == (1,)
    np.testing.assert_allclose(to_numpy(d1.log_prob(ops.asarray([0.3]))),
                               st.norm.logpdf(0.3), rtol=rtol, atol=atol)


def test_grw_log_prob_grad(backend, dtype):
    x = _grw_values()[:2]
    scale = _SCALES.astype(dtype).astype(np.float64)

    def f(p):
        return ops.sum(dist.GaussianRandomWalk(p["scale"], num_steps=_STEPS).log_prob(p["x"]))

    grads = ops.grad(f)({"scale": ops.asarray(scale), "x": ops.asarray(x)})
    rtol, atol = _tol(dtype, grad=True)
    for name, ref in [("scale", fd_grad(lambda s: _grw_ref_logpdf(x, s).sum(), scale)),
                      ("x", fd_grad(lambda v: _grw_ref_logpdf(v, scale).sum(), x))]:
        np.testing.assert_allclose(to_numpy(grads[name]), ref, rtol=rtol,
                                   atol=atol * max(1.0, np.abs(ref).max()), err_msg=name)


def test_grw_moments_and_draws(backend, dtype):
    d = dist.GaussianRandomWalk(ops.asarray(_SCALES), num_steps=_STEPS)
    t = np.arange(1, _STEPS + 1)
    var = _SCALES[:, None] ** 2 * t
    np.testing.assert_allclose(to_numpy(d.mean), np.zeros((2, _STEPS)))
    np.testing.assert_allclose(to_numpy(d.variance), var, rtol=1e-6)
    n = 20_000
    x = to_numpy(d.sample(ppl.random.key(0), (n,))).astype(np.float64)
    assert x.shape == (n, 2, _STEPS) and np.all(np.isfinite(x))
    assert np.all(np.abs(x.mean(0)) < 6.0 * np.sqrt(var / n)), x.mean(0)
    assert np.all(np.abs(x.var(0) / var - 1.0) < 6.0 * np.sqrt(2.0 / n)), x.var(0) / var
    # the whole covariance, scale^2 (min(s, t) + 1), and independent Normal increments
    for j, s in enumerate(_SCALES):
        cov = s ** 2 * (np.minimum.outer(t, t))
        se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / n)
        assert np.all(np.abs(np.cov(x[:, j].T) - cov) < 6.0 * se)
        steps = np.diff(x[:, j], axis=-1, prepend=0.0) / s
        for k in range(_STEPS):
            assert st.kstest(steps[:, k], "norm").pvalue > 1e-4
    # reparameterized: d/d scale of a draw is the draw / scale
    g = ops.grad(lambda s: ops.sum(dist.GaussianRandomWalk(s, num_steps=3)
                                   .sample(ppl.random.key(1))))(ops.asarray(2.0))
    draw = to_numpy(dist.GaussianRandomWalk(2.0, num_steps=3).sample(ppl.random.key(1)))
    np.testing.assert_allclose(float(to_numpy(g)), draw.sum() / 2.0, rtol=1e-4, atol=1e-5)


@pytest.mark.dtypes("float64")
def test_grw_shapes_and_bad_arguments(backend):
    scale = ops.asarray(np.array([[0.5], [1.0], [3.0]]))
    d = dist.GaussianRandomWalk(scale, num_steps=4)
    assert d.batch_shape == (3, 1) and d.event_shape == (4,)
    x = d.sample(ppl.random.key(2), (2,))
    assert tuple(ops.shape(x)) == (2, 3, 1, 4)
    assert tuple(ops.shape(d.log_prob(x))) == (2, 3, 1)
    assert tuple(ops.shape(d.variance)) == (3, 1, 4)
    e = d.expand((3, 2))
    assert e.batch_shape == (3, 2) and tuple(ops.shape(e.sample(ppl.random.key(3)))) == (3, 2, 4)
    for steps in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="num_steps must be an int >= 1"):
            dist.GaussianRandomWalk(1.0, num_steps=steps)
    with pytest.raises(ValueError, match="'scale'"):
        dist.GaussianRandomWalk(-1.0, num_steps=2, validate_args=True)
    with pytest.raises(ValueError, match="does not broadcast"):
        dist.GaussianRandomWalk(1.0, num_steps=3).log_prob(ops.zeros(4))


_Y_WALK = np.array([0.4, 1.3, 0.9, 2.2, 1.6, 0.1])
_NOISE = 0.7


def walk_model(y):
    x = ppl.sample("x", dist.GaussianRandomWalk(1.0, num_steps=y.shape[0]))
    ppl.sample("y", dist.Normal(x, _NOISE).to_event(1), obs=y)


@pytest.mark.filterwarnings("ignore::ppl.inference.run_warnings.SamplingWarning")  # R-hat, 2 x 300
@pytest.mark.dtypes("float64")
def test_grw_nuts_against_the_gaussian_posterior(backend):
    """Observations y_t ~ Normal(x_t, s) of the walk: the posterior of x is Gaussian with
    precision D^T D + I / s^2 (D the difference matrix, the walk's prior precision). Two
    chains of 300 + 300: each mean within 5 MCSE, each sd within 25 %."""
    n = _Y_WALK.shape[0]
    diff = np.eye(n) - np.eye(n, k=-1)
    cov = np.linalg.inv(diff.T @ diff + np.eye(n) / _NOISE ** 2)
    mean = cov @ _Y_WALK / _NOISE ** 2
    mcmc = MCMC(NUTS(walk_model), num_warmup=300, num_samples=300, num_chains=2,
                progress_bar=False)
    mcmc.run(0, ops.asarray(_Y_WALK))
    draws = to_numpy(mcmc.get_samples(group_by_chain=True)["x"])
    assert draws.shape == (2, 300, n)
    err, se = np.abs(draws.mean((0, 1)) - mean), mcse(draws)
    assert np.all(err <= 5.0 * se), (draws.mean((0, 1)), mean, se)
    sd = draws.reshape(-1, n).std(0, ddof=1)
    assert np.all(np.abs(sd / np.sqrt(np.diag(cov)) - 1.0) <= 0.25), (sd, np.sqrt(np.diag(cov)))
    assert int(np.sum(to_numpy(mcmc.get_extra_fields()["diverging"]))) == 0


# ======================================================================== ordered logistic
_CUTS = np.array([[-1.0, 0.0, 2.0], [-2.5, 0.5, 0.7]])     # batch (2,), K = 4
_ETA = np.array([[-0.6], [0.3], [1.7]])                    # (3, 1): batch (3, 2)


def _ol_ref_probs(eta, cuts):
    """Class probabilities ``(..., K)`` in float64: ``sigmoid(b) - sigmoid(a)``, written as
    ``sigmoid(-a) - sigmoid(-b)`` where ``a + b > 0`` (both near 1) so nothing cancels."""
    eta = np.asarray(eta, dtype=np.float64)[..., None]
    cuts = np.asarray(cuts, dtype=np.float64)
    inf = np.full(np.broadcast_shapes(eta.shape, cuts.shape)[:-1] + (1,), np.inf)
    x = np.concatenate([-inf, cuts - eta, inf], axis=-1)
    a, b = x[..., :-1], x[..., 1:]
    return np.where(a + b > 0, expit(-a) - expit(-b), expit(b) - expit(a))


def _ol_ref_log_prob(eta, cuts, y):
    p = _ol_ref_probs(eta, cuts)
    y = np.asarray(y)
    ok = (y >= 0) & (y <= p.shape[-1] - 1) & (np.floor(y) == y)
    idx = np.where(ok, y, 0).astype(int)
    p = np.broadcast_to(p, y.shape + p.shape[-1:])
    with np.errstate(divide="ignore"):
        return np.where(ok, np.log(np.take_along_axis(p, idx[..., None], -1)[..., 0]), -np.inf)


def _rounded(a, dtype):
    return np.asarray(a).astype(dtype).astype(np.float64)


def test_ol_log_prob_against_expit_differences(backend, dtype):
    d = dist.OrderedLogistic(ops.asarray(_ETA), ops.asarray(_CUTS))
    assert d.batch_shape == (3, 2) and d.event_shape == () and d.is_discrete
    assert d.support.check(3) and not d.support.check(4) and d.num_categories == 4
    eta, cuts = _rounded(_ETA, dtype)[:, 0], _rounded(_CUTS, dtype)
    ref = _ol_ref_probs(eta[:, None], cuts)                 # (3, 2, 4)
    rtol, atol = _tol(dtype)
    np.testing.assert_allclose(to_numpy(d.probs), ref, rtol=rtol, atol=atol)
    y = np.arange(-1, 6, dtype=np.float64)[:, None, None] * np.ones((3, 2))
    expected = _ol_ref_log_prob(eta[:, None], cuts, y)
    for values in (y, y.astype(np.int64)):
        got = to_numpy(d.log_prob(ops.asarray(values)))
        np.testing.assert_array_equal(np.isneginf(got), np.isneginf(expected))
        fin = np.isfinite(expected)
        np.testing.assert_allclose(got[fin], expected[fin], rtol=rtol, atol=atol)
    assert np.all(np.isneginf(to_numpy(d.log_prob(ops.asarray(1.5)))))
    # a scalar predictor with one set of cut points; the entropy
    d0 = dist.OrderedLogistic(0.4, ops.asarray(_CUTS[0]))
    assert d0.batch_shape == ()
    p0 = _ol_ref_probs(_rounded(0.4, dtype), _rounded(_CUTS[0], dtype))
    np.testing.assert_allclose(to_numpy(d0.log_prob(ops.asarray([0, 1, 2, 3]))), np.log(p0),
                               rtol=rtol, atol=atol)
    np.testing.assert_allclose(float(to_numpy(d0.entropy())), -(p0 * np.log(p0)).sum(),
                               rtol=rtol, atol=atol)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
@pytest.mark.parametrize("eta", [-50.0, 50.0, -500.0, 500.0])
def test_ol_extreme_predictors(eta, backend, dtype):
    """Far beyond the cut points one class is certain (log_prob ~ 0) and the others keep their
    finite log-probabilities and gradients (no 1 - 1 cancellation, no NaN)."""
    cuts = np.array([-1.0, 0.0, 2.0])
    d = dist.OrderedLogistic(eta, ops.asarray(cuts))
    lp = to_numpy(d.log_prob(ops.asarray([0, 1, 2, 3])))
    certain = 0 if eta < 0 else 3
    assert np.all(np.isfinite(lp)), lp
    assert abs(lp[certain]) < 1e-12, lp
    ref = _ol_ref_log_prob(eta, cuts, np.arange(4.0))
    if abs(eta) <= 50:
        np.testing.assert_allclose(lp, ref, rtol=1e-5 if dtype == "float32" else 1e-10, atol=1e-12)
    draws = to_numpy(d.sample(ppl.random.key(0), (50,)))
    assert np.all(draws == certain)
    grads = ops.grad(lambda p: ops.sum(dist.OrderedLogistic(p["eta"], p["cuts"])
                                       .log_prob(ops.asarray([0, 1, 2, 3]))))(
        {"eta": ops.asarray(eta), "cuts": ops.asarray(cuts)})
    for name, g in grads.items():
        assert np.all(np.isfinite(to_numpy(g))), (name, to_numpy(g))


def test_ol_log_prob_grad(backend, dtype):
    eta, cuts = _rounded(_ETA, dtype)[:, 0], _rounded(_CUTS, dtype)
    y = np.array([[[0, 3], [1, 2], [3, 1]], [[2, 0], [0, 1], [1, 3]]], dtype=np.float64)

    def f(p):
        d = dist.OrderedLogistic(p["eta"], p["cuts"])
        return ops.sum(d.log_prob(ops.asarray(y)))

    grads = ops.grad(f)({"eta": ops.asarray(eta[:, None]), "cuts": ops.asarray(cuts)})
    refs = {"eta": fd_grad(lambda e: _ol_ref_log_prob(e, cuts, y).sum(), eta[:, None]),
            "cuts": fd_grad(lambda c: _ol_ref_log_prob(eta[:, None], c, y).sum(), cuts)}
    rtol, atol = _tol(dtype, grad=True)
    for name, ref in refs.items():
        np.testing.assert_allclose(to_numpy(grads[name]), ref, rtol=rtol,
                                   atol=atol * max(1.0, np.abs(ref).max()), err_msg=name)


def test_ol_draws_and_enumeration(backend, dtype):
    d = dist.OrderedLogistic(ops.asarray(_ETA), ops.asarray(_CUTS))
    n = 20_000
    x = d.sample(ppl.random.key(0), (n,))
    assert tuple(ops.shape(x)) == (n, 3, 2) and ops.dtype_of(x).startswith("int")
    x = to_numpy(x)
    ref = _ol_ref_probs(_ETA, _CUTS)
    for i in range(3):
        for j in range(2):
            observed = np.bincount(x[:, i, j], minlength=4)
            assert observed.size == 4
            p = st.chisquare(observed, n * ref[i, j]).pvalue
            assert p > 1e-4, f"batch ({i}, {j}): chi-square p-value {p:.2e}"
    assert d.has_enumerate_support
    vals = d.enumerate_support()
    assert tuple(ops.shape(vals)) == (4, 3, 2)
    assert tuple(ops.shape(d.enumerate_support(expand=False))) == (4, 1, 1)
    total = np.exp(to_numpy(d.log_prob(vals))).sum(0)
    np.testing.assert_allclose(total, 1.0, rtol=1e-5 if dtype == "float32" else 1e-12)
    assert np.all(np.isnan(to_numpy(d.mean))) and tuple(ops.shape(d.variance)) == (3, 2)


@pytest.mark.dtypes("float64")
def test_ol_shapes_and_bad_arguments(backend):
    d = dist.OrderedLogistic(ops.asarray(_ETA), ops.asarray(_CUTS))
    x = d.sample(ppl.random.key(1), (2,))
    lp = to_numpy(d.log_prob(x))
    assert lp.shape == (2, 3, 2)
    ind = d.to_event(2)
    assert ind.batch_shape == () and ind.event_shape == (3, 2)
    np.testing.assert_allclose(to_numpy(ind.log_prob(x)), lp.sum((-1, -2)), rtol=1e-12)
    e = dist.OrderedLogistic(0.0, ops.asarray([-1.0, 1.0])).expand((5,))
    assert e.batch_shape == (5,) and tuple(ops.shape(e.sample(ppl.random.key(2)))) == (5,)
    with pytest.raises(ValueError, match="'cutpoints'"):
        dist.OrderedLogistic(0.0, ops.asarray([1.0, 0.0]), validate_args=True)
    with pytest.raises(ValueError, match="cutpoints must have at least 1 dimension"):
        dist.OrderedLogistic(0.0, 1.0)
    with pytest.raises(ValueError, match="do not broadcast"):
        dist.OrderedLogistic(ops.zeros(3), ops.asarray(_CUTS))
    with pytest.raises(ValueError, match="outside the support"):
        dist.OrderedLogistic(0.0, ops.asarray([-1.0, 1.0]), validate_args=True).log_prob(3)


@pytest.mark.dtypes("float32")
def test_ol_log_prob_under_jit(backend):
    def f(eta, cuts, y):
        return dist.OrderedLogistic(eta, cuts).log_prob(y)

    args = (ops.asarray(_ETA), ops.asarray(_CUTS), ops.asarray(np.array([[0, 3]] * 3)))
    np.testing.assert_allclose(to_numpy(ops.jit(f)(*args)), to_numpy(f(*args)), rtol=1e-5,
                               atol=1e-6)


# ordinal regression: 15 observations at each of four covariate values, classes 0..2
_X_LEVELS = np.array([-1.5, -0.5, 0.5, 1.5])
_COUNTS = np.array([[13, 2, 0], [8, 4, 3], [1, 6, 8], [1, 2, 12]])
_X_ORD = np.repeat(np.repeat(_X_LEVELS, 3), _COUNTS.ravel())
_Y_ORD = np.repeat(np.tile(np.arange(3.0), 4), _COUNTS.ravel())


def ordinal_model(x, y):
    """beta ~ Normal(0, 2); cut points an OrderedTransform of Normal(0, 2) reals."""
    beta = ppl.sample("beta", dist.Normal(0.0, 2.0))
    cuts = ppl.sample("cutpoints", dist.TransformedDistribution(
        dist.Normal(ops.zeros(2), 2.0).to_event(1), OrderedTransform()))
    with ppl.plate("N", x.shape[0]):
        ppl.sample("y", dist.OrderedLogistic(beta * x, cuts), obs=y)


def _ordinal_quadrature():
    """Posterior means and sds of (beta, c_0, c_1) by a grid over (beta, z_0, z_1) with
    c = (z_0, z_0 + exp(z_1)) (a product-rule sum over a grid > 5 sd wide each way: the prior
    is Normal on z, so no Jacobian), in NumPy/SciPy."""
    beta = np.linspace(0.0, 5.0, 121)[:, None, None]
    z0 = np.linspace(-4.0, 2.0, 121)[None, :, None]
    z1 = np.linspace(-2.0, 2.0, 101)[None, None, :]
    c0, c1 = z0 + 0 * beta, z0 + np.exp(z1) + 0 * beta
    log_post = (st.norm(0, 2).logpdf(beta) + st.norm(0, 2).logpdf(z0)
                + st.norm(0, 2).logpdf(z1))
    for x, counts in zip(_X_LEVELS, _COUNTS):
        eta = beta * x
        cdf0, cdf1 = expit(c0 - eta), expit(c1 - eta)
        log_post = log_post + (counts[0] * np.log(cdf0) + counts[1] * np.log(cdf1 - cdf0)
                               + counts[2] * np.log1p(-cdf1))
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    out = {}
    for name, v in [("beta", beta + 0 * c0), ("c0", c0), ("c1", c1)]:
        m = (w * v).sum()
        out[name] = (m, np.sqrt((w * (v - m) ** 2).sum()))
    # the grid reaches past the posterior: its edges carry no mass
    for axis in range(3):
        edges = w.sum(axis=tuple(a for a in range(3) if a != axis))
        assert edges[0] < 1e-8 and edges[-1] < 1e-8, axis
    return out


@pytest.mark.filterwarnings("ignore::ppl.inference.run_warnings.SamplingWarning")  # R-hat, 2 x 300
@pytest.mark.dtypes("float64")
def test_ol_nuts_ordinal_regression_against_quadrature(backend):
    """Two chains of 300 + 300 on the three-parameter ordinal regression: posterior means
    within 5 MCSE of the quadrature's, sds within 25 %."""
    ref = _ordinal_quadrature()
    mcmc = MCMC(NUTS(ordinal_model), num_warmup=300, num_samples=300, num_chains=2,
                progress_bar=False)
    mcmc.run(0, ops.asarray(_X_ORD), ops.asarray(_Y_ORD))
    samples = mcmc.get_samples(group_by_chain=True)
    cuts = to_numpy(samples["cutpoints"])
    assert cuts.shape == (2, 300, 2) and np.all(cuts[..., 1] > cuts[..., 0])
    draws = {"beta": to_numpy(samples["beta"]), "c0": cuts[..., 0], "c1": cuts[..., 1]}
    for name, (mean, sd) in ref.items():
        v = draws[name]
        err, se = abs(v.mean() - mean), float(mcse(v))
        assert err <= 5.0 * se, f"{name}: posterior mean {v.mean():.4f} vs {mean:.4f} ({se:.4f})"
        assert abs(v.std(ddof=1) / sd - 1.0) <= 0.25, (name, v.std(ddof=1), sd)
    assert int(np.sum(to_numpy(mcmc.get_extra_fields()["diverging"]))) == 0


# ======================================================================== discrete uniform
_LOW, _HIGH = np.array([-2.0, 3.0]), np.array([4.0, 3.0])      # 7 values; a single value


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")   # scipy: randint(3, 4)
def test_discrete_uniform_against_scipy(backend, dtype):
    d = dist.DiscreteUniform(ops.asarray(_LOW), ops.asarray(_HIGH))
    assert d.batch_shape == (2,) and d.is_discrete and d.has_enumerate_support
    grid = np.arange(-4.0, 7.0)[:, None] * np.ones(2)
    refs = [st.randint(int(lo), int(hi) + 1) for lo, hi in zip(_LOW, _HIGH)]
    expected = np.stack([r.logpmf(grid[:, j]) for j, r in enumerate(refs)], axis=1)
    for values in (grid, grid.astype(np.int64)):
        got = to_numpy(d.log_prob(ops.asarray(values)))
        np.testing.assert_array_equal(np.isneginf(got), np.isneginf(expected))
        fin = np.isfinite(expected)
        np.testing.assert_allclose(got[fin], expected[fin], rtol=1e-6)
    assert np.all(np.isneginf(to_numpy(d.log_prob(ops.asarray([0.5, 3.5])))))
    np.testing.assert_allclose(to_numpy(d.cdf(ops.asarray(grid))),
                               np.stack([r.cdf(grid[:, j]) for j, r in enumerate(refs)], 1),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(to_numpy(d.mean), [r.mean() for r in refs], rtol=1e-6)
    np.testing.assert_allclose(to_numpy(d.variance), [r.var() for r in refs], rtol=1e-6,
                               atol=1e-7)
    n = 20_000
    x = d.sample(ppl.random.key(0), (n,))
    assert tuple(ops.shape(x)) == (n, 2) and ops.dtype_of(x).startswith("int")
    x = to_numpy(x)
    assert np.all(x[:, 1] == 3)
    observed = np.bincount(x[:, 0] + 2, minlength=7)
    assert observed.size == 7 and st.chisquare(observed).pvalue > 1e-4
    vals = dist.DiscreteUniform(-1, 2).expand((3,)).enumerate_support()
    assert tuple(ops.shape(vals)) == (4, 3)
    np.testing.assert_array_equal(to_numpy(vals)[:, 0], [-1, 0, 1, 2])


@pytest.mark.dtypes("float64")
def test_discrete_uniform_bad_arguments(backend):
    with pytest.raises(ValueError, match="same across the batch"):
        dist.DiscreteUniform(ops.asarray(_LOW), ops.asarray(_HIGH)).enumerate_support()
    for low, high in [(2, 1), (0.5, 3)]:
        with pytest.raises(ValueError, match="DiscreteUniform: parameters 'low' and 'high'"):
            dist.DiscreteUniform(low, high, validate_args=True)
    with pytest.raises(ValueError, match="outside the support"):
        dist.DiscreteUniform(0, 3, validate_args=True).log_prob(4)
    d = dist.DiscreteUniform()
    assert d.batch_shape == () and [int(v) for v in to_numpy(d.enumerate_support())] == [0, 1]


def test_discrete_uniform_draws_wide_ranges_uniformly(backend, dtype):
    """Draws over 0..1e8 hit odd numbers half the time (floor(u * n) of a float32 uniform
    gave 8 %) and stay in range, batched bounds included."""
    d = dist.DiscreteUniform(0, 10**8)
    x = np.asarray(ops.to_numpy(d.sample(ppl.random.key(0), (4000,))), np.int64)
    assert 0 <= x.min() and x.max() <= 10**8
    assert abs((x % 2).mean() - 0.5) < 0.05 and abs((x % 8 == 0).mean() - 0.125) < 0.03
    b = dist.DiscreteUniform(ops.asarray([0, 10]), ops.asarray([2, 10]))
    y = np.asarray(ops.to_numpy(b.sample(ppl.random.key(1), (500,))))
    assert set(y[:, 0].tolist()) == {0, 1, 2} and set(y[:, 1].tolist()) == {10}


def test_ol_equal_cutpoints_keep_finite_gradients(backend, dtype):
    """Equal cut points (what float32 round-off of an ordered transform can give) leave an
    empty class: its probability is negligible (~eps), the others are those of the merged cut,
    and every gradient stays finite (NaN here would stop NUTS)."""
    cuts = np.array([-1.0, 0.5, 0.5, 2.0])
    y = ops.asarray([0, 1, 3, 4])

    def f(p):
        return ops.sum(dist.OrderedLogistic(p["eta"], p["cuts"]).log_prob(y))

    grads = ops.grad(f)({"eta": ops.asarray(0.3), "cuts": ops.asarray(cuts)})
    for name, g in grads.items():
        assert np.all(np.isfinite(to_numpy(g))), (name, to_numpy(g))
    d = dist.OrderedLogistic(0.3, ops.asarray(cuts))
    lp = to_numpy(d.log_prob(ops.asarray([0, 1, 2, 3, 4])))
    merged = _ol_ref_log_prob(0.3, np.array([-1.0, 0.5, 2.0]), np.arange(4.0))
    np.testing.assert_allclose(lp[[0, 1, 3, 4]], merged, rtol=1e-5 if dtype == "float32" else 1e-9)
    assert lp[2] < np.log(np.finfo(dtype).eps) + 1e-6
