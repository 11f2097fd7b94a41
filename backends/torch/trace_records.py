"""What a compiled loop's trace gave, kept on disk, so that a later process skips the trace.

A process that finds a loop's AOTInductor library (:mod:`ppl.backends.torch.aot_loops`) still
traced the loop to learn the library's key, the structure of its outputs and the constants it
takes as inputs: ~1.6 s for a chunk of NUTS iterations, most of a warm run of a small model
(eight schools, 4 chains: 4.3 s). A :func:`record` keeps those three after a trace, under a key
of everything the trace depends on that can be told *without* tracing:

* the closure walk of the loop's functions (:mod:`ppl.backends.torch.closures`): the code of
  every function in it by content (not by name and line), numbers and value objects by value,
  tensors by shape and dtype (they are the graph's inputs: their values do not matter);
* objects the walk keys by identity only where they can be described instead: a module by its
  name, an object whose attributes are all numbers, dtypes or devices (a backend) by them;
* the globals that the user's functions read (the model, its helpers): modules of installed
  packages by name, numbers by value, the user's functions by their code, closure cells and own
  globals, in turn; anything else (a global data array, a user's object, a module of the
  user's) makes the loop *unrecorded*, traced in every process as before: its trace may bake
  in values this key does not see;
* the source files of ppl and of the user's modules (path, size, modification time), torch's
  version, the default dtype, the thread count and the ``PPL_TORCH_*`` settings.

A record is only used where it names a library that was checked against the eager computation
(``compile_worker.checked_before``); anything missing or unreadable means a trace, as before.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import sysconfig
import types

import torch

from ppl.backends.torch import closures
from ppl.backends.torch.loop_graphs import cache_folder

__all__ = ["record_key", "record", "recorded"]

#: constants of a loop (bytes) above which its trace is not recorded (the model's data baked
#: into the graph: it stays in memory; on disk it would be a copy)
_MAX_CONSTANT_BYTES = 1 << 24
_SCALARS = closures._SCALARS   # what the walk keys by value


class _Unrecorded(Exception):
    """The trace depends on something the key cannot describe."""


def record_key(call, w: closures.Walk) -> str | None:
    """The key of ``call``'s trace (with its closure walk ``w``), or ``None`` where the trace
    may depend on values the key cannot see (see the module docstring)."""
    h = hashlib.sha256()
    objects = {id(o): o for o in w.objects}
    try:
        for item in w.key:
            h.update(_item(item, objects).encode())
        seen = {id(fn) for fn in w.functions}   # their closures are in the walk's key
        for fn in w.functions:
            _globals_read(fn, h, seen)
    except _Unrecorded:
        return None
    h.update(repr((call.kind, call.treedef,
                   [(tuple(x.shape), str(x.dtype), str(x.device)) for x in call.leaves])).encode())
    h.update(_setting().encode())
    return h.hexdigest()[:32]


def recorded(key: str | None):
    """``(graph key, output structure, constants)`` of the record ``key``, or ``None``."""
    if key is None:
        return None
    try:
        with open(_path(key), "rb") as f:
            rec = torch.load(f, weights_only=False)
        return rec["graph_key"], rec["out_def"], list(rec["constants"])
    except Exception:         # noqa: BLE001 - missing, or written by another version: trace
        return None


def record(key: str | None, graph_key: str, out_def, constants) -> None:
    """Keep what the trace of the loop ``key`` gave (nothing if ``key`` is ``None`` or the
    constants are large); written whole or not at all."""
    if key is None or os.path.exists(_path(key)) or \
            sum(c.numel() * c.element_size() for c in constants) > _MAX_CONSTANT_BYTES:
        return
    tmp = f"{_path(key)}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            torch.save({"graph_key": graph_key, "out_def": out_def,
                        "constants": [c.detach().clone() for c in constants]}, f)
        os.replace(tmp, _path(key))
    except Exception:         # noqa: BLE001 - not picklable (an output class of a script)
        try:
            os.remove(tmp)
        except OSError:
            pass


def _path(key: str) -> str:
    return os.path.join(cache_folder(), f"trace_{key}.pt")


def _item(item, objects: dict) -> str:
    """One entry of the walk's key as text that is the same in every process alike."""
    tag = item[0]
    if tag == "fn":
        return f"fn:{_code_digest(item[1])}"
    if tag == "id":           # an object keyed by identity: described, or unrecorded
        if item[1] not in objects:
            raise _Unrecorded
        return f"obj:{_object(objects[item[1]])}"
    if tag == "value":
        return f"value:{_plain_repr(item[1], item[2])}"
    text = repr(item)
    if " at 0x" in text:      # an address: not the same in another process
        raise _Unrecorded
    return text


def _object(obj) -> str:
    if isinstance(obj, types.ModuleType):
        return f"module:{obj.__name__}"
    attrs = getattr(obj, "__dict__", None)
    if attrs is None or not all(isinstance(v, _SCALARS) for v in attrs.values()):
        raise _Unrecorded
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}{sorted(attrs.items())!r}"


def _plain_repr(cls, value) -> str:
    text = f"{cls.__module__}.{cls.__qualname__}:{value!r}"
    if " at 0x" in text:
        raise _Unrecorded
    return text


_code_digests: dict = {}


def _code_digest(code: types.CodeType) -> str:
    """A digest of a code object's content (its bytecode, constants, names, file), the same in
    every process running this Python."""
    d = _code_digests.get(code)
    if d is None:
        d = _code_digests[code] = hashlib.sha256(marshal.dumps(code)).hexdigest()[:24]
    return d


def _library_file(path: str | None) -> bool:
    """Whether a module's file belongs to Python or an installed package (not ppl, not the
    user's)."""
    if not path:
        return False
    return any(path.startswith(p) for p in _library_dirs())


_dirs: list = []


def _library_dirs() -> list:
    if not _dirs:
        paths = sysconfig.get_paths()
        found = set()
        for k in ("stdlib", "platstdlib", "purelib", "platlib"):
            if paths.get(k):  # as named and as resolved: module paths are not resolved here
                found |= {paths[k], os.path.realpath(paths[k])}
        _dirs.extend(p + os.sep for p in sorted(found))
    return _dirs


def _ppl_module(module) -> bool:
    return module.__name__ == "ppl" or module.__name__.startswith("ppl.")


def _user_code(obj) -> bool:
    """Whether a function or class is the user's (not ppl's, not an installed package's)."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    if module is None:
        return True           # made by exec, or its module gone
    if _ppl_module(module):
        return False
    return not _library_file(getattr(module, "__file__", None))


def _names(code: types.CodeType):
    yield from code.co_names
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _names(c)


def _globals_read(fn, h, seen: set) -> None:
    """Add to ``h`` the globals a user's function reads (its helpers' too); raise
    :class:`_Unrecorded` for one the key cannot describe."""
    if not _user_code(fn):
        return
    g = fn.__globals__
    for name in sorted(set(_names(fn.__code__))):
        if name in g:         # (else a builtin or an attribute name)
            _read(f"global:{name}", g[name], h, seen)


def _read(label: str, v, h, seen: set) -> None:
    """Add to ``h`` a value a user's function reads (a global, or a cell of a helper's
    closure); raise :class:`_Unrecorded` for one the key cannot describe."""
    if isinstance(v, _SCALARS):
        h.update(f"{label}={type(v).__name__}:{v!r}".encode())
    elif isinstance(v, types.ModuleType):
        if not (_ppl_module(v) or _library_file(getattr(v, "__file__", None))):
            raise _Unrecorded   # a module of the user's may hold data
        h.update(f"{label}=module:{v.__name__}".encode())
    elif isinstance(v, types.FunctionType):
        h.update(f"{label}=fn:{_code_digest(v.__code__)}".encode())
        if id(v) in seen:
            return
        seen.add(id(v))
        for i, cell in enumerate(v.__closure__ or ()):
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            _read(f"{label}.{i}", contents, h, seen)
        _globals_read(v, h, seen)
    elif isinstance(v, type) and not _user_code(v):
        h.update(f"{label}=class:{v.__module__}.{v.__qualname__}".encode())
    elif isinstance(v, types.BuiltinFunctionType):
        h.update(f"{label}=builtin:{getattr(v, '__qualname__', label)}".encode())
    else:
        raise _Unrecorded


def _setting() -> str:
    """What else the trace depends on: the sources of ppl and of the user's modules, torch,
    the default dtype, threads, ppl's torch settings."""
    sources = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not path or not (_ppl_module(module) or not _library_file(path)):
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        sources.append((name, path, st.st_size, st.st_mtime_ns))
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("PPL_TORCH"))
    return repr((sorted(sources), torch.__version__, str(torch.get_default_dtype()),
                 torch.get_num_threads(), env, sys.version_info[:3]))
