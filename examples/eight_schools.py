"""Eight schools: a hierarchical model of coaching effects in eight schools (non-centred).

Rubin (1981), "Estimation in parallel randomized experiments", J. Educ. Stat. 6(4); the
non-centred parametrisation avoids the funnel between ``tau`` and the school effects
(Betancourt & Girolami 2015, "Hamiltonian Monte Carlo for hierarchical models").

Run it::

    python examples/eight_schools.py --backend jax
    python -m ppl compare examples/eight_schools.py --plot compare.png
"""

import ppl
import ppl.distributions as dist
from ppl import ops

try:  # imported as examples.<name>
    from ._run import run_example
except ImportError:  # run as a script or loaded by file path (ppl compare)
    from _run import run_example

__all__ = ["model", "data", "main", "NUTS_KWARGS"]

#: NUTS options ``ppl compare`` uses for this model: even non-centred, eight schools keeps a
#: faint funnel, and at the default target 0.8 about one run in three has a divergence or two;
#: a smaller step size (Stan users set ``adapt_delta=0.95`` here too) removes them
NUTS_KWARGS = {"target_accept_prob": 0.95}


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
    return run_example(model, data, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
