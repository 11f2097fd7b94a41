"""tensorflow backend: linear algebra (``tf.linalg``), batched over leading axes, with the
shape checks made up front so errors are ``ValueError``s that name the shapes."""

from __future__ import annotations

import tensorflow as tf

__all__ = ["TensorflowLinalg"]


class TensorflowLinalg:
    """Linear algebra of :class:`~ppl.backends.tensorflow.TensorflowBackend`."""

    def matmul(self, a, b):
        a, b = self._ins(a, b)
        sa, sb = self.shape(a), self.shape(b)
        k_a = sa[-1] if sa else None
        k_b = sb[-2] if len(sb) > 1 else sb[0] if sb else None
        if k_a is None or k_b is None or k_a != k_b:
            raise ValueError(f"matmul: shapes {sa} and {sb} are not aligned (the last "
                             f"axis of a must match the second-to-last axis of b).")
        if len(sa) == 1 or len(sb) == 1:
            return tf.experimental.numpy.matmul(a, b)
        return tf.linalg.matmul(a, b)

    def einsum(self, subscripts, *operands): return tf.einsum(subscripts, *self._ins(*operands))
    def matrix_transpose(self, x): return tf.linalg.matrix_transpose(self._in(x))

    def diagonal(self, x, offset=0, axis1=-2, axis2=-1):
        x = self._in(x)
        if (axis1 % x.shape.rank, axis2 % x.shape.rank) == (x.shape.rank - 2, x.shape.rank - 1):
            return tf.linalg.diag_part(x, k=offset)
        return tf.experimental.numpy.diagonal(x, offset=offset, axis1=axis1, axis2=axis2)

    def cholesky(self, a):
        s = self.shape(a)
        if len(s) < 2 or s[-1] != s[-2]:
            raise ValueError(f"cholesky expects square matrices of shape (..., n, n), got "
                             f"shape {s}.")
        return tf.linalg.cholesky(a)

    def _batched(self, a, b):
        """``(a, b, vector)``: the batch dimensions of ``a`` ``(..., n, n)`` and ``b``
        ``(..., n, k)`` broadcast; a 1-D ``b`` becomes a column."""
        a, b = self._ins(a, b)
        vector = b.shape.rank == 1
        if vector:
            b = b[:, None]
        batch = tf.broadcast_static_shape(a.shape[:-2], b.shape[:-2])
        return (tf.broadcast_to(a, batch + a.shape[-2:]), tf.broadcast_to(b, batch + b.shape[-2:]),
                vector)

    def solve_triangular(self, a, b, lower=True):
        a, b, vector = self._batched(a, b)
        x = tf.linalg.triangular_solve(a, b, lower=lower)
        return x[..., 0] if vector else x

    def cho_solve(self, c, b, lower=True):
        c, b, vector = self._batched(c, b)
        if not lower:
            c = tf.linalg.matrix_transpose(c)
        x = tf.linalg.cholesky_solve(c, b)
        return x[..., 0] if vector else x

    def solve(self, a, b):
        a, b, vector = self._batched(a, b)
        x = tf.linalg.solve(a, b)
        return x[..., 0] if vector else x

    def inv(self, a): return tf.linalg.inv(a)

    def slogdet(self, a):
        sign, logabsdet = tf.linalg.slogdet(a)
        return sign, logabsdet

    def det(self, a): return tf.linalg.det(a)
