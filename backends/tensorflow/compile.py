"""tensorflow backend: ``jit`` as ``tf.function(jit_compile=True)`` (XLA), and the
capabilities: everything compiles, control flow included, and ``vmap`` over keys draws once per
key (``pfor`` vectorises the stateless Philox ops, :mod:`.random`).

``jit(fun, static_argnums)`` keeps one ``tf.function`` per value of the static arguments;
NumPy and Python numbers among the other arguments become tensors first (``tf.function`` would
otherwise retrace for every new number). A function XLA cannot compile (one that draws
``gamma``/``poisson``/``binomial``, which have no XLA kernels) runs as a TensorFlow graph
instead, and one whose Python code reads tensor values (which cannot be traced) runs eagerly,
with a warning naming the function and the reason; either fallback is decided once per function,
at the first call that needs it.

Each new shape or dtype of the arguments gets a trace of its own with concrete shapes, as
``jax.jit`` compiles once per shape: model code reads shapes as Python integers (a plate's size
from ``ops.shape(y)[0]``), which TensorFlow's ``reduce_retracing`` would relax to ``None`` on a
retrace, failing the trace (a second ``MCMC.run`` with more data or chains then ran eagerly).
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import tensorflow as tf

from ppl.backends import tree

__all__ = ["TensorflowCompile"]

_TRACE_ERRORS = (tf.errors.OperatorNotAllowedInGraphError, NotImplementedError, AttributeError,
                 TypeError)
_XLA_MARKERS = ("tf2xla", "XLA compilation", "not compilable", "XLA_CPU_JIT", "XLA_GPU_JIT")


def _positional(fun):
    """``fun`` of its positional arguments alone, named as ``fun`` (TensorFlow's retracing
    warnings name it), without ``__wrapped__`` (tf.function would read fun's defaults there)."""
    def call(*args):
        return fun(*args)

    call.__name__ = getattr(fun, "__name__", "fun")
    call.__qualname__ = getattr(fun, "__qualname__", call.__name__)
    return call


class _Compiled:
    """One function compiled with XLA, with its fallbacks (see the module docstring)."""

    def __init__(self, backend, fun):
        self.backend, self.fun = backend, fun
        # traced through a function of the positional arguments alone: tf.function would
        # otherwise trace fun's defaults too and fail on one it cannot hash (a dataclass),
        # where jax.jit leaves defaults to Python
        self._call = _positional(fun)
        self.xla = tf.function(self._call, jit_compile=True, autograph=False)
        self.mode = "xla"


    def _convert(self, a):
        if isinstance(a, np.ndarray | np.generic | float | int) and not isinstance(a, bool):
            return self.backend.asarray(a)
        return a

    def __call__(self, *args):
        args = [tree.map(self._convert, a) for a in args]
        if self.mode == "xla":
            try:
                return self.xla(*args)
            except tf.errors.InvalidArgumentError as err:
                if not any(m in str(err) for m in _XLA_MARKERS):
                    raise
                self.mode = "graph"
            except _TRACE_ERRORS as err:
                if str(err).startswith("ppl."):     # ppl's own check of the user's input
                    raise
                self.mode = "eager"
                name = getattr(self.fun, "__qualname__", repr(self.fun))
                # eager runs every op from Python: orders of magnitude slower than compiled
                warnings.warn(f"ppl.ops.jit (tensorflow): {name} could not be traced and runs "
                              f"eagerly from now on ({type(err).__name__}: {err})",
                              RuntimeWarning, stacklevel=3)
        if self.mode == "graph":
            if not hasattr(self, "graph"):
                self.graph = tf.function(self._call, autograph=False)
            return self.graph(*args)
        return self.fun(*args)


class TensorflowCompile:
    """Compilation and capabilities of :class:`~ppl.backends.tensorflow.TensorflowBackend`
    (see :mod:`ppl.backends.common.compile`)."""

    jit_compiles = True
    compiles_control_flow = True
    vmap_random_draws = True

    def jit(self, fun, static_argnums=(), *, once=False):
        static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        if not static:
            compiled = _Compiled(self, fun)
            return functools.wraps(fun)(lambda *args: compiled(*args))
        cache: dict = {}

        @functools.wraps(fun)
        def jitted(*args):
            values = tuple(args[i] for i in static)
            try:
                hash(values)
                key = values
            except TypeError:
                key = tuple(id(v) for v in values)
            compiled = cache.get(key)
            if compiled is None:
                def bound(*dynamic):
                    it = iter(dynamic)
                    return fun(*[values[static.index(i)] if i in static else next(it)
                                 for i in range(len(args))])
                compiled = cache[key] = _Compiled(self, bound)
            return compiled(*[a for i, a in enumerate(args) if i not in static])

        return jitted
