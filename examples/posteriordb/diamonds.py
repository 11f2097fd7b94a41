"""posteriordb diamonds-diamonds: log price of diamonds on 24 strongly correlated
predictors (a brms-generated model).

Stan::

    Xc = X[, 2:K] centred column-wise;
    b ~ normal(0, 1); Intercept ~ student_t(3, 8, 10);
    sigma ~ student_t(3, 0, 10) truncated to sigma > 0;
    Y ~ normal(Intercept + Xc * b, sigma);

The posterior is strongly correlated: NUTS needs a dense mass matrix (NUTS_KWARGS).
The truncated Student-t prior of sigma is a flat density on sigma > 0 plus a factor
student_t_lpdf(sigma | 3, 0, 10) - log P(T > 0), with P(T > 0) = 1/2 (the Student-t is
centred at 0).
"""

import math

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.distributions import constraints

try:  # imported as examples.posteriordb.<module>
    from ._posteriordb import load_data, main
except ImportError:  # loaded by file path (a script, or `python -m ppl compare FILE.py`)
    from _posteriordb import load_data, main

__all__ = ["POSTERIOR", "NUTS_KWARGS", "model", "data"]

POSTERIOR = "diamonds-diamonds"
NUTS_KWARGS = {"dense_mass": True}


def model(N, K, X, Y, prior_only=0):
    Xc = X[:, 1:] - ops.mean(X[:, 1:], axis=0)
    with ppl.plate("Kc", K - 1):
        b = ppl.sample("b", dist.Normal(0.0, 1.0))
    intercept = ppl.sample("Intercept", dist.StudentT(3.0, 8.0, 10.0))
    sigma = ppl.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))
    ppl.factor("sigma_prior", dist.StudentT(3.0, 0.0, 10.0).log_prob(sigma) + math.log(2.0))
    if not prior_only:
        with ppl.plate("N", N):
            ppl.sample("Y", dist.Normal(intercept + (Xc @ b[..., None])[..., 0], sigma), obs=Y)


def data():
    d = load_data(POSTERIOR)
    return {"N": d["N"], "K": d["K"], "X": ops.asarray(d["X"]), "Y": ops.asarray(d["Y"]),
            "prior_only": d["prior_only"]}


if __name__ == "__main__":
    raise SystemExit(main(__import__(__name__)))
