"""Warm-up runs in background processes (``ppl.comparison._ahead``, ``ppl compare``): which
backends get one, the order the backends then run in, what the report says, the warm-up run
itself, and that none outlives the comparison."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time

import numpy as np
import pytest
from _model_files import NORMAL_MODEL, ROOT

import ppl.comparison as comparison
from ppl import _cli_compare
from ppl.comparison import BackendRun, ComparisonReport, WarmUp


class _FakeWarmUp:
    """Stands for a :class:`WarmUp`: records when it was waited for and stopped."""

    error = None

    def __init__(self, events, name, seconds):
        self.events, self.name, self.seconds = events, name, seconds

    def wait(self):
        self.events.append(("wait", self.name))
        return self.seconds

    def stop(self):
        self.events.append(("stop", self.name))


def _ended(pid: int, within: float = 5.0) -> bool:
    """Whether process ``pid`` is gone or a zombie (killed, not yet reaped by its new parent)
    within ``within`` seconds."""
    deadline = time.time() + within
    while time.time() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


def _fake_runs(monkeypatch, events, fail_on=None):
    rng = np.random.default_rng(0)

    def run_backend(name, *args, **kwargs):
        events.append(("run", name))
        if name == fail_on:
            raise KeyboardInterrupt
        return BackendRun.from_draws(name, {"mu": rng.standard_normal((2, 300))})

    monkeypatch.setattr(comparison, "run_backend", run_backend)


def test_a_warmed_up_backend_runs_last_after_its_warm_up(monkeypatch):
    events = []
    _fake_runs(monkeypatch, events)
    report = comparison.compare(lambda: None, backends=["torch", "numpy", "jax"],
                                progress_bar=False,
                                warm_ups={"torch": _FakeWarmUp(events, "torch", 12.5)})
    assert events == [("run", "numpy"), ("run", "jax"), ("wait", "torch"), ("run", "torch"),
                      ("stop", "torch")]
    runs = {r.name: r for r in report.runs}
    assert runs["torch"].timings["ahead"] == 12.5
    assert "ahead" not in runs["numpy"].timings
    assert "torch ran last, after a warm-up run in a background process (12.5 s" in str(report)


def test_warm_ups_are_stopped_when_the_comparison_is_interrupted(monkeypatch):
    events = []
    _fake_runs(monkeypatch, events, fail_on="numpy")
    with pytest.raises(KeyboardInterrupt):
        comparison.compare(lambda: None, backends=["numpy", "torch"], progress_bar=False,
                           warm_ups={"torch": _FakeWarmUp(events, "torch", 1.0)})
    assert events == [("run", "numpy"), ("stop", "torch")]


def test_report_says_when_a_warm_up_failed(tmp_path):
    rng = np.random.default_rng(1)
    runs = [BackendRun.from_draws(n, {"mu": rng.standard_normal((2, 300))}) for n in
            ("numpy", "torch")]
    runs[1].timings["ahead"] = math.nan
    report = ComparisonReport(runs, {"alpha": 0.01})
    assert "torch's warm-up run in a background process failed; torch compiled in this " \
           "process." in str(report)
    runs[1].warm_up_error = "ppl compare: warm-up on torch failed: OSError: disk full"
    assert "torch's warm-up run in a background process failed (ppl compare: warm-up on " \
           "torch failed: OSError: disk full); torch compiled" in str(report)
    page = open(report.to_html(str(tmp_path / "r.html")), encoding="utf-8").read()
    assert "warm-up run in a background process failed" in page


def _started(monkeypatch, argv):
    started = {}

    class Recorder:
        def __init__(self, name, command):
            started[name] = command

    monkeypatch.setattr(_cli_compare, "WarmUp", Recorder)
    args = _cli_compare.add_parser(__import__("argparse").ArgumentParser()
                                   .add_subparsers()).parse_args(argv)
    names = args.backends.split(",")
    return started, _cli_compare._start_warm_ups(args, names)


@pytest.mark.parametrize("argv, expected", [
    (["m.py", "--backends", "numpy,torch"], ["torch"]),
    (["m.py", "--backends", "torch,jax,numpy"], ["torch"]),
    (["m.py", "--backends", "numpy,torch", "--sequential"], []),   # asked for none
    (["m.py", "--backends", "numpy,jax"], []),                     # nobody gains from one
    (["m.py", "--backends", "torch", "--reference", "r.json"], []),  # nothing runs meanwhile
])
def test_which_backends_get_a_warm_up(monkeypatch, argv, expected):
    started, warm_ups = _started(monkeypatch, argv)
    assert sorted(started) == expected == sorted(warm_ups)


def test_the_warm_up_command_is_a_short_run_of_the_same_model_and_settings(monkeypatch):
    started, _ = _started(monkeypatch, ["m.py:other", "--backends", "numpy,torch",
                                        "--dtype", "float64", "--num-chains", "3",
                                        "--num-warmup", "1000", "--num-samples", "10",
                                        "--seed", "7"])
    command = started["torch"]
    assert command[:5] == [sys.executable, "-m", "ppl", "compare", "m.py:other"]
    options = dict(zip(command[5::2], command[6::2]))
    assert options == {"--warm-up": "torch", "--dtype": "float64", "--num-chains": "3",
                       "--num-warmup": "100", "--num-samples": "10", "--seed": "7"}
    assert command[-1] == "--no-progress"


def test_the_warm_up_run_samples_and_prints_no_report(tmp_path):
    f = tmp_path / "normal.py"
    f.write_text(NORMAL_MODEL)
    proc = subprocess.run([sys.executable, "-m", "ppl", "compare", str(f), "--warm-up", "numpy",
                           "--num-warmup", "30", "--num-samples", "10", "--num-chains", "2",
                           "--no-progress"], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    # a model that fails: status 3 (the comparison then compiles in its own process)
    f.write_text(NORMAL_MODEL.replace('mu = ppl.sample("mu", dist.Normal(0.0, 10.0))',
                                      'mu = ppl.sample("mu", dist.Normal(0.0, -1.0))'))
    proc = subprocess.run([sys.executable, "-m", "ppl", "compare", str(f), "--warm-up", "numpy",
                           "--num-warmup", "30", "--num-samples", "10", "--no-progress"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 3 and "warm-up on numpy failed" in proc.stderr, proc.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_warm_up_process_timing_failure_and_stop(tmp_path):
    t0 = time.perf_counter()
    quick = WarmUp("a", [sys.executable, "-c", "import time; time.sleep(0.3)"])
    time.sleep(3.0)                       # ended long before it is waited for
    seconds = quick.wait()
    assert 0.3 <= seconds < time.perf_counter() - t0 - 1.0   # its own duration, not until wait()
    failed = WarmUp("b", [sys.executable, "-c", "import sys; print('first', file=sys.stderr); "
                                                 "sys.exit('the reason it failed')"])
    assert math.isnan(failed.wait()) and failed.error == "the reason it failed"
    # stop() ends the warm-up's whole process group (a compiler it started included)
    pid_file = tmp_path / "grandchild"
    slow = WarmUp("c", [sys.executable, "-c",
                        "import subprocess, time, sys; "
                        f"p = subprocess.Popen(['sleep', '60']); open({str(pid_file)!r}, 'w')"
                        ".write(str(p.pid)); time.sleep(60)"])
    while not (pid_file.exists() and pid_file.read_text()):
        time.sleep(0.05)
    grandchild = int(pid_file.read_text())
    t0 = time.perf_counter()
    slow.stop()
    assert time.perf_counter() - t0 < 10 and slow._process.poll() is not None
    assert math.isnan(slow.wait())
    assert _ended(grandchild)


def test_a_warm_up_past_its_deadline_is_stopped(monkeypatch):
    from ppl.comparison import _ahead
    monkeypatch.setattr(_ahead, "WARM_UP_SECONDS", 1.0)
    hung = WarmUp("d", [sys.executable, "-c", "import time; time.sleep(60)"])
    t0 = time.perf_counter()
    assert math.isnan(hung.wait()) and "still running after 1 s" in hung.error
    assert time.perf_counter() - t0 < 15 and hung._process.poll() is not None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_sigterm_ends_the_comparison_and_its_warm_ups(tmp_path):
    """A comparison ended by SIGTERM (a timeout, CI) leaves no warm-up running."""
    f = tmp_path / "slow.py"
    f.write_text(NORMAL_MODEL + "\nimport os, time\nif '--warm-up' in os.sys.argv:\n"
                 "    open(os.environ['WARM_PID'], 'w').write(str(os.getpid()))\n"
                 "    time.sleep(60)\n")
    pid_file = tmp_path / "warm.pid"
    env = {**os.environ, "WARM_PID": str(pid_file)}
    proc = subprocess.Popen([sys.executable, "-m", "ppl", "compare", str(f), "--backends",
                             "numpy,torch", "--num-warmup", "2000", "--num-samples", "2000",
                             "--no-progress"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not (pid_file.exists() and pid_file.read_text()) and time.time() < deadline:
        time.sleep(0.1)
    warm = int(pid_file.read_text())
    proc.terminate()
    assert proc.wait(timeout=60) == 128 + 15
    assert _ended(warm)
