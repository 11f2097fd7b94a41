"""Conversion and introspection ops, Python operators on backend arrays, and the float dtype
contract (float64 really is float64 on every backend)."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from conftest import assert_close

import ppl
from ppl import ops

COVERS = {"asarray", "to_numpy", "is_array", "shape", "ndim", "size", "dtype_of", "astype",
          "item", "broadcast_shapes", "is_tracer"}


@pytest.mark.parametrize("value, kind", [
    (1.5, "float"), ([1.0, 2.0], "float"), (np.arange(3.0), "float"),
    (np.float32(2.0), "float"), (3, "int"), ([1, 2], "int"), (np.arange(3), "int"),
    (True, "bool"), (np.array([True, False]), "bool"),
])
def test_asarray_dtype_rules(backend, dtype, value, kind):
    x = ops.asarray(value)
    assert ops.is_array(x)
    d = ops.dtype_of(x)
    if kind == "float":
        assert d == dtype
    elif kind == "int":
        assert d in ("int32", "int64")
    else:
        assert d == "bool"
    out = ops.to_numpy(x)
    assert isinstance(out, np.ndarray)
    assert str(out.dtype) == d, "to_numpy must keep the dtype reported by dtype_of"
    np.testing.assert_array_equal(out, np.asarray(value))


@pytest.mark.parametrize("target", ["float32", "float64", "int32", "int64", "bool"])
def test_asarray_and_astype_explicit_dtype(backend, target):
    # int64 may be narrowed to int32 (JAX without x64, as the protocol allows)
    ok = ("int32", "int64") if target == "int64" else (target,)
    x = ops.asarray([0.0, 1.0, 2.0], dtype=target)
    assert ops.dtype_of(x) in ok
    y = ops.astype(ops.asarray([0.0, 1.0, 2.0]), target)
    assert ops.dtype_of(y) in ok
    np.testing.assert_array_equal(ops.to_numpy(y), np.array([0, 1, 2]).astype(target))


def test_shape_ndim_size_item(backend):
    x = ops.zeros((2, 3, 4))
    assert ops.shape(x) == (2, 3, 4)
    assert all(type(d) is int for d in ops.shape(x))
    assert ops.ndim(x) == 3
    assert ops.size(x) == 24
    s = ops.sum(ops.asarray([1.5, 2.0]))
    assert ops.shape(s) == ()
    v = ops.item(s)
    assert isinstance(v, float) and v == 3.5
    assert float(s) == 3.5
    assert isinstance(ops.item(ops.asarray(3)), int)


def test_is_array(backend):
    assert ops.is_array(ops.ones(2))
    assert not ops.is_array([1.0, 2.0])
    assert not ops.is_array("abc")


def test_is_tracer(backend):
    """Concrete arrays are not tracers; a value that is not a tracer can be read, inside
    ``jit``, ``grad`` and ``vmap`` too (the contract ``validate_args`` relies on)."""
    x = ops.asarray([1.0, 2.0])
    assert ops.is_tracer(x) is False
    seen = []

    def probe(a):
        traced = bool(ops.is_tracer(a))
        seen.append(traced)
        if not traced:
            bool(ops.all(a > -100.0))  # must be readable
        return ops.sum(a * a)

    ops.jit(probe)(x)
    if backend.compiles_control_flow:   # jit stages the whole function out (JAX)
        assert seen[-1], "inside a compiled jit the argument is a tracer"
    ops.grad(probe)(x)
    ops.vmap(probe)(ops.stack([x, x]))


@pytest.mark.parametrize("shapes, expected", [
    (((2, 1), (3,)), (2, 3)), (((), (4, 1)), (4, 1)), (((5, 1, 3), (4, 1)), (5, 4, 3)),
])
def test_broadcast_shapes(backend, shapes, expected):
    out = ops.broadcast_shapes(*shapes)
    assert tuple(out) == expected


# ------------------------------------------------------------------- Python operators
_BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow]
_CMP = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]


@pytest.mark.parametrize("op", _BINARY, ids=lambda o: o.__name__)
def test_binary_operators(backend, dtype, op):
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.5, 2, size=(2, 3)), rng.uniform(0.5, 2, size=(3,))
    ra, rb = a.astype(dtype).astype(float), b.astype(dtype).astype(float)
    x, y = ops.asarray(a), ops.asarray(b)
    for out, ref in [(op(x, y), op(ra, rb)), (op(x, 2.0), op(ra, 2.0)),
                     (op(2.0, x), op(2.0, ra))]:
        assert ops.dtype_of(out) == dtype, f"{op.__name__} changed the dtype"
        assert_close(out, ref, err_msg=op.__name__)


@pytest.mark.parametrize("op", _CMP, ids=lambda o: o.__name__)
def test_comparison_operators(backend, op):
    a, b = np.array([[1.0, 2.0, 3.0]]), np.array([2.0, 2.0, 2.0])
    out = op(ops.asarray(a), ops.asarray(b))
    assert ops.dtype_of(out) == "bool"
    np.testing.assert_array_equal(ops.to_numpy(out), op(a, b))


def test_unary_matmul_and_indexing(backend, dtype):
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 2))
    x, y = ops.asarray(a), ops.asarray(b)
    r = a.astype(dtype).astype(float)
    assert_close(-x, -r)
    assert_close(abs(x), np.abs(r))
    assert_close(x @ y, r @ b.astype(dtype).astype(float))
    assert_close(x[..., 1], r[..., 1])
    assert_close(x[0], r[0])
    assert_close(x[:, 1:3], r[:, 1:3])
    assert_close(x[1, :, ::2], r[1, :, ::2])
    assert_close(x[None, 0], r[None, 0])


# ------------------------------------------------------------------ float64 contract
@pytest.mark.dtypes("float64")
def test_float64_is_really_float64(backend):
    assert ops.dtype_of(ops.asarray(1.0)) == "float64"
    assert ops.dtype_of(ops.zeros(3)) == "float64"
    assert ops.dtype_of(ops.linspace(0.0, 1.0, 3)) == "float64"
    assert ops.dtype_of(ppl.random.normal(ppl.random.key(0), (3,))) == "float64"
    x = ops.asarray(1.0) + ops.asarray(1e-10)
    assert ops.to_numpy(x) != 1.0, "1 + 1e-10 rounded to 1: the computation is not float64"
    assert ops.to_numpy(ops.exp(ops.asarray(1e-10)) - 1.0) != 0.0
    y = ops.sum(ops.asarray([1.0, 1e-12, -1.0]))
    assert ops.to_numpy(y) == pytest.approx(1e-12, rel=1e-3)
    z = ops.matmul(ops.asarray([[1.0, 1e-10]]), ops.asarray([[1.0], [1.0]]))
    assert ops.dtype_of(z) == "float64" and ops.to_numpy(z)[0, 0] != 1.0


@pytest.mark.dtypes("float32")
def test_float32_default(backend):
    assert ops.dtype_of(ops.asarray(1.0)) == "float32"
    assert ops.dtype_of(ops.asarray(np.float64(1.0))) == "float32"
    assert ops.dtype_of(ops.ones((2,))) == "float32"
    assert ops.dtype_of(ppl.random.uniform(ppl.random.key(0), (3,))) == "float32"
