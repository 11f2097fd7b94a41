"""Each posteriordb model's log joint density (and its gradient) at a fixed point, on every
backend, against an independent NumPy/SciPy computation of Stan's model (``_posteriordb_cases``).
"""

import numpy as np
import pytest
from _posteriordb_cases import CASES, available, load_module, point
from conftest import fd_grad

from ppl import ops

pytestmark = pytest.mark.skipif(not available(), reason="posteriordb data not found")

POSTERIORS = sorted(CASES)


def _log_density():
    inference = pytest.importorskip("ppl.inference")
    if not hasattr(inference, "log_density"):
        pytest.skip("ppl.inference.log_density not available yet")
    return inference.log_density


@pytest.mark.parametrize("posterior", POSTERIORS)
def test_log_density_and_gradient(posterior, backend, assert_close):
    """The value on every backend and dtype; the gradient (float64) against finite differences
    of the SciPy reference, so gradients are checked through scan (garch, hmm), cholesky (gp)
    and bounds that depend on other latents (garch)."""
    if posterior.startswith("gp_pois_regr") and backend.dtype == "float32":
        pytest.skip("gp_pois_regr's covariance (1e-10 jitter) has condition number ~5e8: "
                    "float64 only")
    log_density = _log_density()
    module = load_module(posterior)
    params, raw, expected = point(posterior)
    _, logp = CASES[posterior]
    names = sorted(params)
    data = module.data()

    def f(values):
        return log_density(module.model, (), data, dict(zip(names, values)))[0]

    lp, grads = ops.jit(ops.value_and_grad(f))([ops.asarray(params[n]) for n in names])
    # float32 sums of thousands of terms: a few ulps per term
    assert_close(lp, np.float64(expected), tol=1.0 if backend.dtype == "float64" else 30.0,
                 err_msg=posterior)
    if backend.dtype != "float64":
        return
    for name, g in zip(names, grads):
        def ref(x, name=name):
            return logp(raw, {**params, name: x})
        # gp_pois_regr: cond(K) ~ 5e8 limits both our gradient and the finite differences
        tol = 300.0 if posterior.startswith("gp_pois_regr") else 10.0
        assert_close(g, fd_grad(ref, params[name]), kind="grad", tol=tol,
                     err_msg=f"{posterior}: d/d{name}")


def test_every_posterior_has_a_module():
    from _posteriordb_cases import POSTERIORS as ALL

    assert sorted(ALL) == POSTERIORS
    for posterior in ALL:
        module = load_module(posterior)
        assert module.POSTERIOR == posterior
        assert callable(module.model) and callable(module.data)


@pytest.mark.dtypes("float64")
def test_data_uses_active_backend(backend):
    d = load_module("garch-garch11").data()
    assert ops.is_array(d["y"]) and d["y"].dtype == ops.asarray(1.0).dtype
