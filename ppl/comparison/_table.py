"""The comparison report as aligned text: a table of backends (timings, ESS/s, divergences) and a
table of elements (one row per element, a column group per result set, a verdict column).

Long element tables are summarised (``full=False``, what ``print(report)`` shows): the
elements that are not in agreement, the closest calls among the others, and the totals.
"""

from __future__ import annotations

import math

__all__ = ["render", "fmt", "verdict_line"]

_SUMMARY_ROWS = 25        # print every element up to this many
_WORST_AGREEING = 5       # in a summary, the agreeing elements closest to the threshold
_MAX_FLAGGED = 30         # in a summary, at most this many flagged elements


def fmt(v: float, width: int = 9, *, integer: bool = False) -> str:
    """A number in ``width`` characters, with as many decimals as its size allows."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return f"{'-':>{width}}"
    if integer:
        return f"{v:>{width}.0f}"
    a = abs(v)
    if a != 0 and (a >= 1e5 or a < 1e-3):
        s = f"{v:.2e}"
    elif a >= 1000:
        s = f"{v:.0f}"
    elif a >= 100:
        s = f"{v:.1f}"
    elif a >= 10:
        s = f"{v:.2f}"
    else:
        s = f"{v:.3f}"
    return f"{s:>{width}}"


def _seconds(v: float) -> str:
    return f"{'-':>9}" if not math.isfinite(v) else f"{v:>7.1f} s"


def _backend_table(report) -> list[str]:
    head = (f"{'backend':<12}{'status':<8}{'compile':>9}{'warmup':>9}{'sampling':>9}"
            f"{'total':>9}{'min ESS':>9}{'ESS/s':>9}{'(sampl.)':>9}{'max R-hat':>10}"
            f"{'divergences':>12}")
    lines = [head, "-" * len(head)]
    for r in report.runs:
        if not r.ok:
            lines.append(f"{r.name:<12}{'FAILED':<8}{r.error}")
            continue
        t = r.timings
        lines.append(f"{r.name:<12}{'ok':<8}{_seconds(t['compile'])}{_seconds(t['warmup'])}"
                     f"{_seconds(t['sampling'])}{_seconds(t['total'])}"
                     f"{fmt(r.min_ess, 9, integer=True)}{fmt(r.ess_per_second_total, 9)}"
                     f"{fmt(r.ess_per_second, 9)}"
                     f"{fmt(r.max_r_hat, 10)}"
                     f"{r.divergences:>12d}")
    lines.append("ESS/s: smallest bulk ESS per second of the whole run (sampl.: of sampling "
                 "alone); compile includes model setup and tracing.")
    lines.extend(warm_up_notes(report))
    return lines


def warm_up_notes(report) -> list[str]:
    """A line per backend that ran after a warm-up in a background process
    (:mod:`~ppl.comparison._ahead`): how long it took, and that the others shared the CPU."""
    notes = []
    for r in report.runs:
        seconds = r.timings.get("ahead")
        if seconds is None:
            continue
        if math.isfinite(seconds):
            notes.append(f"{r.name} ran last, after a warm-up run in a background process "
                         f"({seconds:.1f} s, while the backends above ran and shared the CPU "
                         f"with it); its compile is what the warm-up left to do. "
                         f"(ppl compare --sequential runs without warm-ups.)")
        else:
            why = f" ({r.warm_up_error})" if r.warm_up_error else ""
            notes.append(f"{r.name}'s warm-up run in a background process failed{why}; "
                         f"{r.name} compiled in this process.")
    return notes


def _columns(report):
    """``(set name, [(statistic key, header)])`` per column group."""
    groups = []
    for s in report.result_sets:
        if s in report.ok_runs:
            groups.append((s.name, [("mean", "mean"), ("sd", "sd"), ("ess_bulk", "ESS"),
                                    ("r_hat", "R-hat")]))
        else:
            groups.append((s.name, [("mean", "mean"), ("sd", "sd")]))
    return groups


def _element_rows(report, elements, label_w) -> list[str]:
    groups = _columns(report)
    cw = 9
    top = " " * label_w + "".join(
        "|" + f" {name} ".center(cw * len(cols), "-") for name, cols in groups) + "|"
    head = f"{'element':<{label_w}}" + "".join(
        "|" + "".join(f"{h:>{cw}}" for _, h in cols) for _, cols in groups) \
        + f"| {'verdict':<14}{'max|z|':>7}  why"
    lines = [top, head, "-" * len(head)]
    for e in elements:
        values = report.values(e.site, e.index)
        cells = ""
        for name, cols in groups:
            v = values.get(name, {})
            cells += "|" + "".join(fmt(v.get(k, float("nan")), cw, integer=k == "ess_bulk")
                             for k, _ in cols)
        w = e.worst
        z = f"{abs(w.z):>7.1f}" if w is not None and math.isfinite(w.z) else f"{'-':>7}"
        verdict = e.verdict.upper() if e.verdict in ("disagree", "missing") else e.verdict
        why = "; ".join(e.reasons[:3]) + (" ..." if len(e.reasons) > 3 else "")
        lines.append(f"{e.label:<{label_w}}{cells}| {verdict:<14}{z}  {why}".rstrip())
    return lines


def verdict_line(report) -> str:
    """One line: the overall outcome and what it rests on."""
    status, counts = report.status, report.counts
    if status == "failed":
        if report.failures:
            named = "; ".join(f"{k}: {v}" for k, v in report.failures.items())
            others = ", ".join(f"{v} {k}" for k, v in counts.items() if v)
            return f"FAILED: a backend did not run ({named})." + (
                f" Among the others: {others}." if others else "")
        return "FAILED: fewer than two result sets ran; nothing to compare."
    if status == "disagree":
        labels = report.disagreements()
        shown = ", ".join(labels[:8]) + (", ..." if len(labels) > 8 else "")
        missing = f"; {counts['missing']} missing on some backend" if counts["missing"] else ""
        return f"DISAGREE: {len(labels)} element(s) differ beyond Monte Carlo error " \
               f"({shown}){missing}."
    if status == "not converged":
        return (f"NOT CONVERGED: {counts['not converged']} element(s) did not converge on some "
                f"backend (R-hat > 1.01 or divergences), so agreement cannot be confirmed; the "
                f"converged results agree.")
    unchecked = (f" ({counts['unchecked']} element(s) could not be compared: held by one "
                 f"result set only, or constant)" if counts["unchecked"] else "")
    return ("AGREE: every element compared agrees within Monte Carlo error on the mean, sd and "
            f"5%/95% quantiles{unchecked}.")


def render(report, *, full: bool) -> str:
    s = report.settings
    n_tests = sum(1 for e in report.elements for t in e.tests if t.judged)
    lines = [f"ppl.compare: {s.get('num_chains')} chains x {s.get('num_warmup')} warmup + "
             f"{s.get('num_samples')} draws, {s.get('dtype')}, seed {s.get('seed')}", ""]
    lines += _backend_table(report)
    if report.reference is not None:
        ref = report.reference
        lines.append(f"reference: {ref.source or ref.name}"
                     + (f" ({len(ref.unmatched)} names not in the model: "
                        f"{', '.join(ref.unmatched[:5])})" if ref.unmatched else ""))
    elements = report.ordered_elements()
    if elements:
        shown = elements
        note = ""
        if not full and len(elements) > _SUMMARY_ROWS:
            flagged = [e for e in elements if e.verdict != "agree"]
            agreeing = [e for e in elements if e.verdict == "agree"]
            shown = flagged[:_MAX_FLAGGED] + agreeing[:_WORST_AGREEING]
            note = (f"{len(shown)} of {len(elements)} elements shown (those not in agreement, "
                    f"then the closest calls); the full table: report.table(), --json, --html.")
        label_w = max(12, max(len(e.label) for e in shown) + 2)
        lines += [""] + _element_rows(report, shown, label_w)
        if note:
            lines.append(note)
    c = report.counts
    lines += ["", f"{len(report.elements)} elements, {n_tests} tests (mean, sd, q05, q95 per "
                  f"pair; Holm-corrected, alpha {s.get('alpha')}): "
                  + ", ".join(f"{v} {k}" for k, v in c.items() if v), verdict_line(report)]
    return "\n".join(lines)
