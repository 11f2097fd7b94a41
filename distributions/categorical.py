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

import ppl
from ppl import ops
from ppl.distributions import constraints
from ppl.distributions.discrete import (
    _INT,
    _as_int,
    _Derived,
    _expand_support,
    _is_count,
    _log_factorial,
    _mask_outside,
    _one_of_probs_logits,
)
from ppl.distributions.distribution import Distribution, validate_sample
from ppl.distributions.util import as_float, batch_shape_of, clamp_probs

__all__ = ["Categorical", "Multinomial"]


class _CategoricalBase(Distribution):
    """Plumbing shared by Categorical and Multinomial: ``probs`` or ``logits`` over the last
    axis."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def _set_probs_logits(self, probs, logits):
        self._param = _one_of_probs_logits(type(self).__name__, probs, logits)
        if probs is not None:
            self.probs = as_float(probs)
        else:
            self.logits = as_float(logits)
        param = self.__dict__[self._param]
        if ops.ndim(param) < 1:
            raise ValueError(
                f"{type(self).__name__}: {self._param} must have at least one dimension (the "
                f"categories, last axis), got shape {ops.shape(param)}.")
        return param

    @_Derived
    def probs(self):
        """Category probabilities, ``softmax(logits)``."""
        return ops.nn.softmax(self.__dict__["logits"], axis=-1)

    @_Derived
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

    def __init__(self, probs=None, logits=None, *, validate_args=None):
        param = self._set_probs_logits(probs, logits)
        super().__init__(ops.shape(param)[:-1], validate_args=validate_args)

    @property
    def support(self):
        return constraints.integer_interval(0, self.num_categories - 1)

    def sample(self, key, sample_shape=()):
        logits = self.__dict__["logits"] if self._param == "logits" else self._log_pmf()
        return _as_int(ppl.random.categorical(key, logits, axis=-1,
                                              shape=self.shape(sample_shape)))

    @validate_sample
    def log_prob(self, value):
        value = as_float(value)
        inside = _is_count(value, self.num_categories - 1)
        log_pmf = self._log_pmf()
        idx = _as_int(ops.where(inside, value, ops.zeros_like(value)))
        # Select by a one-hot mask (differentiable on every backend, unlike a gather).
        onehot = ops.expand_dims(idx, -1) == ops.arange(self.num_categories, dtype=_INT)
        lp = ops.sum(ops.where(onehot, log_pmf, ops.zeros_like(log_pmf)), axis=-1)
        return _mask_outside(inside, lp)

    def enumerate_support(self, expand=True):
        """``0..K-1`` on a new leading axis (broadcast to the batch if ``expand``)."""
        return _expand_support(ops.arange(self.num_categories, dtype=_INT), self.batch_shape,
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
        param = self._set_probs_logits(probs, logits)
        self.total_count = as_float(total_count)
        batch = batch_shape_of(self.total_count, param, event_dims=(0, 1))
        super().__init__(batch, ops.shape(param)[-1:], validate_args=validate_args)

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
        keys = ppl.random.split(key, max(k - 1, 1))
        for j in range(k - 1):
            x = ppl.random.binomial(keys[j], remaining, ratio[..., j], shape,
                                    ops.dtype_of(ratio))
            counts.append(x)
            remaining = remaining - x
        counts.append(remaining)
        return _as_int(ops.stack(counts, axis=-1))

    @validate_sample
    def log_prob(self, value):
        value = as_float(value)
        n = self.total_count
        entry_ok = _is_count(value)
        x = ops.where(entry_ok, value, ops.zeros_like(value))
        inside = ops.logical_and(ops.all(entry_ok, axis=-1), ops.sum(x, axis=-1) == n)
        log_pmf = self._log_pmf()
        terms = ops.where(x > 0, x * log_pmf, ops.zeros_like(x * log_pmf))
        lp = _log_factorial(n) - ops.sum(_log_factorial(x), axis=-1) + ops.sum(terms, axis=-1)
        return _mask_outside(inside, lp)

    @property
    def mean(self):
        return ops.broadcast_to(ops.expand_dims(self.total_count, -1) * self.probs,
                                self.batch_shape + self.event_shape)

    @property
    def variance(self):
        p = self.probs
        return ops.broadcast_to(ops.expand_dims(self.total_count, -1) * p * (1.0 - p),
                                self.batch_shape + self.event_shape)
