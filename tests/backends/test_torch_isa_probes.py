"""The instruction-set probes of a first compile run in a background thread started with the
torch backend (``ppl.backends.torch.loop_graphs.start_probes``): on a cold inductor cache the
thread runs and leaves its markers, and the loop settings wait for it; on a cache that has seen
the probes no thread starts; with compiled loops switched off none starts either."""

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="g++")

_PROGRAM = textwrap.dedent("""
    import threading
    import ppl
    from ppl.backends.torch import loop_graphs
    ppl.set_backend("torch")
    ppl.ops.backend()                         # made at its first use
    probing = [t.name for t in threading.enumerate() if t.name == "ppl-isa-probes"]
    config = loop_graphs.loop_config()       # waits for the probes
    import os
    print(probing, config["cpp.vec_isa_ok"],
          sorted(f for f in os.listdir(loop_graphs.cache_folder())
                 if f.startswith(("isa_probed", "vec_isa_"))))
""")


def _run(cache, loop_after="20"):
    # the test session switches compiled loops off (conftest): on here, as by default
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache), "PPL_TORCH_LOOP_AFTER": loop_after}
    proc = subprocess.run([sys.executable, "-c", _PROGRAM], capture_output=True, text=True,
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
