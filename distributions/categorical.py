"""Categorical and Multinomial: discrete families over ``K`` categories (the last axis of
``probs`` / ``logits``), with NumPyro's parameter names.

Draws are integers; ``log_prob`` accepts integer- or float-valued arrays and is ``-inf``
outside the support (see :mod:`ppl.distributions.discrete`).

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     d = dist.Multinomial(4, probs=ppl.ops.asarray([0.2, 0.3, 0.5]))
...     round(float(d.log_prob(ppl.ops.asarray([1, 1, 2]))), 6)
-1.714798
"""

from __future__ import annotations

import numpy as np

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.parametrization import derived_parameter, set_one_of
from ppl.distributions.util import (
    INT_DTYPE,
    as_float,
    as_int,
    clamp_probs,
    expand_support,
    log_factorial,
    mask_outside,
    split_support,
)
from ppl.distributions.validation import batch_shape_of, require_ndim, validate_sample

__all__ = ["Categorical", "Multinomial"]


class _CategoricalBase(Distribution):
    """Plumbing shared by Categorical and Multinomial: ``probs`` or ``logits`` over the last
    axis."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, probs=None, logits=None, *, validate_args=None):
        self._param = set_one_of(self, probs=probs, logits=logits)
        param = self.__dict__[self._param]
        require_ndim(self, self._param, param, 1, "the categories, last axis")
        super().__init__(batch_shape_of(self), self._event_shape_of(param),
                         validate_args=validate_args)

    def _event_shape_of(self, param) -> tuple:
        raise NotImplementedError

    @derived_parameter
    def probs(self):
        """Category probabilities, ``softmax(logits)``."""
        return ops.nn.softmax(self.__dict__["logits"], axis=-1)

    @derived_parameter
    def logits(self):
        """Log-probabilities (normalized; probs clamped away from 0)."""
        return ops.log(clamp_probs(self.__dict__["probs"]))

    @property
    def num_categories(self) -> int:
        return ops.shape(self.__dict__[self._param])[-1]

    def _log_pmf(self):
        """Normalized log-probabilities of the categories (last axis)."""
        if self._param == "logits":
            return ops.nn.log_softmax(self.__dict__["logits"], axis=-1)
        return ops.log(self.__dict__["probs"])


class Categorical(_CategoricalBase):
    """A category index ``0..K-1`` drawn with probabilities ``probs`` (or ``softmax(logits)``)
    given over the last axis.

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.Categorical(probs=ppl.ops.asarray([0.2, 0.3, 0.5]))
    ...     round(float(d.log_prob(2)), 6), d.batch_shape
    (-0.693147, ())
    """

    has_enumerate_support = True

    def _event_shape_of(self, param) -> tuple:
        return ()

    @property
    def support(self):
        return constraints.integer_interval(0, self.num_categories - 1)

    def sample(self, key, sample_shape=()):
        logits = self.__dict__["logits"] if self._param == "logits" else self._log_pmf()
        return as_int(random.categorical(key, logits, axis=-1, shape=self.shape(sample_shape)))

    @validate_sample
    def log_prob(self, value):
        inside, idx = split_support(self.support, value)
        idx = as_int(idx)
        log_pmf = self._log_pmf()
        # Select by a one-hot mask (differentiable on every backend, unlike a gather).
        onehot = ops.expand_dims(idx, -1) == ops.arange(self.num_categories, dtype=INT_DTYPE)
        lp = ops.sum(ops.where(onehot, log_pmf, ops.zeros_like(log_pmf)), axis=-1)
        return mask_outside(inside, lp)

    def enumerate_support(self, expand=True):
        """``0..K-1`` on a new leading axis (broadcast to the batch if ``expand``)."""
        return expand_support(ops.arange(self.num_categories, dtype=INT_DTYPE), self.batch_shape,
                               expand)

    @property
    def mean(self):
        return ops.full(self.batch_shape, np.nan)

    @property
    def variance(self):
        return ops.full(self.batch_shape, np.nan)

    def entropy(self):
        log_pmf = self._log_pmf()
        p = ops.exp(log_pmf)
        return -ops.sum(ops.where(p > 0, p * log_pmf, ops.zeros_like(p)), axis=-1)


class Multinomial(_CategoricalBase):
    """Counts of each of ``K`` categories in ``total_count`` independent categorical draws.

    Parameters
    ----------
    total_count
        Number of draws (a nonnegative integer, scalar or array over the batch).
    probs, logits
        Exactly one, over the last axis.
    total_count_max
        Accepted for NumPyro compatibility and ignored: draws are made by conditional binomials
        (one per category), which needs no static bound on ``total_count``.
    """

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, *, total_count_max=None,
                 validate_args=None):
        self.total_count = as_float(total_count)
        super().__init__(probs, logits, validate_args=validate_args)

    def _event_shape_of(self, param) -> tuple:
        return tuple(ops.shape(param)[-1:])

    @property
    def support(self):
        return constraints.multinomial(self.total_count)

    def sample(self, key, sample_shape=()):
        # Conditional binomials: x_k ~ Binomial(n - sum_{j<k} x_j, p_k / sum_{j>=k} p_j).
        shape = tuple(sample_shape) + self.batch_shape
        k = self.num_categories
        p = ops.broadcast_to(self.probs, self.batch_shape + (k,))
        tail = ops.flip(ops.cumsum(ops.flip(p, axis=-1), axis=-1), axis=-1)
        ratio = ops.clip(p / ops.where(tail > 0, tail, 1.0), 0.0, 1.0)
        remaining = ops.broadcast_to(self.total_count, shape)
        counts = []
        keys = random.split(key, max(k - 1, 1))
        for j in range(k - 1):
            x = random.binomial(keys[j], remaining, ratio[..., j], shape, ops.dtype_of(ratio))
            counts.append(x)
            remaining = remaining - x
        counts.append(remaining)
        return as_int(ops.stack(counts, axis=-1))

    @validate_sample
    def log_prob(self, value):
        n = self.total_count
        entry_ok, x = split_support(constraints.nonnegative_integer, value)
        inside = ops.logical_and(ops.all(entry_ok, axis=-1), ops.sum(x, axis=-1) == n)
        log_pmf = self._log_pmf()
        terms = ops.where(x > 0, x * log_pmf, ops.zeros_like(x * log_pmf))
        lp = log_factorial(n) - ops.sum(log_factorial(x), axis=-1) + ops.sum(terms, axis=-1)
        return mask_outside(inside, lp)

    @property
    def mean(self):
        return ops.broadcast_to(ops.expand_dims(self.total_count, -1) * self.probs,
                                self.batch_shape + self.event_shape)

    @property
    def variance(self):
        p = self.probs
        return ops.broadcast_to(ops.expand_dims(self.total_count, -1) * p * (1.0 - p),
                                self.batch_shape + self.event_shape)
