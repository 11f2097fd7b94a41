"""The :class:`Distribution` contract, and the wrappers its methods return: :class:`Independent`
(``to_event``), :class:`ExpandedDistribution` (``expand``) and :class:`MaskedDistribution`
(``mask``), on the common base :class:`Wrapper`.

Shapes follow TensorFlow Probability's convention, as NumPyro does: a draw has shape
``sample_shape + batch_shape + event_shape``; ``log_prob`` reduces the event dims and returns
``sample_shape + batch_shape``. Parameters broadcast against each other to form the batch.
Validation (``validate_args``) is described in :mod:`ppl.distributions.validation`.

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     d = dist.Normal(0.0, 1.0).expand((3,)).to_event(1)
...     d.batch_shape, d.event_shape, d.log_prob(ppl.ops.zeros(3)).shape
((), (3,), ())
"""

from __future__ import annotations

import inspect
import re

from ppl import ops
from ppl.distributions import constraints
from ppl.distributions.util import expand_support, require_int, sum_rightmost
from ppl.distributions.validation import (
    as_shape,
    check_parameters,
    is_validation_enabled,
    shaped_sampler,
    validate_sample,
)

__all__ = [
    "Distribution",
    "ExpandedDistribution",
    "Independent",
    "MaskedDistribution",
    "Wrapper",
]


class _Family(type):
    """The type of every distribution: a keyword its constructor lacks is an error naming the
    family and its arguments (``Normal(loc=0.0, sd=1.0)``), not the base class whose
    ``__init__`` a family inherits (``_LocScale.__init__()``)."""

    def __call__(cls, *args, **kwargs):
        try:
            return super().__call__(*args, **kwargs)
        except TypeError as err:
            bad = re.search(r"__init__\(\) got an unexpected keyword argument '(\w+)'", str(err))
            params = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
            if bad is None or bad.group(1) in params:
                raise
            raise TypeError(f"{cls.__name__}() got an unexpected keyword argument "
                            f"{bad.group(1)!r}; its arguments are {params}.") from None


class Distribution(metaclass=_Family):
    """Base class of every distribution.

    Parameters
    ----------
    batch_shape
        Shape of the batch of independent (not necessarily identical) distributions.
    event_shape
        Shape of one draw.
    validate_args
        Check parameters (now) and values given to ``log_prob`` (later); ``None`` follows
        :func:`~ppl.distributions.validation.enable_validation`.

    Subclasses declare ``arg_constraints`` (parameter name -> constraint), ``support`` and
    ``reparametrized_params`` (parameters whose gradients flow through ``sample``), and
    implement ``sample``, ``log_prob``, ``mean`` and ``variance``.
    """

    def __init_subclass__(cls, **kwargs):
        """Each subclass's ``sample``/``rsample`` takes ``sample_shape`` as a tuple of ints or
        one int (``sample(key, 3)``, as ``ppl.random``'s ``shape``), checked once here rather
        than in every family."""
        super().__init_subclass__(**kwargs)
        for name in ("sample", "rsample"):
            if name in cls.__dict__:
                setattr(cls, name, shaped_sampler(cls.__dict__[name], name))

    arg_constraints: dict = {}
    support: constraints.Constraint | None = None
    reparametrized_params: list = []
    has_enumerate_support = False
    _validate_args = False

    def enumerate_support(self, expand=True):
        """The values of a finite discrete support on a new leading axis: shape ``(K,) +
        batch_shape`` if ``expand``, else ``(K,) + (1,) * len(batch_shape)`` (NumPyro's
        layout). Only families with ``has_enumerate_support``."""
        raise NotImplementedError(
            f"{type(self).__name__} has no finite support to enumerate (has_enumerate_support "
            f"is False); enumeration takes Bernoulli, Categorical, Binomial, BetaBinomial, "
            f"DiscreteUniform, OrderedLogistic and the zero-inflated, masked or expanded forms "
            f"of these.")

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = tuple(int(s) for s in batch_shape)
        self._event_shape = tuple(int(s) for s in event_shape)
        if validate_args is None:
            validate_args = is_validation_enabled()
        self._validate_args = bool(validate_args)
        if self._validate_args:
            self._validate_parameters()

    # ------------------------------------------------------------------ shapes
    @property
    def batch_shape(self) -> tuple:
        return self._batch_shape

    @property
    def event_shape(self) -> tuple:
        return self._event_shape

    @property
    def event_dim(self) -> int:
        return len(self._event_shape)

    def shape(self, sample_shape=()) -> tuple:
        """The shape of ``sample(key, sample_shape)``: sample + batch + event shapes."""
        return tuple(sample_shape) + self.batch_shape + self.event_shape

    @property
    def has_rsample(self) -> bool:
        """Whether ``sample`` is differentiable in the parameters (reparameterized)."""
        return len(self.reparametrized_params) > 0

    @property
    def is_discrete(self) -> bool:
        return bool(self.support is not None and self.support.is_discrete)

    # ------------------------------------------------------------------ the contract
    def sample(self, key, sample_shape=()):
        """Draw ``sample_shape + batch_shape + event_shape`` values with the random ``key``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement sample.")

    def rsample(self, key, sample_shape=()):
        """A reparameterized draw (gradients flow to the parameters)."""
        if not self.has_rsample:
            raise NotImplementedError(
                f"{type(self).__name__} has no reparameterized sampler; use sample() and a "
                "score-function estimator instead.")
        return self.sample(key, sample_shape)

    def log_prob(self, value):
        """Log density (or mass) of ``value``; shape ``sample_shape + batch_shape``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement log_prob.")

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement mean.")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement variance.")

    def entropy(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement entropy.")

    def cdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not implement cdf.")

    def icdf(self, q):
        raise NotImplementedError(f"{type(self).__name__} does not implement icdf.")

    # ------------------------------------------------------------------ wrappers
    def to_event(self, reinterpreted_batch_ndims: int | None = None) -> Distribution:
        """Reinterpret the ``n`` rightmost batch dims as event dims (all of them if ``None``)."""
        if reinterpreted_batch_ndims is None:
            reinterpreted_batch_ndims = len(self.batch_shape)
        if reinterpreted_batch_ndims == 0:
            return self
        return Independent(self, reinterpreted_batch_ndims)

    def expand(self, batch_shape) -> Distribution:
        """The same distribution broadcast to a larger ``batch_shape`` (independent copies)."""
        batch_shape = as_shape(batch_shape, f"{type(self).__name__}.expand: batch_shape")
        if batch_shape == self.batch_shape:
            return self
        return ExpandedDistribution(self, batch_shape)

    def expand_by(self, sample_shape) -> Distribution:
        """``expand(sample_shape + batch_shape)``."""
        return self.expand(tuple(sample_shape) + self.batch_shape)

    def mask(self, mask) -> Distribution:
        """Zero ``log_prob`` where ``mask`` is False (a bool or a batch-broadcastable array)."""
        if isinstance(mask, bool) and mask:
            return self
        return MaskedDistribution(self, mask)

    # ------------------------------------------------------------------ for subclasses
    def _validate_parameters(self):
        """Check the parameters (``validate_args``); families with extra rules extend it."""
        check_parameters(self)

    def _log_prob_shape(self, value) -> tuple:
        """The shape of ``log_prob(value)``: the batch dims of ``value`` broadcast with
        ``batch_shape``."""
        vshape = ops.shape(value)
        vbatch = vshape[: max(len(vshape) - self.event_dim, 0)]
        return tuple(ops.broadcast_shapes(self.batch_shape, vbatch))

    def __repr__(self):
        return (f"<{type(self).__name__} batch_shape={self.batch_shape} "
                f"event_shape={self.event_shape}>")


def _from_base(name: str) -> property:
    """A read-only attribute that forwards to ``self.base_dist.<name>``."""
    return property(lambda self: getattr(self.base_dist, name),
                    doc=f"``base_dist.{name}``.")


def base_support(dist: Distribution, expand: bool):
    """``dist.base_dist``'s support values (one set for its whole batch, as every family's
    ``enumerate_support`` gives) on a new leading axis, laid out for ``dist.batch_shape``."""
    values = ops.reshape(dist.base_dist.enumerate_support(expand=False), (-1,))
    return expand_support(values, dist.batch_shape, expand)


class Wrapper(Distribution):
    """A distribution built on ``self.base_dist`` that keeps its support, reparametrised
    parameters and sampling/enumeration flags (``Independent`` and ``TransformedDistribution``
    override ``support``)."""

    support = _from_base("support")
    reparametrized_params = _from_base("reparametrized_params")
    has_rsample = _from_base("has_rsample")
    has_enumerate_support = _from_base("has_enumerate_support")

    def enumerate_support(self, expand=True):
        """The base's support values (the same for its whole batch) on a new leading axis,
        laid out for this batch shape (``expand`` as the families')."""
        if not self.has_enumerate_support:
            return super().enumerate_support(expand)
        return base_support(self, expand)


class Independent(Wrapper):
    """Reinterpret the ``reinterpreted_batch_ndims`` rightmost batch dims of ``base_dist`` as
    event dims: ``log_prob`` sums over them.

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy"):
    ...     dist.Independent(dist.Normal(ppl.ops.zeros(3), 1.0), 1).event_shape
    (3,)
    """

    arg_constraints: dict = {}

    def __init__(self, base_dist: Distribution, reinterpreted_batch_ndims: int, *,
                 validate_args=None):
        require_int("Independent", "reinterpreted_batch_ndims", reinterpreted_batch_ndims, 0,
                    len(base_dist.batch_shape),
                    f"at most the number of batch dims of {base_dist!r}")
        n = reinterpreted_batch_ndims
        shape = base_dist.batch_shape + base_dist.event_shape
        cut = len(base_dist.batch_shape) - n
        self.base_dist = base_dist
        self.reinterpreted_batch_ndims = n
        super().__init__(shape[:cut], shape[cut:], validate_args)

    @property
    def support(self):
        return constraints.independent(self.base_dist.support, self.reinterpreted_batch_ndims)

    @property
    def has_enumerate_support(self):
        """Only without reinterpreted dims: a vector event's support is a product space."""
        return self.base_dist.has_enumerate_support and self.reinterpreted_batch_ndims == 0

    mean = _from_base("mean")
    variance = _from_base("variance")

    def sample(self, key, sample_shape=()):
        return self.base_dist.sample(key, sample_shape)

    @validate_sample
    def log_prob(self, value):
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def __repr__(self):
        return (f"<Independent({type(self.base_dist).__name__}, "
                f"{self.reinterpreted_batch_ndims}) batch_shape={self.batch_shape} "
                f"event_shape={self.event_shape}>")


class ExpandedDistribution(Wrapper):
    """``base_dist`` broadcast to ``batch_shape``; expanded entries are independent draws."""

    arg_constraints: dict = {}

    def __init__(self, base_dist: Distribution, batch_shape=(), *, validate_args=None):
        batch_shape = tuple(int(s) for s in batch_shape)
        old = base_dist.batch_shape
        offset = len(batch_shape) - len(old)
        if offset < 0 or any(o != 1 and o != n for o, n in zip(old, batch_shape[offset:])):
            raise ValueError(
                f"expand: cannot broadcast batch_shape {old} of {type(base_dist).__name__} to "
                f"{batch_shape}; each existing dim must equal the new one or be 1.")
        if isinstance(base_dist, ExpandedDistribution):
            base_dist = base_dist.base_dist
            old = base_dist.batch_shape
            offset = len(batch_shape) - len(old)
        self.base_dist = base_dist
        # Leading new dims, and existing size-1 dims that grow (interior expansions).
        self._lead = batch_shape[:offset]
        self._interior = [(i, n) for i, (o, n) in enumerate(zip(old, batch_shape[offset:]))
                          if o == 1 and n != 1]
        super().__init__(batch_shape, base_dist.event_shape, validate_args)

    def sample(self, key, sample_shape=()):
        sample_shape = tuple(sample_shape)
        extra = tuple(n for _, n in self._interior)
        x = self.base_dist.sample(key, sample_shape + self._lead + extra)
        if not extra:
            return x
        # x: sample + lead + extra + base_batch + event. Move each extra axis next to the
        # size-1 batch axis it fills, then merge the pair with a reshape.
        ns, nl, ne = len(sample_shape), len(self._lead), len(extra)
        base_start = ns + nl + ne
        order = list(range(ns + nl))
        extra_axis = {i: ns + nl + j for j, (i, _) in enumerate(self._interior)}
        for i in range(len(self.base_dist.batch_shape)):
            if i in extra_axis:
                order.append(extra_axis[i])
            order.append(base_start + i)
        order += list(range(base_start + len(self.base_dist.batch_shape), ops.ndim(x)))
        return ops.reshape(ops.permute_dims(x, tuple(order)), self.shape(sample_shape))

    @validate_sample
    def log_prob(self, value):
        lp = self.base_dist.log_prob(value)
        return ops.broadcast_to(lp, ops.broadcast_shapes(self._log_prob_shape(value),
                                                         ops.shape(lp)))

    @property
    def mean(self):
        return ops.broadcast_to(self.base_dist.mean, self.batch_shape + self.event_shape)

    @property
    def variance(self):
        return ops.broadcast_to(self.base_dist.variance, self.batch_shape + self.event_shape)

    def entropy(self):
        return ops.broadcast_to(self.base_dist.entropy(), self.batch_shape)


class MaskedDistribution(Wrapper):
    """``base_dist`` whose ``log_prob`` is zero where ``mask`` is False.

    ``mask`` is a Python bool or a boolean array broadcastable to the batch shape.
    """

    arg_constraints: dict = {}

    def __init__(self, base_dist: Distribution, mask, *, validate_args=None):
        if isinstance(mask, bool):
            batch_shape = base_dist.batch_shape
        else:
            mask = ops.asarray(mask)
            if ops.dtype_of(mask) != "bool":
                raise TypeError(
                    f"mask: expected a bool or a boolean array, got dtype {ops.dtype_of(mask)}; "
                    "pass e.g. `x > 0` or `ops.astype(m, 'bool')`.")
            try:
                batch_shape = ops.broadcast_shapes(base_dist.batch_shape, ops.shape(mask))
            except ValueError as err:
                raise ValueError(
                    f"mask: shape {ops.shape(mask)} does not broadcast with batch_shape "
                    f"{base_dist.batch_shape}.") from err
        self.base_dist = base_dist
        self._mask = mask
        super().__init__(batch_shape, base_dist.event_shape, validate_args)

    def sample(self, key, sample_shape=()):
        return self.base_dist.expand(self.batch_shape).sample(key, sample_shape)

    def log_prob(self, value):
        shape = self._log_prob_shape(value)
        if self._mask is False:
            return ops.zeros(shape)
        lp = self.base_dist.log_prob(value)
        if self._mask is True:
            return ops.broadcast_to(lp, ops.broadcast_shapes(shape, ops.shape(lp)))
        return ops.where(self._mask, lp, ops.zeros_like(lp))

    mean = _from_base("mean")
    variance = _from_base("variance")
