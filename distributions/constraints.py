"""Constraints: the sets that distribution parameters and supports live in.

A constraint answers one question, ``check(value)``: which entries of ``value`` lie in the set.
``event_dim`` says how many rightmost dimensions form one element (``0`` for scalars,
``1`` for vectors such as a simplex, ``2`` for matrices), so ``check`` returns an array of
shape ``value.shape[:ndim - event_dim]``.

Constraints with bounds (``interval(lo, hi)``, ``greater_than(lo)``...) hold their bounds as
given: arrays, or values that depend on other latent variables (``interval(0, 1 - a)``).
:func:`ppl.distributions.transforms.biject_to` reads the bounds every time it is called.

>>> import ppl
>>> from ppl.distributions import constraints
>>> with ppl.use_backend("numpy", dtype="float64"):
...     bool(constraints.positive.check(ppl.ops.asarray(2.0)))
True
"""

from __future__ import annotations

import math

import numpy as np

from ppl import ops
from ppl.distributions.constraint_base import Constraint, _fill, _is_integer, _tol
from ppl.distributions.matrix_constraints import (
    _CorrCholesky,
    _CorrMatrix,
    _LowerCholesky,
    _PositiveDefinite,
)
from ppl.distributions.util import as_float, describe, require_int, restrict

__all__ = [
    "Constraint",
    "boolean",
    "circular",
    "corr_cholesky",
    "corr_matrix",
    "dependent",
    "greater_than",
    "greater_than_eq",
    "independent",
    "integer_greater_than",
    "integer_interval",
    "interval",
    "is_dependent",
    "less_than",
    "lower_cholesky",
    "multinomial",
    "nonnegative",
    "nonnegative_integer",
    "ordered_vector",
    "positive",
    "positive_definite",
    "positive_integer",
    "positive_ordered_vector",
    "real",
    "real_matrix",
    "real_vector",
    "simplex",
    "unit_interval",
    "zero_sum",
]


class _Bounded(Constraint):
    """A constraint with bounds, held as given (arrays, or values that depend on other latent
    variables). Subclasses name them in ``_bound_names``; those with constant bounds
    (``positive``) give them in ``_fixed_bounds``, are built without arguments and print
    without them."""

    _bound_names: tuple = ()
    _fixed_bounds: tuple = ()

    def __init__(self, *bounds):
        bounds = bounds or self._fixed_bounds
        if len(bounds) != len(self._bound_names):
            raise TypeError(f"{Constraint.__repr__(self)}: expected the bounds "
                            f"{', '.join(self._bound_names)}, got {len(bounds)} value(s).")
        for name, bound in zip(self._bound_names, bounds):
            setattr(self, name, bound)

    def __repr__(self):
        name = super().__repr__()
        if self._fixed_bounds:
            return name
        return f"{name}({', '.join(describe(getattr(self, b)) for b in self._bound_names)})"


class _Dependent(Constraint):
    """Placeholder for parameters whose constraint depends on other parameters; never checked."""

    def __init__(self, is_discrete=False, event_dim=0):
        self.is_discrete = is_discrete
        self.event_dim = event_dim

    def check(self, value):
        raise ValueError("The dependent constraint cannot be checked: it has no fixed set.")


def is_dependent(constraint) -> bool:
    """Whether ``constraint`` is the :data:`dependent` placeholder (it cannot be checked)."""
    return isinstance(constraint, _Dependent)


class _Real(Constraint):
    def check(self, value):
        return ops.isfinite(value)

    def feasible_like(self, prototype):
        return _fill(prototype, 0.0)


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return ops.logical_or(value == 0, value == 1)

    def feasible_like(self, prototype):
        return ops.zeros_like(prototype)


class _GreaterThan(_Bounded):
    _bound_names = ("lower_bound",)

    def check(self, value):
        return value > self.lower_bound

    def feasible_like(self, prototype):
        return _fill(prototype, self.lower_bound + 1.0)


class _Positive(_GreaterThan):
    _fixed_bounds = (0.0,)


class _GreaterThanEq(_GreaterThan):
    def check(self, value):
        return value >= self.lower_bound


class _Nonnegative(_GreaterThanEq):
    _fixed_bounds = (0.0,)


class _LessThan(_Bounded):
    _bound_names = ("upper_bound",)

    def check(self, value):
        return value < self.upper_bound

    def feasible_like(self, prototype):
        return _fill(prototype, self.upper_bound - 1.0)


class _Interval(_Bounded):
    _bound_names = ("lower_bound", "upper_bound")

    def check(self, value):
        return ops.logical_and(value >= self.lower_bound, value <= self.upper_bound)

    def feasible_like(self, prototype):
        return _fill(prototype, 0.5 * (self.lower_bound + self.upper_bound))


class ExtendedInterval(_Interval):
    """``interval(lower_bound, upper_bound)`` whose bounds may hold infinite entries (open
    sides) where they cannot be read (traced values, backend arrays): ``biject_to`` maps it
    entry by entry whatever the bounds hold. The truncated families give it as ``support``
    unless their bounds are known to be finite (:func:`known_finite`); it checks and prints
    as ``interval``."""

    def feasible_like(self, prototype):
        lo, hi = as_float(self.lower_bound), as_float(self.upper_bound)
        fin_lo, fin_hi = ops.isfinite(lo), ops.isfinite(hi)
        lo0, hi0 = restrict(fin_lo, lo, 0.0), restrict(fin_hi, hi, 0.0)
        upper_only = ops.where(fin_hi, hi0 - 1.0, lo0)          # lo0 is 0 there
        return _fill(prototype, ops.where(
            fin_lo, ops.where(fin_hi, 0.5 * (lo0 + hi0), lo0 + 1.0), upper_only))

    def __repr__(self):
        return f"interval({describe(self.lower_bound)}, {describe(self.upper_bound)})"


def known_finite(bound):
    """``True`` if ``bound`` is ``None`` or a Python number or NumPy array with only finite
    entries, ``False`` if it is one with a non-finite entry, ``None`` for any other value: a
    backend array is not read (it may be traced, or be a recorded value that reading would
    take out of a compiled program)."""
    if bound is None:
        return True
    if isinstance(bound, (int, float, np.ndarray, np.generic)):
        return bool(np.all(np.isfinite(bound)))
    return None


class _UnitInterval(_Interval):
    _fixed_bounds = (0.0, 1.0)


class _Circular(_Interval):
    """Angles in ``[-pi, pi]`` (NumPyro's ``circular``; ``biject_to`` maps it as an interval)."""

    _fixed_bounds = (-math.pi, math.pi)


class _IntegerGreaterThan(_Bounded):
    """Integers ``>= lower_bound`` (NumPyro's name, though the bound is included)."""

    is_discrete = True
    _bound_names = ("lower_bound",)

    def check(self, value):
        return ops.logical_and(value >= self.lower_bound, _is_integer(value))

    def feasible_like(self, prototype):
        return ops.zeros_like(prototype) + self.lower_bound


class _NonnegativeInteger(_IntegerGreaterThan):
    _fixed_bounds = (0,)


class _PositiveInteger(_IntegerGreaterThan):
    _fixed_bounds = (1,)


class _IntegerInterval(_IntegerGreaterThan):
    _bound_names = ("lower_bound", "upper_bound")

    def check(self, value):
        return ops.logical_and(super().check(value), value <= self.upper_bound)


class _Independent(Constraint):
    """Reinterpret the ``reinterpreted_batch_ndims`` rightmost dims of ``base`` as one event."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int):
        if not isinstance(base_constraint, Constraint):
            raise TypeError(
                f"independent: base_constraint must be a Constraint, got {base_constraint!r}.")
        require_int("independent", "reinterpreted_batch_ndims", reinterpreted_batch_ndims, 0)
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    def check(self, value):
        result = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if n == 0:
            return result
        return ops.all(result, axis=tuple(range(-n, 0)))

    def feasible_like(self, prototype):
        return self.base_constraint.feasible_like(prototype)

    def __repr__(self):
        if type(self) is not _Independent:  # the named ones: real_vector, real_matrix
            return super().__repr__()
        return f"independent({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _RealVector(_Independent):
    def __init__(self):
        super().__init__(_Real(), 1)


class _RealMatrix(_Independent):
    def __init__(self):
        super().__init__(_Real(), 2)


class _OrderedVector(Constraint):
    event_dim = 1

    def check(self, value):
        fin = ops.all(ops.isfinite(value), axis=-1)
        return ops.logical_and(fin, ops.all(value[..., 1:] > value[..., :-1], axis=-1))

    def feasible_like(self, prototype):
        n = ops.shape(prototype)[-1]
        return ops.broadcast_to(ops.arange(n, dtype=ops.dtype_of(as_float(prototype))),
                                ops.shape(prototype))


class _PositiveOrderedVector(_OrderedVector):
    def check(self, value):
        return ops.logical_and(super().check(value), ops.all(value > 0, axis=-1))

    def feasible_like(self, prototype):
        return super().feasible_like(prototype) + 1.0


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        nonneg = ops.all(value >= 0, axis=-1)
        return ops.logical_and(nonneg, ops.abs(ops.sum(value, axis=-1) - 1.0) < _tol(value))

    def feasible_like(self, prototype):
        return _fill(prototype, 1.0 / ops.shape(prototype)[-1])


class _ZeroSum(Constraint):
    """Real arrays whose entries sum to zero along each of their ``event_dim`` rightmost axes
    (the support of ``ZeroSumNormal``); the sums are judged relative to the entries' size."""

    def __init__(self, event_dim: int = 1):
        require_int("zero_sum", "event_dim", event_dim, 1)
        self.event_dim = event_dim

    def check(self, value):
        axes = tuple(range(-self.event_dim, 0))
        finite = ops.isfinite(value)
        ok = ops.all(finite, axis=axes)
        value = ops.where(finite, value, 0.0)          # no inf - inf in the sums
        for axis in axes:
            scale = 1.0 + ops.sum(ops.abs(value), axis=axis, keepdims=True)
            small = ops.abs(ops.sum(value, axis=axis, keepdims=True)) <= _tol(value) * scale
            ok = ops.logical_and(ok, ops.all(small, axis=axes))
        return ok

    def feasible_like(self, prototype):
        return _fill(prototype, 0.0)

    def __repr__(self):
        return f"zero_sum(event_dim={self.event_dim})"


class _Multinomial(_Bounded):
    """Nonnegative integer vectors summing to ``upper_bound`` (the total count)."""

    event_dim = 1
    is_discrete = True
    _bound_names = ("upper_bound",)

    def check(self, value):
        ints = ops.all(ops.logical_and(value >= 0, _is_integer(value)), axis=-1)
        return ops.logical_and(ints, ops.sum(value, axis=-1) == self.upper_bound)


# Public instances and factories (NumPyro's names); the factories are the classes, so
# ``isinstance(c, constraints.interval)`` works as in NumPyro.
dependent = _Dependent()
real = _Real()
real_vector = _RealVector()
real_matrix = _RealMatrix()
boolean = _Boolean()
positive = _Positive()
nonnegative = _Nonnegative()
unit_interval = _UnitInterval()
circular = _Circular()
nonnegative_integer = _NonnegativeInteger()
positive_integer = _PositiveInteger()
ordered_vector = _OrderedVector()
positive_ordered_vector = _PositiveOrderedVector()
simplex = _Simplex()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
corr_matrix = _CorrMatrix()
positive_definite = _PositiveDefinite()
interval = _Interval
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
integer_interval = _IntegerInterval
integer_greater_than = _IntegerGreaterThan
independent = _Independent
multinomial = _Multinomial
zero_sum = _ZeroSum
