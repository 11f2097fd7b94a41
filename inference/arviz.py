"""Conversion of MCMC draws to an ArviZ ``InferenceData`` (``MCMC.to_arviz()``).

ArviZ is an optional extra (``pip install "ppl[arviz]"``); it is imported only when a conversion
is asked for. Draws of any ppl backend are converted to NumPy once.

Array dimensions are named after the plates they lie in (a site in ``plate("J", 8)`` gets the
dimension ``J``), so the posterior, the observed data and the pointwise log-likelihood share
them; other dimensions get ArviZ's default names (``theta_dim_0``).
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np

from ppl import ops
from ppl.handlers import seed, trace
from ppl.inference.log_likelihood import log_likelihood, observed_sites

__all__ = ["to_inference_data", "SAMPLE_STATS_NAMES", "plate_dims", "mcmc_groups"]

#: ppl / NumPyro extra-field names -> ArviZ's conventional ``sample_stats`` names (both are
#: kept where they differ).
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
        if key == "diverging":
            arr = arr.astype(bool)
        stats[key] = arr                                  # NumPyro's name
        name = SAMPLE_STATS_NAMES.get(key, key)           # and ArviZ's
        if name != key and name not in extra_fields:
            stats[name] = -arr if key == "potential_energy" else arr
        if key == "num_steps" and "tree_depth" not in extra_fields:
            # a NUTS tree of depth d takes 2**d - 1 leapfrog steps
            stats["tree_depth"] = np.floor(np.log2(np.maximum(arr, 1) + 1)).astype(np.int64)
    return stats


def to_inference_data(samples: dict, extra_fields: dict | None = None, observed: dict | None = None,
                      *, groups: dict | None = None, coords: dict | None = None,
                      dims: dict | None = None, group_by_chain: bool = True):
    """Build an ``arviz.InferenceData`` from MCMC draws.

    Parameters
    ----------
    samples
        ``site -> draws`` with shape ``(chains, draws, ...)`` (``MCMC.get_samples
        (group_by_chain=True)``); arrays of any backend or NumPy.
    extra_fields
        Per-draw sampler statistics, same leading shape (``MCMC.get_extra_fields
        (group_by_chain=True)``). They become the ``sample_stats`` group under their NumPyro
        names and ArviZ's: ``accept_prob`` and ``acceptance_rate``, ``num_steps`` and
        ``n_steps`` (plus ``tree_depth``), ``potential_energy`` and ``lp`` (negated);
        ``diverging``, ``energy`` and ``step_size`` are the same in both. A field with one
        value per chain (shape ``(chains,)``) is repeated per draw.
    observed
        ``site -> observed value`` for the ``observed_data`` group.
    groups
        Further groups, ``name -> {variable: (chains, draws, ...) array}``:
        ``log_likelihood``, ``posterior_predictive``, ``prior``, ``prior_predictive``.
    coords, dims
        As in ``arviz.from_dict``: coordinate values and per-variable dimension names.
    group_by_chain
        ``False`` when the arrays hold one chain's draws without a chain axis.

    Returns
    -------
    arviz.InferenceData
        Groups ``posterior`` (dims ``chain, draw, ...``), ``sample_stats`` (when extra fields
        are given), ``observed_data`` (when observations are given) and those of ``groups``.

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
    out = {"posterior": posterior}
    if extra_fields:
        out["sample_stats"] = _sample_stats(extra_fields, group_by_chain, shapes.pop())
    if observed:
        out["observed_data"] = {k: ops.to_numpy(v) for k, v in observed.items() if v is not None}
    for name, group in (groups or {}).items():
        if group:
            out[name] = {k: _grouped(k, v, True, f"{name} variable") for k, v in group.items()}
    params = inspect.signature(arviz.from_dict).parameters
    if "posterior" in params and "sample_stats" in params:   # arviz < 1.0: one keyword per group
        return arviz.from_dict(**out, coords=coords, dims=dims)
    return arviz.from_dict(out, coords=coords, dims=dims)  # arviz >= 1.0: dict of groups


def plate_dims(model_trace) -> dict:
    """``site -> dimension names`` of its value (without chain and draw): the plate's name on
    each axis a plate covers, ArviZ's default ``{site}_dim_{i}`` on the others.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> def model():
    ...     with ppl.plate("J", 3):
    ...         ppl.sample("theta", dist.Normal(0.0, 1.0))
    >>> plate_dims(ppl.handlers.trace(ppl.handlers.seed(model, 0)).get_trace())
    {'theta': ['J']}
    """
    out = {}
    for name, site in model_trace.items():
        if site["type"] not in ("sample", "deterministic") or site["value"] is None:
            continue
        shape = tuple(ops.shape(site["value"]))
        event_ndim = len(site["fn"].event_shape) if site["type"] == "sample" else 0
        names = [f"{name}_dim_{i}" for i in range(len(shape))]
        for frame in site.get("cond_indep_stack", ()):
            axis = len(shape) - event_ndim + frame.dim
            if 0 <= axis < len(shape) and shape[axis] == frame.size:
                names[axis] = frame.name
        if names:
            out[name] = names
    return out


def _chain_draw(group: dict | None, chains_draws: tuple) -> dict:
    """``Predictive`` output ``(S, ...)`` as ``(chains, draws, ...)``: split into the run's
    chains when ``S = chains * draws``, one chain of ``S`` draws otherwise."""
    out = {}
    for k, v in (group or {}).items():
        arr = ops.to_numpy(v)
        split = arr.shape[:1] == (chains_draws[0] * chains_draws[1],)
        lead = chains_draws if split else (1, arr.shape[0])
        out[k] = arr.reshape(lead + arr.shape[1:])
    return out


def mcmc_groups(model, model_call, samples, *, posterior_predictive=None, prior=None):
    """What ``MCMC.to_arviz`` adds to the posterior: observed data, the pointwise
    log-likelihood, predictive groups and the plate dimension names.

    Parameters
    ----------
    model
        The model function, or ``None`` (``potential_fn=`` runs: nothing to add).
    model_call
        ``(args, kwargs)`` the model was run with.
    samples
        ``site -> (chains, draws, ...)`` backend draws.
    posterior_predictive, prior
        ``Predictive`` output (``site -> (S, ...)``); the prior's observed sites go to the
        ``prior_predictive`` group.

    Returns
    -------
    tuple
        ``(observed, groups, dims)`` for :func:`to_inference_data`.
    """
    if model is None or model_call is None:
        return None, {}, {}
    args, kwargs = model_call
    model_trace = trace(seed(model, rng_seed=0)).get_trace(*args, **kwargs)
    observed = {name: model_trace[name]["value"] for name in observed_sites(model_trace)}
    try:
        loglik = log_likelihood(model, samples, *args, batch_ndims=2, **kwargs)
    except ValueError as err:
        warnings.warn(f"to_arviz: no log_likelihood group ({err})", stacklevel=3)
        loglik = {}
    chains_draws = tuple(ops.shape(next(iter(samples.values()))))[:2]
    prior = _chain_draw(prior, chains_draws)
    groups = {"log_likelihood": {k: v for k, v in loglik.items() if k in observed},
              "posterior_predictive": _chain_draw(posterior_predictive, chains_draws),
              "prior": {k: v for k, v in prior.items() if k not in observed},
              "prior_predictive": {k: v for k, v in prior.items() if k in observed}}
    return observed or None, groups, plate_dims(model_trace)
