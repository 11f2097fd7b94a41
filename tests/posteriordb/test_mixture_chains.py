"""Issue 19: chains of the two-component mixture ``low_dim_gauss_mix`` that stay away from the
posterior.

The posterior has one mode (mu = (-2.73, 2.87), theta = 0.62), but a chain that starts with
both means low, the first component wide and the second narrow (e.g. mu = (-2.0, -1.8),
sigma = (2.3, 0.5)) can settle where both components cover the left cluster and not leave it
within 2000 iterations. A chain is *stuck* when its posterior mean of ``theta`` is more than
0.03 from the reference (the others are within 0.002).

Whether a chain sticks is decided by where it starts, then by a coin flip its own draws make
(the same start sticks in about half of the runs with other keys), the same way on every
backend. Measured (default NUTS, float64, 4 x (1000 + 1000)):

* At the commit the issue was measured on (40b1aea), JAX started from the points torch's
  ``init_to_uniform`` drew for seeds 11-26 sticks 5 of the 64 chains, torch's own count there;
  on its own starting points JAX stuck 0 of 128 (seeds 11-43).
* With the same draws (every ``ppl.random`` draw replaced by one NumPy stream, 40 iterations
  from four starts), numpy, torch and JAX build the same trees (depths, steps, divergences) and
  their chains agree to 1e-8, except the one from a sticky start, where rounding differences
  have grown to 1e-4.
* The backends' starting points have one distribution (400 seeds x 4 chains each: uniform per
  coordinate, uncorrelated), about 3 % of them in the sticky region (both means below -0.8,
  sigma[1] above 1.3 and above sigma[2]), but one seed gives each backend other points:
  torch's seeds 0-15 hold five such starts (3, 10, 11, 13, 14), JAX's none. Expect torch's
  ``own`` case to count about two stuck chains for that reason alone.

The test is the issue's: seeds 0-15, at most one of the 64 chains stuck on each backend, in two
set-ups:

* ``own``: each backend's own ``init_to_uniform`` (``mcmc.run(seed)``), what a user runs.
* ``common``: every backend starts from the same points, Stan's ``init_to_uniform``
  distribution drawn with NumPy (``default_rng(seed).uniform(-2, 2)`` in unconstrained space),
  so the count compares the samplers on one sample of starting points.

Slow (16 runs per case: ~1 hour on JAX, many hours on torch and numpy on 2 busy cores):
``pytest -m slow -s -k "jax or torch" tests/posteriordb/test_mixture_chains.py`` prints the
per-seed table.
"""

import numpy as np
import pytest
from _posteriordb_cases import available, load_module, pdb

import ppl
from ppl import ops
from ppl.inference import MCMC, NUTS

pytestmark = pytest.mark.skipif(not available(), reason="posteriordb data not found")

POSTERIOR = "low_dim_gauss_mix-low_dim_gauss_mix"
SEEDS = range(16)
TOLERANCE = 0.03
MAX_STUCK = 1
DIM = 5           # unconstrained: mu (ordered, 2), log sigma (2), logit theta
STARTS = ("own", "common")


def stuck_chains(kernel, seed, start, data, theta_ref):
    """Per chain: (|mean theta - reference|, divergences) for one run of ``seed``."""
    mcmc = MCMC(kernel, num_warmup=1000, num_samples=1000, num_chains=4, progress_bar=False)
    if start == "own":
        mcmc.run(seed, **data)
    else:
        z0 = np.random.default_rng(seed).uniform(-2.0, 2.0, size=(4, DIM))
        mcmc.run(seed, init_params=ops.asarray(z0), **data)
    theta = np.asarray(ops.to_numpy(mcmc.get_samples(group_by_chain=True)["theta"]))
    div = np.asarray(ops.to_numpy(mcmc.get_extra_fields(group_by_chain=True)["diverging"]))
    return np.abs(theta.mean(axis=1) - theta_ref), div.sum(axis=1)


@pytest.mark.slow
@pytest.mark.parametrize("start", STARTS)
@pytest.mark.parametrize("backend_name", ppl.available_backends())
def test_at_most_one_stuck_chain(backend_name, start):
    module = load_module(POSTERIOR)
    theta_ref = pdb.load_reference(POSTERIOR)["theta"]["mean"]
    rows, total = [], 0
    with ppl.use_backend(backend_name, dtype="float64"):
        data = module.data()
        kernel = NUTS(module.model)     # one kernel: its compiled programs serve every seed
        for seed in SEEDS:
            err, div = stuck_chains(kernel, seed, start, data, theta_ref)
            stuck = int(np.sum(err > TOLERANCE))
            total += stuck
            rows.append(f"{backend_name} {start} seed {seed:2d}: stuck {stuck}  |theta - ref| "
                        f"{np.round(err, 4).tolist()}  divergences {div.tolist()}")
            print(rows[-1], flush=True)
    print(f"{backend_name} {start}: {total} of {4 * len(SEEDS)} chains stuck")
    assert total <= MAX_STUCK, (
        f"{backend_name} ({start} starting points): {total} of {4 * len(SEEDS)} chains stuck "
        f"(> {MAX_STUCK}):\n" + "\n".join(rows))
