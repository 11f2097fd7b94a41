"""The core of the protocol: conversion, creation, elementwise ops, reductions and shapes.

Methods that raise :func:`not_implemented` are the primitives every backend implements; the
others are composites written once over them, which a backend overrides only where its
framework has a faster or more stable native. Ops marked ``@floating`` follow the float policy
of :mod:`ppl.backends.common.dtypes`.
"""

from __future__ import annotations

import math

import numpy as np

from ppl.backends.common.dtypes import floating

__all__ = ["Core", "not_implemented"]


def not_implemented(backend, op: str) -> NotImplementedError:
    """The error for an op ``backend`` does not implement (names the backend, the op and what
    to do instead)."""
    return NotImplementedError(
        f"The {backend.name!r} backend does not implement ops.{op}. "
        f"Use a backend that does (ppl.available_backends()), or implement it in "
        f"ppl.backends.{backend.name}."
    )


def _count(backend, x, axis) -> int:
    """How many elements a reduction over ``axis`` combines."""
    if axis is None:
        return backend.size(x)
    return math.prod(backend.shape(x)[a] for a in ((axis,) if isinstance(axis, int) else axis))


class Core:
    """Conversion, creation, elementwise, reductions, shapes."""

    # ------------------------------------------------------------------ conversion (primitive)
    def asarray(self, x, dtype=None):
        """Convert ``x`` to a backend array. Python/NumPy floats take ``self.dtype`` unless
        ``dtype`` is given; integers and booleans keep their kind."""
        raise not_implemented(self, "asarray")

    def to_numpy(self, x) -> np.ndarray:
        """A NumPy copy of ``x`` (detached from any autodiff trace)."""
        raise not_implemented(self, "to_numpy")

    def is_array(self, x) -> bool:
        """Whether ``x`` is an array (or tracer) of this backend."""
        raise not_implemented(self, "is_array")

    def is_tracer(self, x) -> bool:
        """Whether ``x`` is an abstract value inside a compiled trace (``jit``/``vmap``/``grad``
        tracers on JAX), whose contents cannot be read. Argument checks (``validate_args``)
        skip such values. Eager backends never trace: the default is ``False``."""
        return False

    def shape(self, x) -> tuple:
        """The shape of ``x`` as a tuple of Python ints."""
        return tuple(int(d) for d in np.shape(x)) if not self.is_array(x) else tuple(x.shape)

    def ndim(self, x) -> int:
        return len(self.shape(x))

    def size(self, x) -> int:
        return math.prod(self.shape(x))

    def dtype_of(self, x) -> str:
        """The dtype of ``x`` as a string: ``"float32"``, ``"int64"``, ``"bool"``, ..."""
        raise not_implemented(self, "dtype_of")

    def astype(self, x, dtype):
        raise not_implemented(self, "astype")

    def item(self, x):
        """A Python scalar from a one-element array (a host sync on accelerators)."""
        return self.to_numpy(x).item()

    # ------------------------------------------------------------------ creation (primitive)
    def zeros(self, shape, dtype=None):
        raise not_implemented(self, "zeros")

    def ones(self, shape, dtype=None):
        raise not_implemented(self, "ones")

    def full(self, shape, fill_value, dtype=None):
        raise not_implemented(self, "full")

    def arange(self, start, stop=None, step=1, dtype=None):
        raise not_implemented(self, "arange")

    def linspace(self, start, stop, num, dtype=None):
        raise not_implemented(self, "linspace")

    def eye(self, n, m=None, dtype=None):
        raise not_implemented(self, "eye")

    def zeros_like(self, x, dtype=None):
        return self.zeros(self.shape(x), dtype or self.dtype_of(x))

    def ones_like(self, x, dtype=None):
        return self.ones(self.shape(x), dtype or self.dtype_of(x))

    def full_like(self, x, fill_value, dtype=None):
        return self.full(self.shape(x), fill_value, dtype or self.dtype_of(x))

    # ------------------------------------------------------------------ elementwise (primitive)
    def abs(self, x): raise not_implemented(self, "abs")
    @floating()
    def exp(self, x): raise not_implemented(self, "exp")
    @floating()
    def log(self, x): raise not_implemented(self, "log")
    @floating()
    def sqrt(self, x): raise not_implemented(self, "sqrt")
    @floating()
    def sin(self, x): raise not_implemented(self, "sin")
    @floating()
    def cos(self, x): raise not_implemented(self, "cos")
    @floating()
    def tan(self, x): raise not_implemented(self, "tan")
    @floating()
    def tanh(self, x): raise not_implemented(self, "tanh")
    @floating()
    def sinh(self, x): raise not_implemented(self, "sinh")
    @floating()
    def cosh(self, x): raise not_implemented(self, "cosh")
    @floating()
    def asin(self, x): raise not_implemented(self, "asin")
    @floating()
    def acos(self, x): raise not_implemented(self, "acos")
    @floating()
    def atan(self, x): raise not_implemented(self, "atan")
    @floating("y", "x")
    def atan2(self, y, x): raise not_implemented(self, "atan2")
    @floating()
    def asinh(self, x): raise not_implemented(self, "asinh")
    @floating()
    def acosh(self, x): raise not_implemented(self, "acosh")
    @floating()
    def atanh(self, x): raise not_implemented(self, "atanh")
    def floor(self, x): raise not_implemented(self, "floor")
    def ceil(self, x): raise not_implemented(self, "ceil")
    def round(self, x): raise not_implemented(self, "round")
    def sign(self, x): raise not_implemented(self, "sign")
    def maximum(self, x, y): raise not_implemented(self, "maximum")
    def minimum(self, x, y): raise not_implemented(self, "minimum")
    def pow(self, x, y): raise not_implemented(self, "pow")
    def isfinite(self, x): raise not_implemented(self, "isfinite")
    def isnan(self, x): raise not_implemented(self, "isnan")
    def isinf(self, x): raise not_implemented(self, "isinf")
    def where(self, condition, x, y): raise not_implemented(self, "where")
    def clip(self, x, min=None, max=None): raise not_implemented(self, "clip")
    def logical_and(self, x, y): raise not_implemented(self, "logical_and")
    def logical_or(self, x, y): raise not_implemented(self, "logical_or")
    def logical_not(self, x): raise not_implemented(self, "logical_not")

    def square(self, x):
        return x * x

    @floating()
    def reciprocal(self, x):
        return 1.0 / x

    def add(self, x, y):
        return x + y

    def subtract(self, x, y):
        return x - y

    def multiply(self, x, y):
        return x * y

    @floating("x", "y")
    def divide(self, x, y):
        return x / y

    def negative(self, x):
        return -x

    def equal(self, x, y):
        return x == y

    def not_equal(self, x, y):
        return x != y

    def less(self, x, y):
        return x < y

    def less_equal(self, x, y):
        return x <= y

    def greater(self, x, y):
        return x > y

    def greater_equal(self, x, y):
        return x >= y

    # ------------------------------------------------------------------ reductions (primitive)
    def sum(self, x, axis=None, keepdims=False): raise not_implemented(self, "sum")
    def prod(self, x, axis=None, keepdims=False): raise not_implemented(self, "prod")
    def max(self, x, axis=None, keepdims=False): raise not_implemented(self, "max")
    def min(self, x, axis=None, keepdims=False): raise not_implemented(self, "min")
    def argmax(self, x, axis=None, keepdims=False): raise not_implemented(self, "argmax")
    def argmin(self, x, axis=None, keepdims=False): raise not_implemented(self, "argmin")
    def all(self, x, axis=None, keepdims=False): raise not_implemented(self, "all")
    def any(self, x, axis=None, keepdims=False): raise not_implemented(self, "any")
    def cumsum(self, x, axis=0): raise not_implemented(self, "cumsum")
    def cumprod(self, x, axis=0): raise not_implemented(self, "cumprod")
    def sort(self, x, axis=-1): raise not_implemented(self, "sort")
    def argsort(self, x, axis=-1): raise not_implemented(self, "argsort")

    @floating()
    def mean(self, x, axis=None, keepdims=False):
        return self.sum(x, axis=axis, keepdims=keepdims) / _count(self, x, axis)

    @floating()
    def var(self, x, axis=None, keepdims=False, correction=0):
        m = self.mean(x, axis=axis, keepdims=True)
        return self.sum(self.square(x - m), axis=axis, keepdims=keepdims) / (
            _count(self, x, axis) - correction)

    @floating()
    def std(self, x, axis=None, keepdims=False, correction=0):
        return self.sqrt(self.var(x, axis=axis, keepdims=keepdims, correction=correction))

    # ------------------------------------------------------------------ shapes (primitive)
    def reshape(self, x, shape): raise not_implemented(self, "reshape")

    def broadcast_to(self, x, shape):
        """``x`` broadcast to ``shape`` (leading axes may be added); differentiable in ``x``,
        whose gradient is summed back over the broadcast axes."""
        raise not_implemented(self, "broadcast_to")

    def expand_dims(self, x, axis): raise not_implemented(self, "expand_dims")
    def squeeze(self, x, axis=None): raise not_implemented(self, "squeeze")
    def concat(self, arrays, axis=0): raise not_implemented(self, "concat")
    def stack(self, arrays, axis=0): raise not_implemented(self, "stack")
    def permute_dims(self, x, axes): raise not_implemented(self, "permute_dims")
    def moveaxis(self, x, source, destination): raise not_implemented(self, "moveaxis")
    def flip(self, x, axis=None): raise not_implemented(self, "flip")
    def tril(self, x, k=0): raise not_implemented(self, "tril")
    def triu(self, x, k=0): raise not_implemented(self, "triu")
    def take(self, x, indices, axis=None): raise not_implemented(self, "take")
    def take_along_axis(self, x, indices, axis): raise not_implemented(self, "take_along_axis")

    def index_update(self, x, index, value):
        """Functional ``x[index] = value``: a new array, ``x`` unchanged (``x.at[i].set(v)``)."""
        raise not_implemented(self, "index_update")

    def index_add(self, x, index, value):
        """Functional ``x[index] += value`` (``x.at[i].add(v)``)."""
        raise not_implemented(self, "index_add")

    def broadcast_shapes(self, *shapes) -> tuple:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))

    def diag(self, v):
        """Batched ``diag``: a ``(..., n)`` vector to a ``(..., n, n)`` diagonal matrix."""
        n = self.shape(v)[-1]
        return self.expand_dims(v, -1) * self.eye(n, dtype=self.dtype_of(v))

    def ravel(self, x):
        return self.reshape(x, (-1,))
