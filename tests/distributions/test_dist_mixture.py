"""MixtureSameFamily against a NumPy ``logsumexp`` of SciPy component densities, crossed with
every backend and float dtype: ``log_prob`` (and its gradients in the mixing logits and the
component parameters, by finite differences), ``mean`` / ``variance`` (law of total variance),
draws (KS test against the mixture CDF, chi-square for a discrete mixture), shapes and bad
input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import scipy.stats as st
from conftest import fd_grad, to_numpy
from scipy.special import log_softmax, logsumexp, softmax

import ppl
import ppl.distributions as dist
from ppl import ops


@dataclass(frozen=True)
class Case:
    """``make(**params)`` builds the mixture; ``comp_ref(params, x)`` gives SciPy component
    log-densities of shape ``value_batch + (K,)`` and ``comp_moments(params)`` their means and
    variances."""

    id: str
    make: Callable
    params: dict
    comp_ref: Callable
    comp_moments: Callable
    batch: tuple
    event: tuple
    grad: tuple
    values: Callable


def _normal_ref(p, x):
    return st.norm(p["loc"], p["scale"]).logpdf(x[..., None])


def _mvn_ref(p, x):
    return np.stack([st.multivariate_normal(p["loc"][k], p["cov"][k]).logpdf(x)
                     for k in range(3)], axis=-1)


_L = np.array([[1.0, 0.0], [0.5, 0.8]])
_MVN_COV = np.stack([_L @ _L.T, np.eye(2) * 0.5, np.array([[1.0, -0.3], [-0.3, 0.4]])])

CASES = [
    Case("Normal",
         lambda logits, loc, scale: dist.MixtureSameFamily(dist.Categorical(logits=logits),
                                                           dist.Normal(loc, scale)),
         dict(logits=np.array([[0.2, -0.5, 1.0], [0.0, 0.3, -1.0]]),
              loc=np.array([[-2.0, 0.0, 3.0], [1.0, -1.0, 0.5]]),
              scale=np.array([[0.5, 1.0, 0.7], [1.5, 0.4, 0.9]])),
         _normal_ref, lambda p: (p["loc"], p["scale"] ** 2), (2,), (), ("logits", "loc", "scale"),
         lambda rng: rng.normal(size=(5, 2)) * 2.0),
    Case("Normal-broadcast-weights",
         lambda logits, loc, scale: dist.MixtureSameFamily(dist.Categorical(logits=logits),
                                                           dist.Normal(loc, scale)),
         dict(logits=np.array([0.4, -0.2, 0.1]),
              loc=np.array([[-2.0, 0.0, 3.0], [1.0, -1.0, 0.5]]), scale=np.array([1.0, 0.5, 2.0])),
         _normal_ref, lambda p: (p["loc"], np.broadcast_to(p["scale"] ** 2, (2, 3))), (2,), (),
         ("logits", "loc"), lambda rng: rng.normal(size=(5, 2)) * 2.0),
    Case("MultivariateNormal",
         lambda probs, loc, cov: dist.MixtureSameFamily(
             dist.Categorical(probs=probs), dist.MultivariateNormal(loc, covariance_matrix=cov)),
         dict(probs=np.array([0.2, 0.5, 0.3]), loc=np.array([[0.0, 1.0], [-2.0, 0.5], [1.0, -1.0]]),
              cov=_MVN_COV),
         _mvn_ref, lambda p: (p["loc"], np.diagonal(p["cov"], axis1=-2, axis2=-1)), (), (2,),
         ("loc",), lambda rng: rng.normal(size=(6, 2))),
    Case("Poisson",
         lambda probs, rate: dist.MixtureSameFamily(dist.Categorical(probs=probs),
                                                    dist.Poisson(rate)),
         dict(probs=np.array([0.35, 0.65]), rate=np.array([1.5, 7.0])),
         lambda p, x: st.poisson(p["rate"]).logpmf(x[..., None]),
         lambda p: (p["rate"], p["rate"]), (), (), ("rate",),
         lambda rng: np.arange(0.0, 15.0)),
]
IDS = [c.id for c in CASES]


def _log_weights(p):
    return log_softmax(p["logits"], -1) if "logits" in p else np.log(p["probs"] / p["probs"].sum())


def _ref_lp(case, p, x):
    comp = case.comp_ref(p, x)
    return logsumexp(_log_weights(p) + comp, axis=-1)


def _ref_moments(case, p):
    w = np.exp(_log_weights(p))
    m, v = case.comp_moments(p)
    if case.event:
        w = w[..., None]
    mean = (w * m).sum(-1 - len(case.event))
    dev = m - np.expand_dims(mean, -1 - len(case.event))
    return mean, (w * (v + dev ** 2)).sum(-1 - len(case.event))


def _rounded(params, dtype):
    return {k: v.astype(dtype).astype(np.float64) for k, v in params.items()}


def _build(case, params):
    return case.make(**{k: ops.asarray(v) for k, v in params.items()})


def _tol(dtype, scale=1.0):
    r = (1e-6 if dtype == "float64" else 1e-4) * scale
    return dict(rtol=r, atol=r)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_log_prob_moments_grad(case, backend, dtype):
    p = _rounded(case.params, dtype)
    d = _build(case, p)
    assert d.batch_shape == case.batch and d.event_shape == case.event
    x = case.values(np.random.default_rng(0)).astype(dtype).astype(np.float64)
    lp = to_numpy(d.log_prob(ops.asarray(x)))
    np.testing.assert_allclose(lp, _ref_lp(case, p, x), **_tol(dtype))
    mean, var = _ref_moments(case, p)
    np.testing.assert_allclose(to_numpy(d.mean), mean, **_tol(dtype, 3.0))
    np.testing.assert_allclose(to_numpy(d.variance), var, **_tol(dtype, 3.0))

    def f(q):
        return ops.sum(_build(case, {**p, **q}).log_prob(ops.asarray(x)))

    grads = ops.grad(f)({k: ops.asarray(p[k]) for k in case.grad})
    for name in case.grad:
        ref = fd_grad(lambda v, name=name: _ref_lp(case, {**p, name: v}, x).sum(), p[name])
        np.testing.assert_allclose(to_numpy(grads[name]), ref,
                                   **_tol(dtype, 10.0 if dtype == "float64" else 30.0),
                                   err_msg=f"d log_prob / d {name}")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sample(case, backend, dtype):
    n = 4000
    d = _build(case, case.params)
    x = d.sample(ppl.random.key(0), (n,))
    assert tuple(ops.shape(x)) == (n,) + case.batch + case.event
    x = to_numpy(x).astype(np.float64)
    p = case.params
    w = softmax(_log_weights(p), -1)
    if case.id.startswith("Normal"):
        loc, scale = np.broadcast_arrays(p["loc"], p["scale"])
        for j in range(case.batch[0]):
            wj = np.broadcast_to(w, (2, 3))[j]
            cdf = lambda t, j=j, wj=wj: (wj * st.norm.cdf((np.asarray(t)[..., None] - loc[j])
                                                          / scale[j])).sum(-1)
            pval = st.kstest(x[:, j], cdf).pvalue
            assert pval > 1e-4, f"batch {j}: KS p-value {pval:.2e}"
    elif case.id == "Poisson":
        support = np.arange(60)
        expected = n * np.exp(_ref_lp(case, p, support.astype(float)))
        observed = np.array([(x == k).sum() for k in support])
        big = expected >= 5
        obs = np.append(observed[big], n - observed[big].sum())
        exp = np.append(expected[big], n - expected[big].sum())
        assert st.chisquare(obs, exp).pvalue > 1e-4
    else:
        mean, var = _ref_moments(case, p)
        assert np.all(np.abs(x.mean(0) - mean) < 6 * np.sqrt(var / n)), (x.mean(0), mean)
        np.testing.assert_allclose(x.var(0), var, rtol=0.15)


@pytest.mark.dtypes("float32")
def test_shapes(backend):
    d = _build(CASES[0], CASES[0].params)
    x = d.sample(ppl.random.key(1), (3, 4))
    assert tuple(ops.shape(x)) == (3, 4, 2)
    assert tuple(ops.shape(d.log_prob(x))) == (3, 4, 2)
    e = d.expand((5, 2))
    assert tuple(ops.shape(e.sample(ppl.random.key(2), (3,)))) == (3, 5, 2)
    assert d.to_event(1).event_shape == (2,)
    assert tuple(ops.shape(d.to_event(1).log_prob(x))) == (3, 4)
    m = _build(CASES[2], CASES[2].params)
    assert tuple(ops.shape(m.sample(ppl.random.key(3), (7,)))) == (7, 2)
    assert tuple(ops.shape(m.log_prob(ops.zeros((7, 2))))) == (7,)


@pytest.mark.dtypes("float64")
def test_bad_input(backend):
    comp = dist.Normal(ops.zeros(3), 1.0)
    with pytest.raises(TypeError, match="mixing_distribution must be a Categorical"):
        dist.MixtureSameFamily(dist.Normal(0.0, 1.0), comp)
    with pytest.raises(TypeError, match="component_distribution must be a Distribution"):
        dist.MixtureSameFamily(dist.Categorical(logits=ops.zeros(3)), "normal")
    with pytest.raises(ValueError, match="number of mixture components"):
        dist.MixtureSameFamily(dist.Categorical(logits=ops.zeros(2)), comp)
    with pytest.raises(ValueError, match="does not broadcast"):
        dist.MixtureSameFamily(dist.Categorical(logits=ops.zeros((4, 3))),
                               dist.Normal(ops.zeros((2, 3)), 1.0))
