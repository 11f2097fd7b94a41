"""numpy backend: record the NumPy operations of a function once, replay them on new inputs.

``jit`` on numpy (:mod:`.compile`) runs the function once with its array inputs wrapped in
autograd boxes of a *recording* trace. Every autograd primitive the function calls (every
``autograd.numpy`` function and the backend's own primitives) adds a step to a :class:`Tape`:
the raw NumPy function, its constant arguments and the slots of its recorded ones. What does not
depend on the inputs is computed once, while recording (constant folding); the Python around
the arrays (the model language, effect handlers, op dispatch, shape logic) runs only then. A
:class:`Program` replays the steps that the outputs need as a loop of raw NumPy calls.

``value_and_grad`` inside a recording differentiates the tape (:func:`value_and_grad`): it runs
autograd's registered VJP of every recorded step the output depends on, on recorded values, in
reverse order, so the backward pass is recorded as NumPy steps too and a replayed gradient costs
no boxing, no graph building and no shape bookkeeping. It is reverse-mode differentiation of a
Wengert list (Griewank & Walther 2008, "Evaluating Derivatives", 2nd ed., ch. 3), with
autograd's VJPs (Maclaurin, Duvenaud & Adams 2015, "Autograd: effortless gradients in numpy").

A replay is exact when the function's Python control flow does not depend on the values of its
array inputs. Every way a recorded value reaches Python stops the recording (:class:`Escape`):
``bool()`` of it (``if``, ``while``, ``and``), reading it (``ops.to_numpy``, random keys and
parameters, gather indices: :func:`concrete`), a recorded value hidden inside a list or an
object array; so do a NumPy call autograd does not wrap (it fails on a box) and any exception.
The function then runs eagerly for those input shapes, exactly as without ``jit``.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import NamedTuple

import autograd.numpy as anp
import numpy as np
from autograd.core import SparseObject, primitive_vjps, sparse_add, vspace
from autograd.extend import defvjp, primitive
from autograd.numpy.numpy_boxes import ArrayBox
from autograd.numpy.numpy_vjps import nograd_functions
from autograd.tracer import Box, Node, isbox, new_box, trace_stack

from ppl.backends import tree
from ppl.backends.numpy.replay import Program

__all__ = ["Escape", "Tape", "Program", "recording", "concrete", "nodiff", "stop_gradient",
           "value_and_grad"]

_CURRENT: contextvars.ContextVar = contextvars.ContextVar("ppl_numpy_tape", default=None)
_NONDIFF: set = set(nograd_functions)     # steps that carry no derivative (comparisons, ...)
_SHAPE_ONLY = (anp.reshape, anp.broadcast_to)


def _same_array_type(a, b) -> bool:
    return type(a) is type(b) and np.shape(a) == np.shape(b) \
        and getattr(a, "dtype", None) == getattr(b, "dtype", None)


class Escape(Exception):
    """A recorded value was read by Python: the function cannot be replayed."""


class _TapeNode(Node):
    """autograd node of a recording: which tape, which slot."""

    __slots__ = ("tape", "slot")

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        self.tape = parents[0].tape
        self.slot = self.tape.record(value, fun, args, kwargs, parent_argnums, parents, self)

    def initialize_root(self, tape, slot):
        self.tape, self.slot = tape, slot


class _Step(NamedTuple):
    fun: object         # autograd primitive (its raw function is ``fun.fun``)
    args: tuple         # constants, ``None`` where ``refs`` put a recorded value
    kwargs: dict
    refs: tuple         # ((argument position, slot), ...)
    out: int            # slot of the result


def _tape_of(x):
    """The tape recording ``x`` (through any autograd boxes around it), or ``None``."""
    while isbox(x):
        if type(x._node) is _TapeNode:
            return x._node.tape
        x = x._value
    return None


def _holds_box(x) -> bool:
    if isbox(x):
        return True
    if isinstance(x, (list, tuple)):
        return any(_holds_box(v) for v in x)
    if isinstance(x, dict):
        return any(_holds_box(v) for v in x.values())
    return type(x) is np.ndarray and x.dtype == object


class Tape:
    """The steps recorded on one trace (see the module docstring)."""

    def __init__(self, trace: int):
        self.trace = trace
        self.steps: list[_Step] = []
        self.values: list = []      # slot -> value while recording
        self.nodes: list = []       # slot -> node
        self.constants: dict = {}   # slot -> fixed value (differentiated constants)
        self.num_inputs = 0
        self.escaped: str | None = None

    def escape(self, reason: str):
        self.escaped = self.escaped or reason
        raise Escape(f"ppl numpy jit: {reason}; the function runs eagerly instead.")

    def _new_slot(self, value, node) -> int:
        self.values.append(value)
        self.nodes.append(node)
        return len(self.values) - 1

    def input(self, value):
        """A box for the next input of the recorded function."""
        node = _TapeNode.new_root(self, len(self.values))
        self._new_slot(value, node)
        self.num_inputs += 1
        return new_box(value, self.trace, node)

    def constant(self, value):
        """A box for a value fixed at recording time (a constant to differentiate with
        respect to)."""
        node = _TapeNode.new_root(self, len(self.values))
        self.constants[self._new_slot(value, node)] = value
        return new_box(value, self.trace, node)

    def box(self, slot: int):
        return new_box(self.values[slot], self.trace, self.nodes[slot])

    def record(self, value, fun, args, kwargs, argnums, parents, node) -> int:
        if self.escaped:
            raise Escape(self.escaped)
        refs = tuple((a, p.slot) for a, p in zip(argnums, parents))
        if any(_holds_box(a) for i, a in enumerate(args) if i not in argnums) \
                or _holds_box(kwargs) or (type(value) is np.ndarray and value.dtype == object):
            self.escape(f"{getattr(fun, '__name__', fun)} got a recorded value inside a "
                        "container or an object array")
        if fun in _SHAPE_ONLY and refs[0][0] == 0 \
                and _same_array_type(value, self.values[refs[0][1]]):
            return refs[0][1]          # a reshape or broadcast to the same shape: no step
        args = tuple(None if i in argnums else a for i, a in enumerate(args))
        slot = self._new_slot(value, node)
        self.steps.append(_Step(fun, args, kwargs, refs, slot))
        return slot

    def output(self, leaf):
        """How a result leaf is replayed: ``("slot", s)``, ``("const", value)``, or ``None``
        when it cannot be (a box of another trace, an object array)."""
        if isbox(leaf):
            if type(leaf._node) is not _TapeNode or leaf._node.tape is not self:
                return None
            return ("slot", leaf._node.slot)
        if type(leaf) is np.ndarray and leaf.dtype == object:
            return None
        return ("const", leaf)

    def program(self, outputs) -> Program:
        """The replay of the steps ``outputs`` need (``("slot", s)`` or ``("const", v)``)."""
        return Program(self.steps, self.num_inputs, self.constants, self.values, outputs)


def current() -> Tape | None:
    """The tape being recorded in this context, if any."""
    return _CURRENT.get()


@contextlib.contextmanager
def recording():
    """A new trace and its :class:`Tape`, current inside the block."""
    with trace_stack.new_trace() as trace:
        tape = Tape(trace)
        token = _CURRENT.set(tape)
        try:
            yield tape
        finally:
            _CURRENT.reset(token)


# ------------------------------------------------------------------ values leaving the trace
def nodiff(x):
    """``x`` without autograd's differentiation boxes; a recorded value stays recorded."""
    while isbox(x) and type(x._node) is not _TapeNode:
        x = x._value
    return x


def concrete(x):
    """The value of ``x`` for Python to read: stops a recording that ``x`` belongs to."""
    x = nodiff(x)
    if isbox(x):
        x._node.tape.escape("a recorded value was read as a concrete array")
    return x


@primitive
def _stop(x):
    return x


_NONDIFF.add(_stop)


def stop_gradient(x):
    """``x`` cut from differentiation (recorded as a step without derivative)."""
    x = nodiff(x)
    return _stop(x) if isbox(x) else x


_BOX_BOOL = Box.__bool__


def _box_bool(self):
    tape = _tape_of(self)
    if tape is not None:
        tape.escape("Python control flow on a recorded value (bool())")
    return _BOX_BOOL(self)


# autograd's ArrayBox never holds booleans (comparisons are not differentiated), so it lacks the
# bitwise operators and floor division; a recording traces masks and counters too. ``bool()``
# of a recorded value must stop the recording rather than take the branch of this one input.
Box.__bool__ = Box.__nonzero__ = _box_bool
for _name, _fun in (("and", anp.bitwise_and), ("or", anp.bitwise_or), ("xor", anp.bitwise_xor),
                    ("floordiv", anp.floor_divide)):
    setattr(ArrayBox, f"__{_name}__", lambda self, other, f=_fun: f(self, other))
    setattr(ArrayBox, f"__r{_name}__", lambda self, other, f=_fun: f(other, self))
ArrayBox.__invert__ = lambda self: anp.invert(self)
_NONDIFF.update((anp.bitwise_and, anp.bitwise_or, anp.bitwise_xor, anp.invert))
# recorded masks and counters are NumPy scalars too (``mask.any()``, ``n + 1``)
for _type in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64):
    ArrayBox.register(_type)


# ------------------------------------------------------------------ differentiation
def _is_basic_index(idx) -> bool:
    parts = idx if isinstance(idx, tuple) else (idx,)
    return all(p is None or p is Ellipsis or isinstance(p, (slice, int, np.integer))
               for p in parts)


@primitive
def _scatter(g, idx, shape, dtype):
    """The cotangent of ``A[idx]``: ``g`` put back into zeros of ``A``'s shape."""
    out = np.zeros(shape, dtype)
    if _is_basic_index(idx):
        out[idx] = g
    else:
        np.add.at(out, idx, g)
    return out


defvjp(_scatter, lambda ans, g, idx, shape, dtype: lambda h: h[idx])


def _dense(g):
    value = g
    while isbox(value):
        value = value._value
    if type(value) is SparseObject:
        return sparse_add(value.vs, None, g)
    return g


def _accumulate(prev, g):
    if prev is None:
        return g
    value = nodiff(prev)
    value = value._value if isbox(value) else value
    if isinstance(value, (np.ndarray, np.generic, float)):
        return anp.add(prev, g)
    return vspace(value).add(prev, g)


def _carries_derivative(value) -> bool:
    """Whether a step's result can carry a derivative (not a boolean or integer array)."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None:
        return dtype.kind in "fc"
    return not isinstance(value, (bool, int))


def _backward(tape: Tape, start: int, seeds, out_slot):
    """Cotangents of the ``seeds`` slots for the output slot, from the steps from ``start``
    on; the VJPs run on recorded values, so this records the backward pass."""
    steps = tape.steps[start:]
    depends = set(seeds)
    for step in steps:
        if step.fun not in _NONDIFF and _carries_derivative(tape.values[step.out]) \
                and any(s in depends for _, s in step.refs):
            depends.add(step.out)
    cot = {}
    if out_slot in depends:
        cot[out_slot] = vspace(tape.values[out_slot]).ones()
    for step in reversed(steps):
        g = cot.pop(step.out, None)
        if g is None:
            continue
        slots = dict(step.refs)
        argnums = tuple(a for a, s in step.refs if s in depends)
        args = tuple(tape.box(slots[i]) if i in slots else a for i, a in enumerate(step.args))
        if step.fun is ArrayBox.__getitem__:
            value = tape.values[slots[0]]
            grads = (_scatter(g, args[1], np.shape(value), np.result_type(value)),)
        else:
            try:
                maker = primitive_vjps[step.fun]
            except KeyError:
                raise NotImplementedError(
                    f"VJP of {getattr(step.fun, '__name__', step.fun)} not defined") from None
            grads = maker(argnums, tape.box(step.out), args, step.kwargs)(g)
        for a, ga in zip(argnums, grads):
            cot[slots[a]] = _accumulate(cot.get(slots[a]), _dense(ga))
    return [cot.get(s) for s in seeds]


@primitive
def _fresh(x):
    return x


def value_and_grad(tape: Tape, fun, xs):
    """``(fun(*xs), grads)``, the backward pass recorded on ``tape``. ``xs`` are the arguments
    to differentiate (pytrees of recorded values or constants); each leaf gets a slot of its
    own, so that the function's other uses of the same value (through its closure) are not
    differentiated, as with autograd's ``make_vjp``."""
    leaves, treedef = tree.flatten(tuple(xs))
    seeds = [_fresh(nodiff(x)) if _tape_of(x) is tape else tape.constant(x) for x in leaves]
    start = len(tape.steps)
    value = fun(*tree.unflatten(treedef, seeds))
    out_slot = value._node.slot if isbox(value) and type(value._node) is _TapeNode \
        and value._node.tape is tape else None
    grads = _backward(tape, start, [s._node.slot for s in seeds], out_slot)
    grads = [_like(g, tape.values[s._node.slot]) for s, g in zip(seeds, grads)]
    return value, tree.unflatten(treedef, grads)


@primitive
def _into(g, shape, dtype):
    out = np.zeros(shape, dtype)
    out += g
    return out


defvjp(_into, lambda ans, g, shape, dtype: lambda h: h)


def _like(g, x):
    """The gradient ``g`` for the argument ``x`` as autograd's ``make_vjp`` of a tuple returns
    it: added into zeros like ``x`` (so of ``x``'s dtype, an array)."""
    if g is None:
        return vspace(x).zeros()
    value = g._value if isbox(g) else g
    if type(value) is np.ndarray and value.dtype == np.result_type(x) \
            and value.shape == np.shape(x):
        return g
    return _into(g, np.shape(x), np.result_type(x))
