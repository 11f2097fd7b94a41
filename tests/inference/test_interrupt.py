"""Ctrl-C, for real: SIGINT sent to a child process during warmup and during sampling, on every
backend and chain method. The draws made so far stay on the MCMC object, ``mcmc.interrupted`` is
set, the ``KeyboardInterrupt`` reaches the caller after a one-line note, and without draws the
results raise an error naming the warmup iteration. The CLI exits with status 130."""

import json
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

CHILD = Path(__file__).with_name("_interrupt_child.py")
CASES = [(m, p) for m in ("vectorized", "sequential", "parallel") for p in ("warmup", "sample")]
PROGRESS = re.compile(r"(\S+ \[)?[^\n]*? (\d+)/(\d+) \(")


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class _Child:
    """A child process whose stderr lines arrive on a queue (read by a thread)."""

    def __init__(self, args, env=None):
        # a shell starts background jobs with SIGINT ignored, and the child would inherit that
        # (Python then installs no KeyboardInterrupt handler): restore the default in the child
        self.proc = subprocess.Popen([sys.executable, *args], stderr=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env,
                                     preexec_fn=_default_sigint)
        self.lines, self.seen = queue.Queue(), []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, test, timeout=300):
        while True:
            line = self.lines.get(timeout=timeout)
            if line is None:
                raise AssertionError("child ended early:\n" + "\n".join(self.seen[-30:]))
            self.seen.append(line)
            if test(line):
                return line

    def interrupt(self):
        self.proc.send_signal(signal.SIGINT)


def _in_phase(phase):
    """Whether a progress line shows the run in ``phase`` (threads share a bar that does not
    show the phase: there, the count tells; 2 chains, 20 warmup iterations each)."""

    def test(line):
        m = PROGRESS.match(line)
        if not m or int(m.group(2)) == 0:
            return False
        if "[" in line:
            return line.startswith(phase + " [")
        return phase == "warmup" or int(m.group(2)) > 2 * 300

    return test


@pytest.mark.parametrize("name", ["numpy", "jax", "torch"])
def test_sigint_during_warmup_and_sampling(name):
    import ppl
    if name not in ppl.available_backends():
        pytest.skip(f"{name} is not installed")
    child = _Child([str(CHILD), name] + [f"{m},{p}" for m, p in CASES])
    try:
        for i, (method, phase) in enumerate(CASES):
            child.wait_for(lambda line, i=i: line == f"START {i}")
            child.wait_for(_in_phase(phase))
            child.interrupt()
            note = child.wait_for(lambda line: line.startswith("ppl: MCMC interrupted"))
            result = json.loads(child.wait_for(
                lambda line, i=i: line.startswith(f"RESULT {i} ")).split(" ", 2)[2])
            where = f"{name}, {method}, {phase}: {note}"
            assert result.get("interrupted") is True, (where, result)
            if phase == "warmup":
                assert "during warmup at iteration" in note and "of 1000000" in note, where
                for method_name in ("get_samples", "summary", "to_arviz"):
                    assert re.search(r"No draws: .*during warmup at iteration \d+ of 1000000",
                                     result[method_name]), (where, result)
            else:
                assert "at sampling iteration" in note, where
                chains, draws, dim = result["shape"]
                assert dim == 3 and 1 <= chains <= 2 and 0 < draws < 10**6, (where, result)
                assert "interrupted at sampling iteration" in result["attrs"], (where, result)
                assert "summary" not in result and "to_arviz" not in result, (where, result)
        assert child.proc.wait(timeout=120) == 0
    finally:
        if child.proc.poll() is None:
            child.proc.kill()


MODEL_FILE = '''
import ppl, ppl.distributions as dist

def model(y=None):
    mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
    ppl.sample("y", dist.Normal(mu, 1.0), obs=y)

def data():
    return {"y": 0.5}
'''


def test_cli_exit_status_130(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(MODEL_FILE)
    import ppl
    backends = ",".join(ppl.available_backends()[:2])
    # the CLI's main, with a progress line every few iterations (to know warmup has started)
    code = ("import sys; from ppl.inference.progress import Progress; Progress.LINES = 10**5; "
            "from ppl.__main__ import main; sys.exit(main(sys.argv[1:]))")
    child = _Child(["-c", code, "compare", str(path), "--backends", backends,
                    "--num-warmup", "1000000", "--num-chains", "1"])
    try:
        child.wait_for(_in_phase("warmup"))
        child.interrupt()
        assert child.proc.wait(timeout=120) == 130, "\n".join(child.seen[-20:])
    finally:
        if child.proc.poll() is None:
            child.proc.kill()
