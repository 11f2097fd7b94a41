"""Elementwise transforms: each output entry depends on one input entry (``exp``, ``softplus``,
``sigmoid``, affine maps), so the log-Jacobian is elementwise too.

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
from ppl.distributions.util import finfo, sum_rightmost

__all__ = ["AffineTransform", "ExpTransform", "SigmoidTransform", "SoftplusTransform"]


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
