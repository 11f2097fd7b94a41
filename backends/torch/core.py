"""torch backend: conversion, creation, elementwise ops, reductions and shapes, and the helpers
the other modules of the folder share. Every op is out-of-place, so it works under the
``torch.func`` transforms (``grad``, ``vmap``)."""

from __future__ import annotations

import numpy as np
import torch

from ppl.backends.common.dtypes import DTYPE_NAMES, dtype_name
from ppl.backends.torch import transforms
from ppl.backends.torch.indexing import flat_put
from ppl.backends.torch.tracing import tracing as _tracing

__all__ = ["TorchCore"]

_Tensor = torch.Tensor
_DTYPES = {name: getattr(torch, name) for name in DTYPE_NAMES}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}


def _shape(shape) -> tuple:
    if shape is None:
        return ()
    if isinstance(shape, int | np.integer):
        return (int(shape),)
    return tuple(int(s) for s in shape)


class TorchCore:
    """Core ops of :class:`~ppl.backends.torch.TorchBackend`, and its argument conversion."""

    # ------------------------------------------------------------------ helpers
    def _dt(self, dtype):
        """A ``torch.dtype`` from a name, NumPy/torch dtype or Python type; ``None`` -> float."""
        if dtype is None:
            return self._float
        if isinstance(dtype, torch.dtype):
            return dtype
        return _DTYPES[dtype_name(dtype, self.dtype)]

    def _t(self, x):
        """``x`` as a tensor (tensors pass through untouched)."""
        return x if isinstance(x, _Tensor) else self.asarray(x)

    def _s(self, x):
        """``x`` as a tensor unless it is a tensor or a Python number (torch takes those)."""
        return x if isinstance(x, _Tensor | bool | int | float) else self.asarray(x)

    def float_operand(self, x):
        """``x`` as a floating tensor (integer and boolean input goes to ``self.dtype``)."""
        if not isinstance(x, _Tensor):
            x = self.asarray(x)
        if x.is_floating_point() or x.is_complex():
            return x
        return x.to(self._float)

    def float_operands(self, *xs):
        """:meth:`float_operand` of each operand (all become tensors: some torch functions
        take no Python numbers)."""
        for x in xs:
            if not (isinstance(x, _Tensor) and x.is_floating_point()):
                return [self.float_operand(x) for x in xs]
        return xs

    def _along(self, x, axis):
        """``(x, axis)`` as a tensor and a dim, ``axis=None`` meaning the flattened array."""
        x = self._t(x)
        return (x.reshape(-1), 0) if axis is None else (x, axis)

    @staticmethod
    def _all(x, axis):
        if axis is None:
            return tuple(range(x.ndim))
        return axis if isinstance(axis, int) else tuple(axis)

    # ------------------------------------------------------------------ conversion
    def asarray(self, x, dtype=None):
        if isinstance(x, _Tensor):
            if dtype is not None:
                dt = self._dt(dtype)
                if x.dtype != dt:
                    x = x.to(dt)
            if self._device is not None and x.device != self._device:
                x = x.to(self._device)
            return x
        if dtype is not None:
            dt = self._dt(dtype)
        elif isinstance(x, bool):
            dt = torch.bool
        elif isinstance(x, int):
            dt = torch.int64
        elif isinstance(x, float):
            dt = self._float
        else:
            dt = None
        if dt is not None and isinstance(x, bool | int | float):
            return torch.full((), x, dtype=dt, device=self._device)
        if isinstance(x, list | tuple) and any(isinstance(v, _Tensor | list | tuple) for v in x):
            return torch.stack([self.asarray(v, dtype) for v in x])
        a = np.asarray(x)
        if a.dtype.kind == "O":
            raise TypeError(
                f"asarray: cannot convert an object of type {type(x).__name__} to a tensor; "
                "pass numbers, nested lists of numbers, NumPy arrays or tensors.")
        if dt is None:
            dt = self._float if a.dtype.kind == "f" else self._dt(a.dtype)
        if not a.flags.c_contiguous:   # e.g. negative strides, which torch cannot take
            a = a.copy(order="C")
        return torch.tensor(a, dtype=dt, device=self._device)

    def to_numpy(self, x):
        return transforms.to_numpy(x) if isinstance(x, _Tensor) else np.asarray(x)

    def is_array(self, x):
        return isinstance(x, _Tensor)

    def is_tracer(self, x):
        """Whether ``x``'s values cannot be read: batched by an enclosing ``vmap``, or a fake
        tensor of a ``jit`` trace; under ``grad`` alone values stay readable."""
        return isinstance(x, _Tensor) and (transforms.is_batched(x) or _tracing())

    def shape(self, x):
        return tuple(x.shape) if isinstance(x, _Tensor) else tuple(np.shape(x))

    def ndim(self, x):
        return x.ndim if isinstance(x, _Tensor) else np.ndim(x)

    def size(self, x):
        return x.numel() if isinstance(x, _Tensor) else int(np.size(x))

    def dtype_of(self, x):
        dt = self._t(x).dtype
        return _DTYPE_NAMES.get(dt) or str(dt).replace("torch.", "")

    def astype(self, x, dtype):
        return self._t(x).to(self._dt(dtype))

    def item(self, x):
        return x.item() if isinstance(x, _Tensor) else np.asarray(x).item()

    # ------------------------------------------------------------------ creation
    def zeros(self, shape, dtype=None):
        return torch.zeros(_shape(shape), dtype=self._dt(dtype), device=self._device)

    def ones(self, shape, dtype=None):
        return torch.ones(_shape(shape), dtype=self._dt(dtype), device=self._device)

    def full(self, shape, fill_value, dtype=None):
        """A new array of ``fill_value``; without ``dtype`` the kind follows ``fill_value``
        (bool, int64, or ``self.dtype`` for floats)."""
        if isinstance(fill_value, _Tensor):
            fill = fill_value if dtype is None else fill_value.to(self._dt(dtype))
            return torch.broadcast_to(fill, _shape(shape)).clone()
        if dtype is None:
            dtype = torch.bool if isinstance(fill_value, bool | np.bool_) else (
                torch.int64 if isinstance(fill_value, int | np.integer) else None)
        return torch.full(_shape(shape), fill_value, dtype=self._dt(dtype), device=self._device)

    def arange(self, start, stop=None, step=1, dtype=None):
        if stop is None:
            start, stop = 0, start
        if dtype is None and all(isinstance(v, int | np.integer) for v in (start, stop, step)):
            dtype = torch.int64
        return torch.arange(start, stop, step, dtype=self._dt(dtype), device=self._device)

    def linspace(self, start, stop, num, dtype=None):
        return torch.linspace(start, stop, int(num), dtype=self._dt(dtype), device=self._device)

    def eye(self, n, m=None, dtype=None):
        return torch.eye(int(n), int(n if m is None else m), dtype=self._dt(dtype),
                         device=self._device)

    def zeros_like(self, x, dtype=None):
        return torch.zeros_like(self._t(x), dtype=None if dtype is None else self._dt(dtype))

    def ones_like(self, x, dtype=None):
        return torch.ones_like(self._t(x), dtype=None if dtype is None else self._dt(dtype))

    def full_like(self, x, fill_value, dtype=None):
        x = self._t(x)
        if isinstance(fill_value, _Tensor):
            return self.full(x.shape, fill_value, dtype or x.dtype)
        return torch.full_like(x, fill_value, dtype=None if dtype is None else self._dt(dtype))

    # ------------------------------------------------------------------ elementwise
    # (floating ops get floating tensors from the float policy, common/dtypes.py)
    def abs(self, x): return torch.abs(self._t(x))
    def exp(self, x): return torch.exp(x)
    def log(self, x): return torch.log(x)
    def sqrt(self, x): return torch.sqrt(x)
    def sin(self, x): return torch.sin(x)
    def cos(self, x): return torch.cos(x)
    def tan(self, x): return torch.tan(x)
    def tanh(self, x): return torch.tanh(x)
    def sinh(self, x): return torch.sinh(x)
    def cosh(self, x): return torch.cosh(x)
    def asin(self, x): return torch.asin(x)
    def acos(self, x): return torch.acos(x)
    def atan(self, x): return torch.atan(x)
    def atan2(self, y, x): return torch.atan2(y, x)
    def asinh(self, x): return torch.asinh(x)
    def acosh(self, x): return torch.acosh(x)
    def atanh(self, x): return torch.atanh(x)
    def reciprocal(self, x): return torch.reciprocal(x)
    def floor(self, x): return torch.floor(self._t(x))
    def ceil(self, x): return torch.ceil(self._t(x))
    def round(self, x): return torch.round(self._t(x))
    def sign(self, x): return torch.sign(self._t(x))
    def isfinite(self, x): return torch.isfinite(self._t(x))
    def isnan(self, x): return torch.isnan(self._t(x))
    def isinf(self, x): return torch.isinf(self._t(x))
    def square(self, x): return torch.square(self._t(x))
    def logical_and(self, x, y): return torch.logical_and(self._t(x), self._t(y))
    def logical_or(self, x, y): return torch.logical_or(self._t(x), self._t(y))
    def logical_not(self, x): return torch.logical_not(self._t(x))

    def maximum(self, x, y):
        if isinstance(y, float) and isinstance(x, _Tensor) and x.is_floating_point():
            return torch.clamp(x, min=y)
        return torch.maximum(self._t(x), self._t(y))

    def minimum(self, x, y):
        if isinstance(y, float) and isinstance(x, _Tensor) and x.is_floating_point():
            return torch.clamp(x, max=y)
        return torch.minimum(self._t(x), self._t(y))

    def pow(self, x, y):
        x, y = self._s(x), self._s(y)
        if not isinstance(x, _Tensor) and not isinstance(y, _Tensor):
            x = self.asarray(x)
        return torch.pow(x, y)

    def where(self, condition, x, y):
        x, y = self._s(x), self._s(y)
        if not isinstance(x, _Tensor) and not isinstance(y, _Tensor):
            x, y = self.asarray(x), self.asarray(y)
        return torch.where(self._t(condition), x, y)

    def clip(self, x, min=None, max=None):
        x = self._t(x)
        if min is None and max is None:
            return x
        min = None if min is None else self._s(min)
        max = None if max is None else self._s(max)
        if isinstance(min, _Tensor) or isinstance(max, _Tensor):
            min = None if min is None else self._t(min)
            max = None if max is None else self._t(max)
        return torch.clamp(x, min, max)

    # ------------------------------------------------------------------ reductions
    def sum(self, x, axis=None, keepdims=False):
        return torch.sum(self._t(x), dim=axis, keepdim=keepdims)

    def prod(self, x, axis=None, keepdims=False):
        x = self._t(x)
        if axis is None and not keepdims:
            return torch.prod(x)
        axes = self._all(x, axis)
        if isinstance(axes, int):
            return torch.prod(x, dim=axes, keepdim=keepdims)
        for a in sorted((a % x.ndim for a in axes), reverse=True):
            x = torch.prod(x, dim=a, keepdim=keepdims)
        return x

    def max(self, x, axis=None, keepdims=False):
        x = self._t(x)
        return torch.amax(x, dim=self._all(x, axis), keepdim=keepdims)

    def min(self, x, axis=None, keepdims=False):
        x = self._t(x)
        return torch.amin(x, dim=self._all(x, axis), keepdim=keepdims)

    def argmax(self, x, axis=None, keepdims=False):
        return torch.argmax(self._t(x), dim=axis, keepdim=keepdims)

    def argmin(self, x, axis=None, keepdims=False):
        return torch.argmin(self._t(x), dim=axis, keepdim=keepdims)

    def all(self, x, axis=None, keepdims=False):
        x = self._t(x)
        return torch.all(x, dim=self._all(x, axis), keepdim=keepdims)

    def any(self, x, axis=None, keepdims=False):
        x = self._t(x)
        return torch.any(x, dim=self._all(x, axis), keepdim=keepdims)

    def cumsum(self, x, axis=0): return torch.cumsum(*self._along(x, axis))
    def cumprod(self, x, axis=0): return torch.cumprod(*self._along(x, axis))

    def sort(self, x, axis=-1):
        x, dim = self._along(x, axis)
        return torch.sort(x, dim=dim, stable=True).values

    def argsort(self, x, axis=-1):
        x, dim = self._along(x, axis)
        return torch.argsort(x, dim=dim, stable=True)

    def mean(self, x, axis=None, keepdims=False): return torch.mean(x, dim=axis, keepdim=keepdims)

    def var(self, x, axis=None, keepdims=False, correction=0):
        return torch.var(x, dim=axis, correction=correction, keepdim=keepdims)

    def std(self, x, axis=None, keepdims=False, correction=0):
        return torch.std(x, dim=axis, correction=correction, keepdim=keepdims)

    # ------------------------------------------------------------------ shapes
    def reshape(self, x, shape):
        return torch.reshape(self._t(x), _shape(shape))

    def broadcast_to(self, x, shape):
        return torch.broadcast_to(self._t(x), _shape(shape))

    def expand_dims(self, x, axis):
        x = self._t(x)
        if isinstance(axis, int):
            return torch.unsqueeze(x, axis)
        out = x.ndim + len(axis)
        for a in sorted(a % out for a in axis):
            x = torch.unsqueeze(x, a)
        return x

    def squeeze(self, x, axis=None):
        x = self._t(x)
        if axis is None:
            return torch.squeeze(x)
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        for a in axes:
            if x.shape[a] != 1:
                raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}, not 1 "
                                 f"(shape {tuple(x.shape)}); pass only axes of size 1.")
        return torch.squeeze(x, dim=axes)

    def concat(self, arrays, axis=0):
        arrays = [self._t(a) for a in arrays]
        if axis is None:
            return torch.cat([a.reshape(-1) for a in arrays])
        return torch.cat(arrays, dim=axis)

    def stack(self, arrays, axis=0): return torch.stack([self._t(a) for a in arrays], dim=axis)
    def permute_dims(self, x, axes): return torch.permute(self._t(x), tuple(axes))

    def moveaxis(self, x, source, destination):
        return torch.movedim(self._t(x), source, destination)

    def flip(self, x, axis=None):
        x = self._t(x)
        return torch.flip(x, dims=self._all(x, axis) if not isinstance(axis, int) else (axis,))

    def tril(self, x, k=0): return torch.tril(self._t(x), diagonal=k)
    def triu(self, x, k=0): return torch.triu(self._t(x), diagonal=k)

    def _index(self, i):
        return i if isinstance(i, _Tensor | int) else self.asarray(i, torch.int64)

    def take(self, x, indices, axis=None):
        x, indices = self._t(x), self._index(indices)
        if axis is None:
            return x.reshape(-1)[indices]
        return x[(slice(None),) * (axis % x.ndim) + (indices,)]

    def take_along_axis(self, x, indices, axis):
        return torch.take_along_dim(self._t(x), self._index(indices), dim=axis)

    def index_update(self, x, index, value):
        x = self._t(x)
        if isinstance(index, list):
            index = self.asarray(index, torch.int64)
        if torch._C._are_functorch_transforms_active():
            return flat_put(x, index, value, accumulate=False)
        y = x.clone()
        y[index] = value
        return y

    def index_add(self, x, index, value):
        """Functional ``x[index] += value``; repeated indices accumulate (as in JAX)."""
        x = self._t(x)
        if isinstance(index, list):
            index = self.asarray(index, torch.int64)
        return flat_put(x, index, value, accumulate=True)

    def diag(self, v):
        return torch.diag_embed(self._t(v))

    def ravel(self, x):
        return torch.reshape(self._t(x), (-1,))
