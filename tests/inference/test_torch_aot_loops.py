"""torch's compiled loops as AOTInductor libraries (``ppl.backends.torch.aot_loops``) and scans
lowered to loops (``ppl.backends.torch.scan_lowering``): results against NumPy, a library
checked in a separate process before use (a fault there must not reach the sampler), and the
mended C++ wrapper for a branch that returns one buffer twice."""

import os
import pickle

import numpy as np
import pytest

pytestmark = [pytest.mark.backends("torch"), pytest.mark.dtypes("float64")]


def _newton_graph(size=6):
    """A traced loop: Newton's square root of ``a`` (``size`` numbers) for 12 steps, each step
    through a condition whose true branch returns one tensor twice; and its inputs."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    def top(i, x, y, z, a):
        def cond(i, x, y, z, a):
            return i < 12

        def body(i, x, y, z, a):
            nx = 0.5 * (x + a / x)

            def same(v):      # as ops.cond's branches: each output cloned
                s = torch.zeros_like(v) + v
                return s.clone(), s.clone()

            def apart(v):
                return v.clone(), (v * 2.0).clone()

            y2, z2 = torch.ops.higher_order.cond(i < 100, same, apart, (nx,))
            return i + 1, nx.clone(), y2.clone(), z2.clone()

        return torch.ops.higher_order.while_loop(cond, body, (i, x, y, z), (a,))

    a = torch.as_tensor(np.random.default_rng(0).uniform(0.5, 40.0, size=(size,)))
    inputs = [torch.zeros((), dtype=torch.int64), torch.ones(size, dtype=torch.float64),
              torch.zeros(size, dtype=torch.float64), torch.zeros(size, dtype=torch.float64), a]
    return make_fx(top, tracing_mode="fake")(*inputs), inputs


@pytest.fixture
def cache(monkeypatch, tmp_path):
    from ppl.backends.torch import compile_worker
    monkeypatch.setattr(compile_worker, "_dir", lambda: str(tmp_path))
    return tmp_path


def _job(cache, gm, inputs):
    import torch

    from ppl.backends.torch import compile_worker
    path = cache / "test.job"
    saved = compile_worker._save_inputs(str(cache / "test.inputs.pt"), inputs)
    with open(path, "wb") as f:
        pickle.dump({"graph": compile_worker.pickled(gm), "inputs": saved,
                     "threads": torch.get_num_threads(),
                     "default_dtype": str(torch.get_default_dtype())}, f)
    return str(path)


@pytest.mark.parametrize("part", [False, True], ids=["whole", "part_of_a_storage"])
def test_job_inputs_are_not_copied(backend, cache, monkeypatch, part):
    """A job for the worker takes the first call's inputs for the library's check: written
    as they are (``torch.save``) beside the job, not cloned and pickled into it, which made
    two transient copies of the model's data in the sampler's process (77 MB of peak memory
    at N = 1e5, D = 100). Only an input that is part of a larger storage is copied (its own
    bytes, not the storage's), and the check reads back the values given."""
    import torch
    from test_torch_loops import _copied_bytes

    from ppl.backends.torch import compile_worker

    n = 1 << 17                                               # 1 MiB of float64
    gm, inputs = _newton_graph(n)
    gm = compile_worker.prepare(gm)
    if part:            # the data as rows of a larger array (a slice of the caller's)
        inputs[4] = torch.cat([inputs[4], torch.ones(n // 2, dtype=torch.float64)])[:n]
    started = []
    monkeypatch.setattr(compile_worker.subprocess, "Popen", lambda *a, **k: started.append(a))
    _, made = _copied_bytes(lambda: compile_worker.compile_elsewhere("k4", gm, inputs),
                            inputs[4].nbytes)
    assert len(started) == 1
    assert made == (inputs[4].nbytes if part else 0)
    job = cache / "k4.job"
    assert job.stat().st_size < inputs[4].nbytes / 4         # the data are not in the job
    with open(job, "rb") as f:
        saved = pickle.load(f)["inputs"]
    assert os.path.getsize(saved) < 1.25 * sum(t.nbytes for t in inputs)  # no whole storage
    for got, want in zip(torch.load(saved, weights_only=True), inputs, strict=True):
        assert torch.equal(got, want)


def test_checked_library_gives_numpy_values(backend, cache):
    """The worker compiles the loop, a separate process checks it against the graph run
    eagerly, and the library kept gives the values of Newton's method in NumPy (both outputs
    of the branch that returned one buffer twice are filled)."""
    from ppl.backends.torch import compile_worker

    gm, inputs = _newton_graph()
    gm = compile_worker.prepare(gm)
    job = _job(cache, gm, inputs)
    assert compile_worker._library(job, "k1", gm, inputs)
    assert compile_worker.checked_before("k1")
    out = compile_worker.load_compiled("k1", gm, inputs)(*[t.clone() for t in inputs])
    a = inputs[4].numpy()
    x = np.ones(6)
    for _ in range(12):
        x = 0.5 * (x + a / x)
    np.testing.assert_allclose(out[1].numpy(), x, rtol=1e-12)
    np.testing.assert_allclose(out[2].numpy(), x, rtol=1e-12)
    np.testing.assert_allclose(out[3].numpy(), x, rtol=1e-12)
    assert int(out[0]) == 12


def _nested_graph():
    """Two nested loops; the inner one's invariant input is a view of a buffer the outer body
    computes (as ``ops.while_loop`` passes a closure's tensor inside a traced loop); inputs."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    def top(i, x, a):
        def outer_cond(i, x, a):
            return i < 3

        def outer_body(i, x, a):
            b = torch.ops.aten.alias.default(a * 2.0)

            def inner_cond(j, y, b):
                return j < 4

            def inner_body(j, y, b):
                return j + 1, (y + b).clone()

            _, y = torch.ops.higher_order.while_loop(
                inner_cond, inner_body, (torch.zeros_like(i), x.clone()), (b,))
            return i + 1, y.clone()

        return torch.ops.higher_order.while_loop(outer_cond, outer_body, (i, x), (a,))

    inputs = [torch.zeros((), dtype=torch.int64), torch.zeros(5, dtype=torch.float64),
              torch.arange(5, dtype=torch.float64)]
    return make_fx(top, tracing_mode="fake")(*inputs), inputs


def test_nested_loop_library_gives_numpy_values(backend, cache):
    """The inner loop reads its invariant input at every iteration (in torch 2.13's C++
    wrapper a temporary handle, freed after its first use): 3 * 4 additions of 2a."""
    from ppl.backends.torch import compile_worker

    gm, inputs = _nested_graph()
    gm = compile_worker.prepare(gm)
    assert compile_worker._library(_job(cache, gm, inputs), "k3", gm, inputs)
    out = compile_worker.load_compiled("k3", gm, inputs)(*[t.clone() for t in inputs])
    np.testing.assert_allclose(out[1].numpy(), 24.0 * np.arange(5.0), rtol=1e-12)


def test_faulty_library_is_not_kept(backend, cache, monkeypatch):
    """Without the mended subgraph outputs the library faults when it runs (the second
    output of the branch that returned one buffer twice is empty): the check's process ends,
    the sampler's does not, no library is kept, and the reason is left for whoever looks."""
    from ppl.backends.torch import aot_loops, compile_worker

    monkeypatch.setattr(aot_loops, "_suffix", _original("codegen_subgraph_suffix"))
    gm, inputs = _newton_graph()
    gm = compile_worker.prepare(gm)
    job = _job(cache, gm, inputs)
    assert not compile_worker._library(job, "k2", gm, inputs)
    assert not (cache / "k2.so").exists()
    assert "check ended with" in (cache / "k2.aot_failed").read_text()


def _original(name):
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
    return getattr(CppWrapperCpu, name)


def _scan_graph(length):
    """A traced GARCH-like recursion ``v_t = a + b * y_t^2 + c * v_{t-1}`` as torch's scan
    operator inside a loop of two passes, stacked outputs of ``length`` rows; and inputs."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    def top(i, v0, ys, coef):
        def step(v, y, coef):
            nv = coef[0] + coef[1] * y * y + coef[2] * v
            return nv.clone(), nv.clone()

        def cond(i, v0, ys, coef):
            return i < 2

        def body(i, v0, ys, coef):
            last, stacked = torch.ops.higher_order.scan(step, [v0], [ys], (coef,))
            return i + 1, (last + stacked.sum(0) * 0.0).clone(), ys.clone()

        return torch.ops.higher_order.while_loop(cond, body, (i, v0, ys), (coef,))

    rng = np.random.default_rng(1)
    inputs = [torch.zeros((), dtype=torch.int64), torch.ones(3, dtype=torch.float64),
              torch.as_tensor(rng.standard_normal((length, 3))),
              torch.as_tensor([0.1, 0.2, 0.7], dtype=torch.float64)]
    return make_fx(top, tracing_mode="fake")(*inputs), inputs


def test_lowered_scan_matches_numpy(backend):
    """A scan inside a loop, lowered to a loop: no scan left, and the recursion NumPy gives."""
    from ppl.backends.torch.scan_lowering import has_scans, lower_scans

    gm, inputs = _scan_graph(20)
    assert has_scans(gm)
    lower_scans(gm)
    gm.recompile()
    assert not has_scans(gm)
    v = inputs[1].numpy().copy()
    ys, (a, b, c) = inputs[2].numpy(), inputs[3].numpy()
    for _ in range(2):
        for y in ys:
            v = a + b * y * y + c * v
    np.testing.assert_allclose(gm(*inputs)[1].numpy(), v, rtol=1e-12)


def test_long_scan_stays_a_scan(backend):
    """Stacked outputs above the limit: each step's copy of them would cost more than the
    scan operator, so the scan stays (and its graph is not compiled by AOTInductor)."""
    from ppl.backends.torch import aot_loops
    from ppl.backends.torch.scan_lowering import has_scans, lower_scans

    gm, _ = _scan_graph(20)
    lower_scans(gm, max_elements=20 * 3 - 1)
    assert has_scans(gm)
    assert not aot_loops.eligible(gm)


def test_loop_invariant_views_are_named_once(backend):
    """The mended ``while_loop`` code keeps an invariant input given as a temporary handle
    (a view of a buffer, freed after one use: posteriordb garch11's transition crashed at its
    second use) in a named handle made before the loop, and passes the name to the loop's
    condition and body; other inputs pass unchanged."""
    from ppl.backends.torch import aot_loops

    class Buffer:
        def __init__(self, ref):
            self.ref = ref

        def codegen_reference(self, writer=None):
            return self.ref

    class Loop:
        additional_inputs = [Buffer("RAIIAtenTensorHandle(tmp_buf9_1)"), Buffer("arg3_1")]

    class Writer:
        lines = []

        def writeline(self, line):
            self.lines.append(line)

    seen = []
    loop = Loop()
    aot_loops._while_loop(lambda self, wl, stack_output: seen.extend(
        b.codegen_reference() for b in wl.additional_inputs))(Writer(), loop)
    name = seen[0]
    assert name.startswith("ppl_invariant_") and seen[1] == "arg3_1"
    assert Writer.lines == [f"RAIIAtenTensorHandle {name}(tmp_buf9_1);"]
    assert [b.ref for b in loop.additional_inputs] == ["RAIIAtenTensorHandle(tmp_buf9_1)",
                                                       "arg3_1"]


def _handles_per_iteration(code):
    """Tensor handles a wrapper's loop bodies make at every iteration of their own loop."""
    from ppl.backends.torch.aot_hoisting import _block

    lines = code.split("\n")
    made = 0
    for start, line in enumerate(lines):
        if line.strip() == "while (1) {":
            end, depths = _block(lines, start)
            made += sum(1 for text, depth in zip(lines[start + 1:end], depths) if depth == 0 and
                        ("aoti_torch_empty_strided" in text or "assign_tensors_out" in text
                         or "reinterpret_tensor_wrapper" in text))
    return made


def test_hoisted_scan_library_gives_numpy_values(backend, cache, monkeypatch):
    """A scan lowered to a loop inside a loop, compiled with the loops' handles hoisted
    (``aot_hoisting``): fewer handles made per iteration, and NumPy's recursion."""
    from ppl.backends.torch import aot_hoisting, compile_worker
    from ppl.backends.torch.scan_lowering import lower_scans

    seen = []
    hoist = aot_hoisting.hoist
    monkeypatch.setattr(aot_hoisting, "hoist", lambda code: seen.append((code, hoist(code)))
                        or seen[-1][1])
    gm, inputs = _scan_graph(20)
    lower_scans(gm)
    gm.recompile()
    gm = compile_worker.prepare(gm)
    assert compile_worker._library(_job(cache, gm, inputs), "k6", gm, inputs)
    (before, after), = seen
    assert _handles_per_iteration(after) < _handles_per_iteration(before) / 2
    out = compile_worker.load_compiled("k6", gm, inputs)(*[t.clone() for t in inputs])
    v = inputs[1].numpy().copy()
    ys, (a, b, c) = inputs[2].numpy(), inputs[3].numpy()
    for _ in range(2):
        for y in ys:
            v = a + b * y * y + c * v
    np.testing.assert_allclose(out[1].numpy(), v, rtol=1e-12)


def test_hoisting_a_buffer_that_outlives_its_iteration_is_caught(backend, cache, monkeypatch):
    """Hoisting every buffer, the loop carry's too (moved out of its handle at the first
    iteration), breaks the library: the check in its own process catches it, and none is
    kept. The escape analysis is what keeps such buffers in the loop."""
    from ppl.backends.torch import aot_hoisting, compile_worker

    monkeypatch.setattr(aot_hoisting._Body, "local", lambda self, *args, **kwargs: True)
    gm, inputs = _newton_graph()
    gm = compile_worker.prepare(gm)
    assert not compile_worker._library(_job(cache, gm, inputs), "k7", gm, inputs)
    assert not (cache / "k7.so").exists()
