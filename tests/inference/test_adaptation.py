"""Warmup adaptation: Stan's window schedule, Welford estimates with Stan's regularisation, dual
averaging and the initial step-size heuristic, against NumPy references."""

import math
from typing import NamedTuple

import numpy as np
import pytest

import ppl
from ppl import ops
from ppl.inference import adaptation as A
from ppl.inference import step_size_search as S

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


def _stan_init_stepsize(eps, accept_of):
    """Stan's ``init_stepsize`` (base_hmc.hpp) for one chain, with the acceptance of trial
    ``k`` given by ``accept_of(k, eps)``: the NumPy reference of ``search_step_size``."""
    k = 0
    direction = 1 if accept_of(k, eps) > 0.8 else -1
    while True:
        k += 1
        a = accept_of(k, eps)
        if (direction == 1 and not a > 0.8) or (direction == -1 and not a < 0.8):
            return eps, k + 1
        eps = 2 * eps if direction == 1 else 0.5 * eps


class _Info(NamedTuple):
    accept_prob: object
    num_steps: object


@pytest.mark.dtypes("float64")
def test_search_step_size_is_stans_heuristic(backend):
    """Scripted trials whose acceptance falls with the step size, plus noise drawn from the
    call's key (so the re-evaluation at the first step size matters, as the fresh momentum of
    each of Stan's trials does): the step sizes and the number of trials are those of Stan's
    loop run by hand per chain in NumPy; the transition that follows gets the key of the next
    call and the final step sizes; without ``search`` there is one call, the transition."""
    scale = np.array([1.0, 0.3, 3.0, 0.05])
    start = np.array([1.0, 1.0, 0.01, 4.0])
    key = ppl.random.key(0)

    def noise(k):
        return ppl.random.uniform(ppl.random.fold_in(key, k), (4,), "float64")

    def transition(call_key, eps, one_step):
        u = ppl.random.uniform(call_key, (4,), "float64")
        acc = ops.clip(ops.exp(-0.22 * (eps / ops.asarray(scale)) ** 2) + 0.3 * (u - 0.5),
                       0.0, 1.0)
        return (eps, u), _Info(acc, ops.where(one_step, ops.ones((4,)), ops.full((4,), 99.0)))

    def accept_of(c, k, eps):
        u = ops.to_numpy(noise(k))[c]
        return float(np.clip(np.exp(-0.22 * (eps / scale[c]) ** 2) + 0.3 * (u - 0.5), 0, 1))

    empty = ((ops.zeros((4,)), ops.zeros((4,))), _Info(ops.zeros((4,)), ops.zeros((4,))))
    (used, u), info, eps = S.search_step_size(transition, key, ops.asarray(start),
                                              ops.asarray(True), empty)
    want = [_stan_init_stepsize(start[c], lambda k, e, c=c: accept_of(c, k, e))
            for c in range(4)]
    assert len({w[1] for w in want}) > 1                 # chains search for different lengths
    np.testing.assert_allclose(ops.to_numpy(eps), [w[0] for w in want])
    np.testing.assert_allclose(ops.to_numpy(used), [w[0] for w in want])
    trials = max(w[1] for w in want)
    np.testing.assert_array_equal(ops.to_numpy(u), ops.to_numpy(noise(trials)))
    np.testing.assert_array_equal(ops.to_numpy(info.num_steps), 99)
    (used, u), info, eps = S.search_step_size(transition, key, ops.asarray(start),
                                              ops.asarray(False), empty)
    np.testing.assert_allclose(ops.to_numpy(eps), start)
    np.testing.assert_array_equal(ops.to_numpy(u), ops.to_numpy(noise(0)))
    np.testing.assert_array_equal(ops.to_numpy(info.num_steps), 99)


@pytest.mark.dtypes("float64")
def test_find_reasonable_step_size_is_stans_heuristic(backend):
    """Leapfrog trials with a fresh momentum each (``fold_in(key, k)``): the step sizes equal
    Stan's loop run by hand per chain, each trial a leapfrog step computed in NumPy from the
    same momenta, on U = sum(q^2 / (2 s^2)) with a unit metric."""
    from ppl.inference.hmc import init
    C, D = 3, 4
    s2 = np.array([0.5, 2.0, 9.0, 0.2]) ** 2
    vg = ops.vmap(ops.value_and_grad(lambda q: 0.5 * ops.sum(q * q / ops.asarray(s2))))
    q0 = np.random.default_rng(7).normal(size=(C, D))
    start = np.array([1e-3, 1.0, 40.0])
    key = ppl.random.key(3)
    eps = S.find_reasonable_step_size(key, init(ops.asarray(q0), vg), vg, ops.asarray(start),
                                      ops.ones((C, D)))

    def accept_of(c, k, e):
        p = ops.to_numpy(ppl.random.normal(ppl.random.fold_in(key, k), (C, D)))[c]
        q = q0[c]
        p_half = p - 0.5 * e * q / s2
        q1 = q + e * p_half
        p1 = p_half - 0.5 * e * q1 / s2
        h0 = 0.5 * (q ** 2 / s2).sum() + 0.5 * (p ** 2).sum()
        h1 = 0.5 * (q1 ** 2 / s2).sum() + 0.5 * (p1 ** 2).sum()
        return min(1.0, float(np.exp(h0 - h1))) if np.isfinite(h1) else 0.0

    want = [_stan_init_stepsize(start[c], lambda k, e, c=c: accept_of(c, k, e))[0]
            for c in range(C)]
    np.testing.assert_allclose(ops.to_numpy(eps), want)


@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("start", [1e-3, 50.0])
@pytest.mark.parametrize("kernel", ["nuts", "hmc", "leapfrog"])
def test_search_step_size_with_a_kernel(backend, start, kernel):
    """N(0, I_10): one leapfrog step has acceptance near 0.8 for step sizes of order 1; the
    search gets there from far below and far above, in powers of two, with the kernels'
    one-step transitions as trials and with leapfrog steps of its own."""
    from ppl.inference import HMC, NUTS
    from ppl.inference.hmc import init
    D, C = 10, 3
    vg = ops.vmap(ops.value_and_grad(lambda q: 0.5 * ops.sum(q * q)))
    state = init(ops.asarray(np.random.default_rng(1).normal(size=(C, D))), vg)
    if kernel == "leapfrog":
        eps = S.find_reasonable_step_size(ppl.random.key(0), state, vg, ops.full((C,), start),
                                          ops.ones((C, D)))
        info = None
    else:
        k = (NUTS if kernel == "nuts" else HMC)(potential_fn=lambda q: 0.5 * ops.sum(q * q))
        step = k.build_kernel()

        def transition(key, eps, one_step):
            return step(key, state, vg, eps, ops.ones((C, D)), one_step=one_step)

        empty = (state, k._empty_info(state.position))
        _, info, eps = S.search_step_size(transition, ppl.random.key(0),
                                          ops.full((C,), start), ops.asarray(True), empty)
    eps = ops.to_numpy(eps)
    assert eps.shape == (C,)
    assert np.all((eps > 0.05) & (eps < 4.0)), eps
    power = np.log2(eps / start)
    np.testing.assert_allclose(power, np.round(power), atol=1e-4)   # powers-of-two multiples
    if info is not None:
        assert np.all(ops.to_numpy(info.num_steps) >= 1)


@pytest.mark.dtypes("float64")
def test_one_step_nuts_trial_is_one_leapfrog(backend):
    """``one_step``: one leapfrog step, and ``accept_prob`` is ``min(1, exp(H0 - H1))``
    of that step, computed by hand in NumPy (unit metric, U = |q|^2 / 2)."""
    from ppl.inference import nuts
    from ppl.inference.hmc import init
    C, D = 3, 4
    rng = np.random.default_rng(5)
    q0, p0 = rng.normal(size=(C, D)), rng.normal(size=(C, D))
    eps = np.array([0.3, 1.1, 2.5])
    vg = ops.vmap(ops.value_and_grad(lambda q: 0.5 * ops.sum(q * q)))
    transition = nuts.build_transition(max_tree_depth=6)
    u = ops.full((C, 3), 0.5)
    _, info = transition(init(ops.asarray(q0), vg), ops.asarray(p0), ops.ones((C,), bool),
                         nuts.TrajectoryUniforms(lambda i: u[:, 0], lambda i: u[:, 1:]), vg,
                         ops.asarray(eps), ops.ones((C, D)),
                         one_step=ops.asarray(True))
    e = eps[:, None]
    p_half = p0 - 0.5 * e * q0
    q1 = q0 + e * p_half
    p1 = p_half - 0.5 * e * q1
    h0 = 0.5 * (q0 ** 2).sum(1) + 0.5 * (p0 ** 2).sum(1)
    h1 = 0.5 * (q1 ** 2).sum(1) + 0.5 * (p1 ** 2).sum(1)
    np.testing.assert_allclose(ops.to_numpy(info.accept_prob), np.minimum(1, np.exp(h0 - h1)),
                               rtol=1e-10)
    np.testing.assert_array_equal(ops.to_numpy(info.num_steps), 1)


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
    new = A.take_mass_estimate(st)
    n = 10
    expected = n / (n + 5) * draws.var(0, ddof=1) + 1e-3 * 5 / (n + 5)
    assert_close(new.inverse_mass_matrix, expected, tol=10)
    assert float(ops.to_numpy(new.welford.count).sum()) == 0.0
    kept = A.restart_dual_averaging(new, ops.full((C,), 0.25), ops.asarray(False))
    assert_close(kept.step_size, ops.to_numpy(st.step_size))
    assert_close(kept.dual_averaging.count, ops.to_numpy(st.dual_averaging.count))
    new = A.restart_dual_averaging(new, ops.full((C,), 0.25), ops.asarray(True))
    assert_close(new.step_size, np.full(C, 0.25))
    assert_close(new.dual_averaging.mu, np.full(C, np.log(2.5)), tol=10)
    assert float(ops.to_numpy(new.dual_averaging.count).sum()) == 0.0


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
    adapt = A.take_mass_estimate(adapt)
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
