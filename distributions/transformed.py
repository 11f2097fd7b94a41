"""``TransformedDistribution``: push a base distribution through bijections.

``log_prob(y) = base.log_prob(x) - sum log|det J_t|`` along the chain ``x -> ... -> y``
(change of variables).

>>> import ppl
>>> import ppl.distributions as dist
>>> from ppl.distributions.transforms import ExpTransform
>>> with ppl.use_backend("numpy", dtype="float64"):
...     d = dist.TransformedDistribution(dist.Normal(0.0, 1.0), ExpTransform())
...     round(float(d.log_prob(1.0)), 6)  # the LogNormal(0, 1) density at 1
-0.918939
"""

from __future__ import annotations

from ppl.distributions import constraints
from ppl.distributions.distribution import Distribution, Wrapper
from ppl.distributions.transform import ComposeTransform, Transform
from ppl.distributions.util import as_float, sum_rightmost
from ppl.distributions.validation import validate_sample

__all__ = ["TransformedDistribution"]


class TransformedDistribution(Wrapper):
    """The distribution of ``transforms[-1](... transforms[0](x))`` for ``x ~ base_distribution``.

    Parameters
    ----------
    base_distribution
        The distribution of ``x``.
    transforms
        One :class:`~ppl.distributions.transforms.Transform` or a list applied in order.
    """

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, transforms, *, validate_args=None):
        if isinstance(transforms, Transform):
            transforms = [transforms]
        transforms = list(transforms)
        if not transforms or not all(isinstance(t, Transform) for t in transforms):
            raise TypeError(
                "TransformedDistribution: transforms must be a Transform or a non-empty list of "
                f"Transforms, got {transforms!r}.")
        chain = ComposeTransform(transforms)
        base_shape = base_distribution.shape()
        base_event_dim = len(base_distribution.event_shape)
        domain_event_dim = chain.domain.event_dim
        if len(base_shape) < domain_event_dim:
            raise ValueError(
                f"TransformedDistribution: the transforms need inputs with at least "
                f"{domain_event_dim} dims, but the base distribution's shape is {base_shape}.")
        shape = chain.forward_shape(base_shape)
        needed = chain.inverse_shape(shape)
        if tuple(needed) != tuple(base_shape):
            base_distribution = base_distribution.expand(
                tuple(needed)[: len(needed) - base_event_dim])
        if domain_event_dim > base_event_dim:
            base_distribution = base_distribution.to_event(domain_event_dim - base_event_dim)
        event_dim = chain.codomain.event_dim + max(base_event_dim - domain_event_dim, 0)
        self.base_dist = base_distribution
        self.transforms = transforms
        cut = len(shape) - event_dim
        super().__init__(shape[:cut], shape[cut:], validate_args)

    @property
    def support(self):
        codomain = self.transforms[-1].codomain
        extra = self.event_dim - codomain.event_dim
        return constraints.independent(codomain, extra) if extra > 0 else codomain

    @property
    def has_enumerate_support(self):
        return False

    def sample(self, key, sample_shape=()):
        x = self.base_dist.sample(key, sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    @validate_sample
    def log_prob(self, value):
        y = as_float(value)
        event_dim = self.event_dim
        total = 0.0
        for t in reversed(self.transforms):
            x = t._inverse(y)
            ladj = t.log_abs_det_jacobian(x, y)
            total = total - sum_rightmost(ladj, event_dim - t.codomain.event_dim)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            y = x
        base_lp = self.base_dist.log_prob(y)
        return total + sum_rightmost(base_lp, event_dim - len(self.base_dist.event_shape))
