"""The log tail functions ``log F``, ``log S = log(1 - F)`` and their inverses of univariate
families on the real line, for truncating them (:mod:`ppl.distributions.truncation`): closed
forms for Normal, Cauchy, Laplace, Logistic and Gumbel that keep their relative precision far in
either tail, and the base's own ``cdf``/``icdf`` for other families; and the truncated log
density and cdf (:func:`truncated_log_prob`, :func:`truncated_cdf`), which for a Gumbel base
left of its mode are not taken from the difference of two huge numbers.

>>> import ppl, ppl.distributions as dist
>>> from ppl.distributions.truncation import TruncatedDistribution
>>> with ppl.use_backend("numpy", dtype="float64"):
...     d = TruncatedDistribution(dist.Gumbel(0.0, 1.0), low=-720.0, high=-710.0)
...     float(d.log_prob(-710.0))       # all its mass within exp(-710) of high
710.0
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ppl import ops
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.extreme import Gumbel
from ppl.distributions.locscale import Cauchy, Laplace, Logistic, Normal
from ppl.distributions.util import LOG_2, LOG_PI, as_float, finfo, log1mexp, restrict

__all__ = ["at_limits", "tails_of", "truncated_cdf", "truncated_log_prob"]


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


def _gumbel_cut(x) -> float:
    """``c = log(max) - 7`` of ``x``'s dtype (703 in float64, 82 in float32): ``log F(z) =
    -exp(-z)`` of a Gumbel is used as it is from ``z = -c`` on."""
    return math.log(float(finfo(x).max)) - 7.0


def _gumbel_log_cdf(z):
    # -exp(-z), which overflows below z = -709.8 (float64); from z = -c down, the continuation
    # -e^c (1 + log1p(-c - z)) instead: finite, increasing with a finite slope, continuous in
    # value and slope at -c, and inverted by _gumbel_icdf_log. An interval's log F(a) - log F(b)
    # there stays hugely negative, as it is (the mass lies within exp(b) of b), so its draws
    # are b and its cdf is 0 below b, 1 at it, as they are to working precision
    c = _gumbel_cut(z)
    inner = z >= -c
    u = ops.where(inner, ops.zeros_like(z), -c - z)
    return ops.where(inner, -ops.exp(-ops.maximum(z, -c)), -math.exp(c) * (1.0 + ops.log1p(u)))


def _gumbel_icdf_log(lp):
    """The inverse of :func:`_gumbel_log_cdf`: ``-log(-lp)``, and below ``-e^c`` its
    continuation's inverse ``-c - expm1(-lp e^-c - 1)``."""
    c = _gumbel_cut(lp)
    inner = lp >= -math.exp(c)
    lp_inner = ops.where(inner, lp, -ops.ones_like(lp))
    v = ops.where(inner, ops.zeros_like(lp), -lp * math.exp(-c) - 1.0)
    return ops.where(inner, -ops.log(-lp_inner), -c - ops.expm1(v))


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
                   _gumbel_icdf_log, _gumbel_isf_log),
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


def _gumbel_excess(zx, zb, t):
    """``exp(-zx) - exp(-zb)`` for ``t = zb - zx >= 0`` (finite), as ``exp(-zx + log(1 -
    exp(-t)))``. Its paths to each of ``x, loc, scale, high`` have one sign, so a derivative
    that overflows is infinite (not ``inf - inf``); beyond the dtype's range it is ``inf``
    with no gradient (the log density is ``-inf``). At ``t = 0``: ``expm1(t) exp(-zb)`` (0,
    with the slope ``exp(-zb)`` in ``t``, at most the dtype's ``max``)."""
    lim = math.log(float(finfo(t).max)) - 0.01
    pos = t > 0.0
    log_e = log1mexp(-restrict(pos, t, 1.0)) - zx
    over = ops.logical_and(pos, log_e > lim)
    e = ops.exp(restrict(ops.logical_and(pos, ops.logical_not(over)), log_e, 0.0))
    e = ops.where(over, ops.zeros_like(e) + np.inf, e)
    t0 = ops.where(pos, ops.zeros_like(t), t)
    return ops.where(pos, e, ops.expm1(t0) * ops.exp(ops.minimum(-zb, lim)))


def _gumbel_log1mexp_excess(zb, t):
    """``log(1 - exp(-E))`` for ``E = exp(-zb) expm1(t)``, ``t > 0`` (``t = inf``: 0; ``t =
    0``: ``-inf``), from ``log E``, which does not overflow."""
    ok = ops.logical_and(t > 0.0, ops.isfinite(t))
    ts = restrict(ok, t, 1.0)
    log_e = ts - zb + ops.log(-ops.expm1(-ts))
    counts = ops.logical_and(ok, log_e < 4.0)            # beyond, exp(-E) < 2e-24
    out = log1mexp(-ops.exp(restrict(counts, log_e, 0.0)))
    out = ops.where(counts, out, ops.zeros_like(out))
    return ops.where(t > 0.0, out, ops.zeros_like(out) - np.inf)


def _gumbel_left(base, x, a, b):
    """The pieces of a truncated Gumbel left of its mode, on the rows where ``zb = (b - loc) /
    scale < 0`` (``left``; stand-ins elsewhere): ``(left, x finite, zx, zb, (b - x) / scale,
    (x - a) / scale, log(1 - exp(-(exp(-za) - exp(-zb)))))``, ``inf`` for the ``t`` from
    ``a = -inf``. Every quotient sees finite values only: an infinite one's derivative in
    ``scale`` is infinite, and times the zero cotangent of an unused branch, NaN."""
    loc, scale = base.loc, base.scale
    b_finite = ops.isfinite(b)
    b = restrict(b_finite, b, 0.0)
    zb = (b - loc) / scale
    left = ops.logical_and(b_finite, zb < 0.0)
    zb = restrict(left, zb, -1.0)
    x_finite = ops.isfinite(x)                  # x = -inf is in [a, b] when a = -inf
    x = ops.where(ops.logical_and(left, x_finite), x, b - scale)
    closed = ops.logical_and(left, ops.isfinite(a))
    a = ops.where(closed, a, b - 2.0 * scale)

    def open_inf(t):
        return ops.where(closed, t, ops.zeros_like(t) + np.inf)

    ta = open_inf((b - a) / scale)
    return (left, x_finite, (x - loc) / scale, zb, (b - x) / scale, open_inf((x - a) / scale),
            _gumbel_log1mexp_excess(zb, ta))


def _gumbel_truncated_log_prob(base, x, a, b, generic):
    """Left of the mode, ``log f(x) - log(F(b) - F(a))`` as

    ``-zx - log(scale) - (exp(-zx) - exp(-zb)) - log(1 - exp(-(exp(-za) - exp(-zb))))``

    (``log F(z) = -exp(-z)``), the differences of exponentials from ``b - x`` and ``b - a``
    (:func:`_gumbel_excess`): ``log f(x)`` and ``log F(b)`` are ``-exp(-zb)`` plus small
    terms, and their difference lost those (``log_prob(high)`` was 0, not ``-zb - log
    scale``; ``-inf - -inf = NaN`` where ``exp(-zb)`` overflows)."""
    left, x_finite, zx, zb, t_b, _, log_mass = _gumbel_left(base, x, a, b)
    out = -zx - ops.log(base.scale) - _gumbel_excess(zx, zb, t_b) - log_mass
    out = ops.where(x_finite, out, ops.zeros_like(out) - np.inf)
    return ops.where(left, out, generic(ops.where(left, base.loc + ops.zeros_like(x), x)))


def _gumbel_truncated_cdf(base, x, a, b, generic):
    """Left of the mode, ``(F(x) - F(a)) / (F(b) - F(a))`` as ``exp(-(exp(-zx) - exp(-zb)))
    (1 - exp(-(exp(-za) - exp(-zx)))) / (1 - exp(-(exp(-za) - exp(-zb))))`` in logs: the log
    of the quotient ``F(x) / F(b)`` was a difference of two numbers near ``-exp(-zb)`` (the
    cdf at ``high`` was ``exp(-0.25)`` or ``e`` in float32 at ``zb = -15``)."""
    left, x_finite, zx, zb, t_b, t_a, log_mass = _gumbel_left(base, x, a, b)
    out = ops.exp(-_gumbel_excess(zx, zb, t_b) + _gumbel_log1mexp_excess(zx, t_a) - log_mass)
    out = ops.where(x_finite, out, ops.zeros_like(out))
    return ops.where(left, out, generic)


def truncated_log_prob(base, x, a, b, log_z):
    """``base.log_prob(x) - log_z``, the log density of ``base`` truncated to ``[a, b]`` (with
    ``log_z = log(F(b) - F(a))``) at ``x`` in ``[a, b]``, without the cancellation of the two
    terms where a family's tails need it (Gumbel, left of its mode)."""
    def generic(v):
        return base.log_prob(v) - log_z
    if type(base) is Gumbel:
        return _gumbel_truncated_log_prob(base, x, a, b, generic)
    return generic(x)


def truncated_cdf(base, x, a, b, cdf):
    """The truncated ``cdf`` at ``x`` in ``[a, b]`` as computed from the log tails, or where a
    family's need it (Gumbel, left of its mode) without the cancellation of ``log F(x)`` and
    ``log F(b)``."""
    if type(base) is Gumbel:
        return _gumbel_truncated_cdf(base, x, a, b, cdf)
    return cdf


def at_limits(fn, x, safe, at_minus_inf: float, at_plus_inf: float):
    """``fn(x)`` with its limits at infinite ``x`` (kept out of the arithmetic and gradient)."""
    fin = ops.isfinite(x)
    v = fn(restrict(fin, x, safe))
    zero = ops.zeros_like(v)
    return ops.where(fin, v, ops.where(x > 0, zero + at_plus_inf, zero + at_minus_inf))
