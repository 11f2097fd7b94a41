"""Families on the positive half-line, with NumPyro's parameter names: the half-distributions
HalfNormal and HalfCauchy (one base over a symmetric family), Exponential, Gamma, Chi2,
InverseGamma, LogNormal and Weibull.

Each draws reparameterized samples (a smooth function of the parameters and of parameter-free
noise, or of the backend's differentiable gamma sampler). ``log_prob`` is ``-inf`` below zero, as
in ``scipy.stats``.

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     x = dist.Gamma(2.0, 3.0).sample(ppl.random.key(0), (4,))
...     tuple(x.shape)
(4,)
"""

from __future__ import annotations

import math

import numpy as np

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.locscale import Cauchy, Normal
from ppl.distributions.parametrization import set_parameters
from ppl.distributions.util import (
    HALF_LOG_2PI,
    LOG_2,
    as_float,
    full_batch,
    mask_outside,
    restrict,
)
from ppl.distributions.validation import validate_sample

__all__ = [
    "Chi2",
    "Exponential",
    "Gamma",
    "HalfCauchy",
    "HalfNormal",
    "InverseGamma",
    "LogNormal",
    "Weibull",
]


class _Positive(Distribution):
    """Families on the positive half-line: ``log_prob`` is ``-inf`` below zero; subclasses give
    ``_log_prob`` for values ``>= 0``."""

    support = constraints.positive

    @validate_sample
    def log_prob(self, value):
        value = as_float(value)
        inside = value >= 0
        return mask_outside(inside, self._log_prob(restrict(inside, value)))


class _Half(_Positive):
    """``|X|`` for ``X ~ symmetric(0, scale)``: density ``2 p(x)`` on ``x >= 0``.

    Subclasses name the symmetric location-scale family in ``_symmetric`` and give the mean and
    variance of the ``scale = 1`` member.
    """

    arg_constraints = {"scale": constraints.positive}
    reparametrized_params = ["scale"]
    _symmetric: type
    _unit_mean: float
    _unit_variance: float

    def __init__(self, scale=1.0, *, validate_args=None):
        super().__init__(set_parameters(self, scale=scale), validate_args=validate_args)

    def _base(self):
        return self._symmetric(0.0, self.scale, validate_args=False)

    def sample(self, key, sample_shape=()):
        return ops.abs(self._base().sample(key, sample_shape))

    def _log_prob(self, value):
        return LOG_2 + self._base().log_prob(value)

    @property
    def mean(self):
        return full_batch(self, self.scale * self._unit_mean)

    @property
    def variance(self):
        return full_batch(self, self.scale * self.scale * self._unit_variance)


class HalfNormal(_Half):
    """The absolute value of a ``Normal(0, scale)`` variable."""

    _symmetric = Normal
    _unit_mean = math.sqrt(2.0 / math.pi)
    _unit_variance = 1.0 - 2.0 / math.pi

    def cdf(self, value):
        return ops.erf(ops.maximum(as_float(value), 0.0) / (self.scale * math.sqrt(2.0)))


class HalfCauchy(_Half):
    """The absolute value of a ``Cauchy(0, scale)`` variable; its mean and variance are
    infinite."""

    _symmetric = Cauchy
    _unit_mean = math.inf
    _unit_variance = math.inf


class Exponential(_Positive):
    """Exponential distribution with ``rate`` (mean ``1 / rate``)."""

    arg_constraints = {"rate": constraints.positive}
    reparametrized_params = ["rate"]

    def __init__(self, rate=1.0, *, validate_args=None):
        super().__init__(set_parameters(self, rate=rate), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        return random.exponential(key, self.shape(sample_shape)) / self.rate

    def _log_prob(self, value):
        return ops.log(self.rate) - self.rate * value

    def cdf(self, value):
        return -ops.expm1(-self.rate * ops.maximum(as_float(value), 0.0))

    def icdf(self, q):
        return -ops.log1p(-as_float(q)) / self.rate

    def entropy(self):
        return full_batch(self, 1.0 - ops.log(self.rate))

    @property
    def mean(self):
        return full_batch(self, 1.0 / self.rate)

    @property
    def variance(self):
        return full_batch(self, 1.0 / (self.rate * self.rate))


class _ConcentrationRate(_Positive):
    """Gamma and inverse-gamma: ``concentration`` and ``rate`` parameters, gamma draws."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    reparametrized_params = ["concentration", "rate"]

    def __init__(self, concentration, rate=1.0, *, validate_args=None):
        super().__init__(set_parameters(self, concentration=concentration, rate=rate),
                         validate_args=validate_args)

    def _gamma(self, key, sample_shape):
        """Draws of ``Gamma(concentration, 1)``."""
        return random.gamma(key, self.concentration, self.shape(sample_shape))


class Gamma(_ConcentrationRate):
    """Gamma distribution with ``concentration`` (shape) and ``rate`` (inverse scale)."""

    def sample(self, key, sample_shape=()):
        return self._gamma(key, sample_shape) / self.rate

    def _log_prob(self, value):
        c, r = self.concentration, self.rate
        return ops.xlogy(c - 1.0, value) + c * ops.log(r) - r * value - ops.gammaln(c)

    @property
    def mean(self):
        return full_batch(self, self.concentration / self.rate)

    @property
    def variance(self):
        return full_batch(self, self.concentration / (self.rate * self.rate))


class Chi2(Gamma):
    """Chi-squared distribution with ``df`` degrees of freedom (``Gamma(df / 2, 1 / 2)``)."""

    arg_constraints = {"df": constraints.positive}
    reparametrized_params = ["df"]

    def __init__(self, df, *, validate_args=None):
        self.df = as_float(df)
        super().__init__(0.5 * self.df, 0.5, validate_args=validate_args)


class InverseGamma(_ConcentrationRate):
    """Inverse-gamma distribution: ``1 / X`` for ``X ~ Gamma(concentration, rate)``;
    ``rate`` is the scale of the result."""

    def sample(self, key, sample_shape=()):
        return self.rate / self._gamma(key, sample_shape)

    def _log_prob(self, value):
        c, r = self.concentration, self.rate
        pos = value > 0
        v = restrict(pos, value)
        lp = c * ops.log(r) - ops.gammaln(c) - (c + 1.0) * ops.log(v) - r / v
        return mask_outside(pos, lp)

    @property
    def mean(self):
        c = full_batch(self, self.concentration)
        safe = ops.where(c > 1.0, c, ops.full_like(c, 2.0))
        return ops.where(c > 1.0, self.rate / (safe - 1.0), ops.full_like(c, np.inf))

    @property
    def variance(self):
        c = full_batch(self, self.concentration)
        safe = ops.where(c > 2.0, c, ops.full_like(c, 3.0))
        var = self.rate * self.rate / ((safe - 1.0) ** 2 * (safe - 2.0))
        return ops.where(c > 2.0, var, ops.full_like(c, np.inf))


class LogNormal(_Positive):
    """``exp(X)`` for ``X ~ Normal(loc, scale)``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    reparametrized_params = ["loc", "scale"]

    def __init__(self, loc=0.0, scale=1.0, *, validate_args=None):
        super().__init__(set_parameters(self, loc=loc, scale=scale), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        return ops.exp(self.loc + self.scale * random.normal(key, self.shape(sample_shape)))

    def _log_prob(self, value):
        pos = value > 0
        logx = ops.log(restrict(pos, value))
        z = (logx - self.loc) / self.scale
        return mask_outside(pos, -0.5 * z * z - ops.log(self.scale) - HALF_LOG_2PI - logx)

    def cdf(self, value):
        v = as_float(value)
        pos = v > 0
        return ops.where(pos, ops.ndtr((ops.log(restrict(pos, v)) - self.loc) / self.scale),
                         ops.zeros_like(v))

    @property
    def mean(self):
        return full_batch(self, ops.exp(self.loc + 0.5 * self.scale * self.scale))

    @property
    def variance(self):
        s2 = self.scale * self.scale
        return full_batch(self, ops.expm1(s2) * ops.exp(2.0 * self.loc + s2))


class Weibull(_Positive):
    """Weibull distribution with ``scale`` and ``concentration`` (shape ``k``)."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    reparametrized_params = ["scale", "concentration"]

    def __init__(self, scale, concentration, *, validate_args=None):
        super().__init__(set_parameters(self, scale=scale, concentration=concentration),
                         validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        e = random.exponential(key, self.shape(sample_shape))
        return self.scale * e ** (1.0 / self.concentration)

    def _log_prob(self, value):
        k = self.concentration
        z = value / self.scale
        return ops.log(k) - ops.log(self.scale) + ops.xlogy(k - 1.0, z) - z ** k

    def cdf(self, value):
        z = ops.maximum(as_float(value), 0.0) / self.scale
        return -ops.expm1(-(z ** self.concentration))

    @property
    def mean(self):
        return full_batch(self, self.scale * ops.exp(ops.gammaln(1.0 + 1.0 / self.concentration)))

    @property
    def variance(self):
        k = self.concentration
        g1 = ops.exp(ops.gammaln(1.0 + 1.0 / k))
        return full_batch(self, self.scale ** 2 * (ops.exp(ops.gammaln(1.0 + 2.0 / k)) - g1 * g1))
