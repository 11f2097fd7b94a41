"""A reference posterior as one more result set of a comparison (``--reference FILE``).

Accepted forms (a path to a ``.json`` / ``.npz`` file, or the loaded object):

* **summaries**, as posteriordb's ``reference.json`` (Magnusson et al. 2024, "posteriordb:
  Testing, benchmarking and developing Bayesian inference algorithms", arXiv:2407.04967):
  ``{"theta[1]": {"mean": m, "sd": s, "n_chains": 10, "n_draws": 1000}, ...}``. Names follow
  Stan: ``theta[1]`` is the first element (1-based), ``L[2,1]`` row 2, column 1. With
  ``n_chains`` and ``n_draws`` (posteriordb's draws are thinned to be nearly independent), the
  MCSEs are those of ``n = n_chains * n_draws`` independent draws, ``sd / sqrt(n)`` for the mean
  and ``sd / sqrt(2 (n - 1))`` for the sd (normal approximation); without them the reference is
  taken as exact. Quantiles are not judged against summaries.
* **draws, posteriordb style**: a list of chains, each ``{"theta[1]": [draws...], ...}``.
* **draws, ppl style**: ``{site: array (chains, draws, ...)}`` (a dict, or an ``.npz`` file),
  judged on every statistic like a backend.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np

from ppl.comparison._mcse import STATISTICS, element_stats

__all__ = ["Reference", "load_reference"]

_STAN_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*)(?:\[([0-9, ]+)\])?$")


def _parse_name(name: str) -> tuple[str, tuple[int, ...]]:
    m = _STAN_NAME.match(name.strip())
    if not m:
        raise ValueError(f"reference: {name!r} is not a parameter name such as 'mu' or "
                         f"'theta[1]' (Stan's 1-based indices).")
    idx = () if m.group(2) is None else tuple(int(i) - 1 for i in m.group(2).split(","))
    if any(i < 0 for i in idx):
        raise ValueError(f"reference: {name!r} has an index below 1; reference names use "
                         f"Stan's 1-based indices (theta[1] is the first element).")
    return m.group(1), idx


def _summary_stats(entry: dict, name: str) -> dict[str, float]:
    if not isinstance(entry, dict) or "mean" not in entry or "sd" not in entry:
        raise ValueError(f"reference: entry {name!r} must hold 'mean' and 'sd' (and optionally "
                         f"'n_chains', 'n_draws'), got {entry!r}.")
    mean, sd = float(entry["mean"]), float(entry["sd"])
    n = float(entry.get("n_chains", 1)) * float(entry["n_draws"]) if "n_draws" in entry \
        else np.inf
    out = {"mean": mean, "sd": sd, "mcse_mean": sd / np.sqrt(n),
           "mcse_sd": sd / np.sqrt(2 * max(n - 1, 1))}
    for stat in STATISTICS[2:]:
        out[stat] = out[f"mcse_{stat}"] = np.nan
    return out


class Reference:
    """Reference values per element, bound to the model's sites by :meth:`bind`.

    ``entries`` maps ``(site, index tuple)`` to statistics (``mean``, ``mcse_mean``, ...).
    """

    partial = True      # a reference need not cover every site
    divergences = 0

    def __init__(self, entries: dict, *, name: str = "reference", source: str = ""):
        self.name, self.source = name, source
        self.entries = entries
        self.stats: dict[str, dict[str, np.ndarray]] = {}
        self.unmatched: list[str] = []

    def bind(self, sites: dict[str, tuple]) -> Reference:
        """Lay the entries out as ``(E,)`` arrays per site (NaN where the reference is silent);
        entries naming no element of ``sites`` are kept in ``unmatched``."""
        self.stats, self.unmatched = {}, []
        for (site, idx), values in self.entries.items():
            shape = sites.get(site)
            if shape is None or len(idx) != len(shape) or any(
                    i >= n for i, n in zip(idx, shape)):
                label = site + (f"[{','.join(str(i + 1) for i in idx)}]" if idx else "")
                self.unmatched.append(label)
                continue
            size = int(np.prod(shape, dtype=int))
            arrays = self.stats.setdefault(
                site, {k: np.full(size, np.nan) for k in values})
            flat = int(np.ravel_multi_index(idx, shape)) if idx else 0
            for k, v in values.items():
                arrays.setdefault(k, np.full(size, np.nan))[flat] = v
        return self

    def converged(self, site: str) -> np.ndarray:
        return np.ones(self.stats[site]["mean"].shape, bool)

    def not_converged_reason(self, site: str, i: int) -> str:  # pragma: no cover - never
        return ""


def _from_site_draws(draws: dict) -> dict:
    entries = {}
    for site, arr in draws.items():
        arr = np.asarray(arr, dtype=np.float64)
        if arr.ndim < 2:
            raise ValueError(f"reference: draws of {site!r} must have shape (chains, draws, "
                             f"...), got {arr.shape}.")
        stats = element_stats(arr)
        shape = arr.shape[2:]
        for flat in range(int(np.prod(shape, dtype=int))):
            idx = tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()
            entries[(site, idx)] = {k: float(v[flat]) for k, v in stats.items()}
    return entries


def _from_stan_draws(chains: list) -> dict:
    if not chains or not all(isinstance(c, dict) for c in chains):
        raise ValueError("reference: a list must hold one dict per chain, {'theta[1]': [draws], "
                         "...} (posteriordb's reference draws).")
    entries = {}
    for name in chains[0]:
        x = np.asarray([c[name] for c in chains], dtype=np.float64)[:, :, None]
        stats = element_stats(x)
        entries[_parse_name(name)] = {k: float(v[0]) for k, v in stats.items()}
    return entries


def load_reference(source, *, name: str = "reference") -> Reference:
    """A :class:`Reference` from a path (``.json``, ``.npz``) or an object of a form above.

    Raises
    ------
    ValueError
        On a file or object that is none of the accepted forms (the message says which).
    """
    label = ""
    if isinstance(source, (str, os.PathLike)):
        label = str(source)
        if not os.path.isfile(label):
            raise ValueError(f"reference: no such file: {label}")
        if label.endswith(".npz"):
            with np.load(label) as npz:
                source = {k: npz[k] for k in npz.files}
        else:
            try:
                with open(label) as f:
                    source = json.load(f)
            except json.JSONDecodeError as err:
                raise ValueError(f"reference: {label} is not valid JSON ({err}).") from err
    if isinstance(source, list):
        entries = _from_stan_draws(source)
    elif isinstance(source, dict) and source and all(isinstance(v, dict)
                                                      for v in source.values()):
        entries = {_parse_name(k): _summary_stats(v, k) for k, v in source.items()}
    elif isinstance(source, dict) and source:
        entries = _from_site_draws(source)
    else:
        raise ValueError(f"reference: expected posteriordb-style summaries {{'theta[1]': "
                         f"{{'mean': .., 'sd': ..}}}}, draws per chain, or {{site: array "
                         f"(chains, draws, ...)}}; got {type(source).__name__}.")
    return Reference(entries, name=name, source=label)
