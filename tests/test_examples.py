"""The examples run as scripts (loaded by file path, as ``ppl compare`` loads them) on every
backend, and the simulated ones recover their true parameters."""

import importlib.util
import os
import sys

import numpy as np
import pytest
from conftest import TEST_BACKENDS

from ppl import ops

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")
NAMES = ["bnn", "eight_schools", "gp", "hierarchical", "hmm", "linear_regression",
         "logistic_regression", "mixture"]


def load(name):
    path = os.path.join(EXAMPLES, f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    return module


def _draws(mcmc):
    return {k: np.asarray(ops.to_numpy(v)) for k, v in mcmc.get_samples().items()}


def _example_cases():
    # hmm: 100 enumerated sites in a Python ppl.markov loop; its model evaluation is traced
    # site by site (80-400 s per backend here, compile included), so outside JAX it runs with
    # -m slow; its enumeration is checked on every backend in tests/model/
    for name in NAMES:
        for backend_name in TEST_BACKENDS:
            slow = name == "hmm" and backend_name != "jax"
            yield pytest.param(name, backend_name, marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("name, backend_name", list(_example_cases()))
def test_example_runs(name, backend_name, capsys):
    """Each example's command line on each backend (short chains and trees of at most 31
    steps: this checks that it runs and prints its summary, not the posterior; with 30 warmup
    steps some examples' step sizes are still small, and 1023-step trees take minutes on the
    eager backends)."""
    module = load(name)
    mcmc = module.main(["--backend", backend_name, "--num-warmup", "30", "--num-samples", "20",
                        "--num-chains", "2", "--max-tree-depth", "5"])
    out = capsys.readouterr().out
    assert "r_hat" in out.lower() and "mean" in out
    draws = _draws(mcmc)
    assert draws and all(np.all(np.isfinite(v)) for v in draws.values())
    assert all(v.shape[0] == 40 for v in draws.values())


@pytest.mark.skipif("jax" not in TEST_BACKENDS, reason="jax not selected")
@pytest.mark.parametrize("name, truth", [
    ("linear_regression", lambda m: {"alpha": m.TRUE_ALPHA, "beta": m.TRUE_BETA,
                                     "sigma": m.TRUE_SIGMA}),
    ("logistic_regression", lambda m: {"alpha": m.TRUE_ALPHA, "beta": m.TRUE_BETA}),
])
def test_example_recovers_truth(name, truth, capsys):
    """The simulated regressions: every true value lies within 4 posterior sds of the
    posterior mean."""
    module = load(name)
    mcmc = module.main(["--backend", "jax", "--num-warmup", "300", "--num-samples", "300",
                        "--num-chains", "2", "--dtype", "float64"])
    draws = _draws(mcmc)
    for site, value in truth(module).items():
        z = np.abs(draws[site].mean(0) - value) / draws[site].std(0)
        assert np.all(z < 4), (site, z)
