"""numpy backend: linear algebra (``autograd.numpy.linalg``; a batched triangular solve with
its VJP in :mod:`ppl.backends.numpy.primitives`)."""

from __future__ import annotations

import autograd.numpy as anp
import numpy as np

from ppl.backends.numpy import primitives as prims

__all__ = ["NumpyLinalg"]


class NumpyLinalg:
    """Linear algebra of :class:`~ppl.backends.numpy.NumpyBackend`."""

    def matmul(self, a, b):
        return anp.matmul(a, b)

    def einsum(self, subscripts, *operands):
        return anp.einsum(subscripts, *operands)

    def diagonal(self, x, offset=0, axis1=-2, axis2=-1):
        # Fancy indexing, since autograd differentiates np.diagonal only for axes (-1, -2).
        m = anp.moveaxis(x, (axis1, axis2), (-2, -1))
        rows, cols = anp.shape(m)[-2:]
        n = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
        i = np.arange(n)
        return m[..., i + max(-offset, 0), i + max(offset, 0)]

    def cholesky(self, a):
        return anp.linalg.cholesky(a)

    def solve_triangular(self, a, b, lower=True):
        return prims.solve_triangular(a, b, lower=lower)

    def solve(self, a, b):
        return anp.linalg.solve(a, b)

    def inv(self, a):
        return anp.linalg.inv(a)

    def slogdet(self, a):
        return anp.linalg.slogdet(a)
