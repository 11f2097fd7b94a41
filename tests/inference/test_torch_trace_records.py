"""A compiled loop's trace kept on disk (``ppl.backends.torch.trace_records``): a later process
takes the loop's checked library without tracing it, and only where nothing the trace depends
on could have changed unseen. Results against NumPy; keys against edits of code, closures and
globals."""

import os
import time

import numpy as np
import pytest

pytestmark = [pytest.mark.backends("torch"), pytest.mark.dtypes("float64")]

_SOURCE = '''
def make(a, steps):
    def cond(c):
        return c[0] < steps

    def body(c):
        i, x = c
        return i + 1, 0.5 * (x + a / x) * SCALE
    return cond, body
'''


def _functions(scale=1.0, source=_SOURCE, extra=None):
    """``make`` of a user's script (no module), reading the global ``SCALE`` (and ``extra``)."""
    namespace = {"SCALE": scale, **(extra or {})}
    exec(compile(source, "<model script>", "exec"), namespace)   # noqa: S102
    return namespace["make"]


def _key(make, a, steps=12):
    import torch

    from ppl.backends.torch import closures, loop_calls, trace_records
    cond, body = make(a, steps)
    call = loop_calls.WhileCall(cond, body, (torch.zeros((), dtype=torch.int64),
                                             torch.ones_like(a)), None)
    return trace_records.record_key(call, closures.walk_functions(call.functions))


def test_key_sees_code_closures_and_globals(backend):
    import torch
    a = torch.linspace(0.5, 4.0, 6, dtype=torch.float64)
    key = _key(_functions(), a)
    assert key is not None
    # new closures of the same code and values, other data of the same shape: the same trace
    assert _key(_functions(), a * 3.0) == key
    assert _key(_functions(), a, steps=13) != key                 # a closure's number
    assert _key(_functions(scale=2.0), a) != key                  # a global number
    assert _key(_functions(source=_SOURCE.replace("0.5 *", "0.25 *")), a) != key   # the code
    assert _key(_functions(), a[:5]) != key                       # a shape
    # a global helper's closure number (a helper made by a factory)
    def scaler(factor):
        return lambda x: factor * x

    helped = _SOURCE.replace("* SCALE", "* HELPER(SCALE)")
    helper_key = _key(_functions(source=helped, extra={"HELPER": scaler(2.0)}), a)
    assert helper_key is not None
    assert _key(_functions(source=helped, extra={"HELPER": scaler(2.0)}), a) == helper_key
    assert _key(_functions(source=helped, extra={"HELPER": scaler(3.0)}), a) != helper_key
    # a global the key cannot describe (data the trace would bake in): no record
    source = _SOURCE.replace("* SCALE", "* WEIGHTS[0]")
    assert _key(_functions(source=source, extra={"WEIGHTS": np.ones(3)}), a) is None


def _newton_numpy(a, steps):
    x = np.ones_like(a)
    for _ in range(steps):
        x = 0.5 * (x + a / x)
    return x


def test_recorded_trace_takes_the_library_untraced(backend, monkeypatch, tmp_path):
    """A first 'process' traces the loop and its worker builds and checks the library; a
    second (the loops' memory cleared) loads the library from the record without tracing, and
    gets NumPy's values for new data; a loop whose closure number changed is traced anew."""
    import torch

    from ppl import ops
    from ppl.backends.torch import loops
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PPL_TORCH_LOOP_AFTER", "1")
    monkeypatch.setenv("PPL_TORCH_LOOP_WORKER", "1")     # every graph to the worker: a library
    monkeypatch.setattr(loops, "_cache", {})
    make = _functions()

    def run(a, steps=12):
        cond, body = make(a, steps)
        return ops.while_loop(cond, body, (torch.zeros((), dtype=torch.int64),
                                           torch.ones_like(a)))[1]

    rng = np.random.default_rng(1)
    a = rng.uniform(0.5, 40.0, 6)
    np.testing.assert_allclose(run(torch.as_tensor(a)).numpy(), _newton_numpy(a, 12))
    folder = tmp_path / "ppl_loops"
    deadline = time.time() + 600
    while not list(folder.glob("*.done")) or list(folder.glob("*.lock")):
        assert time.time() < deadline, os.listdir(folder)
        time.sleep(1)
    assert list(folder.glob("*.so")) and list(folder.glob("trace_*.pt"))

    def no_trace(*args):
        raise AssertionError("traced although its record and library were there")

    monkeypatch.setattr(loops, "_cache", {})            # a new process
    monkeypatch.setattr(loops, "_trace", no_trace)
    for _ in range(2):
        a = rng.uniform(0.5, 40.0, 6)
        np.testing.assert_allclose(run(torch.as_tensor(a)).numpy(), _newton_numpy(a, 12),
                                   rtol=1e-12)
    (entry,) = loops._cache.values()
    assert entry.graph is not None and not entry.failed
    # another number of steps: another trace (here refused: the loop stays eager and right)
    np.testing.assert_allclose(run(torch.as_tensor(a), steps=5).numpy(), _newton_numpy(a, 5),
                               rtol=1e-12)
    assert all(e.graph is None for e in loops._cache.values() if e is not entry)


# -- keys independent of where the code lives and of what else is imported -------------------

_MODULE = '''
SCALE = 1.0


def make(a, steps):
    def cond(c):
        return c[0] < steps

    def body(c):
        i, x = c
        return i + 1, 0.5 * (x + a / x) * SCALE if c[0].dtype in {"x", "y", "z"} or True else x
    return cond, body
'''


def _module(folder, name, source=_MODULE):
    """A user's module file ``folder/model.py`` imported as ``name`` (the way ``ppl compare``
    loads a model file: not in ``sys.modules``)."""
    import importlib.util
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _hot(make, a, steps=12):
    """The loop's hot-marker digest, as ``loops`` makes it."""
    import torch

    from ppl.backends.torch import closures, loop_calls
    cond, body = make(a, steps)
    call = loop_calls.WhileCall(cond, body, (torch.zeros((), dtype=torch.int64),
                                             torch.ones_like(a)), None)
    w = closures.walk_functions(call.functions)
    return closures.stable_digest((tuple(w.key), (call.kind, call.treedef),
                                   tuple((x.shape, x.dtype, x.device) for x in call.leaves)))


def test_keys_do_not_depend_on_the_file_path(backend, tmp_path):
    """The same module in two folders (a clone of the repository elsewhere, a model file
    moved), at another line too: the same hot marker and record key; other code or another
    content of the user's file: another record key."""
    import torch
    a = torch.linspace(0.5, 4.0, 6, dtype=torch.float64)
    one = _module(tmp_path / "clone_a" / "examples", "model_a")
    two = _module(tmp_path / "elsewhere" / "b", "model_b")
    key = _key(one.make, a)
    assert key is not None and _key(two.make, a) == key
    assert _hot(one.make, a) == _hot(two.make, a)
    moved = _module(tmp_path / "moved", "model_c", "\n\n\n" + _MODULE)    # other lines
    assert _hot(moved.make, a) == _hot(one.make, a)
    assert _key(moved.make, a) != key        # the file's content differs (its lines)
    commented = _module(tmp_path / "commented", "model_d", _MODULE + "# a comment\n")
    assert _key(commented.make, a) != key    # the user's file changed, the code did not
    assert _hot(commented.make, a) == _hot(one.make, a)
    other = _module(tmp_path / "other", "model_e", _MODULE.replace("0.5 *", "0.25 *"))
    assert _key(other.make, a) != key and _hot(other.make, a) != _hot(one.make, a)


def test_key_does_not_depend_on_the_modules_imported(backend, tmp_path, monkeypatch):
    """Building a loop at its first call or after eager ones (other modules imported by then)
    gives the same key."""
    import sys
    import types

    import torch
    a = torch.linspace(0.5, 4.0, 6, dtype=torch.float64)
    make = _module(tmp_path / "m", "model_f").make
    key = _key(make, a)
    extra = tmp_path / "extra.py"
    extra.write_text("X = 1\n")
    module = types.ModuleType("ppl_test_extra_module")
    module.__file__ = str(extra)
    monkeypatch.setitem(sys.modules, module.__name__, module)         # a user's module
    monkeypatch.setitem(sys.modules, "ppl._test_extra", types.ModuleType("ppl._test_extra"))
    assert _key(make, a) == key


def test_key_follows_the_content_of_ppl_sources(backend, tmp_path, monkeypatch):
    """ppl's files are keyed by content, all of them, imported or not."""
    import sys

    import torch

    import ppl.backends.torch.loops  # noqa: F401
    from ppl.backends.torch import trace_records
    files = trace_records._ppl_files()
    paths = {os.path.realpath(p) for _, p in files}
    imported = [m.__file__ for name, m in list(sys.modules.items())
                if (name == "ppl" or name.startswith("ppl.")) and getattr(m, "__file__", None)]
    assert imported and all(os.path.realpath(p) in paths for p in imported)
    assert all(":" in name and not name.split(":")[1].startswith("/") for name, _ in files)
    assert len({name for name, _ in files}) == len(files)

    a = torch.linspace(0.5, 4.0, 6, dtype=torch.float64)
    key = _key(_functions(), a)
    source = tmp_path / "not_imported.py"
    source.write_text("X = 1\n")
    monkeypatch.setattr(trace_records, "_ppl_files", lambda: files + [("ppl:x.py", source)])
    trace_records._ppl_sources.cache_clear()
    try:
        changed = _key(_functions(), a)
        assert changed != key
        assert _key(_functions(), a) == changed       # read once per process
        source.write_text("X = 2\n")
        trace_records._ppl_sources.cache_clear()
        assert _key(_functions(), a) != changed
    finally:
        trace_records._ppl_sources.cache_clear()


def test_user_class_of_a_described_object(backend):
    """An object of the user's class described by its numbers: its methods' code and the
    globals they read are in the key; class data makes the loop unrecorded."""
    import torch
    a = torch.linspace(0.5, 4.0, 6, dtype=torch.float64)
    source = '''
class Half:
    def __init__(self):
        self.w = 0.5

    def __call__(self, x):
        return self.w * x * SCALE


def make(a, steps):
    half = Half()

    def cond(c):
        return c[0] < steps

    def body(c):
        i, x = c
        return i + 1, half(x + a / x)
    return cond, body
'''
    key = _key(_functions(source=source), a)
    assert key is not None and _key(_functions(source=source), a) == key
    assert _key(_functions(source=source.replace("* SCALE", "* SCALE * 2")), a) != key
    assert _key(_functions(scale=2.0, source=source), a) != key
    data = source.replace("class Half:", "class Half:\n    TABLE = [1.0]\n")
    assert _key(_functions(source=data), a) is None


_PROCESS = '''
import importlib.util, sys
import torch
from ppl.backends.torch import closures, loop_calls, trace_records
spec = importlib.util.spec_from_file_location("model", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
a = torch.linspace(0.5, 4.0, 6, dtype=torch.float64)
cond, body = module.make(a, 12)
call = loop_calls.WhileCall(cond, body, (torch.zeros((), dtype=torch.int64), torch.ones_like(a)),
                            None)
w = closures.walk_functions(call.functions)
print(trace_records.record_key(call, w), closures.stable_digest(
    (tuple(w.key), (call.kind, call.treedef), tuple((x.shape, x.dtype, x.device) for x in
                                                    call.leaves))))
'''


def test_keys_are_the_same_in_other_processes(backend, tmp_path):
    """Two processes (other string hashing: a set constant's order), the model file in two
    folders: the same keys."""
    import subprocess
    import sys
    out = []
    for seed, folder in (("1", "a"), ("2", "b")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "model.py").write_text(_MODULE)
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out.append(subprocess.run([sys.executable, "-c", _PROCESS, str(tmp_path / folder /
                                                                       "model.py")],
                                  env=env, capture_output=True, text=True, check=True).stdout)
    assert "None" not in out[0] and out[0] == out[1]
