"""posteriordb arK-arK: an autoregressive AR(K) model.

Stan::

    alpha ~ normal(0, 10); beta ~ normal(0, 10); sigma ~ cauchy(0, 2.5);   // sigma > 0
    for (t in (K+1):T) y[t] ~ normal(alpha + sum_k beta[k] * y[t-k], sigma);

The sum over lags is written as a (T-K) x K matrix of lagged values times beta.
"""

import ppl
import ppl.distributions as dist
from ppl import ops

try:  # imported as examples.posteriordb.<module>
    from ._posteriordb import load_data, main
except ImportError:  # loaded by file path (a script, or `python -m ppl compare FILE.py`)
    from _posteriordb import load_data, main

__all__ = ["POSTERIOR", "NUTS_KWARGS", "model", "data"]

POSTERIOR = "arK-arK"
NUTS_KWARGS = {}


def model(K, T, y):
    alpha = ppl.sample("alpha", dist.Normal(0.0, 10.0))
    with ppl.plate("K", K):
        beta = ppl.sample("beta", dist.Normal(0.0, 10.0))
    sigma = ppl.sample("sigma", dist.HalfCauchy(2.5))
    # lags[t - K, k] = y[t - k - 1] (0-based) for t = K .. T-1
    lags = ops.stack([y[K - 1 - k: T - 1 - k] for k in range(K)], axis=-1)
    mu = alpha + (lags @ beta[..., None])[..., 0]
    with ppl.plate("T", T - K):
        ppl.sample("y", dist.Normal(mu, sigma), obs=y[K:])


def data():
    d = load_data(POSTERIOR)
    return {"K": d["K"], "T": d["T"], "y": ops.asarray(d["y"])}


if __name__ == "__main__":
    raise SystemExit(main(__import__(__name__)))
