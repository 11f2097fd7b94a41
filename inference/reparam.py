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
* :class:`CircularReparam` samples an angle (a ``VonMises`` site, say) on the whole real line
  and wraps it into ``[-pi, pi)``, so that NUTS can cross the point where ``-pi`` meets ``pi``.

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

import math

from ppl import ops
from ppl.distributions import (
    ExpandedDistribution,
    Independent,
    TransformedDistribution,
    Uniform,
    constraints,
)
from ppl.distributions.distribution import Wrapper
from ppl.primitives import sample

__all__ = ["LocScaleReparam", "TransformReparam", "CircularReparam"]


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


def _wrap_angle(angle):
    """``angle`` wrapped into ``[-pi, pi)``."""
    two_pi = 2.0 * math.pi
    wrapped = angle - two_pi * ops.floor((angle + math.pi) / two_pi)
    return ops.where(wrapped >= math.pi, wrapped - two_pi, wrapped)


class _OnTheLine(Wrapper):
    """A distribution on the circle read as a 2 pi-periodic density on the real line: support
    ``real``, ``log_prob(x) = base_dist.log_prob(wrap(x))``, draws those of ``base_dist`` (in
    ``[-pi, pi)``). Not normalisable on the line: it is a latent site's prior, for samplers
    that only need the density up to a constant."""

    arg_constraints: dict = {}
    #: the density's period: MCMC's convergence warnings judge such a site by its cos and sin
    #: (chains on different copies of the circle agree; :func:`ppl.inference.util.period_of`)
    period = 2.0 * math.pi

    def __init__(self, base_dist):
        self.base_dist = base_dist
        super().__init__(base_dist.batch_shape, base_dist.event_shape)

    @property
    def support(self):
        return constraints.independent(constraints.real, len(self.event_shape)) \
            if self.event_shape else constraints.real

    def sample(self, key, sample_shape=()):
        return self.base_dist.sample(key, sample_shape)

    def log_prob(self, value):
        return self.base_dist.log_prob(_wrap_angle(value))

    @property
    def mean(self):
        """The base's (circular) mean, an initial value for ``init_to_mean``."""
        return self.base_dist.mean


class CircularReparam:
    """Sample an angle on the real line and wrap it: for sites whose support is
    ``constraints.circular`` (``VonMises``).

    An angle's support ``[-pi, pi]`` is an interval to the samplers, which map it to the real
    line with a sigmoid: a posterior with mass near ``+-pi`` is then split between the two ends
    of that line, and NUTS cannot cross from one to the other. Here the new latent site
    ``{name}_unwrapped`` has the site's density extended 2 pi-periodically to the whole real
    line (``log_prob(x) = fn.log_prob(wrap(x))``, support ``real``), and the site ``name``
    becomes the deterministic ``wrap(unwrapped)`` in ``[-pi, pi)``: the sampler moves freely
    around the circle, and every copy of the posterior along the line is the same one.

    The log density is NumPyro's ``CircularReparam``'s; NumPyro spreads it over two sites, a
    flat ``ImproperUniform`` for ``{name}_unwrapped`` and a ``factor`` ``{name}_factor``
    holding ``fn.log_prob(value)``. Here ``{name}_unwrapped`` carries the density itself, so
    there is no ``{name}_factor`` site (which ``log_likelihood`` and the ArviZ export would
    count as an observation), and the new site can be drawn from (its draws are the site's,
    in ``[-pi, pi)``): ``Predictive`` and ``init_to_sample`` work on the reparameterized
    model. An observed site is refused (NumPyro passes ``obs`` through). The draws of
    ``{name}_unwrapped`` wander over copies of the circle, and chains on different copies of
    one posterior disagree in its raw values: ``MCMC``'s warnings judge its R-hat and ESS on
    ``cos({name}_unwrapped)`` and ``sin({name}_unwrapped)`` instead. Where the posterior
    straddles ``+-pi`` the linear statistics of ``name`` (``print_summary``) mislead too:
    judge it by its cos and sin. Circular statistics: Mardia & Jupp (2000), "Directional
    Statistics", Wiley.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> from ppl.inference.reparam import CircularReparam
    >>> def model():
    ...     ppl.sample("theta", dist.VonMises(3.0, 2.0))
    >>> rep = ppl.handlers.reparam(model, config={"theta": CircularReparam()})
    >>> tr = ppl.handlers.trace(ppl.handlers.seed(rep, rng_seed=0)).get_trace()
    >>> [(n, s["type"]) for n, s in tr.items()]
    [('theta_unwrapped', 'sample'), ('theta', 'deterministic')]
    >>> tr = ppl.handlers.trace(ppl.handlers.substitute(rep, data={"theta_unwrapped": 7.0}))
    >>> round(float(tr.get_trace()["theta"]["value"]), 4)   # 7 - 2 pi
    0.7168
    """

    def __call__(self, name, fn, obs):
        _no_obs("CircularReparam", name, obs)
        support = fn.support
        while isinstance(support, constraints.independent):
            support = support.base_constraint
        if support is not constraints.circular:
            raise TypeError(
                f"CircularReparam: site {name!r} has a {type(_unwrap(fn)[0]).__name__} "
                f"distribution with support {support!r}; it needs an angle, a distribution "
                f"with support constraints.circular such as VonMises (remove the site from the "
                f"reparam config).")
        unwrapped = sample(f"{name}_unwrapped", _OnTheLine(fn))
        return None, _wrap_angle(unwrapped)
