"""The comparison report as one self-contained HTML page: verdict, backends, every element,
and the plots embedded as PNG data URIs (nothing to fetch; send the one file)."""

from __future__ import annotations

import base64
import html
import io
import math

from ppl.comparison import _plots
from ppl.comparison._table import fmt, verdict_line, warm_up_notes

__all__ = ["render"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;
max-width:1400px;padding:0 16px;color:#222;line-height:1.4}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
.banner{padding:10px 14px;border-radius:6px;font-weight:600;margin:12px 0}
.agree{background:#e3f4e1;color:#1f6b1a}.disagree,.failed{background:#fbe3e2;color:#a11a17}
.notconverged{background:#fff1dc;color:#8a4b00}.unchecked{color:#777}.missing{background:#efe6f7;color:#5b2f86}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}
th{background:#f6f6f6;position:sticky;top:0}td.l,th.l{text-align:left}
th.group{text-align:center;border-left:2px solid #ccc}td.g{border-left:2px solid #ccc}
.scroll{overflow:auto;max-height:640px;border:1px solid #ddd}
img{max-width:100%;border:1px solid #eee;margin:6px 0}.muted{color:#666;font-size:13px}
code{background:#f3f3f3;padding:1px 4px;border-radius:3px}
"""


def _e(x) -> str:
    return html.escape(str(x))


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    _plots.pyplot().close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _seconds(v) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:.1f} s"


def _backends(report) -> str:
    rows = []
    for r in report.runs:
        if not r.ok:
            rows.append(f"<tr class='failed'><td class='l'>{_e(r.name)}</td><td class='l'>"
                        f"FAILED</td><td class='l' colspan='9'>{_e(r.error)}</td></tr>")
            continue
        t = r.timings
        cells = [_seconds(t["compile"]), _seconds(t["warmup"]), _seconds(t["sampling"]),
                 _seconds(t["total"]), fmt(r.min_ess, integer=True), fmt(r.ess_per_second_total),
                 fmt(r.ess_per_second),
                 fmt(r.max_r_hat), str(r.divergences)]
        rows.append(f"<tr><td class='l'>{_e(r.name)}</td><td class='l'>{_e(r.dtype)}</td>"
                    + "".join(f"<td>{c.strip()}</td>" for c in cells) + "</tr>")
    head = ("<tr><th class='l'>backend</th><th class='l'>dtype</th><th>compile</th>"
            "<th>warmup</th><th>sampling</th><th>total</th><th>min bulk ESS</th>"
            "<th>ESS/s</th><th>ESS/s (sampling)</th><th>max R-hat</th><th>divergences</th></tr>")
    return f"<table>{head}{''.join(rows)}</table>"


_COLS = (("mean", "mean"), ("sd", "sd"), ("q05", "5%"), ("q95", "95%"), ("ess_bulk", "ESS"),
         ("r_hat", "R-hat"))


def _elements(report) -> str:
    sets = report.result_sets
    group = "".join(f"<th class='group' colspan='{len(_COLS)}'>{_e(s.name)}</th>" for s in sets)
    sub = "".join("".join(f"<th{' class=g' if i == 0 else ''}>{h}</th>"
                          for i, (_, h) in enumerate(_COLS)) for _ in sets)
    rows = []
    for e in report.ordered_elements():
        values = report.values(e.site, e.index)
        cells = ""
        for s in sets:
            v = values.get(s.name, {})
            cells += "".join(f"<td{' class=g' if i == 0 else ''}>"
                             f"{fmt(v.get(k, float('nan')), integer=k == 'ess_bulk').strip()}</td>"
                             for i, (k, _) in enumerate(_COLS))
        w = e.worst
        z = f"{abs(w.z):.1f}" if w is not None and math.isfinite(w.z) else "-"
        css = e.verdict.replace(" ", "")
        rows.append(f"<tr><td class='l'>{_e(e.label)}</td><td class='l {css}'>"
                    f"{_e(e.verdict)}</td><td>{z}</td>{cells}<td class='l g'>"
                    f"{_e('; '.join(e.reasons))}</td></tr>")
    head = (f"<tr><th class='l' rowspan='2'>element</th><th class='l' rowspan='2'>verdict</th>"
            f"<th rowspan='2'>max |z|</th>{group}<th class='l group' rowspan='2'>why</th></tr>"
            f"<tr>{sub}</tr>")
    return f"<div class='scroll'><table>{head}{''.join(rows)}</table></div>"


def _method(report) -> str:
    s = report.settings
    return (
        "<p class='muted'>Every scalar element is judged on its mean, sd and 5% / 95% "
        "quantiles. For each pair of result sets the difference is divided by the combined "
        "Monte Carlo standard error (ESS-based, as ArviZ's <code>mcse</code>; Vehtari et al. "
        "2021), and the two-sided p-values of all tests are Holm-corrected together "
        f"(family-wise error rate alpha = {s.get('alpha')}). An element of a backend with "
        "R-hat &gt; 1.01, or a backend with divergences, is <em>not converged</em>: reported, "
        "not judged. A reference given as means and sds is judged on those two.</p>")


def render(report) -> str:
    """The whole page as a string."""
    s = report.settings
    status = report.status
    counts = ", ".join(f"{v} {k}" for k, v in report.counts.items() if v)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>ppl.compare: {_e(status)}</title><style>{_CSS}</style></head><body>",
        "<h1>ppl.compare report</h1>",
        f"<p class='muted'>{_e(s.get('num_chains'))} chains x {_e(s.get('num_warmup'))} warmup "
        f"+ {_e(s.get('num_samples'))} draws, {_e(s.get('dtype'))}, seed {_e(s.get('seed'))}; "
        f"result sets: {_e(', '.join(x.name for x in report.result_sets) or 'none')}</p>",
        f"<div class='banner {status.replace(' ', '')}'>{_e(verdict_line(report))}</div>",
        f"<p>{len(report.elements)} elements: {_e(counts or 'none')}.</p>",
        "<h2>Backends</h2>", _backends(report),
        "<p class='muted'>compile: model setup, tracing and compilation; ESS/s: smallest bulk "
        "ESS per second of the whole run (and of sampling alone).</p>",
        *(f"<p class='muted'>{_e(note)}</p>" for note in warm_up_notes(report)),
    ]
    if report.reference is not None:
        ref = report.reference
        unmatched = (f" Names not in the model: {_e(', '.join(ref.unmatched))}."
                     if ref.unmatched else "")
        parts.append(f"<p>Reference: <code>{_e(ref.source or ref.name)}</code>.{unmatched}</p>")
    parts += ["<h2>Elements (worst first)</h2>", _elements(report), _method(report)]
    if report.ok_runs:
        parts.append("<h2>Marginal posteriors</h2>")
        parts += [f"<img alt='marginal posteriors' src='{_png(f)}'>"
                  for f in _plots.marginal_figures(report)]
        parts += ["<h2>Forest plot</h2>",
                  f"<img alt='forest plot' src='{_png(_plots.forest_figure(report))}'>"]
    parts += ["<h2>Sampling efficiency</h2>",
              f"<img alt='ESS per second' src='{_png(_plots.ess_figure(report))}'>",
              "</body></html>"]
    return "\n".join(parts)
