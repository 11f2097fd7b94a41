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
