"""posteriordb eight_schools-eight_schools_noncentered: the non-centred eight schools model.

Stan::

    theta_trans ~ normal(0, 1); mu ~ normal(0, 5); tau ~ cauchy(0, 5);   // tau > 0
    theta = mu + tau * theta_trans; y ~ normal(theta, sigma);

Rubin (1981), "Estimation in parallel randomized experiments", J. Educ. Stat. 6(4).
"""

import ppl
import ppl.distributions as dist
from ppl import ops

try:  # imported as examples.posteriordb.<module>
    from ._posteriordb import load_data, main
except ImportError:  # loaded by file path (a script, or `python -m ppl compare FILE.py`)
    from _posteriordb import load_data, main

__all__ = ["POSTERIOR", "NUTS_KWARGS", "ALLOW_DIVERGENCES", "model", "data"]

POSTERIOR = "eight_schools-eight_schools_noncentered"
NUTS_KWARGS = {}
#: the hierarchical funnel is weakened, not gone, by the non-centred form: a rare divergence is
#: expected (posteriordb's README asks for none only in the funnel-free models)
ALLOW_DIVERGENCES = True


def model(J, y, sigma):
    mu = ppl.sample("mu", dist.Normal(0.0, 5.0))
    tau = ppl.sample("tau", dist.HalfCauchy(5.0))
    with ppl.plate("J", J):
        theta_trans = ppl.sample("theta_trans", dist.Normal(0.0, 1.0))
        theta = ppl.deterministic("theta", mu + tau * theta_trans)
        ppl.sample("y", dist.Normal(theta, sigma), obs=y)


def data():
    d = load_data(POSTERIOR)
    return {"J": d["J"], "y": ops.asarray(d["y"]), "sigma": ops.asarray(d["sigma"])}


if __name__ == "__main__":
    raise SystemExit(main(__import__(__name__)))
