"""jax backend: linear algebra (``jax.numpy.linalg``, ``jax.scipy.linalg``), with the shape
checks JAX leaves to XLA made up front so errors are ``ValueError``s that name the shapes."""

from __future__ import annotations

import jax.numpy as jnp
import jax.scipy.linalg as jsl

__all__ = ["JaxLinalg"]


class JaxLinalg:
    """Linear algebra of :class:`~ppl.backends.jax.JaxBackend`."""

    def matmul(self, a, b):
        a, b = self._ins(a, b)
        k_a = a.shape[-1] if a.ndim else None
        k_b = b.shape[-2] if b.ndim > 1 else b.shape[0] if b.ndim else None
        if k_a is None or k_b is None or k_a != k_b:
            raise ValueError(f"matmul: shapes {a.shape} and {b.shape} are not aligned (the last "
                             f"axis of a must match the second-to-last axis of b).")
        return jnp.matmul(a, b)

    def einsum(self, subscripts, *operands): return jnp.einsum(subscripts, *self._ins(*operands))
    def matrix_transpose(self, x): return jnp.swapaxes(self._in(x), -1, -2)

    def diagonal(self, x, offset=0, axis1=-2, axis2=-1):
        return jnp.diagonal(self._in(x), offset=offset, axis1=axis1, axis2=axis2)

    def cholesky(self, a):
        if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
            raise ValueError(f"cholesky expects square matrices of shape (..., n, n), got "
                             f"shape {a.shape}.")
        return jnp.linalg.cholesky(a)

    def _batched(self, a, b):
        """Broadcast the leading batch dimensions of ``a`` ``(..., n, n)`` and ``b``
        ``(..., n, k)``; a 1-D ``b`` is left as a vector."""
        if b.ndim < 2:
            return a, b
        batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        return (jnp.broadcast_to(a, batch + a.shape[-2:]),
                jnp.broadcast_to(b, batch + b.shape[-2:]))

    def solve_triangular(self, a, b, lower=True):
        a, b = self._batched(a, b)
        return jsl.solve_triangular(a, b, lower=lower)

    def cho_solve(self, c, b, lower=True):
        c, b = self._batched(c, b)
        return jsl.cho_solve((c, lower), b)

    def solve(self, a, b): return jnp.linalg.solve(a, b)
    def inv(self, a): return jnp.linalg.inv(a)

    def slogdet(self, a):
        sign, logabsdet = jnp.linalg.slogdet(a)
        return sign, logabsdet

    def det(self, a): return jnp.linalg.det(a)
