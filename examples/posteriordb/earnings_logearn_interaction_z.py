"""posteriordb earnings-logearn_interaction_z: log earnings on standardised height, sex and
their interaction.

Stan (flat priors)::

    log_earn = log(earn); z_height = (height - mean(height)) / sd(height);
    vector[4] beta; real<lower=0> sigma;
    log_earn ~ normal(beta[1] + beta[2] * z_height + beta[3] * male
                      + beta[4] * z_height .* male, sigma);

Gelman & Hill (2007), ch. 4.
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

POSTERIOR = "earnings-logearn_interaction_z"
NUTS_KWARGS = {}


def model(N, earn, height, male):
    log_earn = ops.log(earn)
    z_height = (height - ops.mean(height)) / ops.std(height, correction=1)  # Stan's sd: n - 1
    beta = ppl.sample("beta", dist.ImproperUniform(constraints.real, (), (4,)))
    sigma = ppl.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))
    mu = beta[0] + beta[1] * z_height + beta[2] * male + beta[3] * z_height * male
    with ppl.plate("N", N):
        ppl.sample("log_earn", dist.Normal(mu, sigma), obs=log_earn)


def data():
    d = load_data(POSTERIOR)
    return {"N": d["N"], "earn": ops.asarray(d["earn"]), "height": ops.asarray(d["height"]),
            "male": ops.asarray([float(v) for v in d["male"]])}


if __name__ == "__main__":
    raise SystemExit(main(__import__(__name__)))
