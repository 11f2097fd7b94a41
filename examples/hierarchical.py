"""A hierarchical (multilevel) regression with plates: varying intercepts by group.

Radon-style model (Gelman & Hill 2007, ch. 12): ``y[i] ~ Normal(a[group[i]] + b * x[i],
sigma_y)`` with group intercepts ``a[j] ~ Normal(mu_a, sigma_a)``, written non-centred
(``a = mu_a + sigma_a * a_raw``) so NUTS does not meet a funnel when groups are small.
Simulated data: 10 groups of unequal sizes.

Run it::

    python examples/hierarchical.py --backend numpy
    python -m ppl compare examples/hierarchical.py
"""

import numpy as np

import ppl
import ppl.distributions as dist
from ppl import ops

try:  # imported as examples.<name>
    from ._run import run_example
except ImportError:  # run as a script or loaded by file path (ppl compare)
    from _run import run_example

__all__ = ["model", "data", "main"]


def model(x, group, num_groups, y=None):
    mu_a = ppl.sample("mu_a", dist.Normal(0.0, 5.0))
    sigma_a = ppl.sample("sigma_a", dist.HalfNormal(2.0))
    b = ppl.sample("b", dist.Normal(0.0, 2.0))
    sigma_y = ppl.sample("sigma_y", dist.HalfNormal(2.0))
    with ppl.plate("groups", num_groups):
        a_raw = ppl.sample("a_raw", dist.Normal(0.0, 1.0))
        a = ppl.deterministic("a", mu_a + sigma_a * a_raw)
    with ppl.plate("N", x.shape[0]):
        ppl.sample("y", dist.Normal(ops.take(a, group, axis=-1) + b * x, sigma_y), obs=y)


def data(num_groups=10, seed=0):
    """Groups of 3 to 40 observations around group intercepts drawn from N(1, 0.8)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 41, size=num_groups)
    group = np.repeat(np.arange(num_groups), sizes)
    a = 1.0 + 0.8 * rng.normal(size=num_groups)
    x = rng.normal(size=group.size)
    y = a[group] - 0.7 * x + 0.5 * rng.normal(size=group.size)
    return {"x": ops.asarray(x), "group": ops.asarray(group), "num_groups": num_groups,
            "y": ops.asarray(y)}


def main(argv=None):
    return run_example(model, data, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
