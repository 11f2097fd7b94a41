"""Zero-inflated counts, with NumPyro's names: :class:`ZeroInflatedDistribution` over any
univariate discrete base, and its two common cases :class:`ZeroInflatedPoisson` and
:class:`ZeroInflatedNegativeBinomial2`.

A draw is a structural zero with probability ``gate`` and a draw of the base otherwise, so
``P(0) = gate + (1 - gate) p(0)`` and ``P(k) = (1 - gate) p(k)`` for ``k != 0`` (Lambert 1992,
"Zero-inflated Poisson regression, with an application to defects in manufacturing",
Technometrics 34(1)). The gate is given as ``gate=`` or ``gate_logits=`` (exactly one).

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     d = dist.ZeroInflatedPoisson(0.2, 3.0)
...     round(float(d.log_prob(0)), 6), round(float(d.mean), 6)
(-1.427826, 2.4)
"""

from __future__ import annotations

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.counts import NegativeBinomial2
from ppl.distributions.discrete import Poisson
from ppl.distributions.distribution import Distribution, base_support
from ppl.distributions.parametrization import derived_parameter, set_one_of
from ppl.distributions.util import as_float, as_int, clamp_probs, full_batch
from ppl.distributions.validation import batch_shape_of, validate_sample

__all__ = ["ZeroInflatedDistribution", "ZeroInflatedNegativeBinomial2", "ZeroInflatedPoisson"]


class ZeroInflatedDistribution(Distribution):
    """``base_dist`` with extra zeros: zero with probability ``gate``, else a draw of
    ``base_dist``.

    Parameters
    ----------
    base_dist
        A discrete distribution with no event dims (Poisson, NegativeBinomial2, Binomial, ...).
    gate, gate_logits
        Exactly one (keyword-only): the probability of a structural zero, or its log-odds. The
        other is available as an attribute, computed on access.

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.ZeroInflatedDistribution(dist.Binomial(3, probs=0.5), gate_logits=0.0)
    ...     [round(float(p), 4) for p in ppl.ops.exp(d.log_prob(d.enumerate_support()))]
    [0.5625, 0.1875, 0.1875, 0.0625]
    """

    arg_constraints = {"gate": constraints.unit_interval, "gate_logits": constraints.real}

    def __init__(self, base_dist, *, gate=None, gate_logits=None, validate_args=None):
        family = type(self).__name__
        if not isinstance(base_dist, Distribution):
            raise TypeError(f"{family}: base_dist must be a Distribution, got {base_dist!r}.")
        if not base_dist.is_discrete or base_dist.event_shape:
            raise ValueError(
                f"{family}: base_dist must be a discrete distribution with no event dims (its "
                f"values are counts), got {base_dist!r} with support {base_dist.support!r}. "
                "For a vector of counts, zero-inflate a batch and use .to_event(1).")
        self._param = set_one_of(self, gate=gate, gate_logits=gate_logits)
        own = batch_shape_of(self)
        try:
            batch = tuple(ops.broadcast_shapes(own, base_dist.batch_shape))
        except ValueError as err:
            raise ValueError(
                f"{family}: {self._param} (and the other parameters) with batch shape {own} "
                f"does not broadcast with base_dist's batch_shape {base_dist.batch_shape}; give "
                "them shapes that broadcast under NumPy's rules.") from err
        self.base_dist = base_dist
        super().__init__(batch, validate_args=validate_args)

    @derived_parameter
    def gate(self):
        """Probability of a structural zero, ``sigmoid(gate_logits)``."""
        return ops.sigmoid(self.__dict__["gate_logits"])

    @derived_parameter
    def gate_logits(self):
        """Log-odds of a structural zero, ``logit(gate)`` (gate clamped away from 0 and 1)."""
        return ops.logit(clamp_probs(self.__dict__["gate"]))

    @property
    def support(self):
        return self.base_dist.support

    @property
    def has_enumerate_support(self):
        return self.base_dist.has_enumerate_support

    def sample(self, key, sample_shape=()):
        k_gate, k_base = random.split_keys(key, 2)
        shape = self.shape(sample_shape)
        structural = random.bernoulli(k_gate, ops.broadcast_to(self.gate, self.batch_shape),
                                      shape)
        x = self.base_dist.expand(self.batch_shape).sample(k_base, sample_shape)
        return as_int(ops.where(structural, ops.zeros_like(x), x))

    @validate_sample
    def log_prob(self, value):
        value = as_float(value)
        lp = self.base_dist.log_prob(value)
        if self._param == "gate_logits":
            l = self.__dict__["gate_logits"]
            nonzero = lp - ops.softplus(l)
            # log(g + (1 - g) p0) = log g + log(1 + exp(log p0 - logits))
            zero = ops.softplus(lp - l) - ops.softplus(-l)
        else:
            g = self.__dict__["gate"]
            nonzero = lp + ops.log1p(-g)
            zero = ops.log(g + (1.0 - g) * ops.exp(lp))
        return ops.where(value == 0, zero, nonzero)

    def enumerate_support(self, expand=True):
        """The base's support values on a new leading axis (the base must enumerate one set of
        values for its whole batch, as every family with ``enumerate_support`` does)."""
        return base_support(self, expand)

    @property
    def mean(self):
        return full_batch(self, (1.0 - self.gate) * self.base_dist.mean)

    @property
    def variance(self):
        m, v, g = self.base_dist.mean, self.base_dist.variance, self.gate
        # E[X^2] = (1 - g) (v + m^2), so Var = (1 - g) (v + g m^2)
        return full_batch(self, (1.0 - g) * (v + g * m * m))


class ZeroInflatedPoisson(ZeroInflatedDistribution):
    """Zero-inflated ``Poisson(rate)``: zero with probability ``gate``, else a Poisson count.

    Parameters
    ----------
    gate
        Probability of a structural zero (NumPyro's first, positional, argument).
    rate
        Rate of the Poisson (positive).
    gate_logits
        Instead of ``gate`` (keyword-only): its log-odds.

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.ZeroInflatedPoisson(rate=ppl.ops.asarray([1.0, 4.0]), gate_logits=-1.0)
    ...     d.batch_shape, round(float(d.gate), 6)
    ((2,), 0.268941)
    """

    arg_constraints = {"gate": constraints.unit_interval, "gate_logits": constraints.real,
                       "rate": constraints.positive}

    def __init__(self, gate=None, rate=1.0, *, gate_logits=None, validate_args=None):
        self.rate = as_float(rate)
        super().__init__(Poisson(self.rate), gate=gate, gate_logits=gate_logits,
                         validate_args=validate_args)


class ZeroInflatedNegativeBinomial2(ZeroInflatedDistribution):
    """Zero-inflated :class:`NegativeBinomial2` (``mean``, ``concentration``): zero with
    probability ``gate``, else a negative binomial count. Mean ``(1 - gate) mean``.

    Parameters
    ----------
    mean, concentration
        Those of the :class:`NegativeBinomial2` (``base_dist``, which checks them when
        validating).
    gate, gate_logits
        Exactly one (keyword-only): the probability of a structural zero, or its log-odds.

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.ZeroInflatedNegativeBinomial2(4.0, 2.0, gate=0.25)
    ...     round(float(d.log_prob(0)), 6), float(d.mean)
    (-1.098612, 3.0)
    """

    def __init__(self, mean, concentration, *, gate=None, gate_logits=None,
                 validate_args=None):
        base = NegativeBinomial2(mean, concentration, validate_args=validate_args)
        super().__init__(base, gate=gate, gate_logits=gate_logits, validate_args=validate_args)

    @property
    def concentration(self):
        """The ``concentration`` of the negative binomial (``base_dist.concentration``)."""
        return self.base_dist.concentration
