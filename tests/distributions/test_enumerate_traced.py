"""``enumerate_support`` of the count families (Binomial, BetaBinomial) inside compiled code.

The support ``0..total_count`` has ``total_count + 1`` values, a shape, so enumeration needs a
concrete total count when a program is built:

* a total count given as data (a Python int or a NumPy array the function closes over) is
  enumerated inside ``ops.jit`` and ``ops.vmap`` on every backend, although the backend array
  made from it is traced there on JAX; the log-probabilities of the support are checked against
  ``scipy.stats`` (``binom``, ``betabinom``);
* a traced total count (an argument of the compiled function) raises a ``TypeError`` that names
  ``total_count`` and says what to pass instead: on JAX under ``jit`` and ``vmap``, and under
  ``vmap`` on every backend whose ``vmap`` traces (``vmap_is_loop`` false). numpy's ``jit``
  records concrete values, and torch's and tensorflow's ``jit`` run a function they cannot trace
  eagerly, so there the same call enumerates the concrete value.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import scipy.stats as st
from conftest import assert_close, to_numpy

import ppl.distributions as dist
from ppl import ops


@dataclass(frozen=True)
class Case:
    id: str
    make: Callable            # (total_count, theta) -> distribution
    logpmf: Callable          # (k, total_count, theta) -> SciPy log-pmf of the same law
    theta: float              # the other parameter's default


CASES = [
    Case("Binomial", lambda n, p: dist.Binomial(n, probs=p),
         lambda k, n, p: st.binom.logpmf(k, n, p), 0.3),
    Case("BetaBinomial", lambda n, a: dist.BetaBinomial(a, 3.0, n),
         lambda k, n, a: st.betabinom.logpmf(k, n, a, 3.0), 2.0),
]
IDS = [c.id for c in CASES]
TRACED = r"total_count is traced.*concrete total count.*Python int or a NumPy array"


def _support_log_prob(case, n, theta=None):
    d = case.make(n, case.theta if theta is None else theta)
    return d.log_prob(d.enumerate_support(expand=False))


def _expected(case, n: int, batch=(), theta=None):
    """SciPy's log-pmf of ``0..n``, shape ``(n + 1,) + batch``."""
    k = np.arange(n + 1).reshape((-1,) + (1,) * len(batch))
    lp = case.logpmf(k, n, case.theta if theta is None else theta)
    return np.broadcast_to(lp, (n + 1,) + tuple(batch))


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("given", [4, np.array([4, 4])], ids=["int", "numpy"])
def test_concrete_total_count_enumerates_inside_jit(backend, case, given):
    """Data closed over by a jitted function: enumerated there (JAX: the array made from it is
    a tracer, the constructor's argument is not)."""
    batch = np.shape(given)

    @ops.jit
    def f(scale):
        return scale * _support_log_prob(case, given)

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)   # tensorflow: compiled, not eager
        for _ in range(2):   # torch traces at its first call here, then runs the trace
            out = f(ops.asarray(1.0))
    assert_close(out, _expected(case, 4, batch), tol=10)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_concrete_total_count_enumerates_inside_vmap(backend, case):
    """vmap over the other parameter: the closed-over total count stays concrete."""
    thetas = np.array([0.2, 0.7])
    out = ops.vmap(lambda theta: _support_log_prob(case, 3, theta))(ops.asarray(thetas))
    assert_close(out, np.stack([_expected(case, 3, theta=t) for t in thetas]), tol=10)


@pytest.mark.backends("jax")
@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("transform", ["jit", "vmap"])
def test_traced_total_count_raises_on_jax(backend, case, transform):
    f = getattr(ops, transform)(lambda n: ops.sum(case.make(n, case.theta).enumerate_support()))
    arg = ops.asarray(4.0) if transform == "jit" else ops.asarray([4.0, 4.0])
    with pytest.raises(TypeError, match=f"{case.id}.enumerate_support: {TRACED}"):
        f(arg)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_traced_total_count_under_vmap(backend, case):
    """A batched total count has no single value: an error where vmap traces, the per-member
    supports where it is a loop (numpy)."""
    f = ops.vmap(lambda n: ops.sum(case.make(n, case.theta).enumerate_support()))
    ns = ops.asarray([3.0, 4.0])
    if ops.backend().vmap_is_loop:
        np.testing.assert_array_equal(to_numpy(f(ns)), [6, 10])   # 0+1+2+3, 0+...+4
    else:
        with pytest.raises(TypeError, match=TRACED):
            f(ns)


@pytest.mark.backends("numpy", "torch", "tensorflow")
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_traced_total_count_under_jit_runs_eagerly(backend, case):
    """numpy's jit records concrete values; torch's and tensorflow's run a function they cannot
    trace eagerly (tensorflow with a RuntimeWarning quoting the error): the result is the
    concrete one, as without jit."""
    f = ops.jit(lambda n: _support_log_prob(case, n))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "ppl.ops.jit", RuntimeWarning)
        for _ in range(2):
            out = f(ops.asarray(4.0))
    assert_close(out, _expected(case, 4), tol=10)
