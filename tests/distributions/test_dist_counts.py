"""The count families of ``counts.py`` and ``zero_inflated.py`` against independent references:
one table, crossed with every backend and float dtype (the ``backend`` fixture of
``tests/conftest.py``).

References: ``scipy.stats`` (``nbinom``, ``betabinom``, ``poisson``, ``binom``,
``dirichlet_multinomial``); the zero-inflated laws as mixtures written here in NumPy over
SciPy's base pmf. ``GammaPoisson(a, b)`` is ``nbinom(a, b / (1 + b))`` and
``NegativeBinomial2(mu, phi)`` is ``nbinom(phi, phi / (phi + mu))``.

Per case: ``log_prob`` on a grid inside and outside the support (integer- and float-valued
input) and at non-integers (``-inf``); gradients in the continuous parameters against central
finite differences of the reference's ``logpmf``; ``mean``/``variance``; draws (integer dtype,
sample mean within 6 standard errors, chi-square goodness of fit at alpha = 1e-4 on a fixed key).
Then shapes and broadcasting, enumeration, bad arguments, extreme parameters, jit, and NUTS on
two small models against a quadrature posterior.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import scipy.stats as st
from conftest import chi2_pvalue, fd_grad, to_numpy
from scipy.special import expit

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.diagnostics import mcse
from ppl.inference import MCMC, NUTS


# ----------------------------------------------------------------------------- references
def _nb2(mean, concentration):
    return st.nbinom(concentration, concentration / (concentration + mean))


class _ZeroInflatedRef:
    """``gate`` point mass at zero mixed with the SciPy law ``base`` (NumPy arithmetic)."""

    def __init__(self, base, gate):
        self.base, self.gate = base, float(gate)

    def pmf(self, k):
        k = np.asarray(k, dtype=np.float64)
        return (1.0 - self.gate) * self.base.pmf(k) + self.gate * (k == 0)

    def logpmf(self, k):
        with np.errstate(divide="ignore"):
            return np.log(self.pmf(k))

    def mean(self):
        return (1.0 - self.gate) * self.base.mean()

    def var(self):
        second = (1.0 - self.gate) * (self.base.var() + self.base.mean() ** 2)
        return second - self.mean() ** 2


class _DirichletMultinomialRef:
    """``scipy.stats.dirichlet_multinomial``, with ``-inf`` for vectors SciPy refuses
    (negative or non-integer entries)."""

    def __init__(self, alpha, n):
        self.base = st.dirichlet_multinomial(alpha, int(n))

    def logpmf(self, x):
        x = np.asarray(x, dtype=np.float64)
        ok = np.all((x >= 0) & (np.floor(x) == x), axis=-1)
        out = np.full(x.shape[:-1], -np.inf)
        if np.any(ok):
            out[ok] = self.base.logpmf(x[ok].astype(np.int64))
        return out

    def pmf(self, x):
        return np.exp(self.logpmf(x))

    def mean(self):
        return self.base.mean()

    def cov(self):
        return self.base.cov()


# ----------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Case:
    """``make(**params)`` builds the distribution (batch ``(2,)``); ``ref(**params_j)`` is the
    reference law of batch entry ``j``; ``grad`` names the continuous parameters."""

    id: str
    make: Callable
    params: dict
    ref: Callable
    grad: tuple = ()
    grid: tuple = tuple(range(-1, 16))
    event: int = 0


def _a(*v):
    return np.array(v, dtype=np.float64)


_ALPHA = np.array([[0.6, 1.5, 2.0], [3.0, 1.0, 0.8]])

CASES = [
    Case("GammaPoisson", dist.GammaPoisson, dict(concentration=_a(2.5, 0.7), rate=_a(0.8, 0.3)),
         lambda concentration, rate: st.nbinom(concentration, rate / (1.0 + rate)),
         grad=("concentration", "rate")),
    Case("NegativeBinomial2", dist.NegativeBinomial2,
         dict(mean=_a(3.0, 0.6), concentration=_a(1.5, 8.0)), _nb2,
         grad=("mean", "concentration")),
    Case("BetaBinomial", dist.BetaBinomial,
         dict(concentration1=_a(0.8, 3.0), concentration0=_a(2.5, 1.2), total_count=_a(6, 12)),
         lambda concentration1, concentration0, total_count:
             st.betabinom(int(total_count), concentration1, concentration0),
         grad=("concentration1", "concentration0")),
    Case("ZeroInflatedPoisson-gate", dist.ZeroInflatedPoisson,
         dict(gate=_a(0.3, 0.05), rate=_a(1.5, 4.0)),
         lambda gate, rate: _ZeroInflatedRef(st.poisson(rate), gate), grad=("gate", "rate")),
    Case("ZeroInflatedPoisson-logits",
         lambda gate_logits, rate: dist.ZeroInflatedPoisson(rate=rate, gate_logits=gate_logits),
         dict(gate_logits=_a(-0.5, 1.2), rate=_a(2.5, 0.8)),
         lambda gate_logits, rate: _ZeroInflatedRef(st.poisson(rate), expit(gate_logits)),
         grad=("gate_logits", "rate")),
    Case("ZeroInflatedNegativeBinomial2-gate",
         lambda mean, concentration, gate:
             dist.ZeroInflatedNegativeBinomial2(mean, concentration, gate=gate),
         dict(mean=_a(4.0, 1.2), concentration=_a(2.0, 0.9), gate=_a(0.25, 0.6)),
         lambda mean, concentration, gate: _ZeroInflatedRef(_nb2(mean, concentration), gate),
         grad=("mean", "concentration", "gate")),
    Case("ZeroInflatedNegativeBinomial2-logits",
         lambda mean, concentration, gate_logits:
             dist.ZeroInflatedNegativeBinomial2(mean, concentration, gate_logits=gate_logits),
         dict(mean=_a(2.0, 5.0), concentration=_a(3.0, 1.1), gate_logits=_a(0.4, -2.0)),
         lambda mean, concentration, gate_logits:
             _ZeroInflatedRef(_nb2(mean, concentration), expit(gate_logits)),
         grad=("mean", "concentration", "gate_logits")),
    Case("ZeroInflated-Binomial",
         lambda total_count, probs, gate:
             dist.ZeroInflatedDistribution(dist.Binomial(total_count, probs=probs), gate=gate),
         dict(total_count=_a(5, 9), probs=_a(0.4, 0.7), gate=_a(0.2, 0.45)),
         lambda total_count, probs, gate:
             _ZeroInflatedRef(st.binom(int(total_count), probs), gate),
         grad=("probs", "gate")),
    Case("ZeroInflated-Geometric-logits",
         lambda probs, gate_logits: dist.ZeroInflatedDistribution(
             dist.Geometric(probs=probs), gate_logits=gate_logits),
         dict(probs=_a(0.35, 0.6), gate_logits=_a(-1.0, 0.3)),
         lambda probs, gate_logits: _ZeroInflatedRef(st.geom(probs, loc=-1), expit(gate_logits)),
         grad=("probs", "gate_logits")),
    Case("DirichletMultinomial", dist.DirichletMultinomial,
         dict(concentration=_ALPHA, total_count=_a(4, 6)),
         lambda concentration, total_count: _DirichletMultinomialRef(concentration, total_count),
         grad=("concentration",), event=1),
]
IDS = [c.id for c in CASES]
BATCH = (2,)


def _rounded(params, dtype):
    """The parameters as the backend holds them (rounded to ``dtype``), in float64."""
    return {k: v.astype(dtype).astype(np.float64) for k, v in params.items()}


def _build(case, params=None):
    params = case.params if params is None else params
    return case.make(**{k: ops.asarray(v) for k, v in params.items()})


def _ref_j(case, params, j):
    return case.ref(**{k: v[j] for k, v in params.items()})


def _values(case):
    """Evaluation points, shape ``(n,) + BATCH (+ (K,))``, as float64."""
    if case.event == 0:
        return np.repeat(np.asarray(case.grid, dtype=np.float64)[:, None], 2, axis=1)
    # every count vector with entries 0..7 summing to 3..7, and some with bad entries
    vecs = [v for v in itertools.product(range(8), repeat=3) if 3 <= sum(v) <= 7]
    vecs += [(-1, 2, 3), (5, 0, -1), (-2, 3, 3)]
    return np.repeat(np.asarray(vecs, dtype=np.float64)[:, None, :], 2, axis=1)


def _ref_logpmf(case, params, x):
    return np.stack([_ref_j(case, params, j).logpmf(x[:, j]) for j in range(BATCH[0])], axis=1)


def _assert_lp(lp, expected, dtype, msg=""):
    assert lp.shape == expected.shape, (lp.shape, expected.shape)
    np.testing.assert_array_equal(np.isneginf(lp), np.isneginf(expected), err_msg=msg)
    fin = np.isfinite(expected)
    rtol, atol = (1e-6, 1e-9) if dtype == "float64" else (1e-4, 1e-4)
    np.testing.assert_allclose(lp[fin], expected[fin], rtol=rtol,
                               atol=atol * max(1.0, np.abs(expected[fin]).max()), err_msg=msg)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_log_prob(case, backend, dtype):
    d = _build(case)
    assert d.batch_shape == BATCH
    assert d.event_shape == (() if case.event == 0 else (3,))
    assert d.is_discrete and d.support.is_discrete
    x = _values(case)
    expected = _ref_logpmf(case, _rounded(case.params, dtype), x)
    assert np.isfinite(expected).sum() >= 10 and np.isneginf(expected).sum() >= 2
    _assert_lp(to_numpy(d.log_prob(ops.asarray(x))), expected, dtype, "float-valued input")
    _assert_lp(to_numpy(d.log_prob(ops.asarray(x.astype(np.int64)))), expected, dtype,
               "integer-valued input")
    if case.event == 0:
        for bad in (0.5, 2.25, -0.5):
            out = to_numpy(d.log_prob(ops.asarray(np.full(BATCH, bad))))
            assert np.all(out == -np.inf), f"log_prob({bad}) = {out}, expected -inf"
    else:
        out = to_numpy(d.log_prob(ops.asarray(np.array([[1.5, 1.0, 1.5], [2.0, 2.5, 1.5]]))))
        assert np.all(out == -np.inf), f"non-integer counts: {out}, expected -inf"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_log_prob_grad(case, backend, dtype):
    """d/d(continuous params) of sum(log_prob) vs finite differences of the reference."""
    params = _rounded(case.params, dtype)
    x = _values(case)
    inside = np.isfinite(_ref_logpmf(case, params, x)).all(axis=1)
    x = x[inside][:: max(1, inside.sum() // 8)]       # ~8 points, zero among them

    def f(p):
        return ops.sum(case.make(**{**{k: ops.asarray(v) for k, v in params.items()}, **p})
                       .log_prob(ops.asarray(x)))

    grads = ops.grad(f)({k: ops.asarray(params[k]) for k in case.grad})
    for name in case.grad:
        def ref_f(v, name=name):
            return _ref_logpmf(case, {**params, name: v}, x).sum()

        ref = fd_grad(ref_f, params[name], eps=1e-6)
        got = to_numpy(grads[name])
        rtol, atol = (1e-5, 1e-6) if dtype == "float64" else (2e-3, 2e-3)
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol * max(1.0, np.abs(ref).max()),
                                   err_msg=f"d log_prob / d {name}")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_mean_variance(case, backend, dtype):
    d = _build(case)
    params = _rounded(case.params, dtype)
    mean, var = to_numpy(d.mean), to_numpy(d.variance)
    shape = BATCH + (() if case.event == 0 else (3,))
    assert mean.shape == shape and var.shape == shape
    refs = [_ref_j(case, params, j) for j in range(BATCH[0])]
    if case.event:
        ref_mean = np.stack([r.mean() for r in refs])
        ref_var = np.stack([np.diagonal(r.cov()) for r in refs])
    else:
        ref_mean = np.array([r.mean() for r in refs])
        ref_var = np.array([r.var() for r in refs])
    rtol = 1e-9 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(mean, ref_mean, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(var, ref_var, rtol=rtol, atol=rtol)


N = 20_000


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sample(case, backend, dtype):
    d = _build(case)
    x = d.sample(ppl.random.key(0), (N,))
    shape = (N,) + BATCH + (() if case.event == 0 else (3,))
    assert tuple(ops.shape(x)) == shape
    assert ops.dtype_of(x).startswith("int"), ops.dtype_of(x)
    x = to_numpy(x).astype(np.float64)
    assert np.all(np.isfinite(to_numpy(d.log_prob(ops.asarray(x))))), "draws off support"
    for j in range(BATCH[0]):
        ref = _ref_j(case, case.params, j)
        if case.event == 0:
            support = np.arange(int(max(x[:, j].max(), 60)) + 1)
            draws, pmf = x[:, j], ref.pmf(support)
            se = np.sqrt(ref.var() / N)
            assert abs(draws.mean() - ref.mean()) < 6 * se, (draws.mean(), ref.mean())
        else:   # a joint test over every count vector, and the mean of each count
            n_j = int(case.params["total_count"][j])
            vecs = [v for v in itertools.product(range(n_j + 1), repeat=3) if sum(v) == n_j]
            codes = {v: i for i, v in enumerate(vecs)}
            draws = np.array([codes[tuple(int(c) for c in row)] for row in x[:, j]])
            support, pmf = np.arange(len(vecs)), ref.pmf(np.asarray(vecs, dtype=np.float64))
            se = np.sqrt(np.diagonal(ref.cov()) / N)
            assert np.all(np.abs(x[:, j].mean(0) - ref.mean()) < 6 * se)
        p = chi2_pvalue(draws, support, pmf)
        assert p > 1e-4, f"batch {j}: chi-square p-value {p:.2e}"


# ----------------------------------------------------------------------------- shapes
SHAPE_CASES = [c for c in CASES
               if c.id in ("BetaBinomial", "ZeroInflatedPoisson-logits", "DirichletMultinomial")]


@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("case", SHAPE_CASES, ids=[c.id for c in SHAPE_CASES])
def test_shapes(case, backend):
    # Draws of shape (3, 2), as in test_parameters_broadcast_into_the_batch: each new shape is a
    # compile of JAX's samplers (seconds), so the shape tests share one.
    sample_shape = (3,)
    d = _build(case)
    ev = d.event_shape
    x = d.sample(ppl.random.key(1), sample_shape)
    assert tuple(ops.shape(x)) == sample_shape + BATCH + ev
    lp = to_numpy(d.log_prob(x))
    assert lp.shape == sample_shape + BATCH
    e = d.expand((4,) + BATCH)
    assert e.batch_shape == (4,) + BATCH
    le = to_numpy(e.log_prob(ops.expand_dims(x, 1)))
    np.testing.assert_allclose(le, np.broadcast_to(lp[:, None], (3, 4) + BATCH), rtol=1e-12)
    ind = d.to_event(1)
    assert ind.batch_shape == () and ind.event_shape == BATCH + ev
    np.testing.assert_allclose(to_numpy(ind.log_prob(x)), lp.sum(-1), rtol=1e-12)
    m = to_numpy(d.mask(ops.asarray(np.array([True, False]))).log_prob(x))
    assert np.all(m[:, 1] == 0.0) and np.all(m[:, 0] == lp[:, 0])


@pytest.mark.dtypes("float64")
def test_parameters_broadcast_into_the_batch(backend):
    col = np.array([[0.5], [1.0], [3.0]])           # (3, 1) against (2,) -> batch (3, 2)
    row = np.array([0.7, 2.0])
    k = np.array([0.0, 4.0])
    # (distribution, reference log pmf at k, draw?): draws only where the sampling code path
    # differs (NegativeBinomial2 samples as GammaPoisson, ZeroInflatedPoisson as the generic
    # zero inflation), each new shape being a compile of JAX's samplers
    cases = [
        (dist.GammaPoisson(ops.asarray(col), ops.asarray(row)),
         st.nbinom(col, row / (1.0 + row)).logpmf(k), True),
        (dist.NegativeBinomial2(ops.asarray(col), ops.asarray(row)),
         _nb2(col, row).logpmf(k), False),
        (dist.BetaBinomial(ops.asarray(col), ops.asarray(row), 5),
         st.betabinom(5, col, row).logpmf(k), True),
        (dist.ZeroInflatedPoisson(ops.asarray(col / 4.0), ops.asarray(row)),
         np.log(col / 4.0 * (k == 0) + (1.0 - col / 4.0) * st.poisson(row).pmf(k)), False),
        # the gate's batch (3, 1) broadcasts with the base's (2,)
        (dist.ZeroInflatedDistribution(dist.Poisson(ops.asarray(row)),
                                       gate_logits=ops.asarray(col)),
         np.log(expit(col) * (k == 0) + expit(-col) * st.poisson(row).pmf(k)), True),
    ]
    for d, ref, draw in cases:
        assert d.batch_shape == (3, 2), type(d).__name__
        np.testing.assert_allclose(to_numpy(d.log_prob(ops.asarray(k))), ref, rtol=1e-10,
                                   err_msg=type(d).__name__)
        assert tuple(ops.shape(d.mean)) == (3, 2) and tuple(ops.shape(d.variance)) == (3, 2)
        if draw:
            x = d.sample(ppl.random.key(3))
            assert tuple(ops.shape(x)) == (3, 2)
            assert np.all(np.isfinite(to_numpy(d.log_prob(x)))), type(d).__name__
    dm = dist.DirichletMultinomial(ops.asarray(_ALPHA), ops.asarray(np.array([[2.0], [5.0]])))
    assert dm.batch_shape == (2, 2) and dm.event_shape == (3,)
    x = np.array([[[1, 0, 1], [0, 2, 0]], [[2, 2, 1], [0, 0, 5]]], dtype=np.float64)
    ref = [[_DirichletMultinomialRef(_ALPHA[j], n).logpmf(x[i, j]) for j in range(2)]
           for i, n in enumerate((2, 5))]
    np.testing.assert_allclose(to_numpy(dm.log_prob(ops.asarray(x))), ref, rtol=1e-10)
    draws = to_numpy(dm.sample(ppl.random.key(4)))
    assert draws.shape == (2, 2, 3)
    np.testing.assert_array_equal(draws.sum(-1), [[2, 2], [5, 5]])


@pytest.mark.dtypes("float64")
def test_enumerate_support(backend):
    bb = dist.BetaBinomial(ops.asarray(_a(0.8, 3.0)), ops.asarray(_a(2.5, 1.2)), 6)
    assert bb.has_enumerate_support
    vals = bb.enumerate_support()
    assert tuple(ops.shape(vals)) == (7, 2)
    assert tuple(ops.shape(bb.enumerate_support(expand=False))) == (7, 1)
    np.testing.assert_allclose(np.exp(to_numpy(bb.log_prob(vals))).sum(0), 1.0, rtol=1e-12)
    with pytest.raises(ValueError, match="total_count must be the same across the batch"):
        dist.BetaBinomial(1.0, 1.0, ops.asarray(_a(3, 4))).enumerate_support()
    zi = dist.ZeroInflatedDistribution(dist.Binomial(4, probs=ops.asarray(_a(0.3, 0.8))),
                                       gate=ops.asarray(np.array([[0.1], [0.5], [0.9]])))
    assert zi.has_enumerate_support and zi.batch_shape == (3, 2)
    vals = zi.enumerate_support()
    assert tuple(ops.shape(vals)) == (5, 3, 2)
    assert tuple(ops.shape(zi.enumerate_support(expand=False))) == (5, 1, 1)
    np.testing.assert_allclose(np.exp(to_numpy(zi.log_prob(vals))).sum(0), 1.0, rtol=1e-12)
    for d in (dist.GammaPoisson(2.0), dist.ZeroInflatedPoisson(0.5, 1.0),
              dist.DirichletMultinomial(ops.ones(3), 2)):
        assert not d.has_enumerate_support
    # a probability mass function sums to one (counts beyond 400 carry < 1e-12 here)
    k = ops.asarray(np.arange(400.0))
    for d in (dist.GammaPoisson(0.6, 0.1), dist.NegativeBinomial2(7.0, 0.5),
              dist.ZeroInflatedNegativeBinomial2(3.0, 1.5, gate_logits=0.7)):
        np.testing.assert_allclose(np.exp(to_numpy(d.log_prob(k))).sum(), 1.0, rtol=1e-10)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")   # numpy: IEEE 1 / 0
def test_extreme_parameters_stay_finite(backend, dtype):
    """Limits the closed forms must not turn into NaN: a zero mean (an infinite Gamma rate),
    gates of 0 and 1, large gate log-odds, a rate far from 1."""
    k = np.array([0.0, 1.0, 3.0])
    rtol, atol = (1e-9, 1e-12) if dtype == "float64" else (1e-4, 1e-6)
    nb = dist.NegativeBinomial2(0.0, 2.0)
    lp = to_numpy(nb.log_prob(ops.asarray(k)))
    assert np.all(np.isneginf(lp[1:])) and abs(lp[0]) < atol, lp
    assert np.all(to_numpy(nb.sample(ppl.random.key(0), (3,))) == 0)
    base = st.poisson(2.0).logpmf(k)
    for gate, ref in [(0.0, base), (1.0, np.array([0.0, -np.inf, -np.inf]))]:
        np.testing.assert_allclose(
            to_numpy(dist.ZeroInflatedPoisson(gate, 2.0).log_prob(ops.asarray(k))), ref,
            rtol=rtol, atol=atol)
    for l in (-40.0, 40.0):     # gate 4e-18 and 1 - 4e-18: logaddexp in float64 as reference
        log_g, log_1mg = -np.logaddexp(0.0, -l), -np.logaddexp(0.0, l)
        ref = np.where(k == 0, np.logaddexp(log_g, log_1mg + base), log_1mg + base)
        got = to_numpy(dist.ZeroInflatedPoisson(rate=2.0, gate_logits=l).log_prob(ops.asarray(k)))
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)
    for rate in (1e-4, 1e4):
        got = to_numpy(dist.GammaPoisson(3.0, rate).log_prob(ops.asarray(k)))
        np.testing.assert_allclose(got, st.nbinom(3.0, rate / (1.0 + rate)).logpmf(k),
                                   rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------- bad input
BAD_PARAMS = [
    ("GammaPoisson", lambda: dist.GammaPoisson(ops.asarray(_a(1.0, 0.0)), validate_args=True),
     "concentration"),
    ("GammaPoisson", lambda: dist.GammaPoisson(1.0, -2.0, validate_args=True), "rate"),
    ("NegativeBinomial2", lambda: dist.NegativeBinomial2(-1.0, 2.0, validate_args=True), "mean"),
    ("NegativeBinomial2", lambda: dist.NegativeBinomial2(1.0, 0.0, validate_args=True),
     "concentration"),
    ("BetaBinomial", lambda: dist.BetaBinomial(-1.0, 1.0, 3, validate_args=True),
     "concentration1"),
    ("BetaBinomial", lambda: dist.BetaBinomial(1.0, 1.0, ops.asarray(_a(3, 2.5)),
                                               validate_args=True), "total_count"),
    ("DirichletMultinomial", lambda: dist.DirichletMultinomial(
        ops.asarray(_a(1.0, -0.5, 2.0)), 3, validate_args=True), "concentration"),
    ("DirichletMultinomial", lambda: dist.DirichletMultinomial(
        ops.ones(3), -1, validate_args=True), "total_count"),
    ("ZeroInflatedPoisson", lambda: dist.ZeroInflatedPoisson(1.5, 2.0, validate_args=True),
     "gate"),
    ("ZeroInflatedPoisson", lambda: dist.ZeroInflatedPoisson(0.5, 0.0, validate_args=True),
     "rate"),
    ("ZeroInflatedDistribution", lambda: dist.ZeroInflatedDistribution(
        dist.Poisson(1.0), gate=ops.asarray(_a(0.2, -0.1)), validate_args=True), "gate"),
    ("NegativeBinomial2", lambda: dist.ZeroInflatedNegativeBinomial2(
        -1.0, 2.0, gate=0.5, validate_args=True), "mean"),
]


@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("family,make,param", BAD_PARAMS,
                         ids=[f"{b[0]}-{b[2]}" for b in BAD_PARAMS])
def test_bad_parameters(family, make, param, backend):
    with pytest.raises(ValueError) as err:
        make()
    msg = str(err.value)
    assert family in msg and repr(param) in msg, msg


@pytest.mark.dtypes("float64")
def test_bad_arguments_and_values(backend):
    poisson = dist.Poisson(1.0)
    for kwargs in ({}, {"gate": 0.5, "gate_logits": 0.0}):
        with pytest.raises(ValueError, match="exactly one of gate= and gate_logits="):
            dist.ZeroInflatedDistribution(poisson, **kwargs)
    with pytest.raises(ValueError, match="exactly one of gate= and gate_logits="):
        dist.ZeroInflatedNegativeBinomial2(1.0, 1.0)
    with pytest.raises(TypeError):      # gate is keyword-only, as in NumPyro
        dist.ZeroInflatedDistribution(poisson, 0.5)
    with pytest.raises(ValueError, match="discrete distribution with no event dims"):
        dist.ZeroInflatedDistribution(dist.Normal(0.0, 1.0), gate=0.5)
    with pytest.raises(ValueError, match="discrete distribution with no event dims"):
        dist.ZeroInflatedDistribution(dist.Multinomial(2, probs=ops.ones(3) / 3), gate=0.5)
    with pytest.raises(ValueError, match="does not broadcast"):
        dist.ZeroInflatedDistribution(dist.Poisson(ops.ones(3)), gate=ops.ones(2) / 2)
    with pytest.raises(ValueError, match="at least one dimension"):
        dist.DirichletMultinomial(1.0, 2)
    cases = [(dist.GammaPoisson(1.0, validate_args=True), 1.5),
             (dist.NegativeBinomial2(1.0, 1.0, validate_args=True), -1.0),
             (dist.BetaBinomial(1.0, 1.0, 3, validate_args=True), 4.0),
             (dist.ZeroInflatedPoisson(0.5, 1.0, validate_args=True), 0.5),
             (dist.DirichletMultinomial(ops.ones(2), 3, validate_args=True), _a(1.0, 1.0))]
    for d, bad in cases:
        with pytest.raises(ValueError, match="outside the support"):
            d.log_prob(ops.asarray(bad))
    # the other parametrization of the gate, and the NegativeBinomial2 rate, on access
    np.testing.assert_allclose(
        to_numpy(dist.ZeroInflatedPoisson(0.25, 1.0).gate_logits), np.log(1 / 3), rtol=1e-12)
    np.testing.assert_allclose(to_numpy(dist.NegativeBinomial2(4.0, 2.0).rate), 0.5)


def _log_prob_of(make):
    def log_prob(params, value):
        return make(**params).log_prob(value)

    return log_prob


@pytest.mark.dtypes("float32")
def test_log_prob_under_jit(backend):
    """log_prob of traced parameters and values (no validation, no host reads) matches eager."""
    picks = [c for c in CASES if c.id in ("NegativeBinomial2", "BetaBinomial",
                                          "ZeroInflatedPoisson-logits", "DirichletMultinomial",
                                          "ZeroInflatedNegativeBinomial2-gate")]
    for case in picks:
        x = _values(case)[:: 3]
        f = _log_prob_of(case.make)
        args = ({k: ops.asarray(v) for k, v in case.params.items()}, ops.asarray(x))
        # float32 sums of lgamma terms of magnitude ~30: a compiler's reordering moves ~1e-6
        np.testing.assert_allclose(to_numpy(ops.jit(f)(*args)), to_numpy(f(*args)), rtol=1e-5,
                                   atol=1e-5, err_msg=case.id)


# ----------------------------------------------------------------------------- NUTS
_Y_NB = np.array([0, 3, 7, 1, 0, 12, 4, 2, 5, 0, 9, 3], dtype=np.float64)
_Y_ZIP = np.array([0, 0, 3, 5, 0, 2, 4, 0, 6, 3, 0, 1], dtype=np.float64)


def count_model(y_nb, y_zip):
    """One positive scalar, the mean of overdispersed counts and the rate of zero-inflated
    ones: no conjugate prior, a smooth unimodal posterior."""
    theta = ppl.sample("theta", dist.LogNormal(1.0, 1.0))
    with ppl.plate("N", y_nb.shape[0]):
        ppl.sample("y_nb", dist.NegativeBinomial2(theta, 2.0), obs=y_nb)
        ppl.sample("y_zip", dist.ZeroInflatedPoisson(0.3, theta), obs=y_zip)


def _quadrature_posterior():
    """Posterior mean and sd of ``theta`` by the trapezoid rule on a grid of ``u = log theta``
    (LogNormal(1, 1) on theta is Normal(1, 1) on u), in NumPy/SciPy."""
    u = np.linspace(-8.0, 6.0, 14_001)
    theta = np.exp(u)[:, None]
    zip_pmf = 0.3 * (_Y_ZIP == 0) + 0.7 * st.poisson(theta).pmf(_Y_ZIP)
    log_post = (st.norm(1.0, 1.0).logpdf(u) + _nb2(theta, 2.0).logpmf(_Y_NB).sum(1)
                + np.log(zip_pmf).sum(1))
    w = np.exp(log_post - log_post.max())
    w /= np.trapezoid(w, u)
    mean = np.trapezoid(w * theta[:, 0], u)
    return mean, np.sqrt(np.trapezoid(w * (theta[:, 0] - mean) ** 2, u))


@pytest.mark.filterwarnings("ignore::ppl.inference.run_warnings.SamplingWarning")  # 1 chain
@pytest.mark.dtypes("float64")
def test_nuts_posterior_against_quadrature(backend):
    """200 draws of one chain: the posterior mean within 5 MCSE (the MCSE allows for the
    autocorrelation; over seeds 0-11 on numpy the error was at most 2.7 MCSE), the sd within
    30 %."""
    mean, sd = _quadrature_posterior()
    mcmc = MCMC(NUTS(count_model), num_warmup=200, num_samples=200, progress_bar=False)
    mcmc.run(0, ops.asarray(_Y_NB), ops.asarray(_Y_ZIP))
    draws = to_numpy(mcmc.get_samples(group_by_chain=True)["theta"])
    assert draws.shape == (1, 200) and np.all(draws > 0)
    err, se = abs(draws.mean() - mean), float(mcse(draws))
    assert err <= 5.0 * se, f"posterior mean {draws.mean():.4f} vs {mean:.4f} (MCSE {se:.4f})"
    assert abs(draws.std(ddof=1) / sd - 1.0) <= 0.3, (draws.std(ddof=1), sd)
    assert int(np.sum(to_numpy(mcmc.get_extra_fields()["diverging"]))) == 0
