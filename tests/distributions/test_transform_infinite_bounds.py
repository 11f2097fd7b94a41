"""Bounds with infinite entries at latent sites: ``biject_to`` of ``interval`` (``greater_than``,
``less_than``) maps each entry with the transform of its own kind of bounds
(:class:`~ppl.distributions.elementwise_transforms.IntervalTransform`), and the truncated
families give supports it can map, on every backend and float dtype (the ``backend`` fixture of
``tests/conftest.py``).

References: the per-entry map written here in NumPy (``low + (high - low) expit(x)``,
``low + exp(x)``, ``high - exp(x)``, ``x``), its inverse, its log-Jacobian checked against
central finite differences of the NumPy map, and gradients against finite differences of the
NumPy functions; ``numpy`` comparisons for the constraint's ``check``; for NUTS,
``scipy.stats.truncnorm`` means and, for a truncated Cauchy, the median in closed form from
``scipy.stats.cauchy`` and a mean by ``scipy.integrate.quad``.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from conftest import fd_grad, to_numpy
from scipy.integrate import quad
from scipy.special import expit, log_expit, logit

import ppl
from ppl import ops
from ppl.diagnostics import mcse
from ppl.distributions import constraints
from ppl.distributions.elementwise_transforms import IntervalTransform
from ppl.distributions.locscale import Cauchy
from ppl.distributions.transforms import ComposeTransform, biject_to
from ppl.distributions.truncated import TruncatedNormal
from ppl.distributions.truncation import TruncatedDistribution
from ppl.inference import MCMC, NUTS

_LO = np.array([-np.inf, 0.0, -np.inf, 1.0])
_HI = np.array([1.0, np.inf, np.inf, 2.0])
_X = np.array([[-3.0, -1.5, 0.3, 2.5], [0.0, 1.7, -2.2, -0.4], [2.9, -0.1, 3.3, 1.1]])


def _inside(y):
    """``interval(low, high).check(y)`` (bounds as backend arrays: torch compares no NumPy)."""
    return to_numpy(constraints.interval(ops.asarray(_LO), ops.asarray(_HI)).check(y))


def _tol(dtype, kind="value"):
    """(rtol, atol) of a float32/float64 result against a float64 NumPy reference."""
    return {("float64", "value"): (1e-10, 1e-12), ("float32", "value"): (2e-6, 2e-6),
            ("float64", "grad"): (1e-6, 1e-8), ("float32", "grad"): (2e-3, 2e-3)}[(dtype, kind)]


# --------------------------------------------------------------------- NumPy reference map
def _kinds(lo, hi):
    fl, fh = np.isfinite(lo), np.isfinite(hi)
    return fl & fh, fl & ~fh, ~fl & fh


def _ref_forward(x, lo, hi):
    both, lower, upper = _kinds(lo, hi)
    x = np.broadcast_to(x, np.broadcast_shapes(np.shape(x), lo.shape))
    y = x.copy()
    y[..., both] = lo[both] + (hi[both] - lo[both]) * expit(x[..., both])
    y[..., lower] = lo[lower] + np.exp(x[..., lower])
    y[..., upper] = hi[upper] - np.exp(x[..., upper])
    return y


def _ref_inverse(y, lo, hi):
    both, lower, upper = _kinds(lo, hi)
    x = np.array(y, dtype=np.float64)
    x[..., both] = logit((y[..., both] - lo[both]) / (hi[both] - lo[both]))
    x[..., lower] = np.log(y[..., lower] - lo[lower])
    x[..., upper] = np.log(hi[upper] - y[..., upper])
    return x


def _ref_ladj(x, lo, hi):
    both, lower, upper = _kinds(lo, hi)
    out = np.zeros(np.broadcast_shapes(np.shape(x), lo.shape))
    out[..., both] = (np.log(hi[both] - lo[both]) + log_expit(x[..., both])
                      + log_expit(-x[..., both]))
    out[..., lower | upper] = x[..., lower | upper]
    return out


def _fd_log_slope(x, lo, hi, h=1e-6):
    """log |dy/dx| of the NumPy map by central differences (each entry depends on one x)."""
    return np.log(np.abs(_ref_forward(x + h, lo, hi) - _ref_forward(x - h, lo, hi)) / (2 * h))


# bounds as a constraint of NumPy arrays (read: they hold infinite entries), as backend arrays
# in an IntervalTransform, and as the support of a TruncatedNormal built from NumPy arrays
_BUILDERS = {
    "biject_to(interval(numpy))": lambda: biject_to(constraints.interval(_LO, _HI)),
    "IntervalTransform(backend)": lambda: IntervalTransform(ops.asarray(_LO), ops.asarray(_HI)),
    "TruncatedNormal.support": lambda: biject_to(TruncatedNormal(0.0, 1.0, low=_LO,
                                                                 high=_HI).support),
}


def test_reference_ladj_matches_finite_differences():
    """The NumPy log-Jacobian used below is the log slope of the NumPy map."""
    np.testing.assert_allclose(_ref_ladj(_X, _LO, _HI), _fd_log_slope(_X, _LO, _HI), atol=1e-7)


@pytest.mark.parametrize("build", list(_BUILDERS), ids=list(_BUILDERS))
def test_forward_inverse_and_ladj(backend, dtype, build):
    """Mixed bounds (one entry of each kind): values inside the constraint and equal to the
    NumPy map, log|J| equal to the log slope by finite differences, the inverse equal to the
    NumPy inverse, and the round trip."""
    t = _BUILDERS[build]()
    assert isinstance(t, IntervalTransform)
    rtol, atol = _tol(dtype)
    x = _X.astype(dtype).astype(np.float64)
    y = t(ops.asarray(x))
    y_np = to_numpy(y)
    assert y_np.shape == (3, 4) and np.all(np.isfinite(y_np))
    assert np.all(_inside(y))
    np.testing.assert_allclose(y_np, _ref_forward(x, _LO, _HI), rtol=rtol, atol=atol)
    ladj = to_numpy(t.log_abs_det_jacobian(ops.asarray(x), y))
    np.testing.assert_allclose(ladj, _fd_log_slope(x, _LO, _HI), rtol=10 * rtol,
                               atol=max(10 * atol, 1e-7))
    # inverse at reference points of the support, and the round trip
    y_ref = _ref_forward(x, _LO, _HI).astype(dtype).astype(np.float64)
    np.testing.assert_allclose(to_numpy(t.inv(ops.asarray(y_ref))), _ref_inverse(y_ref, _LO, _HI),
                               rtol=20 * rtol, atol=20 * atol)
    np.testing.assert_allclose(to_numpy(t.inv(y)), x, rtol=20 * rtol, atol=50 * atol)
    assert t.forward_shape((3, 4)) == (3, 4) and t.inverse_shape((4,)) == (4,)


def test_gradients_against_finite_differences(backend, dtype):
    """d/dx of sum(y + log|J|), d/dy of sum(t.inv(y)) and d/d(bounds) of sum(y): finite, equal
    to finite differences of the NumPy functions; zero for infinite bound entries."""
    rtol, atol = _tol(dtype, "grad")
    x = _X.astype(dtype).astype(np.float64)

    def f(u):
        t = IntervalTransform(ops.asarray(_LO), ops.asarray(_HI))
        y = t(u)
        return ops.sum(y) + ops.sum(t.log_abs_det_jacobian(u, y))

    g = to_numpy(ops.grad(f)(ops.asarray(x)))
    ref = fd_grad(lambda u: (_ref_forward(u, _LO, _HI) + _ref_ladj(u, _LO, _HI)).sum(), x)
    np.testing.assert_allclose(g, ref, rtol=rtol, atol=atol)

    y = _ref_forward(x, _LO, _HI).astype(dtype).astype(np.float64)
    gi = to_numpy(ops.grad(lambda v: ops.sum(
        IntervalTransform(ops.asarray(_LO), ops.asarray(_HI)).inv(v)))(ops.asarray(y)))
    np.testing.assert_allclose(gi, fd_grad(lambda v: _ref_inverse(v, _LO, _HI).sum(), y, eps=1e-7),
                               rtol=rtol, atol=atol)

    def fb(b):
        return ops.sum(IntervalTransform(b["lo"], b["hi"])(ops.asarray(x)))

    gb = ops.grad(fb)({"lo": ops.asarray(_LO), "hi": ops.asarray(_HI)})
    for name, bound in (("lo", _LO), ("hi", _HI)):
        fin = np.isfinite(bound)

        def ref_b(v, name=name, fin=fin):
            b = {"lo": _LO.copy(), "hi": _HI.copy()}
            b[name][fin] = v
            return _ref_forward(x, b["lo"], b["hi"]).sum()

        got = to_numpy(gb[name])
        assert np.all(got[~fin] == 0.0), (name, got)
        np.testing.assert_allclose(got[fin], fd_grad(ref_b, bound[fin]), rtol=rtol, atol=atol)


def test_far_inputs_stay_finite(backend, dtype):
    """Far into every side (exp overflows float32 past 88): values finite and inside the
    constraint, log|J| and every gradient finite (the safe-``where`` branches)."""
    t = IntervalTransform(ops.asarray(_LO), ops.asarray(_HI))
    x = ops.asarray(np.array([[-300.0, 90.0, -90.0, 300.0], [300.0, -300.0, 90.0, -90.0],
                              [90.0, 300.0, -300.0, 0.0]]))
    y = t(x)
    for v in (y, t.log_abs_det_jacobian(x, y), t.inv(y)):
        assert np.all(np.isfinite(to_numpy(v)))
    assert np.all(_inside(y))

    def f(u):
        v = t(u)
        return ops.sum(v) + ops.sum(t.log_abs_det_jacobian(u, v)) + ops.sum(t.inv(v))

    assert np.all(np.isfinite(to_numpy(ops.grad(f)(x))))
    # the inverse at the bounds themselves and far outside the finite ones
    edge = ops.asarray(np.array([[1.0, 0.0, 0.0, 1.0], [-1e30, 1e30, 1e30, 2.0],
                                 [1e30, -1e30, -1e30, 1e30]]))
    assert np.all(np.isfinite(to_numpy(t.inv(edge))))
    assert np.all(np.isfinite(to_numpy(ops.grad(lambda v: ops.sum(t.inv(v)))(edge))))


def test_traced_bounds_of_a_truncated_support(backend, dtype):
    """Under the backend's compiler the bounds are traced: the truncated families' supports
    still take the entry-by-entry map."""
    @ops.jit
    def run(u):
        d = TruncatedNormal(0.0, 1.0, low=_LO, high=_HI)
        t = biject_to(d.support)
        y = t(u)
        return y, t.log_abs_det_jacobian(u, y)

    rtol, atol = _tol(dtype)
    x = _X.astype(dtype).astype(np.float64)
    y, ladj = run(ops.asarray(x))
    np.testing.assert_allclose(to_numpy(y), _ref_forward(x, _LO, _HI), rtol=rtol, atol=atol)
    np.testing.assert_allclose(to_numpy(ladj), _ref_ladj(x, _LO, _HI), rtol=10 * rtol,
                               atol=10 * atol)


# ----------------------------------------------------------- the fixed maps, unchanged
_FINITE = [  # (constraint factory, low, high): bounds with only finite entries
    ("interval", -1.0, 3.0),
    ("interval", np.array([0.0, -2.0]), np.array([1.0, 5.0])),
    ("greater_than", np.array([0.5, -3.0]), None),
    ("less_than", None, 2.0),
]


def _backend_array(b):
    return b if b is None or isinstance(b, float) else ops.asarray(b)


@pytest.mark.parametrize("case", _FINITE, ids=[f"{c[0]}-{i}" for i, c in enumerate(_FINITE)])
def test_finite_bounds_keep_the_fixed_maps(backend, dtype, case):
    """Finite bounds of plain constraints (Python numbers; arrays, read on numpy, traced or
    not read elsewhere) give the sigmoid (exp) and affine composition, with the values of the
    NumPy formulas (sigmoid clipped into [tiny, 1 - eps] as before)."""
    name, lo, hi = case
    blo, bhi = _backend_array(lo), _backend_array(hi)
    c = {"interval": lambda: constraints.interval(blo, bhi),
         "greater_than": lambda: constraints.greater_than(blo),
         "less_than": lambda: constraints.less_than(bhi)}[name]()
    t = biject_to(c)
    assert isinstance(t, ComposeTransform)
    rtol, atol = _tol(dtype)
    fi = np.finfo(dtype)
    x = (np.linspace(-4.0, 4.0, 6)[:, None] * np.ones(2)).astype(dtype).astype(np.float64)
    got = to_numpy(t(ops.asarray(x)))
    if name == "interval":
        p = np.clip(expit(x), float(fi.tiny), 1.0 - float(fi.eps))
        ref = lo + (np.asarray(hi) - lo) * p
        ref_ladj = np.log(np.asarray(hi) - lo) + log_expit(x) + log_expit(-x)
    else:
        ref = lo + np.exp(x) if name == "greater_than" else hi - np.exp(x)
        ref_ladj = x
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)
    ladj = to_numpy(t.log_abs_det_jacobian(ops.asarray(x), t(ops.asarray(x))))
    np.testing.assert_allclose(ladj, np.broadcast_to(ref_ladj, ladj.shape), rtol=rtol,
                               atol=10 * atol)


def test_entrywise_map_equals_the_fixed_map_on_finite_bounds(backend, dtype):
    """Where both bounds are finite the entry-by-entry map gives the very values of the old
    composition (so supports that switch path do not change draws)."""
    lo, hi = ops.asarray([0.0, -2.0, 1.0]), ops.asarray([1.0, 5.0, 1.5])
    x = ops.asarray(np.linspace(-6.0, 6.0, 9)[:, None] * np.ones(3))
    fixed, entrywise = biject_to(constraints.interval(lo, hi)), IntervalTransform(lo, hi)
    assert isinstance(fixed, ComposeTransform)
    y = to_numpy(entrywise(x))
    np.testing.assert_array_equal(y, to_numpy(fixed(x)))
    np.testing.assert_array_equal(to_numpy(entrywise.log_abs_det_jacobian(x, None)),
                                  to_numpy(fixed.log_abs_det_jacobian(x, fixed(x))))
    np.testing.assert_array_equal(to_numpy(entrywise.inv(ops.asarray(y))),
                                  to_numpy(fixed.inv(ops.asarray(y))))


def test_which_supports_take_which_map(backend):
    """Truncated families with known-finite NumPy/Python bounds keep today's supports and
    maps; an infinite entry, or bounds given as backend arrays, give the entry-by-entry map."""
    cauchy = Cauchy(0.0, 1.0)
    kept = [TruncatedNormal(0.0, 1.0, low=0.0), TruncatedNormal(0.0, 1.0, high=np.array([1.0])),
            TruncatedNormal(0.0, 1.0, low=-1.0, high=2.0),
            TruncatedDistribution(cauchy, low=np.array([0.0, 1.0]), high=3.0)]
    for d in kept:
        assert not isinstance(d.support, constraints.ExtendedInterval)
        assert isinstance(biject_to(d.support), ComposeTransform), d
    entrywise = [TruncatedNormal(0.0, 1.0, low=-np.inf), TruncatedNormal(0.0, 1.0, low=_LO),
                 TruncatedDistribution(cauchy, low=np.array([-np.inf, 1.0]), high=3.0),
                 TruncatedDistribution(cauchy, high=np.array([np.inf, 1.0]))]
    for d in entrywise:
        assert isinstance(d.support, constraints.interval), d
        assert isinstance(biject_to(d.support), IntervalTransform), d
    # bounds given as backend arrays are not read (NumPy arrays on numpy are)
    two = ops.asarray(2.0)
    d = TruncatedNormal(0.0, 1.0, high=two)
    assert isinstance(biject_to(d.support), ComposeTransform if isinstance(two, np.ndarray)
                      else IntervalTransform)
    assert repr(TruncatedNormal(0.0, 1.0, low=_LO).support).startswith("interval(")
    for c in (constraints.greater_than(_LO), constraints.less_than(_HI)):
        assert isinstance(biject_to(c), IntervalTransform)


def test_interval_check_and_feasible_with_infinite_entries(backend):
    vals = np.array([[-np.inf, 0.0, -5.0, 1.0], [1.0, np.inf, np.inf, 2.0],
                     [1.5, -1e-9, 3.0, 2.5], [-1e30, 1e30, np.nan, 0.5]])
    ref = (vals >= _LO) & (vals <= _HI)
    lo, hi = ops.asarray(_LO), ops.asarray(_HI)
    for c in (constraints.interval(lo, hi), constraints.ExtendedInterval(lo, hi)):
        np.testing.assert_array_equal(to_numpy(c.check(ops.asarray(vals))), ref)
    feasible = constraints.ExtendedInterval(_LO, _HI).feasible_like(ops.zeros((2, 4)))
    f = to_numpy(feasible)
    assert f.shape == (2, 4) and np.all(np.isfinite(f)) and np.all((f > _LO) & (f < _HI))


# --------------------------------------------------------------------------------- NUTS
_TN_LO, _TN_HI = np.array([-np.inf, 0.0, -np.inf]), np.array([1.0, np.inf, np.inf])
_TC_LO, _TC_HI = np.array([-np.inf, -1.0]), np.array([1.0, 2.0])


def _model():
    ppl.sample("x", TruncatedNormal(0.0, 1.0, low=_TN_LO, high=_TN_HI))
    ppl.sample("c", TruncatedDistribution(Cauchy(0.0, 1.0), low=_TC_LO, high=_TC_HI))


def _cauchy_mean(a, b):
    z = st.cauchy.cdf(b) - st.cauchy.cdf(a)
    return quad(lambda t: t * st.cauchy.pdf(t), a, b)[0] / z


@pytest.mark.filterwarnings("ignore::ppl.inference.run_warnings.SamplingWarning")  # R-hat, 2 x 300
@pytest.mark.dtypes("float64")
def test_nuts_with_infinite_bounds(backend):
    """Two chains of 300 + 300 on two truncated sites (no data; every kind of bound pair):
    means within 4 MCSE of ``scipy.stats.truncnorm``'s and of the quadrature's; for the Cauchy
    entry with an infinite side (no mean) the share of draws below the exact median within
    4 MCSE of 1/2."""
    mcmc = MCMC(NUTS(_model), num_warmup=300, num_samples=300, num_chains=2, progress_bar=False)
    mcmc.run(0)
    s = {k: to_numpy(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    assert s["x"].shape == (2, 300, 3) and np.all(np.isfinite(s["x"]))
    checks = {"x": (s["x"], st.truncnorm(_TN_LO, _TN_HI).mean()),
              "c[1]": (s["c"][..., 1], _cauchy_mean(-1.0, 2.0))}
    median = st.cauchy.ppf(0.5 * st.cauchy.cdf(1.0))           # of Cauchy on (-inf, 1]
    checks["P(c[0] < median)"] = ((s["c"][..., 0] < median).astype(float), 0.5)
    for name, (draws, mean) in checks.items():
        err, se = np.abs(draws.mean((0, 1)) - mean), mcse(draws)
        assert np.all(err <= 4.0 * se), f"{name}: {draws.mean((0, 1))} vs {mean} ({se})"
    assert np.all(s["x"][..., 0] <= 1.0) and np.all(s["x"][..., 1] >= 0.0)
    assert np.all(s["c"][..., 0] <= 1.0) and np.all(np.abs(s["c"][..., 1] - 0.5) <= 1.5)
    assert int(np.sum(to_numpy(mcmc.get_extra_fields()["diverging"]))) == 0
