"""Gaussian-process regression with the marginal likelihood and hyperpriors on the kernel.

``y ~ MultivariateNormal(0, K + noise^2 I)`` with the squared-exponential kernel
``K[i, j] = amplitude^2 exp(-(x_i - x_j)^2 / (2 lengthscale^2))`` (Rasmussen & Williams 2006,
*Gaussian Processes for Machine Learning*, ch. 2 and 5); the covariance enters through its
Cholesky factor (``ops.cholesky``). Simulated data: a noisy sine.

Run it::

    python examples/gp.py --backend jax
    python -m ppl compare examples/gp.py --dtype float64
"""

import numpy as np

import ppl
import ppl.distributions as dist
from ppl import ops

try:  # imported as examples.<name>
    from ._run import run_example
except ImportError:  # run as a script or loaded by file path (ppl compare)
    from _run import run_example

__all__ = ["model", "data", "main", "kernel"]


def kernel(x, z, amplitude, lengthscale):
    """Squared-exponential covariance between the points ``x`` and ``z``."""
    return amplitude ** 2 * ops.exp(-0.5 * ((x[:, None] - z[None, :]) / lengthscale) ** 2)


def model(x, y=None):
    amplitude = ppl.sample("amplitude", dist.LogNormal(0.0, 1.0))
    lengthscale = ppl.sample("lengthscale", dist.LogNormal(0.0, 1.0))
    noise = ppl.sample("noise", dist.HalfNormal(1.0))
    n = x.shape[0]
    cov = kernel(x, x, amplitude, lengthscale) + (noise ** 2 + 1e-5) * ops.eye(n)
    ppl.sample("y", dist.MultivariateNormal(ops.zeros(n), scale_tril=ops.cholesky(cov)), obs=y)


def data(num_points=30, seed=0):
    """Noisy observations of ``sin(x)`` on ``[-3, 3]``."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-3.0, 3.0, size=num_points))
    y = np.sin(x) + 0.2 * rng.normal(size=num_points)
    return {"x": ops.asarray(x), "y": ops.asarray(y)}


def main(argv=None):
    return run_example(model, data, __doc__.splitlines()[0], argv, dtype="float64")


if __name__ == "__main__":
    main()
