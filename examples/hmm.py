"""A Gaussian hidden Markov model; the hidden states are enumerated and summed out.

``z[t] | z[t-1] ~ Categorical(trans[z[t-1]])``, ``y[t] ~ Normal(locs[z[t]], scale)``, with
Dirichlet rows of the transition matrix and ordered emission means. The states are discrete
latent sites marked ``infer={"enumerate": "parallel"}`` in a ``ppl.markov`` loop, which reuses
two enumeration dimensions for the whole chain; ``log_density`` (and so NUTS) sums them out by
variable elimination, the forward algorithm (Rabiner 1989, "A tutorial on hidden Markov
models", Proc. IEEE 77(2)). :func:`forward_log_likelihood` is the same recursion by hand, with
``ops.scan``, kept as a check.

Run it::

    python examples/hmm.py --backend jax
    python -m ppl compare examples/hmm.py
"""

import math

import numpy as np

import ppl
import ppl.distributions as dist
from ppl import ops

try:  # imported as examples.<name>
    from ._run import run_example
except ImportError:  # run as a script or loaded by file path (ppl compare)
    from _run import run_example
from ppl.distributions import constraints

__all__ = ["model", "marginal_model", "data", "main", "forward_log_likelihood",
           "TRUE_TRANS", "TRUE_LOCS"]

TRUE_TRANS = np.array([[0.90, 0.05, 0.05],
                       [0.10, 0.80, 0.10],
                       [0.05, 0.15, 0.80]])
TRUE_LOCS = np.array([-2.0, 0.5, 3.0])
TRUE_SCALE = 0.6


def forward_log_likelihood(log_init, log_trans, log_emit):
    """``log p(y)`` of an HMM: ``log_init[k]``, ``log_trans[j, k]`` (from j to k) and
    ``log_emit[t, k] = log p(y[t] | z[t] = k)``."""

    def step(log_alpha, log_emit_t):
        log_alpha = ops.logsumexp(log_alpha[:, None] + log_trans, axis=0) + log_emit_t
        return log_alpha, log_alpha

    log_alpha, _ = ops.scan(step, log_init + log_emit[0], log_emit[1:])
    return ops.logsumexp(log_alpha, axis=-1)


def model(y, num_states=3):
    K = num_states
    with ppl.plate("states", K):
        trans = ppl.sample("trans", dist.Dirichlet(ops.ones(K)))       # row j: from state j
    locs = ppl.sample("locs", dist.ImproperUniform(constraints.ordered_vector, (), (K,)))
    ppl.factor("locs_prior", ops.sum(dist.Normal(0.0, 5.0).log_prob(locs), axis=-1))
    scale = ppl.sample("scale", dist.HalfNormal(2.0))
    z = ppl.sample("z_0", dist.Categorical(logits=ops.zeros(K)),    # uniform initial state
                   infer={"enumerate": "parallel"})
    ppl.sample("y_0", dist.Normal(locs[z], scale), obs=y[0])
    for t in ppl.markov(range(1, y.shape[0])):
        z = ppl.sample(f"z_{t}", dist.Categorical(trans[z]), infer={"enumerate": "parallel"})
        ppl.sample(f"y_{t}", dist.Normal(locs[z], scale), obs=y[t])


def marginal_model(y, num_states=3):
    """The same model with the states summed out by hand (:func:`forward_log_likelihood`)."""
    K = num_states
    with ppl.plate("states", K):
        trans = ppl.sample("trans", dist.Dirichlet(ops.ones(K)))
    locs = ppl.sample("locs", dist.ImproperUniform(constraints.ordered_vector, (), (K,)))
    ppl.factor("locs_prior", ops.sum(dist.Normal(0.0, 5.0).log_prob(locs), axis=-1))
    scale = ppl.sample("scale", dist.HalfNormal(2.0))
    log_emit = dist.Normal(locs, scale).log_prob(y[:, None])          # [t, k]
    log_init = ops.full((K,), -math.log(K))
    ppl.factor("y", forward_log_likelihood(log_init, ops.log(trans), log_emit))


def data(num_steps=100, seed=0):
    """A sequence drawn from the HMM ``TRUE_TRANS``, ``TRUE_LOCS``, ``TRUE_SCALE``."""
    rng = np.random.default_rng(seed)
    z = np.empty(num_steps, dtype=int)
    z[0] = rng.integers(len(TRUE_LOCS))
    for t in range(1, num_steps):
        z[t] = rng.choice(len(TRUE_LOCS), p=TRUE_TRANS[z[t - 1]])
    y = TRUE_LOCS[z] + TRUE_SCALE * rng.normal(size=num_steps)
    return {"y": ops.asarray(y)}


def main(argv=None):
    def report(mcmc):
        print(f"true values: trans={TRUE_TRANS.tolist()}, locs={TRUE_LOCS.tolist()}, "
              f"scale={TRUE_SCALE}")

    return run_example(model, data, __doc__.splitlines()[0], argv, report=report)


if __name__ == "__main__":
    main()
