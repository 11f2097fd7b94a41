"""The :class:`Constraint` base class and the small array helpers every constraint module shares
(``constraints`` for scalar, vector and bounded sets, ``matrix_constraints`` for matrices)."""

from __future__ import annotations

from ppl import ops
from ppl.distributions.util import as_float

__all__ = ["Constraint"]


def _tol(x) -> float:
    """A tolerance for equality checks that suits the dtype of ``x``."""
    return 1e-4 if ops.dtype_of(x) in ("float32", "float16", "bfloat16") else 1e-8


def _fill(prototype, value):
    """A float array shaped like ``prototype``, filled with ``value`` (broadcast)."""
    return ops.zeros_like(as_float(prototype)) + value


def _eye_like(prototype):
    """Identity matrices broadcast to the shape of ``prototype`` (``(..., n, n)``)."""
    n = ops.shape(prototype)[-1]
    return ops.broadcast_to(ops.eye(n, dtype=ops.dtype_of(as_float(prototype))),
                            ops.shape(prototype))


def _is_integer(value):
    return ops.floor(value) == value


class Constraint:
    """Base class: a set of admissible values.

    Subclasses set ``event_dim`` and ``is_discrete`` and implement :meth:`check`. The ``repr``
    is the public name (``positive``, ``interval(0.0, 1.0)``).
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
