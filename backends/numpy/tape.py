"""numpy backend: record the NumPy operations of a function once, replay them on new inputs.

``jit`` on numpy (:mod:`.compile`) runs the function once with its array inputs wrapped in
autograd boxes of a *recording* trace. Every autograd primitive the function calls (every
``autograd.numpy`` function and the backend's own primitives) adds a step to a :class:`Tape`:
the raw NumPy function, its constant arguments and the slots of its recorded ones. What does not
depend on the inputs is computed once, while recording (constant folding); the Python around
the arrays (the model language, effect handlers, op dispatch, shape logic) runs only then. A
:class:`Program` replays the steps that the outputs need as a loop of raw NumPy calls.

``value_and_grad`` inside a recording differentiates the tape (:mod:`.reverse`), so the backward
pass is recorded as NumPy steps too. While recording, a step equal to an earlier one (same
primitive, same arguments) is not recorded again outside differentiated regions, and reshapes,
broadcasts and ``keepdims`` sums that return their input unchanged are not recorded at all.

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
from autograd.extend import primitive
from autograd.numpy.numpy_boxes import ArrayBox
from autograd.numpy.numpy_vjps import nograd_functions
from autograd.tracer import Box, Node, isbox, new_box, trace_stack

from ppl.backends.numpy.replay import Program

__all__ = ["Escape", "Tape", "Program", "recording", "current", "concrete", "nodiff",
           "stop_gradient", "carries_derivative", "recorded_by", "NONDIFF", "NO_MERGE"]

_CURRENT: contextvars.ContextVar = contextvars.ContextVar("ppl_numpy_tape", default=None)
#: primitives whose steps carry no derivative (comparisons, rounding, masks, ...)
NONDIFF: set = set(nograd_functions)
#: primitives recorded every time they are called, not merged with an equal earlier step
NO_MERGE: set = set()
_CONSTANT_OUTPUTS = frozenset({bool, int, float, complex, str, type(None)})


def _is_identity(fun, kwargs, value, x) -> bool:
    """Whether a step returns its first argument unchanged: a reshape or broadcast to its own
    shape, a sum with ``keepdims`` over axes of size 1 (as autograd's ``unbroadcast`` does)."""
    if fun is anp.sum:
        if not kwargs.get("keepdims") or kwargs.get("dtype") is not None:
            return False
    elif fun is not anp.reshape and fun is not anp.broadcast_to:
        return False
    return type(value) is type(x) and np.shape(value) == np.shape(x) \
        and getattr(value, "dtype", None) == getattr(x, "dtype", None)


def _const_key(v):
    """A hashable key equal for equal constants (arrays and other objects by identity: the
    tape holds them, so an identity is not reused while recording)."""
    t = type(v)
    if t is float:
        return (t, v.hex())        # -0.0 and 0.0 differ
    if t in (int, bool, str, type(None)) or isinstance(v, np.dtype):
        return (t, v)
    if t is slice:
        return (t, _const_key(v.start), _const_key(v.stop), _const_key(v.step))
    if t is tuple:
        return (t, *map(_const_key, v))
    return ("id", id(v))


def _step_key(fun, args, kwargs, refs):
    """Steps with equal keys compute the same value (NumPy functions are pure); ``None`` for a
    step to record every time (a new slot to differentiate with respect to)."""
    if fun in NO_MERGE:
        return None
    try:
        return (fun, refs, tuple(map(_const_key, args)),
                tuple(sorted((k, _const_key(v)) for k, v in kwargs.items())))
    except TypeError:
        return None


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
        self._seen: dict = {}       # step key -> slot, to record a repeated step once
        self.regions = 0            # value_and_grad calls under way (no merged steps there:
        #                             autograd sums the gradients of repeated steps separately)

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
        """A box of this trace for the value in ``slot``."""
        return new_box(self.values[slot], self.trace, self.nodes[slot])

    def slot_of(self, x) -> int | None:
        """The slot of ``x`` if this tape recorded it (``None`` for a constant)."""
        if isbox(x) and type(x._node) is _TapeNode and x._node.tape is self:
            return x._node.slot
        return None

    def record(self, value, fun, args, kwargs, argnums, parents, node) -> int:
        """The slot of the result ``value`` of primitive ``fun`` called on ``args`` (recorded
        values at ``argnums``, with the nodes ``parents``): a new step, or the slot of an equal
        earlier step, or of the argument a no-op step returns."""
        if self.escaped:
            raise Escape(self.escaped)
        refs = tuple((a, p.slot) for a, p in zip(argnums, parents))
        if any(_holds_box(a) for i, a in enumerate(args) if i not in argnums) \
                or _holds_box(kwargs) or (type(value) is np.ndarray and value.dtype == object):
            self.escape(f"{getattr(fun, '__name__', fun)} got a recorded value inside a "
                        "container or an object array")
        if refs[0][0] == 0 and _is_identity(fun, kwargs, value, self.values[refs[0][1]]):
            return refs[0][1]          # e.g. a reshape to the same shape: no step
        args = tuple(None if i in argnums else a for i, a in enumerate(args))
        key = _step_key(fun, args, kwargs, refs) \
            if not self.regions or not carries_derivative(value) else None
        if key is not None and key in self._seen:
            return self._seen[key]     # the same primitive on the same values: its result
        slot = self._new_slot(value, node)
        self.steps.append(_Step(fun, args, kwargs, refs, slot))
        if key is not None:
            self._seen[key] = slot
        return slot

    def output(self, leaf):
        """How a result leaf is replayed: ``("slot", s)``, ``("const", value)``, or ``None``
        when it cannot be (a box of another trace, an object array, an object that may hold
        recorded values, such as a distribution)."""
        if isbox(leaf):
            if type(leaf._node) is not _TapeNode or leaf._node.tape is not self:
                return None
            return ("slot", leaf._node.slot)
        if (type(leaf) is np.ndarray and leaf.dtype != object) or isinstance(leaf, np.generic) \
                or type(leaf) in _CONSTANT_OUTPUTS or isinstance(leaf, np.dtype):
            return ("const", leaf)
        return None      # an object that may hold recorded values

    def program(self, outputs) -> Program:
        """The replay of the steps ``outputs`` need (``("slot", s)`` or ``("const", v)``)."""
        return Program(self.steps, self.num_inputs, self.constants, self.values, outputs)


def recorded_by(x, tape: Tape) -> bool:
    """Whether ``x`` (through any autograd boxes around it) is a value ``tape`` recorded."""
    return _tape_of(x) is tape


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


NONDIFF.add(_stop)


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
NONDIFF.update((anp.bitwise_and, anp.bitwise_or, anp.bitwise_xor, anp.invert))
# recorded masks and counters are NumPy scalars too (``mask.any()``, ``n + 1``)
for _type in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64):
    ArrayBox.register(_type)


def carries_derivative(value) -> bool:
    """Whether a step's result can carry a derivative (not a boolean or integer array)."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None:
        return dtype.kind in "fc"
    return not isinstance(value, (bool, int))
