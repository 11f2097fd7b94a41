"""``while_loop``, ``fori_loop``, ``scan``, ``cond`` and ``switch`` (``jax.lax`` signatures) on
every backend, against pure-Python references, plus gradients through ``scan`` and
``fori_loop`` against finite differences."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest
from conftest import assert_close, fd_grad, to_numpy

from ppl import ops

COVERS = {"while_loop", "fori_loop", "scan", "cond", "switch"}


def _r(a, dtype):
    return np.asarray(a).astype(dtype).astype(np.float64)


class Carry(NamedTuple):
    i: object
    total: object


def test_while_loop_pytree_carry(backend, dtype):
    def cond_fun(c):
        return c.i < 10

    def body_fun(c):
        return Carry(c.i + 1, {"x": c.total["x"] * 1.5, "n": c.total["n"] + 2.0})

    out = ops.while_loop(cond_fun, body_fun,
                         Carry(ops.asarray(0), {"x": ops.asarray([1.0, 2.0]),
                                                "n": ops.asarray(0.0)}))
    assert isinstance(out, Carry)
    assert int(ops.to_numpy(out.i)) == 10
    assert_close(out.total, {"x": np.array([1.0, 2.0]) * 1.5 ** 10, "n": 20.0})
    assert ops.dtype_of(out.total["x"]) == dtype


def test_while_loop_data_dependent(backend):
    # Newton iterations for sqrt(2) until converged: the trip count depends on values
    def body(c):
        x, k = c
        return 0.5 * (x + 2.0 / x), k + 1

    x, k = ops.while_loop(lambda c: ops.abs(c[0] * c[0] - 2.0) > 1e-5, body,
                          (ops.asarray(4.0), ops.asarray(0)))
    assert abs(float(ops.to_numpy(x)) - np.sqrt(2.0)) < 1e-5
    assert 1 <= int(ops.to_numpy(k)) < 10


def test_fori_loop(backend, dtype):
    x0 = np.array([0.5, -1.0])
    out = ops.fori_loop(2, 7, lambda i, c: (c[0] * 0.9 + i, c[1] + 1), (ops.asarray(x0),
                                                                       ops.asarray(0)))
    ref = x0.copy()
    for i in range(2, 7):
        ref = ref * 0.9 + i
    assert_close(out[0], ref)
    assert int(ops.to_numpy(out[1])) == 5


def _py_scan(f, init, xs, length=None, reverse=False):
    n = len(xs) if xs is not None else length
    order = range(n - 1, -1, -1) if reverse else range(n)
    carry, ys = init, [None] * n
    for i in order:
        carry, ys[i] = f(carry, None if xs is None else xs[i])
    return carry, np.stack(ys)


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_scan_with_xs(backend, dtype, reverse):
    xs = np.random.default_rng(0).normal(size=(6, 2))
    rxs = _r(xs, dtype)

    def step_np(c, x):
        c = 0.8 * c + x
        return c, c * 2.0

    def step(c, x):
        c = 0.8 * c + x
        return c, c * 2.0

    carry, ys = ops.scan(step, ops.zeros(2), ops.asarray(xs), reverse=reverse)
    ref_c, ref_ys = _py_scan(step_np, np.zeros(2), rxs, reverse=reverse)
    assert_close((carry, ys), (ref_c, ref_ys))
    assert ops.shape(ys) == (6, 2) and ops.dtype_of(ys) == dtype


def test_scan_length_only_and_none_ys(backend):
    carry, ys = ops.scan(lambda c, _: (c + 1.0, c * c), ops.asarray(1.0), length=4)
    assert_close((carry, ys), (5.0, np.array([1.0, 4.0, 9.0, 16.0])))
    carry, ys = ops.scan(lambda c, _: (c * 2.0, None), ops.asarray(1.0), length=3)
    assert ys is None
    assert_close(carry, 8.0)


def test_scan_pytree_carry_and_xs(backend, dtype):
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(5, 3)), rng.normal(size=(5,))

    def step(c, x):
        s = {"sum": c["sum"] + x["a"], "prod": c["prod"] * (1.0 + 0.1 * x["b"])}
        return s, (ops.sum(x["a"]), s["prod"])

    init = {"sum": ops.zeros(3), "prod": ops.asarray(1.0)}
    carry, (ys1, ys2) = ops.scan(step, init, {"a": ops.asarray(a), "b": ops.asarray(b)})
    ra, rb = _r(a, dtype), _r(b, dtype)
    prods = np.cumprod(1.0 + 0.1 * rb)
    assert_close(carry, {"sum": ra.sum(0), "prod": prods[-1]})
    assert_close((ys1, ys2), (ra.sum(1), prods))


def test_cond_and_switch(backend, dtype):
    x = ops.asarray([1.0, 2.0])
    for pred, ref in [(True, [2.0, 4.0]), (False, [0.0, 1.0]),
                      (ops.asarray(True), [2.0, 4.0]), (ops.sum(x) < 0.0, [0.0, 1.0])]:
        out = ops.cond(pred, lambda a, k: a * k, lambda a, k: a - 1.0, x, 2.0)
        assert_close(out, np.array(ref))
        assert ops.dtype_of(out) == dtype
    out = ops.cond(True, lambda p: {"a": p[0], "b": p[1] + 1.0},
                   lambda p: {"a": p[1], "b": p[0]}, (x, x))
    assert_close(out, {"a": np.array([1.0, 2.0]), "b": np.array([2.0, 3.0])})
    branches = [lambda a: a + 1.0, lambda a: a * 3.0, lambda a: -a]
    for i, ref in enumerate([[2.0, 3.0], [3.0, 6.0], [-1.0, -2.0]]):
        assert_close(ops.switch(i, branches, x), np.array(ref))
        assert_close(ops.switch(ops.asarray(i), branches, x), np.array(ref))


# ----------------------------------------------------------- gradients through loops
def _ar_loglik_np(params, y):
    phi, log_sigma = params
    sigma = np.exp(log_sigma)
    total, prev = 0.0, 0.0
    for t in range(len(y)):
        total += -0.5 * ((y[t] - phi * prev) / sigma) ** 2 - log_sigma
        prev = y[t]
    return total


def _ar_loglik_scan(params, y):
    phi, log_sigma = params[0], params[1]

    def step(carry, yt):
        total, prev = carry
        total = total - 0.5 * ((yt - phi * prev) / ops.exp(log_sigma)) ** 2 - log_sigma
        return (total, yt), total

    (total, _), path = ops.scan(step, (ops.asarray(0.0), ops.asarray(0.0)), y)
    return total + 0.0 * ops.sum(path)


def test_grad_through_scan_ar1(backend, dtype):
    """AR(1) log-likelihood through a scan carry: d/dphi, d/dlog_sigma, d/dy."""
    rng = np.random.default_rng(7)
    y = np.cumsum(rng.normal(size=12)) * 0.3
    params = np.array([0.6, -0.2])
    ry, rp = _r(y, dtype), _r(params, dtype)
    v, (gp, gy) = ops.value_and_grad(_ar_loglik_scan, argnums=(0, 1))(
        ops.asarray(params), ops.asarray(y))
    assert_close(v, _ar_loglik_np(rp, ry))
    expected = (fd_grad(lambda p: _ar_loglik_np(p, ry), rp),
                fd_grad(lambda a: _ar_loglik_np(rp, a), ry))
    assert_close((gp, gy), expected, kind="grad", check_dtype=True)


def test_grad_through_reverse_scan_and_fori_loop(backend, dtype):
    def via_scan(a):
        c, ys = ops.scan(lambda c, x: (c * a + x, c * c), ops.asarray(1.0),
                         ops.asarray([0.1, 0.2, 0.3]), reverse=True)
        return c + ops.sum(ys)

    def via_fori(a):
        return ops.fori_loop(0, 4, lambda i, c: ops.sin(c * a) + 1.0, ops.asarray(0.5))

    def ref_scan(a):
        c, s = 1.0, 0.0
        for x in [0.3, 0.2, 0.1]:
            s += c * c
            c = c * a + x
        return c + s

    def ref_fori(a):
        c = 0.5
        for _ in range(4):
            c = np.sin(c * a) + 1.0
        return c

    for fun, ref in [(via_scan, ref_scan), (via_fori, ref_fori)]:
        g = ops.grad(fun)(ops.asarray(0.7))
        a = float(_r(0.7, dtype))
        assert_close(g, fd_grad(lambda t: ref(float(t)), np.array(a)), kind="grad",
                     err_msg=fun.__name__)


def test_grad_through_cond(backend, dtype):
    def f(x):
        return ops.cond(ops.sum(x) > 0.0, lambda a: ops.sum(a ** 3), lambda a: ops.sum(-a),
                        x)

    x = np.array([0.5, 1.0])
    assert_close(ops.grad(f)(ops.asarray(x)), 3 * x ** 2, kind="grad")
    assert_close(ops.grad(f)(ops.asarray(-x)), -np.ones(2), kind="grad")


def test_batched_grad_through_scan_inside_compiled_loop(backend, dtype):
    """What NUTS does with a model holding a scan (garch, hmm): ``vmap(value_and_grad)`` of an
    AR(1) log-likelihood, called in a ``while_loop`` under ``jit``; against finite differences
    of a NumPy reference, per chain. (On TensorFlow a ``pfor`` of the scan's gradient could not
    be compiled by XLA.)"""
    rng = np.random.default_rng(11)
    y = np.cumsum(rng.normal(size=9)) * 0.3
    # compiled on its own and called from a compiled loop, with the data an unmapped argument
    # (as the sampler does)
    vg = ops.jit(ops.vmap(ops.value_and_grad(_ar_loglik_scan), in_axes=(0, None)))

    def descend(params, data):
        def body(c):
            k, p, _ = c
            v, g = vg(p, data)
            return k + 1, p + 0.01 * g, v
        zero = ops.zeros((ops.shape(params)[0],), dtype)
        return ops.while_loop(lambda c: c[0] < 3, body, (ops.asarray(0), params, zero))

    start = np.array([[0.6, -0.2], [0.1, 0.3], [-0.4, 0.0]])
    _, got, last = ops.jit(descend)(ops.asarray(start), ops.asarray(y))
    ry = _r(y, dtype)
    p = _r(start, dtype)
    for _ in range(3):
        values = np.array([_ar_loglik_np(row, ry) for row in p])
        p = p + 0.01 * np.stack([fd_grad(lambda q: _ar_loglik_np(q, ry), row) for row in p])
    assert_close(got, p, kind="grad")
    assert_close(last, values)


@pytest.mark.parametrize("xs, length", [((3,), 5), ((2, 3), None)])
def test_scan_refuses_xs_of_other_lengths(backend, xs, length):
    """``jax.lax.scan`` refuses a ``length`` other than the leading size of ``xs``, and leaves
    of ``xs`` of different leading sizes; the Python loops ran 3 steps, or the shortest."""
    leaves = tuple(ops.zeros((n,)) for n in xs)
    with pytest.raises(ValueError, match="leading"):
        ops.scan(lambda c, x: (c, None), ops.asarray(0.0), leaves, length=length)


def test_switch_clamps_its_index(backend):
    """``switch`` clamps the index to the branches, as ``jax.lax.switch`` documents (the Python
    fallback took ``branches[-1]`` for -1 and raised IndexError past the end)."""
    branches = [lambda v, k=k: v + k for k in range(3)]
    got = [float(to_numpy(ops.switch(i, branches, ops.asarray(10.0)))) for i in (-1, 0, 1, 2, 5)]
    assert got == [10.0, 10.0, 11.0, 12.0, 12.0]
