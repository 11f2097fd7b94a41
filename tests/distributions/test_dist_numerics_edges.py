"""Numerical edges of four families, on every backend and float dtype (the ``backend`` fixture of
``tests/conftest.py``), each against an independent reference.

* ``lgamma_difference`` (``distributions/util.py``), ``log Gamma(a + d) - log Gamma(a)``, for
  ``a`` from 1e-3 to 1e8: against ``mpmath.loggamma`` at 40 digits; its gradients in float64
  against central finite differences of that reference (taken at 300 digits). Through it, the
  Student-t and multivariate-t log densities at ``df = 1e6, 1e7`` in float32, against
  ``scipy.stats`` in float64 (with the plain difference of ``gammaln`` they were 0.06 / 0.29
  and 0.18 / 0.86 off), and in float64 against mpmath.
* ``TruncatedDistribution(Gumbel)`` on intervals far in the left tail, down to where
  ``exp(-z)`` overflows (``distributions/log_tails.py``): ``log_prob`` against the density and
  the interval's mass computed by mpmath at 50 digits (whose exponent range has no limit), its
  gradients against mpmath's finite differences, the ``cdf`` against mpmath, and the draws
  (all within a few widths ``scale * exp(zb)`` of ``high``, where the mass is). The old code
  gave NaN there (``-inf - -inf``), lost the ``-z`` of the log density (``log_prob(high)``
  was 0) and gave a cdf of ``e`` at ``high`` (float32 on jax).
* ``OrderedLogistic`` with empty cut points (one category), as NumPyro accepts: probability 1.
* ``DiscreteUniform.icdf``: against ``scipy.stats.randint.ppf``; at the boundaries ``q = k / n``
  NumPyro's line ``low - 1 + q n`` agrees; draws by inversion against the pmf (chi-square).

Last, NUTS on every backend on a model that goes through three of them, against quadrature.
"""

from __future__ import annotations

import functools

import mpmath as mp
import numpy as np
import pytest
import scipy.stats as st
from conftest import chi2_pvalue, to_numpy
from scipy.integrate import quad

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.diagnostics import mcse
from ppl.distributions.locscale import StudentT
from ppl.distributions.multivariate_t import MultivariateStudentT
from ppl.distributions.ordinal import OrderedLogistic
from ppl.distributions.truncation import TruncatedDistribution
from ppl.distributions.uniform_discrete import DiscreteUniform
from ppl.distributions.util import lgamma_difference
from ppl.inference import MCMC, NUTS

INF = np.inf


def _eps(dtype):
    return float(np.finfo(dtype).eps)


def _rounded(a, dtype):
    return np.asarray(a, dtype=np.float64).astype(dtype).astype(np.float64)


# ============================================================================ lgamma difference
_A = np.concatenate([np.geomspace(1e-3, 1e8, 34), [0.5, 1.2, 9.999, 10.0, 10.001, 5e5, 5e6]])
_D = (0.0, 0.5, 1.0, 1.5, 2.5, 10.0, 1e3)


def _lgd_ref(a, d, dps=40):
    with mp.workdps(dps):
        a, d = mp.mpf(float(a)), mp.mpf(float(d))
        return mp.loggamma(a + d) - mp.loggamma(a)


@functools.cache
def _lgd_table(dtype):
    a = _rounded(_A, dtype)
    return a, np.array([[float(_lgd_ref(x, d)) for x in a] for d in _D])       # (len(D), len(A))


def test_lgamma_difference_values(backend, dtype):
    """A few eps relative to ``max(1, |value|)`` for every ``a`` (the plain ``gammaln``
    difference: 1e4 eps at a = 1e6 in float32, whose ``log Gamma`` is 1.3e7)."""
    a, want = _lgd_table(dtype)
    for d, row in zip(_D, want):
        got = to_numpy(lgamma_difference(ops.asarray(a), d))
        assert got.shape == a.shape and str(got.dtype) == dtype
        err = np.abs(got.astype(np.float64) - row) / (_eps(dtype) * np.maximum(1.0, np.abs(row)))
        assert np.all(err < 64.0), (d, a[np.argmax(err)], err.max())
    # d an array, broadcast with a; d = 0 is exactly 0
    d = np.array([0.5, 2.5])
    got = to_numpy(lgamma_difference(ops.asarray(a[:, None]), ops.asarray(d)))
    assert got.shape == (a.size, 2)
    np.testing.assert_allclose(got, want[[1, 4]].T, rtol=64 * _eps(dtype), atol=64 * _eps(dtype))
    assert np.all(to_numpy(lgamma_difference(ops.asarray(a), 0.0)) == 0.0)


_A_GRAD = np.array([1e-3, 0.7, 3.0, 9.99, 10.0, 10.01, 55.0, 1e4, 1e6, 1e8, 1e160])
_D_GRAD = np.array([0.5, 1.5, 0.0, 2.5, 0.5, 7.0, 3.0, 0.5, 1.0, 0.5, 0.5])


def _central(f, x, rel=1e-30):
    """Central difference of an mpmath function at 300 digits (step ``rel * max(1, |x|)``)."""
    with mp.workdps(300):
        x = mp.mpf(float(x))
        h = rel * max(mp.mpf(1), abs(x))
        return float((f(x + h) - f(x - h)) / (2 * h))


@pytest.mark.dtypes("float64")
def test_lgamma_difference_gradients(backend):
    def f(p):
        return ops.sum(lgamma_difference(p["a"], p["d"]))

    g = ops.grad(f)({"a": ops.asarray(_A_GRAD), "d": ops.asarray(_D_GRAD)})
    want_a = [_central(lambda x, d=d: mp.loggamma(x + d) - mp.loggamma(x), a)
              for a, d in zip(_A_GRAD, _D_GRAD)]
    want_d = [_central(lambda y, a=a: mp.loggamma(a + y) - mp.loggamma(a), d)
              for a, d in zip(_A_GRAD, _D_GRAD)]
    np.testing.assert_allclose(to_numpy(g["a"]), want_a, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(to_numpy(g["d"]), want_d, rtol=1e-12)


def test_lgamma_difference_gradients_stay_finite(backend, dtype):
    """Each branch sees safe arguments where the other is taken: no NaN from the unused one,
    over the whole range of the dtype (the derivative of ``d log a`` is ``d / a``)."""
    big = 1e30 if dtype == "float32" else 1e200
    a = np.array([1e-30, 1e-3, 9.99, 10.0, 1e4, big])
    g = to_numpy(ops.grad(lambda x: ops.sum(lgamma_difference(x, 0.5)))(ops.asarray(a)))
    assert np.all(np.isfinite(g)), g
    with mp.workdps(250):
        want = [float(mp.digamma(mp.mpf(x) + 0.5) - mp.digamma(mp.mpf(x)))
                for x in _rounded(a, dtype)]
    np.testing.assert_allclose(g, want, rtol=1e-4 if dtype == "float32" else 1e-10)


# -------------------------------------------------------------------- Student's t at large df
_T_X = np.array([0.0, 1.0, -3.0, 20.0])
_L3 = np.array([[1.0, 0.0, 0.0], [0.5, 2.0, 0.0], [-0.3, 0.25, 0.5]])
_MVT_X = np.array([[0.3, -1.0, 2.0], [0.0, 0.0, 0.0], [4.0, 1.0, -6.0]])


def _t_mp(x, df, loc, scale):
    with mp.workdps(40):
        z, df = (mp.mpf(float(x)) - loc) / scale, mp.mpf(float(df))
        return float(mp.loggamma((df + 1) / 2) - mp.loggamma(df / 2) - mp.log(df * mp.pi) / 2
                     - mp.log(scale) - (df + 1) / 2 * mp.log1p(z * z / df))


def _mvt_mp(x, df, l):
    with mp.workdps(40):
        m, n, df = mp.matrix(l.tolist()), l.shape[0], mp.mpf(float(df))
        y = mp.lu_solve(m, mp.matrix([float(v) for v in x]))
        maha = sum(v * v for v in y)
        return float(mp.loggamma((df + n) / 2) - mp.loggamma(df / 2) - n * mp.log(df * mp.pi) / 2
                     - mp.log(abs(mp.det(m))) - (df + n) / 2 * mp.log1p(maha / df))


@pytest.mark.parametrize("df", [1e6, 1e7])
def test_student_t_and_mvt_log_prob_at_large_df(backend, dtype, df):
    """float32 against ``scipy.stats`` in float64 (to 16 eps of ``max(1, |value|)``: the
    old normalizer was 0.06 off at df = 1e6, the trivariate t's 0.18), float64 against mpmath
    (to 1e-13)."""
    x, loc, scale = _rounded(_T_X, dtype), 0.5, 2.0
    got = to_numpy(StudentT(df, loc, scale).log_prob(ops.asarray(x))).astype(np.float64)
    l, v = _rounded(_L3, dtype), _rounded(_MVT_X, dtype)
    d = MultivariateStudentT(df, ops.zeros(3), scale_tril=ops.asarray(l))
    got_mvt = to_numpy(d.log_prob(ops.asarray(v))).astype(np.float64)
    if dtype == "float32":
        want = st.t(df, loc, scale).logpdf(x)
        want_mvt = st.multivariate_t(np.zeros(3), l @ l.T, df=df).logpdf(v)
        tol = 16 * _eps(dtype)
    else:
        want = np.array([_t_mp(xi, df, loc, scale) for xi in x])
        want_mvt = np.array([_mvt_mp(vi, df, l) for vi in v])
        tol = 1e-13
    for g, w, what in ((got, want, "StudentT"), (got_mvt, want_mvt, "MultivariateStudentT")):
        np.testing.assert_array_less(np.abs(g - w), tol * np.maximum(1.0, np.abs(w)), err_msg=what)


@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("df", [3.0, 1e6])
def test_student_t_gradients_at_large_df(backend, df):
    """d log p / d(df, loc, scale, x) against mpmath's central differences; the df-derivative
    is O(1 / df^2) at df = 1e6, where differences of gammaln computed in float64 are noise."""
    x = np.array([0.3, -4.0])

    def f(p):
        return ops.sum(StudentT(p["df"], p["loc"], p["scale"]).log_prob(p["x"]))

    p = {"df": df, "loc": 0.5, "scale": 2.0}
    g = ops.grad(f)({**{k: ops.asarray(v) for k, v in p.items()}, "x": ops.asarray(x)})
    for name in ("df", "loc", "scale"):
        want = sum(_central(lambda v, xi=xi, name=name: _t_mp_mp(xi, **{**p, name: v}), p[name],
                            rel=1e-40) for xi in x)
        np.testing.assert_allclose(float(to_numpy(g[name])), want, rtol=1e-9, atol=1e-300,
                                   err_msg=name)
    want_x = [_central(lambda v: _t_mp_mp(v, **p), xi, rel=1e-40) for xi in x]
    np.testing.assert_allclose(to_numpy(g["x"]), want_x, rtol=1e-9)


def _t_mp_mp(x, df, loc, scale):
    """The Student-t log density at the working precision (for differences below float64's)."""
    x, df, loc, scale = (mp.mpf(v) for v in (x, df, loc, scale))
    z = (x - loc) / scale
    return (mp.loggamma((df + 1) / 2) - mp.loggamma(df / 2) - mp.log(df * mp.pi) / 2
            - mp.log(scale) - (df + 1) / 2 * mp.log1p(z * z / df))


# ======================================================================= truncated Gumbel, left
#: (loc, scale, low, high) per dtype: past the overflow of exp(-z) (709.8 / 88.7), just inside
#: it, where only the difference log f(x) - log F(high) cancels, an open low side, and a loc
#: and scale (binary fractions, so z is exact) that move the overflow
_FAR = {"float64": np.array([(0.0, 1.0, -720.0, -710.0), (0.0, 1.0, -705.0, -700.0),
                             (0.0, 1.0, -40.0, -30.0), (0.5, 2.0, -1500.0, -1421.0),
                             (0.0, 1.0, -INF, -720.0), (-1.0, 0.5, -25.0, -20.0)]),
        "float32": np.array([(0.0, 1.0, -100.0, -90.0), (0.0, 1.0, -85.0, -80.0),
                             (0.0, 1.0, -20.0, -15.0), (0.5, 2.0, -200.0, -180.0),
                             (0.0, 1.0, -INF, -95.0), (-1.0, 0.5, -12.0, -9.0)])}
#: points below high, in ulps of high
_ULPS = np.array([0, 1, 3, 20, 300, 4000])


def _gumbel_points(dtype):
    rows = _FAR[dtype]
    low, high = rows[:, 2], rows[:, 3]
    hi = high.astype(dtype)
    below = np.stack([hi - k * np.abs(np.spacing(hi)) for k in _ULPS]).astype(np.float64)
    mid = np.where(np.isinf(low), high - 3.0, 0.5 * (low + high))
    ends = np.where(np.isinf(low), high - 50.0, low)
    out = np.stack([high + 1.0, np.where(np.isinf(low), high + 2.0, low - 1.0)])
    return np.concatenate([below, [mid, ends], out]).astype(dtype).astype(np.float64)


def _gumbel_ref(x, loc, scale, low, high):
    """``log f(x) - log(F(high) - F(low))`` to 50 digits (``-inf`` outside ``[low, high]``)."""
    if not low <= x <= high:
        return -mp.inf
    # log f(x) and log F(high) are both about -exp(-zb): digits for it, and 50 more
    digits = max(50, mp.mp.dps) + int(max(0.0, -float((high - loc) / scale)) / 2.3)
    with mp.workdps(digits):
        x, loc, scale, low, high = (mp.mpf(v) for v in (x, loc, scale, low, high))
        z, zb = (x - loc) / scale, (high - loc) / scale
        big_f = mp.exp(-mp.exp(-zb))
        if mp.isfinite(low):
            big_f -= mp.exp(-mp.exp(-(low - loc) / scale))
        return -z - mp.exp(-z) - mp.log(scale) - mp.log(big_f)


def test_truncated_gumbel_far_left_log_prob(backend, dtype):
    rows, x = _FAR[dtype], _gumbel_points(dtype)
    p = {k: ops.asarray(v) for k, v in zip(("loc", "scale", "low", "high"), rows.T)}
    d = TruncatedDistribution(dist.Gumbel(p["loc"], p["scale"]), low=p["low"], high=p["high"])
    got = to_numpy(d.log_prob(ops.asarray(x))).astype(np.float64)
    top, eps = float(np.finfo(dtype).max), _eps(dtype)
    assert not np.any(np.isnan(got))
    for j, (loc, scale, low, high) in enumerate(rows):
        zb = abs((high - loc) / scale)
        for i in range(x.shape[0]):
            want = _gumbel_ref(x[i, j], loc, scale, low, high)
            where = f"row {j}, x = {x[i, j]!r}: got {got[i, j]!r}, want {want}"
            if want < -1.01 * top:                  # below the dtype's range: -inf
                assert got[i, j] == -INF, where
            elif want > -top / 1.01:
                tol = 4 * eps * (16 + zb) * max(1.0, abs(want))
                assert abs(got[i, j] - float(want)) <= tol, where
        # at high the density is exp(zb) / scale (all the mass is within exp(-zb) of it)
        assert abs(got[0, j] - (-(high - loc) / scale - np.log(scale))) <= 64 * eps * zb


def test_truncated_gumbel_far_left_gradients(backend, dtype):
    """d log p / d(loc, scale, low, high, x) at points below high: never NaN; where the true
    value is within the dtype's range, against mpmath's central differences. (Where
    ``exp(-zb)`` itself overflows, the scale derivative ``-(zx exp(-zx) - zb exp(-zb)) /
    scale`` goes through it and is infinite even where it is a finite ~1e300.)"""
    rows, x = _FAR[dtype], _gumbel_points(dtype)[1:6]          # inside, not on the bounds
    names = ("loc", "scale", "low", "high")

    def f(p):
        d = TruncatedDistribution(dist.Gumbel(p["loc"], p["scale"]), low=p["low"],
                                  high=p["high"])
        return ops.sum(d.log_prob(p["x"]))

    args = {**{k: ops.asarray(v) for k, v in zip(names, rows.T)}, "x": ops.asarray(x)}
    g = {k: to_numpy(v).astype(np.float64) for k, v in ops.grad(f)(args).items()}
    assert not any(np.any(np.isnan(v)) for v in g.values()), g
    top = float(np.finfo(dtype).max)
    rtol = 1e-9 if dtype == "float64" else 3e-4
    for j, row in enumerate(rows):
        par = dict(zip(names, row))
        for name in names:
            if not np.isfinite(par[name]):
                assert np.all(g[name][j] == 0.0)
                continue

            def ref(v, name=name, j=j):
                return sum(_gumbel_ref(xi, **{**par, name: v}) for xi in x[:, j])

            want = _central(ref, par[name], rel=1e-40)
            past = name == "scale" and -(par["high"] - par["loc"]) / par["scale"] > np.log(top)
            if abs(want) < top / 10 and not past:
                assert abs(g[name][j] - want) <= rtol * max(1.0, abs(want)), (j, name, want)
        for i in range(x.shape[0]):
            want = _central(lambda v, j=j: _gumbel_ref(v, **par), x[i, j], rel=1e-40)
            if abs(want) < top / 10:
                assert abs(g["x"][i, j] - want) <= rtol * max(1.0, abs(want)), (i, j, want)


def _gumbel_cdf_ref(x, loc, scale, low, high):
    """``(F(x) - F(low)) / (F(high) - F(low))`` at 50 digits."""
    with mp.workdps(50):
        x, loc, scale, low, high = (mp.mpf(v) for v in (x, loc, scale, low, high))

        def big_f(v):
            return mp.exp(-mp.exp(-(v - loc) / scale)) if mp.isfinite(v) else mp.mpf(0)

        return float((big_f(x) - big_f(low)) / (big_f(high) - big_f(low)))


@functools.cache
def _gumbel_cdf_table(dtype):
    rows, x = _FAR[dtype], _gumbel_points(dtype)[:-2]                 # inside
    return np.array([[_gumbel_cdf_ref(x[i, j], *rows[j]) for j in range(rows.shape[0])]
                     for i in range(x.shape[0])])


def test_truncated_gumbel_far_left_cdf_and_draws(backend, dtype):
    """``cdf`` against mpmath (it was ``exp(-0.25)`` or ``e`` at ``high`` in float32 at ``zb =
    -15`` on jax: ``log F(x) - log F(high)``, two numbers near ``-exp(15)``). The mass lies
    within a few ``scale * exp(zb)`` of high (an Exponential of that mean in ``high - x``):
    every draw there, to a few ulps."""
    rows = _FAR[dtype]
    loc, scale, low, high = rows.T
    d = TruncatedDistribution(dist.Gumbel(ops.asarray(loc), ops.asarray(scale)),
                              low=ops.asarray(low), high=ops.asarray(high))
    x = _gumbel_points(dtype)[:-2]
    got = to_numpy(d.cdf(ops.asarray(x))).astype(np.float64)
    tol = 4 * _eps(dtype) * (16 + np.abs((high - loc) / scale))
    np.testing.assert_array_less(np.abs(got - _gumbel_cdf_table(dtype)),
                                 np.broadcast_to(tol, got.shape))
    assert np.all(got[0] == 1.0)
    draws = to_numpy(d.sample(ppl.random.key(0), (500,))).astype(np.float64)
    width = 40.0 * scale * np.exp((high - loc) / scale) + 4 * np.abs(np.spacing(high.astype(dtype)))
    assert np.all((draws <= high) & (high - draws <= width)), (high - draws).max(0)


# =========================================================================== OrderedLogistic
def test_ordered_logistic_one_category(backend, dtype):
    """Empty cut points (K = 1), which NumPyro accepts: class 0 with probability 1."""
    eta = ops.asarray(np.array([[0.3], [-2.0], [50.0]]))              # (3, 1)
    d = OrderedLogistic(eta, ops.zeros((2, 0)), validate_args=True)
    assert d.batch_shape == (3, 2) and d.event_shape == () and d.num_categories == 1
    assert d.support.check(0) and not d.support.check(1)
    np.testing.assert_array_equal(to_numpy(d.probs), np.ones((3, 2, 1)))
    np.testing.assert_array_equal(to_numpy(d.log_prob(ops.asarray(0))), np.zeros((3, 2)))
    free = OrderedLogistic(eta, ops.zeros((2, 0)))
    np.testing.assert_array_equal(to_numpy(free.log_prob(ops.asarray([1.0, -1.0]))),
                                  np.full((3, 2), -INF))
    x = to_numpy(d.sample(ppl.random.key(0), (7,)))
    assert x.shape == (7, 3, 2) and x.dtype.kind == "i" and np.all(x == 0)
    np.testing.assert_array_equal(to_numpy(d.enumerate_support()), np.zeros((1, 3, 2)))
    np.testing.assert_array_equal(to_numpy(d.entropy()), np.zeros((3, 2)))
    # no gradient in the predictor (and no NaN), also compiled
    g = ops.grad(lambda e: ops.sum(OrderedLogistic(e, ops.zeros((0,))).log_prob(0)))(
        ops.asarray([0.3, -1.0]))
    np.testing.assert_array_equal(to_numpy(g), np.zeros(2))
    lp = ops.jit(lambda e: OrderedLogistic(e, ops.zeros((0,))).log_prob(0))(ops.asarray(0.2))
    assert float(to_numpy(lp)) == 0.0
    with pytest.raises(ValueError, match="cutpoints"):
        OrderedLogistic(0.0, ops.asarray(1.0))                          # not even a vector


# ============================================================================ DiscreteUniform
_LOW = np.array([2.0, -3.0, 0.0, 7.0])
_HIGH = np.array([5.0, 6.0, 0.0, 1006.0])


def test_discrete_uniform_icdf_and_cdf(backend, dtype):
    d = DiscreteUniform(ops.asarray(_LOW), ops.asarray(_HIGH))
    n = _HIGH - _LOW + 1.0
    ref = st.randint(_LOW, _HIGH + 1)
    # q off the steps k / n (by more than float32's rounding of q n): scipy's ppf exactly
    q = np.random.default_rng(0).uniform(size=(200, 4))
    frac = q * n - np.floor(q * n)
    q = np.where((frac < 1e-3) | (frac > 1 - 1e-3), 0.5 / n, q).astype(dtype).astype(np.float64)
    got = to_numpy(d.icdf(ops.asarray(q)))
    assert got.shape == (200, 4) and str(got.dtype) == dtype
    np.testing.assert_array_equal(got, ref.ppf(q))
    # on the steps q = k / n: low + k - 1, where NumPyro's line low - 1 + q n agrees; q = 0
    # gives low - 1 and q = 1 high (both as scipy); outside [0, 1] and NaN: NaN (scipy)
    k = np.arange(0, 12)[:, None]
    steps = np.minimum(k, n) / n
    got = to_numpy(d.icdf(ops.asarray(steps.astype(dtype))))
    np.testing.assert_array_equal(got, _LOW + np.minimum(k, n) - 1.0)
    assert np.all(np.isnan(to_numpy(d.icdf(ops.asarray([-0.1, 1.1, np.nan])[:, None]))))
    # a round trip on the support, a scalar q over the batch, cdf against scipy
    v = np.minimum(_LOW + np.arange(0, 40)[:, None], _HIGH)
    np.testing.assert_array_equal(to_numpy(d.icdf(d.cdf(ops.asarray(v)))), v)
    np.testing.assert_array_equal(to_numpy(d.icdf(0.5)), ref.ppf(0.5))
    x = np.array([[-10.0], [1.5], [2.0], [2.5], [5.0], [5.9], [100.0], [2000.0]])
    np.testing.assert_allclose(to_numpy(d.cdf(ops.asarray(x))), ref.cdf(x), rtol=_eps(dtype) * 4)


def test_discrete_uniform_draws_by_inversion(backend, dtype):
    """``icdf`` of uniform draws has the pmf 1 / n (chi-square at alpha = 1e-4, fixed key)."""
    d = DiscreteUniform(-2, 4)
    u = ppl.random.uniform(ppl.random.key(3), (6000,))
    x = to_numpy(d.icdf(u))
    support = np.arange(-2, 5)
    assert np.all(np.isin(x, support))
    assert chi2_pvalue(x, support, np.full(7, 1 / 7)) > 1e-4


# ======================================================================================= NUTS
_Y_T = np.array([0.4, 1.3, -0.2])
_DF = 1e6


def edges_model(y):
    """mu ~ Normal(0, 1); y ~ StudentT(1e6, mu, 1); an OrderedLogistic(mu, no cut points)
    observation (log-likelihood 0); x ~ Gumbel(0, 1) truncated to [-3, -1] (left of the mode)."""
    mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
    ppl.sample("y", StudentT(_DF, mu, 1.0), obs=y)
    ppl.sample("k", OrderedLogistic(mu, ops.zeros((0,))), obs=ops.asarray(0))
    ppl.sample("x", TruncatedDistribution(dist.Gumbel(0.0, 1.0), low=-3.0, high=-1.0))


def _quad_moments(logpdf, low, high):
    m0 = quad(lambda v: np.exp(logpdf(v)), low, high)[0]
    m1 = quad(lambda v: v * np.exp(logpdf(v)), low, high)[0] / m0
    m2 = quad(lambda v: v * v * np.exp(logpdf(v)), low, high)[0] / m0
    return m1, np.sqrt(m2 - m1 * m1)


@pytest.mark.filterwarnings("ignore::ppl.inference.run_warnings.SamplingWarning")  # R-hat, 2 x 300
@pytest.mark.dtypes("float64")
def test_nuts_against_quadrature(backend):
    """Two chains of 300 + 300: each mean within 5 MCSE of the quadrature's, each sd within
    25 % (over seeds 0-5 on numpy: within 1.9 MCSE and 9 %)."""
    mcmc = MCMC(NUTS(edges_model), num_warmup=300, num_samples=300, num_chains=2,
                progress_bar=False)
    mcmc.run(0, ops.asarray(_Y_T))
    draws = mcmc.get_samples(group_by_chain=True)
    refs = {"mu": _quad_moments(lambda m: st.norm.logpdf(m) + st.t.logpdf(_Y_T, _DF, m).sum(),
                                -8.0, 8.0),
            "x": _quad_moments(st.gumbel_r.logpdf, -3.0, -1.0)}
    for name, (mean, sd) in refs.items():
        v = to_numpy(draws[name]).astype(np.float64)
        assert v.shape == (2, 300)
        assert abs(v.mean() - mean) <= 5.0 * float(mcse(v[..., None])[0]), (name, v.mean(), mean)
        assert abs(v.std(ddof=1) / sd - 1.0) <= 0.25, (name, v.std(ddof=1), sd)
    assert np.all((to_numpy(draws["x"]) >= -3.0) & (to_numpy(draws["x"]) <= -1.0))
    assert int(np.sum(to_numpy(mcmc.get_extra_fields()["diverging"]))) == 0


def _nbinom_mp(k, r, p):
    """log of ``C(k + r - 1, k) p^r q^k`` at 40 digits, ``p`` a function giving the success
    probability ``p`` (at that precision) and ``q = 1 - p``."""
    with mp.workdps(40):
        prob = p()
        return float(mp.loggamma(k + r) - mp.loggamma(r) - mp.loggamma(k + 1)
                     + r * mp.log(prob) + k * mp.log1p(-prob))


def _betabinom_mp(k, n, a, b):
    with mp.workdps(40):
        lg = mp.loggamma
        return float(lg(n + 1) - lg(k + 1) - lg(n - k + 1) + lg(k + a) + lg(n - k + b)
                     - lg(n + a + b) - lg(a) - lg(b) + lg(a + b))


def _dirmult_mp(x, alpha):
    with mp.workdps(40):
        lg, n, total = mp.loggamma, int(sum(x)), sum(mp.mpf(a) for a in alpha)
        return float(lg(n + 1) + lg(total) - lg(n + total)
                     + sum(lg(xi + a) - lg(a) - lg(xi + 1) for xi, a in zip(x, alpha)))


def _vectorized(f):
    return lambda values: np.array([f(v) for v in values])


# (family, reference at 40 digits) at concentrations where the plain gammaln differences
# cancel: float32's gammaln(1e6) ~ 1.28e7 has an ulp of 1, so each difference was off by O(1)
# (and SciPy's own float64 pmfs, which difference gammaln too, are ~1e-8 off here)
_COUNT_CASES = [
    ("GammaPoisson", lambda: dist.GammaPoisson(1e6, 2e5), np.array([0, 3, 5, 9]),
     _vectorized(lambda k: _nbinom_mp(int(k), 1e6, lambda: mp.mpf(2e5) / (1 + mp.mpf(2e5))))),
    ("NegativeBinomial2", lambda: dist.NegativeBinomial2(4.0, 3e6), np.array([0, 2, 4, 11]),
     _vectorized(lambda k: _nbinom_mp(int(k), 3e6, lambda: mp.mpf(3e6) / (mp.mpf(3e6) + 4)))),
    ("NegativeBinomial", lambda: dist.NegativeBinomial(5e6, probs=1e-6), np.array([1, 5, 8]),
     _vectorized(lambda k: _nbinom_mp(int(k), 5e6, lambda: 1 - mp.mpf(1e-6)))),
    ("BetaBinomial", lambda: dist.BetaBinomial(2e6, 6e6, total_count=20),
     np.array([0, 5, 9, 20]), _vectorized(lambda k: _betabinom_mp(int(k), 20, 2e6, 6e6))),
    ("DirichletMultinomial", lambda: dist.DirichletMultinomial(
        ops.asarray([1e6, 2e6, 4e6]), total_count=12), np.array([[2, 3, 7], [12, 0, 0]]),
     _vectorized(lambda x: _dirmult_mp([int(v) for v in x], [1e6, 2e6, 4e6]))),
]


@pytest.mark.parametrize("name, make, values, ref", _COUNT_CASES, ids=[c[0] for c in _COUNT_CASES])
def test_count_families_at_large_concentration(backend, dtype, name, make, values, ref):
    """Count families whose pmf holds ``log Gamma(k + a) - log Gamma(a)`` at concentrations of
    1e6-1e7, against mpmath: within ``1e-3 * max(1, |log p|)`` in float32 (the plain
    differences of ``gammaln`` were off by ~1 there) and 1e-11 in float64."""
    got = to_numpy(make().log_prob(ops.asarray(values))).astype(np.float64)
    want = ref(values)
    tol = 1e-3 if dtype == "float32" else 1e-11
    np.testing.assert_array_less(np.abs(got - want), tol * np.maximum(1.0, np.abs(want)),
                                 err_msg=name)


def test_half_student_t_mean_at_large_df(backend, dtype):
    """HalfStudentT's mean at df = 1e6 against SciPy's (``sqrt(2 / pi) * scale`` in the
    limit); its log-gamma ratio was 0.06 off in float32, the mean 6 % off."""
    got = float(to_numpy(dist.HalfStudentT(1e6, 2.0).mean))
    want = st.t(1e6, 0.0, 2.0).expect(lambda x: abs(x))
    np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == "float32" else 1e-7)
