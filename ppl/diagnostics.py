"""MCMC diagnostics: effective sample size, split R-hat, MCSE, HPDI and a summary table.

The estimators are those of Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021),
"Rank-normalization, folding, and localization: An improved R-hat for assessing convergence of
MCMC", *Bayesian Analysis* 16(2), as implemented by ArviZ's array-level functions
(``arviz_stats.base.array_stats``, which need only NumPy and SciPy). This module converts its
input to NumPy once, fixes the axis convention to ppl's ``(chains, draws, ...)`` and adds the
NumPyro-style :func:`summary` / :func:`print_summary`.

Every function accepts NumPy arrays and arrays of any ppl backend (JAX, torch, ...).

>>> import numpy as np
>>> from ppl import diagnostics
>>> x = np.random.default_rng(0).normal(size=(4, 500))
>>> bool(diagnostics.split_gelman_rubin(x) < 1.01)
True
"""

from __future__ import annotations

import functools

import numpy as np

from ppl import _rank_stats, ops

__all__ = [
    "autocorrelation",
    "effective_sample_size",
    "split_gelman_rubin",
    "rank_rhat_and_bulk_ess",
    "mcse",
    "hpdi",
    "summary",
    "print_summary",
    "format_summary",
]

_ESS_METHODS = ("bulk", "tail", "mean", "sd", "median", "mad")
_MCSE_METHODS = ("mean", "sd", "median")


@functools.cache
def _array_stats():
    """``arviz_stats.base.array_stats``, imported on first use (it pulls in xarray: ~1 s)."""
    from arviz_stats.base import array_stats

    return array_stats


def _chain_draw_array(x, name="x") -> np.ndarray:
    """Validate ``x`` as a ``(chains, draws, ...)`` float array."""
    arr = ops.to_numpy(x)
    if arr.ndim < 2:
        raise ValueError(
            f"{name} must have shape (chains, draws, ...), got shape {arr.shape}. "
            "For a single chain of draws use x[None] (or group_by_chain=False in summary)."
        )
    if arr.dtype.kind not in "fc":
        arr = arr.astype(np.float64)
    return arr


def effective_sample_size(x, *, method: str = "bulk") -> np.ndarray:
    """Effective sample size of draws ``x`` with shape ``(chains, draws, ...)``.

    Parameters
    ----------
    x
        Draws, chains first then draws; trailing dimensions are independent quantities.
    method
        ``"bulk"`` (default): ESS of the rank-normalised split chains, which measures how well the
        centre of the distribution is explored. ``"tail"``: the minimum ESS of the 5 % and 95 %
        quantile indicators. Also ``"mean"``, ``"sd"``, ``"median"``, ``"mad"``.

    Returns
    -------
    numpy.ndarray
        Shape ``x.shape[2:]`` (a 0-d array for scalar quantities).

    References
    ----------
    Vehtari et al. (2021), Bayesian Analysis 16(2), 667-718; Geyer (1992) for the initial
    monotone sequence estimator of the autocorrelation sum.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(1).normal(size=(4, 1000))
    >>> 3000 < float(effective_sample_size(x)) < 5000
    True
    """
    if method not in _ESS_METHODS:
        raise ValueError(f"method must be one of {_ESS_METHODS}, got {method!r}.")
    arr = _chain_draw_array(x)
    prob = (0.05, 0.95) if method == "tail" else None
    out = _array_stats().ess(arr, chain_axis=0, draw_axis=1, method=method, prob=prob)
    return np.asarray(out, dtype=np.float64)


def _two_chains_if_one(arr: np.ndarray) -> np.ndarray:
    """A single chain as two: its first and second halves (R-hat compares chains)."""
    if arr.shape[0] != 1:
        return arr
    half = arr.shape[1] // 2
    return np.stack([arr[0, :half], arr[0, half:2 * half]])


def split_gelman_rubin(x) -> np.ndarray:
    """Rank-normalised split R-hat of draws ``x`` with shape ``(chains, draws, ...)``.

    The maximum of the bulk R-hat (split chains, rank-normalised to z-scores) and the tail R-hat
    (the same on the draws folded around the median), as recommended by Vehtari et al. (2021).
    Values above 1.01 signal chains that have not mixed.

    A single chain is first cut in two halves (so its halves are compared, after which each half is
    split again); this is a slightly stricter check than the classical single-chain split R-hat.

    Parameters
    ----------
    x
        Draws, chains first then draws.

    Returns
    -------
    numpy.ndarray
        Shape ``x.shape[2:]``.

    References
    ----------
    Gelman & Rubin (1992), Statistical Science 7(4); Vehtari et al. (2021), Bayesian Analysis 16(2).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(2).normal(size=(4, 1000))
    >>> bool(split_gelman_rubin(x) < 1.01)
    True
    >>> bool(split_gelman_rubin(x + np.arange(4)[:, None]) > 1.5)
    True
    """
    arr = _chain_draw_array(x)
    # a constant element (a correlation factor's fixed entries) has no R-hat: NaN, without
    # NumPy's 0/0 warning per element
    with np.errstate(invalid="ignore", divide="ignore"):
        out = _array_stats().rhat(_two_chains_if_one(arr), chain_axis=0, draw_axis=1,
                                  method="rank")
    return np.asarray(out, dtype=np.float64)


def rank_rhat_and_bulk_ess(x) -> tuple[np.ndarray, np.ndarray]:
    """:func:`split_gelman_rubin` and ``effective_sample_size(x, method="bulk")`` of draws ``x``
    ``(chains, draws, ...)`` with every element in one pass of NumPy (the two
    functions call ArviZ's element by element). The values are theirs to rounding for finite
    draws with at least 4 per chain (ppl's run warnings use it); for other input use the two
    functions, which also say NaN where a diagnostic is undefined."""
    arr = np.asarray(_chain_draw_array(x), dtype=np.float64)
    shape = arr.shape[2:]
    arr = arr.reshape(arr.shape[:2] + (-1,))
    split = _rank_stats.split(arr)
    if arr.shape[0] == 1:       # as split_gelman_rubin: one chain's halves, each split again
        ess = _rank_stats.basic_ess(_rank_stats.z_scale(split))
        z, z_folded = _rank_stats.z_scales(_rank_stats.split(_two_chains_if_one(arr)))
    else:
        z, z_folded = _rank_stats.z_scales(split)
        ess = _rank_stats.basic_ess(z)
    rhat = np.maximum(_rank_stats.basic_rhat(z), _rank_stats.basic_rhat(z_folded))
    return rhat.reshape(shape), ess.reshape(shape)


def mcse(x, *, method: str = "mean") -> np.ndarray:
    """Monte Carlo standard error of draws ``x`` with shape ``(chains, draws, ...)``.

    Parameters
    ----------
    x
        Draws, chains first then draws.
    method
        ``"mean"`` (default: ``sd / sqrt(ESS_mean)``), ``"sd"`` or ``"median"``.

    Returns
    -------
    numpy.ndarray
        Shape ``x.shape[2:]``.

    References
    ----------
    Vehtari et al. (2021), Bayesian Analysis 16(2), section 4.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(3).normal(size=(4, 1000))
    >>> 0.01 < float(mcse(x)) < 0.02
    True
    """
    if method not in _MCSE_METHODS:
        raise ValueError(f"method must be one of {_MCSE_METHODS}, got {method!r}.")
    arr = _chain_draw_array(x)
    out = _array_stats().mcse(arr, chain_axis=0, draw_axis=1, method=method)
    return np.asarray(out, dtype=np.float64)


def autocorrelation(x, *, axis: int = 0) -> np.ndarray:
    """Sample autocorrelation of ``x`` along ``axis`` (lag 0 first), computed with an FFT.

    >>> import numpy as np
    >>> float(autocorrelation(np.random.default_rng(4).normal(size=100))[0])
    1.0
    """
    arr = ops.to_numpy(x).astype(np.float64)
    out = _array_stats().autocorr(np.moveaxis(arr, axis, -1), axis=-1)
    return np.moveaxis(np.asarray(out), -1, axis)


def hpdi(x, prob: float = 0.9, axis: int = 0) -> np.ndarray:
    """Highest posterior density interval: the narrowest interval holding ``prob`` of the draws.

    Parameters
    ----------
    x
        Draws; ``axis`` indexes them.
    prob
        Probability mass inside the interval, in ``(0, 1]``.
    axis
        The axis of draws.

    Returns
    -------
    numpy.ndarray
        ``[lower, upper]`` stacked along ``axis`` (so ``out.shape[axis] == 2``), as in NumPyro.

    Notes
    -----
    Among the intervals ``[s[i], s[i + k]]`` of the sorted draws ``s`` with
    ``k = floor(prob * n)``, the narrowest is returned (Chen & Shao 1999, "Monte Carlo estimation
    of Bayesian credible and HPD intervals", JCGS 8(1)).

    Examples
    --------
    >>> hpdi([0.0, 1.0, 2.0, 3.0, 10.0], prob=0.6)
    array([0., 3.])
    """
    if not (isinstance(prob, (int, float, np.floating)) and 0.0 < float(prob) <= 1.0):
        raise ValueError(f"prob must be a number in (0, 1], got {prob!r}.")
    arr = np.moveaxis(ops.to_numpy(x).astype(np.float64, copy=False), axis, 0)
    n = arr.shape[0]
    if n == 0:
        raise ValueError("hpdi: x has no draws along the given axis.")
    s = np.sort(arr, axis=0)
    k = min(int(np.floor(float(prob) * n)), n - 1)
    widths = s[k:] - s[: n - k]
    best = np.argmin(widths, axis=0)[None]
    lower = np.take_along_axis(s, best, axis=0)[0]
    upper = np.take_along_axis(s, best + k, axis=0)[0]
    return np.moveaxis(np.stack([lower, upper]), 0, axis)


def _interval_keys(prob: float) -> tuple[str, str]:
    return f"{50 * (1 - prob):.1f}%", f"{50 * (1 + prob):.1f}%"


def _site_summary(arr: np.ndarray, prob: float) -> dict:
    flat = arr.reshape((-1,) + arr.shape[2:])
    lo_key, hi_key = _interval_keys(prob)
    interval = hpdi(flat, prob=prob, axis=0)
    return {
        "mean": flat.mean(axis=0),
        "std": flat.std(axis=0, ddof=1) if flat.shape[0] > 1 else np.zeros(flat.shape[1:]),
        "median": np.median(flat, axis=0),
        lo_key: interval[0],
        hi_key: interval[1],
        "n_eff": effective_sample_size(arr),
        "ess_tail": effective_sample_size(arr, method="tail"),
        "r_hat": split_gelman_rubin(arr),
        "mcse": mcse(arr),
    }


def summary(samples, prob: float = 0.9, group_by_chain: bool = True) -> dict:
    """Per-site posterior summary: mean, sd, median, HPDI, bulk/tail ESS, R-hat and MCSE.

    Parameters
    ----------
    samples
        A dict ``site name -> draws`` (or a single array of draws). With ``group_by_chain=True``
        each value has shape ``(chains, draws, ...)``; otherwise ``(draws, ...)`` (one chain).
    prob
        Mass of the highest posterior density interval.
    group_by_chain
        Whether the leading dimension indexes chains.

    Returns
    -------
    dict
        ``site -> {"mean", "std", "median", "5.0%", "95.0%", "n_eff", "ess_tail", "r_hat",
        "mcse"}`` (the interval keys follow ``prob``, as in NumPyro); every value is a NumPy array
        with the site's shape (one entry per element of a vector site). ``n_eff`` is the bulk ESS.
        A bare array comes back under the key ``"Param:0"``.

    Examples
    --------
    >>> import numpy as np
    >>> s = summary({"mu": np.random.default_rng(5).normal(size=(2, 500))})
    >>> sorted(s["mu"])
    ['5.0%', '95.0%', 'ess_tail', 'mcse', 'mean', 'median', 'n_eff', 'r_hat', 'std']
    """
    if not isinstance(samples, dict):
        samples = {"Param:0": samples}
    out = {}
    for name, value in samples.items():
        arr = ops.to_numpy(value)
        if arr.dtype.kind not in "fc":
            arr = arr.astype(np.float64)
        if not group_by_chain:
            arr = arr[None]
        if arr.ndim < 2:
            raise ValueError(
                f"summary: site {name!r} has shape {arr.shape}; with group_by_chain=True every "
                "site needs shape (chains, draws, ...). Pass group_by_chain=False for flat draws."
            )
        out[name] = _site_summary(arr, prob)
    return out


def _element_names(name: str, shape: tuple) -> list[str]:
    if not shape:
        return [name]
    return [f"{name}[{','.join(str(i) for i in idx)}]" for idx in np.ndindex(*shape)]


def format_summary(samples, prob: float = 0.9, group_by_chain: bool = True,
                   divergences=None) -> str:
    """The table :func:`print_summary` prints, as a string."""
    stats = summary(samples, prob=prob, group_by_chain=group_by_chain)
    lo_key, hi_key = _interval_keys(prob)
    columns = ["mean", "std", "median", lo_key, hi_key, "n_eff", "r_hat"]
    rows = []
    for name, site in stats.items():
        shape = np.shape(site["mean"])
        flat = {c: np.reshape(site[c], -1) for c in columns}
        for i, label in enumerate(_element_names(name, shape)):
            rows.append((label, [flat[c][i] for c in columns]))
    width = max([len(r[0]) for r in rows] + [10]) + 2
    lines = ["", " " * width + "".join(f"{c:>10}" for c in columns)]
    for label, values in rows:
        lines.append(f"{label:>{width}}" + "".join(f"{v:>10.2f}" for v in values))
    lines.append("")
    if divergences is not None:
        n_div = int(np.sum(ops.to_numpy(divergences)))
        lines.append(f"Number of divergences: {n_div}")
    return "\n".join(lines)


def print_summary(samples, prob: float = 0.9, group_by_chain: bool = True,
                  divergences=None) -> None:
    """Print a NumPyro-style summary table (mean, std, median, HPDI, n_eff, r_hat) per element.

    Parameters
    ----------
    samples
        As in :func:`summary`.
    prob
        Mass of the highest posterior density interval.
    group_by_chain
        Whether the leading dimension indexes chains.
    divergences
        Optional boolean array of divergent transitions (any shape); when given, a line
        ``Number of divergences: N`` ends the table.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(6).normal(size=(4, 1000, 2))
    >>> print_summary({"theta": x}, divergences=np.zeros(4000))  # doctest: +SKIP
    <BLANKLINE>
                    mean       std    median      5.0%     95.0%     n_eff     r_hat
      theta[0]      0.01      1.00      0.01     -1.63      1.65   4012.24      1.00
      theta[1]     -0.02      0.99     -0.03     -1.64      1.60   3934.97      1.00
    <BLANKLINE>
    Number of divergences: 0
    """
    print(format_summary(samples, prob=prob, group_by_chain=group_by_chain,
                         divergences=divergences))
