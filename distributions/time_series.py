"""Time-series families over a vector of time steps, with NumPyro's names: GaussianRandomWalk.

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     d = dist.GaussianRandomWalk(2.0, num_steps=3)
...     d.event_shape, [float(v) for v in d.variance]
((3,), [4.0, 8.0, 12.0])
"""

from __future__ import annotations

from ppl import ops, random
from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution
from ppl.distributions.parametrization import set_parameters
from ppl.distributions.util import HALF_LOG_2PI, as_float, require_int
from ppl.distributions.validation import validate_sample

__all__ = ["GaussianRandomWalk"]


class GaussianRandomWalk(Distribution):
    r"""A Gaussian random walk of ``num_steps`` steps started at the origin:
    ``x_0 ~ Normal(0, scale)`` and independent increments ``x_t - x_{t-1} ~ Normal(0, scale)``
    for ``t = 1, ..., num_steps - 1`` (the random-walk prior of, e.g., the stochastic
    volatility model of Hoffman & Gelman 2014, section 4.3, and of Stan's time-series models).

    The joint law is Gaussian with mean zero and covariance ``scale**2 * (min(s, t) + 1)``
    (indices from 0): ``variance`` is ``scale**2 * (1, 2, ..., num_steps)``.

    Parameters
    ----------
    scale
        Standard deviation of the first position and of each increment (positive); its shape
        is the batch shape.
    num_steps
        Length of the walk, the event shape ``(num_steps,)`` (a positive int).

    References
    ----------
    Hoffman, M. D. and Gelman, A. (2014). The No-U-Turn Sampler. JMLR 15, 1593-1623.

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.GaussianRandomWalk(1.0, num_steps=2)
    ...     round(float(d.log_prob(ppl.ops.asarray([1.0, 1.0]))), 6)
    -2.337877
    """

    arg_constraints = {"scale": constraints.positive}
    support = constraints.real_vector
    reparametrized_params = ["scale"]

    def __init__(self, scale=1.0, num_steps=1, *, validate_args=None):
        require_int("GaussianRandomWalk", "num_steps", num_steps, 1,
                    what="the length of the walk, its event shape")
        self.num_steps = num_steps
        batch = set_parameters(self, scale=scale)
        super().__init__(batch, (num_steps,), validate_args=validate_args)

    def _scale_column(self):
        """``scale`` with a trailing axis, broadcasting against the steps."""
        return ops.expand_dims(self.scale, -1)

    def sample(self, key, sample_shape=()):
        noise = random.normal(key, self.shape(sample_shape))
        return self._scale_column() * ops.cumsum(noise, axis=-1)

    @validate_sample
    def log_prob(self, value):
        value = as_float(value)
        steps = ops.concat([value[..., :1], value[..., 1:] - value[..., :-1]], axis=-1)
        z = steps / self._scale_column()
        lp = -0.5 * ops.sum(z * z, axis=-1) - self.num_steps * HALF_LOG_2PI
        return lp - self.num_steps * ops.log(self.scale)

    @property
    def mean(self):
        return ops.zeros(self.batch_shape + self.event_shape)

    @property
    def variance(self):
        t = ops.arange(1, self.num_steps + 1, dtype=ops.dtype_of(self.scale))
        return ops.broadcast_to(self._scale_column() ** 2 * t, self.batch_shape + self.event_shape)
