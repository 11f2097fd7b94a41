"""Gaussian-process regression with the marginal likelihood and hyperpriors on the kernel.

``y ~ MultivariateNormal(0, K + noise^2 I)`` with the squared-exponential kernel
``K[i, j] = amplitude^2 exp(-(x_i - x_j)^2 / (2 lengthscale^2))`` (Rasmussen & Williams 2006,
*Gaussian Processes for Machine Learning*, ch. 2 and 5); the covariance enters through its
Cholesky factor (``ops.cholesky``). Simulated data: a noisy sine.

Run it::

    python examples/gp.py --backend jax
    python -m ppl compare examples/gp.py --dtype float64
"""

import argparse

import numpy as np

import ppl
import ppl.distributions as dist
from ppl import ops

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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=ppl.get_backend().name,
                        choices=ppl.available_backends())
    parser.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    parser.add_argument("--num-warmup", type=int, default=1000)
    parser.add_argument("--num-samples", type=int, default=1000)
    parser.add_argument("--num-chains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from ppl.inference import MCMC, NUTS

    with ppl.use_backend(args.backend, dtype=args.dtype):
        mcmc = MCMC(NUTS(model), num_warmup=args.num_warmup, num_samples=args.num_samples,
                    num_chains=args.num_chains)
        mcmc.run(args.seed, **data())
        mcmc.print_summary()
    return mcmc


if __name__ == "__main__":
    main()
