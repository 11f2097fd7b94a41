"""What a compiled loop's trace gave, kept on disk, so that a later process skips the trace.

A process that finds a loop's AOTInductor library (:mod:`ppl.backends.torch.aot_loops`) still
traced the loop to learn the library's key, the structure of its outputs and the constants it
takes as inputs: ~1.6 s for a chunk of NUTS iterations, most of a warm run of a small model
(eight schools, 4 chains: 4.3 s). A :func:`record` keeps those three after a trace, under a key
of everything the trace depends on that can be told *without* tracing:

* the closure walk of the loop's functions (:mod:`ppl.backends.torch.closures`): the code of
  every function in it by content (``closures.code_digest``: not its file or line), numbers
  and value objects by value, tensors by shape and dtype (they are the graph's inputs: their
  values do not matter);
* objects the walk keys by identity only where they can be described instead: a module by its
  name, an object whose attributes are all numbers, dtypes or devices (a backend) by them;
* the globals that the user's functions read (the model, its helpers): modules of installed
  packages by name, numbers by value, the user's functions by their code, closure cells and own
  globals, in turn; anything else (a global data array, a user's object, a module of the
  user's) makes the loop *unrecorded*, traced in every process as before: its trace may bake
  in values this key does not see;
* the class of an object described above, where it is the user's: its functions (read as
  globals are) and numbers; any other attribute of it (class data) makes the loop unrecorded;
* the content (not the path) of ppl's source files, every one in its package folders whether
  imported yet or not (read once per process), and of the files that define the user's
  functions met above;
* torch's version, the default dtype, the thread count, the ``PPL_TORCH_*`` settings and
  Python's version.

Nothing in the key names a file's path or a code object's line, nor depends on which modules
happen to be imported when the loop is built (at its first call, or after eager ones): a clone
of the repository elsewhere, or the user's model file at another path, finds the record.

A record is only used where it names a library that was checked against the eager computation
(``compile_worker.checked_before``); anything missing or unreadable means a trace, as before.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
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
_HEAP_TYPE = 1 << 9             # ``Py_TPFLAGS_HEAPTYPE``: a class made by a ``class`` statement


class _Unrecorded(Exception):
    """The trace depends on something the key cannot describe."""


def record_key(call, w: closures.Walk) -> str | None:
    """The key of ``call``'s trace (with its closure walk ``w``), or ``None`` where the trace
    may depend on values the key cannot see (see the module docstring)."""
    k = _Key(w)
    try:
        for item in w.key:
            k.update(_item(item, k))
        for fn in w.functions:
            k.seen.add(id(fn))    # their closures are in the walk's key
        for fn in w.functions:
            if _user_code(fn):
                k.source(fn)
                _globals_read(fn, k)
        users = sorted(_file_digest(path) for path in k.files)
    except _Unrecorded:
        return None
    k.update(repr((call.kind, call.treedef,
                   [(tuple(x.shape), str(x.dtype), str(x.device)) for x in call.leaves])))
    k.update(repr(users))
    k.update(_setting())
    return k.h.hexdigest()[:32]


class _Key:
    """A key being made: its hash, the functions and classes read so far, the user's source
    files met."""

    def __init__(self, w):
        self.h = hashlib.sha256()
        self.objects = {id(o): o for o in w.objects}
        self.seen, self.files = set(), set()

    def update(self, text: str) -> None:
        self.h.update(text.encode())

    def source(self, fn) -> None:
        """Note the file of a user's function (none for code made by ``exec``: its code is in
        the key by content)."""
        path = fn.__code__.co_filename
        if os.path.isfile(path):
            self.files.add(path)


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


def _item(item, k: _Key) -> str:
    """One entry of the walk's key as text that is the same in every process alike."""
    tag = item[0]
    if tag == "fn":
        return f"fn:{closures.code_digest(item[1])}"
    if tag == "id":           # an object keyed by identity: described, or unrecorded
        if item[1] not in k.objects:
            raise _Unrecorded
        return f"obj:{_object(k.objects[item[1]], k)}"
    if tag == "value":
        _class(item[1], k)
        return f"value:{_plain_repr(item[1], item[2])}"
    text = repr(item)
    if " at 0x" in text:      # an address: not the same in another process
        raise _Unrecorded
    return text


def _object(obj, k: _Key) -> str:
    if isinstance(obj, types.ModuleType):
        return f"module:{obj.__name__}"
    attrs = getattr(obj, "__dict__", None)
    if attrs is None or not all(isinstance(v, _SCALARS) for v in attrs.values()):
        raise _Unrecorded
    cls = type(obj)
    _class(cls, k)
    return f"{cls.__module__}.{cls.__qualname__}{sorted(attrs.items())!r}"


def _plain_repr(cls, value) -> str:
    text = f"{cls.__module__}.{cls.__qualname__}:{value!r}"
    if " at 0x" in text:
        raise _Unrecorded
    return text


def _class(cls, k: _Key) -> None:
    """Add to the key what a user's class (and its user's bases) does: its functions, read as
    globals are, and its numbers; raise :class:`_Unrecorded` for another attribute (data)."""
    for c in cls.__mro__:
        if not c.__flags__ & _HEAP_TYPE or not _user_code(c) or id(c) in k.seen:
            continue          # (``object`` and Python's other types are not heap types)
        k.seen.add(id(c))
        for name, v in sorted(vars(c).items()):
            label = f"class:{c.__qualname__}.{name}"
            if isinstance(v, staticmethod | classmethod):
                v = v.__func__
            if isinstance(v, property):
                for i, f in enumerate((v.fget, v.fset, v.fdel)):
                    if f is not None:
                        _read(f"{label}.{i}", f, k)
            elif isinstance(v, (types.FunctionType, *_SCALARS)):
                _read(label, v, k)
            elif not (name.startswith("__") and name.endswith("__")):
                raise _Unrecorded   # class data: the trace may bake it in


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


def _globals_read(fn, k: _Key) -> None:
    """Add to the key the globals a user's function reads (its helpers' too); raise
    :class:`_Unrecorded` for one the key cannot describe."""
    if not _user_code(fn):
        return
    g = fn.__globals__
    for name in sorted(set(_names(fn.__code__))):
        if name in g:         # (else a builtin or an attribute name)
            _read(f"global:{name}", g[name], k)


def _read(label: str, v, k: _Key) -> None:
    """Add to the key a value a user's function reads (a global, or a cell of a helper's
    closure); raise :class:`_Unrecorded` for one the key cannot describe."""
    if isinstance(v, _SCALARS):
        k.update(f"{label}={type(v).__name__}:{v!r}")
    elif isinstance(v, types.ModuleType):
        if not (_ppl_module(v) or _library_file(getattr(v, "__file__", None))):
            raise _Unrecorded   # a module of the user's may hold data
        k.update(f"{label}=module:{v.__name__}")
    elif isinstance(v, types.FunctionType):
        k.update(f"{label}=fn:{closures.code_digest(v.__code__)}")
        if id(v) in k.seen:
            return
        k.seen.add(id(v))
        if _user_code(v):
            k.source(v)
        for i, cell in enumerate(v.__closure__ or ()):
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            _read(f"{label}.{i}", contents, k)
        _globals_read(v, k)
    elif isinstance(v, type) and not _user_code(v):
        k.update(f"{label}=class:{v.__module__}.{v.__qualname__}")
    elif isinstance(v, types.BuiltinFunctionType):
        k.update(f"{label}=builtin:{getattr(v, '__qualname__', label)}")
    else:
        raise _Unrecorded


def _setting() -> str:
    """What else the trace depends on: ppl's sources, torch, the default dtype, threads, ppl's
    torch settings, Python."""
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("PPL_TORCH"))
    return repr((_ppl_sources(), torch.__version__, str(torch.get_default_dtype()),
                 torch.get_num_threads(), env, sys.version_info[:3]))


#: ppl's packages with a folder of their own (``package-dir`` in ``pyproject.toml``); in an
#: installed copy they are folders of ``ppl``'s (their files then counted once)
_PACKAGES = ("ppl", "ppl.backends", "ppl.distributions", "ppl.inference")


def _ppl_files() -> list:
    """``(name, path)`` of every Python file in ppl's package folders, imported or not; the
    name (package and path in its folder) does not depend on where the folders are."""
    files = {}
    for package in _PACKAGES:
        spec = importlib.util.find_spec(package)
        for root in (spec.submodule_search_locations or ()) if spec else ():
            for folder, dirs, names in os.walk(root):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
                for n in sorted(names):
                    if n.endswith(".py"):
                        path = os.path.join(folder, n)
                        files.setdefault(os.path.realpath(path),
                                         f"{package}:{os.path.relpath(path, root)}")
    return sorted((name, path) for path, name in files.items())


@functools.cache
def _ppl_sources() -> str:
    """A digest of the content of ppl's source files (:func:`_ppl_files`), once per process."""
    h = hashlib.sha256()
    for name, path in _ppl_files():
        with open(path, "rb") as f:
            h.update(f"{name}:{hashlib.sha256(f.read()).hexdigest()}\n".encode())
    return h.hexdigest()[:32]


_file_digests: dict = {}


def _file_digest(path: str) -> str:
    """A digest of a user's source file's content (read again when its size or time changes);
    :class:`_Unrecorded` if it cannot be read."""
    try:
        st = os.stat(path)
        stamp = (path, st.st_size, st.st_mtime_ns)
        d = _file_digests.get(stamp)
        if d is None:
            with open(path, "rb") as f:
                d = _file_digests[stamp] = hashlib.sha256(f.read()).hexdigest()[:32]
    except OSError:
        raise _Unrecorded from None
    return d
