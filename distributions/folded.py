"""Folded families on the positive half-line: :class:`FoldedDistribution` (``|X|`` for any
univariate ``X`` on the real line, NumPyro's name) and :class:`HalfStudentT` (``|T|`` for a
centred Student-t, the heavier-tailed sibling of HalfNormal and HalfCauchy).

``log_prob`` is ``-inf`` below zero, as in ``scipy.stats`` and the other positive families.

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     d = dist.FoldedDistribution(dist.Normal(1.0, 2.0))
...     round(float(d.log_prob(0.5)), 6), round(float(dist.HalfStudentT(3.0).mean), 6)
(-1.067396, 1.102658)
"""

from __future__ import annotations

import math

import numpy as np

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution, Wrapper
from ppl.distributions.locscale import Normal, StudentT
from ppl.distributions.parametrization import set_parameters
from ppl.distributions.util import (
    LOG_2,
    as_float,
    full_batch,
    lgamma_difference,
    mask_outside,
    restrict,
)
from ppl.distributions.validation import validate_sample

__all__ = ["FoldedDistribution", "HalfStudentT"]


def _log_prob_nonnegative(log_prob, value):
    """``log_prob(x)`` for ``x >= 0``, ``-inf`` below zero (the formula sees 1 there, so it and
    its gradient stay finite)."""
    value = as_float(value)
    inside = value >= 0
    return mask_outside(inside, log_prob(restrict(inside, value)))


class FoldedDistribution(Wrapper):
    """The distribution of ``|X|`` for ``X ~ base_dist``, a univariate distribution on the
    real line: density ``p(x) + p(-x)`` for ``x >= 0``, computed as
    ``logaddexp(base.log_prob(x), base.log_prob(-x))``.

    Draws are ``|base_dist.sample(...)|``, reparameterized when the base's are. ``mean`` and
    ``variance`` are known in closed form for a :class:`Normal` base (the folded normal:
    Leone, Nelson & Nottingham 1961, "The folded normal distribution", Technometrics 3) and
    raise ``NotImplementedError`` for other bases.

    Parameters
    ----------
    base_dist
        A distribution with ``event_shape == ()`` and support ``constraints.real``.

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.FoldedDistribution(dist.Normal(0.0, 1.0))   # = HalfNormal(1)
    ...     round(float(d.log_prob(1.0)), 6), round(float(dist.HalfNormal(1.0).log_prob(1.0)), 6)
    (-0.725791, -0.725791)
    """

    arg_constraints: dict = {}
    support = constraints.positive

    def __init__(self, base_dist: Distribution, *, validate_args=None):
        if not isinstance(base_dist, Distribution):
            raise TypeError(f"FoldedDistribution: base_dist must be a Distribution, got "
                            f"{base_dist!r}.")
        if base_dist.event_shape != ():
            raise ValueError(
                f"FoldedDistribution: only univariate distributions can be folded, but "
                f"base_dist {base_dist!r} has event_shape {base_dist.event_shape}; fold each "
                "coordinate instead (e.g. fold the univariate family and use .to_event(1)).")
        if not isinstance(base_dist.support, type(constraints.real)):
            raise ValueError(
                f"FoldedDistribution: base_dist must have support constraints.real (folding "
                f"at 0 maps the real line onto [0, inf)), but {base_dist!r} has support "
                f"{base_dist.support!r}; its values are already of one sign, so use it as is.")
        self.base_dist = base_dist
        super().__init__(base_dist.batch_shape, (), validate_args)

    def sample(self, key, sample_shape=()):
        return ops.abs(self.base_dist.sample(key, sample_shape))

    @validate_sample
    def log_prob(self, value):
        def folded(x):
            return ops.logaddexp(self.base_dist.log_prob(x), self.base_dist.log_prob(-x))

        return _log_prob_nonnegative(folded, value)

    def _normal_base(self, what: str) -> Normal:
        base = self.base_dist
        if not isinstance(base, Normal):
            raise NotImplementedError(
                f"FoldedDistribution.{what} is known in closed form for a Normal base only, "
                f"not {type(base).__name__}; estimate it from draws "
                "(d.sample(key, (n,)).mean(0)) instead.")
        return base

    @property
    def mean(self):
        """``E|X| = sigma sqrt(2 / pi) exp(-mu^2 / (2 sigma^2)) + mu (1 - 2 Phi(-mu / sigma))``
        for ``X ~ Normal(mu, sigma)``."""
        base = self._normal_base("mean")
        mu, sigma = base.loc, base.scale
        z = mu / sigma
        return full_batch(self, sigma * math.sqrt(2.0 / math.pi) * ops.exp(-0.5 * z * z)
                          + mu * ops.erf(z / math.sqrt(2.0)))

    @property
    def variance(self):
        """``E[X^2] - (E|X|)^2 = mu^2 + sigma^2 - (E|X|)^2``."""
        base = self._normal_base("variance")
        mean = self.mean
        return full_batch(self, base.loc * base.loc + base.scale * base.scale - mean * mean)


class HalfStudentT(Distribution):
    """``|T|`` for ``T ~ StudentT(df, 0, scale)``: density ``2 t_df(x / scale) / scale`` on
    ``x >= 0``. ``df = 1`` is HalfCauchy, ``df -> inf`` HalfNormal.

    Parameters
    ----------
    df
        Degrees of freedom, ``> 0``.
    scale
        Scale, ``> 0``.

    ``mean`` is ``2 scale sqrt(df / pi) Gamma((df + 1) / 2) / (Gamma(df / 2) (df - 1))`` for
    ``df > 1`` (``inf`` otherwise) and ``variance`` is ``scale^2 df / (df - 2) - mean^2`` for
    ``df > 2`` (``inf`` otherwise), as for HalfCauchy. Draws are reparameterized (the
    backend's differentiable Student-t sampler).

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.HalfStudentT(4.0, 2.0)
    ...     round(float(d.log_prob(1.0)), 6), round(float(d.variance), 6)
    (-1.132391, 4.0)
    """

    arg_constraints = {"df": constraints.positive, "scale": constraints.positive}
    support = constraints.positive
    reparametrized_params = ["df", "scale"]

    def __init__(self, df, scale=1.0, *, validate_args=None):
        super().__init__(set_parameters(self, df=df, scale=scale), validate_args=validate_args)

    def _base(self):
        return StudentT(self.df, 0.0, self.scale, validate_args=False)

    def sample(self, key, sample_shape=()):
        return ops.abs(self.scale * random.t(key, self.df, self.shape(sample_shape)))

    @validate_sample
    def log_prob(self, value):
        return _log_prob_nonnegative(lambda x: LOG_2 + self._base().log_prob(x), value)

    def _mean(self, df):
        """The mean for ``df > 1`` (the caller replaces the others)."""
        log_ratio = lgamma_difference(0.5 * df, 0.5)
        return 2.0 * self.scale * ops.sqrt(df / math.pi) * ops.exp(log_ratio) / (df - 1.0)

    @property
    def mean(self):
        df = full_batch(self, self.df)
        safe = ops.where(df > 1.0, df, ops.full_like(df, 2.0))
        return ops.where(df > 1.0, self._mean(safe), ops.full_like(df, np.inf))

    @property
    def variance(self):
        df = full_batch(self, self.df)
        safe = ops.where(df > 2.0, df, ops.full_like(df, 3.0))
        mean = self._mean(safe)
        var = self.scale * self.scale * safe / (safe - 2.0) - mean * mean
        return ops.where(df > 2.0, var, ops.full_like(df, np.inf))
