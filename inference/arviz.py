"""Conversion of MCMC draws to an ArviZ ``InferenceData`` (``MCMC.to_arviz()``).

ArviZ is an optional extra (``pip install "ppl[arviz]"``); it is imported only when a conversion
is asked for. Draws of any ppl backend are converted to NumPy once.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np

from ppl import ops

__all__ = ["to_inference_data", "SAMPLE_STATS_NAMES"]

#: ppl / NumPyro extra-field names -> ArviZ's conventional ``sample_stats`` names.
SAMPLE_STATS_NAMES = {
    "diverging": "diverging",
    "energy": "energy",
    "accept_prob": "acceptance_rate",
    "mean_accept_prob": "acceptance_rate",
    "step_size": "step_size",
    "adapt_state.step_size": "step_size",
    "num_steps": "n_steps",
    "tree_depth": "tree_depth",
    "potential_energy": "lp",
}


def _import_arviz():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # arviz 0.2x announces its refactor
            import arviz
    except ImportError as err:
        raise ImportError(
            "to_arviz / to_inference_data needs the arviz package, which is not installed. "
            'Install it with: pip install "ppl[arviz]"'
        ) from err
    return arviz


def _grouped(name: str, value, group_by_chain: bool, what: str) -> np.ndarray:
    arr = ops.to_numpy(value)
    if not group_by_chain:
        arr = arr[None]
    if arr.ndim < 2:
        raise ValueError(
            f"to_inference_data: {what} {name!r} has shape {arr.shape}; expected "
            "(chains, draws, ...). Pass group_by_chain=False for draws of a single chain."
        )
    return arr


def _sample_stats(extra_fields: dict, group_by_chain: bool, chains_draws: tuple) -> dict:
    stats = {}
    for key, value in extra_fields.items():
        if isinstance(value, (dict, tuple, list)) or value is None:
            continue
        arr = ops.to_numpy(value)
        if arr.ndim == 0 or arr.shape == chains_draws[:1]:
            # one value per run or per chain (e.g. the adapted step size): repeat per draw
            arr = np.broadcast_to(np.reshape(arr, (-1, 1)), chains_draws)
        else:
            arr = _grouped(key, arr, group_by_chain, "extra field")
        name = SAMPLE_STATS_NAMES.get(key, key)
        if key == "potential_energy":
            arr = -arr
        elif key == "diverging":
            arr = arr.astype(bool)
        stats[name] = arr
        if key == "num_steps" and "tree_depth" not in extra_fields:
            # a NUTS tree of depth d takes 2**d - 1 leapfrog steps
            stats["tree_depth"] = np.floor(np.log2(np.maximum(arr, 1) + 1)).astype(np.int64)
    return stats


def to_inference_data(samples: dict, extra_fields: dict | None = None, observed: dict | None = None,
                      *, coords: dict | None = None, dims: dict | None = None,
                      group_by_chain: bool = True):
    """Build an ``arviz.InferenceData`` from MCMC draws.

    Parameters
    ----------
    samples
        ``site -> draws`` with shape ``(chains, draws, ...)`` (``MCMC.get_samples
        (group_by_chain=True)``); arrays of any backend or NumPy.
    extra_fields
        Per-draw sampler statistics, same leading shape (``MCMC.get_extra_fields
        (group_by_chain=True)``). They become the ``sample_stats`` group under ArviZ's names:
        ``accept_prob -> acceptance_rate``, ``num_steps -> n_steps`` (plus ``tree_depth``),
        ``potential_energy -> lp`` (negated); ``diverging``, ``energy`` and ``step_size`` keep
        theirs. A field with one value per chain (shape ``(chains,)``) is repeated per draw.
    observed
        ``site -> observed value`` for the ``observed_data`` group.
    coords, dims
        As in ``arviz.from_dict``: coordinate values and per-variable dimension names.
    group_by_chain
        ``False`` when the arrays hold one chain's draws without a chain axis.

    Returns
    -------
    arviz.InferenceData
        Groups ``posterior`` (dims ``chain, draw, ...``), ``sample_stats`` (when extra fields
        are given) and ``observed_data`` (when observations are given).

    Raises
    ------
    ImportError
        If arviz is not installed (``pip install "ppl[arviz]"``).

    Examples
    --------
    >>> import numpy as np
    >>> idata = to_inference_data({"mu": np.zeros((4, 100))},
    ...                           {"diverging": np.zeros((4, 100), bool)})
    >>> dict(idata.posterior.sizes)
    {'chain': 4, 'draw': 100}
    """
    arviz = _import_arviz()
    if not isinstance(samples, dict) or not samples:
        raise TypeError(f"samples must be a non-empty dict of site -> draws, got {type(samples)}.")
    posterior = {k: _grouped(k, v, group_by_chain, "site") for k, v in samples.items()}
    shapes = {v.shape[:2] for v in posterior.values()}
    if len(shapes) != 1:
        raise ValueError(f"to_inference_data: sites disagree on (chains, draws): {shapes}.")
    groups = {"posterior": posterior}
    if extra_fields:
        groups["sample_stats"] = _sample_stats(extra_fields, group_by_chain, shapes.pop())
    if observed:
        groups["observed_data"] = {k: ops.to_numpy(v) for k, v in observed.items() if v is not None}
    params = inspect.signature(arviz.from_dict).parameters
    if "posterior" in params and "sample_stats" in params:   # arviz < 1.0: one keyword per group
        return arviz.from_dict(**groups, coords=coords, dims=dims)
    return arviz.from_dict(groups, coords=coords, dims=dims)  # arviz >= 1.0: dict of groups
