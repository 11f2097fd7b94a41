"""Families on a bounded interval, with NumPyro's parameter names: Beta and Kumaraswamy (on
``[0, 1]``) and Uniform (on ``[low, high]``); TruncatedNormal has its own module.

All draw reparameterized samples (Beta through the backend's differentiable beta sampler,
Kumaraswamy by its inverse CDF).
``log_prob`` is ``-inf`` outside the interval, as in ``scipy.stats``.

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     round(float(dist.Beta(2.0, 2.0).log_prob(0.5)), 6)
0.405465
"""

from __future__ import annotations

import math

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.parametrization import set_parameters
from ppl.distributions.util import (
    as_float,
    clamp_probs,
    finfo,
    full_batch,
    log1mexp,
    mask_outside,
    split_support,
)
from ppl.distributions.validation import check_ordered, validate_sample

__all__ = ["Beta", "Kumaraswamy", "Uniform"]


class _OnTheUnitInterval(Distribution):
    """A family on ``[0, 1]`` with two positive shape parameters, NumPyro's ``concentration1``
    (``a``) and ``concentration0`` (``b``): Beta and Kumaraswamy."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    reparametrized_params = ["concentration1", "concentration0"]

    def __init__(self, concentration1, concentration0, *, validate_args=None):
        batch = set_parameters(self, concentration1=concentration1, concentration0=concentration0)
        super().__init__(batch, validate_args=validate_args)


class Beta(_OnTheUnitInterval):
    """Beta distribution with ``concentration1`` (alpha) and ``concentration0`` (beta)."""

    def sample(self, key, sample_shape=()):
        shape = self.shape(sample_shape)
        return clamp_probs(random.beta(key, self.concentration1, self.concentration0, shape))

    @validate_sample
    def log_prob(self, value):
        inside, v = split_support(self.support, value, 0.5)
        a, b = self.concentration1, self.concentration0
        lp = ops.xlogy(a - 1.0, v) + ops.xlog1py(b - 1.0, -v) - ops.betaln(a, b)
        return mask_outside(inside, lp)

    @property
    def mean(self):
        return full_batch(self, self.concentration1 / (self.concentration1 + self.concentration0))

    @property
    def variance(self):
        a, b = self.concentration1, self.concentration0
        t = a + b
        return full_batch(self, a * b / (t * t * (t + 1.0)))


class Kumaraswamy(_OnTheUnitInterval):
    """Kumaraswamy distribution on ``[0, 1]`` with ``concentration1`` (``a``) and
    ``concentration0`` (``b``): a Beta-like family whose CDF has a closed form,
    ``F(x) = 1 - (1 - x^a)^b`` (Kumaraswamy 1980, "A generalized probability density function
    for double-bounded random processes", J. Hydrology 46; Jones 2009, "Kumaraswamy's
    distribution: a beta-type distribution with some tractability advantages", Stat.
    Methodol. 6).

    The density is ``a b x^(a-1) (1 - x^a)^(b-1)``, with ``log(1 - x^a)`` formed from
    ``a log x`` (accurate where ``x^a`` is near 1 and where it is tiny). Draws are the inverse
    CDF of a uniform, ``x = (1 - (1 - u)^(1/b))^(1/a)``, taken in log space (reparameterized).
    The raw moments are ``E[x^k] = b B(1 + k/a, b)``.

    Parameters
    ----------
    concentration1
        ``a > 0``.
    concentration0
        ``b > 0``.
    validate_args
        Check the parameters and ``log_prob`` values.

    Examples
    --------
    >>> import ppl
    >>> from ppl.distributions.bounded import Kumaraswamy
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = Kumaraswamy(2.0, 3.0)
    ...     round(float(d.log_prob(0.5)), 6), round(float(d.cdf(0.5)), 6), round(float(d.mean), 6)
    (0.523248, 0.578125, 0.457143)
    """

    def sample(self, key, sample_shape=()):
        # u > 0 keeps the draw's log (and its gradient) finite where u = 0 would give x = 0
        a = self.concentration1
        u = random.uniform(key, self.shape(sample_shape), ops.dtype_of(a),
                           minval=float(finfo(a).tiny))
        return clamp_probs(self.icdf(u))

    @validate_sample
    def log_prob(self, value):
        inside, v = split_support(self.support, value, 0.5)
        a, b = self.concentration1, self.concentration0
        # inside (0, 1) from log x: log(1 - x^a) = log1mexp(a log x), exact where x^a ~ 1
        interior = ops.logical_and(v > 0.0, v < 1.0)
        log_v = ops.log(ops.where(interior, v, 0.5))
        lp = (a - 1.0) * log_v + (b - 1.0) * log1mexp(a * log_v)
        # at x = 0 or 1, x^a is 0 or 1 exactly: the density is 0, a b or infinite
        edge = ops.xlogy(a - 1.0, v) + ops.xlogy(b - 1.0, 1.0 - v ** a)
        return mask_outside(inside, ops.log(a) + ops.log(b) + ops.where(interior, lp, edge))

    def cdf(self, value):
        """``1 - (1 - x^a)^b = -expm1(b log1mexp(a log x))`` (no cancellation near 0)."""
        v = as_float(value)
        a, b = self.concentration1, self.concentration0
        interior = ops.logical_and(v > 0.0, v < 1.0)
        f = -ops.expm1(b * log1mexp(a * ops.log(ops.where(interior, v, 0.5))))
        return ops.where(interior, f, ops.where(v <= 0.0, ops.zeros_like(v), ops.ones_like(v)))

    def icdf(self, q):
        """``(1 - (1 - q)^(1/b))^(1/a)``, in log space (accurate for tiny ``q``); NaN outside
        ``[0, 1]``."""
        q = as_float(q)
        a, b = self.concentration1, self.concentration0
        interior = ops.logical_and(q > 0.0, q < 1.0)
        x = ops.exp(log1mexp(ops.log1p(-ops.where(interior, q, 0.5)) / b) / a)
        edge = ops.where(q == 0.0, ops.zeros_like(q),
                         ops.where(q == 1.0, ops.ones_like(q), ops.full_like(q, math.nan)))
        return ops.where(interior, x, edge)

    def _raw_moment(self, k: float):
        """``E[x^k] = b B(1 + k/a, b)``."""
        a, b = self.concentration1, self.concentration0
        return ops.exp(ops.log(b) + ops.betaln(1.0 + k / a, b))

    @property
    def mean(self):
        return full_batch(self, self._raw_moment(1.0))

    @property
    def variance(self):
        m1 = self._raw_moment(1.0)
        return full_batch(self, self._raw_moment(2.0) - m1 * m1)


class Uniform(Distribution):
    """Uniform distribution on ``[low, high]``."""

    arg_constraints = {"low": constraints.dependent, "high": constraints.dependent}
    reparametrized_params = ["low", "high"]

    def __init__(self, low=0.0, high=1.0, *, validate_args=None):
        super().__init__(set_parameters(self, low=low, high=high), validate_args=validate_args)

    @property
    def support(self):
        return constraints.interval(self.low, self.high)

    def _validate_parameters(self):
        check_ordered(self, "low", "high")

    def sample(self, key, sample_shape=()):
        u = random.uniform(key, self.shape(sample_shape))
        return self.low + (self.high - self.low) * u

    @validate_sample
    def log_prob(self, value):
        value = as_float(value)
        inside = ops.logical_and(value >= self.low, value <= self.high)
        lp = -ops.log(self.high - self.low) + ops.zeros_like(value)
        return mask_outside(inside, lp)

    def cdf(self, value):
        return ops.clip((as_float(value) - self.low) / (self.high - self.low), 0.0, 1.0)

    def icdf(self, q):
        return self.low + (self.high - self.low) * as_float(q)

    def entropy(self):
        return full_batch(self, ops.log(self.high - self.low))

    @property
    def mean(self):
        return full_batch(self, 0.5 * (self.low + self.high))

    @property
    def variance(self):
        w = self.high - self.low
        return full_batch(self, w * w / 12.0)
