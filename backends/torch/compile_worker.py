"""Inductor compilation of traced loop graphs in a detached worker, shared between processes.

Inductor compiles a traced loop graph ahead of time into C++ (``loop_graphs.compile_graph``); its FX
graph cache keeps the result on disk (``TORCHINDUCTOR_CACHE_DIR``), so a later process pays a
cache lookup (~3 s) instead of the compilation (~35 s for a NUTS transition on a loaded 2-core
machine). This module adds what makes that usable from a sampler without making its first run
wait (taken from an earlier attempt, perf-torch, which compiled whole chunks this way):

* a marker per graph, keyed by its code, constants and input signature, written once the
  graph compiled (:func:`compiled_before`): a process that finds it compiles in place, knowing
  it will hit the cache;
* :func:`compile_elsewhere`: a graph never compiled is handed to a detached worker process
  (``python -m ppl.backends.torch.inductor_cache FILE``, at lower priority) that fills the
  cache while this process keeps sampling with the traced graph; when the worker's marker
  appears, this process loads the compiled code (:func:`compiled_before` turns true), and if
  the run ends first, the next process finds the cache warm.

The worker gets the graph pickled (:func:`pickled`), and this process compiles the same
round-tripped form (:func:`portable`), so the worker's compilation fills the very cache entry a
later process reads (inductor's key covers the thread count and default dtype: both passed on).

A graph without scans is compiled by AOTInductor (:mod:`ppl.backends.torch.aot_loops`) into a
shared library (:func:`library_path`), which a second worker process runs once on the first
call's inputs (passed with the job) against the graph run eagerly before it is marked compiled;
if that fails or crashes, the worker compiles inductor's Python-wrapped code as before.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import subprocess
import sys
import time

import torch

from ppl.backends.torch import aot_hoisting, aot_loops, tracing
from ppl.backends.torch.loop_graphs import cache_folder, compile_graph, loop_config

__all__ = ["graph_key", "compiled_before", "failed_before", "compile_elsewhere", "prepare",
           "pickled", "portable", "hot_before", "mark_hot", "checked_before", "mark_checked",
           "library_path", "load_compiled"]

#: a worker's lock older than this is taken for a crashed worker
_STALE_SECONDS = 3600.0
#: the first call's inputs go with a job (for the check of an AOTInductor library) up to this
_MAX_JOB_INPUT_BYTES = 1 << 28
#: the suffix of a job's inputs file in the cache folder (:func:`_save_inputs`)
_INPUTS = ".inputs.pt"
#: seconds the check of a library may take (the graph's eager run included)
_CHECK_SECONDS = 900


_dir = cache_folder


def _marked(name: str) -> bool:
    return os.path.exists(os.path.join(_dir(), name))


def _mark(name: str) -> None:
    with open(os.path.join(_dir(), name), "w") as f:
        f.write(str(time.time()))


def _signature(tensors) -> list:
    return [(tuple(t.shape), tuple(t.stride()), str(t.dtype), t.device.type) for t in tensors]


def prepare(gm):
    """``gm`` made ready for inductor, in place: its outputs all new tensors
    (:func:`~ppl.backends.torch.tracing.clone_outputs`) and the tracing metadata of its nodes
    dropped (fake values, stack traces: not needed to run or compile it, and not picklable)."""
    tracing.clone_outputs(gm)
    for module in gm.modules():
        if isinstance(module, torch.fx.GraphModule):
            for node in module.graph.nodes:
                node.meta = {}
    gm.recompile()
    return gm


def _loads(blob: bytes):
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx._graph_pickler import GraphPickler

    gm = GraphPickler.loads(blob, FakeTensorMode())
    gm.recompile()            # (with every subgraph)
    return gm


def pickled(gm) -> bytes:
    """``gm`` (after :func:`prepare`) pickled for a worker (``GraphModule``'s own pickling
    re-traces its code symbolically, which a loop operator does not survive)."""
    from torch.fx._graph_pickler import GraphPickler
    return GraphPickler.dumps(gm)


def portable(gm):
    """``gm`` as a worker gets it (pickled and back): the form this process compiles too, so
    that both hit one inductor cache entry (the entry's key covers the module's attributes,
    which the round trip normalises)."""
    return _loads(pickled(gm))


@functools.cache
def _mends() -> str:
    """A digest of the modules that rewrite AOTInductor's C++ wrapper: a library compiled
    before they changed is not taken."""
    h = hashlib.sha256()
    for module in (aot_loops, aot_hoisting):
        with open(module.__file__, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def graph_key(gm, tensors, constants=()) -> str:
    """A key of the graph (the code of it and its subgraphs, its constants, and the values
    of ``constants``, inputs that stand for constants) called with ``tensors``, the same in
    every process."""
    # inductor's C++ depends on the intra-op thread count (part of its own cache key too)
    h = hashlib.sha256(repr((_signature(tensors), torch.__version__, torch.get_num_threads(),
                             torch.get_default_dtype(), sorted(loop_config().items()),
                             aot_loops.hoisting(), _mends()))
                       .encode())
    for name, module in gm.named_modules():
        if isinstance(module, torch.fx.GraphModule):
            h.update(f"{name}\n{module.code}".encode())
        for attr, value in sorted(vars(module).items()):
            if isinstance(value, torch.Tensor):
                h.update(f"{attr}{tuple(value.shape)}{value.dtype}".encode())
                h.update(value.detach().cpu().contiguous().view(-1).view(torch.uint8)
                         .numpy())
    for value in constants:
        # hashed in place (the data of a large model: no copy)
        h.update(value.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy())
    return h.hexdigest()[:32]


def compiled_before(key: str) -> bool:
    """Whether this graph compiled in this or an earlier process (inductor's cache has it)."""
    return _marked(key + ".done")


def failed_before(key: str) -> bool:
    """Whether a worker tried this graph and inductor failed."""
    return _marked(key + ".failed")


def mark_compiled(key: str) -> None:
    _mark(key + ".done")


def checked_before(key: str) -> bool:
    """Whether this graph's compiled code reproduced the eager computation in this or an
    earlier process (:func:`mark_checked`): the same code from inductor's cache need not be
    checked again."""
    return _marked(key + ".checked")


def mark_checked(key: str) -> None:
    _mark(key + ".checked")


def hot_before(digest: str) -> bool:
    """Whether a loop like this one (``closures.stable_digest``) was compiled in this or an
    earlier process: its graph is then most likely in inductor's cache, and the loop is
    compiled at its first call instead of after ``PPL_TORCH_LOOP_AFTER`` eager ones."""
    return _marked(f"hot_{digest}")


def mark_hot(digest: str) -> None:
    _mark(f"hot_{digest}")


def library_path(key: str) -> str:
    """Where the AOTInductor library of the graph ``key`` is kept (it may not exist)."""
    return os.path.join(_dir(), key + ".so")


def load_compiled(key: str, gm, tensors):
    """The compiled graph of ``key`` (:func:`compiled_before`): its library where the worker
    made one, else inductor's code for ``gm`` from inductor's cache."""
    library = library_path(key)
    if aot_loops.enabled() and os.path.exists(library):
        return aot_loops.load(library)
    return compile_graph(gm, tensors)


def compile_elsewhere(key: str, gm, tensors, hot: str | None = None):
    """Start a detached worker compiling the graph unless one is at it; the ``Popen`` or
    ``None``. ``hot``: the loop's digest, marked hot (:func:`hot_before`) once compiled.
    ``tensors``: the first call's inputs (those of an AOTInductor library's check)."""
    folder = _dir()
    lock = os.path.join(folder, key + ".lock")
    try:
        if time.time() - os.path.getmtime(lock) < _STALE_SECONDS:
            return None
        os.remove(lock)
    except OSError:
        pass
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except OSError:
        return None
    os.close(fd)
    job = os.path.join(folder, key + ".job")
    aot = aot_loops.eligible(gm) and \
        sum(t.numel() * t.element_size() for t in tensors) <= _MAX_JOB_INPUT_BYTES
    inputs = _save_inputs(os.path.join(folder, key + _INPUTS), tensors) if aot else None
    with open(job, "wb") as f:
        pickle.dump({"key": key, "hot": hot, "graph": pickled(gm),
                     "signature": _signature(tensors), "inputs": inputs,
                     "threads": torch.get_num_threads(),
                     "default_dtype": str(torch.get_default_dtype())}, f)
    return subprocess.Popen([sys.executable, "-m", "ppl.backends.torch.compile_worker", job],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def _save_inputs(path: str, tensors) -> str:
    """Write a job's inputs to ``path`` (``torch.save`` writes each tensor's memory as it is)
    and return it. Not cloned and not pickled with the job: a pickled tensor is serialised
    into a buffer first, so the clones and that buffer were two transient copies of the model's
    data (77 MB of peak memory for a logistic regression at N = 1e5, D = 100); only a view of
    part of a larger storage is copied (``torch.save`` would write all of it)."""
    torch.save([t.detach() if t.untyped_storage().nbytes() == t.nbytes else t.detach().clone()
                for t in tensors], path)
    return path


def _work(job_path: str) -> int:
    """The worker: compile the graph of ``job_path`` and leave the marker."""
    import ppl.backends.torch  # noqa: F401  (the custom ops a graph may call)

    with open(job_path, "rb") as f:
        job = pickle.load(f)
    key, folder = job["key"], _dir()
    try:
        os.nice(19)   # the sampler that started it comes first
        _settings_of(job)
        gm = _loads(job["graph"])
        tensors = [torch.empty_strided(shape, stride, dtype=getattr(torch, dtype.split(".")[1]),
                                       device=device)
                   for shape, stride, dtype, device in job["signature"]]
        if not (job.get("inputs") is not None and _library(job_path, key, gm, tensors)):
            compile_graph(gm, tensors)
        mark_compiled(key)
        if job.get("hot"):    # the next process compiles the loop at its first call
            mark_hot(job["hot"])
        return 0
    except Exception:         # the reason, for whoever looks into the cache folder
        import traceback
        with open(os.path.join(folder, key + ".failed"), "w") as f:
            f.write(traceback.format_exc())
        return 1
    finally:
        for suffix in (".lock", ".job", _INPUTS):
            try:
                os.remove(os.path.join(folder, key + suffix))
            except OSError:
                pass


def _settings_of(job) -> None:
    """This worker's thread count and default dtype set to those of the process that sent
    ``job`` (inductor's code depends on both)."""
    torch.set_num_threads(job["threads"])
    torch.set_default_dtype(getattr(torch, job["default_dtype"].split(".")[1]))


def _library(job_path: str, key: str, gm, tensors) -> bool:
    """Compile the job's graph with AOTInductor and keep the library if a separate process
    running it on the first call's inputs gets what the graph gives eagerly; whether it did
    (why not: in ``key.aot_failed``)."""
    candidate = os.path.join(_dir(), key + ".candidate.so")
    try:
        aot_loops.compile_library(gm, tensors, candidate)
        check = subprocess.run([sys.executable, "-m", "ppl.backends.torch.compile_worker",
                                "--check", job_path, candidate], stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=_CHECK_SECONDS)
        if check.returncode != 0:
            raise RuntimeError(f"the library's check ended with {check.returncode}: "
                               f"{check.stderr.decode(errors='replace')[-2000:]}")
        if os.path.exists(aot_loops.companion(candidate)):
            os.replace(aot_loops.companion(candidate), aot_loops.companion(library_path(key)))
        os.replace(candidate, library_path(key))
        mark_checked(key)
        return True
    except Exception:         # noqa: BLE001 - inductor's Python-wrapped code instead
        import traceback
        with open(os.path.join(_dir(), key + ".aot_failed"), "w") as f:
            f.write(traceback.format_exc())
        return False
    finally:
        for leftover in (candidate, aot_loops.companion(candidate)):
            with contextlib.suppress(OSError):
                os.remove(leftover)


def _check(job_path: str, library: str) -> int:
    """The library's check (in its own process: a fault ends only this one): 0 if it gives
    what the graph gives run eagerly on the job's inputs."""
    import ppl.backends.torch  # noqa: F401  (the custom ops a graph may call)
    from ppl.backends.torch.loop_graphs import mostly_same

    with open(job_path, "rb") as f:
        job = pickle.load(f)
    _settings_of(job)
    inputs = torch.load(job["inputs"], weights_only=True)
    with torch.no_grad():
        got = aot_loops.load(library)(*[t.clone() for t in inputs])
        want = _loads(job["graph"])(*[t.clone() for t in inputs])
    return 0 if mostly_same(list(got), list(want)) else 1


if __name__ == "__main__":
    if sys.argv[1] == "--check":
        raise SystemExit(_check(sys.argv[2], sys.argv[3]))
    raise SystemExit(_work(sys.argv[1]))
