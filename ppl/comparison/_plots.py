"""Plots of a comparison (matplotlib, imported on first use): marginal posteriors of every
element (paged), a forest plot, and ESS per second per backend.

Each ``*_figures`` function returns matplotlib figures (the HTML page embeds them); the
functions without the suffix write PNG files.
"""

from __future__ import annotations

import math
import os

import numpy as np

from ppl.comparison._mcse import STATISTICS

__all__ = ["marginals", "forest", "ess_bars", "marginal_figures", "forest_figure",
           "ess_figure", "pyplot"]

#: frame colour of a panel by verdict (agreeing panels keep the default frame)
MARK = {"disagree": "#d62728", "missing": "#9467bd", "not converged": "#ff7f0e"}
_KDE_DRAWS = 2000
_FOREST_MAX = 150


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend, or an ImportError saying what to install."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError('ppl.compare plots need matplotlib: pip install "ppl[plot]"') from err
    return plt


def _colors(report):
    cycle = pyplot().rcParams["axes.prop_cycle"].by_key()["color"]
    names = [s.name for s in report.result_sets]
    out = {n: cycle[i % len(cycle)] for i, n in enumerate(names)}
    if report.reference is not None:
        out[report.reference.name] = "black"
    return out


def _panel(ax, report, e, colors):
    from scipy import stats as _stats  # on first use: scipy.stats costs ~0.5 s at import

    for run in report.ok_runs:
        draws = run.samples.get(e.site)
        if draws is None or draws[0, 0].size <= e.index:
            continue
        x = draws.reshape(-1, draws[0, 0].size)[:, e.index]
        if x.size > _KDE_DRAWS:
            x = x[np.linspace(0, x.size - 1, _KDE_DRAWS).astype(int)]
        if np.std(x) > 0 and np.all(np.isfinite(x)):
            lo, hi = np.quantile(x, [0.002, 0.998])
            grid = np.linspace(lo, hi, 160)
            ax.plot(grid, _stats.gaussian_kde(x)(grid), color=colors[run.name], lw=1.4,
                    label=run.name)
        else:
            ax.axvline(float(np.mean(x)), color=colors[run.name], lw=1.4, label=run.name)
    ref = report.reference
    if ref is not None and e.site in ref.stats:
        m, s = ref.stats[e.site]["mean"][e.index], ref.stats[e.site]["sd"][e.index]
        if np.isfinite(m) and np.isfinite(s) and s > 0:
            grid = np.linspace(m - 3.5 * s, m + 3.5 * s, 120)
            ax.plot(grid, _stats.norm.pdf(grid, m, s), "k--", lw=1.0, label=ref.name)
    color = MARK.get(e.verdict)
    title = e.label if color is None else f"{e.label}: {e.verdict.upper()}"
    if e.verdict == "disagree":
        bad = {t.statistic for t in e.tests if t.judged
               and t.p_adjusted < report.settings["alpha"]}
        stats = [s for s in STATISTICS if s in bad]
        title += f" ({', '.join(stats)})"
    ax.set_title(title, fontsize=8.5, color=color or "black")
    if color is not None:
        for spine in ax.spines.values():
            spine.set_edgecolor(color)
            spine.set_linewidth(2.5)
    ax.set_yticks([])
    ax.tick_params(labelsize=7)


def marginal_figures(report, *, max_panels: int = 48) -> list:
    """One figure per page of at most ``max_panels`` elements, the worst elements first."""
    plt = pyplot()
    colors = _colors(report)
    elements = report.ordered_elements()
    pages = [elements[i:i + max_panels] for i in range(0, len(elements), max_panels)] or [[]]
    figures = []
    for number, page in enumerate(pages, 1):
        ncol = max(1, min(6, math.ceil(math.sqrt(len(page) * 1.5))))
        nrow = max(1, math.ceil(len(page) / ncol))
        fig, axes = plt.subplots(nrow, ncol, figsize=(2.6 * ncol + 0.4, 1.9 * nrow + 0.45),
                                 squeeze=False)
        for ax, e in zip(axes.flat, page):
            _panel(ax, report, e, colors)
        for ax in list(axes.flat)[len(page):]:
            ax.axis("off")
        handles = [plt.Line2D([], [], color=colors[s.name], ls="--" if s is report.reference
                              else "-", lw=1.5) for s in report.result_sets]
        fig.legend(handles, [s.name for s in report.result_sets], loc="upper right",
                   ncol=len(handles), fontsize=8, frameon=False)
        suffix = f" (page {number} of {len(pages)})" if len(pages) > 1 else ""
        fig.suptitle(f"Marginal posteriors, {len(elements)} elements{suffix}; red frame: "
                     f"disagree, orange: not converged", fontsize=9.5, x=0.01, ha="left")
        height = fig.get_figheight()   # fixed margins: tight_layout costs seconds per page
        fig.subplots_adjust(left=0.02, right=0.98, bottom=0.35 / height,
                            top=1 - 0.75 / height, wspace=0.08, hspace=0.5)
        figures.append(fig)
    return figures


def _page_path(path: str, number: int) -> str:
    if number == 1:
        return path
    root, ext = os.path.splitext(path)
    return f"{root}-{number}{ext or '.png'}"


def _save(fig, path: str) -> str:
    plt = pyplot()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def marginals(report, path: str, *, max_panels: int = 48) -> list[str]:
    return [_save(fig, _page_path(path, n))
            for n, fig in enumerate(marginal_figures(report, max_panels=max_panels), 1)]


def forest_figure(report):
    """Mean +- 2 sd of every element for every result set (reference in black), one panel per
    site (each with its own scale); labels of disagreeing elements in red."""
    plt = pyplot()
    colors = _colors(report)
    sets = report.result_sets
    by_site: dict[str, list] = {}
    for e in report.elements[:_FOREST_MAX]:
        by_site.setdefault(e.site, []).append(e)
    heights = [len(v) + 1.2 for v in by_site.values()] or [1]
    fig, axes = plt.subplots(len(heights), 1, figsize=(8, 0.32 * sum(heights) + 1.2),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, (site, elements) in zip(axes[:, 0], by_site.items()):
        for row, e in enumerate(elements):
            values = report.values(e.site, e.index)
            for k, s in enumerate(sets):
                v = values.get(s.name)
                if v is None or not np.isfinite(v["mean"]):
                    continue
                y = row + (k - (len(sets) - 1) / 2) * 0.7 / max(len(sets), 1)
                ax.errorbar(v["mean"], y, xerr=2 * v["sd"], fmt="o", ms=3.5, lw=1.2,
                            color=colors[s.name], label=s.name if row == 0 else None)
        ax.set_yticks(range(len(elements)))
        ax.set_yticklabels([e.label for e in elements], fontsize=8)
        for tick, e in zip(ax.get_yticklabels(), elements):
            tick.set_color(MARK.get(e.verdict, "black"))
        ax.set_ylim(len(elements) - 0.5, -0.5)
        ax.set_title(site, fontsize=9, loc="left")
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(axis="x", labelsize=8)
    axes[0, 0].legend(fontsize=8, loc="lower right", bbox_to_anchor=(1.0, 1.0), frameon=False,
                      ncol=len(sets))
    more = len(report.elements) - _FOREST_MAX
    fig.suptitle("Forest plot: mean +- 2 sd" + (f" (first {_FOREST_MAX} elements; {more} more "
                                                 f"in the JSON)" if more > 0 else ""),
                 fontsize=10, x=0.01, ha="left")
    fig.tight_layout()
    return fig


def forest(report, path: str) -> str:
    return _save(forest_figure(report), path)


def ess_figure(report):
    """Grouped bars: ESS/s of the whole run and of sampling alone, per backend (failed: a note)."""
    plt = pyplot()
    colors = _colors(report)
    runs = report.runs
    fig, ax = plt.subplots(figsize=(1.6 * len(runs) + 3.5, 3.6))
    x = np.arange(len(runs))
    total = [r.ess_per_second_total if r.ok else np.nan for r in runs]
    sampling = [r.ess_per_second if r.ok else np.nan for r in runs]
    ax.bar(x - 0.2, total, 0.4, color=[colors.get(r.name, "grey") for r in runs],
           label="per second of the whole run")
    ax.bar(x + 0.2, sampling, 0.4, color=[colors.get(r.name, "grey") for r in runs],
           alpha=0.45, hatch="//", label="per second of sampling alone")
    finite = [v for v in sampling + total if np.isfinite(v) and v > 0]
    if finite and max(finite) / min(finite) > 30:
        ax.set_yscale("log")
    if finite:   # room above the tallest bar for its label and for the legend
        top = max(finite)
        ax.set_ylim(top=top * (8.0 if ax.get_yscale() == "log" else 1.35))
    for i, r in enumerate(runs):
        if not r.ok:
            ax.text(i, 0.5, "failed", ha="center", transform=ax.get_xaxis_transform(),
                    color=MARK["disagree"])
            continue
        for dx, v in ((-0.2, total[i]), (0.2, sampling[i])):
            ax.text(i + dx, v, f"{v:.0f}" if v >= 10 else f"{v:.2g}", ha="center",
                    va="bottom", fontsize=8)
    ax.set_xticks(x)
    ax.set_xticklabels([r.name for r in runs])
    ax.set_ylabel("smallest bulk ESS / s")
    ax.set_title("Sampling efficiency", fontsize=10, loc="left")
    ax.legend(fontsize=8, frameon=False, loc="upper right", ncol=2)
    fig.tight_layout()
    return fig


def ess_bars(report, path: str) -> str:
    return _save(ess_figure(report), path)
