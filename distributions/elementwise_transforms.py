"""Elementwise transforms: each output entry depends on one input entry (``exp``, ``softplus``,
``sigmoid``, affine maps, and :class:`IntervalTransform` for bounds with infinite entries), so the
log-Jacobian is elementwise too.

>>> import ppl
>>> from ppl.distributions.transforms import SigmoidTransform
>>> with ppl.use_backend("numpy", dtype="float64"):
...     float(SigmoidTransform()(ppl.ops.asarray(0.0)))
0.5
"""

from __future__ import annotations

import math

from ppl import ops
from ppl.distributions import constraints
from ppl.distributions.transform import Transform
from ppl.distributions.util import as_float, finfo, restrict, sum_rightmost

__all__ = ["AffineTransform", "ExpTransform", "IntervalTransform", "SigmoidTransform",
           "SoftplusTransform"]


class ExpTransform(Transform):
    """``y = exp(x)``: reals onto the positive half-line, kept within ``[tiny, max]`` of the
    float dtype so that ``y`` stays positive and finite (float32 under/overflows near 88)."""

    codomain = constraints.positive

    def __call__(self, x):
        fi = finfo(x)
        # margins keep exp() off the subnormal range (flushed to 0 on some CPUs) and off inf
        lo, hi = math.log(float(fi.tiny)) + 0.01, math.log(float(fi.max)) - 0.01
        return ops.exp(ops.clip(x, lo, hi))

    def _inverse(self, y):
        return ops.log(ops.maximum(y, float(finfo(y).tiny)))

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        return x


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))``: reals onto the positive half-line, linear for large ``x``."""

    codomain = constraints.positive

    def __call__(self, x):
        return ops.softplus(x)

    def _inverse(self, y):
        return y + ops.log(-ops.expm1(-y))

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        return -ops.softplus(-x)


class SigmoidTransform(Transform):
    """``y = 1 / (1 + exp(-x))``, kept inside ``[tiny, 1 - eps]`` so that ``y`` and its
    inverse stay finite in float32; the log-Jacobian is computed from ``x``."""

    codomain = constraints.unit_interval

    def __call__(self, x):
        fi = finfo(x)
        return ops.clip(ops.sigmoid(x), float(fi.tiny), 1.0 - float(fi.eps))

    def _inverse(self, y):
        fi = finfo(y)
        return ops.logit(ops.clip(y, float(fi.tiny), 1.0 - float(fi.eps)))

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        return -ops.softplus(x) - ops.softplus(-x)


class AffineTransform(Transform):
    """``y = loc + scale * x``; ``domain`` sets which constraint the input lives in.

    With a positive ``scale`` (or a negative Python number) the codomain is derived from the
    domain: ``positive -> greater_than(loc)`` (``less_than`` for negative scale),
    ``unit_interval -> interval(loc, loc + scale)``.
    """

    def __init__(self, loc, scale, *, domain=constraints.real):
        self.loc, self.scale = loc, scale
        self.domain = domain

    @property
    def codomain(self):
        d = self.domain
        negative = isinstance(self.scale, (int, float)) and self.scale < 0
        if isinstance(d, constraints.interval):
            lo = self.loc + self.scale * d.lower_bound
            hi = self.loc + self.scale * d.upper_bound
            return constraints.interval(hi, lo) if negative else constraints.interval(lo, hi)
        if isinstance(d, constraints.greater_than):
            b = self.loc + self.scale * d.lower_bound
            return constraints.less_than(b) if negative else constraints.greater_than(b)
        if isinstance(d, constraints.less_than):
            b = self.loc + self.scale * d.upper_bound
            return constraints.greater_than(b) if negative else constraints.less_than(b)
        if isinstance(d, (type(constraints.real), constraints.independent)):
            return d
        raise NotImplementedError(f"AffineTransform: no codomain rule for domain {d!r}.")

    def __call__(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        ladj = ops.broadcast_to(ops.log(ops.abs(ops.asarray(self.scale))), ops.shape(x))
        return sum_rightmost(ladj, self.domain.event_dim)

    def forward_shape(self, shape):
        return tuple(ops.broadcast_shapes(tuple(shape), ops.shape(self.loc),
                                          ops.shape(self.scale)))

    def inverse_shape(self, shape):
        return self.forward_shape(shape)

    def __repr__(self):
        return f"AffineTransform(domain={self.domain!r})"


class IntervalTransform(Transform):
    """Reals onto ``[low, high]`` entry by entry, where an infinite entry of a bound leaves that
    side open: the map ``biject_to`` uses for bounds with infinite entries.

    Each entry takes the map of its kind of bounds: ``low + (high - low) * sigmoid(x)`` when
    both are finite, ``low + exp(x)`` when only ``low`` is, ``high - exp(x)`` when only
    ``high`` is, and ``x`` when neither is (the maps of ``interval``, ``greater_than``,
    ``less_than`` and ``real``, with the same clipping). This is how Stan treats infinite
    bounds of its lower/upper-bounded transform (Stan Reference Manual, "Constraint
    transforms", "Lower and upper bounded scalar"). Every branch runs on safe stand-ins for
    the bounds it does not use (finite numbers) before ``where`` picks one, so no branch puts
    an ``inf`` or a ``nan`` into the values or the gradients. Where both bounds are finite the
    values equal those of ``ComposeTransform([SigmoidTransform(), AffineTransform(low,
    high - low)])``.

    Parameters
    ----------
    low, high
        Bounds that broadcast together and with the input: arrays (``-inf`` entries of
        ``low`` and ``+inf`` entries of ``high`` mark open sides) or values of other latent
        variables. An entry that is not finite counts as an open side.

    Examples
    --------
    >>> import numpy as np
    >>> import ppl
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     t = IntervalTransform(np.array([-np.inf, 0.0, -np.inf, 1.0]),
    ...                           np.array([1.0, np.inf, np.inf, 3.0]))
    ...     ppl.ops.to_numpy(t(ppl.ops.zeros(4))).tolist()
    [0.0, 1.0, 0.0, 2.0]
    """

    def __init__(self, low, high):
        self.low, self.high = low, high

    @property
    def codomain(self):
        return constraints.ExtendedInterval(self.low, self.high)

    def _sides(self):
        """``(both, lower, upper, lo, hi, lo1, hi1)``: masks of entries with two finite bounds
        and with a finite lower (upper) bound; the bounds where both are finite (``0``, ``1``
        elsewhere), and each bound where it is finite (``0`` elsewhere)."""
        lo, hi = as_float(self.low), as_float(self.high)
        lower, upper = ops.isfinite(lo), ops.isfinite(hi)
        both = ops.logical_and(lower, upper)
        return (both, lower, upper, restrict(both, lo, 0.0), restrict(both, hi, 1.0),
                restrict(lower, lo, 0.0), restrict(upper, hi, 0.0))

    def __call__(self, x):
        both, lower, upper, lo, hi, lo1, hi1 = self._sides()
        y_both = lo + (hi - lo) * SigmoidTransform()(x)
        e = ExpTransform()(x)
        return ops.where(both, y_both, ops.where(lower, lo1 + e, ops.where(upper, hi1 - e, x)))

    def _inverse(self, y):
        both, lower, upper, lo, hi, lo1, hi1 = self._sides()
        x_both = SigmoidTransform()._inverse((y - lo) / (hi - lo))
        x_lower = ExpTransform()._inverse(y - lo1)
        x_upper = ExpTransform()._inverse(hi1 - y)
        return ops.where(both, x_both, ops.where(lower, x_lower, ops.where(upper, x_upper, y)))

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        both, lower, upper, lo, hi, _, _ = self._sides()
        ld_both = SigmoidTransform().log_abs_det_jacobian(x, None) + ops.log(ops.abs(hi - lo))
        one_side = ops.logical_or(lower, upper)
        return ops.where(both, ld_both, ops.where(one_side, x, ops.zeros_like(x)))

    def forward_shape(self, shape):
        return tuple(ops.broadcast_shapes(tuple(shape), ops.shape(self.low),
                                          ops.shape(self.high)))

    def inverse_shape(self, shape):
        return self.forward_shape(shape)
