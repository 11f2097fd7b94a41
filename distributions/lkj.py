"""The LKJ distribution over correlation matrices (NumPyro's ``LKJ``), drawn through the
Cholesky factors of :class:`~ppl.distributions.multivariate.LKJCholesky`.

>>> import ppl
>>> from ppl.distributions.lkj import LKJ
>>> with ppl.use_backend("numpy", dtype="float64"):
...     round(float(LKJ(2, 1.0).log_prob(ppl.ops.eye(2))), 6)     # uniform r on (-1, 1)
-0.693147
"""

from __future__ import annotations

from ppl import ops
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.matrix_transforms import cholesky_to_corr
from ppl.distributions.multivariate import LKJCholesky, lkj_log_normalizer
from ppl.distributions.util import as_float, mask_outside, require_int, restrict
from ppl.distributions.validation import validate_sample

__all__ = ["LKJ"]

#: the draws' methods that LKJCholesky implements (NumPyro also has "cvine")
_SAMPLE_METHODS = ("onion",)


class LKJ(Distribution):
    """LKJ distribution over ``d x d`` correlation matrices ``C``, with density
    ``det(C)^(eta - 1) / Z(d, eta)`` with respect to Lebesgue measure on the ``d(d-1)/2``
    correlations above the diagonal (Lewandowski, Kurowicka and Joe 2009, "Generating random
    correlation matrices based on vines and extended onion method", J. Multivariate Anal. 100;
    ``log Z`` is written out in
    :func:`~ppl.distributions.multivariate.lkj_log_normalizer`).

    Each correlation ``r = C_ij`` has the marginal ``(r + 1) / 2 ~ Beta(b, b)`` with
    ``b = eta - 1 + d/2``: mean 0 and variance ``1 / (2 eta - 1 + d)``. Draws are ``L L^T`` for
    draws ``L`` of :class:`~ppl.distributions.multivariate.LKJCholesky`, made exactly symmetric
    with an exact unit diagonal. ``log_prob`` is ``-inf`` where the value is not positive
    definite (its Cholesky factor fails).

    Parameters
    ----------
    dimension
        Matrix size ``d`` (an int >= 2).
    concentration
        ``eta > 0`` (batch shape = its shape); 1 is uniform over correlation matrices, larger
        values favour the identity, values below 1 favour strong correlations.
    sample_method
        ``"onion"`` (the method LKJCholesky implements; NumPyro's ``"cvine"`` is not available).

    >>> import ppl
    >>> from ppl.distributions.lkj import LKJ
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = LKJ(3, ppl.ops.asarray([1.0, 4.0]))
    ...     c = d.sample(ppl.random.key(0), (5,))
    ...     c.shape, d.batch_shape, d.event_shape, bool((c == c.swapaxes(-1, -2)).all())
    ((5, 2, 3, 3), (2,), (3, 3), True)
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_matrix

    def __init__(self, dimension, concentration=1.0, sample_method="onion", *,
                 validate_args=None):
        require_int("LKJ", "dimension", dimension, 2, what="the matrix size")
        if sample_method not in _SAMPLE_METHODS:
            raise ValueError(
                f"LKJ: sample_method must be one of {_SAMPLE_METHODS} (the methods "
                f"LKJCholesky implements; NumPyro's 'cvine' is not available in ppl), got "
                f"{sample_method!r}. Use sample_method='onion': the draws have the same "
                "distribution.")
        self.dimension = dimension
        self.sample_method = sample_method
        self.concentration = as_float(concentration)
        super().__init__(ops.shape(self.concentration), (dimension, dimension),
                         validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        factors = LKJCholesky(self.dimension, self.concentration, self.sample_method,
                              validate_args=False)
        return cholesky_to_corr(factors.sample(key, sample_shape))

    @validate_sample
    def log_prob(self, value):
        value = as_float(value)
        d = self.dimension
        if tuple(ops.shape(value)[-2:]) != (d, d):
            raise ValueError(
                f"LKJ.log_prob: the value must be a batch of {d} x {d} correlation matrices "
                f"(shape (..., {d}, {d})), got shape {tuple(ops.shape(value))}.")
        diag = ops.diagonal(ops.cholesky(value), axis1=-2, axis2=-1)
        log_det = 2.0 * ops.sum(ops.log(diag), axis=-1)
        inside = ops.isfinite(log_det)
        log_det = restrict(inside, log_det, 0.0)
        eta = self.concentration
        lp = (eta - 1.0) * log_det - lkj_log_normalizer(d, eta)
        return mask_outside(inside, lp)

    @property
    def mean(self):
        """The identity (every correlation has mean 0), broadcast to the batch shape."""
        eye = ops.eye(self.dimension, dtype=ops.dtype_of(self.concentration))
        return ops.broadcast_to(eye, self.batch_shape + self.event_shape)

    @property
    def variance(self):
        """``1 / (2 eta - 1 + d)`` off the diagonal, 0 on it."""
        d = self.dimension
        eye = ops.eye(d, dtype=ops.dtype_of(self.concentration))
        eta = ops.expand_dims(ops.expand_dims(self.concentration, -1), -1)
        return (1.0 - eye) / (2.0 * eta - 1.0 + d)
