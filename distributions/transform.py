"""The :class:`Transform` contract and the transforms built from other transforms: the inverse
(``t.inv``), :class:`ComposeTransform`, :class:`IndependentTransform`, and the identity.

A :class:`Transform` maps its ``domain`` onto its ``codomain`` (both constraints) and gives
``log_abs_det_jacobian(x, y)``, the log of the volume change at ``x`` (``y = t(x)``), summed over
the domain's event dims. Transforms that change the event shape say so with ``forward_shape`` /
``inverse_shape``.

>>> import ppl
>>> from ppl.distributions.transforms import ComposeTransform, ExpTransform
>>> with ppl.use_backend("numpy", dtype="float64"):
...     t = ComposeTransform([ExpTransform(), ExpTransform().inv])
...     float(t(ppl.ops.asarray(0.5)))
0.5
"""

from __future__ import annotations

from ppl import ops
from ppl.distributions import constraints
from ppl.distributions.util import sum_rightmost

__all__ = ["ComposeTransform", "IdentityTransform", "IndependentTransform", "Transform"]


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
