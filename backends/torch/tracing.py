"""``jit`` for the torch backend: trace a function once per input signature into a graph.

A signature is traced at its ``PPL_TORCH_JIT_AFTER``-th call (default 32; the calls before run
eagerly): a trace costs ~0.1-0.4 s, eager calls of a small function ~0.1-1 ms, and once a NUTS
transition runs as one compiled loop (:mod:`ppl.backends.torch.loops`) its pieces are called
outside it only a few times per run (the start, the step-size heuristic); tracing them at their
first call cost a warm process 1.2-1.7 s.

A pure array function (no data-dependent Python control flow, no random draws) is traced with
``make_fx`` in *fake* mode, which records the aten ops and raises on any data-dependent Python
decision (``if x > 0``, ``x.item()``) instead of baking one branch in; the graph then runs as
TorchScript (``torch.jit.trace``, compiled in well under a second), and once one signature has
been called ``PPL_TORCH_INDUCTOR_AFTER`` times (default 1000: a sampler's leapfrog step, not a
test's few calls) it is compiled ahead of time by inductor into C++ (:func:`_inductor`, ~5-15 s
once, then cached on disk across processes). On eight schools (4 chains) the leapfrog-step graph
ran 900 us per call as TorchScript and 70 us as inductor code; per-call Python overhead (pytree
flattening, the call wrappers) is then the larger share. ``PPL_TORCH_JIT`` picks the mode:
``inductor`` (default, as above), ``script`` (TorchScript only), ``fx`` (the traced graph as
Python), ``none`` (no tracing); see :mod:`ppl.backends.torch.compile`. Functions that cannot be
traced run eagerly, as before, so ``jit`` never changes results: it only removes Python overhead
(the model language, ``torch.func`` wrappers) from functions called many times, such as the
batched log-density gradient inside NUTS.

The model's data reach a traced function through closures, and a trace records them as tensor
constants of the graph; TorchScript and inductor then held copies of them (+40 and +38 MB for a
38 MB design matrix). Constants of at least ``_INPUT_BYTES`` become inputs of the graph instead
(:func:`constants_to_inputs`), passed on every call; small ones stay constants for the compilers
to fold.

Calls made inside a transform (``grad``/``vmap``, an ongoing trace) or with tensors that
require grad run eagerly too, so the jitted function stays differentiable. Each function keeps
its last ``TracedFunction.max_cache`` compiled signatures.
"""

from __future__ import annotations

import copy
import functools
import os
import threading
import time
import warnings
from collections import OrderedDict

import torch

from ppl.backends import tree
from ppl.backends.torch.decompositions import DECOMPOSITIONS

_state = threading.local()
#: tensor constants of a traced graph this large (bytes) become its inputs (see the docstring)
_INPUT_BYTES = 1 << 16
_compile_seconds = [0.0]
#: set by :mod:`ppl.backends.torch.loops` once a loop of this process is compiled or being
#: compiled: the pieces it holds no longer run often, and their own compile would only cost
loop_captured = [False]
#: set while an eager loop that may be compiled counts its calls (and no loop failed): pieces
#: wait with their upgrade, as the loop holding them compiles first (a NUTS transition after
#: 20 transitions, when its gradient may have run 20,000 times) and their compile would be lost
loop_counting = [False]


def compile_seconds() -> float:
    """Seconds this process has spent tracing and compiling ``jit`` graphs (for benchmarks)."""
    return _compile_seconds[0]


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
        self.static_argnums = ((static_argnums,) if isinstance(static_argnums, int)
                               else tuple(static_argnums))
        self.compiler = compiler
        self._cache = OrderedDict()   # signature -> (graph, out treedef), or None: stay eager
        self._lock = threading.Lock()
        #: calls of one signature after which ``inductor`` mode compiles it with inductor
        self._upgrade_after = _upgrade_after() if compiler == "inductor" else 0
        #: calls of one signature after which it is traced (eager before)
        self._trace_after = env_count("PPL_TORCH_JIT_AFTER", 32, minimum=1)
        functools.update_wrapper(self, fun)

    def _split(self, args, kwargs):
        """``(tensors, (key, leaves))``: the cache key holds the tree structure and the
        signature of every leaf. ``(None, None)`` when the call must run eagerly: inside
        a ``torch.func`` transform or a trace, with tensors that need autograd, no tensors, or
        unhashable leaves."""
        if tracing() or torch._C._are_functorch_transforms_active():
            return None, None
        leaves, structure = [], []
        _flatten_into((args, kwargs), leaves, structure)
        grad = torch.is_grad_enabled()
        tensors = []
        for a in leaves:
            if isinstance(a, torch.Tensor):
                if grad and a.requires_grad:
                    return None, None
                tensors.append(a)
                structure.append((a.shape, a.dtype, a.device))
            else:
                try:
                    hash(a)
                except TypeError:
                    return None, None
                structure.append((type(a), a))
        if not tensors:
            return None, None
        return tensors, (tuple(structure), leaves)

    def __call__(self, *args, **kwargs):
        if self.compiler is None:
            return self.fun(*args, **kwargs)
        tensors, info = self._split(args, kwargs)
        if tensors is None:
            return self.fun(*args, **kwargs)
        key, leaves = info
        with self._lock:
            entry = self._cache.get(key, 0)
            if type(entry) is int:      # the eager calls of a signature not traced yet
                entry += 1
                if entry >= self._trace_after:
                    t0 = time.perf_counter()
                    entry = self._trace(leaves, tree.flatten((args, kwargs))[1], tensors)
                    _compile_seconds[0] += time.perf_counter() - t0
                self._cache[key] = entry
            self._cache.move_to_end(key)
            if len(self._cache) > self.max_cache:
                self._cache.popitem(last=False)
        if entry is None or type(entry) is int:
            return self.fun(*args, **kwargs)
        # compiled graphs assume the (contiguous) strides they were traced with
        tensors = [t if t.is_contiguous() else t.contiguous() for t in tensors]
        entry.calls += 1
        if entry.calls >= self._upgrade_after and not entry.upgraded \
                and self.compiler == "inductor" and not (loop_captured[0] or loop_counting[0]):
            entry.upgraded = True
            with self._lock:
                t0 = time.perf_counter()
                entry.upgrade(tensors)
                _compile_seconds[0] += time.perf_counter() - t0
        try:
            out = entry.graph(*tensors, *entry.consts)
        except Exception:   # the compiled graph failed where tracing worked: stay eager
            with self._lock:
                self._cache[key] = None
            return self.fun(*args, **kwargs)
        return entry.unflatten(out)

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
        tensors = [t.contiguous() for t in tensors]
        copies = [t.clone() for t in tensors]
        _state.tracing = True
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                gm = make_fx(flat_fun, decomposition_table=DECOMPOSITIONS, tracing_mode="fake",
                             _allow_non_fake_inputs=True)(*copies)
                gm, consts = constants_to_inputs(gm, _INPUT_BYTES)
                entry = _Compiled(gm, flat_fun, consts)
                graph = _script(gm, tensors + consts) \
                    if self.compiler in ("script", "inductor") else gm
                if not entry.accepts(graph, tensors):
                    return None
        except Exception:       # not traceable (data-dependent control flow, RNG, ...)
            return None
        finally:
            _state.tracing = False
        entry.graph, entry.out_def = graph, out_def[-1]
        entry.unflatten = _unflattener(out_def[-1])
        return entry


class _Compiled:
    """A traced signature: its aten graph ``gm``, the large constants it takes as its last
    inputs, the graph that runs (TorchScript, later inductor's), the output treedef and the
    number of calls so far."""

    def __init__(self, gm, flat_fun, consts):
        self.gm, self.flat_fun, self.consts = gm, flat_fun, consts
        self.graph = self.out_def = None
        self.calls, self.upgraded = 0, False

    def accepts(self, graph, tensors) -> bool:
        """Whether ``graph`` runs and reproduces the eager result, also on the second call
        (TorchScript's profiling executor optimizes after the first)."""
        graph(*tensors, *self.consts)
        got = graph(*tensors, *self.consts)
        want = self.flat_fun(*tensors)
        return all(_same(g, w) for g, w in zip(got, want, strict=True))

    def upgrade(self, tensors):
        """Replace the graph by inductor's C++ code when it compiles and agrees; keep the
        current one otherwise (no C++ compiler, an op inductor lacks)."""
        _state.tracing = True
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                graph = _inductor(self.gm, list(tensors) + self.consts)
                if self.accepts(graph, tensors):
                    self.graph = graph
        except Exception:
            pass
        finally:
            _state.tracing = False


def constants_to_inputs(gm, min_bytes: int = 0):
    """``(gm, constants)``: the tensor constants of ``gm``'s top graph of at least
    ``min_bytes`` bytes made its last inputs, in place, and their values (the same tensors:
    no copies). The module no longer holds them, so neither a compiler nor a pickle of it
    copies them."""
    import operator

    consts, last = [], [n for n in gm.graph.nodes if n.op == "placeholder"][-1]
    index, targets = {}, set()
    for node in list(gm.graph.nodes):
        if node.op != "get_attr":
            continue
        v = operator.attrgetter(node.target)(gm)
        if not isinstance(v, torch.Tensor) or v.nbytes < min_bytes:
            continue
        if id(v) not in index:
            with gm.graph.inserting_after(last):
                last = gm.graph.placeholder(f"const_{len(consts)}")
            index[id(v)] = last
            consts.append(v)
        node.replace_all_uses_with(index[id(v)])
        gm.graph.erase_node(node)
        targets.add(node.target)
    for target in targets:
        if "." not in target and not any(n.op == "get_attr" and n.target == target
                                         for n in gm.graph.nodes):
            delattr(gm, target)
    gm.recompile()
    return gm, consts


def _flatten_into(obj, leaves, structure):
    """Append ``obj``'s leaves to ``leaves`` in ``tree.flatten``'s order, and a hashable
    description of its containers to ``structure`` (a faster ``tree.flatten`` for the cache
    lookup of every call; the treedef itself is built once per signature)."""
    if isinstance(obj, tuple | list):
        structure.append((type(obj), len(obj)))
        for c in obj:
            _flatten_into(c, leaves, structure)
    elif isinstance(obj, dict):
        try:
            keys = sorted(obj)
        except TypeError:
            keys = list(obj)
        structure.append((type(obj), tuple(keys)))
        for k in keys:
            _flatten_into(obj[k], leaves, structure)
    elif obj is None:
        structure.append(None)
    else:
        structure.append(0)
        leaves.append(obj)


def _unflattener(treedef):
    """``outputs -> tree``: ``tree.unflatten`` for one treedef; a flat tuple of outputs comes
    back as it is."""
    if treedef[0] == "tuple" and all(c == ("leaf",) for c in treedef[1]):
        return tuple
    return lambda out: tree.unflatten(treedef, list(out))


def _script(gm, tensors):
    with torch.no_grad():
        return torch.jit.trace(gm, tuple(tensors), check_trace=False, strict=False)


def env_count(name: str, default: int, minimum: int) -> int:
    """The integer setting ``name`` of the environment (``default`` when unset), at least
    ``minimum``; a clear error naming the variable when it is not an integer."""
    raw = os.environ.get(name, str(default))
    try:
        return max(minimum, int(raw))
    except ValueError:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {raw!r}.") from None


def env_switch(name: str, default: bool = True) -> bool:
    """The on/off setting ``name`` of the environment (``1`` or ``0``; ``default`` when
    unset); a clear error naming the variable for any other value."""
    raw = os.environ.get(name, "1" if default else "0")
    if raw not in ("0", "1"):
        raise ValueError(f"{name} must be 0 or 1, got {raw!r}.")
    return raw == "1"


#: the background threads probing the CPU's instruction sets for inductor
#: (``loop_graphs.start_probes``): every compile waits for them (:func:`wait_probes`)
probes: list[threading.Thread] = []


def wait_probes() -> None:
    """Wait for the instruction-set probes started in this process, if any: a compile must
    not run beside them (inductor's probe results are shared, unlocked caches)."""
    for thread in probes:
        thread.join()


def _upgrade_after() -> int:
    return env_count("PPL_TORCH_INDUCTOR_AFTER", 1000, minimum=1)


def _inductor(gm, tensors):
    """Inductor's C++ code for the traced aten graph, compiled ahead of time without
    TorchDynamo (the graph is already pure aten: no bytecode analysis, no guards per call).
    Inductor's FX graph cache (``TORCHINDUCTOR_CACHE_DIR``, by default under the temporary
    directory) keeps the compiled code across runs and processes."""
    from torch._guards import TracingContext
    from torch._guards import tracing as tracing_context
    from torch._inductor.compile_fx import compile_fx
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    # fake inputs with a shape environment, as TorchDynamo would pass: without one inductor
    # bypasses its FX graph cache. Static shapes: each signature has its own graph, and
    # symbolic sizes (duck-sized: equal sizes share a symbol) broke a 1-chain run
    fake_mode = FakeTensorMode(shape_env=ShapeEnv(), static_shapes=True)
    wait_probes()
    with torch.no_grad(), tracing_context(TracingContext(fake_mode)):
        return compile_fx(_fresh_outputs(gm), [fake_mode.from_tensor(t) for t in tensors])


def clone_outputs(gm):
    """Make every output of ``gm`` a new tensor (a ``clone`` of each), in place, without
    recompiling: outputs that alias inputs (a slice, an input passed through) make AOTAutograd's
    runtime wrapper rebuild them on every call, which cost ~30% of a leapfrog step's call on
    eight schools."""
    out = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    with gm.graph.inserting_before(out):
        out.args = (tuple(gm.graph.call_function(torch.ops.aten.clone.default, (node,))
                          for node in out.args[0]),)
    return gm


def _fresh_outputs(gm):
    """A copy of ``gm`` whose outputs are all new tensors (:func:`clone_outputs`)."""
    gm = clone_outputs(copy.deepcopy(gm))
    gm.recompile()
    return gm


def _same(got, want) -> bool:
    if type(got) is not torch.Tensor:   # e.g. a fake tensor leaked from tracing
        return False
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if want.is_floating_point():
        tol = 1e-4 if want.dtype == torch.float32 else 1e-9
        return bool(torch.allclose(got, want, rtol=tol, atol=tol, equal_nan=True))
    return bool(torch.equal(got, want))
