"""What the closures of a loop's functions hold, for :mod:`ppl.backends.torch.loops`.

A compiled loop is reused for later calls with *new* closures of the same code (each NUTS
transition, each ``MCMC.run``, builds its functions anew). :func:`walk` describes a function's
closure, recursively, as a hashable key and a list of tensors:

* tensors in closure cells, and the tensors of containers in them, become inputs of the loop's
  graph (set into their cells while it is traced, :func:`cells_set`): their shapes and dtypes
  are in the key; a container's other leaves (a model's ``N`` beside its data) are walked like
  any value;
* Python numbers, strings, dtypes, and objects whose class defines equality by value and hashes
  (a parameter layout) are in the key by value, as ``jax.jit`` treats static arguments;
* functions are walked (their code is in the key), and so is the Python function of a
  ``jit``-compiled piece (inside a loop's trace the piece runs that function);
* containers without tensors (a ``Metric`` of functions) are walked element by element;
* anything else (a module, a backend, a distribution) is in the key by identity, and kept alive
  with the cache entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import types

import torch

from ppl.backends import tree
from ppl.backends.torch import tracing as _tracing

__all__ = ["Walk", "walk", "walk_functions", "cells_set", "Skip", "stable_digest", "code_digest"]

_SCALARS = (int, float, bool, str, bytes, type(None), torch.dtype, torch.device)
_MAX_ITEMS = 400          # closure items walked before giving up (stay eager)


class Walk:
    """What :func:`walk` finds: the hashable key, the cells holding tensors, the tensors, the
    objects keyed by identity (kept alive with the cache entry), and the functions walked.
    ``traced``: inside a trace, where the closures hold the trace's (fake) tensors."""

    __slots__ = ("key", "cells", "tensors", "objects", "items", "traced", "functions")

    def __init__(self, traced=False):
        self.key, self.cells, self.tensors, self.objects, self.items = [], [], [], [], 0
        self.functions = []   # the functions walked, each once
        self.traced = traced

    def is_tensor(self, v) -> bool:
        return isinstance(v, torch.Tensor) if self.traced else type(v) is torch.Tensor


def walk(fn, w: Walk, seen: dict):
    """Append to ``w`` the description of the Python function ``fn``'s closure, recursively."""
    w.key.append(("fn", fn.__code__))
    if id(fn) in seen:        # met before in this walk (recursion, or reached twice)
        w.key.append(("seen", seen[id(fn)]))      # which one: the same in every walk alike
        return
    seen[id(fn)] = len(seen)
    w.functions.append(fn)
    if fn.__defaults__:
        for v in fn.__defaults__:
            _value(v, w, seen, None)
    for cell in fn.__closure__ or ():
        try:
            v = cell.cell_contents
        except ValueError:    # an empty cell (a name bound later)
            w.key.append(("empty",))
            continue
        _value(v, w, seen, cell)


def walk_functions(functions, traced: bool = False) -> Walk:
    """The :class:`Walk` of the closures of ``functions`` (Python functions, else
    :class:`Skip`), in one walk: a function two of them reach is described once."""
    if not all(isinstance(f, types.FunctionType) for f in functions):
        raise Skip("not a Python function")
    w, seen = Walk(traced), {}
    for f in functions:
        walk(f, w, seen)
    return w


def _value(v, w: Walk, seen: dict, cell):
    w.items += 1
    if w.items > _MAX_ITEMS:
        raise Skip
    if isinstance(v, _SCALARS):
        w.key.append((type(v), v))
    elif w.is_tensor(v):
        if cell is None:
            raise Skip       # a tensor default argument: cannot be replaced while tracing
        w.cells.append((cell, None))
        w.tensors.append(v)
        w.key.append(("t", v.shape, v.dtype, v.device))
    elif isinstance(v, types.FunctionType):
        walk(v, w, seen)
    elif isinstance(v, _tracing.TracedFunction) and isinstance(v.fun, types.FunctionType):
        # inside the loop's trace a jit-compiled piece runs its Python function: key it by
        # that function (a run's pieces are new objects; their code and closures are not)
        w.key.append(("jit", v.static_argnums, v.compiler))
        walk(v.fun, w, seen)
    elif isinstance(v, tuple | list | dict):
        leaves, treedef = tree.flatten(v)
        is_tensor = tuple(w.is_tensor(x) for x in leaves)
        if cell is not None and any(is_tensor):
            # the tensors become inputs; the other leaves (the model's ``N`` beside its data
            # arrays) are walked like any value, after the tensors (the order of the inputs)
            w.cells.append((cell, (treedef, [None if t else x for x, t in zip(leaves, is_tensor)])))
            tensors = [x for x, t in zip(leaves, is_tensor) if t]
            w.tensors.extend(tensors)
            w.key.append(("tree", treedef, is_tensor, tuple((x.shape, x.dtype) for x in tensors)))
            for x, t in zip(leaves, is_tensor):
                if not t:
                    _value(x, w, seen, None)
        elif not any(isinstance(x, torch.Tensor) for x in leaves):
            w.key.append(("static", treedef))     # functions and numbers (a ``Metric``)
            for x in leaves:
                _value(x, w, seen, None)
        else:
            w.objects.append(v)
            w.key.append(("id", id(v), type(v).__qualname__))
    elif isinstance(v, torch.Tensor):
        raise Skip           # a tensor subclass (batched, fake): not ours to capture
    elif _by_value(v):        # a value object (a parameter layout): equal ones trace alike
        w.key.append(("value", type(v), v))
    else:
        w.objects.append(v)
        w.key.append(("id", id(v), type(v).__qualname__))


def _by_value(v) -> bool:
    """Whether ``v``'s class defines equality by value and hashes (so equal objects are
    interchangeable in a trace, as ``jax.jit`` treats static arguments)."""
    cls = type(v)
    if cls.__eq__ is object.__eq__ or cls.__hash__ is None:
        return False
    try:
        hash(v)
    except TypeError:
        return False
    return True


class Skip(Exception):
    """A loop that is not captured (stays eager)."""


@contextlib.contextmanager
def cells_set(cells, values):
    """Put ``values`` (flat, in the order of the walk) into ``cells`` for the duration."""
    saved, i = [], 0
    try:
        for cell, spec in cells:
            saved.append((cell, cell.cell_contents))
            if spec is None:
                cell.cell_contents = values[i]
                i += 1
            else:             # a container: its tensors from ``values``, its other leaves kept
                treedef, leaves = spec
                full = []
                for x in leaves:
                    if x is None:
                        full.append(values[i])
                        i += 1
                    else:
                        full.append(x)
                cell.cell_contents = tree.unflatten(treedef, full)
        yield
    finally:
        for cell, old in reversed(saved):
            cell.cell_contents = old


def stable_digest(key) -> str:
    """A digest of a loop's key (the walk's key, the carry's structure and signature) that is
    the same in every process and wherever the code lives: identities become type names,
    code objects their content (:func:`code_digest`: not their file or line, so a clone of
    the repository elsewhere, or the user's model file at another path, finds it), and
    addresses left in the text are dropped. Two loops may share one; it only says "a loop
    like this was compiled before"."""
    def plain(k):
        if isinstance(k, tuple) and k:
            if k[0] == "id":
                return ("id", k[2])
            if k[0] == "fn":
                return ("fn", code_digest(k[1]))
        return k

    words, treedef, carry = key
    text = repr((tuple(plain(k) for k in words), treedef, carry))
    return hashlib.sha256(re.sub(r" at 0x[0-9a-fA-F]+", "", text).encode()).hexdigest()[:32]


_code_digests: dict = {}


def code_digest(code: types.CodeType) -> str:
    """A digest of what a code object does: its bytecode, constants (nested code in turn),
    names, argument counts and flags, but not its file name or line numbers. The same in every
    process running this Python, and for the same function in two files."""
    d = _code_digests.get(code)
    if d is None:
        d = _code_digests[code] = hashlib.sha256(_code_text(code).encode()).hexdigest()[:24]
    return d


def _code_text(code: types.CodeType) -> str:
    return repr((code.co_name, getattr(code, "co_qualname", None), code.co_argcount,
                 code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags, code.co_code,
                 tuple(_constant(c) for c in code.co_consts), code.co_names, code.co_varnames,
                 code.co_freevars, code.co_cellvars, getattr(code, "co_exceptiontable", None)))


def _constant(c):
    """A code object's constant as text independent of the process (a frozenset's order
    follows string hashing, which differs between processes)."""
    if isinstance(c, types.CodeType):
        return ("code", _code_text(c))
    if isinstance(c, tuple):
        return ("tuple", tuple(_constant(x) for x in c))
    if isinstance(c, frozenset):
        return ("frozenset", tuple(sorted(repr(_constant(x)) for x in c)))
    return (type(c).__name__, repr(c))
