"""The log tail functions ``log F``, ``log S = log(1 - F)`` and their inverses of univariate
families on the real line, for truncating them (:mod:`ppl.distributions.truncation`): closed
forms for Normal, Cauchy, Laplace, Logistic and Gumbel that keep their relative precision far in
either tail, and the base's own ``cdf``/``icdf`` for other families."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

from ppl import ops
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.extreme import Gumbel
from ppl.distributions.locscale import Cauchy, Laplace, Logistic, Normal
from ppl.distributions.util import LOG_2, LOG_PI, as_float, finfo, log1mexp, restrict

__all__ = ["at_limits", "tails_of"]


class _Tails(NamedTuple):
    """``log F``, ``log S`` and their inverses (of a standard member, ``loc = 0`` and
    ``scale = 1``, in the table below), each accurate where its value is small."""

    median: float
    log_cdf: Callable
    log_sf: Callable
    icdf_log: Callable      # log F -> z
    isf_log: Callable       # log S -> z


def _symmetric(log_cdf, icdf_log) -> _Tails:
    """A family symmetric about 0: ``S(z) = F(-z)``."""
    return _Tails(0.0, log_cdf, lambda z: log_cdf(-z), icdf_log, lambda lq: -icdf_log(lq))


def _cauchy_log_cdf(z):
    # F(z) = 1/2 + atan(z) / pi = atan2(1, -z) / pi, without the cancellation for z << 0
    return ops.log(ops.atan2(ops.ones_like(z), -z)) - LOG_PI


def _cauchy_icdf_log(lp):
    # z = -cot(pi p), and cot(pi (1 - p)) above the median, with 1 - p = -expm1(lp)
    upper = lp > -LOG_2
    p = ops.exp(ops.where(upper, -1.0, lp))
    q = -ops.expm1(ops.where(upper, lp, -1.0))
    return ops.where(upper, 1.0 / ops.tan(math.pi * q), -1.0 / ops.tan(math.pi * p))


def _laplace_log_cdf(z):
    left = z <= 0.0
    return ops.where(left, z - LOG_2, ops.log1p(-0.5 * ops.exp(-ops.where(left, 0.0, z))))


def _laplace_icdf_log(lp):
    lower = lp <= -LOG_2
    return ops.where(lower, lp + LOG_2, -(LOG_2 + log1mexp(ops.where(lower, -1.0, lp))))


def _gumbel_log_cdf(z):
    # -exp(-z); below log(tiny) F underflows anyway, and the derivative would overflow
    return -ops.exp(-ops.maximum(z, math.log(float(finfo(z).tiny))))


def _gumbel_log_sf(z):
    # log(1 - exp(-t)), t = exp(-z): -z + log((1 - exp(-t)) / t) right of 0, where t < 1
    right = z > 0.0
    zr = ops.where(right, z, 1.0)
    t = ops.maximum(ops.exp(-zr), float(finfo(z).tiny))
    zl = ops.maximum(ops.where(right, -1.0, z), -30.0)     # S = 1 to working precision below
    # (log of the two factors apart: the quotient's derivative goes through t^2, which underflows)
    return ops.where(right, -zr + ops.log(-ops.expm1(-t)) - ops.log(t), log1mexp(-ops.exp(-zl)))


def _gumbel_isf_log(lq):
    # z = -log(-log(1 - q)); for lq < -20, -log(1 - q) = q (1 + q / 2 + ...) to double precision
    deep = lq < -20.0
    ld = ops.where(deep, lq, -30.0)
    return ops.where(deep, -ld - 0.5 * ops.exp(ld),
                     -ops.log(-log1mexp(ops.where(deep, -1.0, lq))))


_STANDARD = {
    Normal: _symmetric(ops.log_ndtr, ops.ndtri_exp),
    Cauchy: _symmetric(_cauchy_log_cdf, _cauchy_icdf_log),
    Laplace: _symmetric(_laplace_log_cdf, _laplace_icdf_log),
    Logistic: _symmetric(ops.log_sigmoid, lambda lp: lp - log1mexp(lp)),
    Gumbel: _Tails(-math.log(math.log(2.0)), _gumbel_log_cdf, _gumbel_log_sf,
                   lambda lp: -ops.log(-lp), _gumbel_isf_log),
}
_SUPPORTED = ("Normal, Cauchy, Laplace, Logistic or Gumbel (or a Distribution subclass on the "
              "real line implementing cdf and icdf)")


def _loc_scale_tails(base, std: _Tails) -> _Tails:
    """A standard member's :class:`_Tails` moved to ``base.loc`` and ``base.scale``."""
    loc, scale = base.loc, base.scale
    return _Tails(loc + scale * std.median,
                  lambda x: std.log_cdf((x - loc) / scale),
                  lambda x: std.log_sf((x - loc) / scale),
                  lambda lp: loc + scale * std.icdf_log(lp),
                  lambda lq: loc + scale * std.isf_log(lq))


def _cdf_tails(base) -> _Tails:
    """The same through a base's own ``cdf`` / ``icdf`` (``NotImplementedError`` if it has none),
    with ``log F`` and ``log S`` stopped at ``log(tiny)``."""
    median = base.icdf(as_float(0.5))
    base.cdf(median)
    tiny = float(finfo(median).tiny)
    return _Tails(median, lambda x: ops.log(ops.maximum(base.cdf(x), tiny)),
                  lambda x: ops.log(ops.maximum(1.0 - base.cdf(x), tiny)),
                  lambda lp: base.icdf(ops.exp(lp)), lambda lq: base.icdf(-ops.expm1(lq)))


def tails_of(owner: str, base):
    """The tail functions of ``base``, or a ``TypeError`` saying why it cannot be truncated."""
    what = f"{owner}: base_dist"
    if not isinstance(base, Distribution):
        raise TypeError(f"{what} must be a Distribution, got {base!r}; pass e.g. "
                        "dist.Cauchy(0.0, 1.0).")
    name = type(base).__name__
    if base.event_shape != ():
        raise TypeError(
            f"{what} must be univariate (event_shape ()), but {name} has event_shape "
            f"{base.event_shape}; truncate a univariate family (low and high broadcast with its "
            f"batch shape) and use .to_event(1) for a vector. Supported: {_SUPPORTED}.")
    if base.is_discrete or type(base.support) is not type(constraints.real):
        kind = "is discrete" if base.is_discrete else f"has support {base.support!r}"
        raise TypeError(
            f"{what} must be a continuous family on the whole real line (support "
            f"constraints.real), but {name} {kind}. Supported: {_SUPPORTED}.")
    std = _STANDARD.get(type(base))
    if std is not None:
        return _loc_scale_tails(base, std)
    try:
        return _cdf_tails(base)
    except NotImplementedError as err:
        raise TypeError(
            f"{what} {name} has no cdf/icdf ({err}); truncation samples by inverting the "
            f"base's CDF. Supported: {_SUPPORTED}.") from None


def at_limits(fn, x, safe, at_minus_inf: float, at_plus_inf: float):
    """``fn(x)`` with its limits at infinite ``x`` (kept out of the arithmetic and gradient)."""
    fin = ops.isfinite(x)
    v = fn(restrict(fin, x, safe))
    zero = ops.zeros_like(v)
    return ops.where(fin, v, ops.where(x > 0, zero + at_plus_inf, zero + at_minus_inf))
