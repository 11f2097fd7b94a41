"""Families on a bounded interval, with NumPyro's parameter names: Beta (on ``[0, 1]``) and
Uniform (on ``[low, high]``); TruncatedNormal has its own module.

Both draw reparameterized samples (Beta through the backend's differentiable beta sampler).
``log_prob`` is ``-inf`` outside the interval, as in ``scipy.stats``.

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     round(float(dist.Beta(2.0, 2.0).log_prob(0.5)), 6)
0.405465
"""

from __future__ import annotations

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.parametrization import set_parameters
from ppl.distributions.util import (
    as_float,
    clamp_probs,
    full_batch,
    mask_outside,
    split_support,
)
from ppl.distributions.validation import check_ordered, validate_sample

__all__ = ["Beta", "Uniform"]


class Beta(Distribution):
    """Beta distribution with ``concentration1`` (alpha) and ``concentration0`` (beta)."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    reparametrized_params = ["concentration1", "concentration0"]

    def __init__(self, concentration1, concentration0, *, validate_args=None):
        batch = set_parameters(self, concentration1=concentration1, concentration0=concentration0)
        super().__init__(batch, validate_args=validate_args)

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
