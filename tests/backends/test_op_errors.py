"""Bad inputs raise clear errors that name the op: mismatched shapes -> ``ValueError``, a wrong
dtype (strings, objects) -> ``TypeError`` or ``ValueError``; each message contains
``ppl.ops.<name>`` (or ``ppl.random.<name>``)."""

from __future__ import annotations

import numpy as np
import pytest

from ppl import ops
from ppl import random as rnd

# (public name, call building backend inputs lazily)
SHAPE_ERRORS = [
    ("ppl.ops.matmul", lambda: ops.matmul(ops.ones((2, 3)), ops.ones((4, 5)))),
    ("ppl.ops.linalg.matmul", lambda: ops.linalg.matmul(ops.ones((2, 3)), ops.ones((4, 5)))),
    ("ppl.ops.add", lambda: ops.add(ops.ones((3,)), ops.ones((4,)))),
    ("ppl.ops.multiply", lambda: ops.multiply(ops.ones((2, 3)), ops.ones((3, 2)))),
    ("ppl.ops.where", lambda: ops.where(ops.ones((3,)) > 0, ops.ones((3,)), ops.ones((2,)))),
    ("ppl.ops.reshape", lambda: ops.reshape(ops.ones((2, 3)), (4,))),
    ("ppl.ops.concat", lambda: ops.concat([ops.ones((2, 3)), ops.ones((2, 4))], axis=0)),
    ("ppl.ops.stack", lambda: ops.stack([ops.ones((2,)), ops.ones((3,))])),
    ("ppl.ops.broadcast_to", lambda: ops.broadcast_to(ops.ones((3,)), (2, 4))),
    ("ppl.ops.sum", lambda: ops.sum(ops.ones((2, 3)), axis=5)),
    ("ppl.ops.cholesky", lambda: ops.cholesky(ops.ones((2, 3)))),
    ("ppl.ops.linalg.cholesky", lambda: ops.linalg.cholesky(ops.ones((2, 3)))),
    ("ppl.ops.solve_triangular",
     lambda: ops.solve_triangular(ops.eye(3), ops.ones((4, 2)), lower=True)),
    ("ppl.ops.linalg.solve", lambda: ops.linalg.solve(ops.eye(3), ops.ones((4, 2)))),
    ("ppl.ops.einsum", lambda: ops.einsum("ij,jk->ik", ops.ones((2, 3)), ops.ones((4, 2)))),
    ("ppl.ops.logsumexp", lambda: ops.logsumexp(ops.ones((2, 3)), axis=3)),
]

DTYPE_ERRORS = [
    ("ppl.ops.exp", lambda: ops.exp(np.array(["a", "b"]))),
    ("ppl.ops.log", lambda: ops.log("abc")),
    ("ppl.ops.add", lambda: ops.add(np.array(["a"]), ops.ones((1,)))),
    ("ppl.ops.sum", lambda: ops.sum(np.array([object(), object()]))),
    ("ppl.ops.asarray", lambda: ops.asarray(["a", "b"])),
    ("ppl.ops.asarray", lambda: ops.asarray(np.array([object()], dtype=object))),
    ("ppl.ops.matmul", lambda: ops.matmul(np.array([["a"]]), ops.ones((1, 1)))),
    ("ppl.ops.cholesky", lambda: ops.cholesky(np.array([["x"]]))),
]


@pytest.mark.parametrize("name, call", SHAPE_ERRORS, ids=[n for n, _ in SHAPE_ERRORS])
def test_shape_mismatch_raises_value_error(backend, name, call):
    with pytest.raises(ValueError) as info:
        call()
    assert name.replace(".linalg", "") in str(info.value).replace(".linalg", ""), (
        f"message does not name {name}: {info.value}")


@pytest.mark.parametrize("name, call", DTYPE_ERRORS, ids=[f"{n}-{i}" for i, (n, _) in
                                                          enumerate(DTYPE_ERRORS)])
def test_wrong_dtype_raises(backend, name, call):
    with pytest.raises((TypeError, ValueError)) as info:
        call()
    assert name in str(info.value), f"message does not name {name}: {info.value}"


def test_random_bad_input_names_the_sampler(backend):
    with pytest.raises((TypeError, ValueError)) as info:
        rnd.normal(rnd.key(0), ("a", 2))
    assert "ppl.random.normal" in str(info.value)
    with pytest.raises((TypeError, ValueError)) as info:
        rnd.gamma(rnd.key(0), ops.ones((3,)), (4, 2))
    assert "ppl.random.gamma" in str(info.value)


def test_errors_inside_user_functions_pass_through(backend):
    """Higher-order ops do not wrap errors raised by the user's own function."""
    class Boom(Exception):
        pass

    def f(x):
        raise Boom("mine")

    with pytest.raises(Boom):
        ops.grad(f)(ops.asarray(1.0))
    with pytest.raises(Boom):
        ops.scan(lambda c, x: f(c), ops.asarray(0.0), ops.ones(3))


def test_a_keyword_of_another_library_names_numpys(backend):
    """``ops.sum(x, dim=0)`` (torch's name) says to use ``axis=``; an unknown keyword is
    named with the op, not the backend's class that implements it (``NumpyCore.sum()``)."""
    x = ops.ones((2, 3))
    with pytest.raises(TypeError, match=r"^ppl\.ops\.sum\(\) got an unexpected keyword "
                                        r"argument 'dim': .*use axis= instead\.$"):
        ops.sum(x, dim=0)
    with pytest.raises(TypeError, match=r"'keepdim'.*use keepdims= instead"):
        ops.sum(x, axis=0, keepdim=True)
    with pytest.raises(TypeError, match=r"^ppl\.ops\.sum\(\) got an unexpected keyword "
                                        r"argument 'bogus'\.$"):
        ops.sum(x, bogus=1)


@pytest.mark.parametrize("grad_op", ["grad", "value_and_grad"])
def test_grad_of_a_function_that_is_not_scalar_valued(backend, grad_op):
    """``grad`` differentiates scalar functions only: a vector output or ``None`` is an error
    naming the op on every backend (autograd and TensorFlow's tape silently differentiated the
    sum of a vector output; ``None`` gave autograd's "Can't find vector space")."""
    op = getattr(ops, grad_op)
    for fun, got in [(lambda x: x ** 2, r"an array of shape \(3,\)"), (lambda x: None, "None")]:
        with pytest.raises(TypeError, match=rf"^ppl\.ops\.{grad_op}: the function must return a "
                                            rf"scalar \(shape \(\)\) to differentiate, got {got}"):
            op(fun)(ops.ones(3))
    with pytest.raises(TypeError, match=r"has_aux=True\): the function must return a pair"):
        op(lambda x: ops.sum(x), has_aux=True)(ops.ones(3))
    # scalar functions, under vmap and jit too, against the analytic gradient 2x
    x = np.array([[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]], np.float32)
    g = ops.vmap(ops.grad(lambda v: ops.sum(v ** 2)))(ops.asarray(x))
    np.testing.assert_allclose(ops.to_numpy(g), 2 * x, rtol=1e-6)
    g = ops.jit(ops.grad(lambda v: ops.sum(v ** 2)))(ops.asarray(x[0]))
    np.testing.assert_allclose(ops.to_numpy(g), 2 * x[0], rtol=1e-6)


def test_grad_passes_an_aux_of_any_kind_through(backend):
    """``has_aux=True`` returns the aux output as given, Python values included, as
    ``jax.grad`` does (torch's ``torch.func`` accepted tensors only: "Expected tensors, got
    unsupported type <class 'str'>")."""
    x = np.array([1.0, -2.0, 0.5], np.float32)

    def fun(v):
        return ops.sum(v ** 3), {"twice": 2 * v, "label": "cubes", "meta": (None, 3, 1.5)}

    g, aux = ops.grad(fun, has_aux=True)(ops.asarray(x))
    np.testing.assert_allclose(ops.to_numpy(g), 3 * x ** 2, rtol=1e-6)
    np.testing.assert_allclose(ops.to_numpy(aux["twice"]), 2 * x)
    assert (aux["label"], aux["meta"]) == ("cubes", (None, 3, 1.5))
    (value, aux), g = ops.value_and_grad(fun, has_aux=True)(ops.asarray(x))
    np.testing.assert_allclose(float(ops.to_numpy(value)), np.sum(x ** 3), rtol=1e-6)
    assert aux["label"] == "cubes"


def test_vmap_of_an_argument_without_the_mapped_axis(backend):
    """A 0-d argument mapped over axis 0 is an error that names vmap and the fix (numpy and
    TensorFlow raised "tuple index out of range"; JAX and torch say it in their own words)."""
    with pytest.raises(ValueError, match=r"vmap"):
        ops.vmap(lambda x: x * 2)(ops.asarray(1.0))
    with pytest.raises(ValueError, match=r"vmap"):
        ops.vmap(lambda x, y: x * y)(ops.ones(3), ops.ones(4))
    out = ops.vmap(lambda x, y: x * y, in_axes=(0, None))(ops.ones(3), ops.asarray(2.0))
    np.testing.assert_allclose(ops.to_numpy(out), [2.0, 2.0, 2.0])


def test_random_shapes_are_checked_alike(backend):
    """A sampler's shape must hold ints >= 0 on every backend (torch's ``normal`` returned an
    empty draw for ``(-1, 2)``; the others raised their framework's error, JAX "Invalid type");
    an int is a 1-d shape, NumPy integers count as ints."""
    key = rnd.key(0)
    for shape in [(-1, 2), (2.5,), (True,), "ab"]:
        with pytest.raises(ValueError, match=r"^ppl\.random\.normal: shape must be a tuple of "
                                             r"ints >= 0, got "):
            rnd.normal(key, shape)
    with pytest.raises(ValueError, match=r"^ppl\.random\.gamma: shape must be"):
        rnd.gamma(key, 2.0, shape=(2, -3))
    assert tuple(ops.shape(rnd.normal(key, 3))) == (3,)
    assert tuple(ops.shape(rnd.uniform(key, [2, np.int64(3)]))) == (2, 3)
    assert tuple(ops.shape(rnd.gamma(key, 2.0, shape=np.int64(4)))) == (4,)
    assert tuple(ops.shape(rnd.normal(key, (0, 2)))) == (0, 2)


def test_grad_at_a_point_the_function_also_closes_over(backend):
    """d/da sum(a * x) at a = x is x: only the argument is differentiated, not every use of
    the same array (TensorFlow's tape watched the caller's tensor itself and gave 2x)."""
    xs = np.array([1.0, 2.0, 3.0], np.float32)
    x = ops.asarray(xs)
    np.testing.assert_allclose(ops.to_numpy(ops.grad(lambda a: ops.sum(a * x))(x)), xs)
    ga, gb = ops.grad(lambda a, b: ops.sum(a * b), argnums=(0, 1))(x, x)
    np.testing.assert_allclose(ops.to_numpy(ga), xs)
    np.testing.assert_allclose(ops.to_numpy(gb), xs)
    g = ops.grad(lambda d: ops.sum(d["a"] * d["b"] + 0.0 * d["n"]))({"a": x, "b": x, "n": 1.0})
    np.testing.assert_allclose(ops.to_numpy(g["a"]), xs)
    np.testing.assert_allclose(ops.to_numpy(g["b"]), xs)
    np.testing.assert_allclose(ops.to_numpy(ops.jit(ops.grad(lambda a: ops.sum(a * x)))(x)), xs)


@pytest.mark.filterwarnings("ignore:Output seems independent of input")
def test_grad_of_a_constant_and_of_a_bad_function_under_jit(backend):
    """A function returning a Python number has gradient zero on every backend (torch and
    TensorFlow raised their own errors); a non-scalar output under ``jit`` is the same clear
    error, not first a TensorFlow warning that the function "runs eagerly from now on"."""
    np.testing.assert_array_equal(ops.to_numpy(ops.grad(lambda v: 1.0)(ops.ones(2))), [0, 0])
    (value, aux), g = ops.value_and_grad(lambda v: (2, "a"), has_aux=True)(ops.ones(2))
    assert float(ops.to_numpy(value)) == 2.0 and aux == "a"
    np.testing.assert_array_equal(ops.to_numpy(g), [0, 0])
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(TypeError, match=r"^ppl\.ops\.grad: the function must return a "):
            ops.jit(ops.grad(lambda v: v ** 2))(ops.ones(2))
