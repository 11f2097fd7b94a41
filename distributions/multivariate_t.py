"""The multivariate Student's t distribution, with NumPyro's name and parameters
(``MultivariateStudentT(df, loc, scale_tril)``).

A draw is ``loc + L z sqrt(df / w)`` with ``z`` standard normal and ``w ~ Chi2(df)`` shared by the
whole vector (Kotz and Nadarajah 2004, "Multivariate t Distributions and Their Applications",
Cambridge University Press, ch. 1). ``w`` comes from the backend's gamma sampler, which is
differentiable in its shape on every backend, so draws are reparameterized in ``df`` as well as
in ``loc`` and ``scale_tril`` (as Dirichlet's are in its concentrations).

>>> import ppl
>>> import ppl.distributions.multivariate_t as mvt
>>> with ppl.use_backend("numpy", dtype="float64"):
...     d = mvt.MultivariateStudentT(4.0, ppl.ops.zeros(2), scale_tril=ppl.ops.eye(2))
...     round(float(d.log_prob(ppl.ops.zeros(2))), 6), d.event_shape
(-1.837877, (2,))
"""

from __future__ import annotations

import math

import numpy as np

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.multivariate import (
    half_log_det,
    inverse_from_cholesky,
    mahalanobis_sq,
    scale_matrix,
)
from ppl.distributions.util import LOG_PI, as_float, finfo, lgamma_difference
from ppl.distributions.validation import require_square_matrix, set_event_loc, validate_sample

__all__ = ["MultivariateStudentT"]


class MultivariateStudentT(Distribution):
    """Multivariate Student's t distribution with ``df`` degrees of freedom, location ``loc``
    and scale matrix ``Sigma = L L^T`` given by its lower Cholesky factor ``scale_tril``.

    The density of ``x`` in ``R^n`` is

    ``Gamma((df + n) / 2) / (Gamma(df / 2) (df pi)^(n/2) det(L))
    (1 + |L^{-1} (x - loc)|^2 / df)^(-(df + n) / 2)``

    (Kotz and Nadarajah 2004, "Multivariate t Distributions and Their Applications", eq. 1.1),
    evaluated through a triangular solve, its ``log Gamma`` ratio by
    :func:`~ppl.distributions.util.lgamma_difference` (accurate for large ``df``). The mean is
    ``loc`` for ``df > 1`` and the covariance ``df / (df - 2) Sigma`` for ``df > 2``.

    Parameters
    ----------
    df
        Degrees of freedom (positive), shape ``batch_shape``.
    loc
        Location, shape ``batch_shape + (n,)`` (a scalar broadcasts to the event size).
    scale_tril
        Lower Cholesky factor ``L`` of the scale matrix, shape ``batch_shape + (n, n)``.
        Required (it fixes ``n``).
    validate_args
        Check the parameters and ``log_prob`` values (see
        :func:`~ppl.distributions.validation.enable_validation`).

    Notes
    -----
    As in NumPyro, :attr:`covariance_matrix` is the scale matrix ``L L^T``, not the covariance
    of the distribution (which is ``df / (df - 2)`` times it), and :attr:`precision_matrix` its
    inverse. :attr:`mean` is NaN for ``df <= 1`` (NumPyro gives inf there); :attr:`variance`
    is inf for ``1 < df <= 2`` and NaN for ``df <= 1``, as NumPyro's.

    Examples
    --------
    >>> import ppl
    >>> from ppl.distributions.multivariate_t import MultivariateStudentT
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     l = ppl.ops.asarray([[1.0, 0.0], [0.5, 2.0]])
    ...     d = MultivariateStudentT(5.0, ppl.ops.asarray([1.0, -1.0]), scale_tril=l)
    ...     x = d.sample(ppl.random.key(0), (4,))
    ...     x.shape, d.log_prob(x).shape, [round(float(v), 4) for v in d.variance]
    ((4, 2), (4,), [1.6667, 7.0833])
    """

    arg_constraints = {"df": constraints.positive,
                       "loc": constraints.real_vector,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    reparametrized_params = ["df", "loc", "scale_tril"]

    def __init__(self, df, loc=0.0, scale_tril=None, *, validate_args=None):
        if scale_tril is None:
            raise ValueError(
                "MultivariateStudentT: scale_tril is required (the lower Cholesky factor of the "
                "scale matrix, shape batch_shape + (n, n)); from a scale matrix S pass "
                "scale_tril=ppl.ops.cholesky(S).")
        scale_tril = as_float(scale_tril)
        n = require_square_matrix(self, "scale_tril", scale_tril)
        self.df = as_float(df)
        self.scale_tril = scale_tril
        batch = set_event_loc(self, loc, n, f"scale_tril is {n} x {n}")
        self.df = ops.broadcast_to(self.df, batch)
        super().__init__(batch, (n,), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        k_normal, k_chi2 = random.split_keys(key, 2)
        dtype = ops.dtype_of(self.loc)
        batch = tuple(sample_shape) + self.batch_shape
        z = random.normal(k_normal, batch + self.event_shape, dtype=dtype)
        # w / df with w ~ Chi2(df) = 2 Gamma(df / 2), so sqrt(df / w) = sqrt(df / 2 / g)
        # clamped at the smallest normal number: for small df a float32 draw underflows to 0
        g = ops.maximum(random.gamma(k_chi2, 0.5 * self.df, batch, dtype), float(finfo(z).tiny))
        y = z * ops.expand_dims(ops.sqrt(0.5 * self.df / g), -1)
        return self.loc + ops.matmul(self.scale_tril, ops.expand_dims(y, -1))[..., 0]

    @validate_sample
    def log_prob(self, value):
        n = self.event_shape[0]
        df = self.df
        m = mahalanobis_sq(self.scale_tril, as_float(value) - self.loc)
        log_norm = (lgamma_difference(0.5 * df, 0.5 * n) - 0.5 * n * (ops.log(df) + LOG_PI)
                    - half_log_det(self.scale_tril))
        return log_norm - 0.5 * (df + n) * ops.log1p(m / df)

    @property
    def covariance_matrix(self):
        """The scale matrix ``L L^T`` (NumPyro's meaning; the covariance of the distribution
        is ``df / (df - 2)`` times it for ``df > 2``)."""
        return scale_matrix(self.scale_tril)

    @property
    def precision_matrix(self):
        """``(L L^T)^{-1}``, the inverse of :attr:`covariance_matrix`."""
        return inverse_from_cholesky(self.scale_tril)

    @property
    def mean(self):
        df = ops.expand_dims(self.df, -1)
        return ops.where(df > 1.0, self.loc, ops.full_like(self.loc, np.nan))

    @property
    def variance(self):
        df = ops.expand_dims(self.df, -1)
        l = self.scale_tril
        diag = ops.broadcast_to(ops.sum(l * l, axis=-1), self.batch_shape + self.event_shape)
        safe = ops.where(df > 2.0, df, ops.full_like(df, 3.0))
        var = diag * (safe / (safe - 2.0))
        return ops.where(df > 2.0, var, ops.where(df > 1.0, ops.full_like(var, math.inf),
                                                  ops.full_like(var, np.nan)))
