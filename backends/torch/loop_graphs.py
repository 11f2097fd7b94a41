"""The graph side of torch's compiled loops (:mod:`ppl.backends.torch.loops`): a traced loop
graph made ready for inductor (the tensor constants of its nested subgraphs lifted out to inputs
of the whole graph) and compiled by inductor, here or in a worker
(:mod:`ppl.backends.torch.compile_worker`), and the check of a compiled loop against the eager
one."""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import os
import threading
import warnings

import torch

from ppl.backends.torch import tracing as _tracing

__all__ = ["compile_graph", "fake_inputs", "loop_config", "cache_folder", "constants_to_inputs",
           "lift_constants", "mostly_same", "fresh", "start_probes"]

#: the file in :func:`cache_folder` that says this cache has seen the probes (:func:`start_probes`;
#: only a hint: :func:`_vec_isa_ok`'s own marker is keyed by torch, the compiler and the CPU)
_PROBED = "isa_probed"


def loop_config() -> dict:
    """Inductor's settings for a loop graph (part of the loop's marker key,
    ``compile_worker.graph_key``)."""
    # the Python wrapper (the loop a Python ``while`` around C++ kernels) compiled in 27 s
    # where the C++ wrapper took 41 s, and ran a transition 25 % slower; compiling the kernels
    # in this process (one thread) skips starting a pool of compile workers. No size asserts:
    # a loop's inputs always have the traced shapes (they are in its key) and are made
    # contiguous, and the wrapper checked ~34 of them per leapfrog (eight schools, 4 chains:
    # 234 -> 200 us per leapfrog). Not ``memory_planning`` (buffer pools: 1.7x slower). Not
    # ``cpp.simdlen=1``: inductor's scalar code got the counter-based draws wrong
    _tracing.wait_probes()
    return {"cpp_wrapper": os.environ.get("PPL_TORCH_LOOP_CPP", "0") == "1",
            "compile_threads": 1, "size_asserts": False, "cpp.vec_isa_ok": _vec_isa_ok()}


def cache_folder() -> str:
    """ppl's folder in inductor's cache (``TORCHINDUCTOR_CACHE_DIR``): the markers of compiled
    loops (:mod:`ppl.backends.torch.compile_worker`) and of the instruction-set probe."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir
    path = os.path.join(cache_dir(), "ppl_loops")
    os.makedirs(path, exist_ok=True)
    return path


def start_probes() -> None:
    """Run the instruction-set probes of a first compile in a background thread (once per
    process, and only while this cache has not seen them): :func:`_vec_isa_ok` (its three
    builds side by side) and inductor's own (``valid_vec_isa_list``: AVX-512 BF16/FP16, AMX,
    one after another) build a test library each with g++ and load it in a new Python
    process. On a cold cache they held the first loop's compile back by ~7 s (eight schools);
    started at a loop's first call, they run while the sampler's first transitions run and
    the loop is traced (waiting on g++ and the loader, not on the GIL). Every compile waits
    for them first (``tracing.wait_probes``)."""
    if _tracing.probes or os.path.exists(os.path.join(cache_folder(), _PROBED)):
        return
    thread = threading.Thread(target=_probe, name="ppl-isa-probes", daemon=True)
    _tracing.probes.append(thread)
    thread.start()


def _probe() -> None:
    try:
        if not _vec_isa_ok():
            return            # no marker: a later process probes again (inductor checks)
        from torch._inductor import config
        from torch._inductor.cpu_vec_isa import valid_vec_isa_list
        # as the compile will ask (no compile runs meanwhile: each waits for this thread),
        # so that inductor's list is cached here and its base probes are not run again
        with config.patch({"cpp.vec_isa_ok": True}):
            valid_vec_isa_list()
        _write_marker(os.path.join(cache_folder(), _PROBED))
    except Exception:         # noqa: BLE001 - the compile probes for itself
        pass


def _write_marker(path: str) -> None:
    """Write ``1`` to ``path`` at once (a temporary file renamed): a process interrupted
    while writing leaves no marker, never an empty one."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write("1")
    os.replace(tmp, path)


@functools.cache
def _vec_isa_ok():
    """``True`` once every vector instruction set the CPU reports has been found to compile
    and load here (by this or an earlier process: a marker in the cache folder keyed by torch,
    the compiler and the CPU's flags, written only when all passed); ``None`` (inductor checks
    them itself) otherwise.
    Inductor's check builds a test library per instruction set and loads each in a new Python
    process: ~1 s in every process that compiles or loads a graph."""
    import hashlib
    import platform

    from torch._inductor import cpu_vec_isa as isa
    from torch._inductor.cpp_builder import get_compiler_version_info, get_cpp_compiler

    if platform.machine() not in ("x86_64", "AMD64"):
        return None
    try:
        flags = isa.x86_isa_checker()
        listed = [v for v in isa.supported_vec_isa_list
                  if all(f in flags for f in str(v).split())]
        compiler = get_cpp_compiler()
        key = hashlib.sha256(repr((torch.__version__, sorted(flags), compiler,
                                   get_compiler_version_info(compiler))).encode()).hexdigest()
        marker = os.path.join(cache_folder(), f"vec_isa_{key[:24]}")
        if os.path.exists(marker):
            with open(marker) as f:
                if f.read().strip() == "1":
                    return True
        # each a g++ build and a new process loading it: side by side. The marker only when
        # all passed: a probe that failed (a Ctrl-C reaches g++ and the loader too) leaves
        # none, and the next process probes again
        with concurrent.futures.ThreadPoolExecutor(max(len(listed), 1)) as pool:
            if not all(pool.map(lambda v: v.check_build(isa.VecISA._avx_code), listed)):
                return None
        _write_marker(marker)
        return True
    except Exception:         # noqa: BLE001 - any doubt: inductor checks for itself
        return None


def constants_to_inputs(gm):
    """``(gm, constants)``: the graph's tensor constants (the model's data, a literal, and
    those lifted out of the loops) made inputs after the others, and their values. Constants
    do not survive the graph's pickling to the worker as inductor needs them."""
    return _tracing.constants_to_inputs(gm)


def lift_constants(gm):
    """Turn the tensor constants of the subgraphs of the loops, scans and conditions (an
    ``arange`` of the tree levels, a literal) into extra inputs of theirs: AOTAutograd's
    functionalization of a subgraph cannot take constants, the top graph can. In place; ``gm``
    recompiled once (with its subgraphs) at the end."""
    _lift_all(gm)
    gm.recompile()
    return gm


def _lift_all(gm):
    for loop in [n for n in gm.graph.nodes if n.target in _SUBGRAPHS]:
        _lift_loop(gm, loop)


_names = iter(range(1 << 62))
#: the operators whose subgraphs (these arguments) get the lifted constants as extra inputs
#: (the fourth argument of each: a loop's ``additional_inputs``, a scan's, a condition's operands)
_SUBGRAPHS = {torch.ops.higher_order.while_loop: slice(0, 2),
              torch.ops.higher_order.scan: slice(0, 1),
              torch.ops.higher_order.cond: slice(1, 3)}


def _lift_loop(gm, loop):
    import operator

    subs = [operator.attrgetter(a.target)(gm) for a in loop.args[_SUBGRAPHS[loop.target]]]
    for sub in subs:          # nested loops first: their constants become the sub's own
        _lift_all(sub)
    values, found = [], []
    for sub in subs:
        for node in sub.graph.nodes:
            if node.op != "get_attr":
                continue
            v = operator.attrgetter(node.target)(sub)
            if isinstance(v, torch.Tensor):
                j = next((i for i, u in enumerate(values) if u is v), None)
                if j is None:
                    j = len(values)
                    values.append(v)
                found.append((sub, node, j))
    if not values:
        return
    for sub in subs:
        last = [n for n in sub.graph.nodes if n.op == "placeholder"][-1]
        new = []
        for j in range(len(values)):
            with sub.graph.inserting_after(last):
                last = sub.graph.placeholder(f"lifted_{j}")
            new.append(last)
        for owner, node, j in found:
            if owner is sub:
                node.replace_all_uses_with(new[j])
                sub.graph.erase_node(node)
                if "." not in node.target and hasattr(sub, node.target):
                    delattr(sub, node.target)   # the top graph passes it (no pickled copy)
    tops = []
    with gm.graph.inserting_before(loop):
        for v in values:
            name = f"_ppl_lifted_{next(_names)}"
            setattr(gm, name, v)
            tops.append(gm.graph.get_attr(name))
    extra = loop.args[3]
    loop.args = (*loop.args[:3], tuple(extra) + tuple(tops), *loop.args[4:])


def compile_graph(gm, tensors):
    """Inductor's C++ code (with its C++ wrapper: the loop itself runs in C++, no Python per
    iteration) for the traced loop graph ``gm`` (after ``compile_worker.prepare``), compiled
    ahead of time without TorchDynamo; the same call in this process and in the worker, so
    both use one entry of inductor's FX graph cache."""
    from torch._inductor import config
    from torch._inductor.compile_fx import compile_fx

    # the loop operator's subgraphs are traced GraphModules (part of the graph's cache key):
    # inductor leaves higher-order ops out of its FX graph cache only because a TorchDynamo
    # subgraph may close over Python state, which a traced one cannot
    config.unsafe_marked_cacheable_functions = {
        **config.unsafe_marked_cacheable_functions,
        "torch.ops.higher_order.while_loop": "ppl", "torch.ops.higher_order.scan": "ppl",
        "torch.ops.higher_order.cond": "ppl"}
    with fake_inputs(tensors) as fakes, config.patch(loop_config()):
        return compile_fx(gm, fakes)


@contextlib.contextmanager
def fake_inputs(tensors):
    """Fake tensors like ``tensors`` in a tracing context with a shape environment, as
    TorchDynamo would pass them to inductor (without one inductor bypasses its cache, and the
    loop operators' fake-tensor rules fail); distinct ones: the same tensor passed twice would
    be one fake tensor, and the loop operator rejects inputs that alias. Made empty in fake
    mode, not from clones: a clone of the model's data was a transient copy of it."""
    from torch._guards import TracingContext
    from torch._guards import tracing as tracing_context
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    fake_mode = FakeTensorMode(shape_env=ShapeEnv(), static_shapes=True)
    _tracing._state.tracing = True
    try:
        with warnings.catch_warnings(), torch.no_grad(), \
                tracing_context(TracingContext(fake_mode)):
            warnings.simplefilter("ignore")
            with fake_mode:
                fakes = [torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
                         for t in tensors]
            yield fakes
    finally:
        _tracing._state.tracing = False


def mostly_same(got, want) -> bool:
    """Same shapes and dtypes, and at least half of all elements equal within float
    tolerance: a float32 loop compiled with fused kernels rounds differently, and once a
    multinomial draw compares a uniform with a ratio that moved by its last bits, that chain
    follows another trajectory; a miscompiled graph changes nearly every element."""
    agree = total = 0
    for g, w in zip(got, want, strict=True):
        if type(g) is not torch.Tensor or g.shape != w.shape or g.dtype != w.dtype:
            return False
        if w.is_floating_point():
            tol = 1e-4 if w.dtype == torch.float32 else 1e-9
            close = torch.isclose(g, w, rtol=tol, atol=tol, equal_nan=True)
        else:
            close = g == w
        agree += int(close.sum())
        total += close.numel()
    return agree * 2 >= total


def fresh(outs, like):
    """Body outputs as new contiguous tensors of the carries' dtypes and shapes (a loop
    operator's outputs may not alias its inputs and must match the carries' metadata)."""
    fresh = []
    for o, c in zip(outs, like, strict=True):
        o = torch.as_tensor(o)
        if o.dtype != c.dtype:
            o = o.to(c.dtype)
        if o.shape != c.shape:
            o = torch.broadcast_to(o, c.shape)
        fresh.append(o.clone(memory_format=torch.contiguous_format))
    return tuple(fresh)
