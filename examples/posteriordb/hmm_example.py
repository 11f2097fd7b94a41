"""posteriordb hmm_example-hmm_example: a two-state Gaussian hidden Markov model.

Stan (flat priors on the simplexes)::

    simplex[K] theta1; simplex[K] theta2;     // rows of the transition matrix
    positive_ordered[K] mu;
    mu[1] ~ normal(3, 1); mu[2] ~ normal(10, 1);
    gamma[1, k] = normal_lpdf(y[1] | mu[k], 1);
    gamma[t, k] = log_sum_exp_j(gamma[t-1, j] + log(theta[j, k])) + normal_lpdf(y[t] | mu[k], 1);
    target += log_sum_exp(gamma[N]);

The hidden states are summed out with the forward algorithm (Rabiner 1989, "A tutorial on hidden
Markov models", Proc. IEEE 77(2)), an ops.scan over time in log space.
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

POSTERIOR = "hmm_example-hmm_example"
NUTS_KWARGS = {}


def model(N, K, y):
    if K != 2:
        raise ValueError(f"hmm_example: the priors on mu are written for K=2 states, got K={K}.")
    theta1 = ppl.sample("theta1", dist.ImproperUniform(constraints.simplex, (), (K,)))
    theta2 = ppl.sample("theta2", dist.ImproperUniform(constraints.simplex, (), (K,)))
    mu = ppl.sample("mu", dist.ImproperUniform(constraints.positive_ordered_vector, (), (K,)))
    ppl.factor("mu_prior", dist.Normal(3.0, 1.0).log_prob(mu[..., 0])
               + dist.Normal(10.0, 1.0).log_prob(mu[..., 1]))

    log_trans = ops.log(ops.stack([theta1, theta2], axis=-2))     # [from j, to k]
    log_emit = dist.Normal(mu, 1.0).log_prob(y[:, None])          # [t, k]

    def forward(log_alpha, log_emit_t):
        log_alpha = ops.logsumexp(log_alpha[:, None] + log_trans, axis=0) + log_emit_t
        return log_alpha, log_alpha

    log_alpha, _ = ops.scan(forward, log_emit[0], log_emit[1:])
    ppl.factor("hmm_forward", ops.logsumexp(log_alpha, axis=-1))


def data():
    d = load_data(POSTERIOR)
    return {"N": d["N"], "K": d["K"], "y": ops.asarray(d["y"])}


if __name__ == "__main__":
    raise SystemExit(main(__import__(__name__)))
