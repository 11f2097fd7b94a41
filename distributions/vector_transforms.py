"""Vector transforms (event dim 1): reals onto ordered vectors and onto the simplex
(Stan Reference Manual, "Constraint transforms").

>>> import ppl
>>> from ppl.distributions.transforms import StickBreakingTransform
>>> with ppl.use_backend("numpy", dtype="float64"):
...     [round(float(p), 6) for p in StickBreakingTransform()(ppl.ops.zeros(2))]
[0.333333, 0.333333, 0.333333]
"""

from __future__ import annotations

import numpy as np

from ppl import ops
from ppl.distributions import constraints
from ppl.distributions.transform import Transform
from ppl.distributions.util import finfo

__all__ = ["OrderedTransform", "StickBreakingTransform"]


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
