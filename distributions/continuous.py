"""Univariate continuous families with NumPyro's parameter names (TruncatedNormal: truncated.py).

Each family draws reparameterized samples (a smooth function of the parameters and of
parameter-free noise, or of the backend's differentiable gamma/beta samplers), so gradients flow
through ``sample``. ``log_prob`` is ``-inf`` outside the support, as in ``scipy.stats``.

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

import ppl
from ppl import ops
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution, _check, _describe, validate_sample
from ppl.distributions.util import as_float, batch_shape_of, finfo

__all__ = [
    "Beta",
    "Cauchy",
    "Chi2",
    "Exponential",
    "Gamma",
    "HalfCauchy",
    "HalfNormal",
    "InverseGamma",
    "Laplace",
    "LogNormal",
    "Logistic",
    "Normal",
    "StudentT",
    "Uniform",
    "Weibull",
]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_2 = math.log(2.0)
_LOG_PI = math.log(math.pi)


def _full(dist, value):
    """``value`` broadcast to ``dist.batch_shape`` (for ``mean`` / ``variance``)."""
    return ops.broadcast_to(value, dist.batch_shape)


def _const(dist, value):
    """An array of ``batch_shape`` filled with the Python float ``value``."""
    return ops.full(dist.batch_shape, value)


def _restrict(inside, value, safe=1.0):
    """``value`` where ``inside``, else ``safe``: keeps out-of-support entries (and their
    gradients) finite before the final ``where(inside, lp, -inf)``."""
    return ops.where(inside, value, ops.zeros_like(value) + safe)


def _mask_outside(inside, lp):
    return ops.where(inside, lp, ops.zeros_like(lp) - np.inf)


class _LocScale(Distribution):
    """Shared plumbing of the location-scale families."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    reparametrized_params = ["loc", "scale"]

    def __init__(self, loc=0.0, scale=1.0, *, validate_args=None):
        self.loc, self.scale = as_float(loc), as_float(scale)
        super().__init__(batch_shape_of(self.loc, self.scale), validate_args=validate_args)

    def _noise(self, key, shape):
        raise NotImplementedError

    def sample(self, key, sample_shape=()):
        return self.loc + self.scale * self._noise(key, self.shape(sample_shape))


class Normal(_LocScale):
    """Normal (Gaussian) distribution with mean ``loc`` and standard deviation ``scale``."""

    def _noise(self, key, shape):
        return ppl.random.normal(key, shape)

    @validate_sample
    def log_prob(self, value):
        z = (as_float(value) - self.loc) / self.scale
        return -0.5 * z * z - ops.log(self.scale) - _HALF_LOG_2PI

    def cdf(self, value):
        return ops.ndtr((as_float(value) - self.loc) / self.scale)

    def icdf(self, q):
        return self.loc + self.scale * ops.ndtri(as_float(q))

    def entropy(self):
        return _full(self, 0.5 + _HALF_LOG_2PI + ops.log(self.scale))

    @property
    def mean(self):
        return _full(self, self.loc)

    @property
    def variance(self):
        return _full(self, self.scale * self.scale)


class Cauchy(_LocScale):
    """Cauchy distribution; its mean and variance are undefined (``nan`` / ``inf``)."""

    def _noise(self, key, shape):
        return ppl.random.cauchy(key, shape)

    @validate_sample
    def log_prob(self, value):
        z = (as_float(value) - self.loc) / self.scale
        return -_LOG_PI - ops.log(self.scale) - ops.log1p(z * z)

    def cdf(self, value):
        return 0.5 + ops.atan((as_float(value) - self.loc) / self.scale) / math.pi

    def icdf(self, q):
        return self.loc + self.scale * ops.tan(math.pi * (as_float(q) - 0.5))

    def entropy(self):
        return _full(self, math.log(4.0 * math.pi) + ops.log(self.scale))

    @property
    def mean(self):
        return _const(self, np.nan)

    @property
    def variance(self):
        return _const(self, np.inf)


class Laplace(_LocScale):
    """Laplace (double exponential) distribution."""

    def _noise(self, key, shape):
        return ppl.random.laplace(key, shape)

    @validate_sample
    def log_prob(self, value):
        return -ops.abs(as_float(value) - self.loc) / self.scale - ops.log(2.0 * self.scale)

    def cdf(self, value):
        z = (as_float(value) - self.loc) / self.scale
        return 0.5 - 0.5 * ops.sign(z) * ops.expm1(-ops.abs(z))

    def entropy(self):
        return _full(self, 1.0 + ops.log(2.0 * self.scale))

    @property
    def mean(self):
        return _full(self, self.loc)

    @property
    def variance(self):
        return _full(self, 2.0 * self.scale * self.scale)


class Logistic(_LocScale):
    """Logistic distribution."""

    def _noise(self, key, shape):
        return ppl.random.logistic(key, shape)

    @validate_sample
    def log_prob(self, value):
        z = (as_float(value) - self.loc) / self.scale
        return -z - 2.0 * ops.softplus(-z) - ops.log(self.scale)

    def cdf(self, value):
        return ops.sigmoid((as_float(value) - self.loc) / self.scale)

    def icdf(self, q):
        return self.loc + self.scale * ops.logit(as_float(q))

    def entropy(self):
        return _full(self, 2.0 + ops.log(self.scale))

    @property
    def mean(self):
        return _full(self, self.loc)

    @property
    def variance(self):
        return _full(self, self.scale * self.scale * (math.pi ** 2 / 3.0))


class StudentT(Distribution):
    """Student's t distribution with ``df`` degrees of freedom, location and scale."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    reparametrized_params = ["df", "loc", "scale"]

    def __init__(self, df, loc=0.0, scale=1.0, *, validate_args=None):
        self.df, self.loc, self.scale = as_float(df), as_float(loc), as_float(scale)
        super().__init__(batch_shape_of(self.df, self.loc, self.scale),
                         validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        shape = self.shape(sample_shape)
        return self.loc + self.scale * ppl.random.t(key, self.df, shape)

    @validate_sample
    def log_prob(self, value):
        z = (as_float(value) - self.loc) / self.scale
        df = self.df
        return (ops.gammaln(0.5 * (df + 1.0)) - ops.gammaln(0.5 * df)
                - 0.5 * ops.log(df * math.pi) - ops.log(self.scale)
                - 0.5 * (df + 1.0) * ops.log1p(z * z / df))

    @property
    def mean(self):
        df = _full(self, self.df)
        return ops.where(df > 1.0, _full(self, self.loc), ops.full_like(df, np.nan))

    @property
    def variance(self):
        df = _full(self, self.df)
        safe = ops.where(df > 2.0, df, ops.full_like(df, 3.0))
        var = self.scale * self.scale * safe / (safe - 2.0)
        return ops.where(df > 2.0, var,
                         ops.where(df > 1.0, ops.full_like(df, np.inf), ops.full_like(df, np.nan)))


class _Positive(Distribution):
    """Families on the positive half-line: ``log_prob`` is ``-inf`` below zero."""

    support = constraints.positive

    @validate_sample
    def log_prob(self, value):
        value = as_float(value)
        inside = value >= 0
        return _mask_outside(inside, self._log_prob(_restrict(inside, value)))


class HalfNormal(_Positive):
    """The absolute value of a ``Normal(0, scale)`` variable."""

    arg_constraints = {"scale": constraints.positive}
    reparametrized_params = ["scale"]

    def __init__(self, scale=1.0, *, validate_args=None):
        self.scale = as_float(scale)
        super().__init__(ops.shape(self.scale), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        return self.scale * ops.abs(ppl.random.normal(key, self.shape(sample_shape)))

    def _log_prob(self, value):
        z = value / self.scale
        return _LOG_2 - _HALF_LOG_2PI - ops.log(self.scale) - 0.5 * z * z

    def cdf(self, value):
        return ops.erf(ops.maximum(as_float(value), 0.0) / (self.scale * math.sqrt(2.0)))

    @property
    def mean(self):
        return _full(self, self.scale * math.sqrt(2.0 / math.pi))

    @property
    def variance(self):
        return _full(self, self.scale * self.scale * (1.0 - 2.0 / math.pi))


class HalfCauchy(_Positive):
    """The absolute value of a ``Cauchy(0, scale)`` variable."""

    arg_constraints = {"scale": constraints.positive}
    reparametrized_params = ["scale"]

    def __init__(self, scale=1.0, *, validate_args=None):
        self.scale = as_float(scale)
        super().__init__(ops.shape(self.scale), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        return self.scale * ops.abs(ppl.random.cauchy(key, self.shape(sample_shape)))

    def _log_prob(self, value):
        z = value / self.scale
        return _LOG_2 - _LOG_PI - ops.log(self.scale) - ops.log1p(z * z)

    @property
    def mean(self):
        return _const(self, np.inf)

    @property
    def variance(self):
        return _const(self, np.inf)


class Exponential(_Positive):
    """Exponential distribution with ``rate`` (mean ``1 / rate``)."""

    arg_constraints = {"rate": constraints.positive}
    reparametrized_params = ["rate"]

    def __init__(self, rate=1.0, *, validate_args=None):
        self.rate = as_float(rate)
        super().__init__(ops.shape(self.rate), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        return ppl.random.exponential(key, self.shape(sample_shape)) / self.rate

    def _log_prob(self, value):
        return ops.log(self.rate) - self.rate * value

    def cdf(self, value):
        return -ops.expm1(-self.rate * ops.maximum(as_float(value), 0.0))

    def icdf(self, q):
        return -ops.log1p(-as_float(q)) / self.rate

    def entropy(self):
        return _full(self, 1.0 - ops.log(self.rate))

    @property
    def mean(self):
        return _full(self, 1.0 / self.rate)

    @property
    def variance(self):
        return _full(self, 1.0 / (self.rate * self.rate))


class Gamma(_Positive):
    """Gamma distribution with ``concentration`` (shape) and ``rate`` (inverse scale)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    reparametrized_params = ["concentration", "rate"]

    def __init__(self, concentration, rate=1.0, *, validate_args=None):
        self.concentration, self.rate = as_float(concentration), as_float(rate)
        super().__init__(batch_shape_of(self.concentration, self.rate),
                         validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        shape = self.shape(sample_shape)
        g = ppl.random.gamma(key, self.concentration, shape)
        return g / self.rate

    def _log_prob(self, value):
        c, r = self.concentration, self.rate
        return ops.xlogy(c - 1.0, value) + c * ops.log(r) - r * value - ops.gammaln(c)

    @property
    def mean(self):
        return _full(self, self.concentration / self.rate)

    @property
    def variance(self):
        return _full(self, self.concentration / (self.rate * self.rate))


class Chi2(Gamma):
    """Chi-squared distribution with ``df`` degrees of freedom (``Gamma(df / 2, 1 / 2)``)."""

    arg_constraints = {"df": constraints.positive}
    reparametrized_params = ["df"]

    def __init__(self, df, *, validate_args=None):
        self.df = as_float(df)
        super().__init__(0.5 * self.df, 0.5, validate_args=validate_args)


class InverseGamma(_Positive):
    """Inverse-gamma distribution: ``1 / X`` for ``X ~ Gamma(concentration, rate)``;
    ``rate`` is the scale of the result."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    reparametrized_params = ["concentration", "rate"]

    def __init__(self, concentration, rate=1.0, *, validate_args=None):
        self.concentration, self.rate = as_float(concentration), as_float(rate)
        super().__init__(batch_shape_of(self.concentration, self.rate),
                         validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        shape = self.shape(sample_shape)
        return self.rate / ppl.random.gamma(key, self.concentration, shape)

    def _log_prob(self, value):
        c, r = self.concentration, self.rate
        pos = value > 0
        v = _restrict(pos, value)
        lp = c * ops.log(r) - ops.gammaln(c) - (c + 1.0) * ops.log(v) - r / v
        return _mask_outside(pos, lp)

    @property
    def mean(self):
        c = _full(self, self.concentration)
        safe = ops.where(c > 1.0, c, ops.full_like(c, 2.0))
        return ops.where(c > 1.0, self.rate / (safe - 1.0), ops.full_like(c, np.inf))

    @property
    def variance(self):
        c = _full(self, self.concentration)
        safe = ops.where(c > 2.0, c, ops.full_like(c, 3.0))
        var = self.rate * self.rate / ((safe - 1.0) ** 2 * (safe - 2.0))
        return ops.where(c > 2.0, var, ops.full_like(c, np.inf))


class LogNormal(_Positive):
    """``exp(X)`` for ``X ~ Normal(loc, scale)``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    reparametrized_params = ["loc", "scale"]

    def __init__(self, loc=0.0, scale=1.0, *, validate_args=None):
        self.loc, self.scale = as_float(loc), as_float(scale)
        super().__init__(batch_shape_of(self.loc, self.scale), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        return ops.exp(self.loc + self.scale * ppl.random.normal(key, self.shape(sample_shape)))

    def _log_prob(self, value):
        pos = value > 0
        logx = ops.log(_restrict(pos, value))
        z = (logx - self.loc) / self.scale
        return _mask_outside(pos, -0.5 * z * z - ops.log(self.scale) - _HALF_LOG_2PI - logx)

    def cdf(self, value):
        v = as_float(value)
        pos = v > 0
        return ops.where(pos, ops.ndtr((ops.log(_restrict(pos, v)) - self.loc) / self.scale),
                         ops.zeros_like(v))

    @property
    def mean(self):
        return _full(self, ops.exp(self.loc + 0.5 * self.scale * self.scale))

    @property
    def variance(self):
        s2 = self.scale * self.scale
        return _full(self, ops.expm1(s2) * ops.exp(2.0 * self.loc + s2))


class Weibull(_Positive):
    """Weibull distribution with ``scale`` and ``concentration`` (shape ``k``)."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    reparametrized_params = ["scale", "concentration"]

    def __init__(self, scale, concentration, *, validate_args=None):
        self.scale, self.concentration = as_float(scale), as_float(concentration)
        super().__init__(batch_shape_of(self.scale, self.concentration),
                         validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        e = ppl.random.exponential(key, self.shape(sample_shape))
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
        return _full(self, self.scale * ops.exp(ops.gammaln(1.0 + 1.0 / self.concentration)))

    @property
    def variance(self):
        k = self.concentration
        g1 = ops.exp(ops.gammaln(1.0 + 1.0 / k))
        return _full(self, self.scale ** 2 * (ops.exp(ops.gammaln(1.0 + 2.0 / k)) - g1 * g1))


class Beta(Distribution):
    """Beta distribution with ``concentration1`` (alpha) and ``concentration0`` (beta)."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    reparametrized_params = ["concentration1", "concentration0"]

    def __init__(self, concentration1, concentration0, *, validate_args=None):
        self.concentration1 = as_float(concentration1)
        self.concentration0 = as_float(concentration0)
        super().__init__(batch_shape_of(self.concentration1, self.concentration0),
                         validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        shape = self.shape(sample_shape)
        x = ppl.random.beta(key, self.concentration1, self.concentration0, shape)
        fi = finfo(x)
        return ops.clip(x, float(fi.tiny), 1.0 - float(fi.eps))

    @validate_sample
    def log_prob(self, value):
        value = as_float(value)
        inside = ops.logical_and(value >= 0, value <= 1)
        v = _restrict(inside, value, 0.5)
        a, b = self.concentration1, self.concentration0
        lp = ops.xlogy(a - 1.0, v) + ops.xlog1py(b - 1.0, -v) - ops.betaln(a, b)
        return _mask_outside(inside, lp)

    @property
    def mean(self):
        return _full(self, self.concentration1 / (self.concentration1 + self.concentration0))

    @property
    def variance(self):
        a, b = self.concentration1, self.concentration0
        t = a + b
        return _full(self, a * b / (t * t * (t + 1.0)))


class Uniform(Distribution):
    """Uniform distribution on ``[low, high]``."""

    arg_constraints = {"low": constraints.dependent, "high": constraints.dependent}
    reparametrized_params = ["low", "high"]

    def __init__(self, low=0.0, high=1.0, *, validate_args=None):
        self.low, self.high = as_float(low), as_float(high)
        super().__init__(batch_shape_of(self.low, self.high), validate_args=validate_args)

    @property
    def support(self):
        return constraints.interval(self.low, self.high)

    def _validate_parameters(self):
        _check_ordered(self, "low", self.low, "high", self.high)

    def sample(self, key, sample_shape=()):
        u = ppl.random.uniform(key, self.shape(sample_shape))
        return self.low + (self.high - self.low) * u

    @validate_sample
    def log_prob(self, value):
        value = as_float(value)
        inside = ops.logical_and(value >= self.low, value <= self.high)
        lp = -ops.log(self.high - self.low) + ops.zeros_like(value)
        return _mask_outside(inside, lp)

    def cdf(self, value):
        return ops.clip((as_float(value) - self.low) / (self.high - self.low), 0.0, 1.0)

    def icdf(self, q):
        return self.low + (self.high - self.low) * as_float(q)

    def entropy(self):
        return _full(self, ops.log(self.high - self.low))

    @property
    def mean(self):
        return _full(self, 0.5 * (self.low + self.high))

    @property
    def variance(self):
        w = self.high - self.low
        return _full(self, w * w / 12.0)


def _check_ordered(dist, lo_name, lo, hi_name, hi):
    """Validation helper: ``lo < hi`` entrywise (skipped on traced values)."""
    ok, inside = _check(constraints.positive, hi - lo)
    if not ok:
        raise ValueError(
            f"{type(dist).__name__}: parameter {hi_name!r} must satisfy the constraint "
            f"greater_than({lo_name}) (it must exceed {lo_name!r}); got {lo_name}="
            f"{_describe(lo)}, {hi_name}={_describe(hi)}. Pass {lo_name} < {hi_name}.")

