"""Distributions of angles: VonMises (NumPyro's name and parameters), on ``[-pi, pi]``.

The log-density needs ``log I0(kappa)``, the modified Bessel function of the first kind, which
``ppl.ops`` does not have; it is computed here over ``ppl.ops`` (:func:`log_i0e`), exponentially
scaled so that it stays finite for any concentration, and differentiable on every backend.

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     round(float(dist.VonMises(0.0, 2.0).log_prob(0.5)), 6)
-0.906705
"""

from __future__ import annotations

import math

import numpy as np

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.parametrization import set_parameters
from ppl.distributions.util import as_float, full_batch, log1mexp
from ppl.distributions.validation import validate_sample

__all__ = ["VonMises", "i1_over_i0", "log_i0e"]

_LOG_2PI = math.log(2.0 * math.pi)
#: below this argument the Bessel functions are summed from their ascending series, above it
#: from their asymptotic expansion; with these term counts both reach float64's rounding
_SWITCH = 20.0
_SERIES_TERMS = 45
_ASYMPTOTIC_TERMS = 30
_K = np.arange(max(_SERIES_TERMS, _ASYMPTOTIC_TERMS) + 2, dtype=np.float64)
_LOG_FACTORIAL = np.concatenate([[0.0], np.cumsum(np.log(_K[1:]))])
#: ``log(a_k)`` of the asymptotic expansions' coefficients: for order 0 all terms are positive,
#: ``a_k = prod_{j<=k} (2j - 1)^2 / (8 j)``; for order 1 every term after the first is
#: negative, ``-a_k`` with ``a_k = |prod_{j<=k} ((2j - 1)^2 - 4) / (8 j)|``
_LOG_ASYMPTOTIC = {
    order: np.cumsum(np.log(np.abs((2.0 * _K[1:_ASYMPTOTIC_TERMS + 1] - 1.0) ** 2
                                   - 4.0 * order * order) / (8.0 * _K[1:_ASYMPTOTIC_TERMS + 1])))
    for order in (0, 1)}
#: proposal rounds of the rejection sampler: 5 steps of 8 rounds drawn at once. A round accepts
#: with probability at least sqrt(e / (2 pi)) = 0.6577 whatever the concentration (its limit as
#: kappa -> inf; it rises to 1 as kappa -> 0), so a draw is still unaccepted after 40 rounds,
#: and NaN, with probability below 0.3423**40 = 2.4e-19
_STEPS, _ROUNDS_PER_STEP = 5, 8


def _log_series(x, order: int):
    """``log sum_{k<=45} (x^2/4)^k / (k! (k + order)!)`` for ``x > 0``, so that
    ``I_order(x) = (x/2)^order * exp(...)`` (Abramowitz & Stegun 1964, 9.6.10). The terms sit
    on a new last axis: a few vectorised ops however many terms there are."""
    dtype = ops.dtype_of(x)
    k = ops.asarray(_K[:_SERIES_TERMS + 1], dtype)
    log_denom = _LOG_FACTORIAL[:_SERIES_TERMS + 1] + _LOG_FACTORIAL[order:_SERIES_TERMS + 1 + order]
    log_t = ops.expand_dims(ops.log(0.25 * x * x), -1)
    return ops.logsumexp(log_t * k - ops.asarray(log_denom, dtype), axis=-1)


def _log_asymptotic(x, order: int):
    """``log sum_k (-1)^k a_k(order) / x^k`` of the large-argument expansion
    ``I_order(x) ~ e^x / sqrt(2 pi x) * sum`` (Abramowitz & Stegun 1964, 9.7.1), 30 terms;
    for ``x >= 20`` the truncation error is below float64's rounding."""
    dtype = ops.dtype_of(x)
    k = ops.asarray(_K[1:_ASYMPTOTIC_TERMS + 1], dtype)
    log_terms = ops.asarray(_LOG_ASYMPTOTIC[order], dtype) - ops.expand_dims(ops.log(x), -1) * k
    log_rest = ops.logsumexp(log_terms, axis=-1)       # log of the sum of the terms k >= 1
    return ops.softplus(log_rest) if order == 0 else log1mexp(log_rest)   # log(1 +- rest)


def _split(x):
    """``(small, tiny, x_small, x_large)``: which entries use the series (``x < 20``), which
    are so small that ``x^2 / 4`` underflows (``I0 = 1``, ``I1 = 0`` to the dtype's precision),
    and ``x`` with the other entries replaced by a value each branch takes (1 for the series,
    20 for the expansion), so that neither branch nor its gradient sees an argument it cannot
    take."""
    small, tiny = x < _SWITCH, 0.25 * x * x <= 0
    return (small, tiny,
            ops.where(ops.logical_or(tiny, ops.logical_not(small)), ops.ones_like(x), x),
            ops.where(small, ops.zeros_like(x) + _SWITCH, x))


def log_i0e(x):
    """``log(I0(x) e^{-x})`` for ``x >= 0``: the log of the exponentially scaled modified Bessel
    function of the first kind of order 0 (``log(scipy.special.i0e(x))``), finite for every
    finite ``x`` and accurate to float64's rounding; differentiable (its derivative is
    ``I1(x) / I0(x) - 1``).

    Ascending series below ``x = 20``, asymptotic expansion above (Abramowitz & Stegun 1964,
    *Handbook of Mathematical Functions*, 9.6.10 and 9.7.1), both summed in log space.

    >>> import ppl
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     [round(float(log_i0e(ppl.ops.asarray(x))), 6) for x in (0.0, 1.0, 500.0)]
    [0.0, -0.764086, -4.025992]
    """
    x = as_float(x)
    small, tiny, xs, xl = _split(x)
    log_i0 = ops.where(tiny, ops.zeros_like(x), _log_series(xs, 0))
    return ops.where(small, log_i0 - x,
                     _log_asymptotic(xl, 0) - 0.5 * ops.log(2.0 * math.pi * xl))


def i1_over_i0(x):
    """``I1(x) / I0(x)`` for ``x >= 0`` (the mean resultant length of ``VonMises(., x)``), from
    the same expansions as :func:`log_i0e`.

    >>> import ppl
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     round(float(i1_over_i0(ppl.ops.asarray(2.0))), 6)
    0.697775
    """
    x = as_float(x)
    small, tiny, xs, xl = _split(x)
    series = 0.5 * xs * ops.exp(_log_series(xs, 1) - _log_series(xs, 0))
    series = ops.where(tiny, 0.5 * x, series)
    return ops.where(small, series, ops.exp(_log_asymptotic(xl, 1) - _log_asymptotic(xl, 0)))


def _wrap(angle):
    """``angle`` wrapped into ``[-pi, pi)``."""
    two_pi = 2.0 * math.pi
    wrapped = angle - two_pi * ops.floor((angle + math.pi) / two_pi)
    return ops.where(wrapped >= math.pi, wrapped - two_pi, wrapped)


def _best_fisher_constants(kappa):
    """The constants of Best & Fisher's proposal for concentration ``kappa``, in forms without
    cancellation or overflow at either end (``kappa -> 0`` and ``kappa -> inf``).

    With ``tau = 1 + sqrt(1 + 4 kappa^2)``, ``rho = (tau - sqrt(2 tau)) / (2 kappa)`` and
    ``r = (1 + rho^2) / (2 rho)`` (the paper's), returns ``q = 1 / r``, ``1 - q`` and
    ``kappa / q``: ``tau - sqrt(2 tau) = 4 kappa^2 / (tau + sqrt(2 tau))`` gives
    ``rho = 2 kappa / d`` with ``d = tau + sqrt(2 tau)``, and
    ``tau - 2 kappa = 1 + 1 / (sqrt(1 + 4 kappa^2) + 2 kappa)`` gives ``1 - rho``.
    """
    big = ops.maximum(2.0 * kappa, ops.ones_like(kappa))
    root = big * ops.sqrt((1.0 / big) ** 2 + (2.0 * kappa / big) ** 2)   # sqrt(1 + 4 kappa^2)
    tau = 1.0 + root
    d = tau + ops.sqrt(2.0 * tau)
    rho = 2.0 * kappa / d
    one_minus_rho = (1.0 + 1.0 / (root + 2.0 * kappa) + ops.sqrt(2.0 * tau)) / d
    one_plus_rho2 = 1.0 + rho * rho
    q = 2.0 * rho / one_plus_rho2
    return q, one_minus_rho * one_minus_rho / one_plus_rho2, one_plus_rho2 * d / 4.0


def _von_mises_centered(key, kappa, shape, dtype):
    """Draws of ``VonMises(0, kappa)`` by the rejection sampler of Best & Fisher (1979,
    "Efficient simulation of the von Mises distribution", Appl. Statist. 28, 152-157): a
    wrapped-Cauchy proposal ``f = (1 + r z) / (r + z)``, ``z = cos(pi u)``, accepted with the
    squeeze ``c (2 - c) > v`` or the test ``log(c / v) + 1 - c >= 0``, ``c = kappa (r - f)``;
    the angle is ``sign(u) arccos(f)``.

    Every entry proposes in a fixed number of rounds (``ops.fori_loop`` over steps of 8
    rounds drawn at once, few ops for a compiler to trace) and keeps its first accepted angle:
    no data-dependent loop, so the sampler runs under every backend's ``jit`` and ``vmap`` (a
    ``while_loop`` until all accept cannot run under torch's ``vmap``, as ``Predictive`` uses
    it). ``1 - f``, ``c`` and the angle are formed without
    cancellation: ``1 - f = (1 - q)(1 - z) / (1 + q z)`` with
    ``q = 1 / r``, ``c = kappa (1 - q) / q + kappa (1 - f)``, and
    ``arccos(f) = 2 arcsin(sqrt((1 - f) / 2))``, so tiny and huge concentrations stay exact.
    """
    kappa = ops.stop_gradient(kappa)
    q, one_minus_q, kappa_over_q = _best_fisher_constants(kappa)
    nan = ops.full(shape, math.nan, dtype=dtype)

    rounds = (_ROUNDS_PER_STEP,) + tuple(shape)

    def body(i, carry):
        key, done, angle = carry
        key, ku, kv = random.split_keys(key, 3)
        u = random.uniform(ku, rounds, dtype, minval=-1.0, maxval=1.0)
        v = 1.0 - random.uniform(kv, rounds, dtype)                 # in (0, 1]
        half = 0.5 * math.pi * u
        one_minus_z, one_plus_z = 2.0 * ops.sin(half) ** 2, 2.0 * ops.cos(half) ** 2
        one_minus_f = one_minus_q * one_minus_z / (one_minus_q + q * one_plus_z)
        one_minus_f = ops.clip(one_minus_f, 0.0, 2.0)
        c = kappa_over_q * one_minus_q + kappa * one_minus_f
        accept = ops.logical_or(c * (2.0 - c) > v, ops.log(c / v) + 1.0 - c >= 0.0)
        new = ops.sign(u) * 2.0 * ops.asin(ops.sqrt(0.5 * one_minus_f))
        # the step's first accepted round (any rule that looks only at which rounds accepted,
        # not at their angles, keeps the accepted angle's law)
        first = ops.argmax(ops.astype(accept, "int32"), axis=0)
        new = ops.take_along_axis(new, ops.expand_dims(first, 0), axis=0)[0]
        accepted = ops.any(accept, axis=0)
        take = ops.logical_and(accepted, ops.logical_not(done))
        return key, ops.logical_or(done, accepted), ops.where(take, new, angle)

    init = (key, ops.zeros(shape, dtype="bool"), nan)
    return ops.fori_loop(0, _STEPS, body, init)[2]


class VonMises(Distribution):
    """The von Mises (circular normal) distribution of an angle, with density
    ``exp(concentration * cos(x - loc)) / (2 pi I0(concentration))`` on ``[-pi, pi]``.

    Parameters
    ----------
    loc
        The mean direction (any real; draws and ``mean`` are wrapped into ``[-pi, pi)``).
    concentration
        ``kappa > 0``; near 0 the distribution is uniform on the circle, for large values it
        approaches ``Normal(loc, 1 / sqrt(kappa))``.

    Notes
    -----
    ``log_prob`` is the 2 pi-periodic density for any real angle, as NumPyro's and
    ``scipy.stats.vonmises``' (the support, ``constraints.circular``, is ``[-pi, pi]``, which
    ``validate_args`` checks). ``variance`` is the circular variance ``1 - I1(kappa) / I0(kappa)``
    and ``mean`` the wrapped ``loc``, as in NumPyro. Draws are Best & Fisher's (1979) rejection
    sampler; only ``loc`` is reparameterized.

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.VonMises(ppl.ops.asarray([0.0, 3.0]), 4.0)
    ...     x = d.sample(ppl.random.key(0), (1000,))
    ...     x.shape, bool((abs(x) <= 3.1416).all()), round(float(d.variance[0]), 4)
    ((1000, 2), True, 0.1365)
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.circular
    reparametrized_params = ["loc"]

    def __init__(self, loc, concentration, *, validate_args=None):
        super().__init__(set_parameters(self, loc=loc, concentration=concentration),
                         validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        shape = self.shape(sample_shape)
        centered = _von_mises_centered(key, self.concentration, shape,
                                       ops.dtype_of(self.concentration))
        return _wrap(centered + self.loc)

    @validate_sample
    def log_prob(self, value):
        """The density is 2 pi-periodic, as NumPyro's and SciPy's: angles in ``[0, 2 pi)`` are
        scored as the same angles in ``[-pi, pi)`` (``validate_args`` still checks the
        support)."""
        kappa = self.concentration
        return kappa * (ops.cos(as_float(value) - self.loc) - 1.0) - _LOG_2PI - log_i0e(kappa)

    def entropy(self):
        kappa = self.concentration
        return full_batch(self, _LOG_2PI + log_i0e(kappa) + kappa * (1.0 - i1_over_i0(kappa)))

    @property
    def mean(self):
        """The mean direction, ``loc`` wrapped into ``[-pi, pi)``."""
        return full_batch(self, _wrap(self.loc))

    @property
    def variance(self):
        """The circular variance ``1 - I1(kappa) / I0(kappa)`` (in ``[0, 1]``)."""
        return full_batch(self, 1.0 - i1_over_i0(self.concentration))
