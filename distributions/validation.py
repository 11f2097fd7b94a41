"""Argument checking for every family, in one place: parameter shapes (which must broadcast into
a batch), exactly-one-of choices (``probs=`` / ``logits=``), minimum ranks, and the optional
value checks of ``validate_args``.

Every error names the family and the parameter, says what was expected and how to fix it:

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy"):
...     try:
...         dist.Normal(ppl.ops.zeros(3), ppl.ops.ones(4))
...     except ValueError as err:
...         print(str(err).split(";")[0])
Normal: loc with shape (3,) and scale with shape (4,) do not broadcast

Value checks are off by default for speed. Turn them on per distribution (``validate_args=True``)
or for every distribution created afterwards with :func:`enable_validation`. They check
parameters against ``arg_constraints`` at construction and values against ``support`` in
``log_prob``, raising ``ValueError``; values inside a compiled trace (JAX ``jit``) are never
checked.
"""

from __future__ import annotations

import functools
import operator

import numpy as np

from ppl import ops
from ppl.backends.common.dtypes import is_int
from ppl.distributions import constraints
from ppl.distributions.util import as_float, describe, is_concrete

__all__ = [
    "as_shape",
    "batch_shape_of",
    "check_ordered",
    "check_parameters",
    "check_support",
    "check_value_shape",
    "require_square_matrix",
    "enable_validation",
    "set_event_loc",
    "exactly_one",
    "is_validation_enabled",
    "require_ndim",
    "shaped_sampler",
    "validate_sample",
]

_VALIDATION = [False]


def enable_validation(is_validate: bool = True) -> None:
    """Check parameters and ``log_prob`` values of every distribution created from now on.

    Off by default (checks cost time in every ``log_prob`` evaluation). A distribution's own
    ``validate_args=`` argument takes precedence.
    """
    _VALIDATION[0] = bool(is_validate)


def is_validation_enabled() -> bool:
    """Whether :func:`enable_validation` is on."""
    return _VALIDATION[0]


def validate_sample(log_prob):
    """Decorator for ``log_prob``: check the value's shape (always, it costs a shape
    comparison) and the value against ``support`` when validating."""

    @functools.wraps(log_prob)
    def wrapper(self, value, *args, **kwargs):
        check_value_shape(self, value)
        if self._validate_args:
            check_support(self, value)
        return log_prob(self, value, *args, **kwargs)

    return wrapper


def check_value_shape(dist, value) -> None:
    """Raise ``ValueError`` when ``value``'s shape does not broadcast with ``dist``'s batch and
    event shapes (``log_prob`` would otherwise fail inside a backend op, with that op's message,
    or, for an event shape, broadcast silently into a wrong batch)."""
    shape = ops.shape(value)
    batch, event = tuple(dist.batch_shape), tuple(dist.event_shape)
    try:
        ops.broadcast_shapes(shape, batch + event)
    except ValueError:
        pass
    else:
        return
    raise ValueError(
        f"{_family(dist)}.log_prob: a value of shape {shape} does not broadcast with the "
        f"distribution's batch shape {batch} and event shape {event}; pass a value of shape "
        f"sample_shape + {batch + event} (or one that broadcasts with it), or give the "
        "distribution the batch shape of the values (parameters of that shape, .expand(...) "
        "or a ppl.plate of that size).")


def _family(dist) -> str:
    return type(dist).__name__


def _join(words) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    words = list(words)
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def batch_shape_of(dist, *names: str) -> tuple:
    """The batch shape of ``dist``: the broadcast of its parameters ``names`` (default: every
    entry of ``dist.arg_constraints`` stored on ``dist``; ``None`` ones are skipped), each
    without the event dims its constraint declares (``probs`` of a Multinomial has one).

    Raises ``ValueError`` naming the family and each parameter with its shape when they do not
    broadcast.
    """
    names = names or tuple(n for n in dist.arg_constraints if n in vars(dist))
    shapes = {}
    for name in names:
        value = getattr(dist, name)
        if value is None:
            continue
        shape = tuple(ops.shape(value))
        event_dim = dist.arg_constraints[name].event_dim
        shapes[name] = (shape[: len(shape) - event_dim] if event_dim else shape, shape)
    try:
        return tuple(ops.broadcast_shapes(*(batch for batch, _ in shapes.values())))
    except ValueError as err:
        parts = [f"{name} with shape {shape}" if batch == shape else
                 f"{name} with batch shape {batch} (shape {shape})"
                 for name, (batch, shape) in shapes.items()]
        raise ValueError(
            f"{_family(dist)}: {_join(parts)} do not broadcast; give the parameters shapes "
            "that broadcast under NumPy's rules (equal sizes, or 1, aligned from the right), "
            "e.g. with a reshape or ppl.ops.expand_dims.") from err


def set_event_loc(dist, loc, n: int, other: str) -> tuple:
    """Store ``loc`` on a family with event shape ``(n,)`` (a scalar ``loc`` broadcast to it),
    broadcast to the batch shape of all its parameters, and return that batch shape. Raises
    ``ValueError`` when ``loc``'s last dim is not ``n``; ``other`` says what fixes ``n`` (e.g.
    ``"covariance_matrix is 3 x 3"``)."""
    loc = as_float(loc)
    if ops.ndim(loc) == 0:
        loc = ops.broadcast_to(loc, (n,))
    if ops.shape(loc)[-1] != n:
        raise ValueError(
            f"{_family(dist)}: loc has size {ops.shape(loc)[-1]} in its last dim but {other}; "
            "they must match.")
    dist.loc = loc
    batch = batch_shape_of(dist)
    dist.loc = ops.broadcast_to(loc, batch + (n,))
    return batch


def exactly_one(dist, **options) -> tuple:
    """``(name, value)`` of the one keyword of ``options`` that is not ``None``.

    Raises ``ValueError`` naming the family and the alternatives when none or several are given.
    """
    given = [name for name, value in options.items() if value is not None]
    if len(given) != 1:
        raise ValueError(
            f"{_family(dist)}: pass exactly one of {_join(f'{n}=' for n in options)} (got "
            f"{_join(given) if given else 'none'}).")
    return given[0], options[given[0]]


def require_ndim(dist, name: str, value, ndim: int, what: str) -> None:
    """Raise ``ValueError`` unless parameter ``name`` has at least ``ndim`` dims (``what`` says
    what its rightmost dims hold)."""
    shape = tuple(ops.shape(value))
    if len(shape) < ndim:
        word = {1: "one", 2: "two"}.get(ndim, str(ndim))
        raise ValueError(
            f"{_family(dist)}: {name} must have at least {ndim} dimension(s) ({what}), got shape "
            f"{shape}. Pass an array with at least {word} dimension(s).")


def require_square_matrix(dist, name: str, value) -> int:
    """Raise ``ValueError`` unless parameter ``name`` is a (batch of) square matrix; return its
    size ``n``."""
    require_ndim(dist, name, value, 2, "an (n, n) matrix")
    shape = tuple(ops.shape(value))
    if shape[-2] != shape[-1]:
        raise ValueError(
            f"{_family(dist)}: {name} must be square in its last two dims (n x n), got shape "
            f"{shape}. Pass a batch of n x n matrices.")
    return shape[-1]


def _check(constraint, value):
    """``(ok, inside_mask)`` as NumPy values, or ``(True, None)`` if the check is traced (a
    compiled trace turns even constants into abstract values, so the result is tested too)."""
    if not is_concrete(value):
        return True, None
    inside = constraint.check(value)
    if not is_concrete(inside):
        return True, None
    inside = np.asarray(ops.to_numpy(inside))
    return bool(np.all(inside)), inside


def check_parameters(dist) -> None:
    """Check every parameter of ``dist`` named in ``arg_constraints`` (skipping dependent and
    ``None`` ones), raising ``ValueError`` with the family, parameter, constraint and value."""
    for name, constraint in dist.arg_constraints.items():
        if constraints.is_dependent(constraint) or name not in dist.__dict__:
            continue
        value = dist.__dict__[name]
        if value is None:
            continue
        ok, inside = _check(constraint, value)
        if not ok:
            raise ValueError(
                f"{_family(dist)}: parameter {name!r} must satisfy the constraint "
                f"{constraint!r}, but got {name}={describe(value, inside)}. "
                f"Pass {name} inside {constraint!r}.")


def check_ordered(dist, lo_name: str, hi_name: str) -> None:
    """Check ``lo < hi`` entrywise for the parameters ``lo_name`` and ``hi_name`` of ``dist``
    (skipped on traced values)."""
    lo, hi = getattr(dist, lo_name), getattr(dist, hi_name)
    ok, _ = _check(constraints.positive, hi - lo)
    if not ok:
        raise ValueError(
            f"{_family(dist)}: parameter {hi_name!r} must satisfy the constraint "
            f"greater_than({lo_name}) (it must exceed {lo_name!r}); got {lo_name}="
            f"{describe(lo)}, {hi_name}={describe(hi)}. Pass {lo_name} < {hi_name}.")


def check_support(dist, value) -> None:
    """Raise ``ValueError`` if ``value`` lies outside ``dist.support`` (skipped for dependent
    supports and traced values)."""
    support = dist.support
    if support is None or constraints.is_dependent(support):
        return
    ok, inside = _check(support, value)
    if not ok:
        raise ValueError(
            f"{_family(dist)}.log_prob: value outside the support {support!r}: "
            f"got {describe(value, inside)}.")


def as_shape(shape, what: str) -> tuple:
    """``shape`` (a tuple of ints, or one int) as a tuple of non-negative ints, or an error
    naming ``what``."""
    if is_int(shape):
        shape = (shape,)
    try:
        dims = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"{what} must be a tuple of ints (or an int), got {shape!r}.") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{what} must have non-negative sizes, got {dims}.")
    return dims


def shaped_sampler(method, name):
    """``method`` (a family's ``sample``/``rsample``) with its ``sample_shape`` checked by
    :func:`as_shape` first."""
    @functools.wraps(method)
    def shaped(self, key, sample_shape=()):
        return method(self, key, as_shape(sample_shape, f"{type(self).__name__}.{name}: "
                                                        f"sample_shape"))
    return shaped
