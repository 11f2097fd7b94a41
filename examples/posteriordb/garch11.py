"""posteriordb garch-garch11: a GARCH(1,1) volatility model.

Stan (flat priors on the supports)::

    real mu; real<lower=0> alpha0; real<lower=0, upper=1> alpha1;
    real<lower=0, upper=(1 - alpha1)> beta1;
    sigma[1] = sigma1;
    sigma[t] = sqrt(alpha0 + alpha1 * (y[t-1] - mu)^2 + beta1 * sigma[t-1]^2);
    y ~ normal(mu, sigma);

The upper bound of beta1 depends on the latent alpha1; the variance recursion is an
ops.scan (gradients flow through it on every backend).
Bollerslev (1986), "Generalized autoregressive conditional heteroskedasticity", J. Econometrics.
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

POSTERIOR = "garch-garch11"
NUTS_KWARGS = {}


def model(T, y, sigma1):
    mu = ppl.sample("mu", dist.ImproperUniform(constraints.real, (), ()))
    alpha0 = ppl.sample("alpha0", dist.ImproperUniform(constraints.positive, (), ()))
    alpha1 = ppl.sample("alpha1", dist.ImproperUniform(constraints.interval(0.0, 1.0), (), ()))
    beta1 = ppl.sample("beta1",
                       dist.ImproperUniform(constraints.interval(0.0, 1.0 - alpha1), (), ()))

    def step(var_prev, y_prev):
        var = alpha0 + alpha1 * (y_prev - mu) ** 2 + beta1 * var_prev
        return var, var

    var1 = ops.zeros_like(mu) + sigma1 ** 2
    _, variances = ops.scan(step, var1, y[:-1])
    sigma = ops.concat([ops.reshape(ops.sqrt(var1), (1,)), ops.sqrt(variances)])
    with ppl.plate("T", T):
        ppl.sample("y", dist.Normal(mu, sigma), obs=y)


def data():
    d = load_data(POSTERIOR)
    return {"T": d["T"], "y": ops.asarray(d["y"]), "sigma1": float(d["sigma1"])}


if __name__ == "__main__":
    raise SystemExit(main(__import__(__name__)))
