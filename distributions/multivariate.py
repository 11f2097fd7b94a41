"""Multivariate families: Dirichlet, MultivariateNormal and LKJCholesky (NumPyro's names).

Dirichlet and MultivariateNormal draw reparameterized samples (Dirichlet through the backend's
differentiable gamma sampler), so gradients flow through ``sample``.

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     d = dist.MultivariateNormal(ppl.ops.zeros(2), scale_tril=ppl.ops.eye(2))
...     round(float(d.log_prob(ppl.ops.zeros(2))), 6), d.event_shape
(-1.837877, (2,))
"""

from __future__ import annotations

import math

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.parametrization import derived_parameter, set_one_of, set_parameters
from ppl.distributions.util import HALF_LOG_2PI, LOG_PI, as_float, clamp_probs, require_int
from ppl.distributions.validation import (
    require_ndim,
    require_square_matrix,
    set_event_loc,
    validate_sample,
)

__all__ = ["Dirichlet", "LKJCholesky", "MultivariateNormal"]


def mahalanobis_sq(scale_tril, diff):
    """``|L^{-1} diff|^2`` by a triangular solve, ``L`` and ``diff`` broadcast against each
    other over their batch dims (the backends' solvers want equal batch shapes)."""
    n = ops.shape(scale_tril)[-1]
    shape = ops.broadcast_shapes(ops.shape(diff)[:-1], ops.shape(scale_tril)[:-2])
    l = ops.broadcast_to(scale_tril, shape + (n, n))
    diff = ops.broadcast_to(diff, shape + (n,))
    z = ops.solve_triangular(l, ops.expand_dims(diff, -1), lower=True)[..., 0]
    return ops.sum(z * z, axis=-1)


def scale_matrix(scale_tril):
    """``L L^T``, the matrix whose lower Cholesky factor is ``L``."""
    return ops.matmul(scale_tril, ops.matrix_transpose(scale_tril))


def inverse_from_cholesky(scale_tril):
    """``(L L^T)^{-1}`` from ``L``, by two triangular solves against the identity."""
    n = ops.shape(scale_tril)[-1]
    return ops.cho_solve(scale_tril, ops.eye(n, dtype=ops.dtype_of(scale_tril)))


def factor_of(matrix, given: str):
    """The lower Cholesky factor ``L`` of a matrix ``S`` from ``matrix``, which is ``L`` itself
    (``given="tril"``), ``S`` (``"matrix"``) or ``S^{-1}`` (``"inverse"``: ``S = (L_P
    L_P^T)^{-1}`` is built from ``L_P`` and factorized)."""
    if given == "tril":
        return matrix
    if given == "matrix":
        return ops.cholesky(matrix)
    return ops.cholesky(inverse_from_cholesky(ops.cholesky(matrix)))


def half_log_det(scale_tril):
    """``log det(L L^T) / 2 = sum(log diag(L))``."""
    return ops.sum(ops.log(ops.diagonal(scale_tril, axis1=-2, axis2=-1)), axis=-1)


def lkj_log_normalizer(dimension: int, concentration):
    """``log Z``, the log of the integral of ``det(C)^(eta - 1)`` over ``d x d`` correlation
    matrices, for any ``eta > 0`` (``eta = concentration``, ``d = dimension``).

    Integrated row by row over the Cholesky factor (the onion construction of Lewandowski,
    Kurowicka & Joe 2009, section 3.2): row ``i`` (``i = 1..d-1``) has its ``i`` free entries in
    the unit ball, and the ball integral of ``(1 - |w|^2)^(a - 1)`` is
    ``pi^(i/2) Gamma(a) / Gamma(a + i/2)`` with ``a = eta + (d - 1 - i)/2``, so
    ``log Z = sum_i [lgamma(eta + (d-1-i)/2) - lgamma(eta + (d-1)/2)] + d(d-1)/4 log pi``.
    For ``d = 2`` this is ``log(2^(2 eta - 1) B(eta, eta))``.
    """
    eta = ops.expand_dims(as_float(concentration), -1)
    i = ops.arange(1, dimension, dtype=ops.dtype_of(eta))
    return (ops.sum(ops.gammaln(eta + 0.5 * (dimension - 1 - i))
                    - ops.gammaln(eta + 0.5 * (dimension - 1)), axis=-1)
            + 0.25 * dimension * (dimension - 1) * LOG_PI)


class Dirichlet(Distribution):
    """Dirichlet distribution on the probability simplex (the last axis).

    Parameters
    ----------
    concentration
        Positive concentrations ``alpha``, shape ``batch_shape + (K,)``.

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.Dirichlet(ppl.ops.asarray([1.0, 2.0, 3.0]))
    ...     [round(float(m), 4) for m in d.mean]
    [0.1667, 0.3333, 0.5]
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    reparametrized_params = ["concentration"]

    def __init__(self, concentration, *, validate_args=None):
        set_parameters(self, concentration=concentration)
        require_ndim(self, "concentration", self.concentration, 1, "the categories")
        shape = ops.shape(self.concentration)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        shape = tuple(sample_shape) + self.batch_shape
        x = random.dirichlet(key, self.concentration, shape, ops.dtype_of(self.concentration))
        return clamp_probs(x)

    @validate_sample
    def log_prob(self, value):
        value = as_float(value)
        a = self.concentration
        inside = ops.all(value >= 0, axis=-1)
        x = ops.where(value >= 0, value, ops.ones_like(value))
        log_norm = ops.gammaln(ops.sum(a, axis=-1)) - ops.sum(ops.gammaln(a), axis=-1)
        lp = ops.sum(ops.xlogy(a - 1.0, x), axis=-1) + log_norm
        return ops.where(inside, lp, ops.zeros_like(lp) - math.inf)

    @property
    def mean(self):
        a = self.concentration
        return a / ops.sum(a, axis=-1, keepdims=True)

    @property
    def variance(self):
        a = self.concentration
        a0 = ops.sum(a, axis=-1, keepdims=True)
        return a * (a0 - a) / (a0 * a0 * (a0 + 1.0))

    def entropy(self):
        a = self.concentration
        k = ops.shape(a)[-1]
        a0 = ops.sum(a, axis=-1)
        log_b = ops.sum(ops.gammaln(a), axis=-1) - ops.gammaln(a0)
        return (log_b + (a0 - k) * ops.digamma(a0)
                - ops.sum((a - 1.0) * ops.digamma(a), axis=-1))


class MultivariateNormal(Distribution):
    """Multivariate normal distribution with mean ``loc`` and one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril`` (the lower Cholesky factor of the covariance).

    Parameters
    ----------
    loc
        Mean, shape ``batch_shape + (n,)`` (a scalar broadcasts to the matrix size).
    covariance_matrix, precision_matrix, scale_tril
        Exactly one, shape ``batch_shape + (n, n)``.

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     cov = ppl.ops.asarray([[2.0, 0.5], [0.5, 1.0]])
    ...     d = dist.MultivariateNormal(ppl.ops.zeros(2), covariance_matrix=cov)
    ...     d.sample(ppl.random.key(0), (5,)).shape
    (5, 2)
    """

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    reparametrized_params = ["loc", "covariance_matrix", "precision_matrix", "scale_tril"]

    def __init__(self, loc=0.0, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 *, validate_args=None):
        self._param = set_one_of(self, covariance_matrix=covariance_matrix,
                                 precision_matrix=precision_matrix, scale_tril=scale_tril)
        matrix = self.__dict__[self._param]
        n = require_square_matrix(self, self._param, matrix)
        batch = set_event_loc(self, loc, n, f"{self._param} is {n} x {n}")
        # Validate the given matrix before factorizing it (a Cholesky of a non-PD matrix fails).
        super().__init__(batch, (n,), validate_args=validate_args)
        self._scale_tril = factor_of(matrix, {"scale_tril": "tril", "covariance_matrix": "matrix",
                                              "precision_matrix": "inverse"}[self._param])

    @derived_parameter
    def scale_tril(self):
        """Lower Cholesky factor ``L`` of the covariance (``Sigma = L L^T``)."""
        return self._scale_tril

    @derived_parameter
    def covariance_matrix(self):
        """``L L^T``."""
        return scale_matrix(self._scale_tril)

    @derived_parameter
    def precision_matrix(self):
        """``(L L^T)^{-1}``."""
        return inverse_from_cholesky(self._scale_tril)

    def sample(self, key, sample_shape=()):
        eps = random.normal(key, self.shape(sample_shape), dtype=ops.dtype_of(self.loc))
        return self.loc + ops.matmul(self._scale_tril, ops.expand_dims(eps, -1))[..., 0]

    @validate_sample
    def log_prob(self, value):
        diff = as_float(value) - self.loc
        n = self.event_shape[0]
        return (-0.5 * mahalanobis_sq(self._scale_tril, diff) - half_log_det(self._scale_tril)
                - n * HALF_LOG_2PI)

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        l = self._scale_tril
        return ops.broadcast_to(ops.sum(l * l, axis=-1), self.batch_shape + self.event_shape)

    def entropy(self):
        n = self.event_shape[0]
        return ops.broadcast_to(n * (0.5 + HALF_LOG_2PI) + half_log_det(self._scale_tril),
                                self.batch_shape)


class LKJCholesky(Distribution):
    """LKJ distribution over Cholesky factors ``L`` of correlation matrices ``C = L L^T``.

    The density of ``C`` is proportional to ``det(C)^(concentration - 1)`` (Lewandowski,
    Kurowicka and Joe 2009, "Generating random correlation matrices based on vines and extended
    onion method", J. Multivariate Anal. 100). ``log_prob`` is the density of ``L`` with respect
    to Lebesgue measure on its strictly lower-triangular entries, as in Stan and NumPyro:
    ``sum_{i>=1} (d - 1 - i + 2 (eta - 1)) log L_ii`` minus the log normalizer, rows 0-indexed.
    Draws use the onion method: row ``i`` of ``L`` is ``sqrt(y_i) u_i`` off the diagonal and
    ``sqrt(1 - y_i)`` on it, with ``y_i ~ Beta(i / 2, eta + (d - 1 - i) / 2)`` and ``u_i``
    uniform on the unit sphere in ``R^i``.

    Parameters
    ----------
    dimension
        Matrix size ``d`` (an int >= 1).
    concentration
        ``eta > 0``; 1 is uniform over correlation matrices, larger values favour the identity.
    sample_method
        ``"onion"`` (the only method implemented).

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.LKJCholesky(3, 2.0)
    ...     d.sample(ppl.random.key(0)).shape, d.event_shape
    ((3, 3), (3, 3))
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dimension, concentration=1.0, sample_method="onion", *,
                 validate_args=None):
        require_int("LKJCholesky", "dimension", dimension, 1, what="the matrix size")
        if sample_method != "onion":
            raise ValueError(
                f"LKJCholesky: sample_method must be 'onion', got {sample_method!r}.")
        self.dimension = dimension
        self.sample_method = sample_method
        self.concentration = as_float(concentration)
        super().__init__(ops.shape(self.concentration), (dimension, dimension),
                         validate_args=validate_args)

    def _row_offsets(self):
        """``i = 1..d-1`` as a float array (the row index of each random row)."""
        return ops.arange(1, self.dimension, dtype=ops.dtype_of(self.concentration))

    def sample(self, key, sample_shape=()):
        d = self.dimension
        shape = tuple(sample_shape) + self.batch_shape
        dtype = ops.dtype_of(self.concentration)
        if d == 1:
            return ops.ones(shape + (1, 1), dtype=dtype)
        k_beta, k_normal = random.split(key, 2)
        i = self._row_offsets()
        eta = ops.expand_dims(self.concentration, -1)
        y = random.beta(k_beta, 0.5 * i, eta + 0.5 * (d - 1 - i), shape + (d - 1,), dtype)
        y = ops.concat([ops.zeros(shape + (1,), dtype=dtype), y], axis=-1)
        z = ops.tril(random.normal(k_normal, shape + (d, d), dtype), k=-1)
        norm = ops.sqrt(ops.sum(z * z, axis=-1, keepdims=True))
        u = z / ops.where(norm > 0, norm, ops.ones_like(norm))
        off = ops.expand_dims(ops.sqrt(y), -1) * u
        return off + ops.diag(ops.sqrt(1.0 - y))

    @validate_sample
    def log_prob(self, value):
        d = self.dimension
        value = as_float(value)
        if d == 1:
            shape = ops.broadcast_shapes(ops.shape(value)[:-2], self.batch_shape)
            return ops.zeros(shape, dtype=ops.dtype_of(value))
        eta = self.concentration
        i = self._row_offsets()
        exponent = (d - 1 - i) + 2.0 * ops.expand_dims(eta - 1.0, -1)
        log_diag = ops.log(ops.diagonal(value, axis1=-2, axis2=-1)[..., 1:])
        return ops.sum(exponent * log_diag, axis=-1) - lkj_log_normalizer(d, eta)
