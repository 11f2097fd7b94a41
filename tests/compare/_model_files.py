"""What the ``ppl compare`` tests share: the repository root (the CLI's working directory) and
a model file's text, a normal mean with a conjugate posterior."""

import os
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

NORMAL_MODEL = textwrap.dedent("""
    import numpy as np
    import ppl, ppl.distributions as dist
    def model(y):
        mu = ppl.sample("mu", dist.Normal(0.0, 10.0))
        with ppl.plate("N", y.shape[0]):
            ppl.sample("y", dist.Normal(mu, 1.0), obs=y)
    def data():
        return {"y": np.random.default_rng(0).normal(1.0, 1.0, size=20)}
""")
