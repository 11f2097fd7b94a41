"""posteriordb mesquite-logmesquite_logvolume: log weight of mesquite bushes on log canopy
volume.

Stan (flat priors)::

    log_weight = log(weight); log_canopy_volume = log(diam1 .* diam2 .* canopy_height);
    vector[2] beta; real<lower=0> sigma;
    log_weight ~ normal(beta[1] + beta[2] * log_canopy_volume, sigma);

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

POSTERIOR = "mesquite-logmesquite_logvolume"
NUTS_KWARGS = {}


def model(N, weight, diam1, diam2, canopy_height):
    log_weight = ops.log(weight)
    log_canopy_volume = ops.log(diam1 * diam2 * canopy_height)
    beta = ppl.sample("beta", dist.ImproperUniform(constraints.real, (), (2,)))
    sigma = ppl.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))
    with ppl.plate("N", N):
        ppl.sample("log_weight", dist.Normal(beta[0] + beta[1] * log_canopy_volume, sigma),
                   obs=log_weight)


def data():
    d = load_data(POSTERIOR)
    return {"N": d["N"], **{k: ops.asarray(d[k])
                            for k in ("weight", "diam1", "diam2", "canopy_height")}}


if __name__ == "__main__":
    raise SystemExit(main(__import__(__name__)))
