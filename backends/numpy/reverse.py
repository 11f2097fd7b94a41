"""numpy backend: ``value_and_grad`` inside a ``jit`` recording, by differentiating the tape.

The steps recorded while the function runs (:mod:`.tape`) are a Wengert list; its adjoint is
built by running autograd's registered VJP of every step the output depends on, on the recorded
values, so the backward pass is recorded as NumPy steps too and a replayed gradient costs no
boxing, graph building or shape bookkeeping (reverse-mode differentiation of a Wengert list:
Griewank & Walther 2008, "Evaluating Derivatives", 2nd ed., ch. 3; the VJPs are autograd's:
Maclaurin, Duvenaud & Adams 2015, "Autograd: effortless gradients in numpy").

The adjoint is the one eager autograd computes, bit for bit: the steps are visited in the order
of autograd's ``toposort`` and the cotangents summed as its ``add_outgrads`` sums them (in
place into the first sum, into zeros for indexed cotangents), so float32 gradients round alike.
"""

from __future__ import annotations

from typing import NamedTuple

import autograd.numpy as anp
import numpy as np
from autograd.core import SparseObject, primitive_vjps, sparse_add, vspace
from autograd.extend import defvjp, primitive
from autograd.numpy.numpy_boxes import ArrayBox
from autograd.tracer import isbox

from ppl.backends import tree
from ppl.backends.numpy import tape as _tape
from ppl.backends.numpy.primitives import unbroadcast

__all__ = ["value_and_grad"]


@primitive
def _fresh(x):
    return x


_tape.NO_MERGE.add(_fresh)


class _Indexed(NamedTuple):
    """The cotangent of ``A[idx]`` for ``A``: ``g`` at ``idx``, zeros elsewhere (autograd's
    ``untake``, kept unscattered until it is added)."""

    g: object
    idx: object
    shape: tuple
    dtype: object


def _is_basic_index(idx) -> bool:
    parts = idx if isinstance(idx, tuple) else (idx,)
    return all(p is None or p is Ellipsis or isinstance(p, (slice, int, np.integer))
               for p in parts)


def _add_at(out, idx, g):
    if _is_basic_index(idx):
        out[idx] += g          # = np.add.at for indices that do not repeat, and faster
    else:
        np.add.at(out, idx, g)
    return out


@primitive
def _scatter(g, idx, shape, dtype):
    """``g`` added at ``idx`` into zeros (autograd: ``sparse_add(vs, None, untake(...))``)."""
    return _add_at(np.zeros(shape, dtype), idx, g)


@primitive
def _scatter_add(prev, g, idx):
    """``prev`` with ``g`` added at ``idx``, in a copy (autograd adds in place)."""
    return _add_at(np.array(prev, copy=True), idx, g)


@primitive
def _add_into(prev, g):
    """``prev += g`` in a copy: the sum keeps ``prev``'s dtype where ``prev`` is an array."""
    if type(prev) is not np.ndarray:
        return prev + g
    out = np.array(prev, copy=True)
    out += g
    return out


@primitive
def _into_zeros(g, shape, dtype):
    """``zeros(shape, dtype) += g`` (autograd's ``vs.mut_add(None, g)``)."""
    out = np.zeros(shape, dtype)
    out += g
    return out


@primitive
def _sparse_add_into(prev, g):
    """``g.mut_add(prev)`` for an autograd ``SparseObject`` ``g``, in a copy of ``prev``."""
    return g.mut_add(np.array(prev, copy=True))


defvjp(_scatter, lambda ans, g, idx, shape, dtype: lambda h: h[idx])
defvjp(_scatter_add, lambda ans, prev, g, idx: lambda h: h,
       lambda ans, prev, g, idx: lambda h: unbroadcast(h[idx], np.shape(g)))
defvjp(_add_into, lambda ans, prev, g: lambda h: h,
       lambda ans, prev, g: lambda h: unbroadcast(h, np.shape(g)))
defvjp(_into_zeros, lambda ans, g, shape, dtype: lambda h: unbroadcast(h, np.shape(g)))


def _raw(x):
    while isbox(x):
        x = x._value
    return x


def _accumulate(entry, g):
    """autograd's ``add_outgrads`` of a cotangent ``g`` into ``entry`` (``(sum, mutable)`` or
    ``None``), step for step."""
    indexed, sparse = type(g) is _Indexed, type(_raw(g)) is SparseObject
    if entry is None:
        if indexed:
            return _scatter(g.g, g.idx, g.shape, g.dtype), True
        if sparse:
            return sparse_add(_raw(g).vs, None, g), True
        return g, False
    prev, mutable = entry
    if not mutable:
        if indexed:
            prev = _into_zeros(prev, g.shape, g.dtype)
        elif sparse:
            vs = _raw(g).vs
            prev = _into_zeros(prev, vs.shape, vs.dtype)
        else:
            return anp.add(prev, g), True
    if indexed:
        return _scatter_add(prev, g.g, g.idx), True
    if sparse:
        return _sparse_add_into(prev, g), True
    return _add_into(prev, g), True


def _order(out_slot, parents):
    """The slots in the order autograd's backward pass visits their nodes (``toposort`` of
    ``autograd.util``: depth first from the output, a node once all its children are done)."""
    counts: dict = {}
    stack = [out_slot]
    while stack:
        slot = stack.pop()
        if slot in counts:
            counts[slot] += 1
        else:
            counts[slot] = 1
            stack.extend(parents.get(slot, ()))
    ready = [out_slot]
    while ready:
        slot = ready.pop()
        yield slot
        for parent in parents.get(slot, ()):
            if counts[parent] == 1:
                ready.append(parent)
            else:
                counts[parent] -= 1


def _backward(tape, start: int, seeds, out_slot):
    """The cotangents of the ``seeds`` slots for ``out_slot`` through the steps from ``start``
    on (``None`` where there is no path)."""
    depends, parents, step_of = set(seeds), {}, {}
    for step in tape.steps[start:]:
        if step.fun not in _tape.NONDIFF and _tape.carries_derivative(tape.values[step.out]):
            linked = tuple(s for _, s in step.refs if s in depends)
            if linked:
                depends.add(step.out)
                parents[step.out], step_of[step.out] = linked, step
    if out_slot not in depends:
        return [None] * len(seeds)
    cot = {out_slot: (vspace(tape.values[out_slot]).ones(), False)}
    for slot in _order(out_slot, parents):
        step = step_of.get(slot)
        if step is None:         # a seed: its cotangent is complete
            continue
        g = cot.pop(slot)[0]
        slots = dict(step.refs)
        argnums = tuple(a for a, s in step.refs if s in depends)
        args = tuple(tape.box(slots[i]) if i in slots else a for i, a in enumerate(step.args))
        if step.fun is ArrayBox.__getitem__:
            value = tape.values[slots[0]]
            grads = (_Indexed(g, args[1], np.shape(value), np.result_type(value)),)
        else:
            try:
                maker = primitive_vjps[step.fun]
            except KeyError:
                raise NotImplementedError(
                    f"VJP of {getattr(step.fun, '__name__', step.fun)} not defined") from None
            grads = maker(argnums, tape.box(step.out), args, step.kwargs)(g)
        for a, ga in zip(argnums, grads):
            cot[slots[a]] = _accumulate(cot.get(slots[a]), ga)
    return [cot[s][0] if s in cot else None for s in seeds]


def _like(g, x):
    """The gradient ``g`` for the argument ``x`` as autograd's ``make_vjp`` of a tuple returns
    it: added into zeros like ``x`` (an array of ``x``'s dtype)."""
    if g is None:
        return vspace(x).zeros()
    value = _raw(g)
    if type(value) is np.ndarray and value.dtype == np.result_type(x) \
            and value.shape == np.shape(x):
        return g
    return _into_zeros(g, np.shape(x), np.result_type(x))


def value_and_grad(tape, fun, xs):
    """``(fun(*xs), grads)`` with the backward pass recorded on ``tape``. ``xs`` are the
    arguments to differentiate (pytrees of recorded values or constants); each leaf gets a slot
    of its own, so that the function's other uses of the same value (through its closure) are
    not differentiated, as with autograd's ``make_vjp``."""
    leaves, treedef = tree.flatten(tuple(xs))
    seeds = [_fresh(_tape.nodiff(x)) if _tape.recorded_by(x, tape) else tape.constant(x)
             for x in leaves]
    start = len(tape.steps)
    tape.regions += 1
    try:
        value = fun(*tree.unflatten(treedef, seeds))
    finally:
        tape.regions -= 1
    out_slot = tape.slot_of(value)
    grads = _backward(tape, start, [tape.slot_of(s) for s in seeds], out_slot)
    grads = [_like(g, tape.values[tape.slot_of(s)]) for s, g in zip(seeds, grads)]
    return value, tree.unflatten(treedef, grads)
