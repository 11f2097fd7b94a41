"""torch's default ``jit`` upgrades a traced graph to inductor's compiled C++ after
``PPL_TORCH_INDUCTOR_AFTER`` calls (default 1000). The rest of the suite runs with the upgrade
off (``tests/conftest.py``: one inductor compile per model would dominate its run time); here it
happens after two calls, and the compiled code must give what the independent NumPy reference
gives: an elementwise function against NumPy, and whole NUTS transitions (leapfrog steps,
U-turn checks, multinomial draws) against the reference transition to 1e-8."""

import numpy as np
import pytest
import test_nuts_exact

from ppl import ops
from ppl.backends.torch import tracing

pytestmark = [pytest.mark.backends("torch"), pytest.mark.dtypes("float64")]


@pytest.fixture(autouse=True)
def _upgrade_early(monkeypatch):
    monkeypatch.setenv("PPL_TORCH_INDUCTOR_AFTER", "2")
    monkeypatch.setenv("PPL_TORCH_JIT", "inductor")


def test_inductor_graph_matches_numpy(backend):
    f = ops.jit(lambda x, y: ops.sum(ops.sin(x) * ops.exp(-y * y), axis=-1) + ops.log1p(x[..., 0]))
    x = np.linspace(0.1, 2.0, 12).reshape(3, 4)
    y = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    before = tracing.compile_seconds()
    for _ in range(4):
        got = ops.to_numpy(f(ops.asarray(x), ops.asarray(y)))
    assert tracing.compile_seconds() > before
    np.testing.assert_allclose(got, np.sum(np.sin(x) * np.exp(-y * y), -1) + np.log1p(x[:, 0]),
                               rtol=1e-12)


@pytest.mark.parametrize("case", test_nuts_exact.CASES[:3], ids=[c[0] for c in
                                                              test_nuts_exact.CASES[:3]])
def test_inductor_transition_matches_reference(backend, case):
    test_nuts_exact.test_transition_matches_reference(backend, case)
