""":class:`ComparisonReport`: the verdicts of a comparison and its outputs (text, JSON, HTML,
plots)."""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

import numpy as np

from ppl.comparison import _html, _plots, _table
from ppl.comparison._mcse import STATISTICS
from ppl.comparison._verdict import VERDICTS, ElementVerdict, judge

__all__ = ["ComparisonReport", "STATUSES"]

#: overall outcomes and the CLI's exit status for each
STATUSES = {"agree": 0, "disagree": 1, "not converged": 1, "failed": 3}


def _clean(x):
    """JSON-ready: NumPy scalars to Python, NaN/inf to ``None``."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, np.ndarray):
        return _clean(x.tolist())
    if isinstance(x, (np.floating, float)):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


class ComparisonReport:
    """The result of :func:`ppl.compare`: the runs, the reference, and a verdict per element.

    Parameters
    ----------
    runs
        One :class:`~ppl.comparison.BackendRun` per requested backend (failed ones included).
    settings
        The sampler settings and ``alpha`` (the family-wise error rate of the verdict).
    reference
        A :class:`~ppl.comparison._reference.Reference` or ``None``.

    Attributes
    ----------
    elements
        :class:`~ppl.comparison._verdict.ElementVerdict` per scalar element, in model order.
    """

    def __init__(self, runs, settings: dict[str, Any], reference=None):
        self.runs = list(runs)
        self.settings = dict(settings)
        self.settings.setdefault("alpha", 0.01)
        self.reference = reference
        self.sites = self._site_shapes()
        if reference is not None:
            reference.bind(self.sites)
        self.result_sets = self.ok_runs + ([reference] if reference is not None else [])
        self.elements: list[ElementVerdict] = judge(self.result_sets, self.sites,
                                                    self.settings["alpha"])

    # ------------------------------------------------------------------ analysis
    @property
    def ok_runs(self):
        return [r for r in self.runs if r.ok]

    @property
    def failures(self) -> dict[str, str]:
        """``backend -> reason`` of every backend that failed to run."""
        return {r.name: r.error for r in self.runs if not r.ok}

    def _site_shapes(self) -> dict[str, tuple]:
        shapes: dict[str, tuple] = {}
        for run in self.ok_runs:
            for site, draws in run.samples.items():
                shapes.setdefault(site, tuple(draws.shape[2:]))
        return shapes

    @property
    def counts(self) -> dict[str, int]:
        """How many elements got each verdict."""
        c = Counter(e.verdict for e in self.elements)
        return {v: c.get(v, 0) for v in VERDICTS}

    @property
    def status(self) -> str:
        """``"failed"`` (a backend failed, or fewer than two result sets ran), ``"disagree"``
        (some element differs, or is missing on a backend), ``"not converged"``, or
        ``"agree"``."""
        if self.failures or len(self.result_sets) < 2:
            return "failed"
        counts = self.counts
        if counts["disagree"] or counts["missing"]:
            return "disagree"
        return "not converged" if counts["not converged"] else "agree"

    def agree(self) -> bool:
        """Whether every backend ran and converged and every element agrees, on every judged
        statistic, across backends (and with the reference)."""
        return self.status == "agree"

    def disagreements(self) -> list[str]:
        """Labels (``"mu"``, ``"theta[3]"``, 0-based) of the elements that disagree on any
        judged statistic, most significant first."""
        bad = [e for e in self.elements if e.verdict == "disagree"]
        return [e.label for e in sorted(bad, key=lambda e: e.worst.p_adjusted)]

    def ordered_elements(self) -> list[ElementVerdict]:
        """Every element, the worst first: disagreeing (most significant first), missing, not
        converged, unchecked, then agreeing ones by decreasing |z|."""
        rank = {v: i for i, v in enumerate(VERDICTS)}

        def key(e):
            w = e.worst
            return (rank[e.verdict], w.p if w else 1.0, -abs(w.z) if w else 0.0)

        return sorted(self.elements, key=key)

    def values(self, site: str, index: int) -> dict[str, dict[str, float]]:
        """``result set -> statistic -> value`` for one element (NaN where absent)."""
        out = {}
        for s in self.result_sets:
            st = s.stats.get(site)
            if st is not None and index < st["mean"].size:
                out[s.name] = {k: float(v[index]) for k, v in st.items()}
        return out

    # ------------------------------------------------------------------ outputs
    def to_dict(self) -> dict[str, Any]:
        """Everything, JSON-ready (NaN as ``None``): settings, status, per-backend runs
        (timings, ESS, divergences, failures), the reference, and per element its verdict,
        reasons, values of every result set and every test."""
        backends = {r.name: {
            "ok": r.ok, "error": r.error, "dtype": r.dtype, "timings": r.timings,
            "warm_up_error": r.warm_up_error,
            "wall_time": r.wall_time if r.ok else None,
            "divergences": r.divergences if r.ok else None,
            "min_ess_bulk": r.min_ess if r.ok else None,
            "max_r_hat": r.max_r_hat if r.ok else None,
            "ess_per_second": r.ess_per_second if r.ok else None,
            "ess_per_second_total": r.ess_per_second_total if r.ok else None}
            for r in self.runs}
        ref = None if self.reference is None else {
            "name": self.reference.name, "source": self.reference.source,
            "unmatched": self.reference.unmatched}
        elements = [{"label": e.label, "site": e.site, "index": e.index, "verdict": e.verdict,
                     "reasons": list(e.reasons), "values": self.values(e.site, e.index),
                     "tests": [t._asdict() for t in e.tests]} for e in self.elements]
        sites = {site: {"shape": list(shape),
                        "backends": {s.name: {k: v for k, v in s.stats[site].items()}
                                     for s in self.result_sets if site in s.stats}}
                 for site, shape in self.sites.items()}
        return _clean({"settings": self.settings, "status": self.status, "agree": self.agree(),
                       "statistics": list(STATISTICS), "counts": self.counts,
                       "disagreements": self.disagreements(), "failures": self.failures,
                       "backends": backends, "reference": ref, "elements": elements,
                       "sites": sites})

    def to_json(self, path: str) -> str:
        """Write :meth:`to_dict` as JSON to ``path``; returns ``path``."""
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=1)
        return path

    def to_html(self, path: str) -> str:
        """Write one self-contained HTML page (tables and embedded plots) to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(_html.render(self))
        return path

    def table(self, *, full: bool = True) -> str:
        """The report as text: every element (``full=True``) or the terminal summary."""
        return _table.render(self, full=full)

    def __str__(self) -> str:
        return _table.render(self, full=False)

    def __repr__(self) -> str:
        return (f"<ComparisonReport backends={[r.name for r in self.runs]} "
                f"status={self.status!r} elements={len(self.elements)}>")

    def plot(self, path: str, *, max_panels: int = 48) -> list[str]:
        """Marginal posteriors of every element, each result set overlaid, disagreeing panels
        framed in red (not converged: orange). More than ``max_panels`` elements go on further
        pages ``NAME-2.png``, ``NAME-3.png``, ...; returns the paths written."""
        return _plots.marginals(self, path, max_panels=max_panels)

    def plot_forest(self, path: str) -> str:
        """Forest plot: mean +- 2 sd per element and result set, a panel per site."""
        return _plots.forest(self, path)

    def plot_ess(self, path: str) -> str:
        """Bar chart of ESS per second (sampling, and whole run) per backend."""
        return _plots.ess_bars(self, path)
