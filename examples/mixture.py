"""A finite Gaussian mixture: each point's component label is enumerated and summed out.

``z[n] ~ Categorical(weights)``, ``y[n] ~ Normal(locs[z[n]], scales[z[n]])``, with a Dirichlet
prior on the weights. The label is a discrete latent site marked
``infer={"enumerate": "parallel"}``: ``log_density`` (and so NUTS) sums it out exactly, the
same density as ``MixtureSameFamily``, and ``infer_discrete`` draws the labels afterwards
(Obermeyer et al. 2019, "Tensor variable elimination for plated factor graphs").
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
from ppl import handlers, ops
from ppl.inference import infer_discrete

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
        z = ppl.sample("z", dist.Categorical(probs=weights), infer={"enumerate": "parallel"})
        ppl.sample("y", dist.Normal(locs[z], scales[z]), obs=y)


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
        # the labels of the first points given the last posterior draw, by infer_discrete
        draw = {k: v[-1] for k, v in mcmc.get_samples().items()}
        model_d = infer_discrete(handlers.substitute(model, data=draw), temperature=0)
        z = handlers.trace(model_d).get_trace(**data())["z"]["value"]
        print(f"MAP labels of the first 10 points: {ops.to_numpy(z)[:10].tolist()}")

    return run_example(model, data, __doc__.splitlines()[0], argv, report=report)


if __name__ == "__main__":
    main()
