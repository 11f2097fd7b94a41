"""``ppl compare`` on the command line: exit status 0 / 1 / 2 / 3, outputs, references."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from _model_files import NORMAL_MODEL, ROOT

from ppl import __main__ as cli
from ppl import _cli_compare
from ppl.comparison import BackendRun, ComparisonReport

EIGHT = "examples/eight_schools.py"
PDB_REF = os.path.join(ROOT, "..", "..", "shared", "posteriordb")


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ppl", "compare", *args], capture_output=True,
                          text=True, cwd=cwd or ROOT, timeout=900)


@pytest.mark.parametrize("args, needle", [
    (["no_such_file.py"], "no such file"),
    ([EIGHT + ":nope"], "no model function named 'nope'"),
    ([EIGHT, "--backends", "numpy,cupy"], "nknown backend"),
    ([EIGHT, "--backends", ","], "at least two result sets"),
    ([EIGHT, "--backends", "numpy"], "at least two result sets"),
    ([EIGHT, "--backends", "numpy,numpy"], "more than once"),
    ([EIGHT, "--alpha", "2"], "--alpha"),
    ([EIGHT, "--backends", "numpy", "--reference", "missing.json"], "no such file"),
])
def test_bad_input_exits_2_with_one_line(args, needle):
    proc = _cli(*args)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_reference_naming_no_model_element_exits_2(tmp_path):
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps({"mu": {"mean": 0, "sd": 1}, "theta[9]": {"mean": 0, "sd": 1}}))
    proc = _cli(EIGHT, "--backends", "numpy", "--reference", str(ref))
    assert proc.returncode == 2 and "theta[9]" in proc.stderr, proc.stderr


def test_data_that_does_not_fit_exits_2(tmp_path):
    f = tmp_path / "bad.py"
    f.write_text(NORMAL_MODEL.replace("size=20)}", "size=20)[:, None] * np.ones(3)}")
                 .replace('ppl.plate("N", y.shape[0])', 'ppl.plate("N", 4)'))
    proc = _cli(str(f), "--backends", "numpy,jax")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_help_documents_the_exit_status():
    proc = subprocess.run([sys.executable, "-m", "ppl", "compare", "--help"],
                          capture_output=True, text=True, cwd=ROOT)
    for line in ("0  the backends", "1  they do not", "2  bad input", "3  a backend failed"):
        assert line in proc.stdout


@pytest.mark.parametrize("status, expected", [("agree", 0), ("disagree", 1), ("failed", 3)])
def test_exit_status_follows_the_report(monkeypatch, tmp_path, capsys, status, expected):
    rng = np.random.default_rng(0)
    runs = [BackendRun.from_draws("numpy", {"mu": rng.standard_normal((2, 500))}),
            BackendRun.from_draws("jax", {"mu": rng.standard_normal((2, 500))
                                          + (3.0 if status == "disagree" else 0.0)})]
    if status == "failed":
        runs.append(BackendRun.failed("torch", "float32", "RuntimeError: out of memory"))
    monkeypatch.setattr(_cli_compare, "compare",
                        lambda *a, **k: ComparisonReport(runs, {"alpha": 0.01}))
    f = tmp_path / "normal.py"
    f.write_text(NORMAL_MODEL)
    assert cli.main(["compare", str(f), "--backends", "numpy,jax", "--no-progress"]) == expected
    out = capsys.readouterr().out
    if status == "failed":
        assert "torch: RuntimeError: out of memory" in out


def test_end_to_end_every_backend(tmp_path):
    """NUTS on every installed backend through the CLI, on a conjugate normal model, with the
    exact posterior as the reference."""
    f = tmp_path / "normal.py"
    f.write_text(NORMAL_MODEL)
    y = np.random.default_rng(0).normal(1.0, 1.0, size=20)
    post_var = 1.0 / (20 + 1e-2)
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps({"mu": {"mean": y.sum() * post_var, "sd": post_var ** 0.5}}))
    out = {k: tmp_path / f"r.{k}" for k in ("json", "png", "html")}
    proc = _cli(str(f), "--num-warmup", "300", "--num-samples", "500", "--num-chains", "4",
                "--reference", str(ref), "--json", str(out["json"]), "--plot",
                str(out["png"]), "--html", str(out["html"]), "--no-progress")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "AGREE" in proc.stdout and "reference" in proc.stdout
    report = json.loads(out["json"].read_text())
    assert report["status"] == "agree"
    for name, b in report["backends"].items():
        assert b["ok"], (name, b["error"])
        # torch (with another backend) runs after a warm-up run in a background process
        ahead = {"ahead"} if name == "torch" else set()
        assert set(b["timings"]) == {"compile", "warmup", "sampling", "total"} | ahead
        assert b["timings"]["sampling"] > 0
    if "torch" in report["backends"]:
        assert "torch ran last, after a warm-up run" in proc.stdout
    assert "reference" in report["sites"]["mu"]["backends"]
    assert out["png"].exists() and (tmp_path / "r-forest.png").exists()
    assert (tmp_path / "r-ess.png").exists() and out["html"].exists()
