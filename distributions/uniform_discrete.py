"""The discrete uniform family over an integer interval, with NumPyro's names: DiscreteUniform.

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     d = dist.DiscreteUniform(2, 5)
...     round(float(d.log_prob(3)), 6), float(d.mean)
(-1.386294, 3.5)
"""

from __future__ import annotations

import numpy as np

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.parametrization import set_parameters
from ppl.distributions.util import INT_DTYPE, as_float, as_int, expand_support, is_concrete
from ppl.distributions.validation import validate_sample

__all__ = ["DiscreteUniform"]


class DiscreteUniform(Distribution):
    """Each integer of ``low, low + 1, ..., high`` (both included) with probability
    ``1 / (high - low + 1)``.

    Parameters
    ----------
    low, high
        Integer bounds with ``low <= high`` (scalars or arrays broadcasting into the batch).

    References
    ----------
    Johnson, N. L., Kemp, A. W. and Kotz, S. (2005). Univariate Discrete Distributions, 3rd ed.,
    Wiley, section 6.10 (the discrete rectangular distribution).

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.DiscreteUniform(0, 3)
    ...     [int(v) for v in d.enumerate_support()], float(d.variance)
    ([0, 1, 2, 3], 1.25)
    """

    arg_constraints = {"low": constraints.dependent, "high": constraints.dependent}
    has_enumerate_support = True

    def __init__(self, low=0, high=1, *, validate_args=None):
        self._given = (low, high)
        batch = set_parameters(self, low=low, high=high)
        super().__init__(batch, (), validate_args=validate_args)

    def _validate_parameters(self):
        super()._validate_parameters()
        if not (is_concrete(self.low) and is_concrete(self.high)):
            return
        low, high = (np.asarray(ops.to_numpy(v)) for v in (self.low, self.high))
        if np.any(np.floor(low) != low) or np.any(np.floor(high) != high) or np.any(high < low):
            raise ValueError(
                f"DiscreteUniform: parameters 'low' and 'high' must be integers with low <= high, "
                f"got low={low!r}, high={high!r}. Pass integer bounds, low <= high.")

    @property
    def support(self):
        return constraints.integer_interval(self.low, self.high)

    def sample(self, key, sample_shape=()):
        # integers drawn as integers: floor(u * n) of a float32 uniform has 24 bits, so
        # DiscreteUniform(0, 10**8) drew 8 % odd numbers
        low, high = (ops.broadcast_to(as_int(v), self.batch_shape) for v in (self.low, self.high))
        return random.randint(key, self.shape(sample_shape), low, high + 1)

    @validate_sample
    def log_prob(self, value):
        """``-log(high - low + 1)`` on the support, ``-inf`` off it (NumPyro's gives the
        constant everywhere)."""
        value = as_float(value)
        inside = self.support.check(value)
        lp = -ops.log(self.high - self.low + 1.0) + ops.zeros_like(value)
        return ops.where(inside, lp, ops.zeros_like(lp) - np.inf)

    def cdf(self, value):
        """``(floor(value) + 1 - low) / (high - low + 1)`` clipped into ``[0, 1]`` (NumPyro's
        and ``scipy.stats.randint``'s)."""
        n = self.high - self.low + 1.0
        return ops.clip((ops.floor(as_float(value)) + 1.0 - self.low) / n, 0.0, 1.0)

    def icdf(self, q):
        """The smallest integer ``k`` with ``cdf(k) >= q`` (``scipy.stats.randint.ppf``), a
        float: ``low - 1`` at ``q = 0``, ``high`` at ``q = 1``, NaN outside ``[0, 1]``.

        NumPyro's ``icdf`` is the line ``low - 1 + q (high - low + 1)``, equal to this at
        ``q = k / (high - low + 1)`` (the boundaries among them) but not an integer between.
        ``ceil(q n)`` is moved by one where the rounding of ``q n`` put it on the wrong side
        (as ``scipy.stats.randint.ppf`` does), so ``icdf(cdf(k)) == k`` on the support."""
        q = as_float(q)
        low = self.low + ops.zeros_like(q)
        n = self.high - self.low + 1.0
        k = ops.ceil(q * n)                 # how many values of the support are <= the answer
        k = ops.where(k / n < q, k + 1.0, k)
        k = ops.where((k - 1.0) / n >= q, k - 1.0, k)
        inside = ops.logical_and(q >= 0.0, q <= 1.0)
        return ops.where(inside, low + ops.clip(k, 0.0, n) - 1.0, ops.zeros_like(k) + np.nan)

    def enumerate_support(self, expand=True):
        """``low..high`` on a new leading axis; ``low`` and ``high`` must be concrete and the
        same across the batch (the number of values is a shape)."""
        where = "DiscreteUniform.enumerate_support"
        if not all(is_concrete(v) for v in self._given):
            raise TypeError(
                f"{where}: low or high is traced (an argument of a compiled function), but "
                "enumeration needs concrete bounds: pass them as Python ints or NumPy arrays.")
        # not through ops.asarray: under a compiler ``ops.asarray(0)`` is a traced constant,
        # which cannot be read
        bounds = [np.unique(np.asarray(ops.to_numpy(v))) for v in self._given]
        if any(b.size != 1 for b in bounds):
            raise ValueError(
                f"{where}: low and high must be the same across the batch, got low={bounds[0]}, "
                f"high={bounds[1]}. Split the batch by its bounds.")
        low, high = int(bounds[0][0]), int(bounds[1][0])
        return expand_support(ops.arange(low, high + 1, dtype=INT_DTYPE), self.batch_shape, expand)

    @property
    def mean(self):
        return ops.broadcast_to((self.low + self.high) / 2.0, self.batch_shape)

    @property
    def variance(self):
        n = self.high - self.low + 1.0
        return ops.broadcast_to((n * n - 1.0) / 12.0, self.batch_shape)
