"""A small Bayesian neural network for binary classification (two dense layers).

``hidden = silu(X @ w1 + b1)``, ``logits = hidden @ w2 + b2``, ``y ~ Bernoulli(logits)``, with
standard-normal priors on every weight (Neal 1996, *Bayesian Learning for Neural Networks*).
The data set — two interleaving half moons — is generated here. The weights themselves are not
identifiable (hidden units can be permuted and sign-flipped), so their R-hat across chains can
be large; the predictive probabilities at a few probe points (``p_probe``) are identifiable and
are what to compare across backends.

Run it::

    python examples/bnn.py --backend jax --num-warmup 500 --num-samples 500
    python -m ppl compare examples/bnn.py
"""

import numpy as np

import ppl
import ppl.distributions as dist
from ppl import ops

try:  # imported as examples.<name>
    from ._run import run_example
except ImportError:  # run as a script or loaded by file path (ppl compare)
    from _run import run_example

__all__ = ["model", "data", "main", "make_moons"]


def model(X, X_probe, y=None, hidden=8):
    num_features = X.shape[-1]
    w1 = ppl.sample("w1", dist.Normal(0.0, 1.0).expand([num_features, hidden]).to_event(2))
    b1 = ppl.sample("b1", dist.Normal(0.0, 1.0).expand([hidden]).to_event(1))
    w2 = ppl.sample("w2", dist.Normal(0.0, 1.0).expand([hidden]).to_event(1))
    b2 = ppl.sample("b2", dist.Normal(0.0, 1.0))

    def network(inputs):
        h = ops.nn.silu(inputs @ w1 + b1)
        return (h @ w2[..., None])[..., 0] + b2

    ppl.deterministic("p_probe", ops.nn.sigmoid(network(X_probe)))
    with ppl.plate("N", X.shape[0]):
        ppl.sample("y", dist.Bernoulli(logits=network(X)), obs=y)


def make_moons(num_points=200, noise=0.2, seed=0):
    """Two interleaving half circles with Gaussian noise, standardised; labels 0/1."""
    rng = np.random.default_rng(seed)
    n0 = num_points // 2
    t0, t1 = rng.uniform(0, np.pi, n0), rng.uniform(0, np.pi, num_points - n0)
    X = np.concatenate([np.stack([np.cos(t0), np.sin(t0)], 1),
                        np.stack([1 - np.cos(t1), 0.5 - np.sin(t1)], 1)])
    X += noise * rng.normal(size=X.shape)
    y = np.concatenate([np.zeros(n0), np.ones(num_points - n0)])
    return (X - X.mean(0)) / X.std(0), y


#: probe points (standardised coordinates): deep in each moon, and between them
PROBES = np.array([[-1.2, 0.8], [1.2, -0.8], [0.0, 0.0], [-0.3, -1.2]])


def data(num_points=200, seed=0):
    X, y = make_moons(num_points, seed=seed)
    return {"X": ops.asarray(X), "X_probe": ops.asarray(PROBES), "y": ops.asarray(y)}


def main(argv=None):
    def report(mcmc):
        samples = mcmc.get_samples()
        d = data()
        X, y = ops.to_numpy(d["X"]), ops.to_numpy(d["y"])
        w1, b1 = ops.to_numpy(samples["w1"]), ops.to_numpy(samples["b1"])
        w2, b2 = ops.to_numpy(samples["w2"]), ops.to_numpy(samples["b2"])
        h = X @ w1 + b1[:, None, :]
        h = h / (1.0 + np.exp(-h))                                   # silu, in NumPy
        logits = np.einsum("snh,sh->sn", h, w2) + b2[:, None]
        p = (1.0 / (1.0 + np.exp(-logits))).mean(0)
        print(f"training accuracy of the posterior predictive: {np.mean((p > 0.5) == y):.3f}")

    return run_example(model, data, __doc__.splitlines()[0], argv, report=report)


if __name__ == "__main__":
    main()
