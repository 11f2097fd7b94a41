"""Point masses and improper densities: :class:`Delta` (deterministic sites),
:class:`ImproperUniform` (latent values with a hand-written density) and :class:`Unit` (the
density of a ``factor`` site).

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     float(dist.Unit(-1.5).log_prob(ppl.ops.zeros((0,))))
-1.5
"""

from __future__ import annotations

import numpy as np

from ppl import ops
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.util import as_float, require_int
from ppl.distributions.validation import validate_sample

__all__ = ["Delta", "ImproperUniform", "Unit"]


class Delta(Distribution):
    """A point mass at ``v`` (with an optional ``log_density`` added to ``log_prob``).

    Parameters
    ----------
    v
        The location; its rightmost ``event_dim`` dims form the event.
    log_density
        Added to ``log_prob`` where the value equals ``v`` (NumPyro's convention).
    event_dim
        Number of rightmost dims of ``v`` that are event dims.
    """

    arg_constraints = {"v": constraints.dependent, "log_density": constraints.real}
    reparametrized_params = ["v", "log_density"]

    def __init__(self, v=0.0, log_density=0.0, event_dim: int = 0, *, validate_args=None):
        v = as_float(v)
        shape = ops.shape(v)
        require_int("Delta", "event_dim", event_dim, 0, len(shape), f"v has shape {shape}")
        cut = len(shape) - event_dim
        self.v = v
        self.log_density = log_density
        super().__init__(shape[:cut], shape[cut:], validate_args)

    @property
    def support(self):
        return constraints.independent(constraints.real, self.event_dim)

    def sample(self, key, sample_shape=()):
        return ops.broadcast_to(self.v, self.shape(sample_shape))

    @validate_sample
    def log_prob(self, value):
        eq = as_float(value) == self.v
        if self.event_dim:
            eq = ops.all(eq, axis=tuple(range(-self.event_dim, 0)))
        zero = ops.zeros(ops.shape(eq), dtype=ops.dtype_of(self.v))
        return ops.where(eq, zero + self.log_density, zero - np.inf)

    @property
    def mean(self):
        return self.v

    @property
    def variance(self):
        return ops.zeros_like(self.v)

    def entropy(self):
        return ops.zeros(self.batch_shape)


class ImproperUniform(Distribution):
    """A flat (improper) density over ``support``: ``log_prob`` is 0 inside it.

    Useful for latent variables with a hand-written ``factor``. It has no sampler; inference
    initializes it in unconstrained space through ``biject_to(support)``.

    Parameters
    ----------
    support
        A :class:`~ppl.distributions.constraints.Constraint`.
    batch_shape, event_shape
        Shapes of the batch and of one event.
    """

    arg_constraints: dict = {}

    def __init__(self, support, batch_shape=(), event_shape=(), *, validate_args=None):
        if not isinstance(support, constraints.Constraint):
            raise TypeError(
                f"ImproperUniform: support must be a constraint (e.g. constraints.positive), "
                f"got {support!r}.")
        event_shape = tuple(event_shape)
        if len(event_shape) < support.event_dim:
            raise ValueError(
                f"ImproperUniform: event_shape {event_shape} has fewer dims than the support "
                f"{support!r} needs ({support.event_dim}).")
        self.support = constraints.independent(support, len(event_shape) - support.event_dim) \
            if len(event_shape) > support.event_dim else support
        super().__init__(batch_shape, event_shape, validate_args)

    def sample(self, key, sample_shape=()):
        raise NotImplementedError(
            "ImproperUniform has no normalizable density to sample from; initialize the site "
            "in unconstrained space (biject_to(support)) or use a proper prior.")

    @validate_sample
    def log_prob(self, value):
        return ops.zeros(self._log_prob_shape(value))


class Unit(Distribution):
    """The improper "distribution" of a ``factor`` site, as NumPyro's: ``log_prob`` is
    ``log_factor`` whatever the (empty) value.

    Parameters
    ----------
    log_factor
        The log-density to add; its shape is the batch shape. The event shape is ``(0,)``, so
        values (and draws) are empty arrays of shape ``sample_shape + batch_shape + (0,)``.

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.Unit(ppl.ops.asarray([0.5, -1.0]))
    ...     d.batch_shape, d.event_shape, d.log_prob(ppl.ops.zeros((2, 0))).tolist()
    ((2,), (0,), [0.5, -1.0])
    """

    arg_constraints = {"log_factor": constraints.real}
    support = constraints.real

    def __init__(self, log_factor, *, validate_args=None):
        self.log_factor = as_float(log_factor)
        super().__init__(ops.shape(self.log_factor), (0,), validate_args)

    def sample(self, key, sample_shape=()):
        return ops.zeros(self.shape(sample_shape), dtype=ops.dtype_of(self.log_factor))

    def log_prob(self, value):
        return ops.broadcast_to(self.log_factor, self._log_prob_shape(value))

    def expand(self, batch_shape):
        """A ``Unit`` of the broadcast ``log_factor`` (a factor inside a plate stays a
        ``Unit``, so tools that skip factor sites still recognise it)."""
        batch_shape = tuple(batch_shape)
        if batch_shape == self.batch_shape:
            return self
        return Unit(ops.broadcast_to(self.log_factor, batch_shape),
                    validate_args=self._validate_args)
