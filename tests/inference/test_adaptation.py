"""Warmup adaptation: Stan's window schedule, Welford estimates with Stan's regularisation, dual
averaging and the initial step-size heuristic, against NumPy references."""

import math

import numpy as np
import pytest

import ppl
from ppl import ops
from ppl.inference import adaptation as A

# (num_warmup, slow windows as Stan's windowed_adaptation computes them)
SCHEDULES = [
    (1000, [(75, 99), (100, 149), (150, 249), (250, 449), (450, 949)]),
    (2000, [(75, 99), (100, 149), (150, 249), (250, 449), (450, 849), (850, 1949)]),
    (500, [(75, 99), (100, 149), (150, 249), (250, 449)]),
    (200, [(75, 99), (100, 149)]),
    (150, [(75, 99)]),
    (100, [(15, 89)]),           # short warmup: 15% / 75% / 10%
    (19, []),                    # Stan adapts no metric below 20 iterations
]


@pytest.mark.parametrize("num_warmup, windows", SCHEDULES)
def test_warmup_schedule_matches_stan(num_warmup, windows):
    s = A.warmup_schedule(num_warmup, term_buffer=50)
    assert s.windows == windows
    assert s.reset[0]
    for first, last in windows:
        assert s.collect[first:last + 1].all()
        if last + 1 < num_warmup:
            assert s.update_mass[last + 1] and s.reset[last + 1]
    assert s.collect.sum() == sum(b - a + 1 for a, b in windows)
    assert s.update_mass.sum() == len(windows)


@pytest.mark.parametrize("num_warmup, windows", [
    (1000, [(75, 99), (100, 149), (150, 249), (250, 449), (450, 849)]),
    (500, [(75, 99), (100, 149), (150, 424)]),            # Stan stretches the last window
    (300, [(75, 99), (100, 149), (150, 249)]),            # 15 % < 50: Stan's buffer
    (100, [(15, 89)]),
])
def test_default_terminal_buffer_is_15_percent(num_warmup, windows):
    # the final step-size-only stage is max(50, 15 % of warmup) long; the rest is Stan's
    s = A.warmup_schedule(num_warmup)
    assert s.windows == windows
    last = windows[-1][1]
    assert s.reset[last + 1] and not s.collect[last + 1:].any()


def test_warmup_schedule_flags():
    s = A.warmup_schedule(1000, adapt_mass_matrix=False)
    assert s.windows == [] and s.reset.sum() == 1 and not s.collect.any()
    s = A.warmup_schedule(1000, adapt_step_size=False)
    assert not s.reset.any() and s.update_mass.sum() == 5


@pytest.mark.parametrize("dense", [False, True])
def test_welford_matches_numpy(backend, dense, assert_close):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 50, 3)) * np.array([1.0, 2.0, 0.5]) + 1.0
    st = A.welford_init(2, 3, dense=dense)
    for i in range(50):
        st = A.welford_update(st, ops.asarray(x[:, i]))
    n = 50
    for c in range(2):
        cov = np.cov(x[c].T) if dense else x[c].var(0, ddof=1)
        eye = np.eye(3) if dense else np.ones(3)
        reg = n / (n + 5.0) * cov + 1e-3 * 5.0 / (n + 5.0) * eye
        assert_close(A.welford_covariance(st, regularize=False)[c], cov, tol=10)
        assert_close(A.welford_covariance(st)[c], reg, tol=10)
        assert_close(st.mean[c], x[c].mean(0), tol=10)


def test_dual_averaging_reaches_target(backend):
    # acceptance exp(-step_size): dual averaging should settle at -log(0.8)
    st = A.dual_averaging_init(ops.asarray([1.0, 0.01]))

    def body(i, st):
        return A.dual_averaging_update(st, ops.exp(-ops.exp(st.log_step_size)), 0.8)

    st = ops.fori_loop(0, 1000, body, st)
    final = ops.to_numpy(ops.exp(st.log_step_size_avg))
    np.testing.assert_allclose(final, -math.log(0.8), rtol=0.03)


def test_dual_averaging_first_update_matches_formula(backend, assert_close):
    st = A.dual_averaging_init(ops.asarray([0.5]))
    st = A.dual_averaging_update(st, ops.asarray([0.6]), 0.8)
    h = (0.8 - 0.6) / 11.0
    x = math.log(5.0) - h / 0.05
    assert_close(st.log_step_size, np.array([x]))
    assert_close(st.log_step_size_avg, np.array([x]))     # first iterate has weight 1


@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("start", [1e-3, 50.0])
def test_find_reasonable_step_size(backend, start):
    # N(0, I_10): one leapfrog step has acceptance near 0.8 for step sizes of order 1
    D, C = 10, 3
    vg = ops.vmap(ops.value_and_grad(lambda q: 0.5 * ops.sum(q * q)))
    q = ops.asarray(np.random.default_rng(1).normal(size=(C, D)))
    u, g = vg(q)
    eps = A.find_reasonable_step_size(ppl.random.key(0), q, u, g, vg,
                                      ops.full((C,), start), ops.ones((C, D)))
    eps = ops.to_numpy(eps)
    assert eps.shape == (C,)
    assert np.all((eps > 0.05) & (eps < 4.0)), eps
    k = np.log2(eps / start)
    np.testing.assert_allclose(k, np.round(k), atol=1e-4)   # powers-of-two multiples


def test_adapt_update_and_reset(backend, assert_close):
    C, D = 2, 3
    st = A.adapt_init(0.5, C, D)
    assert ops.shape(st.inverse_mass_matrix) == (C, D)
    assert ops.shape(A.adapt_init(0.5, C, D, dense=True).inverse_mass_matrix) == (C, D, D)
    rng = np.random.default_rng(2)
    draws = rng.normal(size=(10, C, D)) * 3.0
    for i in range(10):
        st = A.adapt_update(st, ops.asarray(draws[i]), ops.full((C,), 0.9), warmup=True,
                            collect=True, last=False, target_accept_prob=0.8,
                            adapt_step_size=True)
    vg = ops.vmap(ops.value_and_grad(lambda q: 0.5 * ops.sum(q * q)))
    from ppl.inference.hmc import init
    state = init(ops.asarray(draws[-1]), vg)
    new = A.adapt_reset(ppl.random.key(0), st, state, vg, update_mass=ops.asarray(True),
                        adapt_step_size=True)
    n = 10
    expected = n / (n + 5) * draws.var(0, ddof=1) + 1e-3 * 5 / (n + 5)
    assert_close(new.inverse_mass_matrix, expected, tol=10)
    assert float(ops.to_numpy(new.welford.count).sum()) == 0.0
    assert_close(new.dual_averaging.mu, np.log(10 * ops.to_numpy(new.step_size)), tol=10)


def test_gradient_estimator_matches_formula(backend, assert_close):
    """``estimator="gradients"``: the window's diagonal is ``sqrt(var(x) / var(g))`` (sample
    variances, NumPy reference), shrunk toward 1e-3 as Stan shrinks its estimate."""
    rng = np.random.default_rng(3)
    x, g = rng.normal(size=(30, 2, 3)) * [0.5, 2.0, 4.0], rng.normal(size=(30, 2, 3))
    adapt = A.adapt_init(1.0, 2, 3, estimator="gradients")
    for xi, gi in zip(x, g):
        adapt = A.adapt_update(adapt, ops.asarray(xi), ops.ones((2,)), warmup=True,
                               collect=True, last=False, target_accept_prob=0.8,
                               adapt_step_size=False, grad=ops.asarray(gi))
    adapt = A.adapt_reset(None, adapt, None, None, update_mass=True, adapt_step_size=False)
    est = np.sqrt(x.var(axis=0, ddof=1) / g.var(axis=0, ddof=1))
    assert_close(adapt.inverse_mass_matrix, (30 / 35) * est + 1e-3 * 5 / 35)
    assert float(ops.to_numpy(adapt.grad_welford.count).sum()) == 0.0   # emptied


def test_gradient_estimator_on_a_gaussian(backend):
    """On N(0, diag(s^2)) the gradient estimator recovers s^2 from the one 25-draw window of a
    150-iteration warmup (times Stan's shrinkage 25 / 30); the draws' variance alone would be
    off by tens of percent."""
    from ppl.inference import MCMC, NUTS
    scales = np.array([0.1, 1.0, 10.0])
    s2 = ops.asarray(scales ** 2)
    mcmc = MCMC(NUTS(potential_fn=lambda z: 0.5 * ops.sum(z * z / s2),
                     mass_matrix_estimator="gradients"),
                num_warmup=150, num_samples=1, num_chains=2, progress_bar=False)
    mcmc.run(0, init_params=ops.asarray(np.ones((2, 3)) * 0.1))
    inv_mass = np.asarray(ops.to_numpy(mcmc.last_state.inverse_mass_matrix))
    np.testing.assert_allclose(inv_mass / scales ** 2, 25 / 30, rtol=0.05)


def test_gradient_estimator_rejects_dense():
    from ppl.inference import NUTS
    with pytest.raises(ValueError, match="diagonal"):
        NUTS(potential_fn=lambda z: z, dense_mass=True, mass_matrix_estimator="gradients")
    with pytest.raises(ValueError, match="mass_matrix_estimator"):
        NUTS(potential_fn=lambda z: z, mass_matrix_estimator="fisher")
