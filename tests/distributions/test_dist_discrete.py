"""The discrete families against ``scipy.stats``: one table, crossed with every backend and
float dtype (the ``backend`` fixture of ``tests/conftest.py``).

Per case: ``log_prob`` on a grid of integer values (inside and outside the support, given as
integer and as float arrays) and at non-integer values (``-inf``); ``log_prob`` gradients in the
continuous parameters against central finite differences of SciPy's ``logpmf``; ``mean`` /
``variance`` against SciPy's moments; draws (integer dtype, sample mean within 6 standard
errors, chi-square goodness of fit at alpha = 1e-4 on a fixed key, so deterministic).
SciPy's ``geom`` counts trials and ``nbinom(n, p)`` counts failures before ``n`` successes, so
``Geometric(p)`` is ``geom(p)`` shifted by one and ``NegativeBinomial(r, p)`` is
``nbinom(r, 1 - p)``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
import scipy.stats as st
from conftest import chi2_pvalue, fd_grad, to_numpy
from scipy.special import expit, log_softmax, softmax

import ppl
import ppl.distributions as dist
from ppl import ops


class _Shifted:
    """``scipy.stats.geom`` (trials) as failures before the first success."""

    def __init__(self, p):
        self.base = st.geom(p)

    def logpmf(self, k):
        return self.base.logpmf(np.asarray(k) + 1)

    def pmf(self, k):
        return np.exp(self.logpmf(k))

    def mean(self):
        return self.base.mean() - 1.0

    def var(self):
        return self.base.var()


class _CategoricalRef:
    """A categorical law as ``scipy.stats.multinomial(1, p)`` on one-hot vectors."""

    def __init__(self, p):
        self.p = np.asarray(p) / np.sum(p)
        self.base = st.multinomial(1, self.p)

    def logpmf(self, k):
        k = np.asarray(k)
        inside = (k >= 0) & (k < self.p.size) & (np.floor(k) == k)
        onehot = np.eye(self.p.size)[np.where(inside, k, 0).astype(int)]
        return np.where(inside, self.base.logpmf(onehot), -np.inf)

    def pmf(self, k):
        return np.exp(self.logpmf(k))

    def mean(self):
        return np.nan

    def var(self):
        return np.nan


@dataclass(frozen=True)
class Case:
    """``make(**params)`` builds the distribution (batch ``(2,)``); ``ref(**params_j)`` is the
    SciPy law of batch entry ``j``; ``grad`` names the continuous parameters."""

    id: str
    make: Callable
    params: dict
    ref: Callable
    grad: tuple = ()
    grid: tuple = tuple(range(-1, 14))
    nonint: tuple = (0.5, 2.25)
    event: int = 0
    meta: dict = field(default_factory=dict)


def _a(*v):
    return np.array(v, dtype=np.float64)


_P3 = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
_L3 = np.array([[0.3, -1.0, 0.8], [1.5, 0.0, -0.4]])

CASES = [
    Case("Bernoulli-probs", lambda probs: dist.Bernoulli(probs=probs), dict(probs=_a(0.3, 0.85)),
         lambda probs: st.bernoulli(probs), grad=("probs",), grid=(-1, 0, 1, 2)),
    Case("Bernoulli-logits", lambda logits: dist.Bernoulli(logits=logits),
         dict(logits=_a(-0.4, 1.7)), lambda logits: st.bernoulli(expit(logits)),
         grad=("logits",), grid=(-1, 0, 1, 2)),
    Case("Binomial-probs", lambda total_count, probs: dist.Binomial(total_count, probs=probs),
         dict(total_count=_a(5, 12), probs=_a(0.3, 0.6)),
         lambda total_count, probs: st.binom(total_count, probs), grad=("probs",)),
    Case("Binomial-logits", lambda total_count, logits: dist.Binomial(total_count, logits=logits),
         dict(total_count=_a(5, 12), logits=_a(-0.8, 0.4)),
         lambda total_count, logits: st.binom(total_count, expit(logits)), grad=("logits",)),
    Case("Poisson", dist.Poisson, dict(rate=_a(0.7, 6.0)), lambda rate: st.poisson(rate),
         grad=("rate",)),
    Case("NegativeBinomial-probs",
         lambda total_count, probs: dist.NegativeBinomial(total_count, probs=probs),
         dict(total_count=_a(2.5, 7.0), probs=_a(0.3, 0.55)),
         lambda total_count, probs: st.nbinom(total_count, 1.0 - probs),
         grad=("total_count", "probs")),
    Case("NegativeBinomial-logits",
         lambda total_count, logits: dist.NegativeBinomial(total_count, logits=logits),
         dict(total_count=_a(1.5, 4.0), logits=_a(-0.5, 0.6)),
         lambda total_count, logits: st.nbinom(total_count, 1.0 - expit(logits)),
         grad=("total_count", "logits")),
    Case("Geometric-probs", lambda probs: dist.Geometric(probs=probs), dict(probs=_a(0.25, 0.7)),
         lambda probs: _Shifted(probs), grad=("probs",)),
    Case("Geometric-logits", lambda logits: dist.Geometric(logits=logits),
         dict(logits=_a(-1.2, 0.9)), lambda logits: _Shifted(expit(logits)), grad=("logits",)),
    Case("Categorical-probs", lambda probs: dist.Categorical(probs=probs), dict(probs=_P3),
         lambda probs: _CategoricalRef(probs), grid=(-1, 0, 1, 2, 3)),
    Case("Categorical-logits", lambda logits: dist.Categorical(logits=logits), dict(logits=_L3),
         lambda logits: _CategoricalRef(softmax(logits)), grad=("logits",),
         grid=(-1, 0, 1, 2, 3)),
    Case("Multinomial-probs", lambda total_count, probs: dist.Multinomial(total_count, probs=probs),
         dict(total_count=_a(4, 6), probs=_P3),
         lambda total_count, probs: st.multinomial(int(total_count), probs / probs.sum()),
         event=1),
    Case("Multinomial-logits",
         lambda total_count, logits: dist.Multinomial(total_count, logits=logits),
         dict(total_count=_a(4, 6), logits=_L3),
         lambda total_count, logits: st.multinomial(int(total_count), softmax(logits)),
         grad=("logits",), event=1),
]
IDS = [c.id for c in CASES]
BATCH = (2,)


def _rounded(params, dtype):
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
    # Multinomial: every count vector with entries 0..6 summing to 3..7, plus bad ones.
    vecs = [v for v in itertools.product(range(7), repeat=3) if 3 <= sum(v) <= 7]
    vecs += [(-1, 2, 3), (5, 0, -1)]
    x = np.asarray(vecs, dtype=np.float64)
    return np.repeat(x[:, None, :], 2, axis=1)


def _ref_logpmf(case, params, x):
    out = np.stack([_ref_j(case, params, j).logpmf(x[:, j]) for j in range(BATCH[0])], axis=1)
    return out


def _lp_tol(dtype):
    return dict(rtol=1e-6, atol=1e-9) if dtype == "float64" else dict(rtol=1e-4, atol=1e-4)


def _assert_lp(lp, expected, dtype, msg=""):
    assert lp.shape == expected.shape, (lp.shape, expected.shape)
    np.testing.assert_array_equal(np.isneginf(lp), np.isneginf(expected), err_msg=msg)
    fin = np.isfinite(expected)
    tol = _lp_tol(dtype)
    np.testing.assert_allclose(lp[fin], expected[fin], rtol=tol["rtol"],
                               atol=tol["atol"] * max(1.0, np.abs(expected[fin]).max()),
                               err_msg=msg)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_log_prob(case, backend, dtype):
    d = _build(case)
    assert d.batch_shape == BATCH
    assert d.event_shape == (() if case.event == 0 else (3,))
    assert d.is_discrete and d.support.is_discrete
    x = _values(case)
    expected = _ref_logpmf(case, _rounded(case.params, dtype), x)
    as_float = to_numpy(d.log_prob(ops.asarray(x)))
    as_int = to_numpy(d.log_prob(ops.asarray(x.astype(np.int64))))
    _assert_lp(as_float, expected, dtype, "float-valued input")
    _assert_lp(as_int, expected, dtype, "integer-valued input")
    if case.event == 0:
        for bad in case.nonint:
            out = to_numpy(d.log_prob(ops.asarray(np.full(BATCH, bad))))
            assert np.all(out == -np.inf), f"log_prob({bad}) = {out}, expected -inf"
    else:
        out = to_numpy(d.log_prob(ops.asarray(np.array([[1.5, 1.0, 1.5], [2.0, 2.5, 1.5]]))))
        assert np.all(out == -np.inf), f"non-integer counts: {out}, expected -inf"


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=[c.id for c in CASES if c.grad])
def test_log_prob_grad(case, backend, dtype):
    """d/d(continuous params) of sum(log_prob) vs finite differences of SciPy's logpmf."""
    params = _rounded(case.params, dtype)
    x = _values(case)
    inside = np.isfinite(_ref_logpmf(case, params, x)).all(axis=1)
    x = x[inside][:6]

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
            hi = int(max(x[:, j].max(), 40))
            support = np.arange(hi + 1)
            pmf = ref.pmf(support)
            draws = x[:, j]
        else:   # joint test over every count vector
            n_j = int(case.params["total_count"][j])
            vecs = [v for v in itertools.product(range(n_j + 1), repeat=3) if sum(v) == n_j]
            codes = {v: i for i, v in enumerate(vecs)}
            draws = np.array([codes[tuple(int(c) for c in row)] for row in x[:, j]])
            support = np.arange(len(vecs))
            pmf = ref.pmf(np.asarray(vecs))
        p = chi2_pvalue(draws, support, pmf)
        assert p > 1e-4, f"batch {j}: chi-square p-value {p:.2e}"
        if case.event == 0 and np.isfinite(ref.mean()):
            se = np.sqrt(ref.var() / N)
            assert abs(draws.mean() - ref.mean()) < 6 * se, (draws.mean(), ref.mean())


# ----------------------------------------------------------------------------- shapes
SHAPE_CASES = [c for c in CASES
               if c.id in ("Bernoulli-logits", "Categorical-logits", "Multinomial-probs")]


@pytest.mark.dtypes("float32")
@pytest.mark.parametrize("sample_shape", [(), (2, 3)], ids=str)
@pytest.mark.parametrize("case", SHAPE_CASES, ids=[c.id for c in SHAPE_CASES])
def test_shapes(case, sample_shape, backend):
    d = _build(case)
    ev = d.event_shape
    x = d.sample(ppl.random.key(1), sample_shape)
    assert tuple(ops.shape(x)) == sample_shape + BATCH + ev
    assert tuple(ops.shape(d.log_prob(x))) == sample_shape + BATCH
    e = d.expand((4,) + BATCH)
    assert e.batch_shape == (4,) + BATCH
    xe = e.sample(ppl.random.key(2), sample_shape)
    assert tuple(ops.shape(xe)) == sample_shape + (4,) + BATCH + ev
    assert tuple(ops.shape(e.log_prob(xe))) == sample_shape + (4,) + BATCH
    ind = d.to_event(1)
    assert ind.batch_shape == () and ind.event_shape == BATCH + ev
    np.testing.assert_allclose(to_numpy(ind.log_prob(x)), to_numpy(d.log_prob(x)).sum(-1),
                               rtol=1e-5)
    m = d.mask(ops.asarray(np.array([True, False])))
    lp = to_numpy(m.log_prob(x))
    assert lp.shape == sample_shape + BATCH and np.all(lp[..., 1] == 0.0)
    np.testing.assert_allclose(lp[..., 0], to_numpy(d.log_prob(x))[..., 0], rtol=1e-6)


@pytest.mark.dtypes("float64")
def test_broadcasting_and_enumerate_support(backend):
    # total_count (3, 1) with probs (2,) -> batch (3, 2); a value of shape (2,) broadcasts.
    d = dist.Binomial(ops.asarray(np.array([[2.0], [3.0], [4.0]])),
                      probs=ops.asarray(np.array([0.2, 0.7])))
    assert d.batch_shape == (3, 2)
    lp = to_numpy(d.log_prob(ops.asarray(np.array([1.0, 2.0]))))
    ref = st.binom(np.array([[2], [3], [4]]), [0.2, 0.7]).logpmf([1, 2])
    np.testing.assert_allclose(lp, ref, rtol=1e-10)
    c = dist.Categorical(logits=ops.asarray(_L3))
    vals = c.enumerate_support()
    assert tuple(ops.shape(vals)) == (3, 2)
    assert tuple(ops.shape(c.enumerate_support(expand=False))) == (3, 1)
    probs = np.exp(to_numpy(c.log_prob(vals)))
    np.testing.assert_allclose(probs.sum(0), 1.0, rtol=1e-12)
    b = dist.Bernoulli(probs=ops.asarray(_a(0.3, 0.6)))
    np.testing.assert_allclose(np.exp(to_numpy(b.log_prob(b.enumerate_support()))).sum(0), 1.0)
    bin_ = dist.Binomial(3, probs=ops.asarray(_a(0.3, 0.6)))
    assert tuple(ops.shape(bin_.enumerate_support())) == (4, 2)
    # The other parameterization is exposed on access.
    np.testing.assert_allclose(to_numpy(dist.Bernoulli(logits=0.0).probs), 0.5)
    np.testing.assert_allclose(to_numpy(c.probs), softmax(_L3, -1), rtol=1e-12)
    np.testing.assert_allclose(to_numpy(dist.Categorical(probs=ops.asarray(_P3)).logits),
                               log_softmax(np.log(_P3), -1), rtol=1e-12)


# ----------------------------------------------------------------------------- bad input
BAD_PARAMS = [
    ("Bernoulli", lambda: dist.Bernoulli(probs=ops.asarray(_a(0.5, 1.5)), validate_args=True),
     "probs"),
    ("Binomial", lambda: dist.Binomial(ops.asarray(_a(3, 2.5)), probs=0.5, validate_args=True),
     "total_count"),
    ("Binomial", lambda: dist.Binomial(4, probs=-0.1, validate_args=True), "probs"),
    ("Poisson", lambda: dist.Poisson(ops.asarray(_a(1.0, -2.0)), validate_args=True), "rate"),
    ("NegativeBinomial", lambda: dist.NegativeBinomial(0.0, probs=0.5, validate_args=True),
     "total_count"),
    ("Geometric", lambda: dist.Geometric(probs=2.0, validate_args=True), "probs"),
    ("Categorical", lambda: dist.Categorical(probs=ops.asarray(_a(0.5, 0.6)),
                                             validate_args=True), "probs"),
    ("Multinomial", lambda: dist.Multinomial(3, probs=ops.asarray(_a(0.5, 0.6)),
                                             validate_args=True), "probs"),
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
    for fam in (dist.Bernoulli, dist.Geometric, dist.Categorical):
        with pytest.raises(ValueError, match="exactly one of probs= and logits="):
            fam()
        with pytest.raises(ValueError, match="exactly one of probs= and logits="):
            fam(probs=ops.asarray(_a(0.5, 0.5)), logits=ops.asarray(_a(0.0, 0.0)))
    with pytest.raises(ValueError, match="at least one dimension"):
        dist.Categorical(probs=0.5)
    cases = [(dist.Binomial(4, probs=0.5, validate_args=True), 5.0),
             (dist.Poisson(2.0, validate_args=True), 1.5),
             (dist.Categorical(logits=ops.zeros(3), validate_args=True), 3.0),
             (dist.Bernoulli(probs=0.3, validate_args=True), -1.0)]
    for d, bad in cases:
        with pytest.raises(ValueError, match="outside the support"):
            d.log_prob(ops.asarray(bad))
    mult = dist.Multinomial(3, probs=ops.asarray(_a(0.5, 0.5)), validate_args=True)
    with pytest.raises(ValueError, match="outside the support"):
        mult.log_prob(ops.asarray(_a(1.0, 1.0)))


@pytest.mark.dtypes("float32")
def test_log_prob_under_jit(backend):
    """log_prob of traced parameters and values (no validation, no host reads) matches eager."""
    cases = [(dist.Binomial, dict(total_count=_a(5, 12), probs=_a(0.3, 0.6)), _a(2, 13)),
             (dist.Categorical, dict(logits=_L3), _a(1, 2)),
             (dist.Multinomial, dict(total_count=_a(4, 6), probs=_P3),
              np.array([[1.0, 1.0, 2.0], [2.0, 2.0, 1.0]])),
             (dist.NegativeBinomial, dict(total_count=_a(2.5, 7.0), logits=_a(0.3, -1.0)),
              _a(0, 4.5))]
    for family, params, x in cases:
        def f(p, v, family=family):
            return family(**p).log_prob(v)

        args = ({k: ops.asarray(v) for k, v in params.items()}, ops.asarray(x))
        np.testing.assert_allclose(to_numpy(ops.jit(f)(*args)), to_numpy(f(*args)), rtol=1e-6)
