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

import numpy as np

from ppl import ops

__all__ = [
    "Constraint",
    "boolean",
    "corr_cholesky",
    "dependent",
    "greater_than",
    "greater_than_eq",
    "independent",
    "integer_greater_than",
    "integer_interval",
    "interval",
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
]


def _tol(x) -> float:
    """A tolerance for equality checks that suits the dtype of ``x``."""
    return 1e-4 if ops.dtype_of(x) in ("float32", "float16", "bfloat16") else 1e-8


def _float(x):
    x = ops.asarray(x)
    if not ops.dtype_of(x).startswith("float"):
        x = ops.astype(x, ops.backend().dtype)
    return x


def _bound_repr(b) -> str:
    if isinstance(b, (int, float)):
        return repr(b)
    try:
        arr = ops.to_numpy(b)
    except Exception:  # noqa: BLE001 - a traced bound has no printable value
        return "<traced>"
    return np.array2string(np.asarray(arr), threshold=6, precision=4)


class Constraint:
    """Base class: a set of admissible values.

    Subclasses set ``event_dim`` and ``is_discrete`` and implement :meth:`check`.
    """

    event_dim: int = 0
    is_discrete: bool = False

    def check(self, value):
        """A boolean array: ``True`` where ``value`` (an event of ``event_dim`` dims) is inside."""
        raise NotImplementedError

    def __call__(self, value):
        return self.check(value)

    def feasible_like(self, prototype):
        """A value inside the constraint with the shape of ``prototype``."""
        raise NotImplementedError(f"{self} does not define feasible_like.")

    def __repr__(self):
        name = type(self).__name__.lstrip("_")
        return name[0].lower() + "".join("_" + c.lower() if c.isupper() else c for c in name[1:])


class _Dependent(Constraint):
    """Placeholder for parameters whose constraint depends on other parameters; never checked."""

    def __init__(self, is_discrete=False, event_dim=0):
        self.is_discrete = is_discrete
        self.event_dim = event_dim

    def check(self, value):
        raise ValueError("The dependent constraint cannot be checked: it has no fixed set.")


class _Real(Constraint):
    def check(self, value):
        return ops.isfinite(value)

    def feasible_like(self, prototype):
        return ops.zeros_like(_float(prototype))


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return ops.logical_or(value == 0, value == 1)

    def feasible_like(self, prototype):
        return ops.zeros_like(prototype)


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return value > self.lower_bound

    def feasible_like(self, prototype):
        return ops.zeros_like(_float(prototype)) + self.lower_bound + 1.0

    def __repr__(self):
        return f"greater_than({_bound_repr(self.lower_bound)})"


class _Positive(_GreaterThan):
    def __init__(self):
        super().__init__(0.0)

    def __repr__(self):
        return "positive"


class _GreaterThanEq(_GreaterThan):
    def check(self, value):
        return value >= self.lower_bound

    def __repr__(self):
        return f"greater_than_eq({_bound_repr(self.lower_bound)})"


class _Nonnegative(_GreaterThanEq):
    def __init__(self):
        super().__init__(0.0)

    def __repr__(self):
        return "nonnegative"


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return value < self.upper_bound

    def feasible_like(self, prototype):
        return ops.zeros_like(_float(prototype)) + self.upper_bound - 1.0

    def __repr__(self):
        return f"less_than({_bound_repr(self.upper_bound)})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound

    def check(self, value):
        return ops.logical_and(value >= self.lower_bound, value <= self.upper_bound)

    def feasible_like(self, prototype):
        return ops.zeros_like(_float(prototype)) + 0.5 * (self.lower_bound + self.upper_bound)

    def __repr__(self):
        return f"interval({_bound_repr(self.lower_bound)}, {_bound_repr(self.upper_bound)})"


class _UnitInterval(_Interval):
    def __init__(self):
        super().__init__(0.0, 1.0)

    def __repr__(self):
        return "unit_interval"


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound

    def check(self, value):
        return ops.logical_and(
            ops.logical_and(value >= self.lower_bound, value <= self.upper_bound),
            ops.floor(value) == value,
        )

    def feasible_like(self, prototype):
        return ops.zeros_like(prototype) + self.lower_bound

    def __repr__(self):
        return (f"integer_interval({_bound_repr(self.lower_bound)}, "
                f"{_bound_repr(self.upper_bound)})")


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return ops.logical_and(value >= self.lower_bound, ops.floor(value) == value)

    def feasible_like(self, prototype):
        return ops.zeros_like(prototype) + self.lower_bound

    def __repr__(self):
        return f"integer_greater_than({_bound_repr(self.lower_bound)})"


class _NonnegativeInteger(_IntegerGreaterThan):
    def __init__(self):
        super().__init__(0)

    def __repr__(self):
        return "nonnegative_integer"


class _PositiveInteger(_IntegerGreaterThan):
    def __init__(self):
        super().__init__(1)

    def __repr__(self):
        return "positive_integer"


class _Independent(Constraint):
    """Reinterpret the ``reinterpreted_batch_ndims`` rightmost dims of ``base`` as one event."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int):
        if not isinstance(base_constraint, Constraint):
            raise TypeError(
                f"independent: base_constraint must be a Constraint, got {base_constraint!r}.")
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError(
                "independent: reinterpreted_batch_ndims must be a non-negative int, got "
                f"{reinterpreted_batch_ndims!r}.")
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
        return f"independent({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _RealVector(_Independent):
    def __init__(self):
        super().__init__(_Real(), 1)

    def __repr__(self):
        return "real_vector"


class _RealMatrix(_Independent):
    def __init__(self):
        super().__init__(_Real(), 2)

    def __repr__(self):
        return "real_matrix"


class _OrderedVector(Constraint):
    event_dim = 1

    def check(self, value):
        fin = ops.all(ops.isfinite(value), axis=-1)
        return ops.logical_and(fin, ops.all(value[..., 1:] > value[..., :-1], axis=-1))

    def feasible_like(self, prototype):
        n = ops.shape(prototype)[-1]
        return ops.broadcast_to(ops.arange(n, dtype=ops.dtype_of(_float(prototype))),
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
        n = ops.shape(prototype)[-1]
        return ops.full_like(_float(prototype), 1.0 / n)


class _Multinomial(Constraint):
    """Nonnegative integer vectors summing to ``upper_bound`` (the total count)."""

    event_dim = 1
    is_discrete = True

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        ints = ops.all(ops.logical_and(value >= 0, ops.floor(value) == value), axis=-1)
        return ops.logical_and(ints, ops.sum(value, axis=-1) == self.upper_bound)

    def __repr__(self):
        return f"multinomial({_bound_repr(self.upper_bound)})"


def _lower_triangular(value):
    return ops.all(ops.all(ops.triu(value, k=1) == 0, axis=-1), axis=-1)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        diag_pos = ops.all(ops.diagonal(value, axis1=-2, axis2=-1) > 0, axis=-1)
        return ops.logical_and(_lower_triangular(value), diag_pos)

    def feasible_like(self, prototype):
        n = ops.shape(prototype)[-1]
        return ops.broadcast_to(ops.eye(n, dtype=ops.dtype_of(_float(prototype))),
                                ops.shape(prototype))


class _CorrCholesky(_LowerCholesky):
    def check(self, value):
        unit_rows = ops.all(
            ops.abs(ops.sqrt(ops.sum(value * value, axis=-1)) - 1.0) < _tol(value), axis=-1)
        return ops.logical_and(super().check(value), unit_rows)


class _PositiveDefinite(Constraint):
    """Symmetric matrices with all leading principal minors positive (Sylvester's criterion)."""

    event_dim = 2

    def check(self, value):
        sym = ops.all(ops.all(
            ops.abs(value - ops.matrix_transpose(value))
            <= _tol(value) * (1.0 + ops.abs(value)), axis=-1), axis=-1)
        n = ops.shape(value)[-1]
        ok = sym
        for k in range(1, n + 1):
            sign, _ = ops.slogdet(value[..., :k, :k])
            ok = ops.logical_and(ok, sign > 0)
        return ok

    def feasible_like(self, prototype):
        n = ops.shape(prototype)[-1]
        return ops.broadcast_to(ops.eye(n, dtype=ops.dtype_of(_float(prototype))),
                                ops.shape(prototype))


# Public instances and factories (NumPyro's names).
dependent = _Dependent()
real = _Real()
real_vector = _RealVector()
real_matrix = _RealMatrix()
boolean = _Boolean()
positive = _Positive()
nonnegative = _Nonnegative()
unit_interval = _UnitInterval()
nonnegative_integer = _NonnegativeInteger()
positive_integer = _PositiveInteger()
ordered_vector = _OrderedVector()
positive_ordered_vector = _PositiveOrderedVector()
simplex = _Simplex()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
positive_definite = _PositiveDefinite()
interval = _Interval
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
integer_interval = _IntegerInterval
integer_greater_than = _IntegerGreaterThan
independent = _Independent
multinomial = _Multinomial
