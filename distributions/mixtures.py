"""Finite mixtures whose components are one batched family: :class:`MixtureSameFamily`.

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     mix = dist.Categorical(probs=ppl.ops.asarray([0.3, 0.7]))
...     comp = dist.Normal(ppl.ops.asarray([-1.0, 1.0]), 1.0)
...     d = dist.MixtureSameFamily(mix, comp)
...     d.batch_shape, round(float(d.mean), 6)
((), 0.4)
"""

from __future__ import annotations

from ppl import ops, random
from ppl.distributions.categorical import Categorical
from ppl.distributions.distribution import Distribution
from ppl.distributions.util import INT_DTYPE, as_float
from ppl.distributions.validation import validate_sample

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """Mixture of the ``K`` distributions in the rightmost batch dim of
    ``component_distribution``, with weights from the Categorical ``mixing_distribution``.

    ``log_prob(x) = logsumexp_k(log w_k + log p_k(x))``. Draws pick a component per batch entry
    and return its draw; they are not reparameterized (the component choice is discrete).

    Parameters
    ----------
    mixing_distribution
        A :class:`Categorical` over ``K`` components; its batch shape broadcasts with the
        mixture's.
    component_distribution
        A distribution with ``batch_shape == mixture_batch_shape + (K,)``.
    """

    arg_constraints: dict = {}

    def __init__(self, mixing_distribution, component_distribution, *, validate_args=None):
        if not isinstance(mixing_distribution, Categorical):
            raise TypeError(
                "MixtureSameFamily: mixing_distribution must be a Categorical (the mixture "
                f"weights), got {type(mixing_distribution).__name__}.")
        if not isinstance(component_distribution, Distribution):
            raise TypeError(
                "MixtureSameFamily: component_distribution must be a Distribution whose "
                f"rightmost batch dim indexes the components, got {component_distribution!r}.")
        comp_batch = component_distribution.batch_shape
        k = mixing_distribution.num_categories
        if len(comp_batch) < 1 or comp_batch[-1] != k:
            raise ValueError(
                "MixtureSameFamily: the rightmost batch dim of component_distribution must be "
                f"the number of mixture components ({k}), got batch_shape {comp_batch}. Use "
                "e.g. Normal(loc_of_shape_K, scale) or .expand(...).")
        try:
            batch = ops.broadcast_shapes(mixing_distribution.batch_shape, comp_batch[:-1])
        except ValueError as err:
            raise ValueError(
                f"MixtureSameFamily: mixing batch_shape {mixing_distribution.batch_shape} does "
                f"not broadcast with the component batch_shape {comp_batch[:-1]} (without the "
                "components dim).") from err
        self.mixing_distribution = mixing_distribution
        self.component_distribution = component_distribution
        super().__init__(batch, component_distribution.event_shape, validate_args)

    @property
    def support(self):
        return self.component_distribution.support

    @property
    def is_discrete(self) -> bool:
        return self.component_distribution.is_discrete

    @property
    def mixture_size(self) -> int:
        return self.mixing_distribution.num_categories

    def _log_weights(self):
        """Log mixture weights, ``batch_shape + (K,)``-broadcastable."""
        return self.mixing_distribution._log_pmf()

    def _pad_event(self, x):
        """Append one singleton axis per event dim (so weights broadcast over events)."""
        for _ in range(self.event_dim):
            x = ops.expand_dims(x, -1)
        return x

    def sample(self, key, sample_shape=()):
        k_comp, k_mix = random.split(key, 2)
        sample_shape = tuple(sample_shape)
        comp = self.component_distribution
        comp_batch = self.batch_shape + (self.mixture_size,)
        if comp.batch_shape != comp_batch:  # independent draws for every mixture batch entry
            comp = comp.expand(comp_batch)
        draws = comp.sample(k_comp, sample_shape)
        log_w = ops.broadcast_to(self._log_weights(), self.batch_shape + (self.mixture_size,))
        idx = random.categorical(k_mix, log_w, axis=-1, shape=sample_shape + self.batch_shape)
        idx = ops.astype(self._pad_event(ops.expand_dims(idx, -1)), INT_DTYPE)
        idx = ops.broadcast_to(idx, sample_shape + self.batch_shape + (1,) + self.event_shape)
        axis = -1 - self.event_dim
        return ops.squeeze(ops.take_along_axis(draws, idx, axis=axis), axis=axis)

    @validate_sample
    def log_prob(self, value):
        if not self.is_discrete:
            value = as_float(value)
        x = ops.expand_dims(value, -1 - self.event_dim)
        comp_lp = self.component_distribution.log_prob(x)
        return ops.logsumexp(comp_lp + self._log_weights(), axis=-1)

    @property
    def mean(self):
        w = self._pad_event(ops.exp(self._log_weights()))
        mean = ops.sum(w * self.component_distribution.mean, axis=-1 - self.event_dim)
        return ops.broadcast_to(mean, self.batch_shape + self.event_shape)

    @property
    def variance(self):
        # Law of total variance: E[Var(X | k)] + Var(E[X | k]).
        axis = -1 - self.event_dim
        w = self._pad_event(ops.exp(self._log_weights()))
        comp_mean = self.component_distribution.mean
        mean = ops.sum(w * comp_mean, axis=axis, keepdims=True)
        dev = comp_mean - mean
        var = ops.sum(w * (self.component_distribution.variance + dev * dev), axis=axis)
        return ops.broadcast_to(var, self.batch_shape + self.event_shape)
