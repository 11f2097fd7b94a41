"""MixtureGeneral (components of different families) against a NumPy ``logsumexp`` of SciPy
component densities on every backend and float dtype: ``log_prob`` and its gradients (finite
differences of the reference), ``mean`` / ``variance`` (law of total variance), draws (KS
against the mixture CDF, chi-square for a discrete mixture, moments for a multivariate one),
shapes, bad input, and NUTS on a model with a mixture likelihood against a posterior computed
by quadrature."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from conftest import fd_grad, to_numpy
from scipy.special import log_softmax, logsumexp, softmax

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.inference import MCMC, NUTS

LOGITS = np.array([[0.2, -0.5, 1.0], [0.0, 0.3, -1.0]])
LOC = np.array([-2.0, 0.5])          # per batch entry, shared by the components
SCALE = np.array([0.7, 1.3])


def _continuous(logits, loc, scale):
    """Normal(loc, scale), StudentT(4, loc + 1, 2 scale), Laplace(loc - 1, scale): batch (2,)."""
    return dist.MixtureGeneral(dist.Categorical(logits=logits),
                               [dist.Normal(loc, scale), dist.StudentT(4.0, loc + 1.0, 2 * scale),
                                dist.Laplace(loc - 1.0, scale)])


def _continuous_ref(p):
    loc, scale = p["loc"], p["scale"]
    return [st.norm(loc, scale), st.t(4.0, loc + 1.0, 2 * scale), st.laplace(loc - 1.0, scale)]


def _ref_lp(p, x):
    comps = np.stack([c.logpdf(x) for c in _continuous_ref(p)], axis=-1)
    return logsumexp(comps + log_softmax(p["logits"], -1), axis=-1)


def _tol(dtype, scale=1.0):
    r = (1e-6 if dtype == "float64" else 1e-4) * scale
    return dict(rtol=r, atol=r)


def _params(dtype):
    p = dict(logits=LOGITS, loc=LOC, scale=SCALE)
    return {k: v.astype(dtype).astype(np.float64) for k, v in p.items()}


def test_log_prob_moments_and_gradients(backend, dtype):
    p = _params(dtype)
    d = _continuous(**{k: ops.asarray(v) for k, v in p.items()})
    assert d.batch_shape == (2,) and d.event_shape == ()
    x = np.array([[-2.5, 0.1], [0.3, 4.0], [-6.0, -1.0]]).astype(dtype).astype(np.float64)
    np.testing.assert_allclose(to_numpy(d.log_prob(ops.asarray(x))), _ref_lp(p, x), **_tol(dtype))
    w = softmax(p["logits"], -1)
    means = np.stack([c.mean() for c in _continuous_ref(p)], -1)
    var = np.stack([c.var() for c in _continuous_ref(p)], -1)
    mean = (w * means).sum(-1)
    np.testing.assert_allclose(to_numpy(d.mean), mean, **_tol(dtype, 3.0))
    np.testing.assert_allclose(to_numpy(d.variance),
                               (w * (var + (means - mean[:, None]) ** 2)).sum(-1),
                               **_tol(dtype, 3.0))

    def f(q):
        return ops.sum(_continuous(**{k: ops.asarray(p[k]) for k in p if k not in q},
                                   **q).log_prob(ops.asarray(x)))

    grads = ops.grad(f)({k: ops.asarray(p[k]) for k in p})
    for name in p:
        ref = fd_grad(lambda v, name=name: _ref_lp({**p, name: v}, x).sum(), p[name])
        np.testing.assert_allclose(to_numpy(grads[name]), ref,
                                   **_tol(dtype, 10.0 if dtype == "float64" else 30.0),
                                   err_msg=f"d log_prob / d {name}")


def test_draws_follow_the_mixture(backend, dtype):
    n = 4000
    d = _continuous(ops.asarray(LOGITS), ops.asarray(LOC), ops.asarray(SCALE))
    x = to_numpy(d.sample(ppl.random.key(0), (n,))).astype(np.float64)
    assert x.shape == (n, 2)
    comps = _continuous_ref(dict(loc=LOC, scale=SCALE))
    w = softmax(LOGITS, -1)
    for j in range(2):
        def cdf(t, j=j):
            t = np.asarray(t)[..., None]
            return sum(w[j, k] * comps[k].cdf(np.broadcast_to(t, t.shape[:-1] + (2,)))[..., j]
                       for k in range(3))
        pval = st.kstest(x[:, j], cdf).pvalue
        assert pval > 1e-4, f"batch {j}: KS p-value {pval:.2e}"


def test_a_discrete_mixture(backend, dtype):
    """Poisson(3) and Geometric(0.2) (failures before the first success), weights 0.3 / 0.7."""
    d = dist.MixtureGeneral(dist.Categorical(probs=ops.asarray([0.3, 0.7])),
                            [dist.Poisson(3.0), dist.Geometric(probs=0.2)])
    k = np.arange(40)

    def ref(k):
        return np.logaddexp(np.log(0.3) + st.poisson(3.0).logpmf(k),
                            np.log(0.7) + st.geom(0.2, loc=-1).logpmf(k))

    assert d.is_discrete
    np.testing.assert_allclose(to_numpy(d.log_prob(ops.asarray(k))), ref(k), **_tol(dtype))
    n = 4000
    x = to_numpy(d.sample(ppl.random.key(1), (n,)))
    expected = n * np.exp(ref(k))
    observed = np.array([(x == j).sum() for j in k])
    big = expected >= 5
    obs = np.append(observed[big], n - observed[big].sum())
    exp = np.append(expected[big], n - expected[big].sum())
    assert st.chisquare(obs, exp).pvalue > 1e-4


@pytest.mark.dtypes("float64")
def test_a_multivariate_mixture(backend):
    """MultivariateNormal and MultivariateStudentT in 2-D: log_prob against SciPy, draws'
    mean and covariance against the law of total variance."""
    cov = np.array([[1.0, 0.4], [0.4, 0.5]])
    d = dist.MixtureGeneral(
        dist.Categorical(probs=ops.asarray([0.6, 0.4])),
        [dist.MultivariateNormal(ops.asarray([1.0, -1.0]), ops.asarray(cov)),
         dist.MultivariateStudentT(5.0, ops.asarray([-1.0, 0.0]),
                                   ops.asarray(np.linalg.cholesky(cov)))])
    assert d.event_shape == (2,) and d.batch_shape == ()
    x = np.array([[0.0, 0.0], [2.0, -1.5], [-3.0, 1.0]])
    ref = np.logaddexp(np.log(0.6) + st.multivariate_normal([1.0, -1.0], cov).logpdf(x),
                       np.log(0.4) + st.multivariate_t([-1.0, 0.0], cov, df=5).logpdf(x))
    np.testing.assert_allclose(to_numpy(d.log_prob(ops.asarray(x))), ref, rtol=1e-8)
    means = np.array([[1.0, -1.0], [-1.0, 0.0]])
    mean = 0.6 * means[0] + 0.4 * means[1]
    total = 0.6 * cov + 0.4 * cov * 5 / 3 + sum(
        w * np.outer(m - mean, m - mean) for w, m in zip((0.6, 0.4), means))
    np.testing.assert_allclose(to_numpy(d.mean), mean, rtol=1e-10)
    np.testing.assert_allclose(to_numpy(d.variance), np.diag(total), rtol=1e-10)
    draws = to_numpy(d.sample(ppl.random.key(2), (20000,)))
    assert np.all(np.abs(draws.mean(0) - mean) < 4 * np.sqrt(np.diag(total) / 20000))
    np.testing.assert_allclose(np.cov(draws.T), total, rtol=0.1, atol=0.03)


@pytest.mark.dtypes("float32")
def test_shapes(backend):
    d = _continuous(ops.asarray(LOGITS), ops.asarray(LOC), ops.asarray(SCALE))
    x = d.sample(ppl.random.key(1), (3, 4))
    assert tuple(ops.shape(x)) == (3, 4, 2)
    assert tuple(ops.shape(d.log_prob(x))) == (3, 4, 2)
    e = d.expand((5, 2))
    assert tuple(ops.shape(e.sample(ppl.random.key(2), (3,)))) == (3, 5, 2)
    assert tuple(ops.shape(d.to_event(1).log_prob(x))) == (3, 4)
    # scalar components broadcast to the mixing distribution's batch
    m = dist.MixtureGeneral(dist.Categorical(logits=ops.zeros((4, 2))),
                            [dist.Normal(0.0, 1.0), dist.Cauchy(0.0, 1.0)])
    assert m.batch_shape == (4,)
    assert tuple(ops.shape(m.sample(ppl.random.key(3), (7,)))) == (7, 4)


@pytest.mark.dtypes("float64")
def test_bad_input(backend):
    mix = dist.Categorical(logits=ops.zeros(2))
    normal = dist.Normal(0.0, 1.0)
    with pytest.raises(TypeError, match="mixing_distribution must be a Categorical"):
        dist.MixtureGeneral(normal, [normal, normal])
    with pytest.raises(TypeError, match="non-empty list of distributions"):
        dist.MixtureGeneral(mix, normal)
    with pytest.raises(ValueError, match="3 component_distributions for a mixing_distribution "
                                         "of 2 categories"):
        dist.MixtureGeneral(mix, [normal] * 3)
    with pytest.raises(ValueError, match="different supports"):
        dist.MixtureGeneral(mix, [normal, dist.Exponential(1.0)])
    with pytest.raises(ValueError, match="all discrete or all continuous"):
        dist.MixtureGeneral(mix, [normal, dist.Poisson(1.0)])
    with pytest.raises(ValueError, match="one event shape"):
        dist.MixtureGeneral(mix, [normal, dist.Normal(ops.zeros(2), 1.0).to_event(1)])
    with pytest.raises(ValueError, match="do not broadcast"):
        dist.MixtureGeneral(mix, [dist.Normal(ops.zeros(3), 1.0), dist.Normal(ops.zeros(2), 1.)])
    # different supports with an explicit support=
    real = dist.MixtureGeneral(mix, [normal, dist.Exponential(1.0)],
                               support=dist.constraints.real)
    assert real.support is dist.constraints.real


Y = np.array([-0.4, 0.3, 1.1, 0.8, 9.0, 0.2, -0.1, 0.6])      # one outlier


def robust(y):
    """Mean of data with outliers: 0.85 N(mu, 1) + 0.15 StudentT(2, mu, 5), mu ~ N(0, 3)."""
    mu = ppl.sample("mu", dist.Normal(0.0, 3.0))
    mix = dist.MixtureGeneral(dist.Categorical(probs=ops.asarray([0.85, 0.15])),
                              [dist.Normal(mu, 1.0), dist.StudentT(2.0, mu, 5.0)])
    with ppl.plate("N", len(Y)):
        ppl.sample("y", mix, obs=y)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.dtypes("float64")
def test_nuts_on_a_mixture_likelihood(backend):
    """NUTS's posterior mean and sd of ``mu`` against quadrature of the exact posterior."""
    grid = np.linspace(-8.0, 10.0, 20001)
    lik = np.logaddexp(np.log(0.85) + st.norm.logpdf(Y[:, None], grid, 1.0),
                       np.log(0.15) + st.t.logpdf(Y[:, None], 2.0, grid, 5.0)).sum(0)
    logp = st.norm.logpdf(grid, 0.0, 3.0) + lik
    w = np.exp(logp - logp.max())
    w /= w.sum()
    mean = (w * grid).sum()
    sd = np.sqrt((w * (grid - mean) ** 2).sum())
    mcmc = MCMC(NUTS(robust), num_warmup=300, num_samples=500, num_chains=2,
                progress_bar=False)
    mcmc.run(0, Y)
    mu = to_numpy(mcmc.get_samples()["mu"])
    assert abs(mu.mean() - mean) < 4 * sd / np.sqrt(300), (mu.mean(), mean)
    np.testing.assert_allclose(mu.std(), sd, rtol=0.15)
