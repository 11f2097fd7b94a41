"""The numpy backend: NumPy arrays, ``autograd`` for derivatives, eager control flow.

* ``grad``/``value_and_grad`` are autograd's reverse mode; gradients flow through Python loops,
  so ``scan``/``fori_loop`` (eager loops here) are differentiable.
* ``vmap`` loops over the mapped axis and stacks; ``jit`` is the identity (nothing compiles).
* Random keys are two ``uint64`` words of key material for NumPy's counter-based Philox
  generator: every draw builds ``Generator(Philox(key=key))``; no global state is touched.
* Only ``device=None`` or ``"cpu"`` is accepted.
"""

from __future__ import annotations

import autograd.numpy as anp
import autograd.scipy.special as asp
import numpy as np
from autograd.core import make_vjp
from autograd.extend import vspace
from autograd.tracer import Box, getval

from ppl.backends import _autograd_prims as prims
from ppl.backends import tree
from ppl.backends.base import Backend

__all__ = ["NumpyBackend"]


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def _unbox_tree(t):
    return tree.map(getval, t)


class NumpyBackend(Backend):
    """NumPy + autograd; eager, float32 or float64. See the module docstring."""

    name = "numpy"
    compiles = False
    vmap_while_loop = False

    def __init__(self, dtype="float32", device=None):
        if device not in (None, "cpu"):
            raise ValueError(
                f"The numpy backend runs on the CPU only; got device={device!r}. "
                "Use device=None or 'cpu', or a backend with accelerator support (jax, torch)."
            )
        super().__init__(dtype=dtype, device=device)
        self._np_dtype = np.dtype(dtype)

    # ------------------------------------------------------------------ conversion
    def _dt(self, dtype):
        return self._np_dtype if dtype is None else np.dtype(dtype)

    def asarray(self, x, dtype=None):
        if isinstance(x, Box):
            return x if dtype is None else self.astype(x, dtype)
        arr = np.asarray(x, dtype=None if dtype is None else np.dtype(dtype))
        if arr.dtype.kind == "f" and dtype is None and arr.dtype != self._np_dtype:
            return arr.astype(self._np_dtype)
        if arr.dtype.kind in "OUS":
            raise TypeError(
                f"expected numbers, got an object of type {type(x).__name__} "
                f"(array dtype {arr.dtype})."
            )
        return arr

    def to_numpy(self, x):
        return np.asarray(_unbox_tree(x) if not isinstance(x, Box) else getval(x))

    def is_array(self, x):
        return isinstance(x, (np.ndarray, np.generic, Box))

    def shape(self, x):
        return tuple(anp.shape(x))

    def dtype_of(self, x):
        return str(np.result_type(getval(x)))

    def astype(self, x, dtype):
        dtype = np.dtype(dtype)
        if isinstance(x, Box):
            return x.astype(dtype) if dtype.kind == "f" else np.asarray(getval(x)).astype(dtype)
        return np.asarray(x).astype(dtype)

    # ------------------------------------------------------------------ creation
    def zeros(self, shape, dtype=None):
        return np.zeros(shape, self._dt(dtype))

    def ones(self, shape, dtype=None):
        return np.ones(shape, self._dt(dtype))

    def full(self, shape, fill_value, dtype=None):
        if dtype is None and isinstance(fill_value, (bool, int, np.integer, np.bool_)):
            dtype = np.bool_ if isinstance(fill_value, (bool, np.bool_)) else np.int64
        return np.full(shape, getval(fill_value), self._dt(dtype))

    def arange(self, start, stop=None, step=1, dtype=None):
        out = np.arange(start, stop, step) if stop is not None else np.arange(start)
        if dtype is not None:
            return out.astype(dtype)
        return out.astype(self._np_dtype) if out.dtype.kind == "f" else out.astype(np.int64)

    def linspace(self, start, stop, num, dtype=None):
        return np.linspace(start, stop, num, dtype=self._dt(dtype))

    def eye(self, n, m=None, dtype=None):
        return np.eye(n, m, dtype=self._dt(dtype))

    def zeros_like(self, x, dtype=None):
        return np.zeros(anp.shape(x), dtype or np.result_type(getval(x)))

    def ones_like(self, x, dtype=None):
        return np.ones(anp.shape(x), dtype or np.result_type(getval(x)))

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
        if not (isinstance(x, Box) or isinstance(y, Box)):
            return np.where(condition, x, y)
        shape = np.broadcast_shapes(anp.shape(condition), anp.shape(x), anp.shape(y))
        return anp.where(np.broadcast_to(getval(condition), shape),
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
        return np.argmax(getval(x), axis=axis, keepdims=keepdims)

    def argmin(self, x, axis=None, keepdims=False):
        return np.argmin(getval(x), axis=axis, keepdims=keepdims)

    def all(self, x, axis=None, keepdims=False):
        return np.all(getval(x), axis=_axis(axis), keepdims=keepdims)

    def any(self, x, axis=None, keepdims=False):
        return np.any(getval(x), axis=_axis(axis), keepdims=keepdims)

    def cumsum(self, x, axis=0):
        return anp.cumsum(x, axis=axis)

    def cumprod(self, x, axis=0):
        return prims.cumprod(x, axis)

    def sort(self, x, axis=-1):
        # argsort + gather, since autograd differentiates np.sort of 1-D arrays only.
        return self.take_along_axis(x, np.argsort(getval(x), axis=axis), axis)

    def argsort(self, x, axis=-1):
        return np.argsort(getval(x), axis=axis)

    # ------------------------------------------------------------------ shapes
    def reshape(self, x, shape):
        return anp.reshape(x, shape)

    def broadcast_to(self, x, shape):
        # Add the leading axes first: autograd's VJP of broadcast_to cannot handle them.
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

    def diagonal(self, x, offset=0, axis1=-2, axis2=-1):
        # Fancy indexing, since autograd differentiates np.diagonal only for axes (-1, -2).
        m = anp.moveaxis(x, (axis1, axis2), (-2, -1))
        rows, cols = anp.shape(m)[-2:]
        n = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
        i = np.arange(n)
        return m[..., i + max(-offset, 0), i + max(offset, 0)]

    def take(self, x, indices, axis=None):
        # Fancy indexing, since autograd has no VJP for np.take.
        idx = np.asarray(getval(indices))
        if axis is None:
            return anp.reshape(x, (-1,))[idx]
        axis = axis % anp.ndim(x)
        picked = anp.moveaxis(x, axis, 0)[idx]
        lead = tuple(range(idx.ndim))
        return anp.moveaxis(picked, lead, tuple(a + axis for a in lead))

    def take_along_axis(self, x, indices, axis):
        # Fancy indexing with open grids, since autograd has no VJP for take_along_axis.
        idx = np.asarray(getval(indices))
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

    # ------------------------------------------------------------------ linear algebra
    def matmul(self, a, b):
        return anp.matmul(a, b)

    def einsum(self, subscripts, *operands):
        return anp.einsum(subscripts, *operands)

    def cholesky(self, a):
        return anp.linalg.cholesky(a)

    def solve_triangular(self, a, b, lower=True):
        return prims.solve_triangular(a, b, lower=lower)

    def solve(self, a, b):
        return anp.linalg.solve(a, b)

    def inv(self, a):
        return anp.linalg.inv(a)

    def slogdet(self, a):
        return anp.linalg.slogdet(a)

    # ------------------------------------------------------------------ special
    log1p = staticmethod(anp.log1p)
    expm1 = staticmethod(anp.expm1)
    gammaln = staticmethod(asp.gammaln)
    digamma = staticmethod(asp.digamma)
    erf = staticmethod(asp.erf)
    erfc = staticmethod(asp.erfc)
    erfinv = staticmethod(asp.erfinv)
    ndtr = staticmethod(prims.ndtr)
    ndtri = staticmethod(prims.ndtri)
    log_ndtr = staticmethod(prims.log_ndtr)
    xlogy = staticmethod(prims.xlogy)
    xlog1py = staticmethod(prims.xlog1py)
    gammainc = staticmethod(asp.gammainc)
    gammaincc = staticmethod(asp.gammaincc)
    betainc = staticmethod(asp.betainc)

    def polygamma(self, n, x):
        out = asp.polygamma(n, x)
        dt = np.result_type(getval(x))
        return self.astype(out, dt) if dt.kind == "f" and np.result_type(getval(out)) != dt \
            else out

    def logsumexp(self, x, axis=None, keepdims=False):
        return asp.logsumexp(x, axis=_axis(axis), keepdims=keepdims)

    def sigmoid(self, x):
        return asp.expit(x)

    def logit(self, x):
        return asp.logit(x)

    def softplus(self, x):
        return anp.logaddexp(0.0, x)

    # ------------------------------------------------------------------ autodiff and transforms
    def value_and_grad(self, fun, argnums=0, has_aux=False):
        multiple = isinstance(argnums, (tuple, list))
        nums = tuple(argnums) if multiple else (argnums,)

        def wrapped(*args, **kwargs):
            aux_box = []

            def f(diff_args):
                full = list(args)
                for i, v in zip(nums, diff_args):
                    full[i] = v
                out = fun(*full, **kwargs)
                if has_aux:
                    out, aux = out
                    aux_box.append(aux)
                return out

            vjp, value = make_vjp(f, tuple(args[i] for i in nums))
            grads = vjp(vspace(value).ones())
            grads = tuple(grads) if multiple else grads[0]
            if has_aux:
                return (value, _unbox_tree(aux_box[0])), grads
            return value, grads

        return wrapped

    def grad(self, fun, argnums=0, has_aux=False):
        vg = self.value_and_grad(fun, argnums=argnums, has_aux=has_aux)

        def wrapped(*args, **kwargs):
            (value, g) = vg(*args, **kwargs)
            return (g, value[1]) if has_aux else g

        return wrapped

    def vmap(self, fun, in_axes=0, out_axes=0):
        def wrapped(*args):
            axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
            if len(axes) != len(args):
                raise ValueError(
                    f"ppl.ops.vmap: in_axes has {len(axes)} entries for {len(args)} arguments."
                )
            sizes = {anp.shape(leaf)[ax] for a, ax in zip(args, axes) if ax is not None
                     for leaf in tree.leaves(a)}
            if len(sizes) != 1:
                raise ValueError(
                    f"ppl.ops.vmap: mapped axes must have one common size, got {sorted(sizes)}."
                )
            (n,) = sizes
            outs = []
            for i in range(n):
                call = [a if ax is None else tree.map(
                    lambda x, ax=ax, i=i: anp.take(x, i, axis=ax), a)
                    for a, ax in zip(args, axes)]
                outs.append(fun(*call))
            return tree.map(lambda *ys: anp.stack(ys, axis=out_axes), *outs)

        return wrapped

    def stop_gradient(self, x):
        return getval(x)

    # ------------------------------------------------------------------ random
    def random_key(self, seed):
        return np.random.SeedSequence(int(seed)).generate_state(2, np.uint64)

    def _gen(self, key):
        key = np.asarray(getval(key))
        if key.shape != (2,) or key.dtype != np.uint64:
            raise TypeError(
                f"expected a key from ppl.random.key / ppl.random.split (uint64[2]), got an "
                f"array of dtype {key.dtype} and shape {key.shape}. Make one with "
                "ppl.random.key(seed)."
            )
        return np.random.Generator(np.random.Philox(key=key))

    def random_split(self, key, num=2):
        return self._gen(key).integers(0, 2**64 - 1, size=(int(num), 2), dtype=np.uint64,
                                       endpoint=True)

    def random_fold_in(self, key, data):
        words = [int(w) for w in np.asarray(key)] + [int(data) & (2**64 - 1)]
        return np.random.SeedSequence(words).generate_state(2, np.uint64)

    def random_uniform(self, key, shape=(), dtype=None, minval=0.0, maxval=1.0):
        u = self._gen(key).random(tuple(shape), dtype=self._dt(dtype))
        return u if (minval, maxval) == (0.0, 1.0) else minval + (maxval - minval) * u

    def random_normal(self, key, shape=(), dtype=None):
        return self._gen(key).standard_normal(tuple(shape), dtype=self._dt(dtype))

    def random_gamma(self, key, a, shape=None, dtype=None):
        shape = self._shape_of(shape, a)
        dt = self._dt(dtype)
        noise = self._gen(key).standard_gamma(np.broadcast_to(getval(a), shape)).astype(dt)
        return prims.standard_gamma(a, noise) if isinstance(a, Box) else noise

    def random_poisson(self, key, lam, shape=None, dtype=None):
        shape = self._shape_of(shape, lam)
        out = self._gen(key).poisson(np.broadcast_to(getval(lam), shape))
        return out.astype(dtype or np.int64)

    def random_randint(self, key, shape, minval, maxval, dtype=None):
        return self._gen(key).integers(minval, maxval, size=tuple(shape),
                                       dtype=dtype or np.int64)

    def random_binomial(self, key, n, p, shape=None, dtype=None):
        shape = self._shape_of(shape, n, p)
        out = self._gen(key).binomial(np.broadcast_to(getval(n), shape).astype(np.int64),
                                      np.broadcast_to(getval(p), shape))
        return out.astype(dtype or self._np_dtype)

