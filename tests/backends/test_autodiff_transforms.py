"""``grad``, ``value_and_grad``, ``vmap``, ``jit`` and ``stop_gradient`` on every backend, against
analytic NumPy gradients, Python loops and finite differences."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st
from backend_cases import spd_np, spd_ops
from conftest import assert_close, fd_grad

from ppl import ops

COVERS = {"grad", "value_and_grad", "vmap", "jit", "stop_gradient", "pmap", "device_count",
          "chain_shards", "shard_chains", "eval_shape"}

RNG = np.random.default_rng(42)
X = RNG.normal(size=(3, 4))
Y = RNG.normal(size=(4,))


def _r(a, dtype):
    return np.asarray(a).astype(dtype).astype(np.float64)


def f_np(x, y):
    return np.sum(np.sin(x) * y) + np.sum(x ** 2)


def f_ops(x, y):
    return ops.sum(ops.sin(x) * y) + ops.sum(x ** 2)


# ------------------------------------------------------------------------------ pmap
def test_pmap_maps_leading_axis(backend, dtype):
    """``pmap`` agrees with a Python loop over the leading axis, whatever the device count
    (one device: a batched run; the multi-device JAX path is tested in tests/inference)."""
    n = ops.device_count()
    assert isinstance(n, int) and n >= 1
    xs = RNG.normal(size=(n, 3, 4))
    out_v, out_s = ops.pmap(lambda x, y: (x * y, ops.sum(x)), in_axes=(0, None))(
        ops.asarray(xs), ops.asarray(Y))
    assert_close(out_v, _r(xs, dtype) * _r(Y, dtype), check_dtype=True)
    assert_close(out_s, _r(xs, dtype).sum(axis=(1, 2)))


@pytest.mark.parametrize("num_chains", [1, 4, 6])
def test_shard_chains_agrees_with_numpy(backend, dtype, num_chains):
    """``shard_chains`` splits the chain axes over ``chain_shards(C)`` devices (a divisor of C,
    at most the device count; JAX under pytest has one CPU device per core) and gives what the
    batched function gives on the whole batch; chains on axis 1 of an output come back there."""
    n = ops.chain_shards(num_chains)
    assert 1 <= n <= ops.device_count() and num_chains % n == 0
    xs = RNG.normal(size=(num_chains, 3))

    def fun(x, y):
        return x * ops.sum(y), ops.stack([x, 2 * x])          # (C, 3), (2, C, 3)

    a, b = ops.jit(ops.shard_chains(fun, n, in_axes=(0, None), out_axes=(0, 1)))(
        ops.asarray(xs), ops.asarray(Y))
    assert_close(a, _r(xs, dtype) * _r(Y, dtype).sum())
    assert_close(b, np.stack([_r(xs, dtype), 2 * _r(xs, dtype)]))
    if n == 1:
        with pytest.raises(ValueError, match="chain_shards"):
            ops.shard_chains(fun, ops.device_count() + 1, in_axes=(0, None), out_axes=(0, 1))


# ------------------------------------------------------------------------------ grad
def test_grad_default_argnum(backend, dtype):
    x, y = _r(X, dtype), _r(Y, dtype)
    g = ops.grad(f_ops)(ops.asarray(X), ops.asarray(Y))
    assert_close(g, np.cos(x) * y + 2 * x, kind="grad", check_dtype=True)


def test_grad_argnums(backend, dtype):
    x, y = _r(X, dtype), _r(Y, dtype)
    gy = ops.grad(f_ops, argnums=1)(ops.asarray(X), ops.asarray(Y))
    assert_close(gy, np.sum(np.sin(x), axis=0), kind="grad", check_dtype=True)
    gx, gy = ops.grad(f_ops, argnums=(0, 1))(ops.asarray(X), ops.asarray(Y))
    assert_close((gx, gy), (np.cos(x) * y + 2 * x, np.sum(np.sin(x), axis=0)), kind="grad")


def test_grad_has_aux(backend, dtype):
    x, y = _r(X, dtype), _r(Y, dtype)

    def f(x, y):
        return f_ops(x, y), {"sq": x * x, "n": ops.sum(y)}

    g, aux = ops.grad(f, has_aux=True)(ops.asarray(X), ops.asarray(Y))
    assert_close(g, np.cos(x) * y + 2 * x, kind="grad")
    assert_close(aux, {"sq": x * x, "n": np.sum(y)})


def test_value_and_grad(backend, dtype):
    x, y = _r(X, dtype), _r(Y, dtype)
    v, g = ops.value_and_grad(f_ops)(ops.asarray(X), ops.asarray(Y))
    assert ops.shape(v) == () and ops.dtype_of(v) == dtype
    assert_close(v, f_np(x, y))
    assert_close(g, np.cos(x) * y + 2 * x, kind="grad")

    (v, aux), (gx, gy) = ops.value_and_grad(lambda a, b: (f_ops(a, b), a[0]), argnums=(0, 1),
                                            has_aux=True)(ops.asarray(X), ops.asarray(Y))
    assert_close((v, aux), (f_np(x, y), x[0]))
    assert_close((gx, gy), (np.cos(x) * y + 2 * x, np.sum(np.sin(x), axis=0)), kind="grad")


def test_grad_pytree_argument(backend, dtype):
    x, y = _r(X, dtype), _r(Y, dtype)
    params = {"x": ops.asarray(X), "rest": (ops.asarray(Y), ops.asarray(2.0))}

    def f(p):
        return f_ops(p["x"], p["rest"][0]) * p["rest"][1]

    g = ops.grad(f)(params)
    assert set(g) == {"x", "rest"} and len(g["rest"]) == 2
    assert_close(g, {"x": 2 * (np.cos(x) * y + 2 * x),
                     "rest": (2 * np.sum(np.sin(x), axis=0), f_np(x, y))}, kind="grad")


def test_grad_scalar_input_and_closure(backend, dtype):
    c = ops.asarray(3.0)
    g = ops.grad(lambda t: ops.exp(t * c) + t ** 3)(ops.asarray(0.5))
    assert ops.shape(g) == ()
    assert_close(g, 3 * math.exp(1.5) + 3 * 0.25, kind="grad", check_dtype=True)


def test_stop_gradient(backend, dtype):
    x = _r(Y, dtype)
    g = ops.grad(lambda a: ops.sum(a * ops.stop_gradient(a)))(ops.asarray(Y))
    assert_close(g, x, kind="grad")
    assert_close(ops.stop_gradient(ops.asarray(Y)), x)


def test_second_derivative(backend, dtype):
    g2 = ops.grad(ops.grad(lambda t: ops.sin(t) * t))(ops.asarray(0.7))
    assert_close(g2, 2 * math.cos(0.7) - 0.7 * math.sin(0.7), kind="grad")


# ----------------------------------- grad through cholesky + solve_triangular (Gaussian)
def _mvn_ref(y, mu, m):
    cov = spd_np(m)
    return np.sum([st.multivariate_normal(mu, cov[i]).logpdf(y[i]) for i in range(len(y))])


def _mvn_tri(y, mu, m):
    l = ops.linalg.cholesky(spd_ops(m))
    z = ops.linalg.solve_triangular(l, ops.expand_dims(y - mu, -1), lower=True)[..., 0]
    n = ops.shape(y)[-1]
    half_logdet = ops.sum(ops.log(ops.diagonal(l, axis1=-2, axis2=-1)), axis=-1)
    return ops.sum(-0.5 * ops.sum(z * z, axis=-1) - half_logdet - 0.5 * n * math.log(2 * math.pi))


def _mvn_upper(y, mu, m):
    # the same density through the upper factor: cov = U^T U with U = L^T
    u = ops.linalg.matrix_transpose(ops.linalg.cholesky(spd_ops(m)))
    z = ops.linalg.solve_triangular(ops.linalg.matrix_transpose(u),
                                    ops.expand_dims(y - mu, -1), lower=True)
    x = ops.linalg.solve_triangular(u, z, lower=False)[..., 0]
    n = ops.shape(y)[-1]
    quad = ops.sum((y - mu) * x, axis=-1)
    return ops.sum(-0.5 * quad - 0.5 * ops.linalg.logdet(spd_ops(m))
                   - 0.5 * n * math.log(2 * math.pi))


def _mvn_cho(y, mu, m):
    l = ops.linalg.cholesky(spd_ops(m))
    r = ops.expand_dims(y - mu, -1)
    quad = ops.sum(r * ops.linalg.cho_solve(l, r, lower=True), axis=(-2, -1))
    n = ops.shape(y)[-1]
    return ops.sum(-0.5 * quad - 0.5 * ops.linalg.logdet(spd_ops(m))
                   - 0.5 * n * math.log(2 * math.pi))


@pytest.mark.parametrize("logpdf", [_mvn_tri, _mvn_upper, _mvn_cho],
                         ids=["solve_triangular", "upper", "cho_solve"])
def test_grad_gaussian_logdensity(backend, dtype, logpdf):
    rng = np.random.default_rng(3)
    y, mu, m = rng.normal(size=(2, 3)), rng.normal(size=(3,)), rng.normal(size=(2, 3, 3))
    ry, rmu, rm = _r(y, dtype), _r(mu, dtype), _r(m, dtype)
    v, grads = ops.value_and_grad(logpdf, argnums=(0, 1, 2))(
        ops.asarray(y), ops.asarray(mu), ops.asarray(m))
    assert_close(v, _mvn_ref(ry, rmu, rm))
    expected = (fd_grad(lambda a: _mvn_ref(a, rmu, rm), ry),
                fd_grad(lambda a: _mvn_ref(ry, a, rm), rmu),
                fd_grad(lambda a: _mvn_ref(ry, rmu, a), rm))
    assert_close(tuple(grads), expected, kind="grad", check_dtype=True)


# ------------------------------------------------------------------------------ vmap
def test_vmap_in_axes(backend, dtype):
    x, y = _r(X, dtype), _r(Y, dtype)
    bx, by = ops.asarray(X), ops.asarray(Y)
    out = ops.vmap(f_ops)(bx, ops.stack([by] * 3))
    assert_close(out, np.array([f_np(x[i], y) for i in range(3)]))
    out = ops.vmap(f_ops, in_axes=(0, None))(bx, by)
    assert_close(out, np.array([f_np(x[i], y) for i in range(3)]))
    out = ops.vmap(f_ops, in_axes=(1, 0))(bx, by)
    assert_close(out, np.array([f_np(x[:, j], y[j]) for j in range(4)]))
    out = ops.vmap(lambda a: a * 2.0, in_axes=1)(bx)
    assert_close(out, (x * 2).T)


def test_vmap_pytree_out_and_out_axes(backend, dtype):
    x = _r(X, dtype)

    def f(row):
        return {"s": ops.sum(row), "pair": (row * 2.0, ops.max(row))}

    out = ops.vmap(f)(ops.asarray(X))
    assert_close(out, {"s": x.sum(1), "pair": (x * 2, x.max(1))})
    out = ops.vmap(lambda r: r + 1.0, out_axes=1)(ops.asarray(X))
    assert_close(out, (x + 1).T)


def test_vmap_nested_and_of_grad(backend, dtype):
    x, y = _r(X, dtype), _r(Y, dtype)
    outer = ops.vmap(ops.vmap(lambda a, b: a * b, in_axes=(0, 0)), in_axes=(0, None))
    assert_close(outer(ops.asarray(X), ops.asarray(Y)), x * y)
    per_example = ops.vmap(ops.grad(f_ops), in_axes=(0, None))(ops.asarray(X), ops.asarray(Y))
    assert_close(per_example, np.cos(x) * y + 2 * x, kind="grad")


def test_vmap_linalg(backend, dtype):
    rng = np.random.default_rng(5)
    m, b = rng.normal(size=(4, 3, 3)), rng.normal(size=(4, 3, 2))
    a = spd_np(_r(m, dtype))
    out = ops.vmap(lambda mi, bi: ops.linalg.cho_solve(ops.linalg.cholesky(spd_ops(mi)), bi))(
        ops.asarray(m), ops.asarray(b))
    assert_close(out, np.linalg.solve(a, _r(b, dtype)), tol=10)


# ------------------------------------------------------------------------------- jit
def test_jit_pytree_and_static(backend, dtype):
    x = _r(X, dtype)

    def f(a, power):
        return {"p": a ** power, "s": ops.sum(a, axis=0)}

    jf = ops.jit(f, static_argnums=(1,))
    for p in (2, 3):
        assert_close(jf(ops.asarray(X), p), {"p": x ** p, "s": x.sum(0)})


def test_eval_shape(backend, dtype):
    """Shapes and dtypes of a pytree of outputs (NumPy's for the same function), and the
    function's Python side effects happen (what model setup relies on)."""
    seen = []

    def f(x, y):
        seen.append(tuple(ops.shape(x)))
        return {"sum": ops.sum(x, axis=0), "outer": x[:, :, None] * y}

    out = ops.eval_shape(f, ops.asarray(X), ops.ones((5,)))
    ref = {"sum": np.sum(X, axis=0), "outer": X[:, :, None] * np.ones(5)}
    for k in ref:
        assert tuple(out[k].shape) == ref[k].shape
        assert np.dtype(out[k].dtype) == np.dtype(dtype)
    assert seen == [X.shape]


def test_jit_of_value_and_grad(backend, dtype):
    x, y = _r(X, dtype), _r(Y, dtype)
    vg = ops.jit(ops.value_and_grad(f_ops))
    v, g = vg(ops.asarray(X), ops.asarray(Y))
    assert_close(v, f_np(x, y))
    assert_close(g, np.cos(x) * y + 2 * x, kind="grad")


def test_grad_of_jit(backend, dtype):
    x, y = _r(X, dtype), _r(Y, dtype)
    g = ops.grad(ops.jit(f_ops))(ops.asarray(X), ops.asarray(Y))
    assert_close(g, np.cos(x) * y + 2 * x, kind="grad")


def test_jit_of_vmapped_gradient_matches_loop(backend, dtype):
    """The shape NUTS compiles: ``jit(vmap(value_and_grad(f)))``, against a NumPy loop."""
    x, y = _r(X, dtype), _r(Y, dtype)
    vg = ops.jit(ops.vmap(ops.value_and_grad(lambda a: ops.sum(ops.sin(a) * ops.asarray(Y))
                                             + ops.sum(a ** 2))))
    for _ in range(3):      # first call traces; later calls run the compiled graph
        v, g = vg(ops.asarray(X))
        assert_close(v, np.sum(np.sin(x) * y, axis=1) + np.sum(x ** 2, axis=1))
        assert_close(g, np.cos(x) * y + 2 * x, kind="grad")


@pytest.mark.backends("torch")
def test_torch_jit_traces_once_per_signature(backend, dtype):
    calls = []

    def f(a):
        calls.append(1)
        return ops.exp(a) * 2.0

    jf = ops.jit(f)
    jf(ops.asarray(X))
    n = len(calls)
    for _ in range(3):
        assert_close(jf(ops.asarray(X)), 2 * np.exp(_r(X, dtype)))
    assert len(calls) == n, "the compiled graph should run without calling f again"
    assert_close(jf(ops.asarray(Y)), 2 * np.exp(_r(Y, dtype)))     # new shape: traced again
    assert len(calls) > n


@pytest.mark.backends("torch")
def test_torch_jit_traces_after_its_eager_calls(backend, dtype, monkeypatch):
    """``PPL_TORCH_JIT_AFTER=3``: a signature's first two calls run ``f`` itself, the third
    traces it, later calls run the graph; a new signature starts counting again."""
    monkeypatch.setenv("PPL_TORCH_JIT_AFTER", "3")
    calls = []

    def f(a):
        calls.append(1)
        return ops.exp(a) * 2.0

    jf = ops.jit(f)
    for i in range(2):
        assert_close(jf(ops.asarray(X)), 2 * np.exp(_r(X, dtype)))
        assert len(calls) == i + 1
    assert_close(jf(ops.asarray(X)), 2 * np.exp(_r(X, dtype)))
    n = len(calls)
    assert n >= 3
    for _ in range(3):
        assert_close(jf(ops.asarray(X)), 2 * np.exp(_r(X, dtype)))
    assert len(calls) == n, "the traced graph should run without calling f again"
    assert_close(jf(ops.asarray(Y)), 2 * np.exp(_r(Y, dtype)))     # new shape: eager again
    assert len(calls) == n + 1


@pytest.mark.backends("torch")
def test_torch_jit_keeps_python_branches_eager(backend, dtype):
    """A data-dependent Python branch cannot be traced: jit must run it eagerly every time
    (baking in the first branch would silently give 3x instead of 2x)."""
    def f(a):
        return a * 2.0 if float(ops.sum(a)) > 0 else a * 3.0

    jf = ops.jit(f)
    pos, neg = np.abs(X) + 0.1, -np.abs(X) - 0.1
    assert_close(jf(ops.asarray(pos)), 2 * _r(pos, dtype))
    assert_close(jf(ops.asarray(neg)), 3 * _r(neg, dtype))
    assert_close(jf(ops.asarray(pos)), 2 * _r(pos, dtype))


@pytest.mark.backends("torch")
def test_torch_jit_random_draws_stay_random(backend, dtype):
    import ppl
    jf = ops.jit(lambda key, a: a + ppl.random.normal(key, (3, 4)))
    a = ops.asarray(X)
    d1 = ops.to_numpy(jf(ppl.random.key(1), a))
    d2 = ops.to_numpy(jf(ppl.random.key(2), a))
    assert not np.allclose(d1, d2)
    np.testing.assert_allclose(ops.to_numpy(jf(ppl.random.key(1), a)), d1)


def test_jit_same_array_passed_twice(backend, dtype):
    """A first call with one array in two argument slots must not tie the slots together
    (torch: both become one traced input unless jit copies them)."""
    jf = ops.jit(lambda a, b: {"d": a - 2.0 * b})
    x, y = ops.asarray(X), ops.asarray(X[::-1] + 1.0)
    assert_close(jf(x, x)["d"], -_r(X, dtype))
    assert_close(jf(x, y)["d"], _r(X, dtype) - 2.0 * _r(X[::-1] + 1.0, dtype))


def test_sampling_scope_is_a_reentrant_context(backend):
    """Every backend's ``sampling_scope()`` can be held (twice, nested) around array work and
    leaves the backend as it was; it is a setting, not a ``ppl.ops`` name."""
    x = ops.asarray([1.0, 2.0])
    with backend.sampling_scope():
        with backend.sampling_scope():
            y = ops.sum(x * x)
    assert float(ops.to_numpy(y)) == 5.0
    assert float(ops.to_numpy(ops.sum(x))) == 3.0
    assert not hasattr(ops, "sampling_scope")
