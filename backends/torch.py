"""The PyTorch backend: eager ``torch`` ops, ``torch.func`` autodiff and seeded generators.

Arrays are ``torch.Tensor``; derivatives and batching come from ``torch.func`` (``grad``,
``grad_and_value``, ``vmap``), so every op here is written out-of-place and works under those
transforms. Random keys are host-side ``int64`` tensors of shape ``(2,)``; each sampler seeds a
fresh ``torch.Generator`` from the key, so no global random state is read or written.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

from ppl.backends import _torch_jit as _jit
from ppl.backends import _torch_random as _rnd
from ppl.backends import tree
from ppl.backends._torch_special import betainc as _betainc
from ppl.backends.base import Backend

__all__ = ["TorchBackend"]

_Tensor = torch.Tensor
_NAMES = {
    "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
    "float64": torch.float64, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
    "int64": torch.int64, "uint8": torch.uint8, "bool": torch.bool,
    "complex64": torch.complex64, "complex128": torch.complex128,
}
_DTYPE_NAMES = {v: k for k, v in _NAMES.items()}
_INDEX_CACHE: dict = {}


def _shape(shape) -> tuple:
    if shape is None:
        return ()
    if isinstance(shape, int | np.integer):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def _static_index(index):
    """A hashable stand-in for an index made of ints, slices, ``...`` and ``None``; ``None``
    when the index holds arrays (those are not cached)."""
    parts = index if isinstance(index, tuple) else (index,)
    key = []
    for p in parts:
        if isinstance(p, slice):
            key.append(("s", p.start, p.stop, p.step))
        elif p is None or p is Ellipsis or isinstance(p, int):
            key.append(p)
        else:
            return None
    return tuple(key)


class TorchBackend(Backend):
    """PyTorch adapter of the :class:`~ppl.backends.base.Backend` protocol.

    * ``jit`` traces a pure array function once per input signature into a TorchScript graph
      (:mod:`ppl.backends._torch_jit`; ``PPL_TORCH_JIT=inductor`` uses ``torch.compile``
      instead, ``PPL_TORCH_JIT=fx`` runs the traced graph as Python, ``PPL_TORCH_JIT=none``
      turns tracing off); functions with data-dependent Python
      control flow or random draws run eagerly. ``compiles = False``: loops stay Python loops.
    * ``grad``/``value_and_grad``/``vmap`` are ``torch.func``'s. Control flow is the eager
      Python loops of the base class; ``while_loop``, ``cond`` and ``fori_loop`` call
      ``bool``/``int`` on their predicates, which works eagerly and under ``grad`` but not under
      ``vmap`` on a batched predicate (``vmap_while_loop = False``).
    * Random keys (:mod:`ppl.backends._torch_random`) are ``int64`` tensors of shape ``(2,)``
      kept on the CPU (key material, not data); draws are created on ``device`` by a fresh
      ``torch.Generator`` seeded from the key, so the same key gives the same draw (on the same
      device type). Samplers work under ``vmap`` over keys (one draw per key) and, as in JAX,
      an unbatched key inside ``vmap`` gives the same draw to every batch member.
      (``vmap`` passes ``randomness="different"``, which only concerns torch's global RNG.)
    * ``random_gamma`` is ``torch._standard_gamma`` with that generator: reparameterised
      (implicit gradient in ``a``, Figurnov et al. 2018), also under ``torch.func.grad``.
    * ``cholesky`` returns NaNs for a matrix that is not positive definite (as JAX does) instead
      of raising, so a sampler sees a NaN log-density (a divergence) rather than an exception.
    * ``betainc`` (torch has none) is a continued fraction evaluated with torch ops;
      ``gammainc``/``gammaincc``/``betainc`` are differentiable in ``x`` only.
    """

    name = "torch"
    compiles = False
    vmap_while_loop = False

    def __init__(self, dtype: str = "float32", device: str | None = None):
        super().__init__(dtype=dtype, device=device)
        self._float = _NAMES[dtype]
        self._device = None if device is None else torch.device(device)
        self._gen_device = self._device or torch.device("cpu")

    # ------------------------------------------------------------------ helpers
    def _dt(self, dtype):
        """A ``torch.dtype`` from a name, NumPy/torch dtype or Python type; ``None`` -> float."""
        if dtype is None or dtype is float:
            return self._float
        if isinstance(dtype, torch.dtype):
            return dtype
        if dtype is int:
            return torch.int64
        if dtype is bool:
            return torch.bool
        name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
        if name not in _NAMES:
            raise TypeError(f"dtype must be one of {sorted(_NAMES)}, got {dtype!r}.")
        return _NAMES[name]

    def _t(self, x):
        """``x`` as a tensor (tensors pass through untouched)."""
        return x if isinstance(x, _Tensor) else self.asarray(x)

    def _s(self, x):
        """``x`` as a tensor unless it is a tensor or a Python number (torch takes those)."""
        return x if isinstance(x, _Tensor | bool | int | float) else self.asarray(x)

    def _f(self, x):
        """``x`` as a floating tensor (integer and boolean input goes to ``self.dtype``)."""
        if not isinstance(x, _Tensor):
            x = self.asarray(x)
        if x.is_floating_point() or x.is_complex():
            return x
        return x.to(self._float)

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
        if isinstance(x, _Tensor):
            if torch._C._are_functorch_transforms_active():
                # Under torch.func.grad the values are readable once unwrapped.
                ft = torch._C._functorch
                while ft.is_functorch_wrapped_tensor(x) and not ft.is_batchedtensor(x):
                    x = ft.get_unwrapped(x)
                with torch._C._DisableFuncTorch():
                    return x.detach().cpu().numpy().copy()
            return x.detach().cpu().numpy()
        return np.asarray(x)

    def is_array(self, x):
        return isinstance(x, _Tensor)

    def is_tracer(self, x):
        """Whether ``x`` is batched by an enclosing ``vmap`` (its values cannot be read);
        under ``grad`` alone values stay readable."""
        if not (isinstance(x, _Tensor) and torch._C._are_functorch_transforms_active()):
            return False
        ft = torch._C._functorch
        while ft.is_functorch_wrapped_tensor(x):
            if ft.is_batchedtensor(x):
                return True
            x = ft.get_unwrapped(x)
        return False

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
        x = self._t(x)
        return torch.zeros_like(x, dtype=None if dtype is None else self._dt(dtype))

    def ones_like(self, x, dtype=None):
        x = self._t(x)
        return torch.ones_like(x, dtype=None if dtype is None else self._dt(dtype))

    def full_like(self, x, fill_value, dtype=None):
        x = self._t(x)
        if isinstance(fill_value, _Tensor):
            return self.full(x.shape, fill_value, dtype or x.dtype)
        return torch.full_like(x, fill_value, dtype=None if dtype is None else self._dt(dtype))

    # ------------------------------------------------------------------ elementwise
    def abs(self, x): return torch.abs(self._t(x))
    def exp(self, x): return torch.exp(self._f(x))
    def log(self, x): return torch.log(self._f(x))
    def sqrt(self, x): return torch.sqrt(self._f(x))
    def sin(self, x): return torch.sin(self._f(x))
    def cos(self, x): return torch.cos(self._f(x))
    def tan(self, x): return torch.tan(self._f(x))
    def tanh(self, x): return torch.tanh(self._f(x))
    def sinh(self, x): return torch.sinh(self._f(x))
    def cosh(self, x): return torch.cosh(self._f(x))
    def asin(self, x): return torch.asin(self._f(x))
    def acos(self, x): return torch.acos(self._f(x))
    def atan(self, x): return torch.atan(self._f(x))
    def atan2(self, y, x): return torch.atan2(self._f(y), self._f(x))
    def asinh(self, x): return torch.asinh(self._f(x))
    def acosh(self, x): return torch.acosh(self._f(x))
    def atanh(self, x): return torch.atanh(self._f(x))
    def floor(self, x): return torch.floor(self._t(x))
    def ceil(self, x): return torch.ceil(self._t(x))
    def round(self, x): return torch.round(self._t(x))
    def sign(self, x): return torch.sign(self._t(x))

    def maximum(self, x, y):
        if isinstance(y, float) and isinstance(x, _Tensor) and x.is_floating_point():
            return torch.clamp(x, min=y)
        return torch.maximum(self._t(x), self._t(y))

    def minimum(self, x, y):
        if isinstance(y, float) and isinstance(x, _Tensor) and x.is_floating_point():
            return torch.clamp(x, max=y)
        return torch.minimum(self._t(x), self._t(y))

    def isfinite(self, x): return torch.isfinite(self._t(x))
    def isnan(self, x): return torch.isnan(self._t(x))
    def isinf(self, x): return torch.isinf(self._t(x))
    def square(self, x): return torch.square(self._t(x))
    def reciprocal(self, x): return torch.reciprocal(self._f(x))
    def logical_and(self, x, y): return torch.logical_and(self._t(x), self._t(y))
    def logical_or(self, x, y): return torch.logical_or(self._t(x), self._t(y))
    def logical_not(self, x): return torch.logical_not(self._t(x))

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

    def cumsum(self, x, axis=0):
        x = self._t(x)
        return torch.cumsum(x.reshape(-1) if axis is None else x, dim=0 if axis is None else axis)

    def cumprod(self, x, axis=0):
        x = self._t(x)
        return torch.cumprod(x.reshape(-1) if axis is None else x,
                             dim=0 if axis is None else axis)

    def sort(self, x, axis=-1):
        x = self._t(x)
        if axis is None:
            x, axis = x.reshape(-1), 0
        return torch.sort(x, dim=axis, stable=True).values

    def argsort(self, x, axis=-1):
        x = self._t(x)
        if axis is None:
            x, axis = x.reshape(-1), 0
        return torch.argsort(x, dim=axis, stable=True)

    def mean(self, x, axis=None, keepdims=False):
        return torch.mean(self._f(x), dim=axis, keepdim=keepdims)

    def var(self, x, axis=None, keepdims=False, correction=0):
        return torch.var(self._f(x), dim=axis, correction=correction, keepdim=keepdims)

    def std(self, x, axis=None, keepdims=False, correction=0):
        return torch.std(self._f(x), dim=axis, correction=correction, keepdim=keepdims)

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

    def stack(self, arrays, axis=0):
        return torch.stack([self._t(a) for a in arrays], dim=axis)

    def permute_dims(self, x, axes):
        return torch.permute(self._t(x), tuple(axes))

    def moveaxis(self, x, source, destination):
        return torch.movedim(self._t(x), source, destination)

    def flip(self, x, axis=None):
        x = self._t(x)
        return torch.flip(x, dims=self._all(x, axis) if not isinstance(axis, int) else (axis,))

    def tril(self, x, k=0): return torch.tril(self._t(x), diagonal=k)
    def triu(self, x, k=0): return torch.triu(self._t(x), diagonal=k)

    def diagonal(self, x, offset=0, axis1=-2, axis2=-1):
        return torch.diagonal(self._t(x), offset=offset, dim1=axis1, dim2=axis2)

    def _index(self, i):
        return i if isinstance(i, _Tensor | int) else self.asarray(i, torch.int64)

    def take(self, x, indices, axis=None):
        x, indices = self._t(x), self._index(indices)
        if axis is None:
            return x.reshape(-1)[indices]
        return x[(slice(None),) * (axis % x.ndim) + (indices,)]

    def take_along_axis(self, x, indices, axis):
        return torch.take_along_dim(self._t(x), self._index(indices), dim=axis)

    def _flat_put(self, x, index, value, accumulate):
        """Out-of-place ``x[index] = value`` (or ``+=``) as one ``index_put`` on the flattened
        array; differentiable and batchable under ``torch.func`` (no in-place writes)."""
        key = _static_index(index)
        if key is not None:
            key = (tuple(x.shape), key, x.device)
            flat = _INDEX_CACHE.get(key)
            if flat is None:
                if len(_INDEX_CACHE) > 1024:
                    _INDEX_CACHE.clear()
                flat = torch.arange(x.numel(), device=x.device).reshape(x.shape)[index]
                flat = flat.reshape(-1), flat.shape
                if not _jit.tracing():      # never keep a fake tensor made while tracing
                    _INDEX_CACHE[key] = flat
            flat, shape = flat
        else:
            flat = torch.arange(x.numel(), device=x.device).reshape(x.shape)[index]
            flat, shape = flat.reshape(-1), flat.shape
        value = value.to(x.dtype) if isinstance(value, _Tensor) else \
            torch.as_tensor(value, dtype=x.dtype, device=x.device)
        value = torch.broadcast_to(value, shape).reshape(-1)
        return x.reshape(-1).index_put((flat,), value, accumulate=accumulate).reshape(x.shape)

    def index_update(self, x, index, value):
        x = self._t(x)
        if isinstance(index, list):
            index = self.asarray(index, torch.int64)
        if torch._C._are_functorch_transforms_active():
            return self._flat_put(x, index, value, False)
        y = x.clone()
        y[index] = value
        return y

    def index_add(self, x, index, value):
        """Functional ``x[index] += value``; repeated indices accumulate (as in JAX)."""
        x = self._t(x)
        if isinstance(index, list):
            index = self.asarray(index, torch.int64)
        return self._flat_put(x, index, value, True)

    def matrix_transpose(self, x):
        return torch.transpose(self._t(x), -1, -2)

    def diag(self, v):
        return torch.diag_embed(self._t(v))

    def ravel(self, x):
        return torch.reshape(self._t(x), (-1,))

    # ------------------------------------------------------------------ linear algebra
    def matmul(self, a, b): return torch.matmul(self._t(a), self._t(b))

    def einsum(self, subscripts, *operands):
        return torch.einsum(subscripts, *[self._t(o) for o in operands])

    def cholesky(self, a):
        """Lower Cholesky factor; NaN where ``a`` is not positive definite (as in JAX)."""
        l, info = torch.linalg.cholesky_ex(self._f(a))
        if torch._C._are_functorch_transforms_active() or (
                info.item() != 0 if info.ndim == 0 else bool(info.any())):
            l = torch.where((info == 0)[..., None, None], l, math.nan)
        return l

    def solve_triangular(self, a, b, lower=True):
        a, b = self._f(a), self._f(b)
        if b.ndim == 1:
            return torch.linalg.solve_triangular(a, b[:, None], upper=not lower)[..., 0]
        return torch.linalg.solve_triangular(a, b, upper=not lower)

    def cho_solve(self, c, b, lower=True):
        c, b = self._f(c), self._f(b)
        if b.ndim == 1:
            return torch.cholesky_solve(b[:, None], c, upper=not lower)[..., 0]
        return torch.cholesky_solve(b, c, upper=not lower)

    def solve(self, a, b): return torch.linalg.solve(self._f(a), self._f(b))
    def inv(self, a): return torch.linalg.inv(self._f(a))
    def det(self, a): return torch.linalg.det(self._f(a))

    def slogdet(self, a):
        sign, logabsdet = torch.linalg.slogdet(self._f(a))
        return sign, logabsdet

    # ------------------------------------------------------------------ special
    def log1p(self, x): return torch.log1p(self._f(x))
    def expm1(self, x): return torch.expm1(self._f(x))
    def gammaln(self, x): return torch.special.gammaln(self._f(x))
    def digamma(self, x): return torch.special.digamma(self._f(x))
    def erf(self, x): return torch.special.erf(self._f(x))
    def erfc(self, x): return torch.special.erfc(self._f(x))
    def erfinv(self, x): return torch.special.erfinv(self._f(x))
    def ndtri(self, x): return torch.special.ndtri(self._f(x))
    def ndtr(self, x):
        # 0.5 erfc(-x / sqrt 2): torch.special.ndtr loses the left tail in float32.
        return 0.5 * torch.special.erfc(self._f(x) * -0.7071067811865476)
    def log_ndtr(self, x): return torch.special.log_ndtr(self._f(x))
    def xlogy(self, x, y): return torch.special.xlogy(self._f(x), self._f(y))
    def xlog1py(self, x, y): return torch.special.xlog1py(self._f(x), self._f(y))
    def sigmoid(self, x): return torch.sigmoid(self._f(x))
    def log_sigmoid(self, x): return F.logsigmoid(self._f(x))
    def logit(self, x): return torch.special.logit(self._f(x))

    def logsumexp(self, x, axis=None, keepdims=False):
        x = self._f(x)
        return torch.logsumexp(x, dim=self._all(x, axis), keepdim=keepdims)

    def softplus(self, x):
        x = self._f(x)
        # F.softplus returns x above ``threshold``; pick it where log1p(exp(-x)) < eps.
        return F.softplus(x, threshold=20.0 if x.dtype != torch.float64 else 40.0)

    def polygamma(self, n, x):
        return torch.special.polygamma(int(n), self._f(x))

    def gammainc(self, a, x):
        """Regularised lower incomplete gamma ``P(a, x)`` (differentiable in ``x`` only)."""
        return torch.special.gammainc(self._f(a), self._f(x))

    def gammaincc(self, a, x):
        """Regularised upper incomplete gamma ``Q(a, x)`` (differentiable in ``x`` only)."""
        return torch.special.gammaincc(self._f(a), self._f(x))

    def betainc(self, a, b, x):
        """Regularised incomplete beta ``I_x(a, b)``; differentiable in ``x`` only."""
        x = self._f(x)
        return _betainc(self._f(a).to(x.dtype), self._f(b).to(x.dtype), x)

    # ------------------------------------------------------------------ nn
    def relu(self, x): return torch.relu(self._t(x))
    def silu(self, x): return F.silu(self._f(x))
    def elu(self, x, alpha=1.0): return F.elu(self._f(x), alpha=alpha)
    def celu(self, x, alpha=1.0): return F.celu(self._f(x), alpha=alpha)
    def softsign(self, x): return F.softsign(self._f(x))
    def softmax(self, x, axis=-1): return torch.softmax(self._f(x), dim=axis)
    def log_softmax(self, x, axis=-1): return torch.log_softmax(self._f(x), dim=axis)

    def gelu(self, x, approximate=False):
        return F.gelu(self._f(x), approximate="tanh" if approximate else "none")

    def leaky_relu(self, x, negative_slope=0.01):
        return F.leaky_relu(self._f(x), negative_slope=negative_slope)

    # ------------------------------------------------------------------ autodiff and transforms
    def _float_leaf(self, x):
        if isinstance(x, _Tensor):
            return x
        if isinstance(x, bool | int | float | np.integer | np.floating | np.ndarray):
            return self.asarray(x, self._float if np.asarray(x).dtype.kind in "iub" else None)
        return x

    def _diff_args(self, args, argnums):
        """Python and NumPy numbers at the differentiated positions become float tensors."""
        nums = (argnums,) if isinstance(argnums, int) else argnums
        args = list(args)
        for i in nums:
            if not isinstance(args[i], _Tensor):
                args[i] = tree.map(self._float_leaf, args[i])
        return args

    def grad(self, fun, argnums=0, has_aux=False):
        if argnums == ():   # as jax.grad: no arguments, an empty tuple of gradients
            return lambda *a, **k: ((), fun(*a, **k)[1]) if has_aux else ()
        g = torch.func.grad(fun, argnums=argnums, has_aux=has_aux)

        @functools.wraps(fun)
        def grad_fun(*args, **kwargs):
            return g(*self._diff_args(args, argnums), **kwargs)

        return grad_fun

    def value_and_grad(self, fun, argnums=0, has_aux=False):
        if argnums == ():
            return lambda *a, **k: (fun(*a, **k), ())
        gv = torch.func.grad_and_value(fun, argnums=argnums, has_aux=has_aux)

        @functools.wraps(fun)
        def value_and_grad_fun(*args, **kwargs):
            g, value = gv(*self._diff_args(args, argnums), **kwargs)
            return value, g

        return value_and_grad_fun

    def vmap(self, fun, in_axes=0, out_axes=0):
        in_axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        out_axes = tuple(out_axes) if isinstance(out_axes, list) else out_axes
        vf = torch.func.vmap(fun, in_dims=in_axes, out_dims=out_axes, randomness="different")
        conv = lambda a: self.asarray(a) if isinstance(a, np.ndarray | np.generic) else a

        @functools.wraps(fun)
        def vmapped(*args, **kwargs):
            args = [a if isinstance(a, _Tensor) else tree.map(conv, a) for a in args]
            return vf(*args, **kwargs)

        return vmapped

    def stop_gradient(self, x):
        return x.detach() if isinstance(x, _Tensor) else x

    def jit(self, fun, static_argnums=()):
        mode = os.environ.get("PPL_TORCH_JIT", "script").lower()
        if mode not in ("script", "fx", "inductor", "none"):
            raise ValueError(f"PPL_TORCH_JIT must be 'script', 'fx', 'inductor' or 'none', "
                             f"got {mode!r}.")
        return _jit.TracedFunction(fun, static_argnums, None if mode == "none" else mode)

    @contextlib.contextmanager
    def sampling_scope(self):
        """Intra-op threads ``PPL_TORCH_NUM_THREADS`` (default 1) while a sampler runs.

        A sampler makes hundreds of thousands of calls on small tensors; on those torch's
        thread pool costs more than it gives (a GP's ``tril`` took 60 us with two threads and
        2 us with one, and much longer when other processes hold the cores). The setting is
        process-wide and restored on exit.
        """
        raw = os.environ.get("PPL_TORCH_NUM_THREADS", "1")
        try:
            wanted = int(raw)
        except ValueError:
            wanted = 0
        if wanted < 1:
            raise ValueError(f"PPL_TORCH_NUM_THREADS must be a positive integer, got {raw!r}.")
        before = torch.get_num_threads()
        torch.set_num_threads(wanted)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    # ------------------------------------------------------------------ random
    def _sample_dt(self, dtype, *params):
        if dtype is not None:
            return self._dt(dtype)
        for p in params:
            if isinstance(p, _Tensor) and p.is_floating_point():
                return p.dtype
        return self._float

    def _param(self, p, shape, dt):
        p = self.asarray(p, dt)
        return p if shape is None else torch.broadcast_to(p, _shape(shape))

    def _draw(self, key, kind, shape=(), dtype=None, params=(), ints=()):
        return _rnd.draw(key, params, kind, _shape(shape), ints, self._dt(dtype),
                         self._gen_device)

    def random_key(self, seed):
        if isinstance(seed, _Tensor | np.ndarray):
            seed = seed.item()
        if not isinstance(seed, int | np.integer) or isinstance(seed, bool):
            raise TypeError(f"random.key: seed must be an integer, got {seed!r}.")
        if not -(1 << 63) <= int(seed) < (1 << 64):
            raise ValueError(f"random.key: seed must fit in 64 bits, got {seed}.")
        return _rnd.make_key(int(seed))

    def random_split(self, key, num=2):
        return self._draw(key, "split", ints=(int(num),), dtype=torch.int64)

    def random_fold_in(self, key, data):
        data = int(data) & ((1 << 64) - 1)
        return self._draw(key, "fold_in", ints=(data - (1 << 64) if data >> 63 else data,),
                          dtype=torch.int64)

    def random_uniform(self, key, shape=(), dtype=None, minval=0.0, maxval=1.0):
        u = self._draw(key, "uniform", shape, dtype)
        if not (isinstance(minval, int | float) and isinstance(maxval, int | float)
                and minval == 0.0 and maxval == 1.0):
            minval, maxval = self._t(minval), self._t(maxval)
            u = minval + u * (maxval - minval)
        return u

    def random_normal(self, key, shape=(), dtype=None):
        return self._draw(key, "normal", shape, dtype)

    def random_gamma(self, key, a, shape=None, dtype=None):
        """Standard gamma draws, reparameterised (differentiable in ``a``)."""
        a = self._param(a, shape, self._sample_dt(dtype, a))
        return _rnd.gamma(key, a, self._gen_device)

    def random_poisson(self, key, lam, shape=None, dtype=None):
        """Poisson counts, ``int64`` unless ``dtype`` says otherwise."""
        lam = self._param(lam, shape, self._sample_dt(None, lam))
        draws = self._draw(key, "poisson", lam.shape, lam.dtype, (lam,))
        return draws.to(torch.int64 if dtype is None else self._dt(dtype))

    def random_randint(self, key, shape, minval, maxval, dtype=None):
        dt = torch.int64 if dtype is None else self._dt(dtype)
        if isinstance(minval, _Tensor) or isinstance(maxval, _Tensor):
            lo, hi = self._t(minval).to(self._float), self._t(maxval).to(self._float)
            u = self.random_uniform(key, shape)
            return torch.minimum(torch.floor(lo + u * (hi - lo)), hi - 1).to(dt)
        return self._draw(key, "randint", shape, dt, ints=(int(minval), int(maxval)))

    def random_binomial(self, key, n, p, shape=None, dtype=None):
        """Binomial counts as floats of ``dtype`` (as ``jax.random.binomial``)."""
        dt = self._sample_dt(dtype, p)
        n, p = self._param(n, None, dt), self._param(p, None, dt)
        shape = torch.broadcast_shapes(n.shape, p.shape) if shape is None else _shape(shape)
        n, p = torch.broadcast_to(n, shape), torch.broadcast_to(p, shape)
        return self._draw(key, "binomial", shape, dt, (n, p))

    def random_permutation(self, key, x, axis=0, independent=False):
        if isinstance(x, _Tensor | np.ndarray) and np.ndim(x) > 0:
            return super().random_permutation(key, self._t(x), axis=axis,
                                              independent=independent)
        return self._draw(key, "randperm", dtype=torch.int64, ints=(int(x),))
