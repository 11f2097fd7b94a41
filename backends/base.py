"""The backend protocol: the whole ``ppl.ops`` surface, one method per op.

Every backend adapter (``ppl.backends.numpy``, ``ppl.backends.jax``, ``ppl.backends.torch``) is
one subclass of :class:`Backend`. An adapter implements the *primitive* ops (marked
"primitive" below); the *composite* ops have a default here, written once over the primitives,
and an adapter overrides one only where its framework has a faster or more stable native.

Conventions (the Python Array API standard where it has a name, ``jax.numpy``/``jax.lax``
otherwise):

* argument names follow NumPy/SciPy: ``axis`` (never ``dim``), ``keepdims``,
  ``solve_triangular(a, b, lower=True)``;
* floating arrays are created in the backend's float dtype (``self.dtype``) unless a ``dtype``
  is passed; integer arrays in ``int64`` (``int32`` on JAX without x64);
* control flow has ``jax.lax``'s signatures: ``while_loop(cond_fun, body_fun, init_val)``,
  ``fori_loop(lower, upper, body_fun, init_val)``, ``scan(f, init, xs, length=None,
  reverse=False) -> (carry, ys)``, ``cond(pred, true_fun, false_fun, *operands)``; carries are
  pytrees (nested tuples, lists, dicts, NamedTuples of arrays);
* random keys are functional: ``random_key(seed)`` gives a key, ``random_split(key, n)`` gives
  ``n`` keys stacked on a leading axis, and the samplers are ``jax.random``'s
  (``random_normal(key, shape, dtype)``, ``random_gamma(key, a, shape, dtype)``).

To add a backend: subclass :class:`Backend`, implement every method that raises
``NotImplementedError`` here, register the module in ``ppl.backends.BACKENDS`` and run the
conformance suite ``tests/backends`` on it.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from ppl.backends import tree

__all__ = ["Backend", "OPS", "LINALG_OPS", "NN_OPS", "RANDOM_OPS"]


def _missing(backend: Backend, op: str):
    return NotImplementedError(
        f"The {backend.name!r} backend does not implement ops.{op}. "
        f"Use a backend that does (ppl.available_backends()), or implement it in "
        f"ppl.backends.{backend.name}."
    )


class Backend:
    """Base class of every backend adapter.

    Parameters
    ----------
    dtype
        The floating dtype arrays are created in: ``"float32"`` (default) or ``"float64"``.
    device
        Where arrays live (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...); ``None`` for the
        framework's default.
    """

    #: registry name, e.g. ``"numpy"``
    name: str = "base"
    #: whether ``jit`` really compiles (``False``: it is the identity)
    compiles: bool = False
    #: whether ``vmap`` can batch a ``while_loop`` (JAX can; eager loops cannot)
    vmap_while_loop: bool = False

    def __init__(self, dtype: str = "float32", device: str | None = None):
        if dtype not in ("float32", "float64"):
            raise ValueError(
                f"dtype must be 'float32' or 'float64', got {dtype!r}."
            )
        self.dtype = dtype
        self.device = device

    def __repr__(self):
        dev = "" if self.device is None else f", device={self.device!r}"
        return f"<ppl backend {self.name!r} dtype={self.dtype!r}{dev}>"

    # ------------------------------------------------------------------ conversion (primitive)
    def asarray(self, x, dtype=None):
        """Convert ``x`` to a backend array. Python/NumPy floats take ``self.dtype`` unless
        ``dtype`` is given; integers and booleans keep their kind."""
        raise _missing(self, "asarray")

    def to_numpy(self, x) -> np.ndarray:
        """A NumPy copy of ``x`` (detached from any autodiff trace)."""
        raise _missing(self, "to_numpy")

    def is_array(self, x) -> bool:
        """Whether ``x`` is an array (or tracer) of this backend."""
        raise _missing(self, "is_array")

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
        raise _missing(self, "dtype_of")

    def astype(self, x, dtype):
        raise _missing(self, "astype")

    def item(self, x):
        """A Python scalar from a one-element array (a host sync on accelerators)."""
        return self.to_numpy(x).item()

    # ------------------------------------------------------------------ creation (primitive)
    def zeros(self, shape, dtype=None):
        raise _missing(self, "zeros")

    def ones(self, shape, dtype=None):
        raise _missing(self, "ones")

    def full(self, shape, fill_value, dtype=None):
        raise _missing(self, "full")

    def arange(self, start, stop=None, step=1, dtype=None):
        raise _missing(self, "arange")

    def linspace(self, start, stop, num, dtype=None):
        raise _missing(self, "linspace")

    def eye(self, n, m=None, dtype=None):
        raise _missing(self, "eye")

    def zeros_like(self, x, dtype=None):
        return self.zeros(self.shape(x), dtype or self.dtype_of(x))

    def ones_like(self, x, dtype=None):
        return self.ones(self.shape(x), dtype or self.dtype_of(x))

    def full_like(self, x, fill_value, dtype=None):
        return self.full(self.shape(x), fill_value, dtype or self.dtype_of(x))

    # ------------------------------------------------------------------ elementwise (primitive)
    def abs(self, x): raise _missing(self, "abs")
    def exp(self, x): raise _missing(self, "exp")
    def log(self, x): raise _missing(self, "log")
    def sqrt(self, x): raise _missing(self, "sqrt")
    def sin(self, x): raise _missing(self, "sin")
    def cos(self, x): raise _missing(self, "cos")
    def tan(self, x): raise _missing(self, "tan")
    def tanh(self, x): raise _missing(self, "tanh")
    def sinh(self, x): raise _missing(self, "sinh")
    def cosh(self, x): raise _missing(self, "cosh")
    def asin(self, x): raise _missing(self, "asin")
    def acos(self, x): raise _missing(self, "acos")
    def atan(self, x): raise _missing(self, "atan")
    def atan2(self, y, x): raise _missing(self, "atan2")
    def asinh(self, x): raise _missing(self, "asinh")
    def acosh(self, x): raise _missing(self, "acosh")
    def atanh(self, x): raise _missing(self, "atanh")
    def floor(self, x): raise _missing(self, "floor")
    def ceil(self, x): raise _missing(self, "ceil")
    def round(self, x): raise _missing(self, "round")
    def sign(self, x): raise _missing(self, "sign")
    def maximum(self, x, y): raise _missing(self, "maximum")
    def minimum(self, x, y): raise _missing(self, "minimum")
    def pow(self, x, y): raise _missing(self, "pow")
    def isfinite(self, x): raise _missing(self, "isfinite")
    def isnan(self, x): raise _missing(self, "isnan")
    def isinf(self, x): raise _missing(self, "isinf")
    def where(self, condition, x, y): raise _missing(self, "where")
    def clip(self, x, min=None, max=None): raise _missing(self, "clip")

    def square(self, x):
        return x * x

    def reciprocal(self, x):
        return 1.0 / x

    def add(self, x, y):
        return x + y

    def subtract(self, x, y):
        return x - y

    def multiply(self, x, y):
        return x * y

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

    def logical_and(self, x, y): raise _missing(self, "logical_and")
    def logical_or(self, x, y): raise _missing(self, "logical_or")
    def logical_not(self, x): raise _missing(self, "logical_not")

    # ------------------------------------------------------------------ reductions (primitive)
    def sum(self, x, axis=None, keepdims=False): raise _missing(self, "sum")
    def prod(self, x, axis=None, keepdims=False): raise _missing(self, "prod")
    def max(self, x, axis=None, keepdims=False): raise _missing(self, "max")
    def min(self, x, axis=None, keepdims=False): raise _missing(self, "min")
    def argmax(self, x, axis=None, keepdims=False): raise _missing(self, "argmax")
    def argmin(self, x, axis=None, keepdims=False): raise _missing(self, "argmin")
    def all(self, x, axis=None, keepdims=False): raise _missing(self, "all")
    def any(self, x, axis=None, keepdims=False): raise _missing(self, "any")
    def cumsum(self, x, axis=0): raise _missing(self, "cumsum")
    def cumprod(self, x, axis=0): raise _missing(self, "cumprod")
    def sort(self, x, axis=-1): raise _missing(self, "sort")
    def argsort(self, x, axis=-1): raise _missing(self, "argsort")

    def mean(self, x, axis=None, keepdims=False):
        n = self.size(x) if axis is None else math.prod(
            self.shape(x)[a] for a in ((axis,) if isinstance(axis, int) else axis))
        return self.sum(x, axis=axis, keepdims=keepdims) / n

    def var(self, x, axis=None, keepdims=False, correction=0):
        m = self.mean(x, axis=axis, keepdims=True)
        n = self.size(x) if axis is None else math.prod(
            self.shape(x)[a] for a in ((axis,) if isinstance(axis, int) else axis))
        return self.sum(self.square(x - m), axis=axis, keepdims=keepdims) / (n - correction)

    def std(self, x, axis=None, keepdims=False, correction=0):
        return self.sqrt(self.var(x, axis=axis, keepdims=keepdims, correction=correction))

    # ------------------------------------------------------------------ shapes (primitive)
    def reshape(self, x, shape): raise _missing(self, "reshape")
    def broadcast_to(self, x, shape): raise _missing(self, "broadcast_to")
    def expand_dims(self, x, axis): raise _missing(self, "expand_dims")
    def squeeze(self, x, axis=None): raise _missing(self, "squeeze")
    def concat(self, arrays, axis=0): raise _missing(self, "concat")
    def stack(self, arrays, axis=0): raise _missing(self, "stack")
    def permute_dims(self, x, axes): raise _missing(self, "permute_dims")
    def moveaxis(self, x, source, destination): raise _missing(self, "moveaxis")
    def flip(self, x, axis=None): raise _missing(self, "flip")
    def tril(self, x, k=0): raise _missing(self, "tril")
    def triu(self, x, k=0): raise _missing(self, "triu")
    def diagonal(self, x, offset=0, axis1=-2, axis2=-1): raise _missing(self, "diagonal")
    def take(self, x, indices, axis=None): raise _missing(self, "take")
    def take_along_axis(self, x, indices, axis): raise _missing(self, "take_along_axis")
    def index_update(self, x, index, value):
        """Functional ``x[index] = value``: a new array, ``x`` unchanged (``x.at[i].set(v)``)."""
        raise _missing(self, "index_update")

    def index_add(self, x, index, value):
        """Functional ``x[index] += value`` (``x.at[i].add(v)``)."""
        raise _missing(self, "index_add")

    def broadcast_shapes(self, *shapes) -> tuple:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))

    def matrix_transpose(self, x):
        return self.moveaxis(x, -1, -2)

    def diag(self, v):
        """Batched ``diag``: a ``(..., n)`` vector to a ``(..., n, n)`` diagonal matrix."""
        n = self.shape(v)[-1]
        return self.expand_dims(v, -1) * self.eye(n, dtype=self.dtype_of(v))

    def one_hot(self, indices, num_classes, dtype=None):
        return self.astype(
            self.equal(self.expand_dims(indices, -1), self.arange(num_classes)),
            dtype or self.dtype,
        )

    def ravel(self, x):
        return self.reshape(x, (-1,))

    # ------------------------------------------------------------------ linear algebra
    def matmul(self, a, b): raise _missing(self, "matmul")
    def einsum(self, subscripts, *operands): raise _missing(self, "einsum")
    def cholesky(self, a):
        """Batched lower Cholesky factor of ``(..., n, n)`` positive-definite matrices."""
        raise _missing(self, "cholesky")

    def solve_triangular(self, a, b, lower=True):
        """Solve ``a @ x = b`` for triangular ``a`` (``(..., n, n)``), ``b`` ``(..., n, k)``."""
        raise _missing(self, "solve_triangular")

    def solve(self, a, b): raise _missing(self, "solve")
    def inv(self, a): raise _missing(self, "inv")
    def slogdet(self, a): raise _missing(self, "slogdet")

    def cho_solve(self, c, b, lower=True):
        """Solve ``A x = b`` given the Cholesky factor ``c`` of ``A`` (``scipy.linalg.cho_solve``
        with ``(c, lower)`` spelled out)."""
        if lower:
            y = self.solve_triangular(c, b, lower=True)
            return self.solve_triangular(self.matrix_transpose(c), y, lower=False)
        y = self.solve_triangular(self.matrix_transpose(c), b, lower=True)
        return self.solve_triangular(c, y, lower=False)

    def logdet(self, a):
        """``log|det a|`` of batched positive-definite matrices, through the Cholesky factor."""
        l = self.cholesky(a)
        return 2.0 * self.sum(self.log(self.diagonal(l, axis1=-2, axis2=-1)), axis=-1)

    def det(self, a):
        sign, ld = self.slogdet(a)
        return sign * self.exp(ld)

    def outer(self, a, b):
        return self.expand_dims(a, -1) * self.expand_dims(b, -2)

    def vecdot(self, a, b, axis=-1):
        return self.sum(a * b, axis=axis)

    # ------------------------------------------------------------------ special (primitive core)
    def log1p(self, x): raise _missing(self, "log1p")
    def expm1(self, x): raise _missing(self, "expm1")
    def gammaln(self, x): raise _missing(self, "gammaln")
    def digamma(self, x): raise _missing(self, "digamma")
    def erf(self, x): raise _missing(self, "erf")
    def erfc(self, x): raise _missing(self, "erfc")
    def erfinv(self, x): raise _missing(self, "erfinv")
    def ndtri(self, x): raise _missing(self, "ndtri")
    def log_ndtr(self, x): raise _missing(self, "log_ndtr")
    def xlogy(self, x, y): raise _missing(self, "xlogy")
    def xlog1py(self, x, y): raise _missing(self, "xlog1py")
    def logsumexp(self, x, axis=None, keepdims=False): raise _missing(self, "logsumexp")

    def logaddexp(self, x, y):
        """``log(exp(x) + exp(y))`` elementwise, exact when both are ``-inf`` (composite;
        backends with a native ``logaddexp`` should override it)."""
        m = self.maximum(x, y)
        finite_m = self.where(self.isfinite(m), m, 0.0)
        return m + self.log1p(self.exp(self.minimum(x, y) - finite_m))

    def softplus(self, x):
        """``log(1 + exp(x))``, stable for large ``|x|``."""
        return self.maximum(x, 0.0) + self.log1p(self.exp(-self.abs(x)))

    def sigmoid(self, x):
        return 0.5 * (self.tanh(0.5 * x) + 1.0)

    def log_sigmoid(self, x):
        return -self.softplus(-x)

    def logit(self, x):
        return self.log(x) - self.log1p(-x)

    def betaln(self, a, b):
        return self.gammaln(a) + self.gammaln(b) - self.gammaln(a + b)

    def ndtr(self, x):
        return 0.5 * self.erfc(-x / math.sqrt(2.0))

    def polygamma(self, n, x): raise _missing(self, "polygamma")
    def gammainc(self, a, x): raise _missing(self, "gammainc")
    def gammaincc(self, a, x): raise _missing(self, "gammaincc")
    def betainc(self, a, b, x): raise _missing(self, "betainc")

    # ------------------------------------------------------------------ nn
    def relu(self, x):
        return self.maximum(x, 0.0)

    def gelu(self, x, approximate=False):
        if approximate:
            c = math.sqrt(2.0 / math.pi)
            return 0.5 * x * (1.0 + self.tanh(c * (x + 0.044715 * x * x * x)))
        return 0.5 * x * self.erfc(-x / math.sqrt(2.0))

    def silu(self, x):
        return x * self.sigmoid(x)

    def elu(self, x, alpha=1.0):
        return self.where(x > 0, x, alpha * self.expm1(self.minimum(x, 0.0)))

    def celu(self, x, alpha=1.0):
        return self.where(x > 0, x, alpha * self.expm1(self.minimum(x, 0.0) / alpha))

    def leaky_relu(self, x, negative_slope=0.01):
        return self.where(x >= 0, x, negative_slope * x)

    def softsign(self, x):
        return x / (1.0 + self.abs(x))

    def softmax(self, x, axis=-1):
        return self.exp(self.log_softmax(x, axis=axis))

    def log_softmax(self, x, axis=-1):
        return x - self.logsumexp(x, axis=axis, keepdims=True)

    # ------------------------------------------------------------------ autodiff and transforms
    def grad(self, fun, argnums=0, has_aux=False):
        """``jax.grad``: ``fun`` returns a scalar (or ``(scalar, aux)`` with ``has_aux``)."""
        raise _missing(self, "grad")

    def value_and_grad(self, fun, argnums=0, has_aux=False):
        """``jax.value_and_grad``: returns ``(value, grad)`` or ``((value, aux), grad)``."""
        raise _missing(self, "value_and_grad")

    def vmap(self, fun, in_axes=0, out_axes=0):
        """``jax.vmap`` over pytrees. ``in_axes`` is an int, ``None`` or a tuple per argument."""
        raise _missing(self, "vmap")

    def jit(self, fun, static_argnums=()):
        """Compile ``fun`` where the backend can; the identity elsewhere (see ``compiles``)."""
        return fun

    def stop_gradient(self, x): raise _missing(self, "stop_gradient")

    def device_count(self) -> int:
        """How many devices ``pmap`` can spread a leading axis over (1 where it cannot)."""
        return 1

    def sampling_scope(self):
        """A context manager that samplers hold while they run: backend settings that suit
        many calls of small array functions (default: none)."""
        return contextlib.nullcontext()

    def pmap(self, fun, in_axes=0, out_axes=0):
        """``jax.pmap``: map ``fun`` over a leading axis, one slice per device. The default
        runs the slices in one batch on the single device (``vmap`` semantics)."""
        return self.vmap(fun, in_axes=in_axes, out_axes=out_axes)

    # ------------------------------------------------------------------ control flow
    # Eager defaults (Python loops over concrete values); compiling backends override.
    def while_loop(self, cond_fun, body_fun, init_val):
        val = init_val
        while bool(cond_fun(val)):
            val = body_fun(val)
        return val

    def fori_loop(self, lower, upper, body_fun, init_val):
        val = init_val
        for i in range(int(lower), int(upper)):
            val = body_fun(i, val)
        return val

    def scan(self, f, init, xs=None, length=None, reverse=False):
        if xs is None:
            if length is None:
                raise ValueError("ops.scan: pass xs or length.")
            n = int(length)
        else:
            leaves = tree.leaves(xs)
            n = int(self.shape(leaves[0])[0]) if leaves else int(length)
        carry = init
        ys = []
        order = range(n - 1, -1, -1) if reverse else range(n)
        for i in order:
            x = None if xs is None else tree.map(lambda a, i=i: a[i], xs)
            carry, y = f(carry, x)
            ys.append(y)
        if reverse:
            ys.reverse()
        if not ys or ys[0] is None:
            return carry, None
        return carry, tree.map(lambda *a: self.stack(a, axis=0), *ys)

    def cond(self, pred, true_fun, false_fun, *operands):
        return true_fun(*operands) if bool(pred) else false_fun(*operands)

    def switch(self, index, branches, *operands):
        return branches[int(index)](*operands)

    # ------------------------------------------------------------------ random (primitive core)
    def random_key(self, seed: int):
        """A key from an integer seed."""
        raise _missing(self, "random.key")

    def random_split(self, key, num: int = 2):
        """``num`` independent keys stacked on a leading axis."""
        raise _missing(self, "random.split")

    def random_fold_in(self, key, data: int):
        """A new key from ``key`` and an integer (``jax.random.fold_in``)."""
        raise _missing(self, "random.fold_in")

    def random_uniform(self, key, shape=(), dtype=None, minval=0.0, maxval=1.0):
        raise _missing(self, "random.uniform")

    def random_normal(self, key, shape=(), dtype=None):
        raise _missing(self, "random.normal")

    def random_gamma(self, key, a, shape=None, dtype=None):
        """Standard gamma draws (rate 1); differentiable in ``a`` where the framework allows."""
        raise _missing(self, "random.gamma")

    def random_poisson(self, key, lam, shape=None, dtype=None):
        raise _missing(self, "random.poisson")

    def random_randint(self, key, shape, minval, maxval, dtype=None):
        raise _missing(self, "random.randint")

    def random_binomial(self, key, n, p, shape=None, dtype=None):
        raise _missing(self, "random.binomial")

    # Derived samplers, written once over the primitives.
    def _shape_of(self, shape, *params):
        if shape is not None:
            return tuple(shape)
        return self.broadcast_shapes(*[self.shape(p) for p in params])

    def random_beta(self, key, a, b, shape=None, dtype=None):
        shape = self._shape_of(shape, a, b)
        ka, kb = self.random_split(key, 2)
        ga = self.random_gamma(ka, a, shape, dtype)
        gb = self.random_gamma(kb, b, shape, dtype)
        return ga / (ga + gb)

    def random_dirichlet(self, key, alpha, shape=None, dtype=None):
        alpha = self.asarray(alpha, dtype)
        batch = self.shape(alpha)[:-1] if shape is None else tuple(shape)
        g = self.random_gamma(key, alpha, batch + self.shape(alpha)[-1:], dtype)
        return g / self.sum(g, axis=-1, keepdims=True)

    def random_exponential(self, key, shape=(), dtype=None):
        u = self.random_uniform(key, shape, dtype)
        return -self.log1p(-u)

    def random_bernoulli(self, key, p=0.5, shape=None):
        shape = self._shape_of(shape, p)
        return self.random_uniform(key, shape) < p

    def random_categorical(self, key, logits, axis=-1, shape=None):
        """Draw indices with probabilities ``softmax(logits)`` along ``axis`` (Gumbel-max)."""
        logits = self.asarray(logits)
        axis = axis % self.ndim(logits)
        batch = self.shape(logits)[:axis] + self.shape(logits)[axis + 1:]
        shape = batch if shape is None else tuple(shape)
        k = self.shape(logits)[axis]
        full = shape[: len(shape) - len(batch)] + self.shape(logits)[:axis] + (k,) \
            + self.shape(logits)[axis + 1:]
        u = self.random_uniform(key, full, minval=float(np.finfo(self.dtype).tiny), maxval=1.0)
        gumbel = -self.log(-self.log(u))
        return self.argmax(logits + gumbel, axis=len(full) - self.ndim(logits) + axis)

    def random_cauchy(self, key, shape=(), dtype=None):
        u = self.random_uniform(key, shape, dtype)
        return self.tan(math.pi * (u - 0.5))

    def random_laplace(self, key, shape=(), dtype=None):
        u = self.random_uniform(key, shape, dtype, minval=-1.0, maxval=1.0)
        return -self.sign(u) * self.log1p(-self.abs(u))

    def random_logistic(self, key, shape=(), dtype=None):
        u = self.random_uniform(key, shape, dtype)
        return self.log(u) - self.log1p(-u)

    def random_t(self, key, df, shape=None, dtype=None):
        shape = self._shape_of(shape, df)
        kn, kg = self.random_split(key, 2)
        z = self.random_normal(kn, shape, dtype)
        g = self.random_gamma(kg, 0.5 * df, shape, dtype)
        return z * self.sqrt(0.5 * df / g)

    def random_truncated_normal(self, key, lower, upper, shape=None, dtype=None):
        """Standard normal truncated to ``[lower, upper]``, by inverting the CDF."""
        shape = self._shape_of(shape, lower, upper)
        lo, hi = self.ndtr(self.asarray(lower, dtype)), self.ndtr(self.asarray(upper, dtype))
        u = self.random_uniform(key, shape, dtype)
        p = self.clip(lo + u * (hi - lo), 1e-38 if (dtype or self.dtype) == "float32"
                      else 1e-300, 1.0 - np.finfo(dtype or self.dtype).eps)
        return self.clip(self.ndtri(p), lower, upper)

    def random_permutation(self, key, x, axis=0, independent=False):
        """``jax.random.permutation``: a permutation of ``range(x)`` for an int ``x``, else
        ``x`` shuffled along ``axis`` (each slice on its own when ``independent``)."""
        if not self.is_array(x) or self.ndim(x) == 0:
            return self.argsort(self.random_uniform(key, (int(x),)))
        if independent:
            order = self.argsort(self.random_uniform(key, self.shape(x)), axis=axis)
            return self.take_along_axis(x, order, axis)
        n = self.shape(x)[axis]
        return self.take(x, self.argsort(self.random_uniform(key, (n,))), axis=axis)

    def random_multivariate_normal(self, key, mean, cov, shape=None, dtype=None):
        mean = self.asarray(mean, dtype)
        l = self.cholesky(self.asarray(cov, dtype))
        batch = self.broadcast_shapes(self.shape(mean)[:-1], self.shape(l)[:-2])
        shape = batch if shape is None else tuple(shape)
        z = self.random_normal(key, shape + self.shape(mean)[-1:], dtype)
        return mean + self.squeeze(self.matmul(l, self.expand_dims(z, -1)), -1)


def _public_methods(names):
    return tuple(n for n in names if not n.startswith("_"))


#: Backend methods that are settings for library code, not array ops (no ``ppl.ops`` name)
NOT_OPS = frozenset({"sampling_scope"})
#: ops reachable as ``ppl.ops.<name>``
OPS: tuple[str, ...] = _public_methods(
    n for n, v in vars(Backend).items()
    if callable(v) and not n.startswith("random_") and n not in NOT_OPS
)
#: ``ppl.ops.linalg.<name>`` (Array API's linalg extension plus cho_solve / logdet)
LINALG_OPS = ("cholesky", "solve_triangular", "cho_solve", "logdet", "solve", "inv", "slogdet",
              "det", "matmul", "matrix_transpose", "diagonal", "outer", "vecdot", "einsum")
#: ``ppl.ops.nn.<name>``
NN_OPS = ("relu", "gelu", "silu", "elu", "celu", "leaky_relu", "softsign", "softmax",
          "log_softmax", "sigmoid", "log_sigmoid", "softplus", "one_hot")
#: ``ppl.random.<name>`` -> ``Backend.random_<name>``
RANDOM_OPS: tuple[str, ...] = tuple(
    n[len("random_"):] for n in vars(Backend) if n.startswith("random_")
)
