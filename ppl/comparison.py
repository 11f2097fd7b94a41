"""``ppl.compare``: run one model with NUTS on several backends and set the results side by side.

(The module is ``ppl.comparison``; ``ppl.compare`` is the function.)

The verdict per site is a two-sided z-test on the difference of posterior means between every
pair of backends, each mean's error being its Monte Carlo standard error (MCSE), with a
Bonferroni correction over all the tests made: a site agrees when no corrected p-value falls
below ``alpha``.
"""

from __future__ import annotations

import itertools
import json
import math
import time
import traceback
from typing import Any

import numpy as np
from scipy import stats as _stats

from ppl import diagnostics, ops
from ppl._state import available_backends, use_backend
from ppl.backends import BACKENDS
from ppl.inference import MCMC, NUTS

__all__ = ["compare", "ComparisonReport", "BackendRun"]

_MAX_ROWS_PER_SITE = 8


class BackendRun:
    """What one backend gave: draws (NumPy, ``(chains, draws, ...)``), timings, or a failure."""

    def __init__(self, name: str, dtype: str):
        self.name, self.dtype = name, dtype
        self.samples: dict[str, np.ndarray] = {}
        self.divergences = 0
        self.wall_time = float("nan")
        self.error: str | None = None
        self.stats: dict[str, dict[str, np.ndarray]] = {}

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def min_ess(self) -> float:
        values = [np.min(s["ess_bulk"]) for s in self.stats.values()]
        return float(min(values)) if values else float("nan")

    @property
    def ess_per_second(self) -> float:
        return self.min_ess / self.wall_time if self.ok else float("nan")


def _to_backend(tree):
    """Convert NumPy arrays (and arrays of other frameworks) to the active backend."""
    if isinstance(tree, dict):
        return {k: _to_backend(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)) and not hasattr(tree, "_fields"):
        return type(tree)(_to_backend(v) for v in tree)
    if hasattr(tree, "__array__") and not isinstance(tree, (int, float, bool)):
        return ops.asarray(np.asarray(tree))
    return tree


def _site_stats(draws: np.ndarray) -> dict[str, np.ndarray]:
    flat = draws.reshape(draws.shape[:2] + (-1,))
    return {
        "mean": flat.mean(axis=(0, 1)),
        "sd": flat.std(axis=(0, 1), ddof=1),
        "ess_bulk": np.atleast_1d(diagnostics.effective_sample_size(flat)),
        "r_hat": np.atleast_1d(diagnostics.split_gelman_rubin(flat)),
        "mcse": np.atleast_1d(diagnostics.mcse(flat)),
    }


def _run_one(name, model, args, kwargs, *, dtype, seed, num_warmup, num_samples, num_chains,
             progress_bar, kernel_kwargs) -> BackendRun:
    run = BackendRun(name, dtype)
    try:
        with use_backend(name, dtype=dtype):
            b_args, b_kwargs = _to_backend(args), _to_backend(kwargs)
            mcmc = MCMC(NUTS(model, **kernel_kwargs), num_warmup=num_warmup,
                        num_samples=num_samples, num_chains=num_chains,
                        progress_bar=progress_bar)
            start = time.perf_counter()
            mcmc.run(seed, *b_args, **b_kwargs)
            samples = mcmc.get_samples(group_by_chain=True)
            run.samples = {k: np.asarray(ops.to_numpy(v), dtype=np.float64)
                           for k, v in samples.items()}
            run.wall_time = time.perf_counter() - start
            diverging = mcmc.get_extra_fields().get("diverging")
            run.divergences = int(np.sum(ops.to_numpy(diverging))) if diverging is not None \
                else 0
        run.stats = {k: _site_stats(v) for k, v in run.samples.items()}
    except KeyboardInterrupt:
        raise
    except Exception as err:  # noqa: BLE001 - reported in the table, the others still run
        last = traceback.extract_tb(err.__traceback__)[-1]
        run.error = f"{type(err).__name__}: {err} (at {last.name}, line {last.lineno})"
    return run


def compare(model, *args, backends=None, num_warmup: int = 1000, num_samples: int = 1000,
            num_chains: int = 4, seed: int = 0, dtype: str = "float32",
            progress_bar: bool = True, alpha: float = 0.01, kernel_kwargs=None,
            **kwargs) -> ComparisonReport:
    """Sample ``model(*args, **kwargs)`` with NUTS on each backend and compare.

    Parameters
    ----------
    model
        A model function over ``ppl.sample`` / ``ppl.plate``.
    *args, **kwargs
        The model's arguments. NumPy arrays are converted to each backend's arrays.
    backends
        Names to run (default: every installed backend).
    num_warmup, num_samples, num_chains, seed, dtype
        Passed to :class:`ppl.inference.MCMC` / :func:`ppl.use_backend` for every backend.
    alpha
        Family-wise significance level of the agreement test.
    kernel_kwargs
        Extra keyword arguments for :class:`ppl.inference.NUTS` (e.g. ``dense_mass=True``).

    Returns
    -------
    ComparisonReport
        ``print(report)`` shows the table; ``report.agree()``, ``report.to_dict()``,
        ``report.plot(path)``.

    Examples
    --------
    >>> import numpy as np, ppl, ppl.distributions as dist
    >>> def model(y):
    ...     mu = ppl.sample("mu", dist.Normal(0.0, 10.0))
    ...     with ppl.plate("N", y.shape[0]):
    ...         ppl.sample("y", dist.Normal(mu, 1.0), obs=y)
    >>> report = ppl.compare(model, np.array([0.3, -0.2, 1.1]), backends=["numpy"],
    ...                      num_warmup=200, num_samples=200, num_chains=2,
    ...                      progress_bar=False)  # doctest: +SKIP
    """
    names = list(backends) if backends is not None else available_backends()
    known = set(BACKENDS)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"Unknown backend(s) {unknown}; known backends: {sorted(known)}.")
    if dtype not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}.")
    runs = []
    for name in names:
        if progress_bar:
            print(f"== {name} ({dtype}) ==", flush=True)
        runs.append(_run_one(name, model, args, kwargs, dtype=dtype, seed=seed,
                             num_warmup=num_warmup, num_samples=num_samples,
                             num_chains=num_chains, progress_bar=progress_bar,
                             kernel_kwargs=dict(kernel_kwargs or {})))
    settings = {"num_warmup": num_warmup, "num_samples": num_samples, "num_chains": num_chains,
                "seed": seed, "dtype": dtype, "alpha": alpha}
    return ComparisonReport(runs, settings)


class ComparisonReport:
    """The result of :func:`compare`: per-backend runs and the per-site agreement verdicts."""

    def __init__(self, runs: list[BackendRun], settings: dict[str, Any]):
        self.runs = runs
        self.settings = settings
        self.sites = self._site_names()
        self.verdicts = self._test()

    # ------------------------------------------------------------------ analysis
    def _site_names(self) -> list[str]:
        names: list[str] = []
        for run in self.runs:
            for k in run.stats:
                if k not in names:
                    names.append(k)
        return names

    def _ok_runs(self) -> list[BackendRun]:
        return [r for r in self.runs if r.ok]

    def _test(self) -> dict[str, dict[str, Any]]:
        ok = self._ok_runs()
        pairs = list(itertools.combinations(ok, 2))
        raw: dict[str, list] = {}
        num_tests = 0
        for site in self.sites:
            zs = []
            for a, b in pairs:
                sa, sb = a.stats.get(site), b.stats.get(site)
                if sa is None or sb is None or sa["mean"].shape != sb["mean"].shape:
                    zs.append(None)
                    continue
                se = np.sqrt(sa["mcse"] ** 2 + sb["mcse"] ** 2)
                z = np.where(se > 0, (sa["mean"] - sb["mean"]) / np.maximum(se, 1e-300),
                             np.where(sa["mean"] == sb["mean"], 0.0, np.inf))
                zs.append(z)
                num_tests += z.size
            raw[site] = zs
        alpha = self.settings["alpha"]
        verdicts = {}
        for site, zs in raw.items():
            present = [z for z in zs if z is not None]
            mismatch = len(present) != len(zs)
            if present:
                zmax = float(np.max([np.max(np.abs(z)) for z in present]))
                p = 2.0 * _stats.norm.sf(zmax)
                p_adj = min(1.0, p * max(num_tests, 1))
            else:
                zmax, p_adj = 0.0, 1.0
            verdicts[site] = {"agree": bool(not mismatch and p_adj >= alpha),
                              "max_abs_z": zmax, "p_adjusted": p_adj,
                              "missing_on_some_backend": mismatch}
        return verdicts

    def agree(self) -> bool:
        """Whether every backend ran and every site agrees across backends."""
        return all(r.ok for r in self.runs) and all(v["agree"] for v in self.verdicts.values())

    # ------------------------------------------------------------------ output
    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary (``json.dumps(report.to_dict())`` works)."""
        def lst(a):
            return [float(v) for v in np.ravel(a)]

        return {
            "settings": dict(self.settings),
            "agree": self.agree(),
            "backends": {
                r.name: {"ok": r.ok, "error": r.error, "dtype": r.dtype,
                         "wall_time": None if not r.ok else r.wall_time,
                         "divergences": r.divergences if r.ok else None,
                         "min_ess_bulk": None if not r.ok else r.min_ess,
                         "ess_per_second": None if not r.ok else r.ess_per_second}
                for r in self.runs},
            "sites": {
                site: {"verdict": self.verdicts[site],
                       "shape": list(next(r.samples[site].shape[2:] for r in self._ok_runs()
                                          if site in r.samples)),
                       "backends": {r.name: {k: lst(v) for k, v in r.stats[site].items()}
                                    for r in self._ok_runs() if site in r.stats}}
                for site in self.sites},
        }

    def to_json(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=2)

    def __str__(self) -> str:
        ok = self._ok_runs()
        lines = []
        s = self.settings
        lines.append(f"ppl.compare: {s['num_chains']} chains x {s['num_warmup']} warmup + "
                     f"{s['num_samples']} draws, {s['dtype']}, seed {s['seed']}")
        lines.append("")
        head = f"{'backend':<12}{'status':<8}{'wall time':>11}{'min ESS':>10}{'ESS/s':>10}" \
               f"{'divergences':>13}"
        lines += [head, "-" * len(head)]
        for r in self.runs:
            if r.ok:
                lines.append(f"{r.name:<12}{'ok':<8}{r.wall_time:>10.2f}s{r.min_ess:>10.0f}"
                             f"{r.ess_per_second:>10.1f}{r.divergences:>13d}")
            else:
                lines.append(f"{r.name:<12}{'FAILED':<8}  {r.error}")
        if ok:
            lines.append("")
            col = 34
            head = f"{'site':<16}" + "".join(f"{r.name + ' mean (sd) ESS R-hat':>{col}}"
                                             for r in ok) + f"{'  verdict':<10}"
            lines += [head, "-" * len(head)]
            for site in self.sites:
                lines += self._site_rows(site, ok, col)
        lines.append("")
        lines.append("Backends agree within Monte Carlo error." if self.agree() else
                     "Backends DO NOT all agree (see FAILED / DIFFER above).")
        return "\n".join(lines)

    def _site_rows(self, site, ok, col) -> list[str]:
        verdict = self.verdicts[site]
        size = max(r.stats[site]["mean"].size for r in ok if site in r.stats)
        shape = next(r.samples[site].shape[2:] for r in ok if site in r.samples)
        idx = list(range(size))
        shown = idx if size <= _MAX_ROWS_PER_SITE else idx[: _MAX_ROWS_PER_SITE - 2] + idx[-2:]
        rows = []
        for n, i in enumerate(shown):
            label = site if size == 1 and not shape else \
                f"{site}[{','.join(map(str, np.unravel_index(i, shape)))}]"
            cells = ""
            for r in ok:
                st = r.stats.get(site)
                if st is None or i >= st["mean"].size:
                    cells += f"{'-':>{col}}"
                    continue
                cell = f"{st['mean'][i]:.3g} ({st['sd'][i]:.2g}) {st['ess_bulk'][i]:.0f} " \
                       f"{st['r_hat'][i]:.3f}"
                cells += f"{cell:>{col}}"
            mark = ("  agree" if verdict["agree"] else "  DIFFER") if n == 0 else ""
            rows.append(f"{label:<16}{cells}{mark}")
            if size > _MAX_ROWS_PER_SITE and n == _MAX_ROWS_PER_SITE - 3:
                rows.append(f"{'  ...':<16}({size - _MAX_ROWS_PER_SITE} more elements; "
                            f"max |z| over all = {verdict['max_abs_z']:.2f})")
        return rows

    def __repr__(self) -> str:
        return f"<ComparisonReport backends={[r.name for r in self.runs]} agree={self.agree()}>"

    def plot(self, path: str, max_panels: int = 16) -> str:
        """Write a PNG: one panel per scalar site element (at most ``max_panels``), each
        backend's marginal posterior (a Gaussian KDE) overlaid in its own colour."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as err:
            raise ImportError('report.plot needs matplotlib: pip install "ppl[plot]"') from err
        ok = self._ok_runs()
        panels = []
        for site in self.sites:
            runs = [r for r in ok if site in r.samples]
            shape = runs[0].samples[site].shape[2:]
            for i in range(int(np.prod(shape, dtype=int))):
                label = site if not shape else \
                    f"{site}[{','.join(map(str, np.unravel_index(i, shape)))}]"
                panels.append((site, i, label))
        panels = panels[:max_panels]
        ncol = min(4, max(1, len(panels)))
        nrow = max(1, math.ceil(len(panels) / ncol))
        fig, axes = plt.subplots(nrow, ncol, figsize=(3.2 * ncol, 2.4 * nrow), squeeze=False)
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for ax, (site, i, label) in zip(axes.flat, panels):
            for k, r in enumerate(ok):
                if site not in r.samples:
                    continue
                x = r.samples[site].reshape(-1, r.samples[site][0, 0].size)[:, i]
                lo, hi = np.quantile(x, [0.001, 0.999])
                grid = np.linspace(lo, hi, 200)
                if np.std(x) > 0:
                    ax.plot(grid, _stats.gaussian_kde(x)(grid), color=colors[k % len(colors)],
                            label=r.name, lw=1.5)
            ax.set_title(label, fontsize=9)
            ax.set_yticks([])
        for ax in list(axes.flat)[len(panels):]:
            ax.axis("off")
        handles, labels = axes.flat[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="upper right", ncol=len(ok))
        fig.suptitle("Marginal posteriors by backend", fontsize=11, x=0.02, ha="left")
        fig.tight_layout(rect=(0, 0, 1, 0.94))
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path
