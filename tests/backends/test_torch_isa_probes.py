"""The instruction-set probes of a first compile run in a background thread started at a
loop's first call on torch (``ppl.backends.torch.loop_graphs.start_probes``): on a cold
inductor cache the thread runs and leaves its markers, and the loop settings wait for it; on a
cache that has seen the probes no thread starts; with compiled loops switched off none starts
either; a probe that fails (a Ctrl-C reaches g++ too) leaves no marker."""

import os
import platform
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "AMD64"),
    reason="x86 vector instruction sets, g++")

_PROGRAM = textwrap.dedent("""
    import threading
    import ppl
    from ppl.backends.torch import loop_graphs
    ppl.set_backend("torch")
    ppl.ops.while_loop(lambda c: c < 3, lambda c: c + 1, ppl.ops.asarray(0.0))  # a first loop
    probing = [t.name for t in threading.enumerate() if t.name == "ppl-isa-probes"]
    config = loop_graphs.loop_config()       # waits for the probes
    import os
    print(probing, config["cpp.vec_isa_ok"],
          sorted(f for f in os.listdir(loop_graphs.cache_folder())
                 if f.startswith(("isa_probed", "vec_isa_"))))
""")


def _run(cache, loop_after="20", program=_PROGRAM):
    # the test session switches compiled loops off (conftest): on here, as by default
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache), "PPL_TORCH_LOOP_AFTER": loop_after}
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_probes_run_once_per_cache_in_the_background(tmp_path):
    first = _run(tmp_path)
    assert first.startswith("['ppl-isa-probes']"), first
    assert "isa_probed" in first and "vec_isa_" in first
    again = _run(tmp_path)
    assert again.startswith("[] "), again              # the cache has seen them
    assert again.split(" ", 1)[1] == first.split(" ", 1)[1]   # the same settings and markers


def test_no_probes_without_compiled_loops(tmp_path):
    out = _run(tmp_path, loop_after="0")
    assert out.startswith("[] "), out


def test_a_failed_probe_leaves_no_marker(tmp_path):
    failing = textwrap.dedent("""
        import os
        from torch._inductor import cpu_vec_isa
        from ppl.backends.torch import loop_graphs
        cpu_vec_isa.VecISA.check_build = lambda self, code: False   # as when g++ is killed
        loop_graphs._probe()
        print(loop_graphs._vec_isa_ok(), sorted(os.listdir(loop_graphs.cache_folder())))
    """)
    assert _run(tmp_path, program=failing) == "None []"
    # the next process probes again, and passes
    assert "isa_probed" in _run(tmp_path)
