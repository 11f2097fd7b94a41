"""autograd primitives the numpy backend needs and autograd lacks, each with its VJP.

Special functions (``ndtr``, ``ndtri``, ``log_ndtr``, ``xlogy``, ``xlog1py``), a batched
triangular solve, functional index updates and a reparameterised standard-gamma sampler
(implicit reparameterisation: Figurnov, Mohamed & Mnih 2018, "Implicit Reparameterization
Gradients").
"""

from __future__ import annotations

import math

import autograd.numpy as anp
import numpy as np
import scipy.linalg as sla
import scipy.special as sps
from autograd.extend import defvjp, primitive

__all__ = ["cumprod", "ndtr", "ndtri", "log_ndtr", "xlogy", "xlog1py", "solve_triangular",
           "index_update", "index_add", "standard_gamma", "unbroadcast"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def unbroadcast(g, shape):
    """Sum ``g`` down to ``shape`` (the inverse of NumPy broadcasting)."""
    shape = tuple(shape)
    while anp.ndim(g) > len(shape):
        g = anp.sum(g, axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and anp.shape(g)[axis] != 1:
            g = anp.sum(g, axis=axis, keepdims=True)
    return g


def _like(g, x):
    return unbroadcast(g, np.shape(x)).astype(np.result_type(x), copy=False) \
        if np.ndim(x) or isinstance(x, np.ndarray) else unbroadcast(g, ())


# ----------------------------------------------------------------------------- special functions
@primitive
def ndtr(x):
    return sps.ndtr(x)


defvjp(ndtr, lambda ans, x: lambda g: _like(g * anp.exp(-0.5 * x * x - _LOG_SQRT_2PI), x))


@primitive
def ndtri(p):
    return sps.ndtri(p)


defvjp(ndtri, lambda ans, p: lambda g: _like(g * anp.exp(0.5 * ans * ans + _LOG_SQRT_2PI), p))


@primitive
def log_ndtr(x):
    return sps.log_ndtr(x)


defvjp(log_ndtr, lambda ans, x: lambda g: _like(
    g * anp.exp(-0.5 * x * x - _LOG_SQRT_2PI - ans), x))


@primitive
def xlogy(x, y):
    return sps.xlogy(x, y)


def _log_where_defined(x, y, log):
    """``d xlogy(x, y) / dx = log(y)``, also at ``x = 0`` (where the value is 0 whatever
    ``log(y)``); 0 where ``x = 0`` and ``log(y)`` is not finite (the frameworks disagree
    there: torch gives 0 at ``y = 0``, JAX ``-inf``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return anp.where((x == 0) & ~anp.isfinite(log(y)), 0.0, log(y))


def _x_over(x, y):
    """``d xlogy(x, y) / dy = x / y``, 0 where ``x = 0``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return anp.where(x == 0, 0.0, x / y)


defvjp(
    xlogy,
    lambda ans, x, y: lambda g: _like(g * _log_where_defined(x, y, anp.log), x),
    lambda ans, x, y: lambda g: _like(g * _x_over(x, y), y),
)


@primitive
def xlog1py(x, y):
    return sps.xlog1py(x, y)


defvjp(
    xlog1py,
    lambda ans, x, y: lambda g: _like(g * _log_where_defined(x, y, anp.log1p), x),
    lambda ans, x, y: lambda g: _like(g * _x_over(x, 1.0 + y), y),
)


# ----------------------------------------------------------------------------- linear algebra
def _tri_solve(a, b, lower):
    a, b = np.asarray(a), np.asarray(b)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    return sla.solve_triangular(a, b, lower=lower, check_finite=False)


@primitive
def solve_triangular(a, b, lower=True):
    """Solve ``a @ x = b`` for lower (or upper) triangular ``a``; batched over leading axes."""
    return _tri_solve(a, b, lower).astype(np.result_type(a, b), copy=False)


# The VJPs are written with primitives (not raw NumPy on the arguments), so that they can be
# recorded by the numpy jit (:mod:`.tape`) and differentiated again.
def _tri_grad_b(ans, a, b, lower=True):
    return lambda g: unbroadcast(solve_triangular(anp.swapaxes(a, -1, -2), g, not lower),
                                 np.shape(b))


def _tri_grad_a(ans, a, b, lower=True):
    def vjp(g):
        gb = solve_triangular(anp.swapaxes(a, -1, -2), g, not lower)
        ga = -anp.matmul(gb, anp.swapaxes(ans, -1, -2))
        ga = anp.tril(ga) if lower else anp.triu(ga)
        return unbroadcast(ga, np.shape(a))
    return vjp


defvjp(solve_triangular, _tri_grad_a, _tri_grad_b)


@primitive
def cumprod(x, axis):
    return np.cumprod(x, axis=axis)


def _flip(x, axis):
    return x[(slice(None),) * (axis % anp.ndim(x)) + (slice(None, None, -1),)]


def _cumprod_vjp(ans, x, axis):
    # d y_j / d x_i = y_j / x_i for j >= i (x nonzero): a reversed cumulative sum.
    def vjp(g):
        rev = _flip(anp.cumsum(_flip(g * ans, axis), axis=axis), axis)
        return rev / x
    return vjp


defvjp(cumprod, _cumprod_vjp)


# ----------------------------------------------------------------------------- index updates
@primitive
def index_update(x, index, value):
    out = np.array(x, copy=True)
    out[index] = value
    return out


def _scatter_mask(x, index):
    keep = np.ones(np.shape(x), dtype=bool)
    keep[index] = False
    return keep


defvjp(
    index_update,
    lambda ans, x, index, value: lambda g: g * _scatter_mask(x, index),
    None,
    lambda ans, x, index, value: lambda g: unbroadcast(g[index], np.shape(value)),
    argnums=(0, 1, 2),
)


@primitive
def index_add(x, index, value):
    out = np.array(x, copy=True)
    np.add.at(out, index, value)
    return out


defvjp(
    index_add,
    lambda ans, x, index, value: lambda g: g,
    None,
    lambda ans, x, index, value: lambda g: unbroadcast(g[index], np.shape(value)),
    argnums=(0, 1, 2),
)


# ----------------------------------------------------------------------------- random
@primitive
def standard_gamma(a, noise):
    """Gamma(a, 1) draws given a generator's draws ``noise`` (already Gamma(a, 1)): the value
    passes through; the VJP in ``a`` is the implicit reparameterisation gradient
    ``dx/da = -(dF/da) / (dF/dx)`` with ``F`` the regularised lower incomplete gamma function."""
    return noise


def _gamma_vjp(ans, a, noise):
    def vjp(g):
        a64 = np.broadcast_to(np.asarray(a, dtype=np.float64), np.shape(ans))
        x64 = np.asarray(ans, dtype=np.float64)
        h = 1e-5 * np.maximum(a64, 1e-3)
        dF_da = (sps.gammainc(a64 + h, x64) - sps.gammainc(a64 - h, x64)) / (2.0 * h)
        log_pdf = (a64 - 1.0) * np.log(np.maximum(x64, 1e-300)) - x64 - sps.gammaln(a64)
        dx_da = -dF_da / np.exp(log_pdf)
        dx_da = np.where(np.isfinite(dx_da), dx_da, 0.0)
        return unbroadcast(g * dx_da.astype(np.result_type(ans)), np.shape(a))
    return vjp


defvjp(standard_gamma, _gamma_vjp, None)
