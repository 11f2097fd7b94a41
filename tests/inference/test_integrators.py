"""Velocity Verlet and the Euclidean metrics, on every backend and dtype, against NumPy."""

import numpy as np
import pytest

import ppl
from ppl import ops
from ppl.inference.integrators import IntegratorState, velocity_verlet
from ppl.inference.metrics import gaussian_euclidean

RNG = np.random.default_rng(0)
D = 3
_A = RNG.normal(size=(D, D))
PREC = _A @ _A.T / D + np.eye(D)             # potential U(q) = q^T PREC q / 2
INV_MASS = {"diag": np.array([[0.5, 1.0, 2.0]]),
            "dense": np.array([[[1.0, 0.3, 0.0], [0.3, 0.8, 0.1], [0.0, 0.1, 0.5]]])}


def _setup(kind):
    prec = ops.asarray(PREC)
    vg = ops.vmap(ops.value_and_grad(lambda q: 0.5 * ops.sum(q * ops.matmul(prec, q))))
    metric = gaussian_euclidean(ops.asarray(INV_MASS[kind]))
    q0 = ops.asarray([[1.0, -0.5, 0.3]])
    p0 = ops.asarray([[0.2, 0.4, -1.0]])
    u0, g0 = vg(q0)
    return vg, metric, IntegratorState(q0, p0, u0, g0)


def _energy(metric, s):
    return float(ops.to_numpy(s.potential_energy + metric.kinetic_energy(s.momentum))[0])


def _integrate(step, s, eps, n):
    for _ in range(n):
        s = step(s, eps)
    return s


@pytest.mark.parametrize("kind", ["diag", "dense"])
def test_energy_error_is_second_order(backend, kind):
    vg, metric, s0 = _setup(kind)
    step = ops.jit(velocity_verlet(vg, metric.velocity))
    h0 = _energy(metric, s0)
    errors = []
    for eps in (0.2, 0.1, 0.05):
        n = int(round(1.0 / eps))
        s, worst = s0, 0.0
        for _ in range(n):
            s = step(s, eps)
            worst = max(worst, abs(_energy(metric, s) - h0))
        errors.append(worst)
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > 3.0) & (ratios < 5.5)), (errors, ratios)


@pytest.mark.parametrize("kind", ["diag", "dense"])
def test_reversible(backend, kind, assert_close):
    vg, metric, s0 = _setup(kind)
    step = ops.jit(velocity_verlet(vg, metric.velocity))
    s = _integrate(step, s0, 0.1, 20)
    s = IntegratorState(s.position, -s.momentum, s.potential_energy, s.potential_energy_grad)
    back = _integrate(step, s, 0.1, 20)
    assert_close(back.position, ops.to_numpy(s0.position), tol=100)
    assert_close(-back.momentum, ops.to_numpy(s0.momentum), tol=100)
    # a negative step size integrates backwards in time
    s = _integrate(step, _integrate(step, s0, 0.1, 20), -0.1, 20)
    assert_close(s.position, ops.to_numpy(s0.position), tol=100)


def test_leapfrog_matches_numpy(backend, assert_close):
    vg, metric, s0 = _setup("dense")
    s = _integrate(velocity_verlet(vg, metric.velocity), s0, 0.1, 5)
    m_inv = INV_MASS["dense"][0]
    q, p = ops.to_numpy(s0.position)[0].astype(float), ops.to_numpy(s0.momentum)[0].astype(float)
    for _ in range(5):
        p = p - 0.05 * PREC @ q
        q = q + 0.1 * m_inv @ p
        p = p - 0.05 * PREC @ q
    assert_close(s.position, q[None], tol=10)
    assert_close(s.momentum, p[None], tol=10)


@pytest.mark.parametrize("kind", ["diag", "dense"])
def test_momentum_distribution_and_kinetic_energy(backend, kind, assert_close):
    inv = INV_MASS[kind]
    n = 20000
    batch = np.broadcast_to(inv, (n,) + inv.shape[1:])
    metric = gaussian_euclidean(ops.asarray(batch))
    p = ops.to_numpy(metric.sample_momentum(ppl.random.key(1), (n, D))).astype(float)
    inv_full = inv[0] if kind == "dense" else np.diag(inv[0])
    mass = np.linalg.inv(inv_full)
    np.testing.assert_allclose(np.cov(p.T), mass, atol=0.06 * np.abs(mass).max())
    expected = 0.5 * np.einsum("ni,ij,nj->n", p[:5], inv_full, p[:5])
    ke = gaussian_euclidean(ops.asarray(batch[:5])).kinetic_energy(ops.asarray(p[:5]))
    assert_close(ke, expected, tol=10)
