"""Transforms onto vector-valued supports: reals onto ordered vectors and onto the simplex
(Stan Reference Manual, "Constraint transforms"), the simplex onto ordered cut points
(Betancourt's induced-Dirichlet prior for ordinal regression), and onto arrays whose entries
sum to zero along their rightmost axes (PyMC's and NumPyro's ``ZeroSumTransform``).

>>> import ppl
>>> from ppl.distributions.transforms import StickBreakingTransform
>>> with ppl.use_backend("numpy", dtype="float64"):
...     [round(float(p), 6) for p in StickBreakingTransform()(ppl.ops.zeros(2))]
[0.333333, 0.333333, 0.333333]
"""

from __future__ import annotations

import math

import numpy as np

from ppl import ops
from ppl.distributions import constraints
from ppl.distributions.transform import Transform
from ppl.distributions.util import finfo, require_int

__all__ = ["OrderedTransform", "SimplexToOrderedTransform", "StickBreakingTransform",
           "ZeroSumTransform"]


class OrderedTransform(Transform):
    """``y_0 = x_0``, ``y_k = y_{k-1} + exp(x_k)``: reals onto increasing vectors (Stan)."""

    domain = constraints.real_vector
    codomain = constraints.ordered_vector

    def __call__(self, x):
        return ops.cumsum(ops.concat([x[..., :1], ops.exp(x[..., 1:])], axis=-1), axis=-1)

    def _inverse(self, y):
        gaps = ops.maximum(y[..., 1:] - y[..., :-1], float(finfo(y).tiny))
        return ops.concat([y[..., :1], ops.log(gaps)], axis=-1)

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        return ops.sum(x[..., 1:], axis=-1)


class StickBreakingTransform(Transform):
    """Reals ``(..., K - 1)`` onto the simplex ``(..., K)`` by stick-breaking (Stan's
    parametrization: ``x = 0`` maps to the uniform simplex). Computed in log space."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    @staticmethod
    def _offset(n, like):
        return ops.asarray(np.log(np.arange(n, 0, -1, dtype=float)), dtype=ops.dtype_of(like))

    def _parts(self, x):
        xs = x - self._offset(ops.shape(x)[-1], x)
        log_z, log_1mz = -ops.softplus(-xs), -ops.softplus(xs)
        cum = ops.cumsum(log_1mz, axis=-1)
        return log_z, log_1mz, cum - log_1mz, cum

    def __call__(self, x):
        log_z, _, log_rem, cum = self._parts(x)
        return ops.exp(ops.concat([log_z + log_rem, cum[..., -1:]], axis=-1))

    def _inverse(self, y):
        tiny = float(finfo(y).tiny)
        tail = ops.flip(ops.cumsum(ops.flip(y, axis=-1), axis=-1), axis=-1)[..., 1:]
        y_head = y[..., :-1]
        return (ops.log(ops.maximum(y_head, tiny)) - ops.log(ops.maximum(tail, tiny))
                + self._offset(ops.shape(y)[-1] - 1, y))

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        log_z, log_1mz, log_rem, _ = self._parts(x)
        return ops.sum(log_z + log_1mz + log_rem, axis=-1)

    def forward_shape(self, shape):
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class SimplexToOrderedTransform(Transform):
    """Category probabilities ``p`` (a simplex of ``K`` entries) onto ``K - 1`` increasing cut
    points ``c_k = anchor_point + logit(p_0 + ... + p_k)``: under an ordered-logistic model
    whose latent score is ``anchor_point``, ``p`` are the probabilities of the categories.

    A Dirichlet on ``p`` so becomes a prior on the cut points that is weakly informative about
    the categories themselves (Betancourt 2019, "Ordinal Regression", sec. 2.2, the "induced
    Dirichlet" prior), as NumPyro's transform of the same name::

        dist.TransformedDistribution(dist.Dirichlet(np.ones(K)),
                                     SimplexToOrderedTransform(0.0))

    ``anchor_point`` is a number or an array broadcasting with the batch shape. The free
    coordinates of ``p`` are its first ``K - 1`` entries; their partial sums ``s`` have a
    Jacobian of determinant 1, so ``log|det J| = -sum_k log(s_k (1 - s_k))``, computed from the
    cut points as ``-sum_k (log sigmoid(z_k) + log sigmoid(-z_k))``, ``z = c - anchor_point``.

    >>> import ppl
    >>> from ppl.distributions.transforms import SimplexToOrderedTransform
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     c = SimplexToOrderedTransform()(ppl.ops.asarray([0.2, 0.3, 0.5]))
    ...     [round(float(v), 6) for v in c]
    [-1.386294, 0.0]
    """

    domain = constraints.simplex
    codomain = constraints.ordered_vector

    def __init__(self, anchor_point=0.0):
        self.anchor_point = anchor_point

    def _anchor(self):
        """The anchor point against the cut points' axis (a batch of anchors per vector)."""
        a = self.anchor_point
        return ops.expand_dims(a, -1) if ops.ndim(a) > 0 else a

    def __call__(self, x):
        s = ops.cumsum(x[..., :-1], axis=-1)
        return ops.log(s) - ops.log1p(-s) + self._anchor()

    def _inverse(self, y):
        s = ops.sigmoid(y - self._anchor())
        return ops.concat([s[..., :1], s[..., 1:] - s[..., :-1], 1.0 - s[..., -1:]], axis=-1)

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        z = y - self._anchor()
        return ops.sum(ops.softplus(-z) + ops.softplus(z), axis=-1)

    def forward_shape(self, shape):
        return tuple(shape[:-1]) + (shape[-1] - 1,)

    def inverse_shape(self, shape):
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def __repr__(self):
        return f"SimplexToOrderedTransform(anchor_point={self.anchor_point!r})"


def _index(axis: int, part: slice) -> tuple:
    """The index selecting ``part`` of the negative ``axis`` (all of every later axis)."""
    return (Ellipsis, part) + (slice(None),) * (-1 - axis)


class ZeroSumTransform(Transform):
    r"""Reals of shape ``(..., N_1 - 1, ..., N_n - 1)`` onto arrays of shape
    ``(..., N_1, ..., N_n)`` whose entries sum to zero along each of their ``n`` rightmost
    axes, isometrically (PyMC's and NumPyro's ``ZeroSumTransform``).

    Along one axis of size ``N`` the map is ``x = H (y, 0)``, with ``H = I - 2 v v^T / v^T v``
    the Householder reflection for ``v = e_N + 1 / sqrt(N)``, which sends ``e_N`` to
    ``-1 / sqrt(N)``. The first ``N - 1`` columns of ``H`` are therefore an orthonormal basis
    ``B`` of the vectors summing to zero, and

    .. math:: x_i = y_i - \frac{s}{N + \sqrt N} \; (i < N), \qquad
              x_N = -\frac{s}{\sqrt N}, \qquad s = \textstyle\sum_i y_i.

    With ``n`` axes the basis is the Kronecker product of the per-axis ones. The map is an
    isometry onto its image, so ``log_abs_det_jacobian`` is 0 (the Jacobian with respect to
    Lebesgue measure on the zero-sum subspace). The inverse is ``B^T x`` along each axis, the
    coordinates of the orthogonal projection of ``x`` onto the subspace (exact on it).

    Parameters
    ----------
    transform_ndims
        How many rightmost axes sum to zero (an int >= 1).

    References
    ----------
    Householder, A. S. (1958). Unitary triangularization of a nonsymmetric matrix. J. ACM 5,
    339-342. PyMC's ``ZeroSumNormal`` (A. Seyboldt); NumPyro's ``ZeroSumTransform``.

    >>> import ppl
    >>> from ppl.distributions.transforms import ZeroSumTransform
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     x = ZeroSumTransform(1)(ppl.ops.asarray([1.0, 2.0]))
    ...     sums_to_zero = abs(float(ppl.ops.sum(x))) < 1e-12
    ...     [round(float(v), 6) for v in x], sums_to_zero, round(float(ppl.ops.sum(x * x)), 6)
    ([0.366025, 1.366025, -1.732051], True, 5.0)
    """

    def __init__(self, transform_ndims: int = 1):
        require_int("ZeroSumTransform", "transform_ndims", transform_ndims, 1,
                    what="how many rightmost axes sum to zero")
        self.transform_ndims = transform_ndims

    @property
    def domain(self):
        return constraints.independent(constraints.real, self.transform_ndims)

    @property
    def codomain(self):
        return constraints.zero_sum(self.transform_ndims)

    def _axes(self):
        return range(-self.transform_ndims, 0)

    def __call__(self, x):
        for axis in self._axes():
            n = ops.shape(x)[axis] + 1
            s = ops.sum(x, axis=axis, keepdims=True)
            x = ops.concat([x - s / (n + math.sqrt(n)), -s / math.sqrt(n)], axis=axis)
        return x

    def _inverse(self, y):
        for axis in self._axes():
            root_n = math.sqrt(ops.shape(y)[axis])
            s = ops.sum(y, axis=axis, keepdims=True)
            last = y[_index(axis, slice(-1, None))]
            y = y[_index(axis, slice(None, -1))] - (last + s / root_n) / (root_n + 1.0)
        return y

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        return ops.zeros_like(ops.sum(x, axis=tuple(self._axes())))

    def forward_shape(self, shape):
        self._check_rank(shape)
        n = self.transform_ndims
        return tuple(shape[:-n]) + tuple(s + 1 for s in shape[-n:])

    def inverse_shape(self, shape):
        self._check_rank(shape)
        n = self.transform_ndims
        return tuple(shape[:-n]) + tuple(s - 1 for s in shape[-n:])

    def _check_rank(self, shape):
        if len(shape) < self.transform_ndims:
            raise ValueError(
                f"ZeroSumTransform: transform_ndims={self.transform_ndims} needs shapes with at "
                f"least {self.transform_ndims} dims, got {tuple(shape)}.")

    def __eq__(self, other):
        return (isinstance(other, ZeroSumTransform)
                and other.transform_ndims == self.transform_ndims)

    def __hash__(self):
        return hash((ZeroSumTransform, self.transform_ndims))

    def __repr__(self):
        return f"ZeroSumTransform(transform_ndims={self.transform_ndims})"
