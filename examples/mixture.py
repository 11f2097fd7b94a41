"""A finite Gaussian mixture with ``MixtureSameFamily``: the component labels are summed out.

``y[n] ~ sum_k weights[k] Normal(locs[k], scales[k])`` with a Dirichlet prior on the weights.
The component means are an ordered vector (their prior is a ``factor``), which removes the
label-switching symmetry that would otherwise make chains disagree (Jasra, Holmes & Stephens
2005, "Markov chain Monte Carlo methods and the label switching problem", Stat. Sci. 20(1)).

Run it::

    python examples/mixture.py --backend torch
    python -m ppl compare examples/mixture.py
"""

import numpy as np

import ppl
import ppl.distributions as dist
from ppl import ops

try:  # imported as examples.<name>
    from ._run import run_example
except ImportError:  # run as a script or loaded by file path (ppl compare)
    from _run import run_example
from ppl.distributions import constraints

__all__ = ["model", "data", "main", "TRUE_WEIGHTS", "TRUE_LOCS", "TRUE_SCALES"]

TRUE_WEIGHTS = np.array([0.3, 0.5, 0.2])
TRUE_LOCS = np.array([-3.0, 0.0, 4.0])
TRUE_SCALES = np.array([0.7, 1.0, 0.5])


def model(y, num_components=3):
    K = num_components
    weights = ppl.sample("weights", dist.Dirichlet(ops.ones(K)))
    locs = ppl.sample("locs", dist.ImproperUniform(constraints.ordered_vector, (), (K,)))
    ppl.factor("locs_prior", ops.sum(dist.Normal(0.0, 5.0).log_prob(locs), axis=-1))
    with ppl.plate("components", K):
        scales = ppl.sample("scales", dist.HalfNormal(2.0))
    with ppl.plate("N", y.shape[0]):
        ppl.sample("y", dist.MixtureSameFamily(dist.Categorical(probs=weights),
                                               dist.Normal(locs, scales)), obs=y)


def data(num_points=300, seed=0):
    """Draws from the three-component mixture ``TRUE_*``."""
    rng = np.random.default_rng(seed)
    z = rng.choice(len(TRUE_WEIGHTS), p=TRUE_WEIGHTS, size=num_points)
    y = TRUE_LOCS[z] + TRUE_SCALES[z] * rng.normal(size=num_points)
    return {"y": ops.asarray(y)}


def main(argv=None):
    def report(mcmc):
        print(f"true values: weights={TRUE_WEIGHTS.tolist()}, locs={TRUE_LOCS.tolist()}, "
              f"scales={TRUE_SCALES.tolist()}")

    return run_example(model, data, __doc__.splitlines()[0], argv, report=report)


if __name__ == "__main__":
    main()
