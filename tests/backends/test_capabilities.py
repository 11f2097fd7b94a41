"""The capabilities a backend declares (``ppl.backends.common.compile``) hold on that backend.

Library code branches on them instead of trying an op and catching the failure, so a wrong
declaration would silently pick the wrong path: each is checked here by what it promises.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import to_numpy

import ppl
from ppl import ops
from ppl import random as rnd


def test_declared_as_booleans(backend):
    for name in ("jit_compiles", "compiles_control_flow", "vmap_random_draws",
                 "numpy_operands", "abstract_eval_shape"):
        assert isinstance(getattr(backend, name), bool), name


def test_jit_compiles(backend):
    """``jit_compiles``: after the first call, a jitted pure function runs without executing
    its Python body again; otherwise ``jit`` is the identity and the body runs every time."""
    calls = []

    def f(x):
        calls.append(1)
        return ops.exp(x) * 2.0 + ops.sum(x)

    jf = ops.jit(f)
    x = ops.asarray([0.5, -1.0, 2.0])
    expected = np.exp(to_numpy(x)) * 2.0 + np.sum(to_numpy(x))
    np.testing.assert_allclose(to_numpy(jf(x)), expected, rtol=1e-5)
    first = len(calls)
    for _ in range(3):
        np.testing.assert_allclose(to_numpy(jf(x)), expected, rtol=1e-5)
    assert len(calls) - first == (0 if backend.jit_compiles else 3)


@pytest.mark.parametrize("static", [False, True])
def test_jit_once_computes_what_the_function_computes(backend, static):
    """``jit(..., once=True)`` (a program run once per run, which a backend may optimise less:
    LLVM -O0 on JAX) gives NumPy's values, with a
    gradient and a loop inside, with and without a static argument, and runs the Python body
    as often as ``jit`` does (once where the function compiles)."""
    x = ops.asarray([0.5, -1.0, 2.0])
    xn = to_numpy(x).astype(float)
    power = 3.0 if static else 2.0
    expected_value = np.sum(np.exp(xn) * xn ** power) + 10.5
    expected_grad = np.exp(xn) * xn ** power + np.exp(xn) * power * xn ** (power - 1)
    calls = {}
    for once in (True, False):
        def f(x, power=2.0, once=once):
            calls[once] = calls.get(once, 0) + 1
            value, grad = ops.value_and_grad(lambda v: ops.sum(ops.exp(v) * v ** power))(x)
            total = ops.while_loop(lambda c: c < 10.0, lambda c: c + 1.5, ops.sum(x) * 0.0)
            return value + total, grad

        jf = ops.jit(f, static_argnums=(1,), once=once) if static else ops.jit(f, once=once)
        for _ in range(3):
            value, grad = jf(x, 3.0) if static else jf(x)
            np.testing.assert_allclose(to_numpy(value), expected_value, rtol=1e-5)
            np.testing.assert_allclose(to_numpy(grad), expected_grad, rtol=1e-5)
    assert calls[True] == calls[False]
    if backend.name == "jax":
        assert calls[True] == 1


def test_compiles_control_flow(backend):
    """``compiles_control_flow``: inside ``jit`` a ``while_loop`` body is traced a fixed number
    of times, not run once per iteration; otherwise it runs once per iteration."""
    calls = []

    def body(c):
        calls.append(1)
        return c + 1.0

    out = ops.jit(lambda x: ops.while_loop(lambda c: c < 25.0, body, x))(ops.asarray(0.0))
    assert float(out) == 25.0
    if backend.compiles_control_flow:
        assert len(calls) < 25
    else:
        assert len(calls) >= 25


def _draws(key):
    k1, k2, k3, k4 = ppl.random.split(key, 4)
    return {"normal": ppl.random.normal(k1, (2,)),
            "gamma": ppl.random.gamma(k2, ops.asarray([0.5, 3.0])),
            "poisson": ppl.random.poisson(k3, ops.asarray([1.0, 4.0])),
            "categorical": ppl.random.categorical(k4, ops.asarray([0.1, 0.5, 1.0]))}


def test_vmap_random_draws(backend):
    """``vmap_random_draws``: ``jit(vmap(f))`` over keys gives each key the draws ``f`` gives
    it alone (the batching ``Predictive`` relies on)."""
    if not backend.vmap_random_draws:
        pytest.skip(f"the {backend.name} backend declares vmap_random_draws = False")
    keys = rnd.split(rnd.key(5), 6)
    batched = ops.jit(ops.vmap(_draws))(keys)
    for name, value in batched.items():
        looped = np.stack([to_numpy(_draws(keys[i])[name]) for i in range(6)])
        assert ops.shape(value)[0] == 6
        np.testing.assert_allclose(to_numpy(value), looped, rtol=1e-6, err_msg=name)
    assert len({tuple(r) for r in to_numpy(batched["normal"])}) == 6, "draws must differ"


def test_numpy_operands(backend):
    """``numpy_operands``: a NumPy array times a latent value works in Python operators under
    ``grad`` and inside ``jit`` (the gradient of sum(b * x) is sum(x)) exactly where declared."""
    x = np.array([0.5, 1.5, 2.0])

    def f(b):
        return ops.sum(b * x)

    try:
        g = to_numpy(ops.grad(f)(ops.asarray(2.0)))
        jitted = to_numpy(ops.jit(f)(ops.asarray(2.0)))
    except Exception:                     # noqa: BLE001 - what the declaration promises
        works = False
    else:
        np.testing.assert_allclose(g, x.sum(), rtol=1e-6)
        np.testing.assert_allclose(jitted, 2.0 * x.sum(), rtol=1e-6)
        works = True
    assert works == backend.numpy_operands


def test_abstract_eval_shape(backend):
    """``abstract_eval_shape``: the function ``eval_shape`` runs sees no values (reading one in
    Python fails) exactly where declared, and the shapes and dtypes come back either way."""
    seen = []

    def f(x):
        try:
            seen.append(float(x[1]))
        except Exception:                 # noqa: BLE001 - an abstract value has none
            seen.append(None)
        return x * 2.0

    out = ops.eval_shape(f, ops.asarray([0.5, 1.5, 2.0]))
    assert tuple(out.shape) == (3,) and "float" in str(out.dtype)
    assert (seen == [None]) == backend.abstract_eval_shape, seen
    if not backend.abstract_eval_shape:
        assert seen == [1.5]


def test_jit_takes_static_argnums_as_an_int(backend):
    """``static_argnums=1`` means ``(1,)``, as in ``jax.jit`` (torch raised "'int' object is
    not iterable")."""
    f = ops.jit(lambda x, n: x * n, static_argnums=1)
    np.testing.assert_allclose(to_numpy(f(ops.asarray(2.0), 3)), 6.0)
    np.testing.assert_allclose(to_numpy(f(ops.asarray(2.0), 4)), 8.0)
