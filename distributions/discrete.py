"""Discrete families with NumPyro's parameter names and conventions (Categorical and
Multinomial: categorical.py).

Draws are integers (the backend's default integer dtype), as in NumPyro. ``log_prob`` accepts
integer- or float-valued arrays and is ``-inf`` outside the support (negative or non-integer
counts, ``k > total_count``, an index past the last category), as in ``scipy.stats``.
Families with a success probability take exactly one of ``probs=`` and ``logits=``; the other
is available as an attribute, computed on access.

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     d = dist.Binomial(10, probs=0.3)
...     round(float(d.log_prob(3)), 6), tuple(d.sample(ppl.random.key(0), (5,)).shape)
(-1.321151, (5,))
"""

from __future__ import annotations

import numpy as np

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.parametrization import derived_parameter, set_one_of, set_parameters
from ppl.distributions.util import (
    INT_DTYPE,
    as_float,
    as_int,
    clamp_probs,
    expand_support,
    finfo,
    is_concrete,
    lgamma_difference,
    log_factorial,
    mask_outside,
    split_support,
)
from ppl.distributions.validation import batch_shape_of, validate_sample

__all__ = [
    "Bernoulli",
    "Binomial",
    "Geometric",
    "NegativeBinomial",
    "Poisson",
]


class _BinaryFamily(Distribution):
    """Plumbing shared by families with one success probability (probs or logits)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}

    def __init__(self, probs=None, logits=None, *, validate_args=None):
        self._param = set_one_of(self, probs=probs, logits=logits)
        super().__init__(batch_shape_of(self), validate_args=validate_args)

    @derived_parameter
    def probs(self):
        """Success probability, ``sigmoid(logits)``."""
        return ops.sigmoid(self.__dict__["logits"])

    @derived_parameter
    def logits(self):
        """Log-odds of success, ``logit(probs)`` (probs clamped away from 0 and 1)."""
        return ops.logit(clamp_probs(self.__dict__["probs"]))

    def _log_p_and_q(self):
        """``(log p, log(1 - p))`` computed stably from the given parameter."""
        if self._param == "logits":
            l = self.__dict__["logits"]
            return -ops.softplus(-l), -ops.softplus(l)
        p = self.__dict__["probs"]
        return ops.log(p), ops.log1p(-p)

    def _xlog_p_q(self, k, m):
        """``k log p + m log(1 - p)`` with ``0 log 0 = 0`` (``k=None``: the second term only)."""
        if self._param == "logits":
            l = self.__dict__["logits"]
            if k is None:
                return -m * ops.softplus(l)
            # log p = l - softplus(l), log(1 - p) = -softplus(l): one softplus per element
            return k * l - (k + m) * ops.softplus(l)
        p = self.__dict__["probs"]
        second = ops.xlog1py(m, -p)
        return second if k is None else second + ops.xlogy(k, p)


class Bernoulli(_BinaryFamily):
    """Bernoulli distribution: 1 with probability ``probs`` (or ``sigmoid(logits)``), else 0.

    Parameters
    ----------
    probs, logits
        Exactly one: the success probability or its log-odds.

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     round(float(dist.Bernoulli(logits=0.0).log_prob(1)), 6)
    -0.693147
    """

    support = constraints.boolean
    has_enumerate_support = True

    def sample(self, key, sample_shape=()):
        u = random.uniform(key, self.shape(sample_shape), dtype=ops.dtype_of(self.probs))
        return as_int(u < self.probs)

    @validate_sample
    def log_prob(self, value):
        inside, k = split_support(self.support, value)
        return mask_outside(inside, self._xlog_p_q(k, 1.0 - k))

    def enumerate_support(self, expand=True):
        """``[0, 1]`` on a new leading axis (broadcast to the batch if ``expand``)."""
        return expand_support(ops.arange(2, dtype=INT_DTYPE), self.batch_shape, expand)

    @property
    def mean(self):
        return ops.broadcast_to(self.probs, self.batch_shape)

    @property
    def variance(self):
        p = self.probs
        return ops.broadcast_to(p * (1.0 - p), self.batch_shape)

    def entropy(self):
        log_p, log_q = self._log_p_and_q()
        p = self.probs
        zero = ops.zeros_like(p)
        return -ops.where(p > 0, p * log_p, zero) - ops.where(p < 1, (1.0 - p) * log_q, zero)


class Binomial(_BinaryFamily):
    """Number of successes in ``total_count`` independent trials of probability ``probs``.

    Parameters
    ----------
    total_count
        Number of trials (a nonnegative integer, scalar or array).
    probs, logits
        Exactly one: the success probability or its log-odds.
    """

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, *, validate_args=None):
        self._total_count_given = total_count   # readable under jit if data (enumerate_counts)
        self.total_count = as_float(total_count)
        super().__init__(probs, logits, validate_args=validate_args)

    @property
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    def sample(self, key, sample_shape=()):
        p = self.probs
        n = ops.broadcast_to(self.total_count, self.batch_shape)
        return as_int(random.binomial(key, n, ops.broadcast_to(p, self.batch_shape),
                                      self.shape(sample_shape), ops.dtype_of(p)))

    @validate_sample
    def log_prob(self, value):
        n = self.total_count
        inside, k = split_support(self.support, value)
        log_comb = log_factorial(n) - log_factorial(k) - log_factorial(n - k)
        return mask_outside(inside, log_comb + self._xlog_p_q(k, n - k))

    def enumerate_support(self, expand=True):
        """``0..total_count`` on a new leading axis; ``total_count`` must be concrete and the
        same for the whole batch (see :func:`enumerate_counts`)."""
        return enumerate_counts(self, self._total_count_given, expand)

    @property
    def mean(self):
        return ops.broadcast_to(self.total_count * self.probs, self.batch_shape)

    @property
    def variance(self):
        p = self.probs
        return ops.broadcast_to(self.total_count * p * (1.0 - p), self.batch_shape)


class Poisson(Distribution):
    """Poisson distribution with mean ``rate``.

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     round(float(dist.Poisson(2.0).log_prob(0)), 6)
    -2.0
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate=1.0, *, validate_args=None):
        super().__init__(set_parameters(self, rate=rate), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        return as_int(random.poisson(key, self.rate, self.shape(sample_shape)))

    @validate_sample
    def log_prob(self, value):
        inside, k = split_support(self.support, value)
        return mask_outside(inside, ops.xlogy(k, self.rate) - self.rate - log_factorial(k))

    @property
    def mean(self):
        return ops.broadcast_to(self.rate, self.batch_shape)

    @property
    def variance(self):
        return ops.broadcast_to(self.rate, self.batch_shape)


class NegativeBinomial(_BinaryFamily):
    """Number of successes (probability ``probs``) before ``total_count`` failures.

    NumPyro's convention: the mean is ``total_count * probs / (1 - probs)``, and
    ``scipy.stats.nbinom(total_count, 1 - probs)`` is the same law. Sampled as a Gamma-Poisson
    mixture, so ``total_count`` may be any positive real.

    Parameters
    ----------
    total_count
        Number of failures that stops the experiment (positive, not necessarily integer).
    probs, logits
        Exactly one: the success probability or its log-odds.
    """

    arg_constraints = {"total_count": constraints.positive,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, *, validate_args=None):
        self.total_count = as_float(total_count)
        super().__init__(probs, logits, validate_args=validate_args)

    def _odds(self):
        if self._param == "logits":
            return ops.exp(self.__dict__["logits"])
        p = self.__dict__["probs"]
        return p / (1.0 - p)

    def sample(self, key, sample_shape=()):
        k_gamma, k_poisson = random.split(key, 2)
        shape = self.shape(sample_shape)
        g = random.gamma(k_gamma, ops.broadcast_to(self.total_count, self.batch_shape), shape)
        return as_int(random.poisson(k_poisson, g * self._odds(), shape))

    @validate_sample
    def log_prob(self, value):
        r = self.total_count
        inside, k = split_support(self.support, value)
        log_comb = lgamma_difference(r, k) - log_factorial(k)
        return mask_outside(inside, log_comb + self._xlog_p_q(k, r))

    @property
    def mean(self):
        return ops.broadcast_to(self.total_count * self._odds(), self.batch_shape)

    @property
    def variance(self):
        return ops.broadcast_to(self.total_count * self._odds() / (1.0 - self.probs),
                                self.batch_shape)


class Geometric(_BinaryFamily):
    """Number of failures before the first success (success probability ``probs``).

    ``scipy.stats.geom`` counts trials instead, so ``Geometric(p).log_prob(k)`` equals
    ``geom(p).logpmf(k + 1)``.
    """

    support = constraints.nonnegative_integer

    def sample(self, key, sample_shape=()):
        _, log_q = self._log_p_and_q()
        dtype = ops.dtype_of(log_q)
        u = random.uniform(key, self.shape(sample_shape), dtype=dtype,
                               minval=float(finfo(log_q).tiny), maxval=1.0)
        # Inversion: P(K >= k) = q^k, so K = floor(log U / log q).
        return as_int(ops.floor(ops.log(u) / log_q))

    @validate_sample
    def log_prob(self, value):
        inside, k = split_support(self.support, value)
        log_p, _ = self._log_p_and_q()
        return mask_outside(inside, log_p + self._xlog_p_q(None, k))

    @property
    def mean(self):
        p = self.probs
        return ops.broadcast_to((1.0 - p) / p, self.batch_shape)

    @property
    def variance(self):
        p = self.probs
        return ops.broadcast_to((1.0 - p) / (p * p), self.batch_shape)


def enumerate_counts(dist, given, expand: bool):
    """``0..total_count`` on a new leading axis (NumPyro's ``enumerate_support`` layout) for a
    count family whose ``total_count`` is the same across the batch (Binomial, BetaBinomial).

    The number of values is a shape, so the total count must be concrete when a compiled
    program is built. ``given`` is the ``total_count`` the constructor received: Python or NumPy
    data stays readable inside ``jit``, where the backend array made from it is traced on JAX
    (every array created inside ``jax.jit`` is), so it is read rather than ``dist.total_count``.
    A traced ``given`` (a ``jit``/``vmap`` argument, or computed from one) has no value: NumPyro
    fails there too (``jnp.arange`` of a tracer); this error says which argument and what to do.

    Raises
    ------
    TypeError
        If ``total_count`` is traced (a ``TypeError``, as JAX's concretization errors are; the
        backends whose ``jit`` runs an untraceable function eagerly, torch and tensorflow, do
        so on it).
    ValueError
        If ``total_count`` differs across the batch.
    """
    where = f"{type(dist).__name__}.enumerate_support"
    if not is_concrete(given):
        raise TypeError(
            f"{where}: total_count is traced (an argument of a jit- or vmap-compiled function, "
            f"or computed from one), but enumeration needs a concrete total count: the support "
            f"0..total_count has total_count + 1 values, a shape that must be known when the "
            f"program is built. Pass total_count as a Python int or a NumPy array (data the "
            f"model is given or closes over), not as a traced argument, a latent parameter or "
            f"a backend array made inside the compiled function; or do not enumerate this "
            f"site.")
    n = np.unique(np.asarray(ops.to_numpy(given)))
    if n.size != 1:
        raise ValueError(
            f"{where}: total_count must be the same across the batch, got values "
            f"{n}. Split the batch by total_count.")
    return expand_support(ops.arange(int(n[0]) + 1, dtype=INT_DTYPE), dist.batch_shape, expand)
