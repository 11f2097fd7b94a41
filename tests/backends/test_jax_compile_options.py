"""ppl's JAX programs on the CPU compile with XLA's elemental kernel emitters
(``xla_cpu_use_fusion_emitters=False``): a NUTS chunk compiles in about half the time. JAX takes
compile options on a top-level program only, so the same ``ops.jit`` function must also work
inside another trace (the trajectory pieces inside the chunk), where it compiles without them.
Values are checked against NumPy."""

import numpy as np
import pytest

from ppl import ops

jax = pytest.importorskip("jax")


@pytest.mark.backends("jax")
def test_cpu_programs_compile_with_the_elemental_emitters(backend):
    from ppl.backends.jax.compile import _options_for

    assert _options_for("cpu") == {"xla_cpu_use_fusion_emitters": False}
    assert _options_for("gpu") is None


@pytest.mark.backends("jax")
def test_fusion_emitters_kept_on_request(backend, monkeypatch):
    from ppl.backends.jax.compile import _options_for

    monkeypatch.setenv("PPL_JAX_FUSION_EMITTERS", "1")
    _options_for.cache_clear()
    try:
        assert _options_for("cpu") is None
    finally:
        monkeypatch.delenv("PPL_JAX_FUSION_EMITTERS")
        _options_for.cache_clear()
    assert _options_for("cpu") == {"xla_cpu_use_fusion_emitters": False}


@pytest.mark.backends("jax")
def test_jit_works_at_top_level_nested_and_under_transforms(backend, dtype):
    x = np.linspace(-1.0, 2.0, 7).astype(dtype)

    @ops.jit
    def inner(v):
        return ops.sum(ops.exp(v) * v)

    outer = ops.jit(lambda v: inner(v) + inner(2.0 * v))
    ref = np.sum(np.exp(x) * x) + np.sum(np.exp(2 * x) * 2 * x)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(ops.to_numpy(inner(ops.asarray(x))), np.sum(np.exp(x) * x),
                               rtol=tol)
    np.testing.assert_allclose(ops.to_numpy(outer(ops.asarray(x))), ref, rtol=tol)
    batched = ops.jit(ops.vmap(inner))(ops.asarray(np.stack([x, 2 * x])))
    np.testing.assert_allclose(ops.to_numpy(batched)[1], np.sum(np.exp(2 * x) * 2 * x),
                               rtol=tol)
    grad = ops.jit(ops.grad(inner))(ops.asarray(x))     # d/dv sum(e^v v) = e^v (1 + v)
    np.testing.assert_allclose(ops.to_numpy(grad), np.exp(x) * (1 + x), rtol=tol)
    static = ops.jit(lambda v, n: v * n, static_argnums=1)
    np.testing.assert_allclose(ops.to_numpy(static(ops.asarray(x), 3)), 3 * x, rtol=tol)
