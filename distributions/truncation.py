"""Truncation of a univariate family on the real line to ``[low, high]``:
:class:`TruncatedDistribution` (NumPyro's name and arguments) and :class:`TruncatedCauchy`.

The density is ``base.log_prob(x) - log Z`` on the interval (``-inf`` outside), with
``Z = F(high) - F(low)``; draws invert the base's CDF at a uniform point of
``[F(low), F(high)]`` (the inversion method: Devroye 1986, "Non-Uniform Random Variate
Generation", sections II.2.1 and II.2.2). Both steps work in log space, on the side of the
base's median the interval lies on: an interval right of the median uses the survival function
``S = 1 - F`` instead (``Z = S(low) - S(high)`` and ``x = S^-1(u)``), so the two terms are small
numbers and nothing cancels near 1 -- the reflection ``TruncatedNormal`` uses (Chopin 2011),
written for families that need not be symmetric.

For Normal, Cauchy, Laplace, Logistic and Gumbel bases ``log F``, ``log S`` and their inverses
(:mod:`~ppl.distributions.log_tails`) are closed forms accurate in both tails (``log F`` of a
Cauchy is ``log(atan2(1, -z) / pi)``, of a Laplace ``z - log 2`` left of the centre, ...), so
an interval such as ``[1e3, 1e4]`` under a standard Cauchy keeps full relative precision.
Other bases on the real line go through their own ``cdf`` and ``icdf`` (accurate where ``F``
and ``1 - F`` are).

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     d = TruncatedDistribution(dist.Laplace(0.0, 1.0), low=30.0, high=40.0)
...     round(float(d.log_prob(31.0)), 6), bool(30.0 <= float(d.sample(ppl.random.key(0))) <= 40.0)
(-0.999955, True)
"""

from __future__ import annotations

import math

import numpy as np

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.locscale import Cauchy, Normal
from ppl.distributions.log_tails import (
    at_limits,
    tails_of,
    truncated_cdf,
    truncated_log_prob,
)
from ppl.distributions.truncated import TruncatedNormal, may_be_open, support_between
from ppl.distributions.util import (
    LOG_2,
    as_float,
    finfo,
    log1mexp,
    log1p_square,
    mask_outside,
    restrict,
)
from ppl.distributions.validation import check_ordered, validate_sample

__all__ = ["TruncatedCauchy", "TruncatedDistribution"]


class TruncatedDistribution(Distribution):
    """``base_dist`` restricted to ``[low, high]``; ``None`` (or an infinite entry) leaves a
    side open.

    Parameters
    ----------
    base_dist
        A univariate continuous family on the real line: Normal, Cauchy, Laplace, Logistic,
        Gumbel, or any :class:`Distribution` with ``support`` ``constraints.real`` that
        implements ``cdf`` and ``icdf`` (StudentT does not, so it cannot be truncated yet).
    low, high
        Bounds, arrays broadcasting with ``base_dist.batch_shape``; ``low < high`` is checked
        with ``validate_args``. ``None`` or an infinite entry leaves a side open, also at a
        latent site (``low=np.array([-np.inf, 0.0])``): ``biject_to`` maps the support entry
        by entry then, as for :class:`~ppl.distributions.truncated.TruncatedNormal`.
    validate_args
        As for every distribution.

    As in NumPyro, a :class:`Normal` base gives a
    :class:`~ppl.distributions.truncated.TruncatedNormal` (which also has ``mean`` and
    ``variance``) and no bounds give ``base_dist`` itself, both from ``__new__``. ``support``
    is ``interval(low, high)``, ``greater_than_eq(low)`` (as TruncatedNormal's: a draw may
    round onto ``low``) or ``less_than(high)``, and ``interval(low, high)`` (an infinite side
    as ``inf``) whenever a bound may hold infinite entries: given as a backend array, or with
    an infinite entry. Draws are reparameterized (in the base's
    parameters, ``low`` and ``high``) when the base's are. ``mean`` and ``variance`` are known
    for a Cauchy base (integrals of ``z / (1 + z^2)`` and ``z^2 / (1 + z^2)``: Johnson, Kotz &
    Balakrishnan 1994, "Continuous Univariate Distributions" vol. 1, ch. 16); other bases raise
    ``NotImplementedError``.

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = TruncatedDistribution(dist.Cauchy(0.0, 1.0), low=1e3, high=1e4)
    ...     round(float(d.log_prob(2e3)), 6), round(float(d.mean), 3)
    (-8.188689, 2558.428)
    """

    arg_constraints = {"low": constraints.dependent, "high": constraints.dependent}

    def __new__(cls, base_dist=None, low=None, high=None, *, validate_args=None):
        if cls is TruncatedDistribution and isinstance(base_dist, Distribution):
            if low is None and high is None:
                tails_of(cls.__name__, base_dist)
                return base_dist
            if type(base_dist) is Normal:
                return TruncatedNormal(base_dist.loc, base_dist.scale, low=low, high=high,
                                       validate_args=validate_args)
        return super().__new__(cls)     # (copy and pickle call it without arguments)

    def __init__(self, base_dist, low=None, high=None, *, validate_args=None):
        owner = type(self).__name__
        self._tails = tails_of(owner, base_dist)
        self.base_dist = base_dist
        self._open_entries = may_be_open(low, high)
        self.low = None if low is None else as_float(low)
        self.high = None if high is None else as_float(high)
        shapes = {"base_dist.batch_shape": base_dist.batch_shape}
        shapes.update({f"{n}.shape": tuple(ops.shape(getattr(self, n)))
                       for n in ("low", "high") if getattr(self, n) is not None})
        try:
            batch = tuple(ops.broadcast_shapes(*shapes.values()))
        except ValueError:
            raise ValueError(
                f"{owner}: {', '.join(f'{k} {v}' for k, v in shapes.items())} do not "
                "broadcast; give low and high shapes that broadcast with the base's batch "
                "shape (NumPy's rules).") from None
        super().__init__(batch, validate_args=validate_args)

    def _validate_parameters(self):
        # under validation only, as TruncatedNormal and Uniform: latent bounds may visit NaN
        super()._validate_parameters()
        if self.low is not None and self.high is not None:
            check_ordered(self, "low", "high")

    @property
    def support(self):
        return support_between(self.low, self.high, open_entries=self._open_entries,
                               bounds=self._bounds)

    @property
    def reparametrized_params(self):
        if not self.base_dist.has_rsample:
            return []
        return list(self.base_dist.reparametrized_params) + [
            n for n in ("low", "high") if getattr(self, n) is not None]

    # ------------------------------------------------------------------ the computation
    def _bounds(self):
        def bound(value, fill):
            return ops.full(self.batch_shape, fill) if value is None else ops.broadcast_to(
                value, self.batch_shape)
        return bound(self.low, -np.inf), bound(self.high, np.inf)

    def _log_tail(self, x, use_sf):
        """``log S(x)`` where ``use_sf``, else ``log F(x)``; each side sees the median where
        it is not used, so neither gradient is a ``0 * inf``."""
        t = self._tails
        med = t.median
        lf = at_limits(t.log_cdf, ops.where(use_sf, med, x), med, -np.inf, 0.0)
        ls = at_limits(t.log_sf, ops.where(use_sf, x, med), med, 0.0, -np.inf)
        return ops.where(use_sf, ls, lf)

    def _mass(self):
        """``(a, b, flip, lo, hi, log Z)``: on rows with ``flip`` (``a`` right of the
        median) ``lo, hi = log S(b), log S(a)``, elsewhere ``log F(a), log F(b)``."""
        a, b = self._bounds()
        flip = a > self._tails.median
        lo = self._log_tail(ops.where(flip, b, a), flip)
        hi = self._log_tail(ops.where(flip, a, b), flip)
        return a, b, flip, lo, hi, hi + log1mexp(ops.minimum(lo - hi, 0.0))

    def _quantile(self, w, *, of_cdf=False):
        """The point whose tail probability (``F`` or, on flipped rows, ``S``) is
        ``exp(lo) + w (exp(hi) - exp(lo))``, clipped into ``[low, high]``; with ``of_cdf``,
        ``w`` is a probability of the truncated CDF (``1 - w`` on flipped rows)."""
        a, b, flip, lo, hi, _ = self._mass()
        if of_cdf:
            w = ops.where(flip, 1.0 - w, w)
        log_p = hi + ops.log(w + (1.0 - w) * ops.exp(lo - hi))
        log_p = ops.minimum(log_p, -float(finfo(log_p).eps))    # the inverses are inf at 0
        t = self._tails
        x = ops.where(flip, t.isf_log(ops.where(flip, log_p, -LOG_2)),
                      t.icdf_log(ops.where(flip, -LOG_2, log_p)))
        return ops.minimum(ops.maximum(x, a), b)

    def sample(self, key, sample_shape=()):
        v = 1.0 - random.uniform(key, self.shape(sample_shape))    # in (0, 1]
        return self._quantile(v)

    def icdf(self, q):
        return self._quantile(as_float(q), of_cdf=True)

    @validate_sample
    def log_prob(self, value):
        x = as_float(value)
        a, b, _, _, _, log_z = self._mass()
        inside = ops.logical_and(x >= a, x <= b)
        x = ops.where(inside, x, ops.minimum(ops.maximum(x, a), b))    # finite outside
        return mask_outside(inside, truncated_log_prob(self.base_dist, x, a, b, log_z))

    def cdf(self, value):
        a, b, flip, lo, _, log_z = self._mass()
        x = as_float(value)
        x = ops.where(x < a, a, ops.where(x > b, b, x))
        # F(x) - F(a), or on flipped rows S(x) - S(b), from log F(x) (log S(x)) and lo
        lx = self._log_tail(x, flip)
        above = lx > lo
        part = ops.exp(lx + log1mexp(ops.where(above, lo - lx, -1.0)) - log_z)
        part = ops.where(above, part, ops.zeros_like(part))
        return truncated_cdf(self.base_dist, x, a, b, ops.where(flip, 1.0 - part, part))

    # ------------------------------------------------------------------ moments (Cauchy)
    def _cauchy_moments(self, what: str):
        base = self.base_dist
        if type(base) is not Cauchy:
            raise NotImplementedError(
                f"{type(self).__name__}.{what} is known in closed form for a Cauchy base (and a "
                f"Normal one, as TruncatedNormal), not {type(base).__name__}; estimate it from "
                "draws (d.sample(key, (n,)).mean(0)) instead.")
        a, b, _, _, _, log_z = self._mass()
        fa, fb = ops.isfinite(a), ops.isfinite(b)
        za = (restrict(fa, a, 0.0) - base.loc) / base.scale
        zb = (restrict(fb, b, 0.0) - base.loc) / base.scale
        pz = math.pi * ops.exp(log_z)
        # E z = (log(1 + b^2) - log(1 + a^2)) / (2 pi Z), E z^2 = (b - a) / (pi Z) - 1
        m = 0.5 * (log1p_square(zb) - log1p_square(za)) / pz
        both = ops.logical_and(fa, fb)
        return both, fa, fb, m, (zb - za) / pz - 1.0 - m * m

    @property
    def mean(self):
        """Finite when both bounds are; ``inf`` / ``-inf`` with one, ``nan`` with none."""
        both, fa, fb, m, _ = self._cauchy_moments("mean")
        base = self.base_dist
        zero = ops.zeros_like(m)
        one = ops.where(fa, zero + np.inf, ops.where(fb, zero - np.inf, zero + np.nan))
        return ops.where(both, base.loc + base.scale * m, one)

    @property
    def variance(self):
        """Finite when both bounds are, ``inf`` otherwise. It loses relative precision for
        intervals much narrower than their distance from ``loc`` (a difference of moments)."""
        both, _, _, _, v = self._cauchy_moments("variance")
        scale = self.base_dist.scale
        return ops.where(both, scale * scale * v, ops.zeros_like(v) + np.inf)

    def __repr__(self):
        return (f"<{type(self).__name__}({type(self.base_dist).__name__}) "
                f"batch_shape={self.batch_shape} event_shape={self.event_shape}>")


class TruncatedCauchy(TruncatedDistribution):
    """``Cauchy(loc, scale)`` restricted to ``[low, high]`` (NumPyro's name): a
    :class:`TruncatedDistribution` of a Cauchy base, with ``mean`` and ``variance`` finite
    when both bounds are.

    Parameters
    ----------
    loc, scale
        Location and scale of the untruncated Cauchy.
    low, high
        Truncation bounds (keyword-only); ``None`` or an infinite entry leaves a side open.

    >>> import ppl
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = TruncatedCauchy(0.0, 1.0, low=0.0, high=1.0)
    ...     round(float(d.log_prob(0.5)), 6), round(float(d.mean), 6)
    (0.018421, 0.441271)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "low": constraints.dependent, "high": constraints.dependent}

    def __new__(cls, *args, **kwargs):      # always itself (no dispatch on the base)
        return object.__new__(cls)

    def __init__(self, loc=0.0, scale=1.0, *, low=None, high=None, validate_args=None):
        self.loc, self.scale = as_float(loc), as_float(scale)
        super().__init__(Cauchy(self.loc, self.scale, validate_args=validate_args), low=low,
                         high=high, validate_args=validate_args)
