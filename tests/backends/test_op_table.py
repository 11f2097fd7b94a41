"""Conformance of every array op in the table of ``backend_cases.py``, on every backend and dtype.

* values and shapes against the NumPy/SciPy reference (evaluated in float64 on the inputs
  rounded to the tested dtype, so only the op's own error counts);
* output dtypes: float ops return the backend's float dtype, index ops an integer dtype,
  predicates ``bool``;
* gradients of ``sum(w * op(x))`` (``w`` a fixed random projection), through ``ops.jit``,
  against central finite differences of the reference, computed in float64 with NumPy;
* a small subset under ``ops.jit``;
* float32 inputs keep float32 on a float64 backend;
* every public op name is covered here or by a dedicated test module.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from backend_cases import CASES, Case, call_op
from conftest import assert_close, fd_grad

from ppl import ops
from ppl.backends import LINALG_OPS, NN_OPS, OPS, RANDOM_OPS

GRAD_CASES = [c for c in CASES if c.grad is not False]
assert all(c.args for c in GRAD_CASES), "a differentiable case needs inputs"
JIT_CASES = [c for c in CASES if c.jit]
# ops whose float32 inputs must stay float32 on a float64 backend
KEEP_DTYPE_OPS = {"abs", "exp", "log", "sqrt", "tanh", "square", "add", "multiply", "where",
                  "maximum", "sum", "mean", "var", "prod", "cumsum", "logsumexp", "softplus",
                  "sigmoid", "log_sigmoid", "gammaln", "digamma", "erf", "erfinv", "ndtr",
                  "ndtri", "log_ndtr", "xlogy", "matmul", "einsum", "cholesky",
                  "solve_triangular", "logdet", "softmax", "log_softmax", "gelu", "concat",
                  "reshape", "index_update", "diag", "outer"}
KEEP_DTYPE_CASES = [c for c in CASES if c.op in KEEP_DTYPE_OPS and c.fn is None
                    and c.out == "float"]


def _ids(cases):
    return [c.id for c in cases]


# ------------------------------------------------------------------------- input plumbing
def make_args(case: Case) -> list:
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    return [g(rng) for g in case.args]


def split(args):
    """``(float_leaves, build)``: the float NumPy arrays in ``args`` and a function
    ``build(values, to_backend)`` that puts new values in their place (converting the other
    NumPy arrays to backend arrays when ``to_backend``)."""
    leaves = []

    def rec(a):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            leaves.append(a)
            i = len(leaves) - 1
            return lambda vals, tb: vals[i]
        if isinstance(a, list | tuple):
            subs = [rec(c) for c in a]
            kind = type(a)
            return lambda vals, tb: kind(s(vals, tb) for s in subs)
        if isinstance(a, np.ndarray):
            return lambda vals, tb: ops.asarray(a) if tb else a
        return lambda vals, tb: a

    builder = rec(list(args))
    return leaves, lambda vals, to_backend: builder(vals, to_backend)


def rounded(leaves, dtype):
    return [x.astype(dtype).astype(np.float64) for x in leaves]


def check_kind(x, kind, dtype, where):
    if isinstance(kind, tuple):
        assert isinstance(x, tuple | list) and len(x) == len(kind), (
            f"{where}: expected a tuple of {len(kind)} outputs, got {type(x)}")
        for xi, ki in zip(x, kind):
            check_kind(xi, ki, dtype, where)
        return
    d = ops.dtype_of(x)
    if kind == "float":
        assert d == dtype, f"{where}: output dtype {d}, expected {dtype}"
    elif kind == "int":
        assert d in ("int32", "int64"), f"{where}: output dtype {d}, expected int32/int64"
    else:
        assert d == "bool", f"{where}: output dtype {d}, expected bool"


# ------------------------------------------------------------------------------- tests
@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_value(case, backend, dtype):
    leaves, build = split(make_args(case))
    expected = case.ref(*build(rounded(leaves, dtype), False), **case.kwargs)
    out = call_op(case, *build([ops.asarray(x) for x in leaves], True))
    check_kind(out, case.out, dtype, case.id)
    assert_close(out, expected, tol=case.tol, atol=case.atol, err_msg=case.id)


@pytest.mark.parametrize("case", GRAD_CASES, ids=_ids(GRAD_CASES))
def test_grad(case, backend, dtype):
    leaves, build = split(make_args(case))
    which = list(range(len(leaves))) if case.grad is True else list(case.grad)
    ref_leaves = rounded(leaves, dtype)

    def pick(out):
        return out if case.grad_out is None else out[case.grad_out]

    shape = np.shape(pick(case.ref(*build(ref_leaves, False), **case.kwargs)))
    w = np.random.default_rng(1).normal(size=shape)

    def ref_objective(i, x):
        vals = list(ref_leaves)
        vals[i] = x
        return np.sum(w * pick(case.ref(*build(vals, False), **case.kwargs)))

    expected = tuple(fd_grad(lambda x, i=i: ref_objective(i, x), ref_leaves[i]) for i in which)

    b_leaves = [ops.asarray(x) for x in leaves]
    w_b = ops.asarray(w)

    def objective(*diff):
        vals = list(b_leaves)
        for j, i in enumerate(which):
            vals[i] = diff[j]
        return ops.sum(pick(call_op(case, *build(vals, True))) * w_b)

    # under ops.jit: every op must also trace (JAX); one compilation is cheaper than the many
    # per-primitive ones of eager JAX. Eager grad is covered by test_autodiff_transforms.
    grad_fn = ops.jit(ops.grad(objective, argnums=tuple(range(len(which)))))
    grads = grad_fn(*[b_leaves[i] for i in which])
    assert isinstance(grads, tuple | list) and len(grads) == len(which), (
        f"{case.id}: grad with argnums=tuple must return a tuple of {len(which)} gradients")
    assert_close(tuple(grads), expected, kind="grad", tol=case.grad_tol, check_dtype=True,
                 err_msg=f"d {case.id}")


@pytest.mark.parametrize("case", JIT_CASES, ids=_ids(JIT_CASES))
def test_jit(case, backend, dtype):
    args = make_args(case)
    leaves, build = split(args)
    jitted = ops.jit(lambda *vals: call_op(case, *build(list(vals), True)))
    for shift in (0.0, 0.25):  # a second call with new values: inputs are not baked in
        vals = [x + shift for x in leaves]
        expected = case.ref(*build(rounded(vals, dtype), False), **case.kwargs)
        out = jitted(*[ops.asarray(x) for x in vals])
        check_kind(out, case.out, dtype, case.id)
        assert_close(out, expected, tol=case.tol, err_msg=f"jit {case.id}")


@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("case", KEEP_DTYPE_CASES, ids=_ids(KEEP_DTYPE_CASES))
def test_float32_input_keeps_float32(case, backend):
    leaves, build = split(make_args(case))
    out = call_op(case, *build([ops.asarray(x, dtype="float32") for x in leaves], True))
    check_kind(out, case.out, "float32", f"{case.id} on float32 inputs")
    expected = case.ref(*build(rounded(leaves, "float32"), False), **case.kwargs)
    assert_close(out, expected, dtype="float32", tol=case.tol, err_msg=case.id)


def _dedicated() -> set[str]:
    import test_autodiff_transforms
    import test_control_flow
    import test_conversion
    import test_random_samplers
    return (test_conversion.COVERS | test_autodiff_transforms.COVERS
            | test_control_flow.COVERS | test_random_samplers.COVERS)


def test_every_op_is_covered():
    """New ops cannot be added untested: each public name has a table case or a dedicated
    test module that declares it in ``COVERS``."""
    covered = {c.op for c in CASES} | _dedicated()
    public = set(OPS) | set(LINALG_OPS) | set(NN_OPS) | {f"random.{n}" for n in RANDOM_OPS}
    missing = sorted(public - covered)
    assert not missing, f"ops without a conformance test: {missing}"


def test_table_grad_flags_are_consistent():
    for c in CASES:
        if c.out != "float" and c.grad_out is None:
            assert c.grad is False, f"{c.id}: non-float output cannot be differentiated"


@pytest.mark.parametrize("op", ["index_update", "index_add"])
def test_scatter_under_vmap(op, backend, dtype):
    """``index_update`` / ``index_add`` of a batch of values under ``vmap`` (a model's
    ``x.at[idx].set(v)`` in a vectorized chain): each row is the NumPy scatter of its own
    values. TensorFlow's ``vectorized_map`` failed on the scatter's int64 positions."""
    base = np.arange(5.0)
    idx = np.array([1, 3, 3]) if op == "index_add" else np.array([1, 3])
    vals = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])[:, :idx.size]
    expected = []
    for row in vals:
        e = base.copy()
        if op == "index_add":
            np.add.at(e, idx, row)
        else:
            e[idx] = row
        expected.append(e)
    fn = getattr(ops, op)
    out = ops.vmap(lambda v: fn(ops.asarray(base), idx, v))(ops.asarray(vals))
    assert_close(out, np.array(expected), tol=1e-6, err_msg=op)
