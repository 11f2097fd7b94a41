"""numpy backend: the replay of a recorded tape (:mod:`.tape`) as a loop of raw NumPy calls.

Building a :class:`Program` keeps only the steps the outputs need (dead-code elimination),
gives every value a slot of one flat list (inputs, then constants, then step results) so that a
step fetches its arguments with one ``operator.itemgetter`` call, and calls NumPy's reductions
and methods directly where their Python wrappers (``np.sum``, ``np.reshape``) cost more than the
operation on a small array. A replay costs about half a microsecond per step on top of NumPy.
"""

from __future__ import annotations

import operator

import autograd.numpy as anp
import numpy as np
from autograd.numpy.numpy_boxes import ArrayBox

__all__ = ["Program"]


def _direct(fun, args, kwargs, value_of):
    """A faster call equivalent to ``fun(*args, **kwargs)`` for the recorded argument types,
    or ``None``. ``value_of(i)`` is argument ``i``'s value at recording."""
    first = value_of(0) if args else None
    if type(first) is not np.ndarray:
        return None
    if fun is anp.sum and len(args) == 1 and set(kwargs) <= {"axis", "keepdims"}:
        # np.sum(x, ...) is np.add.reduce(x, ...) on arrays, behind a Python wrapper
        return np.add.reduce, args, {"axis": kwargs.get("axis"),
                                     "keepdims": kwargs.get("keepdims", False)}
    if fun is anp.reshape and len(args) == 2 and not kwargs:
        return np.ndarray.reshape, args, {}
    if fun is ArrayBox.__getitem__ and not kwargs:
        return operator.getitem, args, {}
    return None


class Program:
    """Replays recorded steps: ``program(inputs) -> outputs`` (lists of arrays).

    Parameters
    ----------
    steps
        The recorded steps (``fun, args, kwargs, refs, out``: the primitive, its constant
        arguments, ``(position, slot)`` of the recorded ones, the slot of the result).
    num_inputs
        Slots ``0 .. num_inputs - 1`` are the inputs.
    constants
        ``slot -> value`` of slots fixed at recording.
    values
        ``slot -> value`` at recording (to pick direct calls).
    outputs
        ``("slot", s)`` or ``("const", value)`` per output.
    """

    def __init__(self, steps, num_inputs, constants, values, outputs):
        needed = {s for kind, s in outputs if kind == "slot"}
        kept = []
        for step in reversed(steps):
            if step.out in needed:
                kept.append(step)
                needed.update(s for _, s in step.refs)
        kept.reverse()
        template = [None] * num_inputs
        where = {s: s for s in range(num_inputs)}        # recorded slot -> replay slot

        def slot_of(s):
            if s not in where:       # a constant slot
                where[s] = len(template)
                template.append(constants[s])
            return where[s]

        def constant(value):
            template.append(value)
            return len(template) - 1

        program = []
        for fun, args, kwargs, refs, out in kept:
            refs = dict(refs)
            direct = _direct(fun, args, kwargs,
                             lambda i, refs=refs, args=args: values[refs[i]] if i in refs
                             else args[i])
            call, kw = (fun.fun, kwargs) if direct is None else (direct[0], direct[2])
            slots = [slot_of(refs[i]) if i in refs else constant(a) for i, a in enumerate(args)]
            fetch = operator.itemgetter(*slots) if len(slots) > 1 else \
                operator.itemgetter(slice(slots[0], slots[0] + 1))
            where[out] = len(template)
            template.append(None)
            program.append((call, fetch, kw or None, where[out]))
        self._template = template
        self._num_inputs = num_inputs
        self._steps = program
        self._outputs = [(kind, where[v] if kind == "slot" else v) for kind, v in outputs]
        self.num_steps = len(program)

    def __call__(self, inputs):
        vals = self._template.copy()
        vals[:self._num_inputs] = inputs
        for fun, fetch, kwargs, out in self._steps:
            vals[out] = fun(*fetch(vals), **kwargs) if kwargs else fun(*fetch(vals))
        return [vals[v] if kind == "slot" else (v.copy() if type(v) is np.ndarray else v)
                for kind, v in self._outputs]
