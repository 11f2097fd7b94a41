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
