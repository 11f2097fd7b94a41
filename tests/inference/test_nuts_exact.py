"""NUTS transitions checked exactly: every backend against an independent NumPy reference
(same position, momentum, step size, mass matrix and uniforms -> the same result to 1e-8 in
float64), the multinomial selection frequencies against their formulas, the acceptance
statistic recomputed by hand, and a warmup window's adaptation against Stan's formulas."""

import math
import zlib
from collections import Counter

import numpy as np
import pytest
from _reference_nuts import transition as reference_transition
from scipy import stats

from ppl import ops
from ppl.inference import adaptation
from ppl.inference.hmc import HMCState
from ppl.inference.nuts import TrajectoryUniforms, build_transition

# ------------------------------------------------------------------------------ targets
# Each target: the potential in ppl.ops (for the backends) and in NumPy with its gradient
# written out by hand (for the reference).


def _gauss_np(prec, mean):
    def vg(x):
        r = x - mean
        return 0.5 * r @ prec @ r, prec @ r
    return vg


def _gauss_ops(prec, mean):
    def u(x):          # constants converted at call time, in the active backend's dtype
        r = x - ops.asarray(mean)
        return 0.5 * ops.sum(r * ops.matmul(ops.asarray(prec), r))
    return u


_RNG = np.random.default_rng(20)
_X = _RNG.normal(size=(40, 4))
_Y = (_X @ np.array([1.0, -2.0, 0.5, 0.0]) + _RNG.normal(size=40) > 0).astype(float)


def _logreg_np(x):
    z = _X @ x
    u = np.sum(np.logaddexp(0.0, z) - _Y * z) + 0.5 * x @ x
    return u, _X.T @ (1.0 / (1.0 + np.exp(-z)) - _Y) + x


def _logreg_ops(x):
    z = ops.matmul(ops.asarray(_X), x)
    return ops.sum(ops.softplus(z) - ops.asarray(_Y) * z) + 0.5 * ops.sum(x * x)


def _funnel_np(x):
    # Neal's funnel: v ~ N(0, 3), x_i | v ~ N(0, exp(v / 2))
    v, rest = x[0], x[1:]
    u = v * v / 18.0 + 0.5 * np.sum(rest ** 2) * np.exp(-v) + 0.5 * rest.size * v
    g = np.concatenate([[v / 9.0 - 0.5 * np.sum(rest ** 2) * np.exp(-v) + 0.5 * rest.size],
                        rest * np.exp(-v)])
    return u, g


def _funnel_ops(x):
    v, rest = x[0], x[1:]
    return v * v / 18.0 + 0.5 * ops.sum(rest * rest) * ops.exp(-v) + 0.5 * (x.shape[0] - 1) * v


_COV = np.array([[1.0, 2.85], [2.85, 9.0]])          # scales 1 and 3, correlation 0.95
_PREC = np.linalg.inv(_COV)
_ANISO = np.diag([1.0, 100.0])

# (id, ops potential, numpy potential+grad, dim, step size, inverse mass matrix (D,) or (D, D),
#  max_tree_depth, max_delta_energy)
CASES = [
    ("normal-3d", _gauss_ops(np.eye(3), np.zeros(3)), _gauss_np(np.eye(3), np.zeros(3)), 3, 0.4,
     np.ones(3), 10, 1000.0),
    ("correlated-diag", _gauss_ops(_PREC, np.array([1.0, -1.0])),
     _gauss_np(_PREC, np.array([1.0, -1.0])), 2, 0.25, np.array([1.0, 9.0]), 10, 1000.0),
    ("correlated-dense", _gauss_ops(_PREC, np.zeros(2)), _gauss_np(_PREC, np.zeros(2)), 2, 0.6,
     _COV, 10, 1000.0),
    ("logistic-4d", _logreg_ops, _logreg_np, 4, 0.15, np.full(4, 0.3), 10, 1000.0),
    ("funnel-divergent", _funnel_ops, _funnel_np, 3, 0.9, np.ones(3), 10, 5.0),
    ("max-depth", _gauss_ops(np.eye(2), np.zeros(2)), _gauss_np(np.eye(2), np.zeros(2)), 2, 0.01,
     np.ones(2), 4, 1000.0),
    # scales 1 and 0.1 under a unit metric: trajectories that only one of Stan's extra checks
    # stops (same inputs, two step sizes: together they need each of the four checks)
    ("extra-checks@0.08", _gauss_ops(_ANISO, np.zeros(2)), _gauss_np(_ANISO, np.zeros(2)), 2,
     0.08, np.ones(2), 10, 1000.0),
    ("extra-checks@0.19", _gauss_ops(_ANISO, np.zeros(2)), _gauss_np(_ANISO, np.zeros(2)), 2,
     0.19, np.ones(2), 10, 1000.0),
    # small steps: trees of depth 5-8, stopped by balanced sub-trees of 32 to 128 leaves (the
    # deep checkpoint levels, visited in the innermost of the nested branches where control
    # flow compiles), and a depth limit between those levels
    ("deep@0.02", _gauss_ops(np.eye(3), np.zeros(3)), _gauss_np(np.eye(3), np.zeros(3)), 3,
     0.02, np.ones(3), 10, 1000.0),
    ("deep-limit7@0.02", _gauss_ops(np.eye(3), np.zeros(3)),
     _gauss_np(np.eye(3), np.zeros(3)), 3, 0.02, np.ones(3), 7, 1000.0),
]
C = 32
#: the extra checks (named as the reference counts them) each "extra-checks" case must see decide
#: a trajectory alone, so that dropping any one of them changes a result
EXTRA_CHECKS = {"extra-checks@0.08": ("merge-last", "subtree-first"),
                "extra-checks@0.19": ("merge-first", "subtree-last")}


#: how test_transition_matches_reference reads a row of its table (test_torch_loops reads it
#: through an op, so that a compiled loop can take a traced index)
ROW = None


def table_uniforms(table, row=None):
    """The uniforms of a ``(C, leaves, 3)`` table, row ``i`` for leaf ``i`` (the reference's
    layout): its candidate draw, and the merge and direction draws of a subtree it ends.
    ``row(table, i)`` reads row ``i`` (default ``table[:, i]``)."""
    row = row or (lambda t, i: t[:, i])
    return TrajectoryUniforms(lambda i: row(table, i)[:, 0], lambda i: row(table, i)[:, 1:])


def _inputs(case_id, dim, minv, depth):
    """Positions, momenta (p ~ N(0, M)), first directions and uniforms for C chains."""
    rng = np.random.default_rng(zlib.crc32(case_id.split("@")[0].encode()))
    x0 = rng.normal(size=(C, dim))
    if case_id == "funnel-divergent":
        x0[:, 0] = rng.uniform(-3.0, -1.0, size=C)
    mass = np.linalg.inv(minv) if minv.ndim == 2 else np.diag(1.0 / minv)
    p0 = rng.normal(size=(C, dim)) @ np.linalg.cholesky(mass).T
    forward = rng.uniform(size=C) < 0.5
    u = rng.uniform(size=(C, 2 ** depth, 3))
    return x0, p0, forward, u


@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_transition_matches_reference(backend, case):
    case_id, u_ops, vg_np, dim, eps, minv, depth, max_de = case
    x0, p0, forward, u = _inputs(case_id, dim, minv, depth)
    vg = ops.jit(ops.vmap(ops.value_and_grad(u_ops)))
    q = ops.asarray(x0)
    pe, grad = vg(q)
    table = ops.asarray(u)
    transition = build_transition(max_tree_depth=depth, max_delta_energy=max_de)
    minv_b = ops.asarray(np.broadcast_to(minv, (C,) + minv.shape).copy())
    state, info = transition(HMCState(q, pe, grad), ops.asarray(p0), ops.asarray(forward),
                             table_uniforms(table, ROW), vg, ops.full((C,), eps), minv_b)
    got = {k: ops.to_numpy(v) for k, v in
           {"x": state.position, "potential_energy": state.potential_energy,
            "grad": state.potential_energy_grad, **info._asdict()}.items()}
    decided = Counter()
    for c in range(C):
        ref = reference_transition(x0[c], p0[c], bool(forward[c]), u[c], vg_np, eps, minv,
                                   max_tree_depth=depth, max_delta_energy=max_de,
                                   decided=decided)
        where = f"{case_id}, chain {c}"
        np.testing.assert_allclose(got["x"][c], ref.x, rtol=1e-8, atol=1e-8, err_msg=where)
        np.testing.assert_allclose(got["grad"][c], ref.grad, rtol=1e-8, atol=1e-8,
                                   err_msg=where)
        for name in ("potential_energy", "energy", "accept_prob"):
            np.testing.assert_allclose(got[name][c], getattr(ref, name), rtol=1e-8, atol=1e-8,
                                       err_msg=f"{where}: {name}")
        assert int(got["num_steps"][c]) == ref.num_steps, where
        assert int(got["tree_depth"][c]) == ref.tree_depth, where
        assert bool(got["diverging"][c]) == ref.diverging, where
    if case_id == "funnel-divergent":
        assert got["diverging"].any(), "the case must exercise a divergence"
    if case_id in EXTRA_CHECKS:
        missing = [k for k in EXTRA_CHECKS[case_id] if not decided[k]]
        assert not missing, f"the case must exercise Stan's extra checks {missing}: {decided}"
    if case_id == "max-depth":
        assert (got["tree_depth"] == depth).all()
    if case_id.startswith("deep"):
        big = [k for k in decided if k.startswith("turned-") and int(k[7:]) >= 32]
        assert big, f"the case must see sub-trees of 32 leaves or more turn: {decided}"


# ------------------------------------------------------------------------------ frequencies
_PREC_DIAG = np.array([1.0, 0.01])       # a narrow and a wide direction, unit mass


def _leapfrog_points(x, p, eps, n):
    """Leapfrog on ``U = sum(prec * x^2) / 2`` by hand: positions, momenta, energies."""
    xs, ps = [np.array(x, float)], [np.array(p, float)]
    for _ in range(n):
        p_half = ps[-1] - 0.5 * eps * _PREC_DIAG * xs[-1]
        xs.append(xs[-1] + eps * p_half)
        ps.append(p_half - 0.5 * eps * _PREC_DIAG * xs[-1])
    xs, ps = np.array(xs), np.array(ps)
    return xs, ps, 0.5 * np.sum(_PREC_DIAG * xs ** 2 + ps ** 2, axis=1)


def _no_segment_turns(ps):
    return all(ps[i] @ ps[i:j + 1].sum(0) > 0 and ps[j] @ ps[i:j + 1].sum(0) > 0
               for i in range(len(ps)) for j in range(i + 1, len(ps)))


@pytest.mark.dtypes("float64")
def test_selection_frequencies_match_formulas(backend):
    """Two doublings forward (trajectory z0 | z1 | z2 z3) with a step near the stability limit
    of the narrow direction (weights far from 1) and no U-turn: the returned point is z2 or z3
    with probability ``min(1, (w2 + w3) / (w0 + w1)) * w_k / (w2 + w3)`` (biased merge, then
    progressive sampling inside the subtree), z1 with ``(1 - that) * min(1, w1 / w0)``, else
    z0; the acceptance statistic is the mean of ``min(1, w_k)`` over the three leaves."""
    x0, p0, eps, n = [-1.37, -2.57], [0.45, 1.48], 1.94, 20000
    xs, ps, energy = _leapfrog_points(x0, p0, eps, 3)
    assert _no_segment_turns(ps)
    w = np.exp(energy[0] - energy)
    merge2 = min(1.0, (w[2] + w[3]) / (w[0] + w[1]))
    merge1 = min(1.0, w[1] / w[0])
    probs = np.array([(1 - merge2) * (1 - merge1), (1 - merge2) * merge1,
                      merge2 * w[2] / (w[2] + w[3]), merge2 * w[3] / (w[2] + w[3])])
    assert probs.min() > 0.1 and abs(w[2] / (w[2] + w[3]) - 0.5) > 0.1, probs

    u = np.random.default_rng(0).uniform(size=(n, 4, 3))
    u[:, :, 2] = 0.25                                 # every next direction: forward
    table = ops.asarray(u)
    prec = ops.asarray(_PREC_DIAG)

    def vg(q):                   # batched by hand: numpy's vmap would loop over 20000 chains
        return 0.5 * ops.sum(prec * q * q, axis=-1), prec * q

    q = ops.asarray(np.broadcast_to(x0, (n, 2)).copy())
    pe, grad = vg(q)
    transition = build_transition(max_tree_depth=2)
    state, info = transition(HMCState(q, pe, grad), ops.asarray(np.broadcast_to(p0, (n, 2))
                                                                .copy()),
                             ops.ones((n,), bool), table_uniforms(table), vg,
                             ops.full((n,), eps), ops.ones((n, 2)))
    x = ops.to_numpy(state.position)
    which = np.argmin(np.abs(x[:, None, 0] - xs[None, :, 0]), axis=1)
    np.testing.assert_allclose(x, xs[which], atol=1e-10)
    counts = np.bincount(which, minlength=4)
    assert stats.chisquare(counts, n * probs).pvalue > 1e-4, (counts, n * probs)
    np.testing.assert_allclose(ops.to_numpy(info.accept_prob),
                               np.mean(np.minimum(1.0, w[1:])), rtol=1e-10)
    np.testing.assert_array_equal(ops.to_numpy(info.num_steps), 3)
    np.testing.assert_allclose(ops.to_numpy(info.energy), energy[which], rtol=1e-10)


# ------------------------------------------------------------------------------ adaptation
def _stan_window(eps0, accept, draws, target, *, gamma=0.05, t0=10.0, kappa=0.75):
    """Dual averaging (Hoffman & Gelman 2014, eq. 6 and Alg. 5) and the regularised window
    covariance (Stan: n/(n+5) * cov + 1e-3 * 5/(n+5)), in plain NumPy."""
    mu, h_bar, log_avg = math.log(10 * eps0), 0.0, 0.0
    for t, a in enumerate(accept, start=1):
        h_bar = (1 - 1 / (t + t0)) * h_bar + (target - min(a, 1.0)) / (t + t0)
        log_eps = mu - math.sqrt(t) / gamma * h_bar
        log_avg = t ** -kappa * log_eps + (1 - t ** -kappa) * log_avg
    n = len(draws)
    cov = np.cov(np.asarray(draws).T, ddof=1)
    reg = n / (n + 5.0) * cov + 1e-3 * 5.0 / (n + 5.0) * np.eye(cov.shape[0])
    return math.exp(log_eps), math.exp(log_avg), reg


@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("dense", [False, True], ids=["diag", "dense"])
def test_warmup_window_matches_stan_formulas(backend, dense):
    rng = np.random.default_rng(5)
    n, dim, target, eps0 = 60, 3, 0.85, 0.7
    draws = rng.normal(size=(n, dim)) @ np.array([[1.0, 0.3, 0.0], [0.0, 2.0, 0.5],
                                                  [0.0, 0.0, 0.4]])
    accept = rng.uniform(0.3, 1.2, size=n)             # values above 1 are capped at 1
    state = adaptation.adapt_init(eps0, 1, dim, dense=dense)
    for t in range(n):
        state = adaptation.adapt_update(
            state, ops.asarray(draws[t][None]), ops.asarray(accept[t:t + 1]),
            warmup=ops.asarray(True), collect=ops.asarray(True), last=ops.asarray(t == n - 1),
            target_accept_prob=target, adapt_step_size=True)
    eps_last_iterate, eps_avg, cov = _stan_window(eps0, accept, draws, target)
    np.testing.assert_allclose(ops.to_numpy(state.dual_averaging.log_step_size)[0],
                               math.log(eps_last_iterate), rtol=1e-10)
    np.testing.assert_allclose(ops.to_numpy(state.step_size)[0], eps_avg, rtol=1e-10)
    est = ops.to_numpy(adaptation.welford_covariance(state.welford))[0]
    np.testing.assert_allclose(est, cov if dense else np.diag(cov), rtol=1e-10)
