"""Result sets of a comparison: one backend's NUTS run (:class:`BackendRun`), and running it."""

from __future__ import annotations

import time
import traceback

import numpy as np

from ppl import ops
from ppl._state import use_backend
from ppl.comparison._mcse import element_stats
from ppl.inference import MCMC, NUTS

__all__ = ["BackendRun", "run_backend", "R_HAT_MAX"]

#: an element whose split R-hat exceeds this has not converged (Vehtari et al. 2021)
R_HAT_MAX = 1.01


class BackendRun:
    """What one backend gave: draws (NumPy, ``(chains, draws, ...)``), per-element statistics
    (:func:`~ppl.comparison._mcse.element_stats`), divergences, timings -- or a failure.

    Attributes
    ----------
    timings
        Wall seconds: ``compile`` (model setup, tracing and compilation), ``warmup``,
        ``sampling``, and ``total`` (the whole call, conversions included).
    """

    partial = False      # a backend must hold every site the others hold
    #: why its warm-up run in a background process failed (``ppl compare``), if it did
    warm_up_error: str | None = None

    def __init__(self, name: str, dtype: str, *, max_divergences: int = 0):
        self.name, self.dtype = name, dtype
        self.samples: dict[str, np.ndarray] = {}
        self.stats: dict[str, dict[str, np.ndarray]] = {}
        self.divergences = 0
        self.num_draws = 0
        self.timings = {"compile": float("nan"), "warmup": float("nan"),
                        "sampling": float("nan"), "total": float("nan")}
        self.error: str | None = None
        self.max_divergences = max_divergences

    @classmethod
    def from_draws(cls, name: str, samples: dict, *, divergences: int = 0, dtype="float64",
                   timings: dict | None = None) -> BackendRun:
        """A result set from draws ``site -> (chains, draws, ...)`` (tests, or runs made
        elsewhere)."""
        run = cls(name, dtype)
        run.samples = {k: np.asarray(v, dtype=np.float64) for k, v in samples.items()}
        run.stats = {k: element_stats(v) for k, v in run.samples.items()}
        run.divergences = int(divergences)
        run.num_draws = int(next(iter(run.samples.values())).shape[1]) if samples else 0
        run.timings.update(timings or {})
        return run

    @classmethod
    def failed(cls, name: str, dtype: str, error: str) -> BackendRun:
        run = cls(name, dtype)
        run.error = error
        return run

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def wall_time(self) -> float:
        return self.timings["total"]

    @property
    def min_ess(self) -> float:
        values = [np.nanmin(s["ess_bulk"]) for s in self.stats.values()
                  if np.any(np.isfinite(s["ess_bulk"]))]
        return float(min(values)) if values else float("nan")

    @property
    def max_r_hat(self) -> float:
        values = [np.nanmax(s["r_hat"]) for s in self.stats.values()
                  if np.any(np.isfinite(s["r_hat"]))]
        return float(max(values)) if values else float("nan")

    @property
    def ess_per_second(self) -> float:
        """Smallest bulk ESS per second of sampling (warmup and compilation excluded)."""
        return self.min_ess / self.timings["sampling"] if self.ok else float("nan")

    @property
    def ess_per_second_total(self) -> float:
        """Smallest bulk ESS per second of the whole run."""
        return self.min_ess / self.timings["total"] if self.ok else float("nan")

    def converged(self, site: str) -> np.ndarray:
        """Per element of ``site``: R-hat at most :data:`R_HAT_MAX` (or undefined, for a
        constant) and no more divergences than allowed."""
        r_hat = self.stats[site]["r_hat"]
        ok = ~(r_hat > R_HAT_MAX)
        return ok & (self.divergences <= self.max_divergences)

    def not_converged_reason(self, site: str, i: int) -> str:
        r_hat = self.stats[site]["r_hat"][i]
        parts = [f"R-hat {r_hat:.3f}"] if r_hat > R_HAT_MAX else []
        if self.divergences > self.max_divergences:
            parts.append(f"{self.divergences} divergences")
        return f"{self.name}: {', '.join(parts)}"


def _to_backend(tree):
    """Convert NumPy arrays (and arrays of other frameworks) to the active backend."""
    if isinstance(tree, dict):
        return {k: _to_backend(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)) and not hasattr(tree, "_fields"):
        return type(tree)(_to_backend(v) for v in tree)
    if hasattr(tree, "__array__") and not isinstance(tree, (int, float, bool)):
        return ops.asarray(np.asarray(tree))
    return tree


def run_backend(name, model, args, kwargs, *, dtype, seed, mcmc_kwargs, kernel_kwargs,
                max_divergences) -> BackendRun:
    """Run NUTS on backend ``name``; a failure is kept (with its reason), not raised."""
    run = BackendRun(name, dtype, max_divergences=max_divergences)
    start = time.perf_counter()
    try:
        with use_backend(name, dtype=dtype):
            b_args, b_kwargs = _to_backend(args), _to_backend(kwargs)
            mcmc = MCMC(NUTS(model, **kernel_kwargs), **mcmc_kwargs)
            mcmc.run(seed, *b_args, **b_kwargs)
            samples = mcmc.get_samples(group_by_chain=True)
            run.samples = {k: np.asarray(ops.to_numpy(v), dtype=np.float64)
                           for k, v in samples.items()}
            diverging = mcmc.get_extra_fields().get("diverging")
            run.divergences = 0 if diverging is None else int(np.sum(ops.to_numpy(diverging)))
            t = getattr(mcmc, "timings", {}) or {}
        run.timings.update({"compile": t.get("setup", 0.0) + t.get("compile", 0.0),
                            "warmup": t.get("warmup", float("nan")),
                            "sampling": t.get("sampling", float("nan")),
                            "total": time.perf_counter() - start})
        run.num_draws = int(next(iter(run.samples.values())).shape[1]) if run.samples else 0
        run.stats = {k: element_stats(v) for k, v in run.samples.items()}
    except KeyboardInterrupt:
        raise
    except Exception as err:  # noqa: BLE001 - reported in the table, the others still run
        last = traceback.extract_tb(err.__traceback__)[-1]
        run.error = f"{type(err).__name__}: {err} (at {last.name}, line {last.lineno})"
    return run
