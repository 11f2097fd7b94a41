"""ppl's JAX programs on the CPU compile with XLA's elemental kernel emitters
(``xla_cpu_use_fusion_emitters=False``): a NUTS chunk compiles in about half the time. JAX takes
compile options on a top-level program only, so the same ``ops.jit`` function must also work
inside another trace (the trajectory pieces inside the chunk), where it compiles without them.
Values are checked against NumPy."""

import numpy as np
import pytest

from ppl import ops

jax = pytest.importorskip("jax")


@pytest.fixture
def fresh_options(monkeypatch):
    """The compile options as the process would choose them, without ``PPL_JAX_FUSION_EMITTERS``
    (and chosen again after the test)."""
    from ppl.backends.jax.compile import _options_for

    monkeypatch.delenv("PPL_JAX_FUSION_EMITTERS", raising=False)
    _options_for.cache_clear()
    yield _options_for
    _options_for.cache_clear()


@pytest.mark.backends("jax")
def test_cpu_programs_compile_with_the_elemental_emitters(backend, fresh_options, monkeypatch):
    """``ops.jit`` compiles a top-level call with the options and a nested call (inside another
    program) without them, as JAX requires."""
    from ppl.backends.jax import compile as jax_compile

    assert fresh_options("cpu") == {"xla_cpu_use_fusion_emitters": False}
    assert fresh_options("gpu") is None
    calls = []
    real_jit = jax.jit

    def recording_jit(fun, **kwargs):
        program = real_jit(fun, **kwargs)

        def call(*args, **kw):
            calls.append(kwargs.get("compiler_options"))
            return program(*args, **kw)
        return call

    monkeypatch.setattr(jax_compile.jax, "jit", recording_jit)
    inner = ops.jit(lambda v: v * 2.0)
    outer = ops.jit(lambda v: inner(v) + 1.0)
    x = ops.asarray(np.arange(3.0))
    np.testing.assert_allclose(ops.to_numpy(inner(x)), np.arange(3.0) * 2.0)
    assert calls == [{"xla_cpu_use_fusion_emitters": False}]
    del calls[:]
    np.testing.assert_allclose(ops.to_numpy(outer(x)), np.arange(3.0) * 2.0 + 1.0)
    assert calls == [{"xla_cpu_use_fusion_emitters": False}, None]


@pytest.mark.backends("jax")
@pytest.mark.parametrize("value, kept", [("1", True), ("yes", True), ("0", False),
                                          ("false", False), ("", False)])
def test_fusion_emitters_kept_on_request(backend, fresh_options, monkeypatch, value, kept):
    monkeypatch.setenv("PPL_JAX_FUSION_EMITTERS", value)
    assert (fresh_options("cpu") is None) == kept


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
