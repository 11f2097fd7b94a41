"""The pointwise log-likelihood of observed sites at posterior draws (for LOO and WAIC).

``log p(y_i | theta_s)`` for every observed site ``y``, element ``i`` of its batch shape and
draw ``theta_s``: the input of Pareto-smoothed importance-sampling leave-one-out
cross-validation and of WAIC (Vehtari, Gelman & Gabry 2017, "Practical Bayesian model evaluation
using leave-one-out cross-validation and WAIC", Statistics and Computing 27).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ppl import ops
from ppl.backends import tree
from ppl.distributions import Unit
from ppl.handlers import seed, substitute, trace

__all__ = ["log_likelihood", "observed_sites"]


def observed_sites(model_trace) -> list[str]:
    """Names of the observed sample sites of a trace (not ``factor`` terms)."""
    return [name for name, site in model_trace.items()
            if site["type"] == "sample" and site["is_observed"]
            and not isinstance(site["fn"], Unit)]


def log_likelihood(model: Callable, posterior_samples: Mapping, *args, batch_ndims: int = 1,
                   **kwargs) -> dict:
    """Pointwise log-likelihood of each observed site at each draw, as NumPyro's.

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
        the site's batch shape`` (``log_prob`` of the site's value, not summed).

    Raises
    ------
    ValueError
        If a latent site has no draws (e.g. a discrete site summed out by enumeration).

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> def model(y=None):
    ...     mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
    ...     with ppl.plate("N", 3):
    ...         ppl.sample("y", dist.Normal(mu, 1.0), obs=y)
    >>> ll = log_likelihood(model, {"mu": ppl.ops.zeros(5)}, y=ppl.ops.zeros(3))
    >>> ppl.ops.shape(ll["y"])
    (5, 3)
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
        return trace(substitute(seed(model, rng_seed=0), data=sample)).get_trace(*args, **kwargs)

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
        return {name: model_trace[name]["fn"].log_prob(model_trace[name]["value"])
                for name in names}

    out = ops.vmap(one)(flat)
    return {k: ops.reshape(v, lead + tuple(ops.shape(v))[1:]) for k, v in out.items()}
