"""The dtype and device policy of ``ppl.backends.common.dtypes``, on every backend and dtype.

* Every floating op gives the backend's float dtype for integer and boolean input. The ops
  come from the protocol (``FLOATING_OPS``: the methods marked ``@floating``), their inputs from
  the op table of ``backend_cases.py``, so a new floating op is covered as soon as it has a
  table row (and it must have one).
* An op of the table whose NumPy reference turns integer arrays into floats is declared
  floating, so an op that forgets its ``@floating`` mark fails here too.
* ``dtype`` arguments accept the same names on every backend; device strings are parsed alike.
"""

from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest
from backend_cases import CASES, call_op
from conftest import TEST_BACKENDS

from ppl import backends as registry
from ppl import ops
from ppl.backends import FLOATING_OPS
from ppl.backends.common.dtypes import DtypePolicy, parse_device

INPUT_KINDS = ("int64", "int32", "bool")
#: ops whose NumPy reference introduces floats by itself (the ops keep their input's kind)
REFERENCE_ADDS_FLOATS = {"relu": "np.maximum(x, 0.0)", "diag": "v[..., None] * np.eye(n)"}


def _case_for(op):
    """The first table row of ``op`` that calls the op directly (``fn`` rows build structured
    float inputs themselves), else its first row."""
    rows = [c for c in CASES if c.op == op]
    return next((c for c in rows if c.fn is None), rows[0] if rows else None)


def _args(case):
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    return [g(rng) for g in case.args]


def _integer_like(x, kind):
    """An integer or boolean stand-in for the float input ``x`` of the same shape, in the op's
    domain where it matters: square matrices become ``2 I + strictly lower ones`` (nonsingular,
    positive definite once symmetrised) or the identity; other arrays positive integers."""
    if x.ndim >= 2 and x.shape[-1] == x.shape[-2]:
        n = x.shape[-1]
        m = np.eye(n, dtype=bool) if kind == "bool" else (
            2 * np.eye(n, dtype=kind) + np.tril(np.ones((n, n), dtype=kind), -1))
        return np.broadcast_to(m, x.shape).copy()
    if kind == "bool":
        return x > np.median(x)
    return (np.rint(np.nan_to_num(np.abs(x), posinf=1.0)) + 1).astype(kind)


def _float_leaves(out):
    return list(out) if isinstance(out, tuple | list) else [out]


def test_every_floating_op_has_a_table_row():
    missing = sorted(op for op in FLOATING_OPS if _case_for(op) is None)
    assert not missing, f"floating ops without a row in backend_cases.CASES: {missing}"


@pytest.mark.parametrize("kind", INPUT_KINDS)
@pytest.mark.parametrize("op", sorted(FLOATING_OPS))
def test_integer_input_gives_the_float_dtype(backend, dtype, op, kind):
    case = _case_for(op)
    args = _args(case)
    floating = {i for i, _ in FLOATING_OPS[op]}
    call = [ops.asarray(_integer_like(a, kind)) if i in floating and isinstance(a, np.ndarray)
            else ops.asarray(a) if isinstance(a, np.ndarray) else a
            for i, a in enumerate(args)]
    assert all(ops.dtype_of(c) in ("int32", "int64", "bool")
               for i, c in enumerate(call) if i in floating and ops.is_array(c))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # log(0), 1/0 and the like: only dtypes count
        out = call_op(case, *call) if case.fn is None else getattr(ops, op)(*call,
                                                                          **case.kwargs)
    for leaf in _float_leaves(out):
        assert ops.dtype_of(leaf) == dtype, (
            f"ops.{op} of {kind} input gave {ops.dtype_of(leaf)}, expected {dtype}")


@pytest.mark.parametrize("op", ["exp", "log1p", "gammaln", "sigmoid", "sqrt"])
def test_python_and_numpy_integers_give_the_float_dtype(backend, dtype, op):
    fn = getattr(ops, op)
    assert ops.dtype_of(fn(2)) == dtype
    assert ops.dtype_of(fn(np.array([1, 2, 3]))) == dtype
    assert ops.dtype_of(ops.divide(np.array([1, 2]), 2)) == dtype


def test_floating_ops_keep_floating_input(backend, dtype):
    """The policy converts integers only: a float array keeps its dtype."""
    x32 = ops.asarray([0.5, 1.5], dtype="float32")
    assert ops.dtype_of(ops.exp(x32)) == "float32"
    assert ops.dtype_of(ops.divide(x32, 2)) == "float32"
    assert ops.dtype_of(ops.xlogy(x32, x32)) == "float32"


@pytest.mark.parametrize("value", [np.array([1, 2]), np.array([True, False]), 3, 2.5,
                                   np.array([0.5], dtype=np.float32)])
def test_generic_conversion_agrees_with_the_backends_own(backend, value):
    """``DtypePolicy.float_operand`` (the default a new backend inherits) converts like the
    fast version each backend here overrides it with."""
    generic = DtypePolicy.float_operand(backend, ops.asarray(value)
                                        if isinstance(value, np.ndarray) else value)
    own = backend.float_operand(ops.asarray(value) if isinstance(value, np.ndarray) else value)
    assert ops.dtype_of(generic) == ops.dtype_of(own)
    np.testing.assert_array_equal(ops.to_numpy(generic), ops.to_numpy(own))


def test_ops_that_make_floats_are_declared_floating():
    """An op whose NumPy reference maps integer arrays to floats (with no float constants in
    its arguments) must be marked ``@floating`` in the protocol."""
    undeclared = set()
    for case in CASES:
        if case.op in FLOATING_OPS or case.op in REFERENCE_ADDS_FLOATS or case.fn is not None:
            continue
        args = _args(case)
        constants = [a for a in list(args) + list(case.kwargs.values()) if isinstance(a, float)]
        floats = [isinstance(a, np.ndarray) and a.dtype.kind == "f" for a in args]
        if constants or not any(floats):
            continue
        ints = [_integer_like(a, "int64") if f else a for a, f in zip(args, floats)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = case.ref(*ints, **case.kwargs)
        if any(np.asarray(o).dtype.kind == "f" for o in _float_leaves(out)):
            undeclared.add(case.op)
    assert not undeclared, f"ops that turn integers into floats but are not @floating: " \
                           f"{sorted(undeclared)}"


# ------------------------------------------------------------------------------ dtype names
@pytest.mark.parametrize("spec, expected", [
    ("float32", "float32"), (np.float32, "float32"), (np.dtype("float64"), "float64"),
    ("int32", "int32"), (bool, "bool"), ("bool", "bool"),
])
def test_dtype_names_are_accepted_alike(backend, spec, expected):
    assert ops.dtype_of(ops.zeros((2,), dtype=spec)) == expected


def test_python_types_as_dtypes(backend, dtype):
    assert ops.dtype_of(ops.zeros((2,), dtype=float)) == dtype
    assert ops.dtype_of(ops.zeros((2,), dtype=int)) in ("int32", "int64")
    assert ops.dtype_of(ops.asarray([1.0], dtype=None)) == dtype


@pytest.mark.parametrize("spec", ["float128", "floaty", object])
def test_unknown_dtype_names_the_accepted_ones(backend, spec):
    with pytest.raises(TypeError) as info:
        ops.zeros((2,), dtype=spec)
    assert "float32" in str(info.value) and "int64" in str(info.value)


# ------------------------------------------------------------------------------ devices
@pytest.mark.parametrize("text, expected", [
    ("cpu", ("cpu", None)), ("CPU", ("cpu", None)), ("cuda:1", ("cuda", 1)),
    ("gpu", ("gpu", None)), ("tpu:0", ("tpu", 0)),
])
def test_parse_device(text, expected):
    assert parse_device(text) == expected


@pytest.mark.parametrize("name", TEST_BACKENDS)
@pytest.mark.parametrize("text", ["cuda:x", "gpu:", ":0", "c p u", ""])
def test_malformed_device_strings_raise(name, text):
    with pytest.raises(ValueError, match="device"):
        registry.load(name, device=text)


@pytest.mark.parametrize("name", TEST_BACKENDS)
def test_non_string_device_raises_type_error(name):
    with pytest.raises(TypeError, match="device"):
        registry.load(name, device=1.5)


@pytest.mark.parametrize("name", TEST_BACKENDS)
def test_cpu_device(name):
    b = registry.load(name, dtype="float64", device="cpu")
    assert b.device == "cpu"
    assert b.dtype_of(b.zeros((2,))) == "float64"


@pytest.mark.parametrize("name", TEST_BACKENDS)
@pytest.mark.parametrize("text", ["cuda:7", "cpu:5", "banana"])
def test_a_device_this_machine_lacks_is_refused_when_the_backend_is_made(name, text):
    """Every backend checks the device when it is made, naming it and how to fix it (torch
    accepted ``"cuda"`` without a GPU and failed at the first op; ``"banana"`` gave torch's own
    list of device types)."""
    with pytest.raises(ValueError, match=rf"{text!r}.*(device=None or 'cpu')"):
        registry.load(name, device=text)
