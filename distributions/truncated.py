"""The truncated normal distribution.

Sampling inverts the CDF, reflecting the interval to the left tail first (where ``log_ndtr``
keeps its relative precision), with the target probability in log space inverted by
``ops.ndtri_exp``; the normalizer is computed in log space too, so intervals far in a tail stay
accurate (the reflection of Chopin 2011, "Fast simulation of truncated Gaussian distributions",
with an inverse-CDF draw).

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     d = dist.TruncatedNormal(0.0, 1.0, low=0.0)
...     round(float(d.mean), 6)
0.797885
"""

from __future__ import annotations

import numpy as np

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.parametrization import set_parameters
from ppl.distributions.util import (
    HALF_LOG_2PI,
    as_float,
    finfo,
    log1mexp,
    mask_outside,
    restrict,
)
from ppl.distributions.validation import check_ordered, validate_sample

__all__ = ["TruncatedNormal", "may_be_open", "support_between"]


def _standardize(bound, loc, scale, sign):
    """``(bound - loc) / scale``, with ``sign * inf`` for a missing (``None``) or infinite
    bound; infinite entries are kept out of the arithmetic so their gradients stay zero."""
    if bound is None:
        return ops.zeros_like(loc / scale) + sign * np.inf
    fin = ops.isfinite(bound)
    z = (restrict(fin, bound, 0.0) - loc) / scale
    return ops.where(fin, z, ops.zeros_like(z) + bound)


def _log_ndtr(x):
    """``log Phi(x)``, with ``-inf`` at ``x = -inf`` kept out of the derivative."""
    fin = x > -np.inf
    lx = ops.log_ndtr(restrict(fin, x, 0.0))
    return ops.where(fin, lx, ops.zeros_like(lx) - np.inf)


def _ndtr(x):
    """``Phi(x)`` as ``exp(log_ndtr(x))``: relative accuracy far into the left tail."""
    return ops.exp(_log_ndtr(x))


def may_be_open(low, high) -> bool:
    """Whether the bounds may hold infinite entries: one of them is a number or NumPy array
    with one, or a value that cannot be read (a backend array, traced) (``None`` sides count
    as closed here: they are handled apart)."""
    return not all(constraints.known_finite(b) for b in (low, high))


def support_between(low, high, *, open_entries: bool, bounds=None):
    """The support ``[low, high]`` of a truncated family, ``None`` an open side:
    ``interval`` / ``greater_than_eq`` / ``less_than`` / ``real``, or, where the bounds may
    hold infinite entries (:func:`may_be_open`), an ``ExtendedInterval`` that ``biject_to`` maps
    entry by entry, between ``bounds()`` (default: the bounds, ``None`` as ``-inf``/``inf``)."""
    if low is None and high is None:
        return constraints.real
    if open_entries:
        lo, hi = bounds() if bounds is not None else (
            -np.inf if low is None else low, np.inf if high is None else high)
        return constraints.ExtendedInterval(lo, hi)
    if high is None:
        return constraints.greater_than_eq(low)
    if low is None:
        return constraints.less_than(high)
    return constraints.interval(low, high)


class TruncatedNormal(Distribution):
    """``Normal(loc, scale)`` restricted to ``[low, high]``; ``None`` (or an infinite entry)
    leaves a side open.

    Parameters
    ----------
    loc, scale
        Location and scale of the untruncated normal.
    low, high
        Truncation bounds (keyword-only, NumPyro's names). Entries may be infinite
        (``low=np.array([-np.inf, 0.0])``), also at a latent site: ``support`` is then an
        ``interval`` that ``biject_to`` maps entry by entry (``IntervalTransform``). Bounds
        given as Python numbers or NumPy arrays with only finite entries keep the sigmoid
        (``exp``) map of a plain ``interval`` (``greater_than_eq``, ``less_than``); bounds given
        as backend arrays are not read and take the entry-by-entry map, which is the same map
        where both bounds are finite.
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "low": constraints.dependent, "high": constraints.dependent}
    reparametrized_params = ["loc", "scale", "low", "high"]

    def __init__(self, loc=0.0, scale=1.0, *, low=None, high=None, validate_args=None):
        self._open_entries = may_be_open(low, high)
        batch = set_parameters(self, loc=loc, scale=scale, low=low, high=high)
        super().__init__(batch, validate_args=validate_args)

    @property
    def support(self):
        return support_between(self.low, self.high, open_entries=self._open_entries)

    def _validate_parameters(self):
        super()._validate_parameters()
        if self.low is not None and self.high is not None:
            check_ordered(self, "low", "high")

    # a < b standardized bounds; the reflected pair (a', b') has a' <= 0 so that
    # Phi(b') - Phi(a') loses no precision to cancellation near 1.
    def _bounds(self):
        a = _standardize(self.low, self.loc, self.scale, -1.0)
        b = _standardize(self.high, self.loc, self.scale, 1.0)
        a, b = ops.broadcast_to(a, self.batch_shape), ops.broadcast_to(b, self.batch_shape)
        flip = a > 0
        return a, b, flip, ops.where(flip, -b, a), ops.where(flip, -a, b)

    def _log_z(self, ra, rb):
        la, lb = _log_ndtr(ra), _log_ndtr(rb)
        return lb + log1mexp(ops.minimum(la - lb, 0.0))

    def sample(self, key, sample_shape=()):
        shape = self.shape(sample_shape)
        _, _, flip, ra, rb = self._bounds()
        la, lb = _log_ndtr(ra), _log_ndtr(rb)
        v = 1.0 - random.uniform(key, shape)                    # in (0, 1]
        # log p for p = Phi(ra) + v (Phi(rb) - Phi(ra)), below 1 - eps (ndtri(1) is inf)
        log_p = lb + ops.log(v + (1.0 - v) * ops.exp(la - lb))
        log_p = ops.minimum(log_p, -float(finfo(log_p).eps))
        z = ops.minimum(ops.maximum(ops.ndtri_exp(log_p), ra), rb)
        z = ops.where(flip, -z, z)
        return self.loc + self.scale * z

    @validate_sample
    def log_prob(self, value):
        value = as_float(value)
        _, _, _, ra, rb = self._bounds()
        z = (value - self.loc) / self.scale
        lp = -0.5 * z * z - HALF_LOG_2PI - ops.log(self.scale) - self._log_z(ra, rb)
        inside = ops.ones_like(z) > 0
        if self.low is not None:
            inside = ops.logical_and(inside, value >= self.low)
        if self.high is not None:
            inside = ops.logical_and(inside, value <= self.high)
        return mask_outside(inside, lp)

    def cdf(self, value):
        z = (as_float(value) - self.loc) / self.scale
        a, b, flip, ra, rb = self._bounds()
        zc = ops.minimum(ops.maximum(z, a), b)
        # on reflected rows, Phi(z) - Phi(a) = Phi(-a) - Phi(-z): both terms in the left tail
        mass = ops.where(flip, _ndtr(rb) - _ndtr(-zc), _ndtr(zc) - _ndtr(ra))
        return ops.exp(ops.log(ops.maximum(mass, 0.0)) - self._log_z(ra, rb))

    def _moments(self):
        a, b, _, ra, rb = self._bounds()
        log_z = self._log_z(ra, rb)
        fa, fb = ops.isfinite(a), ops.isfinite(b)
        a0, b0 = restrict(fa, a, 0.0), restrict(fb, b, 0.0)
        # phi(x) / Z in log space; zero at infinite bounds
        ra_ = ops.where(fa, ops.exp(-0.5 * a0 * a0 - HALF_LOG_2PI - log_z), ops.zeros_like(a))
        rb_ = ops.where(fb, ops.exp(-0.5 * b0 * b0 - HALF_LOG_2PI - log_z), ops.zeros_like(b))
        m = ra_ - rb_
        v = 1.0 + a0 * ra_ - b0 * rb_ - m * m
        return m, v

    @property
    def mean(self):
        m, _ = self._moments()
        return self.loc + self.scale * m

    @property
    def variance(self):
        _, v = self._moments()
        return ops.broadcast_to(self.scale * self.scale * v, self.batch_shape)
