"""The zero-sum normal (NumPyro's and PyMC's ``ZeroSumNormal``): a normal distribution restricted
to arrays whose entries sum to zero along each event axis, the usual prior for the group
effects of a model with an intercept (the effects are then identified without a reference
group). Its unconstraining bijection is
:class:`~ppl.distributions.vector_transforms.ZeroSumTransform`.

>>> import ppl
>>> import ppl.distributions as dist
>>> from ppl.distributions.zero_sum import ZeroSumNormal
>>> with ppl.use_backend("numpy", dtype="float64"):
...     d = ZeroSumNormal(2.0, event_shape=(4,))
...     x = d.sample(ppl.random.key(0))
...     x.shape, abs(float(ppl.ops.sum(x))) < 1e-12, [float(v) for v in d.variance]
((4,), True, [3.0, 3.0, 3.0, 3.0])
"""

from __future__ import annotations

import math
import operator

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.parametrization import set_parameters
from ppl.distributions.util import HALF_LOG_2PI, as_float
from ppl.distributions.validation import validate_sample

__all__ = ["ZeroSumNormal"]


def _event_shape(event_shape) -> tuple:
    """``event_shape`` as a tuple of ints >= 2 (one int is one axis), or a clear error."""
    if isinstance(event_shape, int) and not isinstance(event_shape, bool):
        event_shape = (event_shape,)
    try:
        shape = tuple(operator.index(s) for s in event_shape)
        if any(isinstance(s, bool) for s in event_shape):
            raise TypeError
    except TypeError:
        raise TypeError(
            f"ZeroSumNormal: event_shape must be a tuple of ints (the sizes of the axes that "
            f"sum to zero), got {event_shape!r}; pass e.g. event_shape=(4,).") from None
    if not shape:
        raise ValueError(
            "ZeroSumNormal: event_shape must name at least one axis, got (); pass the sizes of "
            "the axes that sum to zero, e.g. event_shape=(4,).")
    if any(s < 2 for s in shape):
        raise ValueError(
            f"ZeroSumNormal: every size in event_shape must be >= 2 (an axis of size 1 that "
            f"sums to zero holds only 0), got event_shape={shape}; drop the size-1 axes or "
            "make them batch axes.")
    return shape


class ZeroSumNormal(Distribution):
    r"""A normal distribution on the arrays of shape ``event_shape`` whose entries sum to zero
    along each of the ``n = len(event_shape)`` axes.

    Draws are ``z ~ Normal(0, scale)`` iid of shape ``event_shape`` with the mean subtracted
    along each axis in turn: ``x = P z`` with ``P = P_1 (x) ... (x) P_n`` (Kronecker product)
    and ``P_k = I - J / N_k`` the centring matrix of axis ``k``. ``P`` is the orthogonal
    projection onto the zero-sum subspace, of dimension ``d = prod_k (N_k - 1)``, so the
    covariance is ``scale**2 P`` and each entry has variance

    .. math:: \mathrm{Var}(x_i) = \sigma^2 \prod_k P_{k,ii} = \sigma^2 \prod_k (1 - 1/N_k).

    In an orthonormal basis ``B`` of the subspace (``x = B u``) the coordinates ``u`` are iid
    ``Normal(0, scale)``, and since ``|u| = |x|``, ``log_prob`` is the density with respect to
    Lebesgue measure on the subspace (as PyMC and NumPyro define it):

    .. math:: \log p(x) = -\frac{\sum_i x_i^2}{2 \sigma^2} - d \left(\log \sigma
              + \tfrac12 \log 2\pi\right).

    Parameters
    ----------
    scale
        Standard deviation of the normal before the constraint (positive); its shape is the
        batch shape.
    event_shape
        Sizes ``(N_1, ..., N_n)`` of the axes that sum to zero, each >= 2 (one int is one axis).

    References
    ----------
    PyMC's ``ZeroSumNormal`` (A. Seyboldt, 2022), which NumPyro adapts; the isometric
    unconstraining map is :class:`~ppl.distributions.vector_transforms.ZeroSumTransform`.

    >>> import ppl
    >>> from ppl.distributions.zero_sum import ZeroSumNormal
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = ZeroSumNormal(1.0, event_shape=(2,))
    ...     round(float(d.log_prob(ppl.ops.asarray([1.0, -1.0]))), 6), d.support
    (-1.918939, zero_sum(event_dim=1))
    """

    arg_constraints = {"scale": constraints.positive}
    reparametrized_params = ["scale"]

    def __init__(self, scale, event_shape, *, validate_args=None):
        shape = _event_shape(event_shape)
        batch = set_parameters(self, scale=scale)
        super().__init__(batch, shape, validate_args=validate_args)

    @property
    def support(self):
        return constraints.zero_sum(len(self.event_shape))

    def _event_axes(self) -> tuple:
        return tuple(range(-len(self.event_shape), 0))

    def _scale_event(self):
        """``scale`` with a size-1 axis per event axis, broadcasting against values."""
        return ops.reshape(self.scale, self.batch_shape + (1,) * len(self.event_shape))

    def _dof(self) -> int:
        """The dimension ``prod_k (N_k - 1)`` of the zero-sum subspace."""
        return math.prod(n - 1 for n in self.event_shape)

    def sample(self, key, sample_shape=()):
        z = random.normal(key, self.shape(sample_shape), dtype=ops.dtype_of(self.scale))
        x = self._scale_event() * z
        for axis in self._event_axes():
            x = x - ops.mean(x, axis=axis, keepdims=True)
        return x

    @validate_sample
    def log_prob(self, value):
        value = as_float(value)
        sq = ops.sum(value * value, axis=self._event_axes())
        return -0.5 * sq / (self.scale * self.scale) - self._dof() * (
            ops.log(self.scale) + HALF_LOG_2PI)

    @property
    def mean(self):
        return ops.zeros(self.batch_shape + self.event_shape, dtype=ops.dtype_of(self.scale))

    @property
    def variance(self):
        shrink = math.prod(1.0 - 1.0 / n for n in self.event_shape)
        return ops.broadcast_to(self._scale_event() ** 2 * shrink,
                                self.batch_shape + self.event_shape)

    def entropy(self):
        """``d (1/2 + log(2 pi)/2 + log scale)``: that of ``d`` iid normals (the coordinates)."""
        return self._dof() * (0.5 + HALF_LOG_2PI + ops.log(self.scale))
