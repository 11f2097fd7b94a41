"""The Wishart distribution over positive-definite matrices and the distribution of the lower
Cholesky factors of its draws (NumPyro's ``Wishart`` and ``WishartCholesky``), with NumPyro's
parameters: degrees of freedom ``concentration`` and one of ``scale_matrix``, ``rate_matrix``
(its inverse) or ``scale_tril`` (its lower Cholesky factor).

Draws use the Bartlett decomposition (Bartlett 1933, "On the theory of statistical regression",
Proc. R. Soc. Edinburgh 53; as an algorithm: Smith and Hocking 1972, "Algorithm AS 53: Wishart
variate generator", J. R. Stat. Soc. C 21): with ``S = A A^T`` and a lower-triangular ``B``
whose diagonal entries are ``B_ii = sqrt(c_i)``, ``c_i ~ Chi2(n - i)`` (rows ``i = 0..p-1``),
and whose entries below the diagonal are standard normal, all independent, ``L = A B`` is the
lower Cholesky factor of a ``Wishart(n, S)`` matrix ``W = L L^T``. The chi-square draws come from
the backend's gamma sampler, which is differentiable in its shape on every backend, so draws are
reparameterized in ``concentration`` as well as in the matrices.

>>> import ppl
>>> from ppl.distributions.wishart import Wishart
>>> with ppl.use_backend("numpy", dtype="float64"):
...     d = Wishart(3.0, scale_matrix=ppl.ops.eye(2))
...     round(float(d.log_prob(ppl.ops.eye(2))), 6), d.event_shape
(-3.531024, (2, 2))
"""

from __future__ import annotations

import numpy as np

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.multivariate import (
    factor_of,
    half_log_det,
    inverse_from_cholesky,
    scale_matrix,
)
from ppl.distributions.parametrization import derived_parameter, set_one_of
from ppl.distributions.util import (
    LOG_2,
    LOG_PI,
    as_float,
    describe,
    finfo,
    is_concrete,
    lgamma_difference,
    mask_outside,
)
from ppl.distributions.validation import batch_shape_of, require_square_matrix, validate_sample

__all__ = ["Wishart", "WishartCholesky"]


def multigammaln(a, p: int):
    """``log Gamma_p(a) = p (p - 1) / 4 log(pi) + sum_{j=0}^{p-1} lgamma(a - j / 2)``, the log
    of the multivariate gamma function (``scipy.special.multigammaln``), batched over ``a``."""
    a = ops.expand_dims(as_float(a), -1)
    j = ops.arange(p, dtype=ops.dtype_of(a))
    return ops.sum(ops.gammaln(a - 0.5 * j), axis=-1) + 0.25 * p * (p - 1) * LOG_PI


def multidigamma(a, p: int):
    """``d/da log Gamma_p(a) = sum_{j=0}^{p-1} digamma(a - j / 2)``, batched over ``a``."""
    a = ops.expand_dims(as_float(a), -1)
    j = ops.arange(p, dtype=ops.dtype_of(a))
    return ops.sum(ops.digamma(a - 0.5 * j), axis=-1)


class _WishartFamily(Distribution):
    """Parameters, draws of the Cholesky factor and the density written in that factor, shared
    by :class:`Wishart` and :class:`WishartCholesky`."""

    arg_constraints = {"concentration": constraints.dependent,
                       "scale_matrix": constraints.positive_definite,
                       "rate_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    reparametrized_params = ["concentration", "scale_matrix", "rate_matrix", "scale_tril"]

    def __init__(self, concentration, scale_matrix=None, rate_matrix=None, scale_tril=None, *,
                 validate_args=None):
        name = type(self).__name__
        self._param = set_one_of(self, scale_matrix=scale_matrix, rate_matrix=rate_matrix,
                                 scale_tril=scale_tril)
        matrix = self.__dict__[self._param]
        p = require_square_matrix(self, self._param, matrix)
        self.concentration = as_float(concentration)
        batch = batch_shape_of(self)
        self.concentration = ops.broadcast_to(self.concentration, batch)
        # the given matrix is validated before it is factorized (a non-PD Cholesky fails)
        super().__init__(batch, (p, p), validate_args=validate_args)
        if self._validate_args and is_concrete(self.concentration):
            ok = np.asarray(ops.to_numpy(self.concentration)) > p - 1
            if not np.all(ok):
                raise ValueError(
                    f"{name}: concentration (the degrees of freedom) must be greater than "
                    f"p - 1 = {p - 1} for {p} x {p} matrices, got "
                    f"{describe(self.concentration, ok)}. Pass concentration > {p - 1}.")
        self._scale_tril = factor_of(matrix, {"scale_tril": "tril", "scale_matrix": "matrix",
                                              "rate_matrix": "inverse"}[self._param])

    @derived_parameter
    def scale_tril(self):
        """Lower Cholesky factor ``A`` of the scale matrix (``S = A A^T``)."""
        return self._scale_tril

    @derived_parameter
    def scale_matrix(self):
        """``S = A A^T``."""
        return scale_matrix(self._scale_tril)

    @derived_parameter
    def rate_matrix(self):
        """``S^{-1}``."""
        return inverse_from_cholesky(self._scale_tril)

    def _sample_factor(self, key, sample_shape):
        """Bartlett draws of ``L = A B``, shape ``sample_shape + batch_shape + (p, p)``."""
        p = self.event_shape[0]
        shape = tuple(sample_shape) + self.batch_shape
        dtype = ops.dtype_of(self._scale_tril)
        k_chi2, k_normal = random.split_keys(key, 2)
        df = ops.expand_dims(self.concentration, -1) - ops.arange(p, dtype=dtype)
        # c_i = 2 Gamma((n - i) / 2) ~ Chi2(n - i); clamped at the smallest normal number, as
        # a float32 draw of a small shape can underflow to 0 (a singular draw)
        z = random.normal(k_normal, shape + (p, p), dtype)
        g = ops.maximum(random.gamma(k_chi2, 0.5 * df, shape + (p,), dtype),
                        float(finfo(z).tiny))
        return ops.matmul(self._scale_tril, ops.tril(z, k=-1) + ops.diag(ops.sqrt(2.0 * g)))

    def _log_density_in_factor(self, tril):
        """The Wishart log-density of ``W = L L^T`` with ``L = tril`` (lower, positive diagonal):
        ``(n - p - 1)/2 log|W| - tr(S^{-1} W)/2 - n p/2 log 2 - n/2 log|S| - log Gamma_p(n/2)``,
        with ``log|W| = 2 sum log L_ii`` and ``tr(S^{-1} W) = |A^{-1} L|_F^2``. ``A^{-1}`` is
        solved once per parameter and broadcast over the values by a product (a solve over the
        values' batch costs the numpy backend one LAPACK call per matrix)."""
        p = self.event_shape[0]
        n = self.concentration
        a = self._scale_tril
        eye = ops.broadcast_to(ops.eye(p, dtype=ops.dtype_of(a)), ops.shape(a))
        x = ops.matmul(ops.solve_triangular(a, eye, lower=True), tril)
        trace = ops.sum(ops.sum(x * x, axis=-1), axis=-1)
        return ((n - p - 1.0) * half_log_det(tril) - 0.5 * trace - 0.5 * n * p * LOG_2
                - n * half_log_det(self._scale_tril) - multigammaln(0.5 * n, p))


class WishartCholesky(_WishartFamily):
    """Distribution of the lower Cholesky factor ``L`` of ``W = L L^T ~ Wishart(n, S)``.

    ``log_prob`` is the density of ``L`` with respect to Lebesgue measure on its lower triangle
    (diagonal included): the Wishart density of ``L L^T`` plus the log-Jacobian of
    ``L -> L L^T``, ``p log 2 + sum_{i=1}^{p} (p - i + 1) log L_ii`` (rows 1-indexed; Muirhead
    1982, "Aspects of Multivariate Statistical Theory", Wiley, theorem 2.1.9). Draws are
    ``L = A B`` by the Bartlett decomposition (Bartlett 1933; Smith and Hocking 1972,
    "Algorithm AS 53: Wishart variate generator"; see the module docstring).

    Parameters
    ----------
    concentration
        Degrees of freedom ``n > p - 1``, shape ``batch_shape`` (broadcast with the matrix's
        batch dims). With ``validate_args``, concrete values are checked (``ValueError``);
        otherwise an invalid one gives NaN.
    scale_matrix, rate_matrix, scale_tril
        Exactly one: the scale matrix ``S``, its inverse, or its lower Cholesky factor ``A``,
        shape ``batch_shape + (p, p)``.
    validate_args
        Check ``concentration``, the matrix parameter and ``log_prob`` values (see
        :func:`~ppl.distributions.validation.enable_validation`).

    Notes
    -----
    As NumPyro's, :attr:`mean` and :attr:`variance` are those of ``L``, entrywise:
    ``E[L] = A E[B]`` with ``E[B_ii] = sqrt(2) Gamma((n - i + 1)/2) / Gamma((n - i)/2)``, and
    ``E[L_ij^2] = sum_k A_ik^2 E[B_kj^2]`` with ``E[B_kj^2]`` 1 below the diagonal and
    ``n - j`` on it (0-indexed). ``log_prob`` is ``-inf`` off the support.

    Examples
    --------
    >>> import ppl
    >>> from ppl.distributions.wishart import WishartCholesky
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = WishartCholesky(4.0, scale_tril=ppl.ops.asarray([[1.0, 0.0], [0.5, 2.0]]))
    ...     l = d.sample(ppl.random.key(0), (3,))
    ...     l.shape, d.log_prob(l).shape, bool((l[..., 0, 1] == 0).all())
    ((3, 2, 2), (3,), True)
    """

    support = constraints.lower_cholesky

    def sample(self, key, sample_shape=()):
        return self._sample_factor(key, sample_shape)

    @validate_sample
    def log_prob(self, value):
        value = as_float(value)
        p = self.event_shape[0]
        inside = constraints.lower_cholesky.check(value)
        eye = ops.eye(p, dtype=ops.dtype_of(value))
        tril = ops.where(ops.expand_dims(ops.expand_dims(inside, -1), -1), value, eye)
        powers = ops.arange(p, 0, -1, dtype=ops.dtype_of(value))
        log_diag = ops.log(ops.diagonal(tril, axis1=-2, axis2=-1))
        log_jacobian = p * LOG_2 + ops.sum(powers * log_diag, axis=-1)
        return mask_outside(inside, self._log_density_in_factor(tril) + log_jacobian)

    def _diag_mean(self):
        """``E[B_ii] = E[sqrt(Chi2(n - i))]``, shape ``batch_shape + (p,)``."""
        p = self.event_shape[0]
        k = ops.expand_dims(self.concentration, -1) - ops.arange(
            p, dtype=ops.dtype_of(self.concentration))
        return np.sqrt(2.0) * ops.exp(lgamma_difference(0.5 * k, 0.5)), k

    @property
    def mean(self):
        diag, _ = self._diag_mean()
        return self._scale_tril * ops.expand_dims(diag, -2)

    @property
    def variance(self):
        diag, k = self._diag_mean()
        p = self.event_shape[0]
        below = ops.asarray(np.tril(np.ones((p, p)), -1), dtype=ops.dtype_of(k))
        second = ops.matmul(self._scale_tril ** 2, below + ops.diag(k))
        mean = self._scale_tril * ops.expand_dims(diag, -2)
        return second - mean * mean


class Wishart(_WishartFamily):
    """Wishart distribution over ``p x p`` positive-definite matrices ``W``, with density

    ``|W|^((n - p - 1)/2) exp(-tr(S^{-1} W) / 2) / (2^(n p / 2) |S|^(n/2) Gamma_p(n / 2))``

    (Anderson 2003, "An Introduction to Multivariate Statistical Analysis", 3rd ed., Wiley,
    section 7.2), evaluated through the Cholesky factor of ``W``. ``W`` is the sum of ``n``
    outer products ``x x^T`` of ``x ~ MVN(0, S)`` for integer ``n``; it is the conjugate prior of
    the precision matrix of a multivariate normal. Mean ``n S``, entrywise variance
    ``n (S_ij^2 + S_ii S_jj)``. Draws are ``L L^T`` for Bartlett draws ``L`` of
    :class:`WishartCholesky` (Bartlett 1933; Smith and Hocking 1972, "Algorithm AS 53: Wishart
    variate generator"), made exactly symmetric.

    Parameters
    ----------
    concentration, scale_matrix, rate_matrix, scale_tril, validate_args
        As for :class:`WishartCholesky`.

    Notes
    -----
    ``log_prob`` factorizes the value and so reads its lower triangle (JAX symmetrizes the
    value first); it is ``-inf`` where the value is not positive definite.

    Examples
    --------
    >>> import ppl
    >>> from ppl.distributions.wishart import Wishart
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     s = ppl.ops.asarray([[2.0, 0.5], [0.5, 1.0]])
    ...     d = Wishart(ppl.ops.asarray([3.0, 5.0]), scale_matrix=s)
    ...     w = d.sample(ppl.random.key(0), (4,))
    ...     w.shape, d.log_prob(w).shape, d.mean[1].tolist()
    ((4, 2, 2, 2), (4, 2), [[10.0, 2.5], [2.5, 5.0]])
    """

    support = constraints.positive_definite

    def sample(self, key, sample_shape=()):
        l = self._sample_factor(key, sample_shape)
        w = ops.matmul(l, ops.matrix_transpose(l))
        return 0.5 * (w + ops.matrix_transpose(w))

    @validate_sample
    def log_prob(self, value):
        value = as_float(value)
        p = self.event_shape[0]
        tril = ops.cholesky(value)
        diag = ops.diagonal(tril, axis1=-2, axis2=-1)
        inside = ops.all(ops.logical_and(ops.isfinite(diag), diag > 0), axis=-1)
        eye = ops.eye(p, dtype=ops.dtype_of(value))
        tril = ops.where(ops.expand_dims(ops.expand_dims(inside, -1), -1), tril, eye)
        return mask_outside(inside, self._log_density_in_factor(tril))

    @property
    def mean(self):
        n = ops.expand_dims(ops.expand_dims(self.concentration, -1), -1)
        return n * self.scale_matrix

    @property
    def variance(self):
        s = self.scale_matrix
        diag = ops.diagonal(s, axis1=-2, axis2=-1)
        n = ops.expand_dims(ops.expand_dims(self.concentration, -1), -1)
        return n * (s * s + ops.expand_dims(diag, -1) * ops.expand_dims(diag, -2))

    def entropy(self):
        """``(p + 1) log|A| + p (p + 1)/2 log 2 + log Gamma_p(n/2) - (n - p - 1)/2
        psi_p(n/2) + n p / 2`` (``psi_p`` the multivariate digamma function)."""
        p = self.event_shape[0]
        n = self.concentration
        return ((p + 1.0) * half_log_det(self._scale_tril) + 0.5 * p * (p + 1) * LOG_2
                + multigammaln(0.5 * n, p) - 0.5 * (n - p - 1.0) * multidigamma(0.5 * n, p)
                + 0.5 * n * p)
