"""The continuous families against ``scipy.stats``: one table, crossed with every backend and
float dtype (the ``backend`` fixture of ``tests/conftest.py``).

Per case: ``log_prob`` (inside and outside the support), ``log_prob`` gradients in the
parameters and the value against central finite differences of SciPy's ``logpdf``, ``mean`` /
``variance`` against SciPy's moments, samples (sample mean and variance within 6 standard
errors, Kolmogorov-Smirnov at alpha = 1e-3; fixed keys, so deterministic), pathwise gradients
of the sample mean against the derivative of SciPy's mean, and ``cdf`` / ``icdf`` /
``entropy`` where a family defines them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
import scipy.stats as st
from conftest import fd_grad, to_numpy

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.distributions.transforms import ExpTransform


@dataclass(frozen=True)
class Case:
    """``make(**params)`` builds the distribution; ``ref(**params)`` the frozen SciPy one."""

    id: str
    make: Callable
    params: dict
    ref: Callable
    outside: list = field(default_factory=list)   # points outside the support (-inf)
    heavy: bool = False                            # no finite mean / variance
    moments: bool = True                           # defines mean / variance
    tail: bool = False                             # far in a tail: float32 loses digits


def _a(*v):
    return np.array(v, dtype=np.float64)


CASES = [
    Case("Normal", dist.Normal, dict(loc=_a(0.5, -1.0), scale=_a(1.0, 2.5)),
         lambda loc, scale: st.norm(loc, scale)),
    Case("HalfNormal", dist.HalfNormal, dict(scale=_a(0.5, 2.0)),
         lambda scale: st.halfnorm(scale=scale), outside=[-0.5]),
    Case("Cauchy", dist.Cauchy, dict(loc=_a(0.0, 1.0), scale=_a(1.0, 0.5)),
         lambda loc, scale: st.cauchy(loc, scale), heavy=True),
    Case("HalfCauchy", dist.HalfCauchy, dict(scale=_a(1.0, 3.0)),
         lambda scale: st.halfcauchy(scale=scale), outside=[-1.0], heavy=True),
    Case("StudentT", dist.StudentT, dict(df=_a(5.0, 9.5), loc=_a(0.0, 1.0), scale=_a(1.0, 2.0)),
         lambda df, loc, scale: st.t(df, loc, scale)),
    Case("Laplace", dist.Laplace, dict(loc=_a(0.0, -2.0), scale=_a(1.0, 0.5)),
         lambda loc, scale: st.laplace(loc, scale)),
    Case("Logistic", dist.Logistic, dict(loc=_a(0.0, 3.0), scale=_a(1.0, 0.7)),
         lambda loc, scale: st.logistic(loc, scale)),
    Case("Exponential", dist.Exponential, dict(rate=_a(0.5, 3.0)),
         lambda rate: st.expon(scale=1.0 / rate), outside=[-0.1]),
    Case("Gamma", dist.Gamma, dict(concentration=_a(0.7, 3.0), rate=_a(2.0, 0.5)),
         lambda concentration, rate: st.gamma(concentration, scale=1.0 / rate), outside=[-1.0]),
    Case("InverseGamma", dist.InverseGamma, dict(concentration=_a(5.0, 7.0), rate=_a(2.0, 1.0)),
         lambda concentration, rate: st.invgamma(concentration, scale=rate), outside=[-1.0]),
    Case("Beta", dist.Beta, dict(concentration1=_a(0.8, 2.0), concentration0=_a(3.0, 1.5)),
         lambda concentration1, concentration0: st.beta(concentration1, concentration0),
         outside=[-0.25, 1.5]),
    Case("LogNormal", dist.LogNormal, dict(loc=_a(0.0, 0.5), scale=_a(0.3, 0.5)),
         lambda loc, scale: st.lognorm(scale, scale=np.exp(loc)), outside=[-2.0]),
    Case("Uniform", dist.Uniform, dict(low=_a(-1.0, 0.0), high=_a(2.0, 0.5)),
         lambda low, high: st.uniform(low, high - low), outside=[-3.0, 2.5]),
    Case("Chi2", dist.Chi2, dict(df=_a(3.0, 8.0)), lambda df: st.chi2(df), outside=[-1.0]),
    Case("Weibull", dist.Weibull, dict(scale=_a(1.0, 2.0), concentration=_a(1.5, 3.0)),
         lambda scale, concentration: st.weibull_min(concentration, scale=scale),
         outside=[-1.0]),
    Case("TruncatedNormal",
         lambda loc, scale, low, high: dist.TruncatedNormal(loc, scale, low=low, high=high),
         dict(loc=_a(0.0, 1.0), scale=_a(1.0, 2.0), low=_a(-1.0, 2.0), high=_a(2.0, 8.0)),
         lambda loc, scale, low, high: st.truncnorm((low - loc) / scale, (high - loc) / scale,
                                                    loc, scale),
         outside=[-5.0, 9.0]),
    Case("TruncatedNormal-low",
         lambda loc, scale, low: dist.TruncatedNormal(loc, scale, low=low),
         dict(loc=_a(0.0, -1.0), scale=_a(1.0, 0.5), low=_a(1.0, -2.0)),
         lambda loc, scale, low: st.truncnorm((low - loc) / scale, np.inf, loc, scale),
         outside=[-3.0]),
    Case("TruncatedNormal-tail",
         lambda loc, scale, low, high: dist.TruncatedNormal(loc, scale, low=low, high=high),
         dict(loc=_a(0.0, 0.0), scale=_a(1.0, 1.0), low=_a(4.0, -7.0), high=_a(6.0, -5.0)),
         lambda loc, scale, low, high: st.truncnorm((low - loc) / scale, (high - loc) / scale,
                                                    loc, scale), tail=True),
    Case("TransformedDistribution(Normal, Exp)",
         lambda loc, scale: dist.TransformedDistribution(dist.Normal(loc, scale),
                                                         ExpTransform()),
         dict(loc=_a(0.0, 0.5), scale=_a(0.3, 0.5)),
         lambda loc, scale: st.lognorm(scale, scale=np.exp(loc)), moments=False),
]
IDS = [c.id for c in CASES]
BATCH = (2,)


def _rounded(params, dtype):
    """The parameters as the backend sees them (rounded to ``dtype``), in float64."""
    return {k: v.astype(dtype).astype(np.float64) for k, v in params.items()}


def _build(case, params=None):
    params = case.params if params is None else params
    return case.make(**{k: ops.asarray(v) for k, v in params.items()})


def _ref(case, dtype):
    return case.ref(**_rounded(case.params, dtype))


def _points(case, dtype, n=5, seed=0):
    x = case.ref(**case.params).rvs(size=(n,) + BATCH, random_state=np.random.RandomState(seed))
    return x.astype(dtype).astype(np.float64)


def _lp_tol(dtype):
    return dict(rtol=1e-6, atol=1e-9) if dtype == "float64" else dict(rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_log_prob(case, backend, dtype):
    d = _build(case)
    assert d.batch_shape == BATCH and d.event_shape == ()
    x = _points(case, dtype)
    lp = to_numpy(d.log_prob(ops.asarray(x)))
    assert lp.shape == x.shape
    expected = _ref(case, dtype).logpdf(x)
    tol = _lp_tol(dtype)
    np.testing.assert_allclose(lp, expected, rtol=tol["rtol"],
                               atol=tol["atol"] * max(1.0, np.abs(expected).max()))
    for bad in case.outside:
        out = to_numpy(d.log_prob(ops.asarray(np.full(BATCH, bad))))
        assert np.all(out == -np.inf), f"log_prob({bad}) = {out}, expected -inf"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_log_prob_grad(case, backend, dtype):
    """d/d(params, value) of sum(log_prob) vs finite differences of SciPy's logpdf."""
    x = _points(case, dtype, n=3, seed=1)
    params = _rounded(case.params, dtype)
    names = list(params)

    def f(p):
        args = {k: p[k] for k in names}
        return ops.sum(case.make(**args).log_prob(p["__x"]))

    arrays = {k: ops.asarray(v) for k, v in params.items()}
    arrays["__x"] = ops.asarray(x)
    grads = ops.grad(f)(arrays)
    for name in names + ["__x"]:
        def ref_f(v, name=name):
            ps = dict(params)
            if name == "__x":
                return case.ref(**ps).logpdf(v).sum()
            ps[name] = v
            return case.ref(**ps).logpdf(x).sum()

        ref = fd_grad(ref_f, x if name == "__x" else params[name], eps=1e-6)
        got = to_numpy(grads[name])
        rtol, atol = (1e-5, 1e-6) if dtype == "float64" else (2e-3, 2e-3)
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol * max(1.0, np.abs(ref).max()),
                                   err_msg=f"d log_prob / d {name}")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_mean_variance(case, backend, dtype):
    if not case.moments:
        pytest.skip(f"{case.id} defines no mean / variance")
    d = _build(case)
    ref = _ref(case, dtype)
    mean, var = to_numpy(d.mean), to_numpy(d.variance)
    assert mean.shape == BATCH and var.shape == BATCH
    rtol = 1e-9 if dtype == "float64" else (1e-3 if case.tail else 1e-5)
    if case.heavy:  # NumPyro's convention for undefined moments
        assert np.all(np.isnan(mean) | np.isinf(mean)) and np.all(np.isinf(var) | np.isnan(var))
        return
    np.testing.assert_allclose(mean, ref.mean(), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(var, ref.var(), rtol=max(rtol, 1e-7), atol=rtol)


N = 10_000


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sample(case, backend, dtype):
    d = _build(case)
    x = d.sample(ppl.random.key(0), (N,))
    assert tuple(ops.shape(x)) == (N,) + BATCH
    assert ops.dtype_of(x) == dtype
    x = to_numpy(x).astype(np.float64)
    ref = case.ref(**case.params)
    assert np.all(np.isfinite(to_numpy(d.log_prob(ops.asarray(x))))), "samples off support"
    for j in range(BATCH[0]):
        rj = case.ref(**{k: v[j] for k, v in case.params.items()})
        p = st.kstest(x[:, j], rj.cdf).pvalue
        assert p > 1e-3, f"batch {j}: KS p-value {p:.2e}"
    if case.heavy:
        return
    mean, var = ref.mean(), ref.var()
    kurt = np.asarray(ref.stats(moments="k"), dtype=float)
    se_mean = np.sqrt(var / N)
    assert np.all(np.abs(x.mean(0) - mean) < 6 * se_mean), (x.mean(0), mean)
    if np.all(np.isfinite(kurt)):
        se_var = np.sqrt((kurt + 2.0) * var ** 2 / N)
        assert np.all(np.abs(x.var(0) - var) < 6 * se_var + 1e-6 * var), (x.var(0), var)


def _ref_mean_grad(case):
    out = {}
    for name, v in case.params.items():
        def m(val, name=name):
            ps = dict(case.params)
            ps[name] = val
            return case.ref(**ps).mean().sum()

        out[name] = fd_grad(m, v, eps=1e-6)
    return out


@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("case", [c for c in CASES if not c.heavy],
                         ids=[c.id for c in CASES if not c.heavy])
def test_reparameterized_sample_grad(case, backend, dtype):
    """Gradients flow through ``sample``: d/dθ of the sample mean ~ d/dθ of SciPy's mean."""
    assert _build(case).has_rsample
    n = N

    def f(p):
        return ops.sum(ops.mean(case.make(**p).sample(ppl.random.key(3), (n,)), axis=0))

    grads = ops.grad(f)({k: ops.asarray(v) for k, v in case.params.items()})
    ref = _ref_mean_grad(case)
    for name in case.params:
        got = to_numpy(grads[name])
        assert np.all(np.isfinite(got)), f"non-finite pathwise gradient for {name}: {got}"
        np.testing.assert_allclose(got, ref[name], rtol=0.05, atol=0.05,
                                   err_msg=f"d E[x] / d {name}")


@pytest.mark.parametrize("method", ["cdf", "icdf", "entropy"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_cdf_icdf_entropy(case, method, backend, dtype):
    d = _build(case)
    ref = _ref(case, dtype)
    try:
        if method == "entropy":
            got, expected = d.entropy(), ref.entropy()
        elif method == "cdf":
            x = _points(case, dtype)
            got, expected = d.cdf(ops.asarray(x)), ref.cdf(x)
        else:
            q = np.array([[0.1, 0.7], [0.35, 0.9]]).astype(dtype).astype(np.float64)
            got, expected = d.icdf(ops.asarray(q)), ref.ppf(q)
    except NotImplementedError:
        pytest.skip(f"{case.id} has no {method}")
    rtol = 1e-9 if dtype == "float64" else 1e-4
    np.testing.assert_allclose(to_numpy(got), expected, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("low, high", [(-1.0, 2.0), (5.0, 6.0), (10.0, 11.0), (-11.0, -10.0),
                                       (-40.0, -39.0), (39.0, 40.0)])
def test_truncated_normal_draws_far_in_the_tails(low, high, backend, dtype):
    """Draws against SciPy's ``truncnorm`` (KS test), eager and under ``jit``, on intervals up
    to 40 standard deviations out: inverting ``ndtr`` directly gave one value on [-40, -39] on
    every backend, and under TensorFlow's ``jit`` (XLA's ``ndtri``) already on [10, 11]."""
    d = dist.TruncatedNormal(0.0, 1.0, low=low, high=high)
    ref = st.truncnorm(low, high)
    for x in (d.sample(ppl.random.key(0), (2000,)),
              ops.jit(lambda k: d.sample(k, (2000,)))(ppl.random.key(0))):
        x = to_numpy(x).astype(np.float64)
        assert np.all((x >= low) & (x <= high))
        assert st.kstest(x, ref.cdf).pvalue > 1e-4, (x.min(), x.mean(), x.max())
        assert len(np.unique(x)) > 1000
