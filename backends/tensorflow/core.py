"""tensorflow backend: conversion, creation, elementwise ops, reductions and shapes, and the
helpers the other modules of the folder share (dtypes, devices, argument conversion that keeps
Python scalars weakly typed next to a tensor, as in JAX)."""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from ppl.backends.common.dtypes import DTYPE_NAMES, dtype_name, parse_device

__all__ = ["TensorflowCore", "to_device_name"]

_Tensor = tf.Tensor | tf.Variable
_DTYPES = {name: tf.dtypes.as_dtype(name) for name in DTYPE_NAMES}
_PY = (bool, int, float, np.bool_, np.integer, np.floating)


def _shape(shape) -> tuple:
    if shape is None:
        return ()
    if isinstance(shape, int | np.integer):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def to_device_name(device) -> str | None:
    """A TensorFlow device name (``"/CPU:0"``, ``"/GPU:1"``) for a device string; ``cuda``
    and ``rocm`` name TensorFlow's ``GPU`` platform."""
    if device is None:
        return None
    platform, index = parse_device(device)
    platform = {"cuda": "gpu", "rocm": "gpu"}.get(platform, platform).upper()
    devices = tf.config.list_logical_devices(platform)
    i = index or 0
    if i >= len(devices):
        raise ValueError(
            f"device {device!r} is not available to TensorFlow here (platform {platform!r} has "
            f"{len(devices)} device(s)); available: "
            f"{[d.name for d in tf.config.list_logical_devices()]}. Pass device=None or 'cpu'.")
    return f"/{platform}:{i}"


def _unary(fn, doc=None):
    def method(self, x):
        return fn(self._in(x))

    method.__name__ = getattr(fn, "__name__", "op")
    method.__doc__ = doc or f"``tf.{method.__name__}``, elementwise."
    return method


def _promote(a: tf.DType, b: tf.DType) -> tf.DType:
    """The dtype of an op on tensors of dtypes ``a`` and ``b``, as in JAX and torch: a floating
    dtype wins over integers and booleans (``int64`` with ``float32`` is ``float32``), otherwise
    NumPy's promotion (the wider float, the wider integer)."""
    if a == b:
        return a
    fa, fb = a.is_floating or a.is_complex, b.is_floating or b.is_complex
    if fa != fb:
        return a if fa else b
    return _DTYPES[np.promote_types(a.as_numpy_dtype, b.as_numpy_dtype).name]


class TensorflowCore:
    """Core ops of :class:`~ppl.backends.tensorflow.TensorflowBackend`."""

    # ------------------------------------------------------------------ helpers
    def _dt(self, dtype=None) -> tf.DType:
        if dtype is None:
            return self._float
        if isinstance(dtype, tf.DType):
            return dtype
        return _DTYPES[dtype_name(dtype, self.dtype)]

    def _in(self, x):
        return x if isinstance(x, _Tensor) else self.asarray(x)

    def _ins(self, *args):
        """Tensors of one dtype for an n-ary op. Python scalars take the dtype of the tensors
        next to them when their kind fits (``maximum(x, 0.0)`` keeps ``x``'s dtype); other
        mixes promote as NumPy does."""
        tensors = [a for a in args if isinstance(a, _Tensor)]
        if not tensors:
            args = [self.asarray(a) for a in args]
            tensors = args
        target = tensors[0].dtype
        for t in tensors[1:]:
            target = _promote(target, t.dtype)
        out = []
        for a in args:
            if isinstance(a, _Tensor):
                out.append(a)
                continue
            if isinstance(a, _PY) and not isinstance(a, np.ndarray):
                if isinstance(a, float | np.floating) and not (target.is_floating
                                                                or target.is_complex):
                    target = self._float
                out.append(a)
                continue
            a = self.asarray(a)
            target = _promote(target, a.dtype)
            out.append(a)
        return [tf.cast(a, target) if isinstance(a, _Tensor) and a.dtype != target
                else (a if isinstance(a, _Tensor) else tf.constant(a, dtype=target))
                for a in out]

    def _ew(self, fn, *args):
        return fn(*self._ins(*args))

    def float_operand(self, x):
        """``x`` as a floating tensor: integer and boolean input becomes ``self.dtype``."""
        x = self._in(x)
        return x if x.dtype.is_floating or x.dtype.is_complex else tf.cast(x, self._float)

    def float_operands(self, *args):
        """Operands of an n-ary floating op: with a floating tensor among them, the others keep
        their kind (Python scalars stay weak, :meth:`_ins` promotes); else all become
        ``self.dtype``."""
        if any(isinstance(a, _Tensor) and (a.dtype.is_floating or a.dtype.is_complex)
               for a in args):
            return args
        return [self.float_operand(a) for a in args]

    def _on_device(self):
        return tf.device(self._device_name) if self._device_name else _NULL

    # ------------------------------------------------------------------ conversion
    def asarray(self, x, dtype=None):
        if isinstance(x, _Tensor):
            if dtype is not None:
                dt = self._dt(dtype)
                if x.dtype != dt:
                    x = tf.cast(x, dt)
            return x
        if isinstance(x, list | tuple) and any(isinstance(v, _Tensor | list | tuple)
                                               for v in x):
            return tf.stack([self.asarray(v, dtype) for v in x])
        a = np.asarray(x)
        if a.dtype.kind not in "biufc":
            raise TypeError(
                f"asarray: cannot convert an object of type {type(x).__name__} to a tensor; "
                "pass numbers, nested lists of numbers, NumPy arrays or tensors.")
        if dtype is not None:
            dt = self._dt(dtype)
        elif a.dtype.kind == "f":
            dt = self._float
        elif a.dtype.kind in "iu" and not isinstance(x, np.ndarray | np.generic):
            dt = tf.int64
        else:
            dt = _DTYPES.get(a.dtype.name) or tf.dtypes.as_dtype(a.dtype)
        with self._on_device():
            return tf.constant(a.astype(dt.as_numpy_dtype, copy=False), dtype=dt)

    def to_numpy(self, x):
        if isinstance(x, _Tensor):
            return np.asarray(x.numpy())
        return np.asarray(x)

    def is_array(self, x): return isinstance(x, _Tensor)

    def is_tracer(self, x):
        """Whether ``x`` is a symbolic tensor of a graph being traced (``jit``, ``vmap``,
        control flow), whose values cannot be read."""
        return isinstance(x, _Tensor) and tf.is_symbolic_tensor(x)

    def shape(self, x):
        if isinstance(x, _Tensor):
            return tuple(x.shape.as_list())
        return tuple(np.shape(x))

    def ndim(self, x):
        return x.shape.rank if isinstance(x, _Tensor) else np.ndim(x)

    def size(self, x):
        return math.prod(self.shape(x))

    def dtype_of(self, x):
        return self._in(x).dtype.name

    def astype(self, x, dtype): return tf.cast(self._in(x), self._dt(dtype))

    def item(self, x):
        return x.numpy().item() if isinstance(x, _Tensor) else np.asarray(x).item()

    # ------------------------------------------------------------------ creation
    def zeros(self, shape, dtype=None):
        with self._on_device():
            return tf.zeros(_shape(shape), self._dt(dtype))

    def ones(self, shape, dtype=None):
        with self._on_device():
            return tf.ones(_shape(shape), self._dt(dtype))

    def full(self, shape, fill_value, dtype=None):
        """A new array of ``fill_value``; without ``dtype`` the kind follows ``fill_value``."""
        fill = self.asarray(fill_value, dtype)
        with self._on_device():
            return tf.broadcast_to(fill, _shape(shape))

    def arange(self, start, stop=None, step=1, dtype=None):
        if stop is None:
            start, stop = 0, start
        if dtype is None and all(isinstance(v, int | np.integer) for v in (start, stop, step)):
            dtype = "int64"
        a = np.arange(start, stop, step, dtype=self._dt(dtype).as_numpy_dtype)
        with self._on_device():
            return tf.constant(a)

    def linspace(self, start, stop, num, dtype=None):
        with self._on_device():
            return tf.constant(np.linspace(start, stop, int(num)), dtype=self._dt(dtype))

    def eye(self, n, m=None, dtype=None):
        with self._on_device():
            return tf.eye(int(n), None if m is None else int(m), dtype=self._dt(dtype))

    def zeros_like(self, x, dtype=None):
        return tf.zeros_like(self._in(x), None if dtype is None else self._dt(dtype))

    def ones_like(self, x, dtype=None):
        return tf.ones_like(self._in(x), None if dtype is None else self._dt(dtype))

    # ------------------------------------------------------------------ elementwise
    # (floating ops get floating tensors from the float policy, common/dtypes.py)
    abs = _unary(tf.abs)
    exp = _unary(tf.exp)
    log = _unary(tf.math.log)
    sqrt = _unary(tf.sqrt)
    sin = _unary(tf.sin)
    cos = _unary(tf.cos)
    tan = _unary(tf.tan)
    tanh = _unary(tf.tanh)
    sinh = _unary(tf.sinh)
    cosh = _unary(tf.cosh)
    asin = _unary(tf.asin)
    acos = _unary(tf.acos)
    atan = _unary(tf.atan)
    asinh = _unary(tf.asinh)
    acosh = _unary(tf.acosh)
    atanh = _unary(tf.atanh)
    reciprocal = _unary(tf.math.reciprocal)
    isfinite = _unary(lambda x: tf.math.is_finite(x) if x.dtype.is_floating
                      else tf.ones_like(x, tf.bool))
    isnan = _unary(lambda x: tf.math.is_nan(x) if x.dtype.is_floating
                   else tf.zeros_like(x, tf.bool))
    isinf = _unary(lambda x: tf.math.is_inf(x) if x.dtype.is_floating
                   else tf.zeros_like(x, tf.bool))
    square = _unary(tf.square)
    negative = _unary(tf.negative)
    logical_not = _unary(lambda x: tf.logical_not(tf.cast(x, tf.bool)))

    def _keep_int(self, fn, x):
        x = self._in(x)
        return x if x.dtype.is_integer or x.dtype == tf.bool else fn(x)

    def floor(self, x): return self._keep_int(tf.floor, x)
    def ceil(self, x): return self._keep_int(tf.math.ceil, x)
    def round(self, x): return self._keep_int(tf.round, x)   # half to even, as NumPy

    def sign(self, x):
        x = self._in(x)
        return tf.cast(x, tf.int8) if x.dtype == tf.bool else tf.sign(x)

    def atan2(self, y, x): return self._ew(tf.atan2, y, x)
    def maximum(self, x, y): return self._ew(tf.maximum, x, y)
    def minimum(self, x, y): return self._ew(tf.minimum, x, y)
    def pow(self, x, y): return self._ew(tf.pow, x, y)
    def add(self, x, y): return self._ew(tf.add, x, y)
    def subtract(self, x, y): return self._ew(tf.subtract, x, y)
    def multiply(self, x, y): return self._ew(tf.multiply, x, y)
    def equal(self, x, y): return self._ew(tf.equal, x, y)
    def not_equal(self, x, y): return self._ew(tf.not_equal, x, y)
    def less(self, x, y): return self._ew(tf.less, x, y)
    def less_equal(self, x, y): return self._ew(tf.less_equal, x, y)
    def greater(self, x, y): return self._ew(tf.greater, x, y)
    def greater_equal(self, x, y): return self._ew(tf.greater_equal, x, y)
    def divide(self, x, y): return self._ew(tf.truediv, x, y)

    def logical_and(self, x, y):
        return tf.logical_and(tf.cast(self._in(x), tf.bool), tf.cast(self._in(y), tf.bool))

    def logical_or(self, x, y):
        return tf.logical_or(tf.cast(self._in(x), tf.bool), tf.cast(self._in(y), tf.bool))

    def where(self, condition, x, y):
        x, y = self._ins(x, y)
        return tf.where(tf.cast(self._in(condition), tf.bool), x, y)

    def clip(self, x, min=None, max=None):
        x = self._in(x)
        if min is not None:
            x = self.maximum(x, min)
        if max is not None:
            x = self.minimum(x, max)
        return x

    # ------------------------------------------------------------------ reductions
    def _red(self, fn, x, axis, keepdims, count_bools=True):
        x = self._in(x)
        if count_bools and x.dtype == tf.bool:
            x = tf.cast(x, tf.int64)
        return fn(x, axis=_axis(axis), keepdims=keepdims)

    def sum(self, x, axis=None, keepdims=False):
        return self._red(tf.reduce_sum, x, axis, keepdims)

    def prod(self, x, axis=None, keepdims=False):
        return self._red(tf.reduce_prod, x, axis, keepdims)

    def max(self, x, axis=None, keepdims=False):
        return self._red(tf.reduce_max, x, axis, keepdims, False)

    def min(self, x, axis=None, keepdims=False):
        return self._red(tf.reduce_min, x, axis, keepdims, False)

    def mean(self, x, axis=None, keepdims=False):
        return tf.reduce_mean(x, axis=_axis(axis), keepdims=keepdims)

    def all(self, x, axis=None, keepdims=False):
        return tf.reduce_all(tf.cast(self._in(x), tf.bool), axis=_axis(axis), keepdims=keepdims)

    def any(self, x, axis=None, keepdims=False):
        return tf.reduce_any(tf.cast(self._in(x), tf.bool), axis=_axis(axis), keepdims=keepdims)

    def _arg(self, fn, x, axis, keepdims):
        x = self._in(x)
        if x.dtype == tf.bool:
            x = tf.cast(x, tf.int8)
        if axis is None:
            out = fn(tf.reshape(x, (-1,)), axis=0, output_type=tf.int64)
            return tf.reshape(out, (1,) * x.shape.rank) if keepdims else out
        out = fn(x, axis=axis, output_type=tf.int64)
        return tf.expand_dims(out, axis) if keepdims else out

    def argmax(self, x, axis=None, keepdims=False): return self._arg(tf.argmax, x, axis, keepdims)
    def argmin(self, x, axis=None, keepdims=False): return self._arg(tf.argmin, x, axis, keepdims)

    def _along(self, x, axis):
        x = self._in(x)
        return (tf.reshape(x, (-1,)), 0) if axis is None else (x, axis)

    def cumsum(self, x, axis=0):
        x, axis = self._along(x, axis)
        return tf.cumsum(tf.cast(x, tf.int64) if x.dtype == tf.bool else x, axis=axis)

    def cumprod(self, x, axis=0):
        x, axis = self._along(x, axis)
        return tf.math.cumprod(tf.cast(x, tf.int64) if x.dtype == tf.bool else x, axis=axis)

    def argsort(self, x, axis=-1):
        """Stable ascending order along ``axis``, NaN last (as NumPy)."""
        x, axis = self._along(x, axis)
        if x.dtype == tf.bool:
            x = tf.cast(x, tf.int8)
        elif x.dtype.is_floating:
            x = tf.where(tf.math.is_nan(x), tf.constant(np.inf, x.dtype), x)
        return tf.cast(tf.argsort(x, axis=axis, stable=True), tf.int64)

    def sort(self, x, axis=-1):
        x, axis = self._along(x, axis)
        return self.take_along_axis(x, self.argsort(x, axis), axis)


class _Null:
    def __enter__(self): return None
    def __exit__(self, *exc): return False


_NULL = _Null()
