"""numpy backend: ``jit`` records the function's NumPy operations on its first call for given
input shapes and replays them afterwards (:mod:`.tape`); control flow stays Python loops.
``vmap`` is a loop (random draws inside it use each batch member's own key)."""

from __future__ import annotations

import functools
import threading

import numpy as np
from autograd.tracer import isbox

from ppl.backends.numpy import tape as _tape

__all__ = ["NumpyCompile", "Recorded"]

_MISSING = object()


#: argument leaves besides arrays that a recording may take as constants (by value)
_STATIC_LEAVES = frozenset({bool, int, float, complex, str, type(None), slice, type})


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _signature(x, arrays: list):
    """A hashable description of the structure of ``x`` and of its leaves that are not arrays;
    appends the array leaves to ``arrays``. Containers are walked as ``ppl.backends.tree``
    walks them (dicts in sorted key order). Raises ``TypeError`` for a leaf that is neither an
    array nor a plain constant (an autograd box, any other object): the caller then runs the
    function eagerly."""
    t = type(x)
    if t is np.ndarray:
        arrays.append(x)
        return ("a", x.shape, x.dtype)
    if t is tuple or t is list or _is_namedtuple(x):
        return (t, *[_signature(v, arrays) for v in x])
    if isinstance(x, dict):
        keys = sorted(x)
        return (t, tuple(keys), *[_signature(x[k], arrays) for k in keys])
    if isinstance(x, np.generic):
        arrays.append(x)
        return ("a", t, x.dtype)
    if t in _STATIC_LEAVES or isinstance(x, np.dtype):
        return (t, x)
    # anything else (an autograd box, an object that may hold arrays or change between
    # calls) cannot be part of a signature: the caller runs the function eagerly
    raise TypeError(f"{t.__name__} argument")


def _rebuild(x, arrays):
    """``x`` with its array leaves taken in order from the iterator ``arrays``."""
    t = type(x)
    if t is np.ndarray or isinstance(x, np.generic):
        return next(arrays)
    if t is tuple or t is list:
        return t([_rebuild(v, arrays) for v in x])
    if _is_namedtuple(x):
        return t(*[_rebuild(v, arrays) for v in x])
    if isinstance(x, dict):
        return t(zip(sorted(x), [_rebuild(x[k], arrays) for k in sorted(x)]))
    return x


def _builder(x, leaves: list):
    """A function rebuilding the structure of ``x`` from an iterator over its leaves (in the
    order they are appended to ``leaves``)."""
    t = type(x)
    if t is tuple or t is list or _is_namedtuple(x):
        parts = [_builder(v, leaves) for v in x]
        if t is tuple or t is list:
            return lambda it: t([b(it) for b in parts])
        return lambda it: t(*[b(it) for b in parts])
    if isinstance(x, dict):
        keys = sorted(x)
        parts = [_builder(x[k], leaves) for k in keys]
        return lambda it: t(zip(keys, [b(it) for b in parts]))
    leaves.append(x)
    return next


class Recorded:
    """``fun`` recorded once per input signature and replayed (see :mod:`.tape`).

    The signature is the structure of the arguments, the type, shape and dtype of each array
    leaf, and the value of every other leaf and of the ``static_argnums`` arguments. A signature
    whose recording fails (Python reads a recorded value, an exception) runs ``fun`` eagerly
    from then on; so does a call with autograd boxes or unhashable values among its arguments
    (inside ``grad``, or inside another recording, where ``fun`` is simply part of that one).
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
        arrays: list = []
        try:
            if self.static_argnums:
                key = (tuple(_signature(a, arrays) if i not in self.static_argnums
                             else (hash(a), a) for i, a in enumerate(args)),
                       _signature(kwargs, arrays) if kwargs else None)
            else:
                key = (_signature(args, arrays), _signature(kwargs, arrays) if kwargs else None)
            program = self._programs.get(key, _MISSING)
        except TypeError:
            return self.fun(*args, **kwargs)
        if program is None:
            return self.fun(*args, **kwargs)
        if program is not _MISSING:
            build, replay = program
            return build(iter(replay(arrays)))
        if len(self._programs) >= self.max_signatures:
            return self.fun(*args, **kwargs)
        with self._lock:
            recorded = self._record(args, kwargs, arrays)
            self._programs[key] = None if recorded is None else recorded[0]
        if recorded is None:
            return self.fun(*args, **kwargs)
        return recorded[1]

    def _record(self, args, kwargs, arrays):
        """``((build, program), outputs)`` of a recorded call, or ``None``."""
        with _tape.recording() as tape:
            boxes = iter([tape.input(x) for x in arrays])
            call = [a if i in self.static_argnums else _rebuild(a, boxes)
                    for i, a in enumerate(args)]
            try:
                out = self.fun(*call, **_rebuild(kwargs, boxes))
            except Exception:   # noqa: BLE001 - the eager call that follows raises it again
                return None
            if tape.escaped:
                return None
            out_leaves: list = []
            build = _builder(out, out_leaves)
            outputs = [tape.output(leaf) for leaf in out_leaves]
            if any(o is None for o in outputs):
                return None
            program = tape.program(outputs)
        values = [leaf._value if isbox(leaf) else leaf for leaf in out_leaves]
        return (build, program), build(iter(values))


class NumpyCompile:
    """Capabilities and ``jit`` of :class:`~ppl.backends.numpy.NumpyBackend` (see
    :mod:`ppl.backends.common.compile`)."""

    jit_compiles = True
    compiles_control_flow = False
    vmap_random_draws = True
    vmap_is_loop = True

    def jit(self, fun, static_argnums=(), *, once=False):
        return Recorded(fun, static_argnums)
