"""posteriordb low_dim_gauss_mix-low_dim_gauss_mix: a two-component normal mixture.

Stan::

    ordered[2] mu; array[2] real<lower=0> sigma; real<lower=0, upper=1> theta;
    sigma ~ normal(0, 2); mu ~ normal(0, 2); theta ~ beta(5, 5);
    y[n] ~ log_mix(theta, normal(mu[1], sigma[1]), normal(mu[2], sigma[2]));

The ordering of mu (which removes label switching) is its support; its normal prior is a
factor.
"""

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.distributions import constraints

try:  # imported as examples.posteriordb.<module>
    from ._posteriordb import load_data, main
except ImportError:  # loaded by file path (a script, or `python -m ppl compare FILE.py`)
    from _posteriordb import load_data, main

__all__ = ["POSTERIOR", "NUTS_KWARGS", "model", "data"]

POSTERIOR = "low_dim_gauss_mix-low_dim_gauss_mix"
NUTS_KWARGS = {}


def model(N, y):
    mu = ppl.sample("mu", dist.ImproperUniform(constraints.ordered_vector, (), (2,)))
    ppl.factor("mu_prior", ops.sum(dist.Normal(0.0, 2.0).log_prob(mu), axis=-1))
    with ppl.plate("components", 2):
        sigma = ppl.sample("sigma", dist.HalfNormal(2.0))
    theta = ppl.sample("theta", dist.Beta(5.0, 5.0))
    weights = ops.stack([theta, 1.0 - theta], axis=-1)
    with ppl.plate("N", N):
        ppl.sample("y", dist.MixtureSameFamily(dist.Categorical(probs=weights),
                                               dist.Normal(mu, sigma)), obs=y)


def data():
    d = load_data(POSTERIOR)
    return {"N": d["N"], "y": ops.asarray(d["y"])}


if __name__ == "__main__":
    raise SystemExit(main(__import__(__name__)))
