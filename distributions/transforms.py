"""Bijective transforms between constrained and unconstrained spaces, and ``biject_to``.

The transforms live by kind in :mod:`~ppl.distributions.transform` (the contract, inverse,
composition), :mod:`~ppl.distributions.elementwise_transforms`,
:mod:`~ppl.distributions.vector_transforms` and :mod:`~ppl.distributions.matrix_transforms`;
this module is their public home and holds the ``biject_to`` registry.

``biject_to(constraint)`` returns a transform from unconstrained reals onto ``constraint``. It
reads the constraint's bounds when called, so bounds that depend on other latent values
(``interval(0, 1 - a)``) are honoured at their current value.

Bounds of ``interval``, ``greater_than`` (``greater_than_eq``) and ``less_than`` may hold
infinite entries, each an open side: :class:`IntervalTransform` then maps every entry with the
transform of its own kind of bounds. It is used when a bound is a Python number or NumPy array
with an infinite entry (such values are read), and always for the supports of the truncated
families whose bounds cannot be read (``TruncatedNormal(0, 1, low=np.array([-np.inf, 0.0]))``
under a compiler). Other bounds, traced ones included, keep the fixed maps (sigmoid and affine;
``exp`` and affine) and must be finite; on entries with two finite bounds both give the same
values.

>>> import ppl
>>> from ppl.distributions import constraints, biject_to
>>> with ppl.use_backend("numpy", dtype="float64"):
...     t = biject_to(constraints.interval(-1.0, 3.0))
...     float(t(ppl.ops.asarray(0.0)))
1.0

References: Stan Reference Manual, "Constraint transforms" (stick-breaking simplex, ordered
vectors, correlation and covariance Cholesky factors); Lewandowski, Kurowicka & Joe (2009) for
the partial-correlation (CPC) parametrization of correlation matrices.
"""

from __future__ import annotations

import numpy as np

from ppl.distributions import constraints
from ppl.distributions.elementwise_transforms import (
    AffineTransform,
    ExpTransform,
    IntervalTransform,
    SigmoidTransform,
    SoftplusTransform,
)
from ppl.distributions.matrix_transforms import (
    CholeskyTransform,
    CorrCholeskyTransform,
    CorrMatrixCholeskyTransform,
    LowerCholeskyTransform,
)
from ppl.distributions.transform import (
    ComposeTransform,
    IdentityTransform,
    IndependentTransform,
    Transform,
)
from ppl.distributions.vector_transforms import (
    OrderedTransform,
    SimplexToOrderedTransform,
    StickBreakingTransform,
    ZeroSumTransform,
)

__all__ = [
    "AffineTransform",
    "CholeskyTransform",
    "ComposeTransform",
    "CorrCholeskyTransform",
    "CorrMatrixCholeskyTransform",
    "ExpTransform",
    "IdentityTransform",
    "IndependentTransform",
    "IntervalTransform",
    "LowerCholeskyTransform",
    "OrderedTransform",
    "SigmoidTransform",
    "SimplexToOrderedTransform",
    "SoftplusTransform",
    "StickBreakingTransform",
    "Transform",
    "ZeroSumTransform",
    "biject_to",
]


class _Registry:
    """``biject_to(constraint)``: the transform from reals onto ``constraint``, looked up by
    the constraint's class (most specific first) and built from its current bounds."""

    def __init__(self):
        self._factories = {}

    def register(self, constraint, factory=None):
        """Register ``factory(constraint) -> Transform`` for a constraint (class or instance);
        usable as a decorator."""
        key = constraint if isinstance(constraint, type) else type(constraint)
        if factory is None:
            return lambda f: self.register(key, f)
        self._factories[key] = factory
        return factory

    def __call__(self, constraint):
        if not isinstance(constraint, constraints.Constraint):
            raise TypeError(f"biject_to: expected a Constraint, got {constraint!r}.")
        for cls in type(constraint).__mro__:
            if cls in self._factories:
                return self._factories[cls](constraint)
        raise NotImplementedError(
            f"biject_to: no transform is registered for the constraint {constraint!r}; "
            "register one with biject_to.register(constraint_class, factory).")


biject_to = _Registry()
C = constraints
biject_to.register(C.real, lambda c: IdentityTransform())
biject_to.register(C.independent, lambda c: IndependentTransform(
    biject_to(c.base_constraint), c.reinterpreted_batch_ndims))
biject_to.register(C.positive, lambda c: ExpTransform())
biject_to.register(C.nonnegative, lambda c: ExpTransform())


def _entrywise(c, *bounds) -> bool:
    """Whether ``c`` needs :class:`IntervalTransform`: its bounds may hold infinite entries
    that cannot be read (the truncated families' supports), or they hold some that can."""
    return isinstance(c, C.ExtendedInterval) or any(
        C.known_finite(b) is False for b in bounds)


def _greater_than(c):
    if _entrywise(c, c.lower_bound):
        return IntervalTransform(c.lower_bound, np.inf)
    return ComposeTransform([ExpTransform(), AffineTransform(c.lower_bound, 1.0,
                                                             domain=C.positive)])


def _less_than(c):
    if _entrywise(c, c.upper_bound):
        return IntervalTransform(-np.inf, c.upper_bound)
    return ComposeTransform([ExpTransform(), AffineTransform(c.upper_bound, -1.0,
                                                             domain=C.positive)])


def _interval(c):
    lo, hi = c.lower_bound, c.upper_bound
    if _entrywise(c, lo, hi):
        return IntervalTransform(lo, hi)
    return ComposeTransform([SigmoidTransform(),
                             AffineTransform(lo, hi - lo, domain=C.unit_interval)])


biject_to.register(C.greater_than, _greater_than)
biject_to.register(C.less_than, _less_than)
biject_to.register(C.unit_interval, lambda c: SigmoidTransform())
biject_to.register(C.interval, _interval)
biject_to.register(C.simplex, lambda c: StickBreakingTransform())
biject_to.register(C.ordered_vector, lambda c: OrderedTransform())
biject_to.register(C.zero_sum, lambda c: ZeroSumTransform(c.event_dim))
biject_to.register(C.positive_ordered_vector,
                   lambda c: ComposeTransform([OrderedTransform(), ExpTransform()]))
biject_to.register(C.corr_cholesky, lambda c: CorrCholeskyTransform())
biject_to.register(C.corr_matrix, lambda c: ComposeTransform(
    [CorrCholeskyTransform(), CorrMatrixCholeskyTransform().inv]))
biject_to.register(C.lower_cholesky, lambda c: LowerCholeskyTransform())
biject_to.register(C.positive_definite, lambda c: ComposeTransform(
    [LowerCholeskyTransform(), CholeskyTransform().inv]))
