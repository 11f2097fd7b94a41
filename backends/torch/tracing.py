"""``jit`` for the torch backend: trace a function once per input signature into a graph.

A pure array function (no data-dependent Python control flow, no random draws) is traced with
``make_fx`` in *fake* mode, which records the aten ops and raises on any data-dependent Python
decision (``if x > 0``, ``x.item()``) instead of baking one branch in; the graph is then handed
to TorchScript (``torch.jit.trace``), or, with the environment variable
``PPL_TORCH_JIT=inductor``, to ``torch.compile`` (``fx`` runs the traced graph as Python, ``none``
turns tracing off; see :mod:`ppl.backends.torch.compile`). Functions that cannot be traced
run eagerly, as before, so ``jit`` never changes results: it only removes Python overhead (the
model language, ``torch.func`` wrappers) from functions called many times, such as the batched
log-density gradient inside NUTS.

Calls made inside a transform (``grad``/``vmap``, an ongoing trace) or with tensors that
require grad run eagerly too, so the jitted function stays differentiable. Each function keeps
its last ``TracedFunction.max_cache`` compiled signatures.
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections import OrderedDict

import torch

from ppl.backends import tree

_state = threading.local()


def tracing() -> bool:
    """Whether a ``jit`` trace is running in this thread (its tensors are fake: never cache
    them)."""
    return getattr(_state, "tracing", False)


class TracedFunction:
    """The callable ``TorchBackend.jit`` returns (see the module docstring)."""

    #: compiled signatures kept per function (least recently used dropped first)
    max_cache = 32

    def __init__(self, fun, static_argnums=(), compiler="script"):
        self.fun = fun
        self.static_argnums = tuple(static_argnums)
        self.compiler = compiler
        self._cache = OrderedDict()   # signature -> (graph, out treedef), or None: stay eager
        self._lock = threading.Lock()
        functools.update_wrapper(self, fun)

    def _split(self, args, kwargs):
        """``(tensors, (treedef key, signature, leaves, treedef))``; the first two items of the
        second part are the cache key. ``(None, None)`` when the call must run eagerly: inside
        a ``torch.func`` transform or a trace, with tensors that need autograd, no tensors, or
        unhashable leaves."""
        if tracing() or torch._C._are_functorch_transforms_active():
            return None, None
        leaves, treedef = tree.flatten((args, kwargs))
        grad = torch.is_grad_enabled()
        tensors, sig = [], []
        for a in leaves:
            if isinstance(a, torch.Tensor):
                if grad and a.requires_grad:
                    return None, None
                tensors.append(a)
                sig.append((a.shape, a.dtype, a.device))
            else:
                try:
                    hash(a)
                except TypeError:
                    return None, None
                sig.append((type(a), a))
        if not tensors:
            return None, None
        return tensors, (treedef_key(treedef), tuple(sig), leaves, treedef)

    def __call__(self, *args, **kwargs):
        if self.compiler is None:
            return self.fun(*args, **kwargs)
        tensors, info = self._split(args, kwargs)
        if tensors is None:
            return self.fun(*args, **kwargs)
        key = info[:2]
        with self._lock:
            entry = self._cache.get(key, False)
            if entry is False:
                entry = self._cache[key] = self._trace(info[2], info[3], tensors)
                if len(self._cache) > self.max_cache:
                    self._cache.popitem(last=False)
            else:
                self._cache.move_to_end(key)
        if entry is None:
            return self.fun(*args, **kwargs)
        graph, out_def = entry
        try:
            out = graph(*tensors)
        except RuntimeError:    # the compiled graph failed where tracing worked: stay eager
            with self._lock:
                self._cache[key] = None
            return self.fun(*args, **kwargs)
        return tree.unflatten(out_def, list(out))

    def _trace(self, leaves, treedef, tensors):
        from torch.fx.experimental.proxy_tensor import make_fx
        positions = [i for i, a in enumerate(leaves) if isinstance(a, torch.Tensor)]
        out_def = []

        def flat_fun(*ts):
            full = list(leaves)
            for i, t in zip(positions, ts):
                full[i] = t
            args, kwargs = tree.unflatten(treedef, full)
            out_leaves, od = tree.flatten(self.fun(*args, **kwargs))
            if not all(isinstance(o, torch.Tensor) for o in out_leaves):
                raise TypeError("jit: non-tensor output")
            out_def.append(od)
            return tuple(out_leaves)

        # trace on copies: the same tensor passed twice (e.g. both ends of a fresh trajectory)
        # must become two graph inputs, not one
        copies = [t.clone() for t in tensors]
        _state.tracing = True
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                gm = make_fx(flat_fun, tracing_mode="fake", _allow_non_fake_inputs=True)(
                    *copies)
                graph = self._compile(gm, [t.clone() for t in tensors])
                # the compiled graph must run and reproduce the eager result, also on the
                # second call (TorchScript's profiling executor optimizes after the first)
                graph(*tensors)
                got = graph(*tensors)
                want = flat_fun(*tensors)
                if not all(_same(g, w) for g, w in zip(got, want, strict=True)):
                    return None
        except Exception:       # not traceable (data-dependent control flow, RNG, ...)
            return None
        finally:
            _state.tracing = False
        return graph, out_def[-1]

    def _compile(self, gm, tensors):
        if self.compiler == "inductor":
            return torch.compile(gm, dynamic=False, fullgraph=True)
        if self.compiler == "fx":
            return gm
        with torch.no_grad():
            return torch.jit.trace(gm, tuple(tensors), check_trace=False, strict=False)


def _same(got, want) -> bool:
    if type(got) is not torch.Tensor:   # e.g. a fake tensor leaked from tracing
        return False
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if want.is_floating_point():
        tol = 1e-4 if want.dtype == torch.float32 else 1e-9
        return bool(torch.allclose(got, want, rtol=tol, atol=tol, equal_nan=True))
    return bool(torch.equal(got, want))


def treedef_key(treedef):
    """A hashable stand-in for a ``tree`` treedef."""
    try:
        hash(treedef)
        return treedef
    except TypeError:
        return repr(treedef)
