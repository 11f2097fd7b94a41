"""Eight schools: a hierarchical model of coaching effects in eight schools (non-centred).

Rubin (1981), "Estimation in parallel randomized experiments", J. Educ. Stat. 6(4); the
non-centred parametrisation avoids the funnel between ``tau`` and the school effects
(Betancourt & Girolami 2015, "Hamiltonian Monte Carlo for hierarchical models").

Run it::

    python examples/eight_schools.py --backend jax
    python -m ppl compare examples/eight_schools.py --plot compare.png
"""

import argparse

import ppl
import ppl.distributions as dist
from ppl import ops

__all__ = ["model", "data", "main"]


def model(J, sigma, y=None):
    mu = ppl.sample("mu", dist.Normal(0.0, 5.0))
    tau = ppl.sample("tau", dist.HalfCauchy(5.0))
    with ppl.plate("J", J):
        theta_tilde = ppl.sample("theta_tilde", dist.Normal(0.0, 1.0))
        theta = ppl.deterministic("theta", mu + tau * theta_tilde)
        ppl.sample("obs", dist.Normal(theta, sigma), obs=y)


def data():
    """The eight schools data: estimated effects ``y`` and their standard errors ``sigma``."""
    return {"J": 8,
            "sigma": ops.asarray([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0]),
            "y": ops.asarray([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=ppl.get_backend().name,
                        choices=ppl.available_backends())
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
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
