"""numpy backend: ``jit`` records the function's NumPy operations on its first call for given
input shapes and replays them afterwards (:mod:`.tape`); control flow stays Python loops.
``vmap`` is a loop (random draws inside it use each batch member's own key)."""

from __future__ import annotations

import functools
import threading

import numpy as np
from autograd.tracer import isbox

from ppl.backends import tree
from ppl.backends.numpy import tape as _tape

__all__ = ["NumpyCompile", "Recorded"]

_MISSING = object()


def _key_part(leaf):
    """How an input leaf enters the cache key: arrays by type, shape and dtype, other values
    by type and value (``None`` if unhashable)."""
    if type(leaf) is np.ndarray or isinstance(leaf, np.generic):
        return (type(leaf), leaf.shape, leaf.dtype.str)
    try:
        hash(leaf)
    except TypeError:
        return None
    return (type(leaf), leaf)


def _is_array(leaf) -> bool:
    return type(leaf) is np.ndarray or isinstance(leaf, np.generic)


class Recorded:
    """``fun`` recorded once per input signature and replayed (see :mod:`.tape`).

    The signature is the tree structure of the arguments, the type, shape and dtype of each
    array leaf, and the value of every other leaf and of the ``static_argnums`` arguments. A
    signature whose recording fails (Python reads a recorded value, an exception) runs ``fun``
    eagerly from then on; so does a call with autograd boxes among its arguments (inside
    ``grad``, or inside another recording, where ``fun`` is simply part of that one).
    """

    #: signatures recorded per function, beyond which calls run eagerly
    max_signatures = 32

    def __init__(self, fun, static_argnums=()):
        self.fun = fun
        self.static_argnums = frozenset(
            (static_argnums,) if isinstance(static_argnums, int) else static_argnums)
        self._programs: dict = {}
        self._lock = threading.RLock()
        functools.update_wrapper(self, fun)

    def __call__(self, *args, **kwargs):
        dynamic = tuple(a for i, a in enumerate(args) if i not in self.static_argnums)
        leaves, treedef = tree.flatten((dynamic, kwargs))
        parts = []
        for leaf in leaves:
            part = _key_part(leaf)
            if part is None or isbox(leaf):
                return self.fun(*args, **kwargs)
            parts.append(part)
        static = tuple(args[i] for i in sorted(self.static_argnums) if i < len(args))
        try:
            key = (treedef, tuple(parts), static)
            program = self._programs.get(key, _MISSING)
        except TypeError:        # an unhashable static argument
            return self.fun(*args, **kwargs)
        if program is None:
            return self.fun(*args, **kwargs)
        if program is not _MISSING:
            out_treedef, replay = program
            return tree.unflatten(out_treedef, replay([x for x in leaves if _is_array(x)]))
        if len(self._programs) >= self.max_signatures:
            return self.fun(*args, **kwargs)
        with self._lock:
            recorded = self._record(args, leaves, treedef)
            self._programs[key] = None if recorded is None else recorded[0]
        if recorded is None:
            return self.fun(*args, **kwargs)
        return recorded[1]

    def _record(self, args, leaves, treedef):
        """``((out_treedef, program), outputs)`` of a recorded call, or ``None``."""
        with _tape.recording() as tape:
            boxed = [tape.input(x) if _is_array(x) else x for x in leaves]
            dynamic, kwargs = tree.unflatten(treedef, boxed)
            it = iter(dynamic)
            call = [args[i] if i in self.static_argnums else next(it) for i in range(len(args))]
            try:
                out = self.fun(*call, **kwargs)
            except Exception:   # noqa: BLE001 - the eager call that follows raises it again
                return None
            if tape.escaped:
                return None
            out_leaves, out_treedef = tree.flatten(out)
            outputs = [tape.output(leaf) for leaf in out_leaves]
            if any(o is None for o in outputs):
                return None
            program = tape.program(outputs)
        values = [leaf._value if isbox(leaf) else leaf for leaf in out_leaves]
        return (out_treedef, program), tree.unflatten(out_treedef, values)


class NumpyCompile:
    """Capabilities and ``jit`` of :class:`~ppl.backends.numpy.NumpyBackend` (see
    :mod:`ppl.backends.common.compile`)."""

    jit_compiles = True
    compiles_control_flow = False
    vmap_random_draws = True

    def jit(self, fun, static_argnums=()):
        return Recorded(fun, static_argnums)
