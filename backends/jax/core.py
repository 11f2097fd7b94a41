"""jax backend: conversion, creation, elementwise ops, reductions and shapes (``jax.numpy``),
and the helpers the other modules of the folder share (dtype and device handling, argument
conversion that keeps Python scalars weakly typed)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ppl.backends.common.dtypes import dtype_name, parse_device

__all__ = ["JaxCore"]


def enable_x64():
    """Turn on JAX's 64-bit mode (process-wide; JAX has no narrower switch)."""
    if not jax.config.jax_enable_x64:
        jax.config.update("jax_enable_x64", True)


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def _shape(shape):
    if shape is None:
        return None
    if isinstance(shape, int | np.integer):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def to_device(device):
    """``None``, a ``jax.Device``, or a device string (``"cpu"``, ``"gpu"``, ``"cuda:1"``,
    ``"tpu:0"``; ``cuda``/``rocm`` name JAX's ``gpu`` platform) as a ``jax.Device``."""
    if device is None or isinstance(device, jax.Device):
        return device
    platform, index = parse_device(device)
    platform = {"cuda": "gpu", "rocm": "gpu"}.get(platform, platform)
    try:
        devices = jax.devices(platform)
    except RuntimeError as err:
        raise ValueError(
            f"device {device!r} is not available to JAX here ({err}). "
            f"Available devices: {[str(d) for d in jax.devices()]}; pass device=None or 'cpu'."
        ) from None
    i = index or 0
    if i >= len(devices):
        raise ValueError(f"device {device!r}: index {i} is out of range; platform "
                         f"{platform!r} has {len(devices)} device(s) here. Pass device=None "
                         f"or 'cpu'.")
    return devices[i]


def _unary(fn):
    def method(self, x):
        return fn(self._in(x))

    method.__name__ = getattr(fn, "__name__", "op")
    method.__doc__ = f"``{getattr(fn, '__module__', 'jax')}.{method.__name__}``, elementwise."
    return method


def _reduction(fn):
    def method(self, x, axis=None, keepdims=False):
        return fn(self._in(x), axis=_axis(axis), keepdims=keepdims)

    method.__name__ = fn.__name__
    method.__doc__ = f"``jax.numpy.{fn.__name__}`` over ``axis``."
    return method


class JaxCore:
    """Core ops of :class:`~ppl.backends.jax.JaxBackend`, and its argument conversion."""

    # ------------------------------------------------------------------ helpers
    def _dt(self, dtype=None):
        """A concrete NumPy dtype: ``self.dtype`` for ``None``; int64 narrowed without x64."""
        if dtype is None:
            return self._float_dtype
        dt = np.dtype(jnp.dtype(dtype_name(dtype, self.dtype)))
        if dt == np.float64:
            enable_x64()
        return jax.dtypes.canonicalize_dtype(dt)

    def _put(self, a):
        return a if self._device is None else jax.device_put(a, self._device)

    def _in(self, x):
        return x if isinstance(x, jax.Array) else self.asarray(x)

    def float_operand(self, x):
        """``x`` as a floating JAX array: integer/boolean input becomes ``self.dtype`` (JAX
        would otherwise pick its default float, float64 once x64 is on)."""
        x = self._in(x)
        return x if x.dtype.kind in "fc" else x.astype(self._float_dtype)

    def float_operands(self, *args):
        """Operands of an n-ary floating op: as :meth:`_ins`, and all-integer input becomes
        ``self.dtype`` (with a floating operand, promotion already gives a float)."""
        args = self._ins(*args)
        if any(isinstance(a, jax.Array) and a.dtype.kind in "fc" for a in args):
            return args
        return [self.float_operand(a) for a in args]

    def _ins(self, *args):
        """Convert the non-JAX arguments of an n-ary op. Python scalars stay weakly typed next to
        a JAX array of their kind (ints next to any array, floats next to a floating one), so
        ``maximum(x, 0.0)`` keeps ``x``'s dtype; everything else goes through ``asarray``."""
        kinds = [a.dtype.kind for a in args if isinstance(a, jax.Array)]
        weak = (bool, int, float, complex) if ("f" in kinds or "c" in kinds) else (
            (bool, int) if kinds else ())
        return [a if isinstance(a, jax.Array) or type(a) in weak else self.asarray(a)
                for a in args]

    def _ew(self, fn, *args):
        """An elementwise n-ary op with NumPy broadcasting. JAX reports shapes that do not
        broadcast as ``TypeError``; the protocol, like NumPy, as ``ValueError``."""
        args = self._ins(*args)
        try:
            return fn(*args)
        except TypeError:
            np.broadcast_shapes(*(np.shape(a) for a in args))  # ValueError if they do not
            raise

    # ------------------------------------------------------------------ conversion
    def asarray(self, x, dtype=None):
        if isinstance(x, jax.Array):
            return x if dtype is None else x.astype(self._dt(dtype))
        if isinstance(x, bool | int | float | complex | np.ndarray | np.generic):
            # host data: convert with NumPy first (faster than jnp.asarray(x, dtype=...))
            x = np.asarray(x)
            if dtype is not None or x.dtype.kind == "f":
                x = x.astype(self._dt(dtype), copy=False)
            # a transfer, not jnp.asarray: that compiles a program per shape and dtype
            return jax.device_put(x, self._device)
        a = jnp.asarray(x, dtype=None if dtype is None else self._dt(dtype))
        if dtype is None and a.dtype.kind == "f":
            a = a.astype(self._float_dtype)
        return self._put(a)

    def to_numpy(self, x): return np.array(jax.device_get(self._in(x)))
    def is_array(self, x): return isinstance(x, jax.Array)

    def is_tracer(self, x):
        """Whether ``x`` is a ``jit``/``vmap``/``grad`` tracer (conservative: under ``grad``
        alone JAX could still read values, but checks skip them)."""
        return isinstance(x, jax.core.Tracer)

    def shape(self, x): return tuple(x.shape) if isinstance(x, jax.Array) else tuple(np.shape(x))
    def dtype_of(self, x): return jnp.dtype(self._in(x).dtype).name
    def astype(self, x, dtype): return self._in(x).astype(self._dt(dtype))
    def item(self, x): return self._in(x).item()

    # ------------------------------------------------------------------ creation
    def zeros(self, shape, dtype=None):
        return jnp.zeros(shape, dtype=self._dt(dtype), device=self._device)

    def ones(self, shape, dtype=None):
        return jnp.ones(shape, dtype=self._dt(dtype), device=self._device)

    def full(self, shape, fill_value, dtype=None):
        fill = self.asarray(fill_value, dtype)
        return jnp.full(shape, fill, dtype=fill.dtype, device=self._device)

    def arange(self, start, stop=None, step=1, dtype=None):
        if dtype is None and not any(isinstance(v, float | np.floating)
                                     for v in (start, stop, step)):
            return jnp.arange(start, stop, step, device=self._device)
        return jnp.arange(start, stop, step, dtype=self._dt(dtype), device=self._device)

    def linspace(self, start, stop, num, dtype=None):
        return jnp.linspace(start, stop, int(num), dtype=self._dt(dtype), device=self._device)

    def eye(self, n, m=None, dtype=None):
        return jnp.eye(n, m, dtype=self._dt(dtype), device=self._device)

    # ------------------------------------------------------------------ elementwise
    # (floating ops get floating operands from the float policy, common/dtypes.py)
    abs = _unary(jnp.abs)
    exp = _unary(jnp.exp)
    log = _unary(jnp.log)
    sqrt = _unary(jnp.sqrt)
    sin = _unary(jnp.sin)
    cos = _unary(jnp.cos)
    tan = _unary(jnp.tan)
    tanh = _unary(jnp.tanh)
    sinh = _unary(jnp.sinh)
    cosh = _unary(jnp.cosh)
    asin = _unary(jnp.arcsin)
    acos = _unary(jnp.arccos)
    atan = _unary(jnp.arctan)
    asinh = _unary(jnp.arcsinh)
    acosh = _unary(jnp.arccosh)
    atanh = _unary(jnp.arctanh)
    floor = _unary(jnp.floor)
    ceil = _unary(jnp.ceil)
    round = _unary(jnp.round)
    sign = _unary(jnp.sign)
    square = _unary(jnp.square)
    reciprocal = _unary(jnp.reciprocal)
    negative = _unary(jnp.negative)
    isfinite = _unary(jnp.isfinite)
    isnan = _unary(jnp.isnan)
    isinf = _unary(jnp.isinf)
    logical_not = _unary(jnp.logical_not)

    def atan2(self, y, x): return self._ew(jnp.arctan2, y, x)
    def maximum(self, x, y): return self._ew(jnp.maximum, x, y)
    def minimum(self, x, y): return self._ew(jnp.minimum, x, y)
    def pow(self, x, y): return self._ew(jnp.power, x, y)
    def where(self, condition, x, y): return self._ew(jnp.where, condition, x, y)
    def logical_and(self, x, y): return self._ew(jnp.logical_and, x, y)
    def logical_or(self, x, y): return self._ew(jnp.logical_or, x, y)

    def add(self, x, y): return self._ew(jnp.add, x, y)
    def subtract(self, x, y): return self._ew(jnp.subtract, x, y)
    def multiply(self, x, y): return self._ew(jnp.multiply, x, y)
    def divide(self, x, y): return self._ew(jnp.true_divide, x, y)
    def equal(self, x, y): return self._ew(jnp.equal, x, y)
    def not_equal(self, x, y): return self._ew(jnp.not_equal, x, y)
    def less(self, x, y): return self._ew(jnp.less, x, y)
    def less_equal(self, x, y): return self._ew(jnp.less_equal, x, y)
    def greater(self, x, y): return self._ew(jnp.greater, x, y)
    def greater_equal(self, x, y): return self._ew(jnp.greater_equal, x, y)

    def clip(self, x, min=None, max=None):
        x, lo, hi = self._ins(x, 0 if min is None else min, 0 if max is None else max)
        return jnp.clip(x, min=None if min is None else lo, max=None if max is None else hi)

    # ------------------------------------------------------------------ reductions
    sum = _reduction(jnp.sum)
    prod = _reduction(jnp.prod)
    max = _reduction(jnp.max)
    min = _reduction(jnp.min)
    argmax = _reduction(jnp.argmax)
    argmin = _reduction(jnp.argmin)
    all = _reduction(jnp.all)
    any = _reduction(jnp.any)
    mean = _reduction(jnp.mean)

    def var(self, x, axis=None, keepdims=False, correction=0):
        return jnp.var(x, axis=_axis(axis), keepdims=keepdims, ddof=correction)

    def std(self, x, axis=None, keepdims=False, correction=0):
        return jnp.std(x, axis=_axis(axis), keepdims=keepdims, ddof=correction)

    def cumsum(self, x, axis=0): return jnp.cumsum(self._in(x), axis=axis)
    def cumprod(self, x, axis=0): return jnp.cumprod(self._in(x), axis=axis)
    def sort(self, x, axis=-1): return jnp.sort(self._in(x), axis=axis)
    def argsort(self, x, axis=-1): return jnp.argsort(self._in(x), axis=axis)

    # ------------------------------------------------------------------ shapes
    def reshape(self, x, shape):
        x, shape = self._in(x), _shape(shape)
        known = math.prod(d for d in shape if d != -1)
        if (known != x.size) if -1 not in shape else (known == 0 or x.size % known):
            raise ValueError(f"cannot reshape an array of shape {x.shape} (size {x.size}) into "
                             f"shape {shape}.")
        return jnp.reshape(x, shape)

    def broadcast_to(self, x, shape): return jnp.broadcast_to(self._in(x), _shape(shape))
    def expand_dims(self, x, axis): return jnp.expand_dims(self._in(x), _axis(axis))
    def squeeze(self, x, axis=None): return jnp.squeeze(self._in(x), _axis(axis))

    def concat(self, arrays, axis=0):
        arrays = [self._in(a) for a in arrays]
        rest = {a.shape[:axis % a.ndim] + a.shape[axis % a.ndim + 1:] if a.ndim else None
                for a in arrays}
        if len(rest) > 1 or len({a.ndim for a in arrays}) > 1:
            raise ValueError(f"concat along axis {axis} needs arrays whose other dimensions "
                             f"match, got shapes {[a.shape for a in arrays]}.")
        return jnp.concatenate(arrays, axis=axis)

    def stack(self, arrays, axis=0): return jnp.stack([self._in(a) for a in arrays], axis=axis)
    def permute_dims(self, x, axes): return jnp.transpose(self._in(x), tuple(axes))

    def moveaxis(self, x, source, destination):
        return jnp.moveaxis(self._in(x), _axis(source), _axis(destination))

    def flip(self, x, axis=None): return jnp.flip(self._in(x), _axis(axis))
    def tril(self, x, k=0): return jnp.tril(self._in(x), k)
    def triu(self, x, k=0): return jnp.triu(self._in(x), k)

    def take(self, x, indices, axis=None):
        return jnp.take(self._in(x), jnp.asarray(indices), axis=axis)

    def take_along_axis(self, x, indices, axis):
        return jnp.take_along_axis(self._in(x), jnp.asarray(indices), axis=axis)

    def index_update(self, x, index, value): return self._in(x).at[index].set(value)
    def index_add(self, x, index, value): return self._in(x).at[index].add(value)
    def ravel(self, x): return jnp.ravel(self._in(x))
