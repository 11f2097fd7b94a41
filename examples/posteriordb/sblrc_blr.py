"""posteriordb sblrc-blr: Bayesian linear regression.

Stan::

    vector[D] beta; real<lower=0> sigma;
    beta ~ normal(0, 10); sigma ~ normal(0, 10); y ~ normal(X * beta, sigma);
"""

import ppl
import ppl.distributions as dist
from ppl import ops

try:  # imported as examples.posteriordb.<module>
    from ._posteriordb import load_data, main
except ImportError:  # loaded by file path (a script, or `python -m ppl compare FILE.py`)
    from _posteriordb import load_data, main

__all__ = ["POSTERIOR", "NUTS_KWARGS", "model", "data"]

POSTERIOR = "sblrc-blr"
NUTS_KWARGS = {}


def model(N, D, X, y):
    with ppl.plate("D", D):
        beta = ppl.sample("beta", dist.Normal(0.0, 10.0))
    sigma = ppl.sample("sigma", dist.HalfNormal(10.0))
    with ppl.plate("N", N):
        ppl.sample("y", dist.Normal((X @ beta[..., None])[..., 0], sigma), obs=y)


def data():
    d = load_data(POSTERIOR)
    return {"N": d["N"], "D": d["D"], "X": ops.asarray(d["X"]), "y": ops.asarray(d["y"])}


if __name__ == "__main__":
    raise SystemExit(main(__import__(__name__)))
