"""Helpers shared by the constraints, transforms and distribution families (all over
``ppl.ops``): dtypes, masking of out-of-support entries, integer draws, printable values, and
the check of integer arguments (the other argument checks, which need constraints, live in
:mod:`ppl.distributions.validation`)."""

from __future__ import annotations

import math

import numpy as np

from ppl import ops

__all__ = [
    "HALF_LOG_2PI",
    "INT_DTYPE",
    "LOG_2",
    "LOG_PI",
    "as_float",
    "as_int",
    "clamp_probs",
    "describe",
    "expand_support",
    "finfo",
    "full_batch",
    "is_concrete",
    "lgamma_difference",
    "log1mexp",
    "log1p_square",
    "log_factorial",
    "mask_outside",
    "require_int",
    "restrict",
    "split_support",
    "sum_rightmost",
]

#: dtype of the draws of discrete families (narrowed to int32 by JAX without x64)
INT_DTYPE = "int64"
HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
LOG_2 = math.log(2.0)
LOG_PI = math.log(math.pi)


def finfo(x=None):
    """``numpy.finfo`` of ``x``'s dtype (the backend's float dtype if ``x`` is None)."""
    name = ops.backend().dtype if x is None else ops.dtype_of(x)
    if not name.startswith("float"):
        name = ops.backend().dtype
    return np.finfo(name)


def as_float(x):
    """``x`` as a backend array of a floating dtype (the backend's, unless ``x`` already is one).

    Backend arrays, tracers and autodiff boxes pass through unchanged.
    """
    x = ops.asarray(x)
    if not ops.dtype_of(x).startswith("float"):
        x = ops.astype(x, ops.backend().dtype)
    return x


def as_int(x):
    """``x`` cast to :data:`INT_DTYPE` (the dtype of discrete draws)."""
    return ops.astype(x, INT_DTYPE)


def full_batch(dist, value):
    """``value`` broadcast to ``dist.batch_shape`` (a Python float fills a new array): the shape
    of ``mean``, ``variance`` and ``entropy`` of univariate families."""
    if isinstance(value, float):
        return ops.full(dist.batch_shape, value)
    return ops.broadcast_to(value, dist.batch_shape)


def sum_rightmost(x, n: int):
    """Sum the ``n`` rightmost dimensions of ``x`` (``x`` itself when ``n == 0``)."""
    if n <= 0:
        return x
    return ops.sum(x, axis=tuple(range(-n, 0)))


def is_concrete(x) -> bool:
    """Whether ``x`` holds readable values (not a compiler tracer); plain Python values are."""
    if isinstance(x, (bool, int, float, complex, np.ndarray, np.generic)):
        return True
    return not ops.is_tracer(x)


def describe(value, mask=None) -> str:
    """``value`` printed for an error message or a ``repr`` (``<traced>`` inside a compiled
    trace); with a boolean ``mask``, only its entries where ``mask`` is False."""
    if isinstance(value, (bool, int, float)):
        return repr(value)
    if not is_concrete(value):
        return "<traced>"
    arr = np.asarray(ops.to_numpy(value))
    suffix = ""
    if mask is not None and arr.ndim > 0 and np.ndim(mask) > 0:
        mask = np.asarray(mask)
        if mask.ndim < arr.ndim:    # a check over batch dims (an event constraint's): by rows
            mask = mask.reshape(mask.shape + (1,) * (arr.ndim - mask.ndim))
        arr, suffix = arr[~np.broadcast_to(mask, arr.shape)].ravel(), " (the offending entries)"
    if arr.ndim == 0:
        return repr(arr.item())
    return np.array2string(arr, threshold=8, precision=6, separator=", ") + suffix


def require_int(owner: str, name: str, value, low: int, high: int | None = None,
                what: str = "") -> None:
    """Raise ``ValueError`` unless ``value`` is a Python int (not a bool) in ``[low, high]``
    (``high=None``: no upper bound); ``owner`` names the family or constraint and ``what``
    says what the argument means."""
    if (isinstance(value, bool) or not isinstance(value, int) or value < low
            or (high is not None and value > high)):
        bounds = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{owner}: {name} must be an int {bounds}{f' ({what})' if what else ''}"
                         f", got {value!r}.")


def clamp_probs(p):
    """Clamp probabilities into ``[tiny, 1 - eps]`` so their logs stay finite."""
    fi = finfo(p)
    return ops.clip(p, float(fi.tiny), 1.0 - float(fi.eps))


def log1p_square(w):
    """``log(1 + w**2)`` without overflow (``w * w`` overflows past ~1e154 in float64, ~1e19
    in float32: ``Cauchy.log_prob(1e200)`` was ``-inf``, the true value -922.2), as
    ``2 log m + log1p(q**2)`` with ``m = max(|w|, 1)`` and ``q = min(|w|, 1) / m``:
    ``log1p(w**2)`` where ``|w| <= 1``, ``2 log|w| + log1p(w**-2)`` beyond. No ``where`` and
    no infinite intermediate, so gradients stay finite. At ``|w| = 1`` the derivative is right
    when ``max`` and ``min`` share the gradient of a tie as JAX, autograd and torch do (half
    each), or send all of it to different arguments, as TensorFlow does here (``max`` to its
    first argument, ``|w|``; ``min`` to its first, the constant)."""
    a = ops.abs(w)
    one = ops.ones_like(a)
    m = ops.maximum(a, one)
    q = ops.minimum(one, a) / m
    return 2.0 * ops.log(m) + ops.log1p(q * q)


def log1mexp(x):
    """``log(1 - exp(x))`` for ``x <= 0``, accurate on both sides of ``-log 2`` (Maechler 2012)."""
    small = x > -0.6931471805599453
    x_small = ops.where(small, x, -1.0)
    x_large = ops.where(small, -1.0, x)
    return ops.where(small, ops.log(-ops.expm1(x_small)), ops.log1p(-ops.exp(x_large)))


#: Stirling's series ``log Gamma(x) = (x - 1/2) log x - x + log(2 pi)/2 + r(x)`` with
#: ``r(x) = sum_k B_2k / (2k (2k - 1) x^(2k - 1))`` (Abramowitz & Stegun 1964, 6.1.40): the
#: coefficients of ``r``; from ``x = 10`` on the first term left out is below ``3e-17``
_STIRLING_COEFFICIENTS = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)
#: :func:`lgamma_difference` takes Stirling's series from this ``a`` on
_STIRLING_FROM = 10.0


def _stirling_remainder(x):
    """``r(x) = log Gamma(x) - (x - 1/2) log x + x - log(2 pi)/2`` for ``x >= 10``."""
    w = 1.0 / x
    w2 = w * w
    acc = ops.zeros_like(w) + _STIRLING_COEFFICIENTS[-1]
    for c in reversed(_STIRLING_COEFFICIENTS[:-1]):
        acc = acc * w2 + c
    return w * acc


def lgamma_difference(a, d):
    """``log Gamma(a + d) - log Gamma(a)`` for ``a > 0`` and ``d >= 0`` (``d`` a Python float
    or an array broadcasting with ``a``), accurate for large ``a``.

    The two log-gammas nearly cancel when ``a`` is large: ``gammaln(5e5 + 0.5) -
    gammaln(5e5)`` is 6.56, the difference of two numbers near ``6e6``, and was 0.06 off in
    float32 (the Student-t normalizer at ``df = 1e6``; 0.29 at ``1e7``, and the trivariate
    t's 0.18 and 0.86). From ``a = 10`` on, Stirling's series
    (Abramowitz & Stegun 1964, 6.1.40) is differenced by hand instead, as DiDonato & Morris
    (1992, ACM TOMS 18, Algorithm 708) do for ``log B``::

        d log a + (a + d - 1/2) log1p(d / a) - d + r(a + d) - r(a)

    with ``r`` the series' remainder; below 10, the plain difference of ``gammaln`` (whose
    absolute error, a few ``eps`` times ``max(1, |log Gamma(a)|)``, is then small). Each
    branch sees safe arguments only (10 and 1 where it is not used), so neither makes a NaN
    of the other's gradient.

    >>> import ppl
    >>> from ppl.distributions.util import lgamma_difference
    >>> with ppl.use_backend("numpy", dtype="float32"):
    ...     round(float(lgamma_difference(ppl.ops.asarray(5e5), 0.5)), 4)
    6.5612
    """
    a = as_float(a)
    series = a >= _STIRLING_FROM                       # NaN: False, and NaN from gammaln
    big = restrict(series, a, _STIRLING_FROM)
    # (a + d - 1/2) log1p(q) - d with q = d / a, as a ((1 + q) log1p(q) - q) - log1p(q) / 2: the
    # first-order part of its derivative in a (+-d / a) cancels inside the bracket, so no a^2
    # (which overflows from a ~ 1e19 in float32) is left to carry it
    q = d / big
    out_series = (d * ops.log(big) + big * ((1.0 + q) * ops.log1p(q) - q) - 0.5 * ops.log1p(q)
                  + _stirling_remainder(big + d) - _stirling_remainder(big))
    small = ops.where(series, ops.ones_like(a), a)
    return ops.where(series, out_series, ops.gammaln(small + d) - ops.gammaln(small))


def log_factorial(k):
    """``log(k!)`` for float-valued counts ``k``."""
    return ops.gammaln(k + 1.0)


def restrict(inside, value, safe=1.0):
    """``value`` where ``inside``, else ``safe``: keeps out-of-support entries (and their
    gradients) finite before the final :func:`mask_outside`."""
    return ops.where(inside, value, ops.zeros_like(value) + safe)


def split_support(constraint, value, safe=0.0):
    """``(inside, value_inside)`` for a ``log_prob``: where ``value`` (cast to float) lies in
    ``constraint``, and ``value`` with the entries outside replaced by ``safe`` so that the
    formula (and its gradient) stays finite there; mask the result with :func:`mask_outside`."""
    value = as_float(value)
    inside = constraint.check(value)
    return inside, restrict(inside, value, safe)


def mask_outside(inside, log_prob):
    """``log_prob`` where ``inside``, ``-inf`` elsewhere (``scipy.stats``' convention)."""
    return ops.where(inside, log_prob, ops.zeros_like(log_prob) - np.inf)


def expand_support(values, batch_shape, expand: bool):
    """The support ``values`` (shape ``(n,)``) of a discrete family on a new leading axis:
    shape ``(n,) + (1,) * len(batch_shape)``, or broadcast to ``(n,) + batch_shape`` if
    ``expand`` (NumPyro's ``enumerate_support`` convention)."""
    values = ops.reshape(values, (-1,) + (1,) * len(batch_shape))
    if expand:
        values = ops.broadcast_to(values, ops.shape(values)[:1] + tuple(batch_shape))
    return values
