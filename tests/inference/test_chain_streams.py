"""Chains draw independent random numbers, on every backend.

Two draws every chain makes, from the keys the library derives for it:

* its starting point, ``init_to_uniform`` in ``initialize_model(..., num_chains=C)`` (the call
  MCMC makes): on a model with a ``(K,)`` real site and a ``(K,)`` positive site the
  unconstrained values are ``C x 2K`` uniforms on ``(-2, 2)``;
* its momentum in every NUTS transition: with a flat potential and ``max_tree_depth=1`` a
  transition from 0 with step size 1 lands at ``+-p`` exactly (one leapfrog step of unit
  length in the random direction, weight ``exp(0)`` so always accepted), so ``T`` transitions
  show ``T x C x D`` of the standard normals ``p`` is made from, up to a sign per move.

For each, the ``C x C`` correlation matrix of the chains' draws must be within ``5 / sqrt(n)``
of the identity (``n`` draws per chain; an independent pair has ``r ~ N(0, 1/n)``), no two
chains may be equal, and the marginal must be the intended one (Kolmogorov-Smirnov at
``p > ALPHA``). Seeds are fixed, so the tests are deterministic.
"""

import numpy as np
import pytest
import scipy.stats as st

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.inference import init_to_uniform, initialize_model, nuts

ALPHA = 1e-4
C = 6          # chains


def check_chains_independent(x, marginal, label):
    """``x`` ``(C, n)``: chain ``c``'s ``n`` draws, each from ``marginal`` (a SciPy dist)."""
    c, n = x.shape
    for i in range(c):
        for j in range(i):
            assert not np.array_equal(x[i], x[j]), f"{label}: chains {j} and {i} are equal"
    r = np.corrcoef(x)[~np.eye(c, dtype=bool)]
    bound = 5 / np.sqrt(n)
    assert np.max(np.abs(r)) < bound, (
        f"{label}: chains correlated, max |r| = {np.max(np.abs(r)):.3f} >= {bound:.3f}\n"
        f"{np.round(np.corrcoef(x), 3)}")
    p = st.kstest(x.ravel(), marginal.cdf).pvalue
    assert p > ALPHA, f"{label}: draws do not follow {marginal.dist.name}, KS p = {p:.2g}"


K = 150


def _wide_model():
    with ppl.plate("k", K):
        ppl.sample("loc", dist.Normal(0.0, 3.0))
        ppl.sample("scale", dist.HalfNormal(1.0))


@pytest.mark.dtypes("float64")
def test_init_to_uniform_is_independent_across_chains(backend):
    info = initialize_model(11, _wide_model, init_strategy=init_to_uniform(), num_chains=C)
    z = np.asarray(ops.to_numpy(info.init_position), dtype=np.float64)
    assert z.shape == (C, 2 * K)
    check_chains_independent(z, st.uniform(-2.0, 4.0), "init_to_uniform")


def test_momentum_draws_are_independent_across_chains(backend):
    D, T = 50, 60

    def flat(q):
        return ops.zeros(ops.shape(q)[:1]), ops.zeros_like(q)

    state = nuts.init(ops.zeros((C, D)), flat)
    kernel = nuts.build_kernel(max_tree_depth=1)
    step = ops.jit(lambda key, s: kernel(key, s, flat, ops.ones((C,)), ops.ones((C, D)))[0])
    run_key = ppl.random.key(5)
    moves = []
    for t in range(T):     # MCMC's key for iteration t
        k_step = ppl.random.split(ppl.random.fold_in(run_key, t), 2)[1]
        moves.append(ops.to_numpy(step(k_step, state).position))
    p = np.asarray(moves, dtype=np.float64)                    # (T, C, D): +-momentum
    check_chains_independent(np.moveaxis(p, 1, 0).reshape(C, T * D), st.norm(), "momentum")
    # The random direction flips a chain's whole move, which dilutes the correlation above;
    # r_t^2 between two chains' moves in one transition does not see the flip. Independent
    # chains: (D - 1) r_t^2 ~ chi2(1) approximately, so the mean over T transitions is
    # 1 / (D - 1) with standard error sqrt(2 / T) / (D - 1).
    r2 = np.mean([np.corrcoef(p[t]) ** 2 for t in range(T)], axis=0)[~np.eye(C, dtype=bool)]
    bound = (1 + 5 * np.sqrt(2 / T)) / (D - 1)
    assert np.max(r2) < bound, f"momentum: chains' moves related, mean r^2 {np.max(r2):.4f}"
    # and a chain's draws in consecutive transitions are not related either
    lag = np.corrcoef(p[:-1].ravel(), p[1:].ravel())[0, 1]
    assert abs(lag) < 5 / np.sqrt(p[1:].size), f"momentum: iteration t and t+1, r = {lag:.3f}"
