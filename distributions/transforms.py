"""Bijective transforms between constrained and unconstrained spaces, and ``biject_to``.

A :class:`Transform` maps its ``domain`` onto its ``codomain`` (both constraints) and gives
``log_abs_det_jacobian(x, y)``, the log of the volume change at ``x`` (``y = t(x)``), summed over
the domain's event dims. ``t.inv`` is the inverse transform. Transforms that change the event
shape (stick-breaking: ``K - 1 -> K``; Cholesky factors: ``K(K-1)/2 -> (K, K)``) say so with
``forward_shape`` / ``inverse_shape``.

``biject_to(constraint)`` returns a transform from unconstrained reals onto ``constraint``. It
reads the constraint's bounds when called, so bounds that depend on other latent values
(``interval(0, 1 - a)``) are honoured at their current value.

>>> import ppl
>>> from ppl.distributions import constraints, biject_to
>>> with ppl.use_backend("numpy", dtype="float64"):
...     t = biject_to(constraints.interval(-1.0, 3.0))
...     float(t(ppl.ops.asarray(0.0)))
1.0

References: Stan Reference Manual, "Constraint transforms" (stick-breaking simplex, ordered
vectors, correlation and covariance Cholesky factors); Lewandowski, Kurowicka & Joe (2009) for
the partial-correlation (CPC) parametrization of correlation matrices.
"""

from __future__ import annotations

import math

import numpy as np

from ppl import ops
from ppl.distributions import constraints
from ppl.distributions.util import finfo, sum_rightmost

__all__ = [
    "AffineTransform",
    "CholeskyTransform",
    "ComposeTransform",
    "CorrCholeskyTransform",
    "ExpTransform",
    "IdentityTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "OrderedTransform",
    "SigmoidTransform",
    "SoftplusTransform",
    "StickBreakingTransform",
    "Transform",
    "biject_to",
]

_LOG_2 = math.log(2.0)


class Transform:
    """Base class: a bijection ``domain -> codomain`` with a log-det-Jacobian."""

    domain: constraints.Constraint = constraints.real
    codomain: constraints.Constraint = constraints.real

    @property
    def event_dim(self) -> int:
        """Event dims of the codomain (Pyro's older single ``event_dim``)."""
        return self.codomain.event_dim

    @property
    def inv(self) -> Transform:
        return _InverseTransform(self)

    def __call__(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        """``log |det dy/dx|`` with shape ``x.shape[:ndim - domain.event_dim]``."""
        raise NotImplementedError

    def forward_shape(self, shape) -> tuple:
        return tuple(shape)

    def inverse_shape(self, shape) -> tuple:
        return tuple(shape)

    def __repr__(self):
        return f"{type(self).__name__}()"


class _InverseTransform(Transform):
    def __init__(self, transform: Transform):
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def inv(self):
        return self._inv

    def __call__(self, x):
        return self._inv._inverse(x)

    def _inverse(self, y):
        return self._inv(y)

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)

    def __repr__(self):
        return f"{self._inv!r}.inv"


class IdentityTransform(Transform):
    def __call__(self, x):
        return x

    def _inverse(self, y):
        return y

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        return ops.zeros_like(x)


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
        if isinstance(d, constraints._Interval):
            lo = self.loc + self.scale * d.lower_bound
            hi = self.loc + self.scale * d.upper_bound
            return constraints.interval(hi, lo) if negative else constraints.interval(lo, hi)
        if isinstance(d, constraints._GreaterThan):
            b = self.loc + self.scale * d.lower_bound
            return constraints.less_than(b) if negative else constraints.greater_than(b)
        if isinstance(d, constraints._LessThan):
            b = self.loc + self.scale * d.upper_bound
            return constraints.greater_than(b) if negative else constraints.less_than(b)
        if isinstance(d, (constraints._Real, constraints._Independent)):
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


class ComposeTransform(Transform):
    """Apply ``parts`` in order: ``parts[-1](... parts[0](x))``."""

    def __init__(self, parts):
        self.parts = list(parts)
        if not self.parts:
            raise ValueError("ComposeTransform: parts must hold at least one transform.")

    @property
    def domain(self):
        dim = self.parts[-1].codomain.event_dim
        for p in reversed(self.parts):
            dim = max(dim + p.domain.event_dim - p.codomain.event_dim, p.domain.event_dim)
        d = self.parts[0].domain
        return d if dim == d.event_dim else constraints.independent(d, dim - d.event_dim)

    @property
    def codomain(self):
        dim = self.parts[0].domain.event_dim
        for p in self.parts:
            dim = max(dim + p.codomain.event_dim - p.domain.event_dim, p.codomain.event_dim)
        c = self.parts[-1].codomain
        return c if dim == c.event_dim else constraints.independent(c, dim - c.event_dim)

    def __call__(self, x):
        for p in self.parts:
            x = p(x)
        return x

    def _inverse(self, y):
        for p in reversed(self.parts):
            y = p._inverse(y)
        return y

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        total = 0.0
        dim = self.domain.event_dim
        for p in self.parts:
            x_next = p(x)
            term = p.log_abs_det_jacobian(x, x_next)
            total = total + sum_rightmost(term, dim - p.domain.event_dim)
            dim += p.codomain.event_dim - p.domain.event_dim
            x = x_next
        return total

    def forward_shape(self, shape):
        for p in self.parts:
            shape = p.forward_shape(shape)
        return tuple(shape)

    def inverse_shape(self, shape):
        for p in reversed(self.parts):
            shape = p.inverse_shape(shape)
        return tuple(shape)

    def __repr__(self):
        return f"ComposeTransform({self.parts!r})"


class IndependentTransform(Transform):
    """``base_transform`` with its ``reinterpreted_batch_ndims`` rightmost dims as one event
    (the log-Jacobian is summed over them)."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int):
        self.base_transform = base_transform
        self.reinterpreted_batch_ndims = int(reinterpreted_batch_ndims)

    @property
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    def __call__(self, x):
        return self.base_transform(x)

    def _inverse(self, y):
        return self.base_transform._inverse(y)

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                             self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


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


def _matrix_size(m: int, diagonal: bool, name: str) -> int:
    """``K`` such that a ``(K, K)`` lower triangle (with or without diagonal) has ``m`` entries."""
    k = (-1.0 + math.sqrt(1 + 8 * m)) / 2 if diagonal else (1.0 + math.sqrt(1 + 8 * m)) / 2
    k = int(round(k))
    if (k * (k + 1) if diagonal else k * (k - 1)) // 2 != m:
        want = "K(K+1)/2" if diagonal else "K(K-1)/2"
        raise ValueError(f"{name}: the input's last dim {m} is not {want} for any integer K.")
    return k


def _tril_gather(k: int, offset: int):
    """Index array mapping a ``(K*K,)`` flattened matrix to entries of a vector holding the
    ``tril(k=offset)`` entries in row-major order; ``-1`` positions read a zero pad."""
    rows, cols = np.tril_indices(k, offset)
    idx = np.full(k * k, len(rows), dtype=np.int64)
    idx[rows * k + cols] = np.arange(len(rows))
    return idx, rows * k + cols


def _vec_to_tril(vec, k, offset):
    idx, _ = _tril_gather(k, offset)
    pad = ops.concat([vec, ops.zeros_like(vec[..., :1])], axis=-1)
    return ops.reshape(ops.take(pad, idx, axis=-1), ops.shape(vec)[:-1] + (k, k))


def _tril_to_vec(mat, offset):
    k = ops.shape(mat)[-1]
    _, flat = _tril_gather(k, offset)
    return ops.take(ops.reshape(mat, ops.shape(mat)[:-2] + (k * k,)), flat, axis=-1)


class CorrCholeskyTransform(Transform):
    """Reals ``(..., K(K-1)/2)`` onto Cholesky factors of correlation matrices ``(..., K, K)``.

    ``tanh`` gives canonical partial correlations ``z``; row ``i`` of ``L`` is built by
    stick-breaking on squared norms: ``L_ij = z_ij * sqrt(prod_{k<j} (1 - z_ik^2))`` and
    ``L_ii = sqrt(prod_{k<i} (1 - z_ik^2))`` (Lewandowski et al. 2009; Stan manual).
    """

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky

    def _forward(self, x):
        k = _matrix_size(ops.shape(x)[-1], False, "CorrCholeskyTransform")
        lim = 1.0 - float(finfo(x).eps)
        z = _vec_to_tril(ops.clip(ops.tanh(x), -lim, lim), k, -1)
        log1m = ops.log1p(-z * z)
        excl = ops.cumsum(log1m, axis=-1) - log1m
        s = ops.exp(0.5 * excl)
        eye = ops.eye(k, dtype=ops.dtype_of(x))
        return z * s + eye * s, excl, k

    def __call__(self, x):
        return self._forward(x)[0]

    def _inverse(self, y):
        sq = y * y
        excl = ops.cumsum(sq, axis=-1) - sq
        denom = ops.sqrt(ops.maximum(1.0 - excl, float(finfo(y).tiny)))
        lim = 1.0 - float(finfo(y).eps)
        return ops.atanh(ops.clip(_tril_to_vec(y / denom, -1), -lim, lim))

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        _, excl, k = self._forward(x)
        tanh_term = 2.0 * (_LOG_2 - x - ops.softplus(-2.0 * x))
        strict = ops.asarray(np.tril(np.ones((k, k)), -1), dtype=ops.dtype_of(x))
        return ops.sum(tanh_term, axis=-1) + 0.5 * ops.sum(ops.sum(excl * strict, axis=-1),
                                                           axis=-1)

    def forward_shape(self, shape):
        k = _matrix_size(shape[-1], False, "CorrCholeskyTransform")
        return tuple(shape[:-1]) + (k, k)

    def inverse_shape(self, shape):
        k = shape[-1]
        return tuple(shape[:-2]) + (k * (k - 1) // 2,)


class LowerCholeskyTransform(Transform):
    """Reals ``(..., K(K+1)/2)`` onto lower-triangular matrices with positive diagonal: the
    first ``K(K-1)/2`` entries fill the strict lower triangle (row-major), the last ``K`` are
    the log of the diagonal."""

    domain = constraints.real_vector
    codomain = constraints.lower_cholesky

    def __call__(self, x):
        k = _matrix_size(ops.shape(x)[-1], True, "LowerCholeskyTransform")
        m = ops.shape(x)[-1] - k
        return _vec_to_tril(x[..., :m], k, -1) + ops.diag(ops.exp(x[..., m:]))

    def _inverse(self, y):
        diag = ops.log(ops.diagonal(y, axis1=-2, axis2=-1))
        return ops.concat([_tril_to_vec(y, -1), diag], axis=-1)

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        k = _matrix_size(ops.shape(x)[-1], True, "LowerCholeskyTransform")
        return ops.sum(x[..., ops.shape(x)[-1] - k:], axis=-1)

    def forward_shape(self, shape):
        k = _matrix_size(shape[-1], True, "LowerCholeskyTransform")
        return tuple(shape[:-1]) + (k, k)

    def inverse_shape(self, shape):
        k = shape[-1]
        return tuple(shape[:-2]) + (k * (k + 1) // 2,)


class CholeskyTransform(Transform):
    """Positive-definite ``A`` to its lower Cholesky factor ``L``; ``.inv`` is ``L -> L L^T``.

    ``log|det dA/dL| = K log 2 + sum_i (K - i) log L_ii`` (0-based ``i``) on the lower
    triangles, so the forward log-Jacobian is its negative.
    """

    domain = constraints.positive_definite
    codomain = constraints.lower_cholesky

    def __call__(self, x):
        return ops.cholesky(x)

    def _inverse(self, y):
        return ops.matmul(y, ops.matrix_transpose(y))

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        k = ops.shape(y)[-1]
        powers = ops.asarray(np.arange(k, 0, -1, dtype=float), dtype=ops.dtype_of(y))
        log_diag = ops.log(ops.diagonal(y, axis1=-2, axis2=-1))
        return -(k * _LOG_2 + ops.sum(powers * log_diag, axis=-1))


# ---------------------------------------------------------------------------- biject_to
class _Registry:
    """``biject_to(constraint)``: the transform from reals onto ``constraint``, looked up by
    the constraint's class (most specific first) and built from its current bounds."""

    def __init__(self):
        self._factories = {}

    def register(self, constraint, factory=None):
        """Register ``factory(constraint) -> Transform`` for a constraint (class or instance);
        usable as a decorator."""
        key = constraint if isinstance(constraint, type) else type(constraint)
        if factory is None:
            return lambda f: self.register(key, f)
        self._factories[key] = factory
        return factory

    def __call__(self, constraint):
        if not isinstance(constraint, constraints.Constraint):
            raise TypeError(f"biject_to: expected a Constraint, got {constraint!r}.")
        for cls in type(constraint).__mro__:
            if cls in self._factories:
                return self._factories[cls](constraint)
        raise NotImplementedError(
            f"biject_to: no transform is registered for the constraint {constraint!r}; "
            "register one with biject_to.register(constraint_class, factory).")


biject_to = _Registry()
C = constraints
biject_to.register(C._Real, lambda c: IdentityTransform())
biject_to.register(C._Independent, lambda c: IndependentTransform(
    biject_to(c.base_constraint), c.reinterpreted_batch_ndims))
biject_to.register(C._Positive, lambda c: ExpTransform())
biject_to.register(C._Nonnegative, lambda c: ExpTransform())
biject_to.register(C._GreaterThan, lambda c: ComposeTransform(
    [ExpTransform(), AffineTransform(c.lower_bound, 1.0, domain=C.positive)]))
biject_to.register(C._LessThan, lambda c: ComposeTransform(
    [ExpTransform(), AffineTransform(c.upper_bound, -1.0, domain=C.positive)]))
biject_to.register(C._UnitInterval, lambda c: SigmoidTransform())
biject_to.register(C._Interval, lambda c: ComposeTransform(
    [SigmoidTransform(), AffineTransform(c.lower_bound, c.upper_bound - c.lower_bound,
                                         domain=C.unit_interval)]))
biject_to.register(C._Simplex, lambda c: StickBreakingTransform())
biject_to.register(C._OrderedVector, lambda c: OrderedTransform())
biject_to.register(C._PositiveOrderedVector,
                   lambda c: ComposeTransform([OrderedTransform(), ExpTransform()]))
biject_to.register(C._CorrCholesky, lambda c: CorrCholeskyTransform())
biject_to.register(C._LowerCholesky, lambda c: LowerCholeskyTransform())
biject_to.register(C._PositiveDefinite, lambda c: ComposeTransform(
    [LowerCholeskyTransform(), CholeskyTransform().inv]))

