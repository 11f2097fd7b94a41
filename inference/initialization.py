"""Initialisation strategies: where MCMC chains start.

A strategy is a function ``site -> constrained value or None`` (``None``: leave the site to the
next rule), used as ``substitute(seed(model, key), substitute_fn=strategy)``, as in NumPyro.
Called without a site, each returns itself with its options bound, so both
``init_to_uniform`` and ``init_to_uniform(radius=1.0)`` are strategies.

Values are drawn in unconstrained space and mapped to the support with
``biject_to(site["fn"].support)``, so they always lie inside the support, including supports
whose bounds depend on other latent values.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from ppl import ops
from ppl import random as _random
from ppl.distributions.transforms import biject_to

__all__ = ["init_to_uniform", "init_to_median", "init_to_mean", "init_to_sample",
           "init_to_feasible", "init_to_value"]


def _latent(site) -> bool:
    return (site["type"] == "sample" and not site["is_observed"] and site["value"] is None
            and not getattr(site["fn"].support, "is_discrete", False))


def site_shape(site) -> tuple:
    """Shape of a sample site's value: ``sample_shape + batch_shape + event_shape``."""
    fn = site["fn"]
    return tuple(site["kwargs"].get("sample_shape", ())) + tuple(fn.batch_shape) \
        + tuple(fn.event_shape)


def _transform(site):
    return biject_to(site["fn"].support)


def _key(site):
    key = site["kwargs"].get("rng_key")
    if key is None:
        raise ValueError(
            f"Initialising site {site['name']!r} needs a random key: run the model under "
            f"ppl.handlers.seed (initialize_model does this for you)."
        )
    return key


def init_to_uniform(site=None, *, radius: float = 2.0):
    """Start each latent uniformly in ``(-radius, radius)`` in unconstrained space (Stan's
    default, radius 2).

    >>> from ppl.inference import init_to_uniform
    >>> strategy = init_to_uniform(radius=1.0)
    """
    if site is None:
        if not radius > 0:
            raise ValueError(f"init_to_uniform: radius must be positive, got {radius}.")
        return functools.partial(init_to_uniform, radius=radius)
    if not _latent(site):
        return None
    t = _transform(site)
    ushape = t.inverse_shape(site_shape(site))
    u = _random.uniform(_key(site), ushape, minval=-radius, maxval=radius)
    return t(u)


def init_to_feasible(site=None):
    """Start each latent at zero in unconstrained space (e.g. 1 for a positive site)."""
    if site is None:
        return init_to_feasible
    if not _latent(site):
        return None
    t = _transform(site)
    return t(ops.zeros(t.inverse_shape(site_shape(site))))


def _median(x):
    s = ops.sort(x, axis=0)
    n = ops.shape(s)[0]
    if n % 2:
        return s[n // 2]
    return 0.5 * (s[n // 2 - 1] + s[n // 2])


def init_to_median(site=None, *, num_samples: int = 15):
    """Start each latent at the median of ``num_samples`` prior draws (taken elementwise in
    unconstrained space, so it lies inside the support); sites that cannot be sampled fall back
    to :func:`init_to_uniform`."""
    if site is None:
        if int(num_samples) < 1:
            raise ValueError(f"init_to_median: num_samples must be >= 1, got {num_samples}.")
        return functools.partial(init_to_median, num_samples=int(num_samples))
    if not _latent(site):
        return None
    try:
        draws = site["fn"].sample(_key(site), (num_samples,) + tuple(
            site["kwargs"].get("sample_shape", ())))
    except NotImplementedError:
        return init_to_uniform(site)
    t = _transform(site)
    return t(_median(t.inv(draws)))


def init_to_mean(site=None):
    """Start each latent at its prior mean (falls back to :func:`init_to_median` when the mean
    is not finite or not available)."""
    if site is None:
        return init_to_mean
    if not _latent(site):
        return None
    try:
        mean = site["fn"].mean
    except NotImplementedError:
        return init_to_median(site)
    if not bool(ops.all(ops.isfinite(mean))):
        return init_to_median(site)
    return ops.broadcast_to(mean, site_shape(site))


def init_to_sample(site=None):
    """Start each latent at one prior draw."""
    if site is None:
        return init_to_sample
    if not _latent(site):
        return None
    return site["fn"].sample(_key(site), tuple(site["kwargs"].get("sample_shape", ())))


def init_to_value(site=None, *, values=None, init_strategy=None):
    """Start the latents named in ``values`` there (broadcast to the site's shape), and the
    others with ``init_strategy`` (default :func:`init_to_uniform`).

    >>> from ppl.inference import init_to_value
    >>> strategy = init_to_value(values={"mu": 0.0})
    """
    if site is None:
        values = {} if values is None else values
        if not isinstance(values, Mapping):
            raise TypeError(
                f"init_to_value: values must be a dict of site name -> value, got "
                f"{type(values).__name__}."
            )
        return functools.partial(init_to_value, values=values,
                                 init_strategy=init_strategy or init_to_uniform())
    if not _latent(site):
        return None
    values = values or {}
    if site["name"] in values:
        value = values[site["name"]]
        value = value if ops.is_array(value) else ops.asarray(value)
        shape = site_shape(site)
        try:
            ops.broadcast_shapes(ops.shape(value), shape)
            if ops.broadcast_shapes(ops.shape(value), shape) != shape:
                raise ValueError
        except ValueError:
            raise ValueError(
                f"init_to_value: the value for site {site['name']!r} has shape "
                f"{ops.shape(value)}, which does not broadcast to the site's shape {shape}."
            ) from None
        support = site["fn"].support
        if not ops.is_tracer(value) and not bool(ops.all(support.check(value))):
            raise ValueError(
                f"init_to_value: the value for site {site['name']!r} is outside its support "
                f"{support!r}; give a value inside it."
            )
        return ops.broadcast_to(value, shape)
    return (init_strategy or init_to_uniform())(site)
