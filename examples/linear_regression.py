"""Bayesian linear regression on simulated data.

``y ~ Normal(alpha + X @ beta, sigma)`` with weakly informative priors; the data are drawn from
known coefficients (``TRUE_BETA``), so the posterior can be checked by eye.

Run it::

    python examples/linear_regression.py --backend torch
    python -m ppl compare examples/linear_regression.py
"""

import numpy as np

import ppl
import ppl.distributions as dist
from ppl import ops

try:  # imported as examples.<name>
    from ._run import run_example
except ImportError:  # run as a script or loaded by file path (ppl compare)
    from _run import run_example

__all__ = ["model", "data", "main", "TRUE_ALPHA", "TRUE_BETA", "TRUE_SIGMA"]

TRUE_ALPHA, TRUE_BETA, TRUE_SIGMA = 1.0, np.array([2.0, -1.0, 0.5]), 0.7


def model(X, y=None):
    alpha = ppl.sample("alpha", dist.Normal(0.0, 10.0))
    with ppl.plate("D", X.shape[-1]):
        beta = ppl.sample("beta", dist.Normal(0.0, 10.0))
    sigma = ppl.sample("sigma", dist.HalfNormal(5.0))
    mean = alpha + (X @ beta[..., None])[..., 0]
    with ppl.plate("N", X.shape[0]):
        ppl.sample("y", dist.Normal(mean, sigma), obs=y)


def data(num_points=100, seed=0):
    """``num_points`` rows of standard-normal covariates and responses from the true model."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(num_points, len(TRUE_BETA)))
    y = TRUE_ALPHA + X @ TRUE_BETA + TRUE_SIGMA * rng.normal(size=num_points)
    return {"X": ops.asarray(X), "y": ops.asarray(y)}


def main(argv=None):
    def report(mcmc):
        print(f"true values: alpha={TRUE_ALPHA}, beta={TRUE_BETA.tolist()}, sigma={TRUE_SIGMA}")

    return run_example(model, data, __doc__.splitlines()[0], argv, report=report)


if __name__ == "__main__":
    main()
