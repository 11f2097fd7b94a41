"""Matrix transforms (event dim 2): reals onto Cholesky factors of correlation matrices and
onto lower-triangular matrices with positive diagonal, and positive-definite matrices and
correlation matrices to their Cholesky factors (Stan Reference Manual, "Constraint transforms";
Lewandowski, Kurowicka & Joe 2009 for the partial-correlation parametrization of correlation
matrices).

>>> import ppl
>>> from ppl.distributions.transforms import CorrCholeskyTransform
>>> with ppl.use_backend("numpy", dtype="float64"):
...     CorrCholeskyTransform()(ppl.ops.zeros(1)).tolist()
[[1.0, 0.0], [0.0, 1.0]]
"""

from __future__ import annotations

import math

import numpy as np

from ppl import ops
from ppl.distributions import constraints
from ppl.distributions.transform import Transform
from ppl.distributions.util import finfo

__all__ = [
    "CholeskyTransform",
    "CorrCholeskyTransform",
    "CorrMatrixCholeskyTransform",
    "LowerCholeskyTransform",
]

_LOG_2 = math.log(2.0)


def _matrix_size(m: int, diagonal: bool, name: str) -> int:
    """``K`` such that a ``(K, K)`` lower triangle (with or without diagonal) has ``m`` entries."""
    k = (-1.0 + math.sqrt(1 + 8 * m)) / 2 if diagonal else (1.0 + math.sqrt(1 + 8 * m)) / 2
    k = int(round(k))
    if (k * (k + 1) if diagonal else k * (k - 1)) // 2 != m:
        want = "K(K+1)/2" if diagonal else "K(K-1)/2"
        raise ValueError(f"{name}: the input's last dim {m} is not {want} for any integer K.")
    return k


def _tril_gather(k: int, offset: int):
    """Index array mapping a ``(K*K,)`` flattened matrix to entries of a vector holding the
    ``tril(k=offset)`` entries in row-major order; ``-1`` positions read a zero pad."""
    rows, cols = np.tril_indices(k, offset)
    idx = np.full(k * k, len(rows), dtype=np.int64)
    idx[rows * k + cols] = np.arange(len(rows))
    return idx, rows * k + cols


def _vec_to_tril(vec, k, offset):
    idx, _ = _tril_gather(k, offset)
    pad = ops.concat([vec, ops.zeros_like(vec[..., :1])], axis=-1)
    return ops.reshape(ops.take(pad, idx, axis=-1), ops.shape(vec)[:-1] + (k, k))


def _tril_to_vec(mat, offset):
    k = ops.shape(mat)[-1]
    _, flat = _tril_gather(k, offset)
    return ops.take(ops.reshape(mat, ops.shape(mat)[:-2] + (k * k,)), flat, axis=-1)


class CorrCholeskyTransform(Transform):
    """Reals ``(..., K(K-1)/2)`` onto Cholesky factors of correlation matrices ``(..., K, K)``.

    ``tanh`` gives canonical partial correlations ``z``; row ``i`` of ``L`` is built by
    stick-breaking on squared norms: ``L_ij = z_ij * sqrt(prod_{k<j} (1 - z_ik^2))`` and
    ``L_ii = sqrt(prod_{k<i} (1 - z_ik^2))`` (Lewandowski et al. 2009; Stan manual).
    """

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky

    def _forward(self, x):
        k = _matrix_size(ops.shape(x)[-1], False, "CorrCholeskyTransform")
        lim = 1.0 - float(finfo(x).eps)
        z = _vec_to_tril(ops.clip(ops.tanh(x), -lim, lim), k, -1)
        log1m = ops.log1p(-z * z)
        excl = ops.cumsum(log1m, axis=-1) - log1m
        s = ops.exp(0.5 * excl)
        eye = ops.eye(k, dtype=ops.dtype_of(x))
        return z * s + eye * s, excl, k

    def __call__(self, x):
        return self._forward(x)[0]

    def _inverse(self, y):
        sq = y * y
        excl = ops.cumsum(sq, axis=-1) - sq
        denom = ops.sqrt(ops.maximum(1.0 - excl, float(finfo(y).tiny)))
        lim = 1.0 - float(finfo(y).eps)
        return ops.atanh(ops.clip(_tril_to_vec(y / denom, -1), -lim, lim))

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        _, excl, k = self._forward(x)
        tanh_term = 2.0 * (_LOG_2 - x - ops.softplus(-2.0 * x))
        strict = ops.asarray(np.tril(np.ones((k, k)), -1), dtype=ops.dtype_of(x))
        return ops.sum(tanh_term, axis=-1) + 0.5 * ops.sum(ops.sum(excl * strict, axis=-1),
                                                           axis=-1)

    def forward_shape(self, shape):
        k = _matrix_size(shape[-1], False, "CorrCholeskyTransform")
        return tuple(shape[:-1]) + (k, k)

    def inverse_shape(self, shape):
        k = shape[-1]
        return tuple(shape[:-2]) + (k * (k - 1) // 2,)


class LowerCholeskyTransform(Transform):
    """Reals ``(..., K(K+1)/2)`` onto lower-triangular matrices with positive diagonal: the
    first ``K(K-1)/2`` entries fill the strict lower triangle (row-major), the last ``K`` are
    the log of the diagonal."""

    domain = constraints.real_vector
    codomain = constraints.lower_cholesky

    def __call__(self, x):
        k = _matrix_size(ops.shape(x)[-1], True, "LowerCholeskyTransform")
        m = ops.shape(x)[-1] - k
        return _vec_to_tril(x[..., :m], k, -1) + ops.diag(ops.exp(x[..., m:]))

    def _inverse(self, y):
        diag = ops.log(ops.diagonal(y, axis1=-2, axis2=-1))
        return ops.concat([_tril_to_vec(y, -1), diag], axis=-1)

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        k = _matrix_size(ops.shape(x)[-1], True, "LowerCholeskyTransform")
        return ops.sum(x[..., ops.shape(x)[-1] - k:], axis=-1)

    def forward_shape(self, shape):
        k = _matrix_size(shape[-1], True, "LowerCholeskyTransform")
        return tuple(shape[:-1]) + (k, k)

    def inverse_shape(self, shape):
        k = shape[-1]
        return tuple(shape[:-2]) + (k * (k + 1) // 2,)


class CholeskyTransform(Transform):
    """Positive-definite ``A`` to its lower Cholesky factor ``L``; ``.inv`` is ``L -> L L^T``.

    ``log|det dA/dL| = K log 2 + sum_i (K - i) log L_ii`` (0-based ``i``) on the lower
    triangles, so the forward log-Jacobian is its negative.
    """

    domain = constraints.positive_definite
    codomain = constraints.lower_cholesky

    def __call__(self, x):
        return ops.cholesky(x)

    def _inverse(self, y):
        return ops.matmul(y, ops.matrix_transpose(y))

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        k = ops.shape(y)[-1]
        powers = ops.asarray(np.arange(k, 0, -1, dtype=float), dtype=ops.dtype_of(y))
        log_diag = ops.log(ops.diagonal(y, axis1=-2, axis2=-1))
        return -(k * _LOG_2 + ops.sum(powers * log_diag, axis=-1))


def cholesky_to_corr(l):
    """``L L^T`` for Cholesky factors ``L`` of correlation matrices, exactly symmetric and with
    an exact unit diagonal (the rows of ``L`` have unit norm only up to rounding)."""
    c = ops.matmul(l, ops.matrix_transpose(l))
    eye = ops.eye(ops.shape(l)[-1], dtype=ops.dtype_of(l))
    return 0.5 * (c + ops.matrix_transpose(c)) * (1.0 - eye) + eye


class CorrMatrixCholeskyTransform(Transform):
    """Correlation matrices ``C`` to their lower Cholesky factors ``L``; ``.inv`` is
    ``L -> L L^T`` (made exactly symmetric, with an exact unit diagonal).

    Both sides have ``K(K-1)/2`` free coordinates, the strictly lower triangles. With them in
    row-major order, ``C_ij = sum_{k<=j} L_ik L_jk`` (``j < i``) depends on ``L_ij`` through
    the factor ``L_jj`` and otherwise on earlier coordinates only, so the Jacobian is
    triangular and ``log|det dC/dL| = sum_j (K - 1 - j) log L_jj`` (0-based ``j``; Stan
    Reference Manual, "Correlation matrices"). The forward log-Jacobian is its negative.

    >>> import ppl
    >>> from ppl.distributions.matrix_transforms import CorrMatrixCholeskyTransform
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     c = ppl.ops.asarray([[1.0, 0.6, 0.0], [0.6, 1.0, 0.0], [0.0, 0.0, 1.0]])
    ...     t = CorrMatrixCholeskyTransform()
    ...     l = t(c)
    ...     l[1].round(6).tolist(), round(float(t.log_abs_det_jacobian(c, l)), 6)
    ([0.6, 0.8, 0.0], 0.223144)
    """

    domain = constraints.corr_matrix
    codomain = constraints.corr_cholesky

    def __call__(self, x):
        return ops.cholesky(x)

    def _inverse(self, y):
        return cholesky_to_corr(y)

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        k = ops.shape(y)[-1]
        powers = ops.asarray(np.arange(k - 1, -1, -1, dtype=float), dtype=ops.dtype_of(y))
        log_diag = ops.log(ops.diagonal(y, axis1=-2, axis2=-1))
        return -ops.sum(powers * log_diag, axis=-1)
