"""Constraints on matrices (event dim 2): lower Cholesky factors, Cholesky factors of correlation
matrices, correlation matrices and positive-definite matrices."""

from __future__ import annotations

from ppl import ops
from ppl.distributions.constraint_base import Constraint, _eye_like, _tol

__all__ = ["_CorrCholesky", "_CorrMatrix", "_LowerCholesky", "_PositiveDefinite"]


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        lower = ops.all(ops.all(ops.triu(value, k=1) == 0, axis=-1), axis=-1)
        diag_pos = ops.all(ops.diagonal(value, axis1=-2, axis2=-1) > 0, axis=-1)
        return ops.logical_and(lower, diag_pos)

    def feasible_like(self, prototype):
        return _eye_like(prototype)


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
        return ops.logical_and(sym, self._minors_positive(value, 1))

    @staticmethod
    def _minors_positive(value, first: int):
        """The leading principal minors of sizes ``first..n`` are all positive."""
        ok = None
        for k in range(first, ops.shape(value)[-1] + 1):
            sign, _ = ops.slogdet(value[..., :k, :k])
            ok = sign > 0 if ok is None else ops.logical_and(ok, sign > 0)
        return ok

    def feasible_like(self, prototype):
        return _eye_like(prototype)


class _CorrMatrix(_PositiveDefinite):
    """Correlation matrices: symmetric, unit diagonal, positive definite."""

    def check(self, value):
        tol = _tol(value)
        sym = ops.all(ops.all(ops.abs(value - ops.matrix_transpose(value)) <= tol, axis=-1),
                      axis=-1)
        unit = ops.all(ops.abs(ops.diagonal(value, axis1=-2, axis2=-1) - 1.0) <= tol, axis=-1)
        ok = ops.logical_and(sym, unit)
        return ok if ops.shape(value)[-1] < 2 else ops.logical_and(
            ok, self._minors_positive(value, 2))
