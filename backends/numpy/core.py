"""numpy backend: conversion, creation, elementwise ops, reductions and shapes.

Differentiable ops are ``autograd.numpy``'s; where autograd has no VJP (``flip``, ``take``,
``take_along_axis``, ``np.sort`` beyond 1-D, ``broadcast_to`` with new leading axes) the op is
rebuilt from ones it can differentiate, and the rest are autograd primitives with their VJPs
(:mod:`ppl.backends.numpy.primitives`).
"""

from __future__ import annotations

import autograd.numpy as anp
import numpy as np
from autograd.tracer import Box, getval

from ppl.backends import tree
from ppl.backends.common.dtypes import dtype_name
from ppl.backends.numpy import primitives as prims
from ppl.backends.numpy.tape import concrete, nodiff

__all__ = ["NumpyCore"]


_NO_DTYPE = np.dtype(object)       # the "dtype" of Python numbers (kind "O")
_PY_NUMBERS = (bool, int, float)


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


class NumpyCore:
    """Core ops of :class:`~ppl.backends.numpy.NumpyBackend`."""

    # ------------------------------------------------------------------ dtypes
    def _dt(self, dtype):
        return self._np_dtype if dtype is None else np.dtype(dtype_name(dtype, self.dtype))

    def float_operand(self, x):
        """``x`` as a floating array: NumPy arrays and Python numbers of integer or boolean
        kind become ``self.dtype``, Python floats too (NumPy would make them float64)."""
        if type(x) is np.ndarray and x.dtype.kind in "fc":
            return x
        dtype = getattr(getval(x), "dtype", None)
        if dtype is not None and dtype.kind in "fc":
            return x
        if dtype is None:
            x = self.asarray(x)
            if x.dtype.kind in "fc":
                return x
        return self.astype(x, self._np_dtype)

    def float_operands(self, *xs):
        """:meth:`float_operand` of each operand; Python numbers next to a floating array stay
        Python numbers, which NumPy treats as weakly typed (``x32 / 2`` stays float32)."""
        for x in xs:
            if type(x) is not np.ndarray or x.dtype.kind not in "fc":
                break
        else:
            return xs
        kinds = [getattr(getval(x), "dtype", _NO_DTYPE).kind for x in xs]
        if "f" in kinds or "c" in kinds:
            return [x if type(x) in _PY_NUMBERS else self.float_operand(x) for x in xs]
        return [self.float_operand(x) for x in xs]

    # ------------------------------------------------------------------ conversion
    def asarray(self, x, dtype=None):
        if isinstance(x, Box):
            return x if dtype is None else self.astype(x, dtype)
        arr = np.asarray(x, dtype=None if dtype is None else self._dt(dtype))
        if arr.dtype.kind == "f" and dtype is None and arr.dtype != self._np_dtype:
            return arr.astype(self._np_dtype)
        if arr.dtype.kind in "OUS":
            raise TypeError(
                f"expected numbers, got an object of type {type(x).__name__} "
                f"(array dtype {arr.dtype})."
            )
        return arr

    def to_numpy(self, x):
        return np.asarray(concrete(x) if isinstance(x, Box) else tree.map(concrete, x))

    def is_array(self, x):
        return isinstance(x, (np.ndarray, np.generic, Box))

    def shape(self, x):
        return tuple(anp.shape(x))

    def dtype_of(self, x):
        x = getval(x)
        if isinstance(x, np.ndarray | np.generic):   # ~10x faster than result_type + str
            return x.dtype.name
        return str(np.result_type(x))

    def astype(self, x, dtype):
        dtype = self._dt(dtype)
        if isinstance(x, Box):
            if dtype.kind == "f":
                return x.astype(dtype)
            x = nodiff(x)      # a recorded value stays recorded (no derivative: not float)
            return x.astype(dtype) if isinstance(x, Box) else np.asarray(x).astype(dtype)
        return np.asarray(x).astype(dtype)

    # ------------------------------------------------------------------ creation
    def zeros(self, shape, dtype=None):
        return np.zeros(shape, self._dt(dtype))

    def ones(self, shape, dtype=None):
        return np.ones(shape, self._dt(dtype))

    def full(self, shape, fill_value, dtype=None):
        if dtype is None and isinstance(fill_value, (bool, int, np.integer, np.bool_)):
            dtype = np.bool_ if isinstance(fill_value, (bool, np.bool_)) else np.int64
        return np.full(shape, concrete(fill_value), self._dt(dtype))

    def arange(self, start, stop=None, step=1, dtype=None):
        out = np.arange(start, stop, step) if stop is not None else np.arange(start)
        if dtype is not None:
            return out.astype(self._dt(dtype))
        return out.astype(self._np_dtype) if out.dtype.kind == "f" else out.astype(np.int64)

    def linspace(self, start, stop, num, dtype=None):
        return np.linspace(start, stop, num, dtype=self._dt(dtype))

    def eye(self, n, m=None, dtype=None):
        return np.eye(n, m, dtype=self._dt(dtype))

    def zeros_like(self, x, dtype=None):
        return np.zeros(anp.shape(x), self._dt(dtype) if dtype else np.result_type(getval(x)))

    def ones_like(self, x, dtype=None):
        return np.ones(anp.shape(x), self._dt(dtype) if dtype else np.result_type(getval(x)))

    # ------------------------------------------------------------------ elementwise
    abs = staticmethod(anp.abs)
    exp = staticmethod(anp.exp)
    log = staticmethod(anp.log)
    sqrt = staticmethod(anp.sqrt)
    square = staticmethod(anp.square)
    sin = staticmethod(anp.sin)
    cos = staticmethod(anp.cos)
    tan = staticmethod(anp.tan)
    tanh = staticmethod(anp.tanh)
    sinh = staticmethod(anp.sinh)
    cosh = staticmethod(anp.cosh)
    asin = staticmethod(anp.arcsin)
    acos = staticmethod(anp.arccos)
    atan = staticmethod(anp.arctan)
    atan2 = staticmethod(anp.arctan2)
    asinh = staticmethod(anp.arcsinh)
    acosh = staticmethod(anp.arccosh)
    atanh = staticmethod(anp.arctanh)
    floor = staticmethod(anp.floor)
    ceil = staticmethod(anp.ceil)
    round = staticmethod(anp.round)
    sign = staticmethod(anp.sign)
    maximum = staticmethod(anp.maximum)
    minimum = staticmethod(anp.minimum)
    pow = staticmethod(anp.power)
    isfinite = staticmethod(anp.isfinite)
    isnan = staticmethod(anp.isnan)
    isinf = staticmethod(anp.isinf)
    logical_and = staticmethod(anp.logical_and)
    logical_or = staticmethod(anp.logical_or)
    logical_not = staticmethod(anp.logical_not)

    def where(self, condition, x, y):
        # Broadcast first: autograd's VJP of where does not undo broadcasting of its operands.
        condition = nodiff(condition)     # a recorded mask stays recorded (jit)
        if not (isinstance(x, Box) or isinstance(y, Box)):
            return anp.where(condition, x, y) if isinstance(condition, Box) \
                else np.where(condition, x, y)
        shape = np.broadcast_shapes(anp.shape(condition), anp.shape(x), anp.shape(y))
        # the dtype np.where gives unboxed operands (a Python number next to a float32 array
        # stays float32), not that of a broadcast copy of the number
        dtype = np.result_type(getval(x), getval(y))
        x, y = (v if isinstance(v, Box) else np.asarray(v, dtype) for v in (x, y))
        broadcast = anp.broadcast_to if isinstance(condition, Box) else np.broadcast_to
        return anp.where(broadcast(condition, shape),
                         self.broadcast_to(x, shape), self.broadcast_to(y, shape))

    def clip(self, x, min=None, max=None):
        if min is not None:
            x = anp.maximum(x, min)
        if max is not None:
            x = anp.minimum(x, max)
        return x

    # ------------------------------------------------------------------ reductions
    def sum(self, x, axis=None, keepdims=False):
        return anp.sum(x, axis=_axis(axis), keepdims=keepdims)

    def mean(self, x, axis=None, keepdims=False):
        return anp.mean(x, axis=_axis(axis), keepdims=keepdims)

    def prod(self, x, axis=None, keepdims=False):
        return anp.prod(x, axis=_axis(axis), keepdims=keepdims)

    def max(self, x, axis=None, keepdims=False):
        return anp.max(x, axis=_axis(axis), keepdims=keepdims)

    def min(self, x, axis=None, keepdims=False):
        return anp.min(x, axis=_axis(axis), keepdims=keepdims)

    def argmax(self, x, axis=None, keepdims=False):
        return anp.argmax(nodiff(x), axis=axis, keepdims=keepdims)

    def argmin(self, x, axis=None, keepdims=False):
        return anp.argmin(nodiff(x), axis=axis, keepdims=keepdims)

    def all(self, x, axis=None, keepdims=False):
        return anp.all(nodiff(x), axis=_axis(axis), keepdims=keepdims)

    def any(self, x, axis=None, keepdims=False):
        return anp.any(nodiff(x), axis=_axis(axis), keepdims=keepdims)

    def cumsum(self, x, axis=0):
        return anp.cumsum(x, axis=axis)

    def cumprod(self, x, axis=0):
        return prims.cumprod(x, axis)

    def sort(self, x, axis=-1):
        # argsort + gather, since autograd differentiates np.sort of 1-D arrays only.
        return self.take_along_axis(x, np.argsort(concrete(x), axis=axis), axis)

    def argsort(self, x, axis=-1):
        return anp.argsort(nodiff(x), axis=axis)

    # ------------------------------------------------------------------ shapes
    def reshape(self, x, shape):
        return anp.reshape(x, shape)

    def broadcast_to(self, x, shape):
        # Add the leading axes first: autograd's VJP of broadcast_to rejects new leading axes.
        shape = tuple(shape)
        extra = len(shape) - anp.ndim(x)
        if extra > 0:
            x = anp.reshape(x, (1,) * extra + tuple(anp.shape(x)))
        return anp.broadcast_to(x, shape)

    def expand_dims(self, x, axis):
        return anp.expand_dims(x, axis)

    def squeeze(self, x, axis=None):
        return anp.squeeze(x, axis=axis)

    def concat(self, arrays, axis=0):
        return anp.concatenate(list(arrays), axis=axis)

    def stack(self, arrays, axis=0):
        return anp.stack(list(arrays), axis=axis)

    def permute_dims(self, x, axes):
        return anp.transpose(x, axes)

    def moveaxis(self, x, source, destination):
        return anp.moveaxis(x, source, destination)

    def flip(self, x, axis=None):
        # Reversed slices, since autograd has no VJP for np.flip.
        ndim = anp.ndim(x)
        axes = range(ndim) if axis is None else \
            [a % ndim for a in ((axis,) if isinstance(axis, int) else axis)]
        return x[tuple(slice(None, None, -1) if a in axes else slice(None) for a in range(ndim))]

    def tril(self, x, k=0):
        return anp.tril(x, k)

    def triu(self, x, k=0):
        return anp.triu(x, k)

    def take(self, x, indices, axis=None):
        # Fancy indexing, since autograd has no VJP for np.take.
        idx = np.asarray(concrete(indices))
        if axis is None:
            return anp.reshape(x, (-1,))[idx]
        axis = axis % anp.ndim(x)
        picked = anp.moveaxis(x, axis, 0)[idx]
        lead = tuple(range(idx.ndim))
        return anp.moveaxis(picked, lead, tuple(a + axis for a in lead))

    def take_along_axis(self, x, indices, axis):
        # Fancy indexing with open grids, since autograd has no VJP for take_along_axis.
        idx = np.asarray(concrete(indices))
        ndim = anp.ndim(x)
        axis = axis % ndim
        shape = np.broadcast_shapes(
            tuple(1 if a == axis else d for a, d in enumerate(anp.shape(x))),
            tuple(1 if a == axis else d for a, d in enumerate(idx.shape)))
        x = self.broadcast_to(x, shape[:axis] + (anp.shape(x)[axis],) + shape[axis + 1:])
        idx = np.broadcast_to(idx, shape[:axis] + (idx.shape[axis],) + shape[axis + 1:])
        grid = list(np.ogrid[tuple(slice(n) for n in idx.shape)])
        grid[axis] = idx
        return x[tuple(grid)]

    def index_update(self, x, index, value):
        return prims.index_update(x, index, value)

    def index_add(self, x, index, value):
        return prims.index_add(x, index, value)
