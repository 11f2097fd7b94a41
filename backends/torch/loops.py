"""Compiled ``while_loop`` on the torch backend: a loop called often runs as one inductor graph.

The NUTS transition is a Python loop over compiled pieces; its innermost loop (the leaves of one
trajectory doubling) runs hundreds of thousands of times per run, and each iteration paid ~300 us
of Python (pytree flattening, call wrappers, the draw of the leaf's uniforms, the loop
predicate read back) around ~60 us of compiled code. Here an eager ``ops.while_loop`` whose
``cond_fun``/``body_fun`` have been called ``PPL_TORCH_LOOP_AFTER`` times (default 20) with the
same code, the same static closure values and the same carry signature is traced once into
``torch.ops.higher_order.while_loop`` and compiled by inductor (C++, cached on disk by inductor
across processes), so one doubling is one call. A loop like one compiled before, in this or an
earlier process (``compile_worker.hot_before``), is compiled at its first call: its graph is
most likely a cache hit, and 20 eager NUTS transitions cost ~1 s.

``cond_fun`` and ``body_fun`` are closures created anew at every call (they capture the current
trajectory, the step size, the key of the leaves' draws). They are traced with their closures'
tensors as *inputs* (:mod:`ppl.backends.torch.closures` walks them into a key and a list of
tensors), so the next call with new closures of the same code, in this run or the next,
reuses the graph with its new tensors.

A ``scan`` called outside any trace (the MCMC driver's chunk of iterations) is captured the
same way (:func:`run_scan`, :class:`~.loop_calls.ScanCall`): the whole chunk, each iteration's
momentum draw, trajectory and adaptation (its ``ops.cond`` as torch's condition operator), is
one graph, without the ~0.5 ms of Python per iteration around the trajectory's graph
(logistic regression, 1 chain, 1000 + 1000, repeated in one process: 2.4 -> 1.2 s). Its
compilation takes about a minute, so a chunk graph not in inductor's cache compiles in the
detached worker (:mod:`.compile_worker`) while the trajectory's loop compiles here as before;
the next process finds it. A graph checked against the eager computation once (in any process)
is not checked again.

Inside a traced graph every ``scan`` small enough becomes a ``while_loop``
(:mod:`.scan_lowering`), so that the worker can compile the graph with AOTInductor
(:mod:`.aot_loops`): one shared library with the loops in C++, checked in a separate process,
which any later process loads in a millisecond instead of importing inductor and loading its
Python-wrapped code (~1.5 s); graphs it cannot take keep inductor's usual code. What the
trace of such a loop gave (the library's key, the outputs' structure, its constants) is kept on
disk (:mod:`.trace_records`), so a later process running the same code on data of the same
shapes takes the library without tracing (eight schools, 4 chains, warm: 4.3 -> 2.6 s).

A loop whose body cannot be traced (data-dependent Python, ops without a graph form), or whose
compiled graph does not reproduce the eager loop on its first call, stays eager. Loops are only
captured outside ``torch.func`` transforms and ``jit`` traces, with no tensor requiring grad.
"""

from __future__ import annotations

import os
import threading
import time
import warnings

import torch

from ppl.backends import tree
from ppl.backends.torch import aot_loops, closures
from ppl.backends.torch import compile_worker as worker
from ppl.backends.torch import loop_calls as calls
from ppl.backends.torch import loop_graphs as graphs
from ppl.backends.torch import trace_records as records
from ppl.backends.torch import tracing as _tracing
from ppl.backends.torch.decompositions import DECOMPOSITIONS
from ppl.backends.torch.loop_hoisting import hoist_invariants
from ppl.backends.torch.scan_lowering import lower_scans

__all__ = ["run_compiled", "run_scan", "loop_after", "inactive"]

_MAX_LOOPS = 32           # loops kept per process, the least recently used dropped first
_MAX_NODES = 8000         # nodes of a traced loop compiled at most (a NUTS transition: ~1000)


def loop_after() -> int:
    """Calls of one loop after which it is compiled (``PPL_TORCH_LOOP_AFTER``; 0: never)."""
    return _tracing.env_count("PPL_TORCH_LOOP_AFTER", 20, minimum=0)




class _Entry:
    """A loop's calls, compiled graph (or ``None``), key objects, failure, worker job."""

    __slots__ = ("calls", "graph", "objects", "failed", "pending", "consts", "candidate",
                 "misses", "digest", "out_def", "kind")

    def __init__(self, objects, digest, kind):
        self.kind = kind
        self.calls, self.graph, self.objects, self.failed, self.pending = 0, None, objects, \
            False, None
        self.consts, self.candidate, self.misses, self.digest = [], None, 0, digest
        self.out_def = None       # how the graph's flat outputs make the call's result


_cache: dict = {}
_lock = threading.RLock()
_local = threading.local()      # capturing: a loop trace runs; running: eager loops entered


def _trace(call, w: closures.Walk):
    """The graph of ``call`` (a :class:`~.loop_calls.WhileCall` or
    :class:`~.loop_calls.ScanCall`) with its closures' tensors ``w`` as extra inputs, and the
    tensors its constants became (inputs too)."""
    from torch.fx._lazy_graph_module import _use_lazy_graph_module
    from torch.fx.experimental.proxy_tensor import make_fx

    top = call.top(w.cells)
    inputs = trace_inputs(call.leaves + w.tensors)
    _tracing._state.tracing = True
    _local.capturing = True
    try:
        # lazy graph modules: tracing a loop operator rebuilds its subgraphs' modules again and
        # again, and each eager recompile wrote their Python code (~190 times for a chunk of
        # NUTS iterations: 0.8 of its 2.4 s trace); lazily, a module's code is written when
        # it is first run or read (graph_key)
        with warnings.catch_warnings(), _use_lazy_graph_module(True):
            warnings.simplefilter("ignore")
            gm = make_fx(top, decomposition_table=DECOMPOSITIONS, tracing_mode="fake",
                         _allow_non_fake_inputs=True)(*inputs)
            if os.environ.get("PPL_TORCH_SCAN_LOWER", "1") == "1":
                lower_scans(gm)
            return graphs.constants_to_inputs(hoist_invariants(graphs.lift_constants(gm)))
    finally:
        _tracing._state.tracing = False
        _local.capturing = False


def trace_inputs(tensors) -> list:
    """Stand-ins for a loop's inputs in its trace: distinct contiguous tensors of their shapes
    and dtypes, never written or read (``make_fx`` turns them into fake tensors), so their
    pages are never touched. Distinct: the same tensor passed twice would become one input,
    and the loop operators reject inputs that alias. Clones of the inputs were a transient copy
    of the model's data (a closure tensor of the loop) at every trace: 38 MB of peak memory for
    a logistic regression at N = 1e5, D = 100."""
    return [torch.empty_like(t, memory_format=torch.contiguous_format) for t in tensors]


def loop_tracing() -> bool:
    """Whether a loop is traced in this thread (a ``scan`` in it: :mod:`.scans`)."""
    return getattr(_local, "capturing", False)


def capturing() -> bool:
    """Whether a loop is traced here (a ``while_loop`` in it: a nested loop, :func:`nested`)."""
    return getattr(_local, "capturing", False) and not \
        torch._C._are_functorch_transforms_active()


def inactive() -> bool:
    """Whether loops cannot be captured here: inside a ``jit`` trace or a ``torch.func``
    transform, or off the main thread (tracing swaps the tensors in a closure's cells for a
    moment, which another thread calling the same function must not see)."""
    return _tracing.tracing() or torch._C._are_functorch_transforms_active() \
        or threading.current_thread() is not threading.main_thread()


def run_compiled(cond_fun, body_fun, init_val, after: int, eager):
    """``while_loop(cond_fun, body_fun, init_val)`` through its compiled graph once the loop
    has been called ``after`` times; ``eager(cond_fun, body_fun, init_val)`` before that and
    for loops that are not captured."""
    return _run(calls.WhileCall(cond_fun, body_fun, init_val, eager), after)


def run_scan(f, init, xs, after: int, eager):
    """``scan(f, init, xs)`` (called outside any trace) through its compiled graph once it
    has been called ``after`` times (at its first call if one like it was compiled before);
    ``eager(f, init, xs)`` before that and for scans that are not captured. A graph not in
    inductor's cache compiles in the worker (a chunk of NUTS iterations: ~1 min), while the
    loops the scan calls compile on their own, as without it (see the module docstring)."""
    return _run(calls.ScanCall(f, init, xs, eager), after)


def _run(call, after: int):
    leaves = call.leaves
    if not leaves or not all(type(x) is torch.Tensor and not x.requires_grad for x in leaves):
        return call.eager()
    try:
        w = closures.walk_functions(call.functions)
    except closures.Skip:
        return call.eager()
    if any(t.requires_grad for t in w.tensors):
        return call.eager()
    key = (tuple(w.key), (call.kind, call.treedef),
           tuple((x.shape, x.dtype, x.device) for x in leaves))
    try:
        entry = _cache.pop(key, None)
    except Exception:         # noqa: BLE001 - an unhashable static value, or a value object
        return call.eager()   # whose equality fails (tensor fields)
    if entry is not None:
        _cache[key] = entry   # the most recently used last (the oldest is dropped first)
    else:
        with _lock:
            entry = _cache.setdefault(key, _Entry(w.objects, closures.stable_digest(key),
                                                  call.kind))
            if worker.hot_before(entry.digest):   # compiled before: at this call
                entry.calls = max(after - 1, entry.calls)
            elif after > 0:       # it may compile: a cold cache's probes meanwhile
                _start_probes()
            _tracing.loop_counting[0] = True    # pieces wait with upgrades (tracing.py)
            while len(_cache) > _MAX_LOOPS:     # the oldest first (dicts keep their order)
                del _cache[next(iter(_cache))]
    if entry.graph is None:
        entry.calls += 1
        # an enclosing loop that may still compile takes this one in: wait for it (not for
        # a scan: a chunk of sampler iterations compiles for long, in the worker when cold)
        outer = getattr(_local, "running", ())
        if entry.failed or entry.calls < after or \
                any(not e.failed and e.kind == "while_loop" for e in outer):
            return _eager_in(entry, call)
        with _lock:
            if entry.pending is not None:
                if entry.calls % 8 == 0:
                    _poll(entry, call, w)
            elif entry.candidate is not None:
                graph, key, entry.candidate = *entry.candidate, None
                _take(entry, graph, key, call, _inputs(call, w, entry))
            elif entry.graph is None and not entry.failed:
                _build(entry, call, w)
        if entry.graph is None:
            return _eager_in(entry, call)
    try:
        out = entry.graph(*_inputs(call, w, entry))
    except Exception as e:    # the compiled graph failed where tracing worked: stay eager
        _debug("compiled loop failed", e)
        entry.graph, entry.failed = None, True
        return call.eager()
    return call.result(entry.out_def, list(out))


def _start_probes():
    try:
        graphs.start_probes()
    except Exception as e:    # noqa: BLE001 - an unusable cache folder: the compile says so
        _debug("instruction-set probes not started", e)


def _inputs(call, w, entry) -> list:
    """The compiled graph's inputs: the call's tensors, its closures', its constants."""
    return [t.contiguous() for t in call.leaves + w.tensors] + entry.consts


def _debug(*what):
    if os.environ.get("PPL_TORCH_LOOP_DEBUG"):
        import sys
        print("ppl torch loops:", *what, file=sys.stderr)


def _eager_in(entry, call):
    """The eager call, with ``entry`` on the stack of loops entered (see ``_run``)."""
    outer = getattr(_local, "running", ())
    _local.running = outer + (entry,)
    try:
        return call.eager()
    finally:
        _local.running = outer


def _elsewhere(call) -> bool:
    """Whether ``call``'s graph, not in inductor's cache, compiles in the worker
    (``PPL_TORCH_LOOP_WORKER``: ``scan``, the default, for top-level scans; ``1`` every graph;
    ``0`` none: here, now)."""
    mode = os.environ.get("PPL_TORCH_LOOP_WORKER", "scan")
    return mode == "1" or (mode == "scan" and call.kind == "scan")


def _build(entry, call, w):
    """Trace the call; compile it here (in inductor's cache, no worker) or in the worker. A
    loop traced in an earlier process whose library was checked is loaded without a trace."""
    t0 = time.perf_counter()
    try:
        record_key = records.record_key(call, w) if aot_loops.enabled() else None
        if _from_record(entry, call, w, record_key):
            return
        gm, consts = _trace(call, w)
        entry.out_def = call.out_def()
        size = sum(len(m.graph.nodes) for m in gm.modules()
                   if isinstance(m, torch.fx.GraphModule))
        if size > _MAX_NODES:   # an unrolled Python loop inside (a model's scan): too long
            raise closures.Skip(f"{size} nodes")
        gm = worker.prepare(gm)
        elsewhere = _elsewhere(call)
        if elsewhere:         # the form the worker compiles (one cache entry for both)
            gm = worker.portable(gm)
        entry.consts = [c.contiguous() for c in consts]
        inputs = _inputs(call, w, entry)
        key = worker.graph_key(gm, inputs, entry.consts)
        if elsewhere and aot_loops.eligible(gm):     # a library may come of it
            records.record(record_key, key, entry.out_def, entry.consts)
        if worker.failed_before(key):
            entry.failed = True
        elif worker.compiled_before(key):    # its library, or inductor's cached code
            _tracing.loop_captured[0] = True
            _take(entry, worker.load_compiled(key, gm, inputs), key, call, inputs)
        elif not elsewhere:
            _tracing.loop_captured[0] = True
            _take(entry, graphs.compile_graph(gm, inputs), key, call, inputs)
        else:
            worker.compile_elsewhere(key, gm, inputs, hot=entry.digest)
            entry.pending = (key, gm, time.perf_counter())
            _tracing.loop_captured[0] = True   # its pieces' upgrades would compete with it
    except Exception as e:    # not traceable or not compilable: stay eager
        _debug("loop not captured", type(e).__name__, e)
        entry.failed = True
    finally:
        _tracing._compile_seconds[0] += time.perf_counter() - t0
        if entry.failed:
            _recount()


def _from_record(entry, call, w, record_key) -> bool:
    """Whether the loop's checked library was taken from the record of its trace in an
    earlier process (:mod:`.trace_records`), without tracing it here."""
    found = records.recorded(record_key)
    if found is None:
        return False
    key, out_def, consts = found
    library = worker.library_path(key)
    if not (os.path.exists(library) and worker.checked_before(key)):
        return False
    try:
        graph = aot_loops.load(library)
    except Exception as e:    # noqa: BLE001 - trace it as without a record
        _debug("recorded library not loaded", e)
        return False
    entry.out_def, entry.consts = out_def, consts
    _take(entry, graph, key, call, _inputs(call, w, entry))
    return entry.graph is not None


def _poll(entry, call, w):
    """Take the worker's code in once it is in inductor's cache."""
    key, gm, _ = entry.pending
    if worker.failed_before(key):
        entry.pending, entry.failed = None, True
        _recount()
    elif worker.compiled_before(key):
        entry.pending = None
        t0 = time.perf_counter()
        try:
            inputs = _inputs(call, w, entry)
            _take(entry, worker.load_compiled(key, gm, inputs), key, call, inputs)
        except Exception as e:
            _debug("compiled loop not loaded", e)
            entry.failed = True
            _recount()
        finally:
            _tracing._compile_seconds[0] += time.perf_counter() - t0


def _take(entry, graph, key, call, inputs):
    """Use ``graph`` if it reproduces the eager call on these inputs (or did so before: the
    same code, from inductor's cache)."""
    checked = worker.checked_before(key)
    if checked or graphs.mostly_same(list(graph(*inputs)), tree.leaves(_eager_in(entry, call))):
        entry.graph = graph
        _tracing.loop_captured[0] = True
        if not checked:
            worker.mark_compiled(key)
            worker.mark_checked(key)
        worker.mark_hot(entry.digest)
    else:
        # a float32 sampler loop can diverge from the eager one by rounding (a multinomial draw
        # flips; with one chain, every output then differs): try again on later inputs
        entry.misses += 1
        _debug("compiled loop disagrees with the eager loop", entry.misses)
        if entry.misses < 3:
            entry.candidate = (graph, key)
        else:
            entry.failed = True
            _recount()


def _recount():        # a loop failed: pieces upgrade unless another runs compiled or compiles
    _tracing.loop_counting[0] = False
    _tracing.loop_captured[0] = any(e.graph is not None or e.pending for e in _cache.values())
