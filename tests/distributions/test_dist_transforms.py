"""``biject_to`` for every constraint: one table, crossed with every backend and float dtype.

Per case: ``t(x)`` lies in the constraint, ``t.inv(t(x)) == x``, and ``log_abs_det_jacobian``
matches ``numpy.linalg.slogdet`` of a central finite-difference Jacobian of the forward map,
taken in float64 on the coordinates that parametrize the codomain (the first ``K - 1`` entries of
a simplex, the strict lower triangle of a correlation Cholesky factor, the lower triangle of a
Cholesky factor or of a positive-definite matrix). Then float32 edge cases, shapes, and bounds
that depend on other values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import scipy.stats as st
from conftest import to_numpy

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.distributions import biject_to, constraints
from ppl.distributions import transforms as T


def _tril(y, k=0):
    n = y.shape[-1]
    r, c = np.tril_indices(n, k)
    return y[..., r, c]


@dataclass(frozen=True)
class TCase:
    id: str
    constraint: Callable          # () -> Constraint (built under the active backend)
    n: int                        # unconstrained event size (elementwise cases: 3 scalars)
    coords: Callable              # y (numpy) -> the coordinates of the codomain
    elementwise: bool = False
    out_shape: tuple = None       # forward event shape


def _lo():
    return ops.asarray([-1.0, 0.0, 2.0])


def _hi():
    return ops.asarray([0.0, 5.0, 2.5])


CASES = [
    TCase("real", lambda: constraints.real, 3, lambda y: y, True),
    TCase("real_vector", lambda: constraints.real_vector, 3, lambda y: y),
    TCase("positive", lambda: constraints.positive, 3, lambda y: y, True),
    TCase("nonnegative", lambda: constraints.nonnegative, 3, lambda y: y, True),
    TCase("greater_than", lambda: constraints.greater_than(1.5), 3, lambda y: y, True),
    TCase("less_than", lambda: constraints.less_than(-2.0), 3, lambda y: y, True),
    TCase("unit_interval", lambda: constraints.unit_interval, 3, lambda y: y, True),
    TCase("interval", lambda: constraints.interval(-1.0, 3.0), 3, lambda y: y, True),
    TCase("interval-arrays", lambda: constraints.interval(_lo(), _hi()), 3, lambda y: y, True),
    TCase("independent(positive)", lambda: constraints.independent(constraints.positive, 1), 3,
          lambda y: y),
    TCase("simplex", lambda: constraints.simplex, 4, lambda y: y[..., :-1], out_shape=(5,)),
    TCase("ordered_vector", lambda: constraints.ordered_vector, 4, lambda y: y),
    TCase("positive_ordered_vector", lambda: constraints.positive_ordered_vector, 4,
          lambda y: y),
    TCase("corr_cholesky", lambda: constraints.corr_cholesky, 6, lambda y: _tril(y, -1),
          out_shape=(4, 4)),
    TCase("lower_cholesky", lambda: constraints.lower_cholesky, 6, _tril, out_shape=(3, 3)),
    TCase("positive_definite", lambda: constraints.positive_definite, 6, _tril,
          out_shape=(3, 3)),
]
IDS = [c.id for c in CASES]
BATCH = 2


def _x(case, seed=0):
    return np.random.RandomState(seed).randn(BATCH, case.n)


def _numeric_ladj(case, x):
    """log|det J| of the forward map per batch row, by central differences in float64."""
    with ppl.use_backend(ppl.get_backend().name, dtype="float64"):
        t = biject_to(case.constraint())

        def f(v):
            return case.coords(to_numpy(t(ops.asarray(v))))

        out = []
        for row in x:
            h = 1e-6
            cols = []
            for i in range(row.size):
                e = np.zeros_like(row)
                e[i] = h
                cols.append((f(row + e) - f(row - e)) / (2 * h))
            jac = np.stack(cols, axis=-1)
            assert jac.shape[0] == jac.shape[1], jac.shape
            out.append(np.linalg.slogdet(jac)[1])
        return np.array(out)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_inverse_jacobian(case, backend, dtype):
    c = case.constraint()
    t = biject_to(c)
    x64 = _x(case)
    x = ops.asarray(x64)
    y = t(x)
    event = case.out_shape or (case.n,)
    assert tuple(ops.shape(y)) == (BATCH,) + event
    assert t.forward_shape((BATCH, case.n)) == (BATCH,) + event
    assert t.inverse_shape((BATCH,) + event) == (BATCH, case.n)
    assert np.all(to_numpy(c.check(y))), f"t(x) outside {c!r}"
    tol = 1e-8 if dtype == "float64" else 2e-4
    np.testing.assert_allclose(to_numpy(t.inv(y)), x64.astype(dtype), rtol=tol, atol=tol)
    ladj = to_numpy(t.log_abs_det_jacobian(x, y))
    if case.elementwise:
        assert ladj.shape == (BATCH, case.n)
        ladj = ladj.sum(-1)
    assert ladj.shape == (BATCH,)
    ref = _numeric_ladj(case, x64.astype(dtype).astype(np.float64))
    tol = 1e-6 if dtype == "float64" else 1e-4
    np.testing.assert_allclose(ladj, ref, rtol=tol, atol=tol * max(1.0, np.abs(ref).max()))
    # the inverse transform's log-Jacobian is the negative
    np.testing.assert_allclose(to_numpy(t.inv.log_abs_det_jacobian(y, x)).reshape(ladj.shape)
                               if not case.elementwise else
                               to_numpy(t.inv.log_abs_det_jacobian(y, x)).sum(-1),
                               -ladj, rtol=1e-5, atol=1e-5)


EDGE = [-100.0, -30.0, 0.0, 30.0, 100.0]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_edges_finite(case, backend, dtype):
    """Far-out unconstrained values: forward, inverse and log-Jacobian stay finite."""
    t = biject_to(case.constraint())
    # Cholesky factors with diagonals exp(+-30) give matrices no dtype can factor back
    lim = 100.0 if case.elementwise else 3.0 if case.id == "positive_definite" else 30.0
    rows = np.array([np.resize([v for v in EDGE if abs(v) <= lim] or [-lim, lim], case.n),
                     np.resize([lim, -lim], case.n)])
    x = ops.asarray(rows)
    y = t(x)
    for name, val in [("y", y), ("inv(y)", t.inv(y)), ("ladj", t.log_abs_det_jacobian(x, y))]:
        assert np.all(np.isfinite(to_numpy(val))), f"{name} not finite: {to_numpy(val)}"
    if case.id in ("positive", "unit_interval", "simplex", "corr_cholesky", "lower_cholesky"):
        assert np.all(to_numpy(case.constraint().check(y)))


def test_known_values(backend):
    """Stan's conventions: x = 0 maps to the uniform simplex and to the identity matrix."""
    s = to_numpy(T.StickBreakingTransform()(ops.zeros(3)))
    np.testing.assert_allclose(s, np.full(4, 0.25), rtol=1e-6)
    L = to_numpy(T.CorrCholeskyTransform()(ops.zeros(3)))
    np.testing.assert_allclose(L, np.eye(3), atol=1e-7)
    L = to_numpy(T.LowerCholeskyTransform()(ops.asarray([2.0, 0.0, 0.0])))
    np.testing.assert_allclose(L, [[1.0, 0.0], [2.0, 1.0]], atol=1e-7)


def test_dependent_bounds(backend, dtype):
    """interval(0, 1 - a): the transform follows the current bound, and gradients reach ``a``."""
    x = np.array([-1.0, 0.3, 2.0])

    def f(a):
        return ops.sum(biject_to(constraints.interval(0.0, 1.0 - a))(ops.asarray(x)))

    a = np.array([0.2, 0.5, 0.9])
    expected = (1 - a) / (1 + np.exp(-x))
    got = to_numpy(biject_to(constraints.interval(0.0, 1.0 - ops.asarray(a)))(ops.asarray(x)))
    tol = 1e-9 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(got, expected, rtol=tol)
    got = to_numpy(biject_to(constraints.interval(0.0, 1.0 - ops.asarray(a[::-1])))(
        ops.asarray(x)))
    np.testing.assert_allclose(got, (1 - a[::-1]) / (1 + np.exp(-x)), rtol=tol)
    grad = to_numpy(ops.grad(f)(ops.asarray(a)))
    np.testing.assert_allclose(grad, -1 / (1 + np.exp(-x)), rtol=tol)


def test_compose_and_affine(backend, dtype):
    """Normal pushed through an affine map is Normal(loc, scale) (SciPy reference)."""
    d = dist.TransformedDistribution(dist.Normal(0.0, 1.0),
                                     [T.AffineTransform(1.0, 2.0), T.AffineTransform(-3.0, 0.5)])
    v = np.array([-2.0, 0.0, 1.5])
    tol = 1e-9 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(to_numpy(d.log_prob(ops.asarray(v))),
                               st.norm(-2.5, 1.0).logpdf(v), rtol=tol)


def test_transformed_stick_breaking(backend, dtype):
    """A logistic-normal on the simplex: shapes, support, and the change of variables."""
    base = dist.Normal(ops.zeros(3), 1.0)
    d = dist.TransformedDistribution(base, T.StickBreakingTransform())
    assert d.batch_shape == () and d.event_shape == (4,)
    y = d.sample(ppl.random.key(0), (5,))
    assert tuple(ops.shape(y)) == (5, 4)
    np.testing.assert_allclose(to_numpy(ops.sum(y, axis=-1)), np.ones(5), rtol=1e-5)
    lp = to_numpy(d.log_prob(y))
    assert lp.shape == (5,)
    t = T.StickBreakingTransform()
    x = t.inv(y)
    expected = st.norm.logpdf(to_numpy(x)).sum(-1) - to_numpy(t.log_abs_det_jacobian(x, y))
    np.testing.assert_allclose(lp, expected, rtol=1e-5, atol=1e-5)


def test_biject_to_errors(backend):
    with pytest.raises(TypeError, match="Constraint"):
        biject_to("positive")
    with pytest.raises(NotImplementedError, match="no transform"):
        biject_to(constraints.boolean)
    with pytest.raises(ValueError, match="K\\(K-1\\)/2"):
        T.CorrCholeskyTransform()(ops.zeros(4))
