"""numpy's ``jit`` (``ppl.backends.numpy.tape``): a recorded function replays what the function
computes eagerly on new inputs, gradients included, and a function whose Python reads its
inputs runs eagerly instead of replaying the branch of the first call.

References are NumPy computations and central finite differences, never the backend itself;
where the claim is exactness (replay = eager, bit for bit), the eager call is the reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import fd_grad, to_numpy

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.backends.numpy.compile import Recorded

pytestmark = pytest.mark.backends("numpy")

RNG = np.random.default_rng(3)
X = RNG.normal(size=(3, 4))
W = RNG.normal(size=(3, 4))


def _recorded(fn):
    """The number of recorded programs (not ``None``) and of refused signatures of ``fn``."""
    programs = list(fn._programs.values())
    return sum(p is not None for p in programs), sum(p is None for p in programs)


def _masked_objective(x):
    """Comparisons and ``where`` on the input, a slice, a broadcast ``maximum``, a reduction."""
    w = ops.asarray(W)
    y = ops.where(x > 0.0, x ** 2, -0.5 * x) + ops.maximum(x, ops.asarray(W[0]))
    return ops.sum(y[:, 1:] * w[:, 1:]) + ops.sum(ops.exp(-ops.abs(x[0])))


def _masked_reference(x):
    y = np.where(x > 0.0, x ** 2, -0.5 * x) + np.maximum(x, W[0])
    return np.sum(y[:, 1:] * W[:, 1:]) + np.sum(np.exp(-np.abs(x[0])))


def test_replay_records_comparisons_not_their_values(backend, dtype, assert_close):
    """Recorded where every entry is positive, replayed where signs differ: the masks are
    recomputed (a baked mask would give x**2 for negative entries)."""
    f = ops.jit(ops.value_and_grad(_masked_objective))
    first = np.abs(X) + 0.1
    f(ops.asarray(first))
    for x in (X, -first, 2.0 * X):
        value, grad = f(ops.asarray(x))
        assert_close(value, _masked_reference(x.astype(dtype)))
        assert_close(grad, fd_grad(_masked_reference, x.astype(dtype)), kind="grad",
                     check_dtype=True)
    assert _recorded(f) == (1, 0)


def _fan_out(x):
    """``x`` reaches the output along many paths of very different scales: the order in
    which the backward pass sums them shows in the last bits."""
    y = x * 1e-3
    return (ops.sum(y * 1e-4) + ops.sum(x ** 2) + ops.sum(ops.sin(x) * 1e3)
            + ops.sum(ops.exp(y)) + ops.sum(x * y * 7.0) + _masked_objective(x))


def test_replay_is_the_eager_computation(backend, dtype):
    """Bit for bit: the replay runs the NumPy calls the eager function makes, and sums
    gradients in autograd's order."""
    eager = ops.vmap(ops.value_and_grad(_fan_out))
    f = ops.jit(eager)
    xs = ops.asarray(np.stack([X, -X, 3 * X]))
    f(xs)
    for shift in (0.0, 0.3, -1.7):
        got, want = to_numpy(f(xs + shift)), to_numpy(eager(xs + shift))
        for a, b in zip(got, want):
            assert a.dtype == b.dtype and np.array_equal(a, b)


def test_python_branch_on_a_value_runs_eagerly(backend, dtype, assert_close):
    def f(x):
        return x * 2.0 if ops.sum(x) > 0 else x * 3.0

    jf = ops.jit(f)
    pos = np.abs(X) + 0.1
    assert_close(jf(ops.asarray(pos)), 2 * pos.astype(dtype))
    assert_close(jf(ops.asarray(-pos)), -3 * pos.astype(dtype))
    assert _recorded(jf) == (0, 1)


def test_reading_a_value_runs_eagerly_even_if_the_error_is_swallowed(backend, dtype,
                                                                       assert_close):
    def f(x):
        try:
            scale = 2.0 if float(ops.to_numpy(ops.sum(x))) > 0 else 3.0
        except Exception:   # noqa: BLE001 - what a careless model might do
            scale = 5.0
        return x * scale

    jf = ops.jit(f)
    pos = np.abs(X) + 0.1
    assert_close(jf(ops.asarray(pos)), 2 * pos.astype(dtype))
    assert_close(jf(ops.asarray(-pos)), -3 * pos.astype(dtype))


def test_errors_are_raised_by_the_eager_call(backend, dtype):
    def f(x):
        return ops.reshape(x, (5, 5))

    with pytest.raises(ValueError, match="reshape"):
        ops.jit(f)(ops.asarray(X))


def test_gradient_of_a_closure_over_the_argument(backend, dtype, assert_close):
    """``value_and_grad(lambda z: g(z) + h(x))(x)``: only the argument is differentiated, not
    the closure's use of the same array (autograd's and JAX's semantics)."""
    def outer(x):
        return ops.grad(lambda z: ops.sum(ops.sin(z)) + ops.sum(x ** 3))(x)

    assert_close(ops.jit(outer)(ops.asarray(X)), np.cos(X.astype(dtype)), kind="grad")


def test_pytree_arguments_and_second_signature(backend, dtype, assert_close):
    def f(params):
        return ops.sum(params["a"] * params["b"][0]) + ops.sum(params["b"][1] ** 2)

    vg = ops.jit(ops.value_and_grad(f))
    for shape in ((3,), (2, 2), (3,)):
        a, b0, b1 = (RNG.normal(size=shape) for _ in range(3))
        value, grads = vg({"a": ops.asarray(a), "b": [ops.asarray(b0), ops.asarray(b1)]})
        r = [x.astype(dtype) for x in (a, b0, b1)]
        assert_close(value, np.sum(r[0] * r[1]) + np.sum(r[2] ** 2))
        assert_close(grads["a"], r[1], kind="grad")
        assert_close(grads["b"][0], r[0], kind="grad")
        assert_close(grads["b"][1], 2 * r[2], kind="grad")
    assert _recorded(vg) == (2, 0)


def test_model_potential_replays_the_per_chain_loop(backend, dtype):
    """The batched gradient NUTS uses, recorded once, at points other than the recorded one."""
    def model(sigma, y=None):
        mu = ppl.sample("mu", dist.Normal(0.0, 5.0))
        tau = ppl.sample("tau", dist.HalfCauchy(5.0))
        with ppl.plate("J", 8):
            theta = ppl.sample("theta", dist.Normal(mu, tau))
            ppl.sample("obs", dist.Normal(theta, sigma), obs=y)

    from ppl.inference import initialize_model

    sigma = ops.asarray([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
    y = ops.asarray([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
    info = initialize_model(0, model, (sigma,), {"y": y}, num_chains=3)
    eager = ops.vmap(ops.value_and_grad(info.potential_fn))
    vg = ops.jit(eager)
    vg(info.init_position)
    z = ops.asarray(np.random.default_rng(0).normal(size=(3, info.layout.size)) * 2)
    for got, want in zip(to_numpy(vg(z)), to_numpy(eager(z))):
        assert np.array_equal(got, want)
    assert _recorded(vg) == (1, 0)


def test_random_draws_with_keys_as_inputs_run_eagerly(backend, dtype):
    """Keys are inputs: the draws must follow them (recording would bake one draw in)."""
    draw = ops.jit(lambda key: ppl.random.normal(key, (3,)))
    keys = ppl.random.split(ppl.random.key(0), 2)
    a, b = to_numpy(draw(keys[0])), to_numpy(draw(keys[1]))
    np.testing.assert_array_equal(a, to_numpy(ppl.random.normal(keys[0], (3,))))
    np.testing.assert_array_equal(b, to_numpy(ppl.random.normal(keys[1], (3,))))


def test_static_arguments_are_part_of_the_signature(backend, dtype, assert_close):
    def f(x, power):
        return ops.sum(x ** power)

    jf = ops.jit(f, static_argnums=(1,))
    assert isinstance(jf, Recorded)
    for power in (2, 3, 2):
        assert_close(jf(ops.asarray(X), power), np.sum(X.astype(dtype) ** power))
    assert _recorded(jf) == (2, 0)


def test_same_array_as_two_differentiated_arguments(backend, dtype, assert_close):
    """Both gradients of ``f(a, b) = sum(a * b**2)`` at ``a = b = x``: each argument gets its
    own derivative, also when the recording merges repeated computations."""
    grad = ops.grad(lambda a, b: ops.sum(a * b ** 2), argnums=(0, 1))
    x = X.astype(dtype)
    da, db = ops.jit(lambda v: grad(v, v))(ops.asarray(X))
    assert_close(da, x ** 2, kind="grad")
    assert_close(db, 2 * x * x, kind="grad")


def test_objects_holding_recorded_values_are_not_replayed(backend, dtype, assert_close):
    """A distribution returned by the function holds the recording's values: replaying it
    would hand back the first call's object."""
    make = ops.jit(lambda loc: dist.Normal(loc, 1.0))
    for loc in (X, -X):
        d = make(ops.asarray(loc))
        assert_close(d.loc, loc.astype(dtype))
    take = ops.jit(lambda d, x: d.log_prob(x))      # an object argument: eager
    for loc in (X, -X):
        assert_close(take(dist.Normal(ops.asarray(loc), 1.0), ops.asarray(W)),
                     -0.5 * (W - loc.astype(dtype)) ** 2 - 0.5 * np.log(2 * np.pi))
