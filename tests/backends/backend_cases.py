"""The op table of the backend conformance suite: one row per (op, inputs) case.

Each :class:`Case` names a ``ppl.ops`` op, generators for its inputs (NumPy, float64), a
NumPy/SciPy reference and whether the op is differentiable there. ``test_op_table.py`` runs
every case on every installed backend and dtype: values and shapes against the reference,
output dtypes, and gradients against central finite differences of the *reference* (so a
backend is never compared with itself).

Inputs are NumPy arrays; float arrays become ``ops.asarray(x)`` (the backend's float dtype),
integer/bool arrays keep their kind, anything else (axis numbers, strings, slices) is passed
as is. ``fn`` replaces the plain ``ops.<op>(*args, **kwargs)`` call where an op needs a
structured input to be differentiated (``cholesky`` of ``m @ m.T + 3 I``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.special as sp

from ppl import ops
from ppl.backends import LINALG_OPS, NN_OPS

__all__ = ["CASES", "Case", "call_op", "op_function"]


@dataclass(frozen=True)
class Case:
    """One row of the table.

    op: the ``ppl.ops`` name covered; args: input generators ``rng -> value``; ref: the
    NumPy/SciPy reference, called like the op; grad: ``True`` (all float inputs), ``False``, or
    the indices of the float inputs to differentiate; out: output kind(s) ``"float"``,
    ``"int"``, ``"bool"`` (a tuple for tuple outputs); grad_out: which output of a tuple to
    differentiate; tol / grad_tol: tolerance multipliers; atol: absolute tolerance override;
    jit: part of the (small) jit subset.
    """

    op: str
    args: tuple
    ref: Callable
    kwargs: dict = field(default_factory=dict)
    label: str = ""
    grad: Any = True
    fn: Callable | None = None
    out: Any = "float"
    grad_out: int | None = None
    tol: float = 1.0
    grad_tol: float = 1.0
    atol: float | None = None
    jit: bool = False

    @property
    def id(self) -> str:
        return f"{self.op}-{self.label}" if self.label else self.op


def op_function(name: str):
    """``ops.nn.<name>`` / ``ops.linalg.<name>`` where the op lives there, else ``ops.<name>``."""
    if name in NN_OPS:
        return getattr(ops.nn, name)
    if name in LINALG_OPS:
        return getattr(ops.linalg, name)
    return getattr(ops, name)


def call_op(case: Case, *args):
    """Run ``case`` on backend arguments."""
    if case.fn is not None:
        return case.fn(*args, **case.kwargs)
    return op_function(case.op)(*args, **case.kwargs)


# ---------------------------------------------------------------------- input generators
def N(*shape):
    return lambda r: r.normal(size=shape)


def U(lo, hi, *shape):
    return lambda r: r.uniform(lo, hi, size=shape)


def Int(lo, hi, *shape):
    return lambda r: r.integers(lo, hi, size=shape)


def Bool(*shape):
    return lambda r: r.uniform(size=shape) < 0.5


def C(value):
    """A constant (copied)."""
    return lambda r: np.array(value) if isinstance(value, np.ndarray) else value


def L(*gens):
    """A list of generated arrays (for concat/stack)."""
    return lambda r: [g(r) for g in gens]


def Spd(*shape):
    def gen(r):
        m = r.normal(size=shape)
        return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])
    return gen


def Tri(*shape, lower=True):
    def gen(r):
        m = r.normal(size=shape) * 0.5
        m = np.tril(m) if lower else np.triu(m)
        return m + 2.0 * np.eye(shape[-1])
    return gen


def Wellcond(*shape):
    return lambda r: r.normal(size=shape) * 0.5 + 2.0 * np.eye(shape[-1])


# ------------------------------------------------------- structured inputs (ops and numpy)
def _t(x):
    return np.swapaxes(x, -1, -2)


def spd_np(m):
    return m @ _t(m) + 3.0 * np.eye(m.shape[-1])


def spd_ops(m):
    n = ops.shape(m)[-1]
    return ops.matmul(m, ops.matrix_transpose(m)) + 3.0 * ops.eye(n, dtype=ops.dtype_of(m))


def tri_np(m, lower=True):
    n = m.shape[-1]
    return (np.tril(m) if lower else np.triu(m)) + 3.0 * np.eye(n)


def tri_ops(m, lower=True):
    n = ops.shape(m)[-1]
    return (ops.tril(m) if lower else ops.triu(m)) + 3.0 * ops.eye(n, dtype=ops.dtype_of(m))


def _solve_tri_ref(a, b, lower=True):
    return np.linalg.solve(np.tril(a) if lower else np.triu(a), b)


def _cho_solve_ref(c, b, lower=True):
    a = c @ _t(c) if lower else _t(c) @ c
    return np.linalg.solve(a, b)


def _set(x, idx, v):
    y = np.array(x, copy=True)
    y[idx] = v
    return y


def _add(x, idx, v):
    y = np.array(x, copy=True)
    np.add.at(y, idx, v)
    return y


def _gelu_tanh(x):
    c = np.sqrt(2.0 / np.pi)
    return 0.5 * x * (1.0 + np.tanh(c * (x + 0.044715 * x ** 3)))


def _diag(v):
    return v[..., :, None] * np.eye(v.shape[-1])


_INF = np.array([0.0, np.inf, -np.inf, np.nan, 1.5, -2.0])


def _unary(name, ref, gen, label="", **kw):
    return Case(name, (gen,), ref, label=label, **kw)


def _elementwise():
    cases = [
        _unary("abs", np.abs, N(3, 4), jit=True),
        _unary("exp", np.exp, N(2, 3, 4), label="batched", jit=True),
        _unary("log", np.log, U(0.1, 5, 3, 4)),
        _unary("sqrt", np.sqrt, U(0.1, 5, 3, 4)),
        _unary("sin", np.sin, N(3, 4)),
        _unary("cos", np.cos, N(3, 4)),
        _unary("tan", np.tan, U(-1.2, 1.2, 3, 4)),
        _unary("tanh", np.tanh, N(3, 4)),
        _unary("sinh", np.sinh, N(3, 4)),
        _unary("cosh", np.cosh, N(3, 4)),
        _unary("asin", np.arcsin, U(-0.9, 0.9, 3, 4)),
        _unary("acos", np.arccos, U(-0.9, 0.9, 3, 4)),
        _unary("atan", np.arctan, N(3, 4)),
        _unary("asinh", np.arcsinh, N(3, 4)),
        _unary("acosh", np.arccosh, U(1.1, 4, 3, 4)),
        _unary("atanh", np.arctanh, U(-0.9, 0.9, 3, 4)),
        _unary("floor", np.floor, U(-3, 3, 3, 4), grad=False),
        _unary("ceil", np.ceil, U(-3, 3, 3, 4), grad=False),
        _unary("round", np.round, U(-3, 3, 3, 4), grad=False),
        _unary("sign", np.sign, N(3, 4), grad=False),
        _unary("square", np.square, N(2, 3, 4)),
        _unary("reciprocal", np.reciprocal, U(0.5, 3, 3, 4)),
        _unary("negative", np.negative, N(3, 4)),
        _unary("isfinite", np.isfinite, C(_INF), out="bool", grad=False),
        _unary("isnan", np.isnan, C(_INF), out="bool", grad=False),
        _unary("isinf", np.isinf, C(_INF), out="bool", grad=False),
        _unary("logical_not", np.logical_not, Bool(3, 4), out="bool", grad=False),
        _unary("stop_gradient", lambda x: x, N(3, 4), grad=False),
        Case("atan2", (N(3, 4), N(3, 4)), np.arctan2),
        Case("maximum", (N(2, 3, 4), N(4)), np.maximum, label="broadcast"),
        Case("minimum", (N(3, 4), N(3, 1)), np.minimum, label="broadcast"),
        Case("pow", (U(0.5, 2, 3, 4), N(3, 4)), np.power),
        Case("pow", (U(0.5, 2, 3, 4), C(2.0)), np.power, label="scalar"),
        Case("add", (N(2, 3, 4), N(3, 4)), np.add, label="broadcast", jit=True),
        Case("add", (N(3, 4), C(1.5)), np.add, label="scalar"),
        Case("subtract", (N(3, 4), N(4)), np.subtract),
        Case("multiply", (N(2, 1, 4), N(3, 1)), np.multiply, label="broadcast"),
        Case("divide", (N(3, 4), U(0.5, 2, 4)), np.divide),
        Case("where", (Bool(3, 4), N(3, 4), N(3, 4)), np.where),
        Case("where", (Bool(3, 1), N(1, 4), C(0.5)), np.where, label="broadcast"),
        Case("clip", (N(3, 4),), np.clip, kwargs=dict(min=-0.5, max=0.5)),
        Case("clip", (N(3, 4),), lambda x, min: np.maximum(x, min), kwargs=dict(min=0.1),
             label="min-only"),
        Case("logical_and", (Bool(3, 4), Bool(3, 4)), np.logical_and, out="bool", grad=False),
        Case("logical_or", (Bool(3, 4), Bool(4)), np.logical_or, out="bool", grad=False),
    ]
    for name, ref in [("equal", np.equal), ("not_equal", np.not_equal), ("less", np.less),
                      ("less_equal", np.less_equal), ("greater", np.greater),
                      ("greater_equal", np.greater_equal)]:
        cases.append(Case(name, (Int(0, 3, 3, 4), Int(0, 3, 4)),
                          lambda x, y, ref=ref: ref(x, y), out="bool", grad=False,
                          label="int"))
        cases.append(Case(name, (N(3, 4), N(3, 4)), ref, out="bool", grad=False))
    return cases


def _reductions():
    cases = []
    for name, ref in [("sum", np.sum), ("prod", np.prod), ("max", np.max), ("min", np.min),
                      ("mean", np.mean)]:
        gen = U(0.5, 1.5, 2, 3, 4) if name == "prod" else N(2, 3, 4)
        cases += [
            Case(name, (gen,), ref, label="all"),
            Case(name, (gen,), ref, kwargs=dict(axis=1), label="axis"),
            Case(name, (gen,), ref, kwargs=dict(axis=-1, keepdims=True), label="keepdims"),
            Case(name, (gen,), ref, kwargs=dict(axis=(0, 2)), label="axis-tuple"),
        ]
    cases += [
        Case("var", (N(2, 3, 4),), np.var, kwargs=dict(axis=1)),
        Case("var", (N(3, 4),), lambda x, correction: np.var(x, ddof=correction),
             kwargs=dict(correction=1), label="correction"),
        Case("std", (N(2, 3, 4),), np.std, kwargs=dict(axis=(0, 2), keepdims=True)),
        Case("argmax", (N(3, 4),), np.argmax, kwargs=dict(axis=1), out="int", grad=False),
        Case("argmax", (N(3, 4),), np.argmax, out="int", grad=False, label="flat"),
        Case("argmin", (N(2, 3, 4),), np.argmin, kwargs=dict(axis=-1, keepdims=True),
             out="int", grad=False),
        Case("all", (Bool(3, 4),), np.all, kwargs=dict(axis=0), out="bool", grad=False),
        Case("all", (C(np.ones((3, 4), bool)),), np.all, out="bool", grad=False, label="true"),
        Case("any", (Bool(3, 4),), np.any, kwargs=dict(axis=-1, keepdims=True), out="bool",
             grad=False),
        Case("cumsum", (N(2, 3, 4),), np.cumsum, kwargs=dict(axis=1)),
        Case("cumprod", (U(0.5, 1.5, 3, 4),), np.cumprod, kwargs=dict(axis=-1)),
        Case("sort", (N(2, 5),), np.sort, kwargs=dict(axis=-1)),
        Case("sort", (N(4, 3),), np.sort, kwargs=dict(axis=0), label="axis0"),
        Case("argsort", (N(2, 5),), np.argsort, kwargs=dict(axis=-1), out="int", grad=False),
        Case("logsumexp", (N(2, 3, 4),), sp.logsumexp, label="all", jit=True),
        Case("logsumexp", (N(2, 3, 4),), sp.logsumexp, kwargs=dict(axis=-1), label="axis"),
        Case("logsumexp", (N(2, 3, 4),), sp.logsumexp, kwargs=dict(axis=(0, 1), keepdims=True),
             label="keepdims"),
        Case("logsumexp", (lambda r: r.normal(size=(3, 4)) * 50 + 1000.0,), sp.logsumexp,
             kwargs=dict(axis=1), label="large"),
        Case("logsumexp", (lambda r: r.normal(size=(3, 4)) - 1000.0,), sp.logsumexp,
             kwargs=dict(axis=0), label="very-negative"),
        Case("logsumexp", (C(np.array([[-np.inf, -np.inf], [0.0, -np.inf]])),), sp.logsumexp,
             kwargs=dict(axis=1), label="minus-inf", grad=False),
    ]
    return cases


def _shapes():
    return [
        Case("reshape", (N(2, 3, 4),), np.reshape, kwargs=dict(shape=(6, -1))),
        Case("broadcast_to", (N(3, 1),), np.broadcast_to, kwargs=dict(shape=(2, 3, 4))),
        Case("broadcast_to", (N(4),), np.broadcast_to, kwargs=dict(shape=(2, 3, 4)),
             label="leading"),
        Case("broadcast_to", (C(np.array(0.7)),), np.broadcast_to, kwargs=dict(shape=(2, 3)),
             label="scalar"),
        Case("expand_dims", (N(3, 4),), np.expand_dims, kwargs=dict(axis=1)),
        Case("expand_dims", (N(3, 4),), np.expand_dims, kwargs=dict(axis=-1), label="neg"),
        Case("squeeze", (N(3, 1, 4, 1),), np.squeeze, kwargs=dict(axis=1)),
        Case("squeeze", (N(3, 1, 4, 1),), np.squeeze, label="all"),
        Case("concat", (L(N(2, 3), N(4, 3)),), np.concatenate),
        Case("concat", (L(N(2, 3), N(2, 1), N(2, 2)),), np.concatenate,
             kwargs=dict(axis=-1), label="axis"),
        Case("stack", (L(N(2, 3), N(2, 3), N(2, 3)),), np.stack, kwargs=dict(axis=1)),
        Case("permute_dims", (N(2, 3, 4),), np.transpose, kwargs=dict(axes=(2, 0, 1))),
        Case("moveaxis", (N(2, 3, 4),), np.moveaxis, kwargs=dict(source=0, destination=-1)),
        Case("flip", (N(3, 4),), np.flip, kwargs=dict(axis=1)),
        Case("flip", (N(3, 4),), np.flip, label="all"),
        Case("tril", (N(2, 4, 4),), np.tril),
        Case("tril", (N(4, 4),), np.tril, kwargs=dict(k=-1), label="k"),
        Case("triu", (N(2, 4, 4),), np.triu, kwargs=dict(k=1)),
        Case("diagonal", (N(2, 3, 3),), np.diagonal, kwargs=dict(axis1=-2, axis2=-1)),
        Case("diagonal", (N(3, 4),), np.diagonal, kwargs=dict(offset=1, axis1=0, axis2=1),
             label="offset"),
        Case("take", (N(3, 4), C(np.array([2, 0, 2]))), np.take, kwargs=dict(axis=1)),
        Case("take", (N(3, 4), C(np.array([5, 0, 11]))), np.take, label="flat"),
        Case("take_along_axis",
             (N(3, 4), lambda r: np.argsort(r.normal(size=(3, 4)), axis=1)),
             np.take_along_axis, kwargs=dict(axis=1)),
        Case("index_update", (N(3, 4), C(1), N(4)), _set, label="row"),
        Case("index_update", (N(3, 4), C((slice(None), 2)), N(3)), _set, label="column"),
        Case("index_update", (N(5,), C(np.array([0, 3])), N(2)), _set, label="int-array"),
        Case("index_update", (N(2, 3), C((0, 1)), C(7.0)), _set, label="scalar"),
        Case("index_add", (N(3, 4), C((slice(None), 1)), N(3)), _add),
        Case("index_add", (N(5,), C(np.array([1, 1, 4])), N(3)), _add, label="repeated"),
        Case("matrix_transpose", (N(2, 3, 4),), _t),
        Case("diag", (N(2, 3),), _diag),
        Case("one_hot", (C(np.array([[0, 2], [1, 3]])),), lambda i, num_classes:
             np.eye(num_classes)[i], kwargs=dict(num_classes=4), grad=False),
        Case("ravel", (N(2, 3, 4),), np.ravel),
        Case("zeros", (), lambda shape: np.zeros(shape), kwargs=dict(shape=(2, 3)), grad=False),
        Case("ones", (), lambda shape: np.ones(shape), kwargs=dict(shape=(3,)), grad=False),
        Case("full", (), lambda shape, fill_value: np.full(shape, fill_value),
             kwargs=dict(shape=(2, 2), fill_value=1.5), grad=False),
        Case("arange", (), lambda stop: np.arange(stop), kwargs=dict(stop=5), out="int",
             fn=lambda stop: ops.arange(stop), label="int", grad=False),
        Case("arange", (), lambda: np.arange(0.0, 2.0, 0.25), label="float",
             fn=lambda: ops.arange(0.0, 2.0, 0.25), grad=False),
        Case("linspace", (), lambda: np.linspace(-1.0, 1.0, 7), fn=lambda: ops.linspace(
            -1.0, 1.0, 7), grad=False),
        Case("eye", (), lambda: np.eye(3), fn=lambda: ops.eye(3), grad=False),
        Case("eye", (), lambda: np.eye(2, 3), fn=lambda: ops.eye(2, 3), label="rect", grad=False),
        Case("zeros_like", (N(2, 3),), np.zeros_like, grad=False),
        Case("ones_like", (N(2, 3),), np.ones_like, grad=False),
        Case("full_like", (N(2, 3),), np.full_like, kwargs=dict(fill_value=-2.5), grad=False),
    ]


def _linalg():
    return [
        Case("matmul", (N(3, 4), N(4, 5)), np.matmul, jit=True),
        Case("matmul", (N(2, 3, 4), N(4, 5)), np.matmul, label="batched-broadcast"),
        Case("matmul", (N(2, 3, 4), N(2, 4, 2)), np.matmul, label="batched"),
        Case("matmul", (N(4,), N(4, 5)), np.matmul, label="vector"),
        Case("einsum", (C("ij,jk->ik"), N(3, 4), N(4, 2)), np.einsum),
        Case("einsum", (C("bij,bj->bi"), N(2, 3, 4), N(2, 4)), np.einsum, label="batched"),
        Case("einsum", (C("i,i->"), N(4), N(4)), np.einsum, label="scalar"),
        Case("cholesky", (Spd(3, 3),), np.linalg.cholesky, grad=False, label="plain"),
        Case("cholesky", (Spd(2, 4, 4),), np.linalg.cholesky, grad=False, label="batched"),
        Case("cholesky", (N(2, 3, 3),), lambda m: np.linalg.cholesky(spd_np(m)),
             fn=lambda m: ops.linalg.cholesky(spd_ops(m)), label="param", jit=True),
        Case("solve_triangular", (Tri(3, 3), N(3, 2)), _solve_tri_ref, kwargs=dict(lower=True),
             grad=False, label="lower"),
        Case("solve_triangular", (Tri(3, 3, lower=False), N(3, 2)), _solve_tri_ref,
             kwargs=dict(lower=False), grad=False, label="upper"),
        Case("solve_triangular", (N(2, 3, 3), N(2, 3, 2)),
             lambda m, b, lower: _solve_tri_ref(tri_np(m, lower), b, lower),
             fn=lambda m, b, lower: ops.linalg.solve_triangular(tri_ops(m, lower), b,
                                                                lower=lower),
             kwargs=dict(lower=True), label="lower-batched-param", jit=True),
        Case("solve_triangular", (N(2, 3, 3), N(2, 3, 2)),
             lambda m, b, lower: _solve_tri_ref(tri_np(m, lower), b, lower),
             fn=lambda m, b, lower: ops.linalg.solve_triangular(tri_ops(m, lower), b,
                                                                lower=lower),
             kwargs=dict(lower=False), label="upper-batched-param"),
        Case("cho_solve", (N(2, 3, 3), N(2, 3, 2)),
             lambda m, b, lower: _cho_solve_ref(tri_np(m, lower), b, lower),
             fn=lambda m, b, lower: ops.linalg.cho_solve(tri_ops(m, lower), b, lower=lower),
             kwargs=dict(lower=True), label="lower"),
        Case("cho_solve", (N(3, 3), N(3, 2)),
             lambda m, b, lower: _cho_solve_ref(tri_np(m, lower), b, lower),
             fn=lambda m, b, lower: ops.linalg.cho_solve(tri_ops(m, lower), b, lower=lower),
             kwargs=dict(lower=False), label="upper"),
        Case("logdet", (Spd(2, 3, 3),), lambda a: np.linalg.slogdet(a)[1], grad=False,
             label="plain"),
        Case("logdet", (N(2, 3, 3),), lambda m: np.linalg.slogdet(spd_np(m))[1],
             fn=lambda m: ops.linalg.logdet(spd_ops(m)), label="param"),
        Case("solve", (Wellcond(2, 3, 3), N(2, 3, 2)), np.linalg.solve),
        Case("inv", (Wellcond(2, 3, 3),), np.linalg.inv),
        Case("slogdet", (Wellcond(2, 3, 3),), lambda a: tuple(np.linalg.slogdet(a)),
             out=("float", "float"), grad_out=1),
        Case("slogdet", (lambda r: -np.eye(3) * 2 + r.normal(size=(3, 3)) * 0.1,),
             lambda a: tuple(np.linalg.slogdet(a)), out=("float", "float"), grad_out=1,
             label="negative"),
        Case("det", (Wellcond(2, 3, 3),), np.linalg.det),
        Case("outer", (N(2, 3), N(2, 4)), lambda a, b: a[..., :, None] * b[..., None, :]),
        Case("vecdot", (N(2, 3), N(3)), lambda a, b: np.sum(a * b, axis=-1)),
    ]


def _special():
    pos = U(0.2, 6, 3, 4)
    return [
        _unary("log1p", np.log1p, U(-0.9, 3, 3, 4)),
        _unary("log1p", np.log1p, U(-1e-9, 1e-9, 5), label="tiny", atol=0.0),
        _unary("expm1", np.expm1, N(3, 4)),
        _unary("expm1", np.expm1, U(-1e-9, 1e-9, 5), label="tiny", atol=0.0),
        _unary("gammaln", sp.gammaln, pos, jit=True),
        _unary("gammaln", sp.gammaln, U(10, 100, 5), label="large"),
        _unary("digamma", sp.digamma, pos),
        _unary("erf", sp.erf, N(3, 4)),
        _unary("erfc", sp.erfc, N(3, 4)),
        _unary("erfinv", sp.erfinv, U(-0.95, 0.95, 3, 4)),
        _unary("ndtr", sp.ndtr, N(3, 4)),
        _unary("ndtri", sp.ndtri, U(0.02, 0.98, 3, 4)),
        _unary("log_ndtr", sp.log_ndtr, U(-4, 4, 3, 4)),
        _unary("log_ndtr", sp.log_ndtr, U(-35, -6, 5), label="tail"),
        _unary("ndtri_exp", sp.ndtri_exp, U(-9, -0.2, 3, 4), jit=True),
        _unary("ndtri_exp", sp.ndtri_exp, U(-0.14, -0.01, 5), label="top", jit=True),
        Case("ndtri_exp", (C(np.array([-1e-3, -1e-6, -1e-9, -1e-12, -1e-20])),), sp.ndtri_exp,
             grad=False, label="near 0"),
        _unary("ndtri_exp", sp.ndtri_exp, U(-600, -11, 5), label="tail", jit=True),
        Case("xlogy", (U(0, 2, 3, 4), U(0.1, 3, 3, 4)), sp.xlogy),
        Case("xlogy", (C(np.array([0.0, 0.0, 1.0])), C(np.array([0.0, 2.0, 3.0]))), sp.xlogy,
             grad=False, label="zero"),
        Case("xlog1py", (U(0, 2, 3, 4), U(-0.9, 3, 3, 4)), sp.xlog1py),
        Case("xlog1py", (C(np.array([0.0, 0.0, 1.0])), C(np.array([-1.0, 2.0, 3.0]))),
             sp.xlog1py, grad=False, label="zero"),
        _unary("softplus", lambda x: np.logaddexp(0.0, x), N(3, 4)),
        _unary("softplus", lambda x: np.logaddexp(0.0, x), C(np.array([-60.0, -30.0, 30.0,
                                                                       60.0])), label="large"),
        _unary("sigmoid", sp.expit, N(3, 4), jit=True),
        _unary("sigmoid", sp.expit, C(np.array([-60.0, -20.0, 20.0, 60.0])), label="large"),
        _unary("log_sigmoid", sp.log_expit, N(3, 4)),
        _unary("log_sigmoid", sp.log_expit, C(np.array([-60.0, -20.0, 20.0, 60.0])),
               label="large"),
        _unary("logit", sp.logit, U(0.02, 0.98, 3, 4)),
        Case("logaddexp", (N(2, 3, 4), N(4)), np.logaddexp, label="broadcast"),
        Case("logaddexp", (C(np.array([1000.0, -1000.0, 5.0])), C(np.array([999.0, -1001.0,
                                                                          -30.0]))),
             np.logaddexp, label="large"),
        Case("logaddexp", (C(np.array([-np.inf, -np.inf, 2.0])),
                           C(np.array([-np.inf, 0.0, -np.inf]))), np.logaddexp, label="minus-inf",
             grad=False),
        Case("betaln", (pos, U(0.2, 6, 4)), sp.betaln),
        Case("polygamma", (C(1), pos), sp.polygamma, label="trigamma"),
        Case("polygamma", (C(2), U(0.5, 5, 4)), sp.polygamma, label="n2", tol=10.0),
        Case("gammainc", (U(0.5, 4, 3, 4), U(0.1, 6, 3, 4)), sp.gammainc, grad=(1,)),
        Case("gammaincc", (U(0.5, 4, 3, 4), U(0.1, 6, 3, 4)), sp.gammaincc, grad=(1,)),
        Case("betainc", (U(0.5, 4, 3, 4), U(0.5, 4, 3, 4), U(0.05, 0.95, 3, 4)), sp.betainc,
             grad=(2,), tol=10.0),
    ]


def _nn():
    def where_pos(f):
        return lambda x, **kw: np.where(x > 0, x, f(x, **kw))

    return [
        _unary("relu", lambda x: np.maximum(x, 0.0), N(3, 4)),
        _unary("gelu", lambda x: x * sp.ndtr(x), N(3, 4)),
        Case("gelu", (N(3, 4),), lambda x, approximate: _gelu_tanh(x),
             kwargs=dict(approximate=True), label="tanh"),
        _unary("silu", lambda x: x * sp.expit(x), N(3, 4)),
        _unary("elu", where_pos(lambda x: np.expm1(x)), N(3, 4)),
        Case("elu", (N(3, 4),), where_pos(lambda x, alpha: alpha * np.expm1(x)),
             kwargs=dict(alpha=0.5), label="alpha"),
        Case("celu", (N(3, 4),), where_pos(lambda x, alpha: alpha * np.expm1(x / alpha)),
             kwargs=dict(alpha=2.0)),
        Case("leaky_relu", (N(3, 4),), lambda x, negative_slope: np.where(x >= 0, x,
                                                                          negative_slope * x),
             kwargs=dict(negative_slope=0.1)),
        _unary("softsign", lambda x: x / (1 + np.abs(x)), N(3, 4)),
        Case("softmax", (N(2, 3, 4),), sp.softmax, kwargs=dict(axis=-1)),
        Case("softmax", (N(3, 4),), sp.softmax, kwargs=dict(axis=0), label="axis0"),
        Case("log_softmax", (N(2, 3, 4),), sp.log_softmax, kwargs=dict(axis=-1)),
        Case("log_softmax", (lambda r: r.normal(size=(3, 4)) * 100,), sp.log_softmax,
             kwargs=dict(axis=1), label="large"),
    ]


#: the whole table
CASES: list[Case] = _elementwise() + _reductions() + _shapes() + _linalg() + _special() + _nn()
