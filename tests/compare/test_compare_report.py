"""ppl.compare's report and the `ppl compare` command line.

The agreement verdict is checked on synthetic draws with known truth (independent draws from
the same or from shifted normals), so it cannot pass by comparing a backend with itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ppl.comparison import BackendRun, ComparisonReport, _site_stats

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(name, draws, error=None):
    run = BackendRun(name, "float64")
    if error:
        run.error = error
        return run
    run.samples = draws
    run.stats = {k: _site_stats(v) for k, v in draws.items()}
    run.wall_time = 2.0
    return run


def _draws(seed, shift=0.0):
    rng = np.random.default_rng(seed)
    return {"mu": rng.standard_normal((4, 1000)) + shift,
            "theta": rng.standard_normal((4, 1000, 3)) * 2.0}


SETTINGS = {"num_warmup": 10, "num_samples": 1000, "num_chains": 4, "seed": 0,
            "dtype": "float64", "alpha": 0.01}


@pytest.mark.parametrize("shift, agree", [(0.0, True), (0.5, False)])
def test_verdict_detects_a_shifted_mean(shift, agree):
    report = ComparisonReport([_run("a", _draws(1)), _run("b", _draws(2, shift))], SETTINGS)
    assert report.verdicts["theta"]["agree"]
    assert report.verdicts["mu"]["agree"] is agree
    assert report.agree() is agree
    text = str(report)
    assert "mu" in text and "theta[2]" in text
    assert ("DIFFER" in text) is (not agree)


def test_false_alarm_rate_is_controlled():
    # 40 comparisons of identical distributions: the Bonferroni-corrected test at alpha=0.01
    # should flag at most a couple by chance.
    flagged = sum(not ComparisonReport([_run("a", _draws(2 * s)), _run("b", _draws(2 * s + 1))],
                                       SETTINGS).agree() for s in range(40))
    assert flagged <= 2


def test_failed_backend_is_reported_and_others_still_compared():
    report = ComparisonReport([_run("a", _draws(1)), _run("b", _draws(2)),
                               _run("c", None, error="ImportError: no torch")], SETTINGS)
    text = str(report)
    assert "FAILED" in text and "no torch" in text
    assert report.verdicts["mu"]["agree"]
    assert not report.agree()
    d = report.to_dict()
    assert d["backends"]["c"]["ok"] is False and "no torch" in d["backends"]["c"]["error"]
    json.dumps(d)


def test_to_dict_is_json_and_plot_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    report = ComparisonReport([_run("a", _draws(1)), _run("b", _draws(2))], SETTINGS)
    d = json.loads(json.dumps(report.to_dict()))
    assert set(d["sites"]) == {"mu", "theta"}
    assert d["sites"]["theta"]["shape"] == [3]
    assert len(d["sites"]["theta"]["backends"]["a"]["mean"]) == 3
    out = report.plot(str(tmp_path / "c.png"))
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ppl", "compare", *args], capture_output=True,
                          text=True, cwd=cwd or ROOT, timeout=600)


@pytest.mark.parametrize("args, needle", [
    (["no_such_file.py"], "no such file"),
    (["examples/eight_schools.py:nope"], "no model function named 'nope'"),
    (["examples/eight_schools.py", "--backends", "numpy,cupy"], "unknown backend"),
])
def test_cli_bad_input_exits_2_with_one_line(args, needle):
    proc = _cli(*args)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_cli_data_that_does_not_fit_exits_2(tmp_path):
    f = tmp_path / "bad.py"
    f.write_text(textwrap.dedent("""
        import ppl, ppl.distributions as dist
        def model(y):
            mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
            with ppl.plate("N", 3):
                ppl.sample("y", dist.Normal(mu, 1.0), obs=y)
        def data():
            return {"y": [1.0, 2.0, 3.0, 4.0]}
    """))
    proc = _cli(str(f))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_end_to_end_every_backend(tmp_path):
    """NUTS on every installed backend through the CLI, on a conjugate normal model."""
    f = tmp_path / "normal.py"
    f.write_text(textwrap.dedent("""
        import numpy as np
        import ppl, ppl.distributions as dist
        def model(y):
            mu = ppl.sample("mu", dist.Normal(0.0, 10.0))
            with ppl.plate("N", y.shape[0]):
                ppl.sample("y", dist.Normal(mu, 1.0), obs=y)
        def data():
            return {"y": np.random.default_rng(0).normal(1.0, 1.0, size=20)}
    """))
    out_json, out_png = tmp_path / "r.json", tmp_path / "r.png"
    proc = _cli(str(f), "--num-warmup", "200", "--num-samples", "300", "--num-chains", "2",
                "--json", str(out_json), "--plot", str(out_png), "--no-progress")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out_json.read_text())
    y = np.random.default_rng(0).normal(1.0, 1.0, size=20)
    post_mean = y.sum() / (20 + 1e-2)
    for name, b in report["backends"].items():
        assert b["ok"], (name, b["error"])
        mean = report["sites"]["mu"]["backends"][name]["mean"][0]
        mcse = report["sites"]["mu"]["backends"][name]["mcse"][0]
        assert abs(mean - post_mean) < 5 * mcse + 1e-3, (name, mean, post_mean)
    assert out_png.exists()
