"""numpy backend: linear algebra (``autograd.numpy.linalg``; a batched triangular solve with
its VJP in :mod:`ppl.backends.numpy.primitives`)."""

from __future__ import annotations

import autograd.numpy as anp
import numpy as np
from autograd.extend import defvjp, primitive
from autograd.numpy.linalg import grad_cholesky

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
        """Lower Cholesky factor; NaN where ``a`` is not positive definite, as on the other
        backends (LAPACK raises): a sampler's proposal there is a divergence, not a crash."""
        return _cholesky(a)

    def solve_triangular(self, a, b, lower=True):
        return prims.solve_triangular(a, b, lower=lower)

    def solve(self, a, b):
        return anp.linalg.solve(a, b)

    def inv(self, a):
        return anp.linalg.inv(a)

    def slogdet(self, a):
        return anp.linalg.slogdet(a)


@primitive
def _cholesky(a):
    """``np.linalg.cholesky`` with NaN factors for the matrices that are not positive definite
    (a primitive, so that the numpy backend's recorded tapes replay it too)."""
    shape = np.shape(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        return np.linalg.cholesky(a)        # its error on a shape stays an error
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        pass
    out = np.full(np.shape(a), np.nan, dtype=np.result_type(a, np.float32))
    flat, square = out.reshape((-1,) + out.shape[-2:]), np.reshape(a, (-1,) + out.shape[-2:])
    for i, m in enumerate(square):
        try:
            flat[i] = np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            pass
    return out


defvjp(_cholesky, grad_cholesky)    # autograd's VJP of the factor (NaN where it is NaN)
