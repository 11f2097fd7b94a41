"""Reparameterizers for :func:`ppl.handlers.reparam`: rewrite a sample site as a deterministic
function of new, better-conditioned sample sites, without changing the model.

* :class:`LocScaleReparam` moves a location-scale site between the centred form
  ``x ~ F(loc, scale)`` and the non-centred form ``x = loc + scale * z, z ~ F(0, 1)``, or
  learns a partial centring ``c`` in [0, 1] (Papaspiliopoulos, Roberts & Sköld, 2007, "A
  general framework for the parametrization of hierarchical models", Statistical Science 22(1);
  Gorinova, Moore & Hoffman, 2020, "Automatic reparameterisation of probabilistic programs",
  ICML).
* :class:`TransformReparam` samples the base of a ``TransformedDistribution`` and applies
  its transforms deterministically.

A reparameterizer is called as ``reparam(name, fn, obs)`` and returns ``(new_fn, value)``.

>>> import ppl, ppl.distributions as dist
>>> from ppl.inference.reparam import LocScaleReparam
>>> def model():
...     ppl.sample("x", dist.Normal(3.0, 2.0))
>>> rep = ppl.handlers.reparam(model, config={"x": LocScaleReparam(centered=0)})
>>> tr = ppl.handlers.trace(ppl.handlers.seed(rep, rng_seed=0)).get_trace()
>>> bool(abs(tr["x"]["value"] - (3.0 + 2.0 * tr["x_decentered"]["value"])) < 1e-5)
True
"""

from __future__ import annotations

from ppl import ops
from ppl.distributions import (
    ExpandedDistribution,
    Independent,
    TransformedDistribution,
    Uniform,
)
from ppl.primitives import sample

__all__ = ["LocScaleReparam", "TransformReparam"]


def _unwrap(fn):
    """The family under the ``expand``/``to_event`` wrappers plates and users add, and a
    function that puts the same wrappers around a new member of that family."""
    shape, event_ndim = tuple(fn.batch_shape) + tuple(fn.event_shape), len(fn.event_shape)
    base = fn
    while isinstance(base, (ExpandedDistribution, Independent)):
        base = base.base_dist

    def rewrap(new):
        base_event = len(new.event_shape)
        new = new.expand(shape[: len(shape) - base_event])
        return new.to_event(event_ndim - base_event)

    return base, rewrap


def _no_obs(kind, name, obs):
    if obs is not None:
        raise ValueError(
            f"{kind}: site {name!r} is observed; reparameterize latent sites only (remove it "
            f"from the reparam config).")


class LocScaleReparam:
    """Centre or decentre a location-scale site (``Normal``, ``StudentT``, ``Cauchy``,
    ``Laplace``, ``Logistic``: any family with ``loc`` and ``scale`` parameters).

    With centring ``c``, the new site ``{name}_decentered ~ F(c * loc, scale ** c)`` and
    ``x = loc + scale ** (1 - c) * (decentered - c * loc)``, which has the law of
    ``F(loc, scale)`` for every ``c``.

    Parameters
    ----------
    centered
        ``0``: fully non-centred (``x = loc + scale * z``); ``1``: centred (unchanged law,
        sampled as is); ``None``: ``c`` is a latent site ``{name}_centered ~ Uniform(0, 1)``
        (one per element), learnt with the rest.
    shape_params
        Other parameters of the family to keep (``df`` of ``StudentT`` is kept anyway).
    """

    def __init__(self, centered=None, shape_params=()):
        if centered is not None and not (isinstance(centered, (int, float))
                                         and 0 <= centered <= 1):
            raise ValueError(f"LocScaleReparam: centered must be None or a number in [0, 1], "
                             f"got {centered!r}.")
        self.centered = centered
        self.shape_params = tuple(shape_params)

    def __call__(self, name, fn, obs):
        _no_obs("LocScaleReparam", name, obs)
        base, rewrap = _unwrap(fn)
        params = {k: getattr(base, k) for k in base.arg_constraints}
        if "loc" not in params or "scale" not in params:
            raise TypeError(
                f"LocScaleReparam: site {name!r} has a {type(base).__name__} distribution, which "
                f"has no loc and scale parameters; use it with Normal, StudentT, Cauchy, "
                f"Laplace or Logistic sites.")
        loc, scale = params["loc"], params["scale"]
        c = self.centered
        if c is None:
            shape = tuple(fn.batch_shape) + tuple(fn.event_shape)
            prior = Uniform(0.0, 1.0).expand(shape).to_event(len(fn.event_shape))
            c = sample(f"{name}_centered", prior)
        if isinstance(c, (int, float)) and c == 0:
            params["loc"], params["scale"] = ops.zeros_like(loc), ops.ones_like(scale)
        elif not (isinstance(c, (int, float)) and c == 1):
            params["loc"], params["scale"] = loc * c, scale ** c
        z = sample(f"{name}_decentered", rewrap(type(base)(**params)))
        if isinstance(c, (int, float)) and c == 1:
            return None, z
        if isinstance(c, (int, float)) and c == 0:
            return None, loc + scale * z
        return None, loc + scale ** (1.0 - c) * (z - c * loc)


class TransformReparam:
    """Sample the base of a ``TransformedDistribution`` site as ``{name}_base`` and apply its
    transforms: the site becomes deterministic, the sampler sees the base.

    >>> import ppl, ppl.distributions as dist
    >>> from ppl.inference.reparam import TransformReparam
    >>> from ppl.distributions.transforms import ExpTransform
    >>> def model():
    ...     ppl.sample("x", dist.TransformedDistribution(dist.Normal(0.0, 1.0), ExpTransform()))
    >>> rep = ppl.handlers.reparam(model, config={"x": TransformReparam()})
    >>> list(ppl.handlers.trace(ppl.handlers.seed(rep, rng_seed=0)).get_trace())
    ['x_base', 'x']
    """

    def __call__(self, name, fn, obs):
        _no_obs("TransformReparam", name, obs)
        td, _ = _unwrap(fn)
        if not isinstance(td, TransformedDistribution):
            raise TypeError(
                f"TransformReparam: site {name!r} has a {type(td).__name__} distribution; it "
                f"needs a TransformedDistribution.")
        base = td.base_dist
        lead = tuple(fn.batch_shape)[: len(fn.batch_shape) - len(td.batch_shape)]
        if lead or tuple(fn.batch_shape) != tuple(td.batch_shape):
            base = base.expand(lead + tuple(base.batch_shape))
        extra_event = len(fn.event_shape) - len(td.event_shape)
        x = sample(f"{name}_base", base.to_event(extra_event))
        for t in td.transforms:
            x = t(x)
        return None, x
