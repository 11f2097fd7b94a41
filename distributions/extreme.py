"""Families of extremes and power-law tails, with NumPyro's names and parameters: Gumbel (the
limit law of maxima of exponential-tailed samples) and Pareto (a power-law tail above
``scale``).

Both draw reparameterized samples by inverting their CDF at parameter-free noise.

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     round(float(dist.Gumbel(0.0, 2.0).log_prob(1.0)), 6), float(dist.Pareto(1.0, 3.0).mean)
(-1.799678, 1.5)
"""

from __future__ import annotations

import math

import numpy as np

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.parametrization import set_parameters
from ppl.distributions.util import as_float, full_batch, mask_outside
from ppl.distributions.validation import validate_sample

__all__ = ["Gumbel", "Pareto"]

_EULER_GAMMA = 0.5772156649015329


class Gumbel(Distribution):
    """The Gumbel (maximum) distribution: ``P(X <= x) = exp(-exp(-(x - loc) / scale))``.

    Parameters
    ----------
    loc
        Location (the mode).
    scale
        Scale, ``> 0``.

    Draws are ``loc - scale * log(E)`` for ``E ~ Exponential(1)``; ``mean`` is
    ``loc + scale * gamma`` (Euler's constant), ``variance`` ``(pi scale)^2 / 6``.

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.Gumbel(1.0, 0.5)
    ...     round(float(d.mean), 6), round(float(d.icdf(d.cdf(2.0))), 6)
    (1.288608, 2.0)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    reparametrized_params = ["loc", "scale"]

    def __init__(self, loc=0.0, scale=1.0, *, validate_args=None):
        super().__init__(set_parameters(self, loc=loc, scale=scale), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        e = random.exponential(key, self.shape(sample_shape), dtype=ops.dtype_of(self.loc))
        tiny = float(np.finfo(ops.dtype_of(e)).tiny)
        return self.loc - self.scale * ops.log(ops.maximum(e, tiny))

    @validate_sample
    def log_prob(self, value):
        z = (as_float(value) - self.loc) / self.scale
        return -(z + ops.exp(-z)) - ops.log(self.scale)

    def cdf(self, value):
        return ops.exp(-ops.exp(-(as_float(value) - self.loc) / self.scale))

    def icdf(self, q):
        return self.loc - self.scale * ops.log(-ops.log(as_float(q)))

    def entropy(self):
        return full_batch(self, ops.log(self.scale) + _EULER_GAMMA + 1.0)

    @property
    def mean(self):
        return full_batch(self, self.loc + self.scale * _EULER_GAMMA)

    @property
    def variance(self):
        return full_batch(self, (math.pi * self.scale) ** 2 / 6.0)


class Pareto(Distribution):
    """The Pareto (type I) distribution: density ``alpha scale^alpha / x^(alpha + 1)`` for
    ``x >= scale``.

    Parameters
    ----------
    scale
        The lower bound of the support, ``> 0``.
    alpha
        The tail index, ``> 0``.

    Draws are ``scale * exp(E / alpha)`` for ``E ~ Exponential(1)``. ``mean`` is
    ``alpha scale / (alpha - 1)`` for ``alpha > 1`` and ``variance``
    ``scale^2 alpha / ((alpha - 1)^2 (alpha - 2))`` for ``alpha > 2``, ``inf`` otherwise (as
    NumPyro); ``log_prob`` is ``-inf`` below ``scale``.

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.Pareto(2.0, 3.0)
    ...     round(float(d.log_prob(3.0)), 6), float(d.cdf(4.0)), d.support
    (-1.216395, 0.875, greater_than(2.0))
    """

    arg_constraints = {"scale": constraints.positive, "alpha": constraints.positive}
    reparametrized_params = ["scale", "alpha"]

    def __init__(self, scale, alpha, *, validate_args=None):
        super().__init__(set_parameters(self, scale=scale, alpha=alpha),
                         validate_args=validate_args)

    @property
    def support(self):
        return constraints.greater_than(self.scale)

    def sample(self, key, sample_shape=()):
        e = random.exponential(key, self.shape(sample_shape), dtype=ops.dtype_of(self.scale))
        return self.scale * ops.exp(e / self.alpha)

    @validate_sample
    def log_prob(self, value):
        value = as_float(value)
        inside = value >= self.scale
        x = ops.where(inside, value, ops.zeros_like(value) + self.scale)   # finite outside
        a = self.alpha
        return mask_outside(inside, ops.log(a) + a * ops.log(self.scale) - (a + 1.0) * ops.log(x))

    def cdf(self, value):
        value = ops.maximum(as_float(value), self.scale)
        return -ops.expm1(self.alpha * (ops.log(self.scale) - ops.log(value)))

    def icdf(self, q):
        return self.scale * ops.exp(-ops.log1p(-as_float(q)) / self.alpha)

    def entropy(self):
        return full_batch(self, ops.log(self.scale / self.alpha) + 1.0 + 1.0 / self.alpha)

    @property
    def mean(self):
        a = full_batch(self, self.alpha)
        safe = ops.where(a > 1.0, a, ops.full_like(a, 2.0))
        return ops.where(a > 1.0, safe * self.scale / (safe - 1.0), ops.full_like(a, np.inf))

    @property
    def variance(self):
        a = full_batch(self, self.alpha)
        safe = ops.where(a > 2.0, a, ops.full_like(a, 3.0))
        var = self.scale * self.scale * safe / ((safe - 1.0) ** 2 * (safe - 2.0))
        return ops.where(a > 2.0, var, ops.full_like(a, np.inf))
