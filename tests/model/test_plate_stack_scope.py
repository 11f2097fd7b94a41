"""``ppl.plate_stack`` and ``ppl.handlers.scope`` (NumPyro's semantics) on every backend:
trace-level checks (names, batch shapes, ``cond_indep_stack``) and ``log_density`` against a
SciPy sum."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from conftest import assert_close, to_numpy

import ppl
import ppl.distributions as dist
from ppl import handlers, ops
from ppl.distributions import constraints
from ppl.inference import log_density
from ppl.primitives import CondIndepStackFrame as Frame

Y = np.array([[0.3, -1.2, 0.8], [1.5, 0.1, -0.4]])


def stacked(y=None):
    mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
    with ppl.plate_stack("data", (2, 3)):
        z = ppl.sample("z", dist.Normal(mu, 2.0))
        ppl.sample("y", dist.Normal(mu, 1.0), obs=y)
    return z


def test_plate_stack_names_dims_and_shapes(backend):
    tr = handlers.trace(handlers.seed(stacked, rng_seed=0)).get_trace(Y)
    assert [(n, s["type"]) for n, s in tr.items()] == [
        ("mu", "sample"), ("data_0", "plate"), ("data_1", "plate"), ("z", "sample"),
        ("y", "sample")]
    for name in ("z", "y"):
        assert tr[name]["fn"].batch_shape == (2, 3)
        assert sorted(tr[name]["cond_indep_stack"], key=lambda f: f.dim) == [
            Frame("data_1", -2, 2), Frame("data_0", -1, 3)]
    assert ops.shape(tr["z"]["value"]) == (2, 3)
    z = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    lp, _ = log_density(stacked, (Y,), {}, {"mu": 0.4, "z": z})
    ref = st.norm().logpdf(0.4) + st.norm(0.4, 2.0).logpdf(z).sum() \
        + st.norm(0.4, 1.0).logpdf(Y).sum()
    assert_close(lp, np.asarray(ref))


def test_plate_stack_rightmost_dim_and_inner_plates(backend):
    def model():
        with ppl.plate_stack("s", [4, 2], rightmost_dim=-2), ppl.plate("inner", 3):
            return ppl.sample("x", dist.Normal(0.0, 1.0))

    tr = handlers.trace(handlers.seed(model, rng_seed=0)).get_trace()
    assert ops.shape(tr["x"]["value"]) == (4, 2, 3)
    assert sorted(tr["x"]["cond_indep_stack"], key=lambda f: f.dim) == [
        Frame("s_1", -3, 4), Frame("s_0", -2, 2), Frame("inner", -1, 3)]
    # no sizes: no plates; plates are left on exit
    with handlers.seed(rng_seed=0), ppl.plate_stack("none", ()):
        assert ops.shape(ppl.sample("w", dist.Normal(0.0, 1.0))) == ()
    with handlers.seed(rng_seed=0):
        with ppl.plate_stack("a", (5,)):
            pass
        assert ops.shape(ppl.sample("v", dist.Normal(0.0, 1.0))) == ()


def test_plate_stack_errors(backend):
    for bad in (0, 1, -1.0, True):
        with pytest.raises(ValueError, match="rightmost_dim must be a negative integer"):
            with ppl.plate_stack("p", (2,), rightmost_dim=bad):
                pass
    with pytest.raises(TypeError, match="sizes must be a sequence of positive integers"):
        with ppl.plate_stack("p", 3):
            pass
    with pytest.raises(ValueError, match=r"ppl.plate\('p_0', size\): size must be >= 1"):
        with ppl.plate_stack("p", (2, 0)):
            pass
    with pytest.raises(ValueError, match="Pass data matching the plate"):
        handlers.seed(stacked, rng_seed=0)(Y.T)


def group(y=None):
    mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
    s = ppl.param("s", 1.5, constraint=constraints.positive)
    with ppl.plate("N", 3):
        ppl.deterministic("shift", mu + 1.0)
        ppl.sample("y", dist.Normal(mu, s), obs=y)


def two_groups(y1=None, y2=None):
    handlers.scope(group, prefix="a")(y1)
    with handlers.scope(prefix="b", divider="."):
        group(y2)


def test_scope_renames_every_site_and_plate(backend):
    tr = handlers.trace(handlers.seed(two_groups, rng_seed=0)).get_trace(Y[0], Y[1])
    assert [(n, s["type"]) for n, s in tr.items()] == [
        ("a/mu", "sample"), ("a/s", "param"), ("a/N", "plate"), ("a/shift", "deterministic"),
        ("a/y", "sample"), ("b.mu", "sample"), ("b.s", "param"), ("b.N", "plate"),
        ("b.shift", "deterministic"), ("b.y", "sample")]
    assert all(tr[n]["name"] == n for n in tr)
    assert tr["a/y"]["cond_indep_stack"] == [Frame("a/N", -1, 3)]
    assert tr["b.shift"]["cond_indep_stack"] == [Frame("b.N", -1, 3)]
    assert tr["a/mu"]["cond_indep_stack"] == []
    lp, _ = log_density(two_groups, (Y[0], Y[1]), {}, {"a/mu": 0.2, "b.mu": -0.3})
    ref = sum(st.norm().logpdf(m) + st.norm(m, 1.5).logpdf(y).sum()
              for m, y in ((0.2, Y[0]), (-0.3, Y[1])))
    assert_close(lp, np.asarray(ref))
    # other handlers outside see the scoped names
    out = handlers.condition(handlers.seed(two_groups, rng_seed=0), {"b.mu": 0.7})
    tr = handlers.trace(out).get_trace()
    assert tr["b.mu"]["is_observed"] and not tr["a/mu"]["is_observed"]
    assert_close(tr["b.shift"]["value"], np.asarray(1.7))


def test_nested_scopes_and_hide_types(backend):
    def model():
        with handlers.scope(prefix="outer"), handlers.scope(prefix="inner", divider=":"):
            with ppl.plate("P", 2):
                ppl.sample("x", dist.Normal(0.0, 1.0))

    tr = handlers.trace(handlers.seed(model, rng_seed=0)).get_trace()
    assert list(tr) == ["outer/inner:P", "outer/inner:x"]
    assert tr["outer/inner:x"]["cond_indep_stack"] == [Frame("outer/inner:P", -1, 2)]

    kept = handlers.scope(group, prefix="g", hide_types=["plate", "deterministic"])
    tr = handlers.trace(handlers.seed(kept, rng_seed=0)).get_trace(Y[0])
    assert list(tr) == ["g/mu", "g/s", "N", "shift", "g/y"]
    assert tr["g/y"]["cond_indep_stack"] == [Frame("N", -1, 3)]
    # a scope inside the plate: the frame is added after the renaming, so it keeps its name
    def inside():
        with ppl.plate("Q", 2), handlers.scope(prefix="in"):
            ppl.sample("q", dist.Normal(0.0, 1.0))

    tr = handlers.trace(handlers.seed(inside, rng_seed=0)).get_trace()
    assert list(tr) == ["Q", "in/q"] and tr["in/q"]["cond_indep_stack"] == [Frame("Q", -1, 2)]
    assert ops.shape(tr["in/q"]["value"]) == (2,)


def test_scope_errors(backend):
    with pytest.raises(TypeError, match="prefix must be a string"):
        handlers.scope(group)
    with pytest.raises(TypeError, match="hide_types must be a list of site types"):
        handlers.scope(group, prefix="a", hide_types=[1])
    # the same sub-model twice without a scope: the duplicate name is reported
    def twice():
        group(Y[0])
        group(Y[1])

    with pytest.raises(ValueError, match="'mu' is used twice"):
        handlers.trace(handlers.seed(twice, rng_seed=0)).get_trace()
    assert to_numpy(handlers.seed(handlers.scope(stacked, prefix="x"), 0)()).shape == (2, 3)
