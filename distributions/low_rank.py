"""The multivariate normal with a low-rank-plus-diagonal covariance,
``Sigma = W W^T + diag(D)`` (NumPyro's ``LowRankMultivariateNormal``).

With ``W`` of shape ``(n, k)``, ``k << n``, nothing of size ``n x n`` is formed or factorized:
``log_prob`` uses the Woodbury identity and the matrix determinant lemma through the
``k x k`` capacitance matrix ``C = I + W^T D^{-1} W`` (``O(n k^2)``), and a draw is
``loc + W e1 + sqrt(D) e2`` with standard normal ``e1`` (``k``) and ``e2`` (``n``).

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     d = dist.LowRankMultivariateNormal(ppl.ops.zeros(3), ppl.ops.ones((3, 1)),
...                                        ppl.ops.ones(3))
...     round(float(d.log_prob(ppl.ops.zeros(3))), 6), d.event_shape
(-3.449963, (3,))
"""

from __future__ import annotations

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.parametrization import derived_parameter
from ppl.distributions.util import HALF_LOG_2PI, as_float
from ppl.distributions.validation import require_ndim, set_event_loc, validate_sample

__all__ = ["LowRankMultivariateNormal"]


def _diag_matrix(d):
    """Diagonal matrices with diagonal ``d`` (``(..., n) -> (..., n, n)``)."""
    n = ops.shape(d)[-1]
    return ops.eye(n, dtype=ops.dtype_of(d)) * ops.expand_dims(d, -2)


def _matvec(a, v):
    """``a @ v`` for batches of matrices and vectors that broadcast."""
    return ops.matmul(a, ops.expand_dims(v, -1))[..., 0]


class LowRankMultivariateNormal(Distribution):
    """Multivariate normal with mean ``loc`` and covariance
    ``cov_factor @ cov_factor.T + diag(cov_diag)``.

    Parameters
    ----------
    loc
        Mean, shape ``batch_shape + (n,)`` (a scalar broadcasts to ``n``).
    cov_factor
        The low-rank factor ``W``, shape ``batch_shape + (n, k)``.
    cov_diag
        The positive diagonal ``D``, shape ``batch_shape + (n,)``.

    Notes
    -----
    ``log_prob`` is ``-(n log(2 pi) + log|Sigma| + x^T Sigma^{-1} x) / 2`` with
    ``log|Sigma| = log|C| + sum(log D)`` (the matrix determinant lemma) and
    ``x^T Sigma^{-1} x = x^T D^{-1} x - |L_C^{-1} W^T D^{-1} x|^2`` (the Woodbury identity),
    ``L_C`` the Cholesky factor of ``C = I + W^T D^{-1} W`` (Rasmussen & Williams 2006,
    *Gaussian Processes for Machine Learning*, A.3). ``covariance_matrix``,
    ``precision_matrix`` and ``scale_tril`` are ``n x n`` and computed on access.

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     w = ppl.ops.asarray([[1.0], [0.5]])
    ...     d = dist.LowRankMultivariateNormal(0.0, w, ppl.ops.asarray([1.0, 2.0]))
    ...     d.covariance_matrix.tolist(), d.sample(ppl.random.key(0), (4,)).shape
    ([[2.0, 0.5], [0.5, 2.25]], (4, 2))
    """

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    reparametrized_params = ["loc", "cov_factor", "cov_diag"]

    def __init__(self, loc, cov_factor, cov_diag, *, validate_args=None):
        name = type(self).__name__
        self.cov_factor, self.cov_diag = as_float(cov_factor), as_float(cov_diag)
        require_ndim(self, "cov_factor", self.cov_factor, 2, "an (n, k) matrix")
        require_ndim(self, "cov_diag", self.cov_diag, 1, "the n diagonal entries")
        n = ops.shape(self.cov_factor)[-2]
        if ops.shape(self.cov_diag)[-1] != n:
            raise ValueError(
                f"{name}: cov_diag has size {ops.shape(self.cov_diag)[-1]} in its last dim but "
                f"cov_factor has {n} rows (shape {ops.shape(self.cov_factor)}); give cov_diag "
                "one entry per row of cov_factor.")
        batch = set_event_loc(
            self, loc, n, f"cov_factor has {n} rows (shape {ops.shape(self.cov_factor)})")
        super().__init__(batch, (n,), validate_args=validate_args)

    # ---------------------------------------------------------------- the k x k algebra
    def _wt_dinv(self):
        """``W^T D^{-1}``, shape ``(..., k, n)``."""
        return ops.matrix_transpose(self.cov_factor) / ops.expand_dims(self.cov_diag, -2)

    def _capacitance_tril(self):
        """Cholesky factor of ``C = I + W^T D^{-1} W`` (``k x k``; eigenvalues >= 1)."""
        c = ops.matmul(self._wt_dinv(), self.cov_factor)
        k = ops.shape(c)[-1]
        return ops.cholesky(c + ops.eye(k, dtype=ops.dtype_of(c)))

    def _log_det(self, l_c):
        """``log|Sigma| = 2 sum(log diag L_C) + sum(log D)``."""
        log_diag = ops.log(ops.diagonal(l_c, axis1=-2, axis2=-1))
        return 2.0 * ops.sum(log_diag, axis=-1) + ops.sum(ops.log(self.cov_diag), axis=-1)

    def sample(self, key, sample_shape=()):
        k_w, k_d = random.split_keys(key, 2)
        shape = tuple(sample_shape) + self.batch_shape
        dtype = ops.dtype_of(self.loc)
        e_w = random.normal(k_w, shape + ops.shape(self.cov_factor)[-1:], dtype=dtype)
        e_d = random.normal(k_d, shape + self.event_shape, dtype=dtype)
        return self.loc + _matvec(self.cov_factor, e_w) + ops.sqrt(self.cov_diag) * e_d

    @validate_sample
    def log_prob(self, value):
        diff = as_float(value) - self.loc
        l_c = self._capacitance_tril()
        u = _matvec(self._wt_dinv(), diff)                                  # W^T D^{-1} x
        k = ops.shape(l_c)[-1]
        shape = ops.broadcast_shapes(ops.shape(u)[:-1], ops.shape(l_c)[:-2])
        z = ops.solve_triangular(ops.broadcast_to(l_c, shape + (k, k)),
                                 ops.expand_dims(ops.broadcast_to(u, shape + (k,)), -1),
                                 lower=True)[..., 0]
        mahalanobis = ops.sum(diff * diff / self.cov_diag, axis=-1) - ops.sum(z * z, axis=-1)
        n = self.event_shape[0]
        return -0.5 * (mahalanobis + self._log_det(l_c)) - n * HALF_LOG_2PI

    def entropy(self):
        n = self.event_shape[0]
        h = n * (0.5 + HALF_LOG_2PI) + 0.5 * self._log_det(self._capacitance_tril())
        return ops.broadcast_to(h, self.batch_shape)

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        v = ops.sum(self.cov_factor * self.cov_factor, axis=-1) + self.cov_diag
        return ops.broadcast_to(v, self.batch_shape + self.event_shape)

    @derived_parameter
    def covariance_matrix(self):
        """``W W^T + diag(D)``, shape ``batch_shape + (n, n)``."""
        w = self.cov_factor
        cov = ops.matmul(w, ops.matrix_transpose(w)) + _diag_matrix(self.cov_diag)
        return ops.broadcast_to(cov, self.batch_shape + self.event_shape * 2)

    @derived_parameter
    def precision_matrix(self):
        """``D^{-1} - A^T A`` with ``A = L_C^{-1} W^T D^{-1}`` (the Woodbury identity)."""
        wt_dinv = self._wt_dinv()
        l_c = self._capacitance_tril()
        shape = ops.broadcast_shapes(ops.shape(wt_dinv)[:-2], ops.shape(l_c)[:-2])
        k, n = ops.shape(wt_dinv)[-2:]
        a = ops.solve_triangular(ops.broadcast_to(l_c, shape + (k, k)),
                                 ops.broadcast_to(wt_dinv, shape + (k, n)), lower=True)
        prec = _diag_matrix(1.0 / self.cov_diag) - ops.matmul(ops.matrix_transpose(a), a)
        return ops.broadcast_to(prec, self.batch_shape + self.event_shape * 2)

    @derived_parameter
    def scale_tril(self):
        """Lower Cholesky factor of the covariance, as ``sqrt(D) chol(I + D^{-1/2} W W^T
        D^{-1/2})``: the inner matrix has eigenvalues >= 1, so its factorization is stable."""
        sqrt_d = ops.expand_dims(ops.sqrt(self.cov_diag), -1)
        scaled = self.cov_factor / sqrt_d
        n = self.event_shape[0]
        inner = ops.matmul(scaled, ops.matrix_transpose(scaled)) + ops.eye(
            n, dtype=ops.dtype_of(scaled))
        return ops.broadcast_to(sqrt_d * ops.cholesky(inner),
                                self.batch_shape + self.event_shape * 2)
