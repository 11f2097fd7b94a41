"""Overdispersed count families, each a conjugate compound with NumPyro's names and parameter
conventions: :class:`GammaPoisson` (a Poisson whose rate is Gamma distributed) and its
mean-concentration form :class:`NegativeBinomial2`, :class:`BetaBinomial` (a Binomial whose
success probability is Beta distributed) and :class:`DirichletMultinomial` (a Multinomial whose
probabilities are Dirichlet distributed). Zero-inflated counts: :mod:`.zero_inflated`.

``log_prob`` is the closed-form marginal (the mixing variable integrated out), ``-inf`` outside
the support as in :mod:`ppl.distributions.discrete`; ``sample`` draws the mixing variable, then
the count given it, so draws are integers (the backend's default integer dtype).

References: Greenwood & Yule (1920), J. R. Stat. Soc. 83(2) (the Gamma-Poisson mixture is
the negative binomial); Skellam (1948), J. R. Stat. Soc. B 10(2) (the Beta-Binomial);
Mosimann (1962), Biometrika 49(1/2) (the Dirichlet-Multinomial); Johnson, Kemp & Kotz (2005),
*Univariate Discrete Distributions*, 3rd ed., chapters 5-6 (moments).

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     d = dist.NegativeBinomial2(4.0, 2.0)
...     round(float(d.log_prob(3)), 6), float(d.mean), float(d.variance)
(-2.027326, 4.0, 12.0)
"""

from __future__ import annotations

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.categorical import Multinomial
from ppl.distributions.discrete import enumerate_counts
from ppl.distributions.distribution import Distribution
from ppl.distributions.parametrization import derived_parameter, set_parameters
from ppl.distributions.util import (
    as_int,
    full_batch,
    lgamma_difference,
    log_factorial,
    mask_outside,
    split_support,
)
from ppl.distributions.validation import require_ndim, validate_sample

__all__ = ["BetaBinomial", "DirichletMultinomial", "GammaPoisson", "NegativeBinomial2"]


class GammaPoisson(Distribution):
    """Poisson counts whose rate is drawn from ``Gamma(concentration, rate)``: the negative
    binomial law with ``total_count = concentration`` and success probability
    ``1 / (1 + rate)``, i.e. ``scipy.stats.nbinom(concentration, rate / (1 + rate))``.

    ``log p(k) = lgamma(k + a) - lgamma(a) - lgamma(k + 1) - a log(1 + 1/b) - k log(1 + b)``
    for concentration ``a`` and rate ``b``; mean ``a / b``, variance ``a (1 + b) / b**2``.

    Parameters
    ----------
    concentration
        Shape ``a`` of the Gamma-distributed Poisson rate (positive).
    rate
        Rate ``b`` (inverse scale) of that Gamma (positive).

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     round(float(dist.GammaPoisson(2.0, 0.5).log_prob(0)), 6)
    -2.197225
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative_integer

    def __init__(self, concentration, rate=1.0, *, validate_args=None):
        batch = set_parameters(self, concentration=concentration, rate=rate)
        super().__init__(batch, validate_args=validate_args)

    def _rate_and_scale(self):
        """``(rate, 1 / rate)`` of the mixing Gamma (a subclass may compute both directly)."""
        return self.rate, 1.0 / self.rate

    def sample(self, key, sample_shape=()):
        k_gamma, k_poisson = random.split_keys(key, 2)
        shape = self.shape(sample_shape)
        _, scale = self._rate_and_scale()
        g = random.gamma(k_gamma, ops.broadcast_to(self.concentration, self.batch_shape), shape)
        return as_int(random.poisson(k_poisson, g * scale, shape))

    @validate_sample
    def log_prob(self, value):
        a = self.concentration
        rate, scale = self._rate_and_scale()
        inside, k = split_support(self.support, value)
        # a log(b / (1 + b)) + k log(1 / (1 + b)) with log1p on both sides, so neither a large
        # nor a small rate loses digits, and k = 0 contributes 0 even for an infinite rate.
        lp = (lgamma_difference(a, k) - log_factorial(k)
              - a * ops.log1p(scale) - ops.xlog1py(k, rate))
        return mask_outside(inside, lp)

    @property
    def mean(self):
        return full_batch(self, self.concentration / self.rate)

    @property
    def variance(self):
        _, scale = self._rate_and_scale()
        return full_batch(self, self.concentration * scale * (1.0 + scale))


class _MeanParameter:
    """:class:`NegativeBinomial2`'s ``mean``: a parameter that is also the distribution's mean.

    Assigning stores the parameter as given in the instance dict (where the argument checks
    read it); reading returns it as given until the batch shape is known (while the batch shape
    is computed), then broadcast to the batch shape like every family's ``mean``.
    """

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        value = obj.__dict__["mean"]
        if "_batch_shape" not in obj.__dict__:
            return value
        return ops.broadcast_to(value, obj.batch_shape)

    def __set__(self, obj, value):
        obj.__dict__["mean"] = value


class NegativeBinomial2(GammaPoisson):
    """Negative binomial counts with a given ``mean`` ``mu`` and ``concentration`` ``phi``
    (Stan's ``neg_binomial_2``; ``GammaPoisson(phi, phi / mu)``): variance ``mu + mu**2 / phi``.

    Parameters
    ----------
    mean
        Mean ``mu`` (nonnegative; ``0`` puts all the mass on zero).
    concentration
        Inverse overdispersion ``phi`` (positive; large values approach ``Poisson(mu)``).

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.NegativeBinomial2(ppl.ops.asarray([1.0, 3.0]), 5.0)
    ...     d.batch_shape, [round(float(v), 2) for v in d.variance]
    ((2,), [1.2, 4.8])
    """

    arg_constraints = {"mean": constraints.nonnegative, "concentration": constraints.positive}
    mean = _MeanParameter()

    def __init__(self, mean, concentration, *, validate_args=None):
        batch = set_parameters(self, mean=mean, concentration=concentration)
        Distribution.__init__(self, batch, validate_args=validate_args)

    @derived_parameter
    def rate(self):
        """Rate of the mixing Gamma, ``concentration / mean``."""
        return self.concentration / self.__dict__["mean"]

    def _rate_and_scale(self):
        mu, phi = self.__dict__["mean"], self.concentration
        return phi / mu, mu / phi

    @property
    def variance(self):
        mu = self.__dict__["mean"]
        return full_batch(self, mu + mu * mu / self.concentration)


class BetaBinomial(Distribution):
    """Successes in ``total_count`` trials whose success probability is drawn from
    ``Beta(concentration1, concentration0)`` (``scipy.stats.betabinom(n, a, b)``).

    ``log p(k) = log C(n, k) + log B(k + a, n - k + b) - log B(a, b)``; mean ``n a / (a + b)``.

    Parameters
    ----------
    concentration1, concentration0
        The Beta's ``alpha`` and ``beta`` (positive).
    total_count
        Number of trials (a nonnegative integer, scalar or array).

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.BetaBinomial(2.0, 3.0, 4)
    ...     round(float(d.log_prob(1)), 6), tuple(d.enumerate_support().shape)
    (-1.252763, (5,))
    """

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive,
                       "total_count": constraints.nonnegative_integer}
    has_enumerate_support = True

    def __init__(self, concentration1, concentration0, total_count=1, *, validate_args=None):
        self._total_count_given = total_count   # readable under jit if data (enumerate_counts)
        batch = set_parameters(self, concentration1=concentration1,
                               concentration0=concentration0, total_count=total_count)
        super().__init__(batch, validate_args=validate_args)

    @property
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    def sample(self, key, sample_shape=()):
        k_beta, k_binomial = random.split_keys(key, 2)
        shape = self.shape(sample_shape)
        p = random.beta(k_beta, self.concentration1, self.concentration0, shape)
        n = ops.broadcast_to(self.total_count, self.batch_shape)
        return as_int(random.binomial(k_binomial, n, p, shape, ops.dtype_of(p)))

    @validate_sample
    def log_prob(self, value):
        a, b, n = self.concentration1, self.concentration0, self.total_count
        inside, k = split_support(self.support, value)
        log_comb = log_factorial(n) - log_factorial(k) - log_factorial(n - k)
        # log B(k + a, n - k + b) - log B(a, b) as three log-gamma differences, each accurate
        # for large concentrations (the six log-gammas cancel there)
        log_beta_ratio = (lgamma_difference(a, k) + lgamma_difference(b, n - k)
                          - lgamma_difference(a + b, n))
        return mask_outside(inside, log_comb + log_beta_ratio)

    def enumerate_support(self, expand=True):
        """``0..total_count`` on a new leading axis; ``total_count`` must be concrete and the
        same for the whole batch (see :func:`~ppl.distributions.discrete.enumerate_counts`)."""
        return enumerate_counts(self, self._total_count_given, expand)

    @property
    def mean(self):
        a, b = self.concentration1, self.concentration0
        return full_batch(self, self.total_count * a / (a + b))

    @property
    def variance(self):
        a, b, n = self.concentration1, self.concentration0, self.total_count
        t = a + b
        return full_batch(self, n * a * b * (t + n) / (t * t * (t + 1.0)))


class DirichletMultinomial(Distribution):
    """Counts of ``K`` categories in ``total_count`` draws whose probabilities are drawn from
    ``Dirichlet(concentration)`` (``scipy.stats.dirichlet_multinomial``).

    With ``A = sum(concentration)``: ``log p(x) = lgamma(n + 1) + lgamma(A) - lgamma(n + A)
    + sum_k [lgamma(x_k + alpha_k) - lgamma(alpha_k) - lgamma(x_k + 1)]`` for counts summing to
    ``n``; mean ``n alpha / A``.

    Parameters
    ----------
    concentration
        Positive concentrations ``alpha``, shape ``batch_shape + (K,)``.
    total_count
        Number of draws (a nonnegative integer, scalar or array over the batch).
    total_count_max
        Accepted for NumPyro compatibility and ignored (see :class:`Multinomial`).

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.DirichletMultinomial(ppl.ops.asarray([1.0, 2.0, 3.0]), 4)
    ...     round(float(d.log_prob(ppl.ops.asarray([1, 1, 2]))), 6), d.event_shape
    (-2.351375, (3,))
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1),
                       "total_count": constraints.nonnegative_integer}

    def __init__(self, concentration, total_count=1, *, total_count_max=None,
                 validate_args=None):
        batch = set_parameters(self, concentration=concentration, total_count=total_count)
        require_ndim(self, "concentration", self.concentration, 1, "the categories, last axis")
        super().__init__(batch, ops.shape(self.concentration)[-1:], validate_args=validate_args)

    @property
    def support(self):
        return constraints.multinomial(self.total_count)

    def sample(self, key, sample_shape=()):
        k_dirichlet, k_multinomial = random.split_keys(key, 2)
        alpha = ops.broadcast_to(self.concentration, self.batch_shape + self.event_shape)
        shape = tuple(sample_shape) + self.batch_shape
        p = random.dirichlet(k_dirichlet, alpha, shape, ops.dtype_of(alpha))
        return Multinomial(self.total_count, probs=p).sample(k_multinomial)

    @validate_sample
    def log_prob(self, value):
        n, alpha = self.total_count, self.concentration
        entry_ok, x = split_support(constraints.nonnegative_integer, value)
        inside = ops.logical_and(ops.all(entry_ok, axis=-1), ops.sum(x, axis=-1) == n)
        total = ops.sum(alpha, axis=-1)
        per_category = lgamma_difference(alpha, x) - log_factorial(x)
        lp = (log_factorial(n) - lgamma_difference(total, n) + ops.sum(per_category, axis=-1))
        return mask_outside(inside, lp)

    def _probs_and_total(self):
        alpha = self.concentration
        total = ops.sum(alpha, axis=-1, keepdims=True)
        return alpha / total, total

    @property
    def mean(self):
        p, _ = self._probs_and_total()
        return ops.broadcast_to(ops.expand_dims(self.total_count, -1) * p,
                                self.batch_shape + self.event_shape)

    @property
    def variance(self):
        p, total = self._probs_and_total()
        n = ops.expand_dims(self.total_count, -1)
        return ops.broadcast_to(n * p * (1.0 - p) * (n + total) / (1.0 + total),
                                self.batch_shape + self.event_shape)
