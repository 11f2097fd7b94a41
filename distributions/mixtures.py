"""Finite mixtures: :class:`MixtureSameFamily` (the components are one batched family) and
:class:`MixtureGeneral` (a list of distributions, of any families, on one support).

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

__all__ = ["MixtureSameFamily", "MixtureGeneral"]


def _check_mixing(owner: str, mixing_distribution):
    if not isinstance(mixing_distribution, Categorical):
        raise TypeError(
            f"{owner}: mixing_distribution must be a Categorical (the mixture weights), got "
            f"{type(mixing_distribution).__name__}.")


class _Mixture(Distribution):
    """What both mixtures share: the weights, the choice of a component per draw and the
    moments (law of total variance), over ``K`` components stacked on the axis left of the
    event (:meth:`_stacked`)."""

    arg_constraints: dict = {}

    def _stacked(self, what: str):
        """The components' ``mean`` / ``variance``, ``... + (K,) + event_shape``."""
        raise NotImplementedError

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

    def _pick(self, key, draws, sample_shape):
        """One component's draw per entry: ``draws`` ``sample_shape + batch + (K,) + event``."""
        log_w = ops.broadcast_to(self._log_weights(), self.batch_shape + (self.mixture_size,))
        idx = random.categorical(key, log_w, axis=-1, shape=sample_shape + self.batch_shape)
        idx = ops.astype(self._pad_event(ops.expand_dims(idx, -1)), INT_DTYPE)
        idx = ops.broadcast_to(idx, sample_shape + self.batch_shape + (1,) + self.event_shape)
        axis = -1 - self.event_dim
        return ops.squeeze(ops.take_along_axis(draws, idx, axis=axis), axis=axis)

    @property
    def mean(self):
        w = self._pad_event(ops.exp(self._log_weights()))
        mean = ops.sum(w * self._stacked("mean"), axis=-1 - self.event_dim)
        return ops.broadcast_to(mean, self.batch_shape + self.event_shape)

    @property
    def variance(self):
        # Law of total variance: E[Var(X | k)] + Var(E[X | k]).
        axis = -1 - self.event_dim
        w = self._pad_event(ops.exp(self._log_weights()))
        comp_mean = self._stacked("mean")
        mean = ops.sum(w * comp_mean, axis=axis, keepdims=True)
        dev = comp_mean - mean
        var = ops.sum(w * (self._stacked("variance") + dev * dev), axis=axis)
        return ops.broadcast_to(var, self.batch_shape + self.event_shape)


class MixtureSameFamily(_Mixture):
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

    def __init__(self, mixing_distribution, component_distribution, *, validate_args=None):
        _check_mixing("MixtureSameFamily", mixing_distribution)
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

    def sample(self, key, sample_shape=()):
        k_comp, k_mix = random.split(key, 2)
        sample_shape = tuple(sample_shape)
        comp = self.component_distribution
        comp_batch = self.batch_shape + (self.mixture_size,)
        if comp.batch_shape != comp_batch:  # independent draws for every mixture batch entry
            comp = comp.expand(comp_batch)
        return self._pick(k_mix, comp.sample(k_comp, sample_shape), sample_shape)

    @validate_sample
    def log_prob(self, value):
        if not self.is_discrete:
            value = as_float(value)
        x = ops.expand_dims(value, -1 - self.event_dim)
        comp_lp = self.component_distribution.log_prob(x)
        return ops.logsumexp(comp_lp + self._log_weights(), axis=-1)

    def _stacked(self, what: str):
        return getattr(self.component_distribution, what)


class MixtureGeneral(_Mixture):
    """Mixture of a list of ``K`` distributions, of any families, on one support, with weights
    from the Categorical ``mixing_distribution``, as NumPyro's ``MixtureGeneral``.

    ``log_prob(x) = logsumexp_k(log w_k + log p_k(x))`` (McLachlan & Peel 2000, "Finite Mixture
    Models", ch. 1). Draws take every component's draw and keep the chosen one; they are not
    reparameterized.

    Parameters
    ----------
    mixing_distribution
        A :class:`Categorical` over ``K`` components.
    component_distributions
        A list of ``K`` distributions with one event shape, whose batch shapes broadcast with
        each other and with the mixing distribution's (the mixture's batch shape).
    support
        The mixture's support; by default the components' common one (they must then have
        equal supports).

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.MixtureGeneral(dist.Categorical(probs=ppl.ops.asarray([0.25, 0.75])),
    ...                             [dist.Normal(-1.0, 1.0), dist.StudentT(4.0, 1.0, 2.0)])
    ...     round(float(d.mean), 6), round(float(d.log_prob(0.0)), 4)
    (0.5, -1.7074)
    """

    def __init__(self, mixing_distribution, component_distributions, *, support=None,
                 validate_args=None):
        _check_mixing("MixtureGeneral", mixing_distribution)
        comps = component_distributions
        if not isinstance(comps, (list, tuple)) or not comps or not all(
                isinstance(c, Distribution) for c in comps):
            raise TypeError("MixtureGeneral: component_distributions must be a non-empty list "
                            f"of distributions, got {comps!r}.")
        k = mixing_distribution.num_categories
        if len(comps) != k:
            raise ValueError(f"MixtureGeneral: {len(comps)} component_distributions for a "
                             f"mixing_distribution of {k} categories: give one per category.")
        if len({c.event_shape for c in comps}) > 1 or len({c.is_discrete for c in comps}) > 1:
            raise ValueError(
                "MixtureGeneral: the components must share one event shape and be all "
                f"discrete or all continuous, got event shapes {[c.event_shape for c in comps]}"
                f" and discreteness {[c.is_discrete for c in comps]}.")
        if support is None:
            if len({repr(c.support) for c in comps}) > 1:
                raise ValueError(
                    "MixtureGeneral: the components have different supports "
                    f"({[repr(c.support) for c in comps]}); pass support= for the mixture.")
            support = comps[0].support
        try:
            batch = ops.broadcast_shapes(mixing_distribution.batch_shape,
                                         *(c.batch_shape for c in comps))
        except ValueError as err:
            raise ValueError(
                "MixtureGeneral: the batch shapes of the mixing distribution "
                f"{mixing_distribution.batch_shape} and the components "
                f"{[c.batch_shape for c in comps]} do not broadcast.") from err
        self.mixing_distribution = mixing_distribution
        self.component_distributions = list(comps)
        self._support = support
        super().__init__(batch, comps[0].event_shape, validate_args)

    @property
    def support(self):
        return self._support

    @property
    def is_discrete(self) -> bool:
        return self.component_distributions[0].is_discrete

    def _stacked(self, what: str):
        shape = self.batch_shape + self.event_shape
        return ops.stack([ops.broadcast_to(getattr(c, what), shape)
                          for c in self.component_distributions], axis=-1 - self.event_dim)

    def sample(self, key, sample_shape=()):
        sample_shape = tuple(sample_shape)
        *keys, k_mix = random.split(key, self.mixture_size + 1)
        draws = [c.expand(self.batch_shape).sample(k, sample_shape)
                 for c, k in zip(self.component_distributions, keys)]
        return self._pick(k_mix, ops.stack(draws, axis=-1 - self.event_dim), sample_shape)

    @validate_sample
    def log_prob(self, value):
        if not self.is_discrete:
            value = as_float(value)
        comp_lp = ops.stack([c.log_prob(value) for c in self.component_distributions], axis=-1)
        return ops.logsumexp(comp_lp + self._log_weights(), axis=-1)
