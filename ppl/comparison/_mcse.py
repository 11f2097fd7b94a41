"""Per-element posterior statistics and their Monte Carlo standard errors (MCSE).

For draws ``x`` of shape ``(chains, draws, elements)`` this computes, per scalar element, the
statistics that :mod:`ppl.comparison` judges (``mean``, ``sd``, the 5 % and 95 % quantiles
``q05`` / ``q95``) and the MCSE of each, with the estimators of Vehtari, Gelman, Simpson,
Carpenter & Bürkner (2021), "Rank-normalization, folding, and localization: An improved R-hat
for assessing convergence of MCMC", *Bayesian Analysis* 16(2), section 4 -- the ones ArviZ's
``mcse`` uses:

* mean: ``sd / sqrt(ESS(x))``;
* sd: the delta method on the variance, ``sqrt(Var[(x - m)^2] / ESS((x - m)^2) / (4 var))``;
* quantile ``p``: the central 68 % interval of ``Beta(ESS_p p + 1, ESS_p (1 - p) + 1)`` mapped
  through the sorted draws, halved, where ``ESS_p`` is the ESS of the indicator ``x <= q_p``.

Every ESS here is the split-chain, non-rank-normalised one (Geyer's initial monotone sequence),
:func:`ppl.diagnostics.effective_sample_size` with ``method="mean"``.
"""

from __future__ import annotations

import numpy as np

from ppl import diagnostics

__all__ = ["STATISTICS", "QUANTILES", "element_stats"]

#: the judged statistics, in report order
STATISTICS = ("mean", "sd", "q05", "q95")
QUANTILES = {"q05": 0.05, "q95": 0.95}
_ONE_SIGMA = (0.1586553, 0.8413447)   # Phi(-1), Phi(1)


def _ess(x: np.ndarray) -> np.ndarray:
    """Split-chain ESS of ``x`` ``(chains, draws, E)``; NaN where ``x`` is constant."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.atleast_1d(diagnostics.effective_sample_size(x, method="mean"))


def _mcse_quantile(x: np.ndarray, sorted_flat: np.ndarray, q: np.ndarray, p: float):
    from scipy import stats  # imported on first use: scipy.stats costs ~0.5 s

    ess = _ess((x <= q).astype(np.float64))
    with np.errstate(invalid="ignore"):
        lo_p, hi_p = (stats.beta.ppf(s, ess * p + 1, ess * (1 - p) + 1) for s in _ONE_SIGMA)
    size = sorted_flat.shape[0]
    lo = np.floor(np.nan_to_num(np.maximum(lo_p * size - 1, 0), nan=0.0)).astype(int)
    hi = np.ceil(np.nan_to_num(np.minimum(hi_p * size - 1, size - 1), nan=size - 1)).astype(int)
    cols = np.arange(sorted_flat.shape[1])
    return (sorted_flat[hi, cols] - sorted_flat[lo, cols]) / 2


def element_stats(draws: np.ndarray) -> dict[str, np.ndarray]:
    """Statistics, MCSEs and convergence diagnostics of every element of ``draws``.

    Parameters
    ----------
    draws
        Shape ``(chains, draws, ...)``; the trailing dimensions are flattened to elements.

    Returns
    -------
    dict
        Arrays of shape ``(E,)``: ``mean, sd, q05, q95`` and ``mcse_mean, mcse_sd, mcse_q05,
        mcse_q95``, plus ``ess_bulk``, ``ess_tail`` and ``r_hat`` (rank-normalised split R-hat).

    Examples
    --------
    >>> import numpy as np
    >>> s = element_stats(np.random.default_rng(0).normal(size=(4, 1000, 2)))
    >>> bool(np.all(np.abs(s["mcse_mean"] - 1 / np.sqrt(4000)) < 0.002))
    True
    """
    x = np.asarray(draws, dtype=np.float64)
    C, N = x.shape[:2]
    x = x.reshape(C, N, -1)
    flat = x.reshape(C * N, -1)
    out = {"mean": flat.mean(axis=0), "sd": flat.std(axis=0, ddof=1)}
    sorted_flat = np.sort(flat, axis=0)
    for name, p in QUANTILES.items():
        out[name] = np.quantile(flat, p, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["mcse_mean"] = out["sd"] / np.sqrt(_ess(x))
        centred2 = (x - out["mean"]) ** 2
        var = centred2.mean(axis=(0, 1))
        var_var = ((centred2 ** 2).mean(axis=(0, 1)) - var ** 2) / _ess(centred2)
        out["mcse_sd"] = np.sqrt(var_var / var / 4)
    for name, p in QUANTILES.items():
        out[f"mcse_{name}"] = _mcse_quantile(x, sorted_flat, out[name], p)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["ess_bulk"] = np.atleast_1d(diagnostics.effective_sample_size(x))
        out["ess_tail"] = np.atleast_1d(diagnostics.effective_sample_size(x, method="tail"))
        out["r_hat"] = np.atleast_1d(diagnostics.split_gelman_rubin(x))
    return out
