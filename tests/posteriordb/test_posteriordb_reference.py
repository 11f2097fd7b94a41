"""posteriordb conformance: NUTS (4 chains x 1000 warmup + 1000 draws, float64) on each of the
twelve posteriors against the reference draws, with the criteria of posteriordb's README:
``|mean - ref| <= 0.1 ref_sd``, sd within 20 %, split R-hat < 1.01, no divergences.

The default suite (CI) runs all twelve on JAX, about 2 minutes on 2 cores, and eight schools
on TensorFlow. numpy, torch and the other TensorFlow rows are behind ``@pytest.mark.slow``:
``pytest -m slow -k torch tests/posteriordb``.
Set ``PPL_POSTERIORDB_REPORT=path.json`` to append each run's numbers (wall time, largest
``|mean - ref| / ref_sd``) to a JSON-lines file.
"""

import json
import os

import pytest
from _posteriordb_cases import CASES, available, load_module, pdb

import ppl

pytestmark = pytest.mark.skipif(not available(), reason="posteriordb data not found")

POSTERIORS = sorted(CASES)
#: run by default (CI): all twelve on JAX, about 2 minutes on 2 cores, and eight schools on
#: TensorFlow (its XLA compilation alone takes ~10-30 s per posterior)
FAST = {("jax", p) for p in POSTERIORS} | {("tensorflow",
                                           "eight_schools-eight_schools_noncentered")}


def _params():
    out = []
    for name in ppl.available_backends():
        out += [pytest.param(name, p, id=f"{name}-{p}",
                             marks=[] if (name, p) in FAST else [pytest.mark.slow])
                for p in POSTERIORS]
    return out


@pytest.mark.parametrize("backend_name, posterior", _params())
def test_posterior_matches_reference(backend_name, posterior):
    pytest.importorskip("ppl.inference")
    module = load_module(posterior)
    result = pdb.run(module, backend=backend_name, dtype="float64", num_warmup=1000,
                     num_samples=1000, num_chains=4, seed=0)
    report = os.environ.get("PPL_POSTERIORDB_REPORT")
    if report:
        with open(report, "a") as f:
            f.write(json.dumps({"posterior": posterior, "backend": backend_name,
                                "ok": result["ok"], "seconds": round(result["seconds"], 2),
                                "max_z": round(result["max_z"], 4)}) + "\n")
    assert result["ok"], f"{posterior} on {backend_name}:\n" + pdb.format_rows(result["rows"])
