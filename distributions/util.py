"""Small helpers shared by the distribution families (all over ``ppl.ops``)."""

from __future__ import annotations

import numpy as np

from ppl import ops

__all__ = [
    "as_float",
    "batch_shape_of",
    "clamp_probs",
    "finfo",
    "is_concrete",
    "log1mexp",
    "sum_rightmost",
]


def finfo(x=None):
    """``numpy.finfo`` of ``x``'s dtype (the backend's float dtype if ``x`` is None)."""
    name = ops.backend().dtype if x is None else ops.dtype_of(x)
    if not name.startswith("float"):
        name = ops.backend().dtype
    return np.finfo(name)


def as_float(x):
    """``x`` as a backend array of a floating dtype (the backend's, unless ``x`` already is one).

    Backend arrays, tracers and autodiff boxes pass through unchanged.
    """
    x = ops.asarray(x)
    if not ops.dtype_of(x).startswith("float"):
        x = ops.astype(x, ops.backend().dtype)
    return x


def batch_shape_of(*params, event_dims=None) -> tuple:
    """The broadcast shape of the parameters' batch parts.

    ``event_dims`` gives, per parameter, how many rightmost dims are event dims (default 0).
    """
    event_dims = event_dims or (0,) * len(params)
    shapes = []
    for p, e in zip(params, event_dims):
        s = ops.shape(p)
        shapes.append(s[: len(s) - e] if e else s)
    return tuple(ops.broadcast_shapes(*shapes)) if shapes else ()


def sum_rightmost(x, n: int):
    """Sum the ``n`` rightmost dimensions of ``x`` (``x`` itself when ``n == 0``)."""
    if n <= 0:
        return x
    return ops.sum(x, axis=tuple(range(-n, 0)))


def is_concrete(x) -> bool:
    """Whether ``x`` holds readable values (not a compiler tracer); plain Python values are."""
    if isinstance(x, (bool, int, float, complex, np.ndarray, np.generic)):
        return True
    return not ops.is_tracer(x)


def clamp_probs(p):
    """Clamp probabilities into ``[tiny, 1 - eps]`` so their logs stay finite."""
    fi = finfo(p)
    return ops.clip(p, float(fi.tiny), 1.0 - float(fi.eps))


def log1mexp(x):
    """``log(1 - exp(x))`` for ``x <= 0``, accurate on both sides of ``-log 2`` (Maechler 2012)."""
    small = x > -0.6931471805599453
    x_small = ops.where(small, x, -1.0)
    x_large = ops.where(small, -1.0, x)
    return ops.where(small, ops.log(-ops.expm1(x_small)), ops.log1p(-ops.exp(x_large)))
