"""Discrete latent variables: mark them for enumeration (:func:`config_enumerate`), sum them out
of the log-density (done by :func:`ppl.inference.log_density` and therefore by NUTS), and draw
them afterwards from their conditional posterior given the continuous sites
(:func:`infer_discrete`), by forward-filtering backward-sampling over the variable elimination
of Obermeyer et al. (2019), "Tensor variable elimination for plated factor graphs", ICML.

>>> import ppl, ppl.distributions as dist
>>> from ppl.inference import config_enumerate, log_density
>>> @config_enumerate
... def model():
...     z = ppl.sample("z", dist.Bernoulli(0.25))
...     ppl.sample("x", dist.Normal(2.0 * z, 1.0), obs=2.0)
>>> lp, _ = log_density(model, (), {}, {})   # log(0.75 N(2|0,1) + 0.25 N(2|2,1))
>>> round(float(lp), 4)
-1.9645
"""

from __future__ import annotations

import functools

from ppl import ops
from ppl import random as _random
from ppl.enumeration import enum, first_enumerated_dim, is_enumerated, placeholder_enumerated
from ppl.handlers import block, infer_config, seed, substitute, trace
from ppl.primitives import prng_key
from ppl.sum_product import contract, sample_eliminated, trace_factors

__all__ = ["config_enumerate", "infer_discrete"]


def config_enumerate(fn=None, default="parallel"):
    """Mark every latent discrete site with a finite support (``Bernoulli``, ``Categorical``,
    ``Binomial``, ...) for enumeration: ``infer={"enumerate": default}``, unless the site sets
    ``"enumerate"`` itself. Works as a wrapper or a decorator.

    Parameters
    ----------
    fn
        The model.
    default
        ``"parallel"`` (the only strategy), or ``None`` to leave sites unmarked.
    """
    if default not in ("parallel", None):
        raise ValueError(f"config_enumerate: default must be 'parallel' or None, got "
                         f"{default!r}.")
    if fn is None:
        return functools.partial(config_enumerate, default=default)

    def config_fn(site):
        if site["is_observed"] or "enumerate" in site["infer"] or default is None:
            return None
        dist = site["fn"]
        if dist.is_discrete and dist.has_enumerate_support:
            return {"enumerate": default}
        return None

    return infer_config(fn, config_fn)


def _value_of(site, index):
    """The support value at ``index`` (plate layout), shaped as the site's own batch."""
    value = ops.take(site["infer"]["_support"], index)
    frames = site.get("cond_indep_stack", ())
    ndim = max((-f.dim for f in frames), default=0)
    shape = tuple(ops.shape(value))
    return ops.reshape(value, shape[len(shape) - ndim:])


def _posterior_discrete(model, args, kwargs, *, first_available_dim, temperature, key):
    k_run, k_draw = _random.split_keys(key, 2) if key is not None else (None, None)
    run = model if k_run is None else seed(model, rng_seed=k_run)
    with block():  # the enumerated run is internal: outer handlers do not see it
        if first_available_dim is None:
            probe = trace(placeholder_enumerated(run)).get_trace(*args, **kwargs)
            first_available_dim = first_enumerated_dim(probe)
        model_trace = trace(enum(run, first_available_dim=first_available_dim)).get_trace(
            *args, **kwargs)
    plate_ndim = -first_available_dim - 1
    factors, var_ordinal, _, order = trace_factors(model_trace, plate_ndim)
    records = []
    contract(factors, var_ordinal, order, plate_ndim,
             semiring="max" if temperature == 0 else "sum", records=records)
    chosen = sample_eliminated(records, k_draw, plate_ndim=plate_ndim, temperature=temperature)
    values = {name: _value_of(model_trace[name], index) for name, index in chosen.items()}
    for name, site in model_trace.items():  # keep the continuous values of this run
        if site["type"] == "sample" and not site["is_observed"] and not is_enumerated(site):
            values[name] = site["value"]
    return values


def infer_discrete(fn=None, first_available_dim=None, temperature=1, rng_key=None):
    """A model that draws its enumerated discrete sites from their conditional posterior
    given the other sites (``temperature=1``), or sets them to their joint most likely values
    (``temperature=0``, the MAP / Viterbi assignment), then runs as usual.

    Fix the continuous sites inside, e.g. ``infer_discrete(substitute(model, data=draw))``
    or ``Predictive(model, posterior_samples, infer_discrete=True)``: the enumerated run is
    hidden from the handlers outside (they see the final run only).

    Parameters
    ----------
    fn
        The model, with its discrete sites marked for enumeration (:func:`config_enumerate`).
    first_available_dim
        The first enumeration dim (left of all plates); ``None`` finds it with one extra run.
    temperature
        ``1`` to sample, ``0`` for the MAP assignment.
    rng_key
        A key (or int seed); ``None`` takes one from an enclosing ``seed`` handler.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> from ppl.inference import config_enumerate, infer_discrete
    >>> @config_enumerate
    ... def model():
    ...     z = ppl.sample("z", dist.Bernoulli(0.5))
    ...     ppl.sample("x", dist.Normal(4.0 * z, 1.0), obs=4.0)
    >>> tr = ppl.handlers.trace(infer_discrete(model, temperature=0)).get_trace()
    >>> int(tr["z"]["value"])
    1
    """
    if temperature not in (0, 1):
        raise ValueError(f"infer_discrete: temperature must be 0 (MAP) or 1 (sample), got "
                         f"{temperature!r}.")
    if fn is None:
        return functools.partial(infer_discrete, first_available_dim=first_available_dim,
                                 temperature=temperature, rng_key=rng_key)

    @functools.wraps(fn)
    def discrete_posterior(*args, **kwargs):
        key = prng_key() if rng_key is None else _random.as_key(rng_key)
        if key is None and temperature == 1:
            raise ValueError("infer_discrete: sampling needs a key: pass rng_key=, or run the "
                             "model under ppl.handlers.seed.")
        values = _posterior_discrete(fn, args, kwargs, first_available_dim=first_available_dim,
                                     temperature=temperature, key=key)
        return substitute(fn, data=values)(*args, **kwargs)

    return discrete_posterior
