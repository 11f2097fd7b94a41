"""Issue 16, point 5: discrete latent sites summed out by enumeration, on every backend, against
independent NumPy/SciPy references: a Gaussian mixture against the hand-marginalised density
(and the same model written with MixtureSameFamily), an HMM against the forward algorithm, two
enumerated sites inside and outside a plate against brute-force summation; infer_discrete
against exact posteriors (MAP by brute force / Viterbi, draws against the posterior marginals)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats as st
from conftest import to_numpy
from scipy.special import logsumexp

import ppl
import ppl.distributions as dist
from ppl import handlers, ops
from ppl.inference import (
    MCMC,
    NUTS,
    Predictive,
    config_enumerate,
    infer_discrete,
    log_density,
)

pytestmark = pytest.mark.dtypes("float64")

RNG = np.random.RandomState(0)
Y_MIX = np.concatenate([RNG.randn(6) - 2.0, RNG.randn(6) + 2.0])


def mixture(y):
    w = ppl.sample("w", dist.Dirichlet(ops.ones(2)))
    locs = ppl.sample("locs", dist.Normal(0.0, 5.0).expand([2]).to_event(1))
    with ppl.plate("N", len(y)):
        z = ppl.sample("z", dist.Categorical(w), infer={"enumerate": "parallel"})
        ppl.sample("y", dist.Normal(locs[z], 1.0), obs=y)


def mixture_msf(y):
    w = ppl.sample("w", dist.Dirichlet(ops.ones(2)))
    locs = ppl.sample("locs", dist.Normal(0.0, 5.0).expand([2]).to_event(1))
    with ppl.plate("N", len(y)):
        ppl.sample("y", dist.MixtureSameFamily(dist.Categorical(w), dist.Normal(locs, 1.0)),
                   obs=y)


def mixture_ref(w, locs, y):
    prior = st.dirichlet(np.ones(2)).logpdf(w) + st.norm(0, 5).logpdf(locs).sum()
    return prior + logsumexp(np.log(w) + st.norm(locs, 1.0).logpdf(y[:, None]), axis=1).sum()


@pytest.mark.parametrize("w0,loc0,loc1", [(0.3, -2.0, 2.0), (0.9, 0.5, -1.0), (0.5, 0.0, 0.0)])
def test_mixture_log_density(backend, w0, loc0, loc1):
    params = {"w": np.array([w0, 1 - w0]), "locs": np.array([loc0, loc1])}
    lp, _ = log_density(mixture, (Y_MIX,), {}, params)
    lp_msf, _ = log_density(mixture_msf, (Y_MIX,), {}, params)
    ref = mixture_ref(params["w"], params["locs"], Y_MIX)
    np.testing.assert_allclose(to_numpy(lp), ref, rtol=1e-10)
    np.testing.assert_allclose(to_numpy(lp), to_numpy(lp_msf), rtol=1e-5)


A = np.array([[0.8, 0.15, 0.05], [0.1, 0.7, 0.2], [0.25, 0.25, 0.5]])
MUS = np.array([-2.0, 0.0, 2.5])
Y_HMM = np.array([-2.1, -1.5, 0.3, 2.2, 2.9, 0.1, -0.2, -2.5, 1.9, 2.4, 0.0, -1.0])


def hmm(y, scale):
    x = 0
    for t in ppl.markov(range(len(y))):
        x = ppl.sample(f"x_{t}", dist.Categorical(ops.asarray(A)[x]),
                       infer={"enumerate": "parallel"})
        ppl.sample(f"y_{t}", dist.Normal(ops.asarray(MUS)[x], scale), obs=y[t])


def forward_algorithm(y, scale):
    """The forward recursion in log space, NumPy (Rabiner, 1989)."""
    alpha = np.log(A[0]) + st.norm(MUS, scale).logpdf(y[0])
    for t in range(1, len(y)):
        alpha = logsumexp(alpha[:, None] + np.log(A), axis=0) + st.norm(MUS, scale).logpdf(y[t])
    return logsumexp(alpha)


def test_hmm_log_density_and_markov_dims(backend):
    model = handlers.seed(hmm, 0)
    for scale in (0.7, 1.5):
        lp, tr = log_density(model, (Y_HMM, scale), {}, {})
        np.testing.assert_allclose(to_numpy(lp), forward_algorithm(Y_HMM, scale), rtol=1e-10)
    # markov recycles dims: two enumeration dims however long the chain
    dims = {s["infer"]["_enumerate_dim"] for s in tr.values() if s["name"].startswith("x_")}
    assert dims == {-1, -2}
    assert max(len(ops.shape(s["fn"].log_prob(s["value"]))) for s in tr.values()) == 2


def hmm_posterior_ref(y, scale):
    """Exact posterior marginals (forward-backward) and the Viterbi path, NumPy."""
    T, K = len(y), len(MUS)
    e = st.norm(MUS, scale).logpdf(y[:, None])
    alpha, beta = np.zeros((T, K)), np.zeros((T, K))
    alpha[0] = np.log(A[0]) + e[0]
    for t in range(1, T):
        alpha[t] = logsumexp(alpha[t - 1][:, None] + np.log(A), axis=0) + e[t]
    for t in range(T - 2, -1, -1):
        beta[t] = logsumexp(np.log(A) + e[t + 1] + beta[t + 1], axis=1)
    post = np.exp(alpha + beta - logsumexp(alpha[-1]))
    delta, back = np.log(A[0]) + e[0], []
    for t in range(1, T):
        m = delta[:, None] + np.log(A)
        back.append(m.argmax(0))
        delta = m.max(0) + e[t]
    path = [int(delta.argmax())]
    for b in reversed(back):
        path.append(int(b[path[-1]]))
    return post, path[::-1]


def test_hmm_infer_discrete(backend):
    post, viterbi = hmm_posterior_ref(Y_HMM, 1.0)
    tr = handlers.trace(infer_discrete(hmm, temperature=0)).get_trace(Y_HMM, 1.0)
    assert [int(to_numpy(tr[f"x_{t}"]["value"])) for t in range(len(Y_HMM))] == viterbi
    n = 300
    draws = Predictive(hmm, num_samples=n, infer_discrete=True,
                       return_sites=[f"x_{t}" for t in range(len(Y_HMM))])(1, Y_HMM, 1.0)
    freq = np.stack([np.bincount(to_numpy(draws[f"x_{t}"]).astype(int), minlength=3) / n
                     for t in range(len(Y_HMM))])
    assert np.max(np.abs(freq - post)) < 5 * np.sqrt(0.25 / n)


def two_sites(y):
    a = ppl.sample("a", dist.Bernoulli(0.3), infer={"enumerate": "parallel"})
    locs = ops.asarray([[-1.0, 0.5, 2.0], [1.0, -0.5, 3.0]])
    with ppl.plate("N", len(y)):
        b = ppl.sample("b", dist.Categorical(ops.asarray([[0.2, 0.5, 0.3], [0.6, 0.2, 0.2]])[a]),
                       infer={"enumerate": "parallel"})
        ppl.sample("y", dist.Normal(locs[a, b], 1.0), obs=y)


Y2 = np.array([0.4, 2.5, -1.1, 0.9])
PB = np.array([[0.2, 0.5, 0.3], [0.6, 0.2, 0.2]])
LOCS2 = np.array([[-1.0, 0.5, 2.0], [1.0, -0.5, 3.0]])


def two_sites_joint():
    """log p(a, b_1..N, y) for every assignment, by brute force."""
    out = {}
    for a in (0, 1):
        for bs in itertools.product(range(3), repeat=len(Y2)):
            lp = np.log([0.7, 0.3][a]) + sum(np.log(PB[a, b]) + st.norm(LOCS2[a, b]).logpdf(y)
                                             for b, y in zip(bs, Y2))
            out[(a,) + bs] = lp
    return out


def test_two_sites_inside_and_outside_a_plate(backend):
    joint = two_sites_joint()
    lp, _ = log_density(two_sites, (Y2,), {}, {})
    np.testing.assert_allclose(to_numpy(lp), logsumexp(list(joint.values())), rtol=1e-10)
    best = max(joint, key=joint.get)
    tr = handlers.trace(infer_discrete(two_sites, temperature=0)).get_trace(Y2)
    got = (int(to_numpy(tr["a"]["value"])),) + tuple(to_numpy(tr["b"]["value"]).astype(int))
    assert got == best
    assert ops.shape(tr["b"]["value"]) == (len(Y2),)
    # config_enumerate marks the same sites
    def unmarked(y):
        a = ppl.sample("a", dist.Bernoulli(0.3))
        with ppl.plate("N", len(y)):
            b = ppl.sample("b", dist.Categorical(ops.asarray(PB)[a]))
            ppl.sample("y", dist.Normal(ops.asarray(LOCS2)[a, b], 1.0), obs=y)
    lp2, _ = log_density(config_enumerate(unmarked), (Y2,), {}, {})
    np.testing.assert_allclose(to_numpy(lp2), to_numpy(lp), rtol=1e-12)


def test_enumeration_errors(backend):
    with pytest.raises(ValueError, match="unbounded"):
        log_density(lambda: ppl.sample("k", dist.Poisson(2.0), infer={"enumerate": "parallel"}),
                    (), {}, {})

    def undeclared():  # a batch dim left of the plates that no plate declares
        z = ppl.sample("z", dist.Bernoulli(0.5), infer={"enumerate": "parallel"})
        ppl.sample("y", dist.Normal(z * ops.ones((3, 1)), 1.0), obs=ops.zeros((3, 1)))
    with pytest.raises(ValueError, match="declared by a ppl.plate"):
        log_density(undeclared, (), {}, {})


def _mixture_posterior_means(y):
    """E[min locs], E[max locs], E[max w] of ``mixture``'s posterior by quadrature over the mode
    with ``locs[0] < locs[1]`` (the other is its mirror image; the data keep them apart)."""
    g0, g1 = np.linspace(-3.2, -0.8, 97), np.linspace(0.6, 3.0, 97)
    w = (np.arange(100) + 0.5) / 100
    y = y[:, None, None, None]
    lp = np.logaddexp(np.log(w)[:, None, None] + st.norm.logpdf(y, g0[:, None], 1.0),
                      np.log1p(-w)[:, None, None] + st.norm.logpdf(y, g1, 1.0)).sum(0)
    lp += st.norm.logpdf(g0, 0, 5)[:, None] + st.norm.logpdf(g1, 0, 5)
    p = np.exp(lp - lp.max())
    p /= p.sum()
    return (p.sum((0, 2)) @ g0, p.sum((0, 1)) @ g1), p.sum((1, 2)) @ np.maximum(w, 1 - w)


@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n == "jax" else [pytest.mark.slow])
                                  for n in ppl.available_backends()])
def test_mixture_nuts_matches_quadrature(name):
    """NUTS on the enumerated mixture and on its MixtureSameFamily twin, against the posterior
    by quadrature (posterior sd of each loc ~0.15, of max w ~0.05)."""
    y = np.concatenate([np.random.RandomState(1).randn(30) * 0.5 - 2.0,
                        np.random.RandomState(2).randn(30) * 0.5 + 2.0])
    ref_locs, ref_w = _mixture_posterior_means(y)
    with ppl.use_backend(name, dtype="float64"):
        for model in (mixture, mixture_msf):
            mcmc = MCMC(NUTS(model), num_warmup=300, num_samples=400, num_chains=1,
                        progress_bar=False)
            mcmc.run(0, ops.asarray(y))
            s = mcmc.get_samples()
            locs = np.sort(to_numpy(s["locs"]), axis=1)  # label switching aside
            np.testing.assert_allclose(locs.mean(0), ref_locs, atol=0.08, err_msg=model.__name__)
            np.testing.assert_allclose(to_numpy(s["w"]).max(1).mean(), ref_w, atol=0.02,
                                       err_msg=model.__name__)


Y_BIN = np.array([0.3, 2.2, 1.1, 2.9, -0.4, 1.6])
M_BIN = np.array([True, True, False, True, True, True])


def binomial_enum(y, family):
    """``z_i`` in ``0..3`` (a Binomial, or an expanded or masked Bernoulli in ``0..1``) summed
    out; the total count is model data, so its support is known inside a compiled program."""
    p = ppl.sample("p", dist.Beta(2.0, 2.0))
    with ppl.plate("N", len(y)):
        fn = {"binomial": dist.Binomial(3, probs=p),
              "expanded": dist.Bernoulli(probs=p).expand([len(y)]),
              "masked": dist.Bernoulli(probs=p).mask(ops.asarray(M_BIN)),
              "discrete_uniform": dist.DiscreteUniform(0, 3).expand([len(y)])}[family]
        z = ppl.sample("z", fn, infer={"enumerate": "parallel"})
        ppl.sample("y", dist.Normal(z, 1.0), obs=y)


def binomial_enum_ref(p, y, family):
    n = 3 if family in ("binomial", "discrete_uniform") else 1
    k = np.arange(n + 1)[:, None]
    prior = np.log(0.25) if family == "discrete_uniform" else st.binom(n, p).logpmf(k)
    lp = logsumexp(prior + st.norm(k, 1.0).logpdf(y), axis=0)
    if family == "masked":   # a masked-out z contributes its likelihood term only, unweighted
        lp = np.where(M_BIN, lp, logsumexp(st.norm(k, 1.0).logpdf(y), axis=0))
    return st.beta(2, 2).logpdf(p) + lp.sum()


@pytest.mark.filterwarnings("error::RuntimeWarning")     # no eager fallback of ops.jit
@pytest.mark.parametrize("family", ["binomial", "expanded", "masked", "discrete_uniform"])
def test_enumerated_binomial_and_wrapped_families_under_jit(backend, family):
    """Enumeration of a Binomial with a data total count, of expanded or masked Bernoullis and
    of a DiscreteUniform with Python bounds, inside a compiled program: the support comes from
    the family's ``enumerate_support`` (the Binomial's bounds hold a traced copy of the count
    under JAX's ``jit``, which raised; the DiscreteUniform read its bounds through
    ``ops.asarray``, a traced constant under JAX's ``jit`` and TensorFlow's function)."""
    def lp(p):
        return log_density(binomial_enum, (Y_BIN, family), {}, {"p": p})[0]
    for p in (0.2, 0.7):
        got = to_numpy(ops.jit(lp)(ops.asarray(p)))
        np.testing.assert_allclose(got, binomial_enum_ref(p, Y_BIN, family), rtol=1e-10)


def test_enumerate_support_of_wrappers(backend):
    """Expanded and masked families enumerate their base's values laid out for their batch
    (NumPyro's layout); a family without a finite support says so; Independent with
    reinterpreted dims enumerates nothing (its event is a vector)."""
    d = dist.Bernoulli(0.3).expand([2, 3])
    assert to_numpy(d.enumerate_support()).tolist() == [[[0] * 3] * 2, [[1] * 3] * 2]
    assert ops.shape(d.enumerate_support(expand=False)) == (2, 1, 1)
    m = dist.Categorical(ops.ones(4) / 4).mask(ops.asarray([True, False]))
    assert to_numpy(m.enumerate_support()).tolist() == [[k, k] for k in range(4)]
    assert not dist.Bernoulli(0.3 * ops.ones(3)).to_event(1).has_enumerate_support
    with pytest.raises(NotImplementedError, match="Normal has no finite support"):
        dist.Normal(0.0, 1.0).enumerate_support()


def _binomial_enum_posterior_mean(y):
    p = (np.arange(2000) + 0.5) / 2000
    lp = np.array([binomial_enum_ref(q, y, "binomial") for q in p])
    w = np.exp(lp - lp.max())
    mean = (w @ p) / w.sum()
    return mean, np.sqrt((w @ (p - mean) ** 2) / w.sum())


@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n == "jax" else [pytest.mark.slow])
                                  for n in ppl.available_backends()])
def test_enumerated_binomial_nuts_matches_quadrature(name):
    """NUTS on the model with an enumerated Binomial (it failed to compile on JAX) against the
    posterior mean of ``p`` by quadrature, within 4 Monte Carlo standard errors."""
    mean, sd = _binomial_enum_posterior_mean(Y_BIN)
    with ppl.use_backend(name, dtype="float64"):
        mcmc = MCMC(NUTS(binomial_enum), num_warmup=300, num_samples=600, num_chains=2,
                    progress_bar=False)
        mcmc.run(0, ops.asarray(Y_BIN), "binomial")
        p = to_numpy(mcmc.get_samples()["p"])
    assert abs(p.mean() - mean) < 4 * sd / np.sqrt(0.5 * p.size), (p.mean(), mean, sd)
