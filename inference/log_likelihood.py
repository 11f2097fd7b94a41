"""The pointwise log-likelihood of observed sites at posterior draws (for LOO and WAIC).

``log p(y_i | theta_s)`` for every observed site ``y``, element ``i`` of its batch shape and
draw ``theta_s``: the input of Pareto-smoothed importance-sampling leave-one-out
cross-validation and of WAIC (Vehtari, Gelman & Gabry 2017, "Practical Bayesian model evaluation
using leave-one-out cross-validation and WAIC", Statistics and Computing 27).

Masks and scales are treated as in NumPyro's ``numpyro.infer.log_likelihood`` (see
:func:`log_likelihood`): a masked-out entry is ``0``, a scale is not applied.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ppl import ops
from ppl.backends import tree
from ppl.distributions import Unit
from ppl.handlers import Messenger, seed, substitute, trace

__all__ = ["log_likelihood", "observed_sites"]


def observed_sites(model_trace) -> list[str]:
    """Names of the observed sample sites of a trace (not ``factor`` terms)."""
    return [name for name, site in model_trace.items()
            if site["type"] == "sample" and site["is_observed"]
            and not isinstance(site["fn"], Unit)]


def _pointwise_log_prob(site):
    """``log p(y_i | theta)`` of one observed site, element by element: its ``log_prob``, ``0``
    where the site's mask (``handlers.mask``, ``obs_mask``) is false, and no scale."""
    lp = site["fn"].log_prob(site["value"])
    mask = site.get("mask")
    if mask is None or mask is True:
        return lp
    zero = ops.zeros_like(lp)
    return zero if mask is False else ops.where(mask, lp, zero)


class _no_random_subsample(Messenger):
    """Refuse a plate that would draw its subsample (``subsample_size`` without ``subsample=``):
    its indices are unknown to the caller, and the pointwise log-likelihood would cover only
    them."""

    def process_message(self, msg):
        if msg["type"] == "plate" and msg["value"] is None:
            size, subsample_size = msg["args"]
            raise ValueError(
                f"log_likelihood: plate {msg['name']!r} draws a random subsample of "
                f"{subsample_size} of its {size} indices; LOO and WAIC need log p(y_i | theta) "
                f"of every observation, at indices the caller knows. Run the model on the full "
                f"data (subsample_size=None, e.g. make subsample_size a model argument), or "
                f"pass the indices with ppl.plate(..., subsample=idx) to get those entries.")


def log_likelihood(model: Callable, posterior_samples: Mapping, *args, batch_ndims: int = 1,
                   **kwargs) -> dict:
    """Pointwise log-likelihood of each observed site at each draw, as NumPyro's.

    Masks and scales follow ``numpyro.infer.log_likelihood`` (NumPyro 0.22, checked case by
    case), which returns ``site["fn"].log_prob(value)`` and so applies masks (its ``mask``
    handler wraps ``fn`` in a ``MaskedDistribution``) but not scales:

    * ``ppl.sample(name, fn, obs=y, obs_mask=m)``: the observed site is
      ``f"{name}_observed"`` (``f"{name}_unobserved"`` is latent and needs draws, ``name`` is
      deterministic); its entries where ``m`` is false are ``0``, whatever ``y`` holds there
      (``NaN`` included), not the density of the latent value that fills them.
    * ``ppl.handlers.mask(model, mask=m)`` and ``fn = dist.X(...).mask(m)``: ``0`` where ``m``
      is false (NumPyro's ``MaskedDistribution.log_prob``); ``mask=False``: all ``0``.
      A masked-out entry is not data. It adds ``0`` to ``elpd`` and ``0`` to ``p_waic`` (its
      column is constant), but PSIS fits no tail to a constant column (ArviZ reports a Pareto
      ``k`` of ``inf`` and warns): select the observed entries, ``ll[..., m]``, before LOO.
    * ``ppl.handlers.scale`` and a subsampled plate's ``size / subsample_size``: not applied.
      LOO and WAIC need ``log p(y_i | theta)`` of each observation; a scale weights the joint
      density for inference (tempering, the subsample estimate of the full-data likelihood),
      and applying it would multiply every pointwise term.
    * A plate with ``subsample=idx``: the entries ``idx``, unscaled. A plate that draws its
      subsample (``subsample_size`` alone) raises ``ValueError``: its indices would be drawn
      here, unknown to the caller. NumPyro raises there too (it has no key to draw them).

    ``factor`` terms (``Unit`` sites) are not observations and are left out (NumPyro lists
    them).

    Parameters
    ----------
    model
        The model function.
    posterior_samples
        ``site -> draws`` with ``batch_ndims`` leading draw dimensions (``MCMC.get_samples()``:
        1; ``get_samples(group_by_chain=True)``: 2). Every latent site must be there.
    *args, **kwargs
        The model's arguments, with the observations.
    batch_ndims
        Number of leading draw dimensions of ``posterior_samples``.

    Returns
    -------
    dict
        ``observed site -> array`` of the active backend with shape ``draw dimensions +
        the site's batch shape`` (the site's ``log_prob``, masked, unscaled, not summed).

    Raises
    ------
    ValueError
        If a latent site has no draws (e.g. a discrete site summed out by enumeration), or a
        plate draws a random subsample.

    Examples
    --------
    >>> import numpy as np
    >>> import ppl, ppl.distributions as dist
    >>> y = np.array([0.5, np.nan, -1.0])
    >>> def model(y):
    ...     mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
    ...     with ppl.plate("N", 3):
    ...         ppl.sample("y", dist.Normal(mu, 1.0), obs=y, obs_mask=~np.isnan(y))
    >>> draws = {"mu": ppl.ops.zeros(5), "y_unobserved": ppl.ops.zeros((5, 3))}
    >>> ll = log_likelihood(model, draws, y)
    >>> ppl.ops.shape(ll["y_observed"])
    (5, 3)
    >>> float(ll["y_observed"][0, 1])   # the missing entry
    0.0
    """
    if isinstance(batch_ndims, bool) or not isinstance(batch_ndims, int) or batch_ndims < 0:
        raise ValueError(f"log_likelihood: batch_ndims must be an int >= 0, got {batch_ndims!r}.")
    samples = {k: v if ops.is_array(v) else ops.asarray(v) for k, v in posterior_samples.items()}
    if not samples:
        raise ValueError("log_likelihood: posterior_samples is empty; pass {site: draws}.")
    lead = tuple(ops.shape(next(iter(samples.values()))))[:batch_ndims]
    flat = {k: ops.reshape(v, (-1,) + tuple(ops.shape(v))[batch_ndims:])
            for k, v in samples.items()}

    def run(sample):
        return trace(substitute(seed(_no_random_subsample(model), rng_seed=0),
                                data=sample)).get_trace(*args, **kwargs)

    first = run(tree.map(lambda v: v[0], flat))
    missing = [name for name, site in first.items() if site["type"] == "sample"
               and not site["is_observed"] and name not in samples]
    if missing:
        raise ValueError(
            f"log_likelihood: no draws for the latent site(s) {missing}; posterior_samples must "
            f"hold every latent site (sites summed out by enumeration are not supported).")
    names = observed_sites(first)

    def one(sample):
        model_trace = run(sample)
        return {name: _pointwise_log_prob(model_trace[name]) for name in names}

    out = ops.vmap(one)(flat)
    return {k: ops.reshape(v, lead + tuple(ops.shape(v))[1:]) for k, v in out.items()}
