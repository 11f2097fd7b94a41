"""posteriordb kidiq-kidscore_momiq: child test score regressed on the mother's IQ.

Stan (flat prior on beta)::

    vector[2] beta; real<lower=0> sigma;
    sigma ~ cauchy(0, 2.5); kid_score ~ normal(beta[1] + beta[2] * mom_iq, sigma);

Gelman & Hill (2007), *Data Analysis Using Regression and Multilevel/Hierarchical Models*, ch. 3.
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

POSTERIOR = "kidiq-kidscore_momiq"
NUTS_KWARGS = {}


def model(N, kid_score, mom_iq):
    beta = ppl.sample("beta", dist.ImproperUniform(constraints.real, (), (2,)))
    sigma = ppl.sample("sigma", dist.HalfCauchy(2.5))
    with ppl.plate("N", N):
        ppl.sample("kid_score", dist.Normal(beta[0] + beta[1] * mom_iq, sigma), obs=kid_score)


def data():
    d = load_data(POSTERIOR)
    return {"N": d["N"], "kid_score": ops.asarray(d["kid_score"]),
            "mom_iq": ops.asarray(d["mom_iq"])}


if __name__ == "__main__":
    raise SystemExit(main(__import__(__name__)))
