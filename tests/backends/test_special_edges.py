"""Special functions at the edges of their domains (0, +-0, negative integers, +-inf, NaN, tiny
and huge arguments) against SciPy, on every backend and dtype, eagerly and under ``ops.jit``;
``betaln`` at large arguments against values computed with mpmath; derivatives of ``ndtri``,
``erfinv`` and ``betaln``.

The reference is SciPy evaluated in float64 on the inputs rounded to the tested dtype, then
rounded to it (``gammaln(3e38)`` is ``inf`` in float32). A few differences belong to the
frameworks of other backends and are listed in ``KNOWN`` (the test fails on any other, and
passes once they are gone): JAX and torch give ``gammaln(-inf) = +inf`` (SciPy: ``-inf``),
JAX ``digamma(+-0) = NaN`` (SciPy: ``-inf``/``+inf``), ``nan`` for ``betaln`` at an infinite or
zero argument, and a float32 ``log_ndtr(5)`` 4 % off.

Not tested here: XLA's float32 ``lgamma`` is ~5e-7 off near its zeros 1 and 2 (absolute error,
within float32's tolerance elsewhere), and SciPy's own quirks (``gammaln`` of a float64
subnormal is ``inf``, ``betaln(inf, 1e300)`` NaN, ``betaln(nan, 0)`` inf).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as sp

from ppl import ops

inf, nan = math.inf, math.nan

#: op: (inputs, SciPy reference); binary ops take pairs
EDGES = {
    "digamma": ([0.0, -0.0, -1.0, -2.0, -2.5, 1e-30, -1e-30, 1e-300, -1e-300, 5.5, 1e30, inf,
                 -inf, nan], sp.psi),
    "gammaln": ([0.0, -0.0, -1.0, -2.0, -2.5, 0.5, 1e-30, -1e-30, 1e30, 3e38, 1e300, -1e20,
                 -1e300, inf, -inf, nan], sp.gammaln),
    "erfinv": ([-1.0, 1.0, -1.5, 1.5, 2.0, 0.0, 1e-30, -1e-30, 1e-10, 1e-5, 0.3, -0.7, 0.9,
                0.999999, 1 - 1e-7, -(1 - 1e-7), inf, -inf, nan], sp.erfinv),
    "erf": ([0.0, 1e-30, -0.5, 5.0, 30.0, 1e30, 1e200, inf, -inf, nan], sp.erf),
    "erfc": ([0.0, -1e-30, -5.0, 10.0, 26.0, 1e200, inf, -inf, nan], sp.erfc),
    "ndtri": ([0.0, 1.0, -0.1, 1.1, 0.5, 1e-300, 1e-30, 1e-10, 0.1, 0.9, 1 - 1e-7, inf, -inf,
               nan], sp.ndtri),
    "log_ndtr": ([0.0, -10.0, -20.0, -40.0, -1e10, 5.0, 10.0, 40.0, 1e10, inf, -inf, nan],
                 sp.log_ndtr),
    "betaln": ([(0.5, 3.0), (0.0, 1.0), (1.0, 0.0), (0.0, 0.0), (0.0, inf), (inf, 1.0),
                (1.0, inf), (inf, inf), (inf, 0.0), (1e-30, 1.0), (-0.5, 1.0), (-0.5, 20.0),
                (-inf, 1.0), (nan, 1.0), (1.0, nan)], sp.betaln),
    "xlogy": ([(0.0, 0.0), (0.0, inf), (0.0, -1.0), (0.0, nan), (1.0, 0.0), (-1.0, 0.0),
               (nan, 0.0), (2.0, inf), (1.0, -1.0), (3.0, 2.0)], sp.xlogy),
    "xlog1py": ([(0.0, -1.0), (0.0, inf), (0.0, -2.0), (0.0, nan), (1.0, -1.0), (-1.0, -1.0),
                 (nan, 0.0), (1.0, 1e-30), (1.0, -2.0)], sp.xlog1py),
}

#: (backend, op): the inputs where that backend's framework still differs from SciPy
KNOWN = {
    ("jax", "digamma"): {0.0, 1e-300, -1e-300},     # NaN at +-0 (+-1e-300 in float32)
    ("jax", "gammaln"): {-inf, -1e300},     # +inf at -inf (-1e300 is -inf in float32)
    ("torch", "gammaln"): {-inf, -1e300},
    ("jax", "log_ndtr"): {5.0},     # -2.98e-7 in float32 (SciPy -2.87e-7), 2e-10 off in float64
    ("jax", "betaln"): {(0.0, 0.0), (0.0, inf), (inf, 1.0), (1.0, inf), (inf, 0.0),
                        (-inf, 1.0), (-0.5, 20.0)},     # and 7e-9 off at (-0.5, 20)
}
#: backends whose ``betaln`` is the framework's own and less accurate than the tests below ask:
#: ``jax.scipy.special.betaln`` is ~1e-7 off in float64 at (12, 0.25), (9.5, 10.5), (50, 60),
#: and its derivative 1e-6 at (3e3, 7e3)
BETALN_OWN = {"jax"}


def _key(v):
    """A hashable, NaN-free name of an input (for ``KNOWN``): -0.0 counts as 0.0."""
    if isinstance(v, tuple):
        return tuple(_key(u) for u in v)
    return "nan" if math.isnan(v) else v + 0.0


def _columns(points, dtype):
    with np.errstate(over="ignore", under="ignore"):
        arr = np.array(points, dtype=dtype)
    return [arr] if arr.ndim == 1 else [arr[:, 0], arr[:, 1]]


def _mismatches(name, got, want, points, dtype, mode):
    rtol = 1e-5 if dtype == "float32" else 1e-10
    ok = np.isclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                    atol=10 * float(np.finfo(dtype).tiny), equal_nan=True)
    return {(_key(p), mode, g, w) for p, g, w, k in zip(points, got, want, ok) if not k}


@pytest.mark.parametrize("name", sorted(EDGES))
def test_edge_values_match_scipy(backend, dtype, name):
    """Every edge input of ``EDGES``, eagerly and under ``jit``, in the backend's dtype."""
    points, ref = EDGES[name]
    cols = _columns(points, dtype)
    with np.errstate(all="ignore"):
        want = np.asarray(ref(*(c.astype(np.float64) for c in cols))).astype(dtype)
    fn = getattr(ops, name)
    wrong = set()
    for mode, wrap in (("eager", lambda f: f), ("jit", ops.jit)):
        with np.errstate(all="ignore"):             # the numpy backend's inf - inf and the like
            got = ops.to_numpy(wrap(fn)(*(ops.asarray(c) for c in cols)))
        assert got.dtype == np.dtype(dtype), f"{name} ({mode}) gave {got.dtype}"
        wrong |= _mismatches(name, got, want, points, dtype, mode)
    known = {_key(p) for p in KNOWN.get((backend.name, name), ())}
    unexplained = sorted((w for w in wrong if w[0] not in known), key=str)
    assert not unexplained, f"{name}: (input, mode, got, SciPy) {unexplained}"
    if wrong:
        pytest.xfail(f"{backend.name}'s {name} differs from SciPy at "
                     f"{sorted({w[0] for w in wrong}, key=str)}")


#: (a, b, log|B(a, b)|): mpmath at 60 digits (``log(abs(beta(a, b)))``); every argument is
#: exact in float32. SciPy is 5e-13 off at (2, 1e4); ``gammaln(a) + gammaln(b) - gammaln(a+b)``
#: gave 0 at (1, 2^100) in both dtypes and -26.9375 at (1e4, 3) in float32.
BETALN_LARGE = [
    (1.0, 2.0 ** 100, -69.31471805599453),
    (2.0 ** 100, 1.0, -69.31471805599453),
    (0.5, 1e7, -7.48668287005446),
    (1e4, 3.0, -26.938173910371603),
    (1e5, 1e5, -138633.92706134808),
    (2.0 ** 33, 0.125, -0.8398137622496116),
    (2.0, 1e4, -18.4207807389527),
    (3e3, 7e3, -6111.548896978379),
    (2.0 ** 50, 2.5, -86.35871469952025),
    (12.0, 0.25, 0.6746608648610707),
    (9.5, 10.5, -13.709925546998463),
    (50.0, 60.0, -76.52272335335051),
    (2.0 ** -100, 2.0 ** -100, 70.00786523655448),
    (-2.5, 20.0, 7.20252557475447),
    (0.5, 3.0, 0.06453852113757118),
    (8.0, 8.0, -10.848948661710063),
]


def _unless_known(backend, check):
    """``check()``; an ``AssertionError`` is an expected failure on the backends of
    ``BETALN_OWN``."""
    try:
        check()
    except AssertionError as err:
        if backend.name not in BETALN_OWN:
            raise
        pytest.xfail(f"{backend.name}'s own betaln: {str(err).splitlines()[0]}")


def test_betaln_at_large_arguments(backend, dtype):
    a, b, want = (np.array(c, dtype) for c in zip(*BETALN_LARGE))
    rtol, atol = (1e-5, 1e-6) if dtype == "float32" else (1e-13, 1e-14)

    def check():
        for wrap in (lambda f: f, ops.jit):
            got = ops.to_numpy(wrap(ops.betaln)(ops.asarray(a), ops.asarray(b)))
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)

    _unless_known(backend, check)


@pytest.mark.dtypes("float64")
def test_betaln_derivatives(backend):
    """``d/da log B(a, b) = psi(a) - psi(a + b)``, also where the series is used and at
    ``a == b`` (the arguments are ordered with ``where``; ``minimum``/``maximum`` would give the
    whole derivative to one argument on TensorFlow)."""
    a = np.array([0.5, 2.0, 3e3, 12.0, 1e4, 7.0, 40.0])
    b = np.array([3.0, 1e4, 7e3, 0.25, 3.0, 7.0, 40.0])
    da = sp.psi(a) - sp.psi(a + b)
    db = sp.psi(b) - sp.psi(a + b)
    grad = ops.grad(lambda x, y: ops.sum(ops.betaln(x, y)), argnums=(0, 1))

    def check():
        for wrap in (lambda f: f, ops.jit):
            ga, gb = wrap(grad)(ops.asarray(a), ops.asarray(b))
            np.testing.assert_allclose(ops.to_numpy(ga), da, rtol=1e-9)
            np.testing.assert_allclose(ops.to_numpy(gb), db, rtol=1e-9)

    _unless_known(backend, check)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_xlogy_derivatives_at_zero(backend, dtype, name):
    """``d/dx x log(y) = log(y)`` at ``x = 0`` too (numpy's and TensorFlow's gave 0 there, so
    ``Beta(1.0, b)``'s gradient in its concentration was wrong), and ``d/dy = x / y``;
    central finite differences of SciPy's function in float64 as the reference."""
    x = np.array([0.0, 0.0, 1.5, 2.0])
    y = np.array([0.5, 3.0, 0.25, 1.0]) - (1.0 if name == "xlog1py" else 0.0) * 0.5
    ref, fn = getattr(sp, name), getattr(ops, name)
    h = 1e-6
    want_x = (ref(x + h, y) - ref(x - h, y)) / (2 * h)
    want_y = (ref(x, y + h) - ref(x, y - h)) / (2 * h)
    grad = ops.grad(lambda a, b: ops.sum(fn(a, b)), argnums=(0, 1))
    rtol = 1e-5 if dtype == "float32" else 1e-8
    for wrap in (lambda f: f, ops.jit):
        gx, gy = wrap(grad)(ops.asarray(x), ops.asarray(y))
        np.testing.assert_allclose(ops.to_numpy(gx), want_x, rtol=rtol, atol=rtol)
        np.testing.assert_allclose(ops.to_numpy(gy), want_y, rtol=rtol, atol=rtol)


#: op: (points, its derivative as a function of its value): d ndtri(p)/dp = sqrt(2 pi)
#: exp(x^2/2), d erfinv(x)/dx = sqrt(pi)/2 exp(y^2)
DERIVATIVES = {
    "ndtri": ([1e-30, 1e-5, 0.1, 0.5, 0.9, 1 - 1e-6],
              lambda y: np.sqrt(2 * np.pi) * np.exp(0.5 * y * y)),
    "erfinv": ([-0.999, -0.3, 1e-20, 0.0, 0.5, 0.9999],
               lambda y: 0.5 * np.sqrt(np.pi) * np.exp(y * y)),
}


@pytest.mark.parametrize("name", sorted(DERIVATIVES))
def test_quantile_derivatives(backend, dtype, name):
    """Derivatives of ``ndtri`` and ``erfinv`` (TensorFlow's are written out) through ``grad``,
    ``jit`` and ``vmap``, against the closed form at the backend's own values (which the tests
    above compare with SciPy): near +-1 a float32 value's error is magnified in the
    derivative, and ``exp(y^2)`` loses ``y^2`` rounding errors."""
    points, deriv = DERIVATIVES[name]
    x = ops.asarray(np.array(points, dtype))
    fn = getattr(ops, name)
    y = ops.to_numpy(fn(x)).astype(np.float64)
    want = deriv(y)
    rtol = np.maximum(1e-5 if dtype == "float32" else 1e-12, 8 * np.finfo(dtype).eps * y * y)
    summed = ops.grad(lambda v: ops.sum(fn(v)))
    mapped = ops.vmap(ops.grad(fn))
    for got in (summed(x), ops.jit(summed)(x), ops.jit(mapped)(x)):
        got = ops.to_numpy(got).astype(np.float64)
        assert np.all(np.abs(got - want) <= rtol * want), list(zip(points, got, want))


@pytest.mark.parametrize("name", ["ndtri", "erfinv"])
def test_quantiles_match_scipy_on_a_dense_grid(backend, dtype, name):
    """``ndtri`` down to the smallest normal ``p`` and ``erfinv`` from 1e-30 to 1 - eps, within
    a few rounding errors of the input (the functions' conditioning) and the output.
    TensorFlow's eager ``erfinv`` was 0 below 1e-16 (float64) and XLA's ``ndtri`` (its ``jit``)
    ``-inf`` from ``p ~ 1e-8`` in float32."""
    info = np.finfo(dtype)
    if name == "ndtri":
        lo = np.log10(info.tiny)
        x = np.concatenate([np.logspace(lo, -1, 400), np.linspace(0.0, 1.0, 401)[1:-1],
                            1 - np.logspace(-1, np.log10(info.eps), 200)]).astype(dtype)
        x = np.maximum(x, info.tiny)        # XLA flushes subnormals to 0
        ref, slope = sp.ndtri, lambda y: np.sqrt(2 * np.pi) * np.exp(0.5 * y * y)
    else:
        x = np.concatenate([np.logspace(-30, -1, 300), np.linspace(-1.0, 1.0, 401)[1:-1],
                            1 - np.logspace(-1, np.log10(info.eps), 200)]).astype(dtype)
        ref, slope = sp.erfinv, lambda y: 0.5 * np.sqrt(np.pi) * np.exp(y * y)
    x64 = x.astype(np.float64)
    want = ref(x64)
    # the error of the input's rounding, carried through the slope, plus the output's own
    tol = 8 * info.eps * (np.abs(x64) * slope(want) + np.abs(want))
    for wrap in (lambda f: f, ops.jit):
        got = ops.to_numpy(wrap(getattr(ops, name))(ops.asarray(x))).astype(np.float64)
        bad = ~(np.abs(got - want) <= tol)
        assert not bad.any(), list(zip(x[bad][:5], got[bad][:5], want[bad][:5]))
