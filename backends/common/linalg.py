"""Linear algebra: the ``ppl.ops.linalg`` namespace (the Array API's linalg extension plus
``cho_solve`` and ``logdet``), batched over leading axes. Every public method here is one
``LINALG_OPS`` name. Decompositions and solves are floating ops
(:mod:`ppl.backends.common.dtypes`); products keep their input's kind."""

from __future__ import annotations

from ppl.backends.common.core import not_implemented
from ppl.backends.common.dtypes import floating

__all__ = ["Linalg"]


class Linalg:
    """Products, decompositions and solves of ``(..., n, n)`` matrices."""

    def matmul(self, a, b): raise not_implemented(self, "matmul")
    def einsum(self, subscripts, *operands): raise not_implemented(self, "einsum")
    def diagonal(self, x, offset=0, axis1=-2, axis2=-1): raise not_implemented(self, "diagonal")

    @floating()
    def cholesky(self, a):
        """Batched lower Cholesky factor of ``(..., n, n)`` positive-definite matrices."""
        raise not_implemented(self, "cholesky")

    @floating("a", "b")
    def solve_triangular(self, a, b, lower=True):
        """Solve ``a @ x = b`` for triangular ``a`` (``(..., n, n)``), ``b`` ``(..., n, k)``."""
        raise not_implemented(self, "solve_triangular")

    @floating("a", "b")
    def solve(self, a, b): raise not_implemented(self, "solve")
    @floating()
    def inv(self, a): raise not_implemented(self, "inv")
    @floating()
    def slogdet(self, a): raise not_implemented(self, "slogdet")

    @floating("c", "b")
    def cho_solve(self, c, b, lower=True):
        """Solve ``A x = b`` given the Cholesky factor ``c`` of ``A`` (``scipy.linalg.cho_solve``
        with ``(c, lower)`` spelled out)."""
        if lower:
            y = self.solve_triangular(c, b, lower=True)
            return self.solve_triangular(self.matrix_transpose(c), y, lower=False)
        y = self.solve_triangular(self.matrix_transpose(c), b, lower=True)
        return self.solve_triangular(c, y, lower=False)

    @floating()
    def logdet(self, a):
        """``log|det a|`` of batched positive-definite matrices, through the Cholesky factor."""
        l = self.cholesky(a)
        return 2.0 * self.sum(self.log(self.diagonal(l, axis1=-2, axis2=-1)), axis=-1)

    @floating()
    def det(self, a):
        sign, ld = self.slogdet(a)
        return sign * self.exp(ld)

    def matrix_transpose(self, x):
        return self.moveaxis(x, -1, -2)

    def outer(self, a, b):
        return self.expand_dims(a, -1) * self.expand_dims(b, -2)

    def vecdot(self, a, b, axis=-1):
        return self.sum(a * b, axis=axis)
