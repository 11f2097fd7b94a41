"""Bayesian logistic regression on simulated data.

``y ~ Bernoulli(logits=alpha + X @ beta)``; the data are drawn from known coefficients
(``TRUE_BETA``). The same model as ppl's logistic-regression benchmark, at a smaller size.

Run it::

    python examples/logistic_regression.py --backend jax
    python -m ppl compare examples/logistic_regression.py
"""

import numpy as np

import ppl
import ppl.distributions as dist
from ppl import ops

try:  # imported as examples.<name>
    from ._run import run_example
except ImportError:  # run as a script or loaded by file path (ppl compare)
    from _run import run_example

__all__ = ["model", "data", "main", "TRUE_ALPHA", "TRUE_BETA"]

TRUE_ALPHA, TRUE_BETA = -0.5, np.array([1.5, -2.0, 0.0, 0.8, -0.3])


def model(X, y=None):
    alpha = ppl.sample("alpha", dist.Normal(0.0, 2.5))
    with ppl.plate("D", X.shape[-1]):
        beta = ppl.sample("beta", dist.Normal(0.0, 2.5))
    logits = alpha + (X @ beta[..., None])[..., 0]
    with ppl.plate("N", X.shape[0]):
        ppl.sample("y", dist.Bernoulli(logits=logits), obs=y)


def data(num_points=500, seed=0):
    """Standard-normal covariates and 0/1 outcomes drawn from the true model."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(num_points, len(TRUE_BETA)))
    p = 1.0 / (1.0 + np.exp(-(TRUE_ALPHA + X @ TRUE_BETA)))
    y = (rng.random(num_points) < p).astype(np.float64)
    return {"X": ops.asarray(X), "y": ops.asarray(y)}


def main(argv=None):
    def report(mcmc):
        print(f"true values: alpha={TRUE_ALPHA}, beta={TRUE_BETA.tolist()}")

    return run_example(model, data, __doc__.splitlines()[0], argv, report=report)


if __name__ == "__main__":
    main()
