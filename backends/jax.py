"""The JAX backend: ``jax.numpy``, ``jax.scipy``, ``jax.lax`` and ``jax.random`` behind the
:class:`~ppl.backends.base.Backend` protocol.

Everything compiles (``jit`` is ``jax.jit``), ``vmap`` batches ``while_loop``, and random keys
are JAX's legacy ``uint32[2]`` keys, so they stack, ``vmap`` and ``scan`` like any other array.

>>> import ppl
>>> with ppl.use_backend("jax", dtype="float64") as b:
...     b.dtype_of(b.exp(b.asarray([0.0, 1.0])))
'float64'
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import jax.scipy.special as jsp
import numpy as np

from ppl.backends.base import Backend

__all__ = ["JaxBackend"]


def _enable_x64():
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


def _parse_device(device):
    """``None``, a ``jax.Device``, or ``"cpu"``, ``"gpu"``, ``"cuda:1"``, ``"tpu:0"``..."""
    if device is None or isinstance(device, jax.Device):
        return device
    if not isinstance(device, str):
        raise TypeError(f"device must be a string such as 'cpu' or 'cuda:0', got {device!r}.")
    kind, _, index = device.lower().partition(":")
    platform = {"cuda": "gpu", "rocm": "gpu"}.get(kind, kind)
    try:
        devices = jax.devices(platform)
    except RuntimeError as err:
        raise ValueError(
            f"device {device!r} is not available to JAX here ({err}). "
            f"Available devices: {[str(d) for d in jax.devices()]}; pass device=None or 'cpu'."
        ) from None
    i = int(index) if index.isdigit() else 0
    if (index and not index.isdigit()) or i >= len(devices):
        raise ValueError(
            f"device {device!r}: expected '<platform>' or '<platform>:<index>' with index < "
            f"{len(devices)} for platform {platform!r}."
        )
    return devices[i]


def _wrap(fn, floating):
    if floating:
        def method(self, x):
            return fn(self._float(x))
    else:
        def method(self, x):
            return fn(self._in(x))
    name = getattr(fn, "__name__", "op")
    method.__name__ = name
    method.__doc__ = f"``{getattr(fn, '__module__', 'jax')}.{name}``, elementwise."
    return method


def _same_kind(fn):
    """An elementwise op that keeps integer input integer (``abs``, ``sign``, ...)."""
    return _wrap(fn, floating=False)


def _floating(fn):
    """An elementwise op with a floating result: integer/boolean input becomes ``self.dtype``
    first (JAX would otherwise pick its default float, float64 once x64 is on)."""
    return _wrap(fn, floating=True)


def _reduction(fn):
    def method(self, x, axis=None, keepdims=False):
        return fn(self._in(x), axis=_axis(axis), keepdims=keepdims)

    method.__name__ = fn.__name__
    method.__doc__ = f"``jax.numpy.{fn.__name__}`` over ``axis``."
    return method


def _standard(sampler):
    def method(self, key, shape=(), dtype=None):
        return sampler(key, _shape(shape), self._dt(dtype))

    method.__name__ = f"random_{sampler.__name__}"
    method.__doc__ = f"``jax.random.{sampler.__name__}(key, shape, dtype)``."
    return method


class JaxBackend(Backend):
    """The JAX backend.

    Parameters
    ----------
    dtype
        ``"float32"`` (default) or ``"float64"``. A float64 backend turns on JAX's
        ``jax_enable_x64`` flag when it is constructed; the flag is process-wide, so it also
        applies to float32 backends created before or after.
    device
        ``None`` (JAX's default device), a ``jax.Device``, or ``"cpu"``, ``"gpu"``, ``"cuda"``,
        ``"cuda:1"``, ``"tpu:0"``. Arrays this backend creates are placed there; computations
        follow their inputs, as everywhere in JAX.

    Notes
    -----
    Dtype rules, which keep a float32 backend producing float32 even once x64 is on:

    * Every creation op (``asarray`` of Python/NumPy data, ``zeros``, ``ones``, ``full``,
      float ``arange``, ``linspace``, ``eye``, every random sampler) passes an explicit dtype:
      ``self.dtype`` for floats unless ``dtype`` is given.
    * ``asarray`` casts floating Python/NumPy input to ``self.dtype``; a JAX array (or tracer)
      keeps its dtype unless ``dtype`` is given. Integers and booleans keep their kind; integer
      results are ``int32`` without x64 and ``int64`` with it (``"int64"`` requests are narrowed
      to ``int32`` silently when x64 is off).
    * Ops given Python or NumPy inputs convert them with ``asarray`` first; a Python float next
      to a floating JAX array stays weakly typed, so ``maximum(x, 0.0)`` keeps ``x``'s dtype,
      while ``where(mask, 1.0, 0.0)`` gives ``self.dtype``.
    * An explicit ``dtype="float64"`` request on a float32 backend turns x64 on, so the result
      is really float64.

    With x64 on, a float32 array combined with a *NumPy* float64 scalar or array through a
    Python operator (``x * np.log(2.0)``) is promoted to float64, as in JAX itself: use Python
    floats (``math.log``) or ``ops`` calls in backend-neutral code.
    """

    name = "jax"
    compiles = True
    vmap_while_loop = True

    def __init__(self, dtype: str = "float32", device=None):
        super().__init__(dtype=dtype, device=device)
        self._device = _parse_device(device)
        self._float_dtype = np.dtype(dtype)
        if dtype == "float64":
            _enable_x64()

    # ------------------------------------------------------------------ helpers
    def _dt(self, dtype=None):
        """A concrete NumPy dtype: ``self.dtype`` for ``None``; int64 narrowed without x64."""
        if dtype is None:
            return self._float_dtype
        dt = np.dtype(jnp.dtype(dtype))
        if dt == np.float64:
            _enable_x64()
        return jax.dtypes.canonicalize_dtype(dt)

    def _put(self, a):
        return a if self._device is None else jax.device_put(a, self._device)

    def _in(self, x):
        return x if isinstance(x, jax.Array) else self.asarray(x)

    def _float(self, x):
        x = self._in(x)
        return x if x.dtype.kind in "fc" else x.astype(self._dt())

    def _fins(self, *args):
        """``_ins`` for ops with a floating result: all-integer input becomes ``self.dtype``."""
        args = self._ins(*args)
        if any(isinstance(a, jax.Array) and a.dtype.kind in "fc" for a in args):
            return args
        return [self._float(a) for a in args]

    def _ins(self, *args):
        """Convert the non-JAX arguments of an n-ary op. Python scalars stay weakly typed next to
        a JAX array of their kind (ints next to any array, floats next to a floating one), so
        ``maximum(x, 0.0)`` keeps ``x``'s dtype; everything else goes through ``asarray``."""
        kinds = [a.dtype.kind for a in args if isinstance(a, jax.Array)]
        weak = (bool, int, float, complex) if ("f" in kinds or "c" in kinds) else (
            (bool, int) if kinds else ())
        return [a if isinstance(a, jax.Array) or type(a) in weak else self.asarray(a)
                for a in args]

    def _ew(self, fn, *args, floating=False):
        """An elementwise n-ary op with NumPy broadcasting. JAX reports shapes that do not
        broadcast as ``TypeError``; the protocol, like NumPy, as ``ValueError``."""
        args = self._fins(*args) if floating else self._ins(*args)
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
            return self._put(jnp.asarray(x))
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
    abs = _same_kind(jnp.abs)
    exp = _floating(jnp.exp)
    log = _floating(jnp.log)
    sqrt = _floating(jnp.sqrt)
    sin = _floating(jnp.sin)
    cos = _floating(jnp.cos)
    tan = _floating(jnp.tan)
    tanh = _floating(jnp.tanh)
    sinh = _floating(jnp.sinh)
    cosh = _floating(jnp.cosh)
    asin = _floating(jnp.arcsin)
    acos = _floating(jnp.arccos)
    atan = _floating(jnp.arctan)
    asinh = _floating(jnp.arcsinh)
    acosh = _floating(jnp.arccosh)
    atanh = _floating(jnp.arctanh)
    floor = _same_kind(jnp.floor)
    ceil = _same_kind(jnp.ceil)
    round = _same_kind(jnp.round)
    sign = _same_kind(jnp.sign)
    square = _same_kind(jnp.square)
    reciprocal = _floating(jnp.reciprocal)
    negative = _same_kind(jnp.negative)
    isfinite = _same_kind(jnp.isfinite)
    isnan = _same_kind(jnp.isnan)
    isinf = _same_kind(jnp.isinf)
    logical_not = _same_kind(jnp.logical_not)

    def atan2(self, y, x): return self._ew(jnp.arctan2, y, x, floating=True)
    def maximum(self, x, y): return self._ew(jnp.maximum, x, y)
    def minimum(self, x, y): return self._ew(jnp.minimum, x, y)
    def pow(self, x, y): return self._ew(jnp.power, x, y)
    def where(self, condition, x, y): return self._ew(jnp.where, condition, x, y)
    def logical_and(self, x, y): return self._ew(jnp.logical_and, x, y)
    def logical_or(self, x, y): return self._ew(jnp.logical_or, x, y)

    def add(self, x, y): return self._ew(jnp.add, x, y)
    def subtract(self, x, y): return self._ew(jnp.subtract, x, y)
    def multiply(self, x, y): return self._ew(jnp.multiply, x, y)
    def divide(self, x, y): return self._ew(jnp.true_divide, x, y, floating=True)
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

    def mean(self, x, axis=None, keepdims=False):
        return jnp.mean(self._float(x), axis=_axis(axis), keepdims=keepdims)

    def var(self, x, axis=None, keepdims=False, correction=0):
        return jnp.var(self._float(x), axis=_axis(axis), keepdims=keepdims, ddof=correction)

    def std(self, x, axis=None, keepdims=False, correction=0):
        return jnp.std(self._float(x), axis=_axis(axis), keepdims=keepdims, ddof=correction)

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

    def diagonal(self, x, offset=0, axis1=-2, axis2=-1):
        return jnp.diagonal(self._in(x), offset=offset, axis1=axis1, axis2=axis2)

    def take(self, x, indices, axis=None):
        return jnp.take(self._in(x), jnp.asarray(indices), axis=axis)

    def take_along_axis(self, x, indices, axis):
        return jnp.take_along_axis(self._in(x), jnp.asarray(indices), axis=axis)

    def index_update(self, x, index, value): return self._in(x).at[index].set(value)
    def index_add(self, x, index, value): return self._in(x).at[index].add(value)
    def matrix_transpose(self, x): return jnp.swapaxes(self._in(x), -1, -2)
    def ravel(self, x): return jnp.ravel(self._in(x))

    def one_hot(self, indices, num_classes, dtype=None):
        return jax.nn.one_hot(jnp.asarray(indices), num_classes, dtype=self._dt(dtype))

    # ------------------------------------------------------------------ linear algebra
    def matmul(self, a, b):
        a, b = self._ins(a, b)
        k_a = a.shape[-1] if a.ndim else None
        k_b = b.shape[-2] if b.ndim > 1 else b.shape[0] if b.ndim else None
        if k_a is None or k_b is None or k_a != k_b:
            raise ValueError(f"matmul: shapes {a.shape} and {b.shape} are not aligned (the last "
                             f"axis of a must match the second-to-last axis of b).")
        return jnp.matmul(a, b)

    def einsum(self, subscripts, *operands): return jnp.einsum(subscripts, *self._ins(*operands))

    def cholesky(self, a):
        a = self._float(a)
        if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
            raise ValueError(f"cholesky expects square matrices of shape (..., n, n), got "
                             f"shape {a.shape}.")
        return jnp.linalg.cholesky(a)

    def _batched(self, a, b):
        """Broadcast the leading batch dimensions of ``a`` ``(..., n, n)`` and ``b``
        ``(..., n, k)``; a 1-D ``b`` is left as a vector."""
        a, b = self._in(a), self._in(b)
        if b.ndim < 2:
            return a, b
        batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        return (jnp.broadcast_to(a, batch + a.shape[-2:]),
                jnp.broadcast_to(b, batch + b.shape[-2:]))

    def solve_triangular(self, a, b, lower=True):
        a, b = self._batched(a, b)
        return jsl.solve_triangular(a, b, lower=lower)

    def cho_solve(self, c, b, lower=True):
        c, b = self._batched(c, b)
        return jsl.cho_solve((c, lower), b)

    def solve(self, a, b): return jnp.linalg.solve(*self._fins(a, b))
    def inv(self, a): return jnp.linalg.inv(self._in(a))

    def slogdet(self, a):
        sign, logabsdet = jnp.linalg.slogdet(self._in(a))
        return sign, logabsdet

    def det(self, a): return jnp.linalg.det(self._in(a))

    # ------------------------------------------------------------------ special functions
    log1p = _floating(jnp.log1p)
    expm1 = _floating(jnp.expm1)
    gammaln = _floating(jsp.gammaln)
    digamma = _floating(jsp.digamma)
    erf = _floating(jsp.erf)
    erfc = _floating(jsp.erfc)
    erfinv = _floating(jsp.erfinv)
    ndtr = _floating(jsp.ndtr)
    ndtri = _floating(jsp.ndtri)
    log_ndtr = _floating(jsp.log_ndtr)
    logit = _floating(jsp.logit)
    softplus = _floating(jax.nn.softplus)
    sigmoid = _floating(jax.nn.sigmoid)
    log_sigmoid = _floating(jax.nn.log_sigmoid)

    def xlogy(self, x, y): return self._ew(jsp.xlogy, x, y, floating=True)
    def xlog1py(self, x, y): return self._ew(jsp.xlog1py, x, y, floating=True)
    def betaln(self, a, b): return self._ew(jsp.betaln, a, b, floating=True)
    def gammainc(self, a, x): return self._ew(jsp.gammainc, a, x, floating=True)
    def gammaincc(self, a, x): return self._ew(jsp.gammaincc, a, x, floating=True)
    def betainc(self, a, b, x): return self._ew(jsp.betainc, a, b, x, floating=True)

    def polygamma(self, n, x):
        """``jax.scipy.special.polygamma``; ``n`` (integer-valued) is cast to an integer dtype."""
        n = self._in(n)
        if not jnp.issubdtype(n.dtype, jnp.integer):
            n = n.astype(self._dt("int64"))
        return jsp.polygamma(n, self._float(x))

    def logsumexp(self, x, axis=None, keepdims=False):
        return jsp.logsumexp(self._float(x), axis=_axis(axis), keepdims=keepdims)

    # ------------------------------------------------------------------ nn
    relu = _same_kind(jax.nn.relu)
    silu = _floating(jax.nn.silu)
    softsign = _floating(jax.nn.soft_sign)

    def gelu(self, x, approximate=False):
        return jax.nn.gelu(self._float(x), approximate=approximate)

    def elu(self, x, alpha=1.0): return jax.nn.elu(self._float(x), alpha=alpha)
    def celu(self, x, alpha=1.0): return jax.nn.celu(self._float(x), alpha=alpha)

    def leaky_relu(self, x, negative_slope=0.01):
        return jax.nn.leaky_relu(self._float(x), negative_slope=negative_slope)

    def softmax(self, x, axis=-1): return jax.nn.softmax(self._float(x), axis=_axis(axis))
    def log_softmax(self, x, axis=-1): return jax.nn.log_softmax(self._float(x), axis=_axis(axis))

    # ------------------------------------------------------------------ transforms
    def grad(self, fun, argnums=0, has_aux=False):
        return jax.grad(fun, argnums=_axis(argnums), has_aux=has_aux)

    def value_and_grad(self, fun, argnums=0, has_aux=False):
        return jax.value_and_grad(fun, argnums=_axis(argnums), has_aux=has_aux)

    def vmap(self, fun, in_axes=0, out_axes=0):
        return jax.vmap(fun, in_axes=_axis(in_axes), out_axes=_axis(out_axes))

    def jit(self, fun, static_argnums=()): return jax.jit(fun, static_argnums=_axis(static_argnums))
    def stop_gradient(self, x): return jax.lax.stop_gradient(x)

    def device_count(self):
        return jax.local_device_count() if self._device is None else 1

    def pmap(self, fun, in_axes=0, out_axes=0):
        return jax.pmap(fun, in_axes=_axis(in_axes), out_axes=_axis(out_axes))

    # ------------------------------------------------------------------ control flow
    def while_loop(self, cond_fun, body_fun, init_val):
        return jax.lax.while_loop(cond_fun, body_fun, init_val)

    def fori_loop(self, lower, upper, body_fun, init_val):
        return jax.lax.fori_loop(lower, upper, body_fun, init_val)

    def scan(self, f, init, xs=None, length=None, reverse=False):
        if xs is None and length is None:
            raise ValueError("ops.scan: pass xs or length.")
        return jax.lax.scan(f, init, xs, length=length, reverse=reverse)

    def cond(self, pred, true_fun, false_fun, *operands):
        return jax.lax.cond(pred, true_fun, false_fun, *operands)

    def switch(self, index, branches, *operands): return jax.lax.switch(index, branches, *operands)

    # ------------------------------------------------------------------ random
    # Keys are legacy ``uint32[2]`` arrays (``jax.random.PRNGKey``): plain data for vmap/scan.
    def _param(self, x, dtype):
        return self.asarray(x, self._dt(dtype))

    def random_key(self, seed): return self._put(jax.random.PRNGKey(seed))
    def random_split(self, key, num=2): return jax.random.split(key, int(num))
    def random_fold_in(self, key, data): return jax.random.fold_in(key, data)

    def random_uniform(self, key, shape=(), dtype=None, minval=0.0, maxval=1.0):
        return jax.random.uniform(key, _shape(shape), self._dt(dtype), minval, maxval)

    random_normal = _standard(jax.random.normal)
    random_exponential = _standard(jax.random.exponential)
    random_cauchy = _standard(jax.random.cauchy)
    random_laplace = _standard(jax.random.laplace)
    random_logistic = _standard(jax.random.logistic)

    def random_gamma(self, key, a, shape=None, dtype=None):
        return jax.random.gamma(key, self._param(a, dtype), _shape(shape), self._dt(dtype))

    def random_poisson(self, key, lam, shape=None, dtype=None):
        """Poisson counts, integer (as ``jax.random.poisson``) unless ``dtype`` is a float."""
        lam = self._param(lam, None)
        if dtype is not None and jnp.issubdtype(jnp.dtype(dtype), jnp.floating):
            return jax.random.poisson(key, lam, _shape(shape)).astype(self._dt(dtype))
        return jax.random.poisson(key, lam, _shape(shape),
                                  None if dtype is None else self._dt(dtype))

    def random_randint(self, key, shape, minval, maxval, dtype=None):
        dt = self._dt("int64" if dtype is None else dtype)
        return jax.random.randint(key, _shape(shape), minval, maxval, dt)

    def random_binomial(self, key, n, p, shape=None, dtype=None):
        """Binomial counts as floats of ``dtype`` (as ``jax.random.binomial``)."""
        dt = self._dt(dtype)
        return jax.random.binomial(key, self._param(n, dt), self._param(p, dt), _shape(shape),
                                   dt)

    def random_beta(self, key, a, b, shape=None, dtype=None):
        dt = self._dt(dtype)
        return jax.random.beta(key, self._param(a, dt), self._param(b, dt), _shape(shape), dt)

    def random_dirichlet(self, key, alpha, shape=None, dtype=None):
        dt = self._dt(dtype)
        return jax.random.dirichlet(key, self._param(alpha, dt), _shape(shape), dt)

    def random_bernoulli(self, key, p=0.5, shape=None):
        return jax.random.bernoulli(key, self._in(p), _shape(shape))

    def random_categorical(self, key, logits, axis=-1, shape=None):
        return jax.random.categorical(key, self._in(logits), axis=axis, shape=_shape(shape))

    def random_t(self, key, df, shape=None, dtype=None):
        dt = self._dt(dtype)
        return jax.random.t(key, self._param(df, dt), _shape(shape), dt)

    def random_truncated_normal(self, key, lower, upper, shape=None, dtype=None):
        dt = self._dt(dtype)
        return jax.random.truncated_normal(key, self._param(lower, dt), self._param(upper, dt),
                                           _shape(shape), dt)

    def random_permutation(self, key, x, axis=0, independent=False):
        x = int(x) if isinstance(x, (int, np.integer)) else x
        return jax.random.permutation(key, x, axis=axis, independent=independent)

    def random_multivariate_normal(self, key, mean, cov, shape=None, dtype=None):
        dt = self._dt(dtype)
        return jax.random.multivariate_normal(key, self._param(mean, dt), self._param(cov, dt),
                                              _shape(shape), dt)

