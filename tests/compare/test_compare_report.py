"""ppl.compare's report: verdicts per element and statistic, convergence, references, outputs.

The verdict is checked on synthetic draws with known truth (independent draws from the same or
from shifted / rescaled normals), so it cannot pass by comparing a backend with itself.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from ppl.comparison import STATUSES, BackendRun, ComparisonReport, check_backends, load_reference
from ppl.comparison._verdict import element_label, holm

SETTINGS = {"num_warmup": 10, "num_samples": 1000, "num_chains": 4, "seed": 0,
            "dtype": "float64", "alpha": 0.01}
TIMES = {"compile": 1.0, "warmup": 2.0, "sampling": 3.0, "total": 6.5}


def _draws(seed, *, mu=0.0, mu_scale=1.0, theta_shift=None):
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((4, 1000, 3)) * 2.0
    if theta_shift is not None:
        theta = theta + np.asarray(theta_shift)
    return {"mu": rng.standard_normal((4, 1000)) * mu_scale + mu, "theta": theta}


def _report(*draws, divergences=(), reference=None, **settings):
    runs = [BackendRun.from_draws(f"b{i}", d, timings=TIMES,
                                  divergences=divergences[i] if i < len(divergences) else 0)
            for i, d in enumerate(draws)]
    return ComparisonReport(runs, {**SETTINGS, **settings}, reference=reference)


# (case, second backend's draws, disagreeing labels, statistics that must be flagged)
CASES = [
    ("identical", dict(), [], set()),
    ("mean shift", dict(mu=0.5), ["mu"], {"mean"}),
    ("sd 30% larger", dict(mu_scale=1.3), ["mu"], {"sd"}),
    ("one vector element", dict(theta_shift=[0.0, 0.0, 1.0]), ["theta[2]"], {"mean"}),
]


@pytest.mark.parametrize("case, kwargs, labels, flagged", CASES, ids=[c[0] for c in CASES])
def test_every_element_and_statistic_is_judged(case, kwargs, labels, flagged):
    report = _report(_draws(1), _draws(2, **kwargs))
    assert report.disagreements() == labels
    assert [e.label for e in report.elements] == ["mu", "theta[0]", "theta[1]", "theta[2]"]
    assert all(len(e.tests) == 4 for e in report.elements)   # mean, sd, q05, q95
    assert report.agree() is (not labels)
    assert report.status == ("disagree" if labels else "agree")
    for e in report.elements:
        bad = {t.statistic for t in e.tests if t.p_adjusted < 0.01}
        assert bad >= flagged if e.label in labels else not bad
    text = str(report)
    rows = [line for line in text.splitlines() if line.startswith(("mu ", "theta["))]
    assert len(rows) == 4 and all("agree" in r or "DISAGREE" in r for r in rows)
    if labels:   # the disagreeing element is listed first
        assert rows[0].startswith(labels[0]) and "DISAGREE" in rows[0]


def test_element_labels_and_holm():
    assert element_label("mu", (), 0) == "mu"
    assert element_label("L", (2, 3), 4) == "L[1,1]"
    p = np.array([0.04, 0.001, 0.03, 0.2])
    # Holm by hand: sorted 0.001, 0.03, 0.04, 0.2 times 4, 3, 2, 1, then running maximum
    assert np.allclose(holm(p), [0.09, 0.004, 0.09, 0.2])   # 0.08 lifted to 0.09


def test_not_converged_is_not_a_disagreement():
    stuck = _draws(2)
    stuck["mu"] = stuck["mu"] + np.array([0.0, 0.0, 0.0, 0.8])[:, None]   # one chain off
    report = _report(_draws(1), stuck)
    verdicts = {e.label: e.verdict for e in report.elements}
    assert verdicts["mu"] == "not converged" and verdicts["theta[0]"] == "agree"
    assert "R-hat" in " ".join(report.elements[0].reasons)
    assert report.disagreements() == [] and report.status == "not converged"
    assert not report.agree() and STATUSES[report.status] == 1
    diverging = _report(_draws(1), _draws(2), divergences=(0, 7))
    assert {e.verdict for e in diverging.elements} == {"not converged"}
    assert "7 divergences" in diverging.elements[0].reasons[0]
    allowed = _report(_draws(1), _draws(2), divergences=(0, 7))
    for run in allowed.runs:
        run.max_divergences = 10
    assert ComparisonReport(allowed.runs, SETTINGS).agree()


def test_failed_backend_is_named_and_the_others_still_judged():
    runs = [BackendRun.from_draws("a", _draws(1)), BackendRun.from_draws("b", _draws(2)),
            BackendRun.failed("c", "float32", "ImportError: no torch")]
    report = ComparisonReport(runs, SETTINGS)
    assert report.status == "failed" and STATUSES["failed"] == 3 and not report.agree()
    assert report.failures == {"c": "ImportError: no torch"}
    assert {e.verdict for e in report.elements} == {"agree"}
    text = str(report)
    assert "FAILED" in text and "no torch" in text
    only_one = ComparisonReport(runs[:1] + runs[2:], SETTINGS)
    assert only_one.status == "failed" and {e.verdict for e in only_one.elements} == {
        "unchecked"}


@pytest.mark.parametrize("backends, reference, match", [
    ([], False, "at least two result sets"),
    (["numpy"], False, "at least two result sets"),
    (["numpy", "numpy"], True, "more than once"),
    (["numpy", "cupy"], False, "Unknown backend"),
    ("numpy,jax", False, "list of names"),
])
def test_check_backends_rejects_vacuous_comparisons(backends, reference, match):
    with pytest.raises(ValueError, match=match):
        check_backends(backends, has_reference=reference)


def test_one_backend_and_a_reference_is_enough():
    assert check_backends(["numpy"], has_reference=True) == ["numpy"]


def _summaries(mu_mean=0.0, n_draws=1000):
    # the true posterior of _draws(): mu ~ N(0, 1), theta[j] ~ N(0, 2); 1-based Stan names
    ref = {"mu": {"mean": mu_mean, "sd": 1.0, "n_chains": 10, "n_draws": n_draws}}
    ref.update({f"theta[{j + 1}]": {"mean": 0.0, "sd": 2.0} for j in range(2)})
    return ref


@pytest.mark.parametrize("mu_mean, labels", [(0.0, []), (0.3, ["mu"])])
def test_reference_summaries_are_a_column_and_judged(mu_mean, labels):
    report = _report(_draws(1), reference=load_reference(_summaries(mu_mean)))
    assert report.disagreements() == labels
    assert report.values("theta", 1)["reference"]["sd"] == 2.0
    verdicts = {e.label: e.verdict for e in report.elements}
    assert verdicts["theta[2]"] == "unchecked"    # the reference stops at theta[2] (1-based)
    assert "reference" in str(report)


def test_reference_files_and_forms(tmp_path):
    path = tmp_path / "ref.json"
    path.write_text(json.dumps(_summaries()))
    assert _report(_draws(1), _draws(2), reference=load_reference(str(path))).agree()
    rng = np.random.default_rng(9)
    chains = [{"mu": rng.standard_normal(1000).tolist(),
               "theta[1]": (2 * rng.standard_normal(1000)).tolist()} for _ in range(4)]
    report = _report(_draws(1), reference=load_reference(chains))
    assert report.disagreements() == []
    assert len([t for t in report.elements[0].tests]) == 4   # draws: every statistic judged
    npz = tmp_path / "ref.npz"
    np.savez(npz, **_draws(5))
    assert _report(_draws(1), reference=load_reference(str(npz))).agree()
    bound = load_reference({"nope[3]": {"mean": 0, "sd": 1}}).bind({"mu": ()})
    assert bound.unmatched == ["nope[3]"]
    for bad, match in [({"mu": {"mean": 1.0}}, "'mean' and 'sd'"),
                       ({"theta[0]": {"mean": 0, "sd": 1}}, "1-based"),
                       (str(tmp_path / "missing.json"), "no such file"), (3, "expected")]:
        with pytest.raises(ValueError, match=match):
            load_reference(bad)


def test_reference_with_two_backends_agrees():
    ref = load_reference(_summaries())
    report = _report(_draws(1), _draws(2), reference=ref)
    assert report.agree(), str(report)
    assert [s.name for s in report.result_sets] == ["b0", "b1", "reference"]


def test_long_tables_are_summarised_on_the_terminal():
    rng = np.random.default_rng(0)
    a = {"z": rng.standard_normal((4, 500, 60))}
    b = {"z": rng.standard_normal((4, 500, 60)) + np.where(np.arange(60) == 17, 1.0, 0.0)}
    report = _report(a, b)
    short, full = str(report), report.table(full=True)
    assert report.disagreements() == ["z[17]"]
    assert "of 60 elements shown" in short and len(short.splitlines()) < 30
    assert len(full.splitlines()) > 60
    assert short.splitlines()[short.splitlines().index(next(
        line for line in short.splitlines() if line.startswith("-" * 20 + "-"))) + 1] \
        .startswith("z[17]") or "z[17]" in short


def test_backend_table_splits_wall_time_and_shows_ess_per_second():
    report = _report(_draws(1), _draws(2))
    line = next(x for x in str(report).splitlines() if x.startswith("b0 "))
    assert re.search(r"1\.0 s\s+2\.0 s\s+3\.0 s\s+6\.5 s", line)
    run = report.runs[0]
    assert run.ess_per_second == pytest.approx(run.min_ess / 3.0)
    assert run.ess_per_second_total == pytest.approx(run.min_ess / 6.5)
    # the terminal shows ESS/s of the whole run first, then of sampling alone
    whole, sampling = (float(x) for x in line.split()[-4:-2])
    assert whole == pytest.approx(run.min_ess / 6.5, rel=1e-2)
    assert sampling == pytest.approx(run.min_ess / 3.0, rel=1e-2)


def test_json_html_and_plots(tmp_path):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(0)
    a = {"mu": rng.standard_normal((2, 300)), "z": rng.standard_normal((2, 300, 55))}
    b = {"mu": rng.standard_normal((2, 300)) * 1.5, "z": rng.standard_normal((2, 300, 55))}
    report = _report(a, b, reference=load_reference({"mu": {"mean": 0.0, "sd": 1.0}}))
    d = json.loads(open(report.to_json(str(tmp_path / "r.json"))).read())
    assert d["status"] == "disagree" and d["disagreements"] == ["mu"]
    assert len(d["elements"]) == 56 and d["counts"]["disagree"] == 1
    assert d["backends"]["b0"]["timings"]["sampling"] == 3.0
    assert d["sites"]["z"]["shape"] == [55]
    page = open(report.to_html(str(tmp_path / "r.html")), encoding="utf-8").read()
    for needle in ("Backends", "Elements", "Marginal posteriors", "Forest plot",
                   "Sampling efficiency", "DISAGREE"):
        assert needle in page
    assert page.count("data:image/png;base64,") == 4          # 2 marginal pages + 2
    assert not re.search(r"(src|href)=['\"]https?:", page)    # self-contained
    paths = report.plot(str(tmp_path / "m.png"))
    assert [p.rsplit("/", 1)[1] for p in paths] == ["m.png", "m-2.png"]   # 56 > 48 panels
    for p in paths + [report.plot_forest(str(tmp_path / "f.png")),
                      report.plot_ess(str(tmp_path / "e.png"))]:
        with open(p, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
