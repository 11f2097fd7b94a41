"""Each effect handler on every backend: as a function wrapper and as a context manager."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from conftest import assert_close, to_numpy

import ppl
import ppl.distributions as dist
from ppl import handlers, ops
from ppl.inference import log_density

pytestmark = pytest.mark.dtypes("float64")

Y = np.array([0.3, -1.2, 0.8])


def model(y=None):
    mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
    sigma = ppl.sample("sigma", dist.HalfNormal(1.0))
    with ppl.plate("N", 3):
        ppl.deterministic("shift", mu + 1.0)
        return ppl.sample("y", dist.Normal(mu, sigma), obs=y)


def ref_log_joint(mu, sigma, y=Y, scale=1.0, mask=None):
    lik = st.norm(mu, sigma).logpdf(y)
    if mask is not None:
        lik = lik * mask
    return st.norm().logpdf(mu) + st.halfnorm().logpdf(sigma) + scale * lik.sum()


def test_trace_sites_and_keys(backend):
    tr = handlers.trace(handlers.seed(model, rng_seed=0)).get_trace(Y)
    assert list(tr) == ["mu", "sigma", "N", "shift", "y"]
    keys = {"type", "name", "fn", "args", "kwargs", "value", "is_observed", "scale", "mask",
            "cond_indep_stack", "infer", "intermediates"}
    for site in tr.values():
        assert keys <= set(site)
    assert [tr[n]["type"] for n in tr] == ["sample", "sample", "plate", "deterministic", "sample"]
    assert tr["y"]["is_observed"] and not tr["mu"]["is_observed"]
    assert_close(tr["y"]["value"], Y)
    assert tr["y"]["cond_indep_stack"] == [ppl.primitives.CondIndepStackFrame("N", -1, 3)]
    assert tr["mu"]["cond_indep_stack"] == []
    assert isinstance(tr["mu"]["fn"], dist.Normal)
    # context-manager form gives the same sites
    with handlers.seed(rng_seed=0), handlers.trace() as tr2:
        model(Y)
    assert list(tr2) == list(tr)
    assert_close(tr2["mu"]["value"], to_numpy(tr["mu"]["value"]))


def test_trace_rejects_duplicate_names(backend):
    def twice():
        ppl.sample("x", dist.Normal(0.0, 1.0), obs=0.0)
        ppl.sample("x", dist.Normal(0.0, 1.0), obs=1.0)

    with pytest.raises(ValueError, match="'x' is used twice"):
        handlers.trace(twice).get_trace()


def test_seed_reproducible_and_distinct(backend):
    a = handlers.trace(handlers.seed(model, rng_seed=3)).get_trace()
    b = handlers.trace(handlers.seed(model, rng_seed=3)).get_trace()
    c = handlers.trace(handlers.seed(model, rng_seed=4)).get_trace()
    for name in ("mu", "sigma", "y"):
        assert_close(a[name]["value"], to_numpy(b[name]["value"]))
    assert float(to_numpy(a["mu"]["value"])) != float(to_numpy(c["mu"]["value"]))
    # per-site keys differ: two iid sites get different values
    def two():
        return ppl.sample("a", dist.Normal(0.0, 1.0)), ppl.sample("b", dist.Normal(0.0, 1.0))

    x, y = handlers.seed(two, rng_seed=0)()
    assert float(to_numpy(x)) != float(to_numpy(y))
    # a key works as well as an int; the same seeded model repeats its draws on every call
    seeded = handlers.seed(two, rng_seed=ppl.random.key(5))
    assert_close(seeded()[0], to_numpy(seeded()[0]))
    # an inner seed wins over an outer one
    with handlers.seed(rng_seed=1):
        inner = handlers.seed(two, rng_seed=0)()
    assert_close(inner[0], to_numpy(x))


def test_seed_under_jit_is_stateless(backend):
    def draw(key):
        with handlers.seed(rng_seed=key):
            return model()

    jitted = ops.jit(draw)
    k1, k2 = ppl.random.split(ppl.random.key(0), 2)
    first = to_numpy(jitted(k1))
    assert_close(jitted(k1), first)                       # second call: no leaked state
    assert not np.allclose(to_numpy(jitted(k2)), first)
    assert_close(draw(k1), first, tol=1e3)                # jit agrees with eager


def test_seed_argument_errors(backend):
    with pytest.raises(TypeError, match="rng_seed"):
        handlers.seed(model)
    with pytest.raises(TypeError, match="rng_seed must be an int"):
        handlers.seed(model, rng_seed=1.5)


def test_condition(backend):
    conditioned = handlers.condition(model, data={"mu": 0.5, "sigma": 2.0})
    tr = handlers.trace(conditioned).get_trace(Y)
    assert tr["mu"]["is_observed"] and tr["sigma"]["is_observed"]
    assert_close(tr["mu"]["value"], 0.5)
    lp, _ = log_density(conditioned, (Y,), {}, {})
    assert_close(lp, ref_log_joint(0.5, 2.0))
    with handlers.condition(data={"mu": 0.25}):
        with handlers.seed(rng_seed=0):
            out = handlers.trace(model).get_trace()
    assert_close(out["mu"]["value"], 0.25)
    with pytest.raises(TypeError, match="dict"):
        handlers.condition(model, data=[1.0])


def test_substitute(backend):
    sub = handlers.substitute(handlers.seed(model, rng_seed=0), data={"mu": 1.5, "shift": 0.0})
    tr = handlers.trace(sub).get_trace()
    assert_close(tr["mu"]["value"], 1.5)
    assert not tr["mu"]["is_observed"]
    assert_close(tr["shift"]["value"], 0.0)          # deterministic sites too
    assert_close(tr["y"]["fn"].mean, np.full(3, 1.5))  # downstream sites see the value
    by_fn = handlers.substitute(handlers.seed(model, rng_seed=0),
                                substitute_fn=lambda site: 2.0 if site["name"] == "sigma"
                                else None)
    assert_close(handlers.trace(by_fn).get_trace()["sigma"]["value"], 2.0)
    with pytest.raises(ValueError, match="exactly one"):
        handlers.substitute(model)


def test_block(backend):
    seeded = handlers.seed(model, rng_seed=0)
    assert "mu" not in handlers.trace(handlers.block(seeded, hide=["mu"])).get_trace()
    assert list(handlers.trace(handlers.block(seeded, expose=["y"])).get_trace()) == ["y"]
    tr = handlers.trace(handlers.block(seeded, expose_types=["deterministic"])).get_trace()
    assert list(tr) == ["shift"]
    tr = handlers.trace(handlers.block(seeded, hide_fn=lambda s: s["type"] == "sample")) \
        .get_trace()
    assert list(tr) == ["N", "shift"]
    assert len(handlers.trace(handlers.block(seeded)).get_trace()) == 0
    # a blocked site still gets its key from a seed outside the block
    # (more cases: test_model_block_seed.py)
    handlers.seed(handlers.block(model, hide=["mu"]), rng_seed=0)()


def test_replay(backend):
    tr = handlers.trace(handlers.seed(model, rng_seed=0)).get_trace()
    replayed = handlers.trace(handlers.replay(handlers.seed(model, rng_seed=9), trace=tr)) \
        .get_trace()
    for name in ("mu", "sigma", "y"):
        assert_close(replayed[name]["value"], to_numpy(tr[name]["value"]))
    observed = handlers.trace(handlers.seed(model, rng_seed=0)).get_trace(Y)

    def latent_y():
        return ppl.sample("y", dist.Normal(0.0, 1.0).expand([3]))

    with pytest.raises(ValueError, match="'y' is latent in the model but observed"):
        handlers.replay(handlers.seed(latent_y, rng_seed=0), trace=observed)()


def test_mask(backend):
    point = {"mu": 0.2, "sigma": 1.3}
    lp_on, tr = log_density(handlers.mask(model, mask=True), (Y,), {}, point)
    assert_close(lp_on, ref_log_joint(0.2, 1.3))
    assert tr["y"]["mask"] is True
    lp_off, _ = log_density(handlers.mask(model, mask=False), (Y,), {}, point)
    assert_close(lp_off, 0.0)

    m_outer, m_inner = np.array([True, False, True]), np.array([True, True, False])

    def part(y):
        mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
        with ppl.plate("N", 3), handlers.mask(mask=ops.asarray(m_outer)):
            with handlers.mask(mask=ops.asarray(m_inner)):  # nested masks combine with "and"
                ppl.sample("y", dist.Normal(mu, 1.0), obs=y)

    lp, _ = log_density(part, (Y,), {}, {"mu": 0.2})
    both = m_outer & m_inner
    assert_close(lp, st.norm().logpdf(0.2) + (both * st.norm(0.2, 1).logpdf(Y)).sum())
    with pytest.raises(TypeError, match="boolean"):
        handlers.mask(model, mask=ops.asarray([1.0, 0.0, 1.0]))


def test_scale(backend):
    point = {"mu": -0.3, "sigma": 0.7}
    lp, _ = log_density(handlers.scale(model, scale=3.0), (Y,), {}, point)
    assert_close(lp, 3.0 * ref_log_joint(-0.3, 0.7))

    def part(y):
        mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
        sigma = ppl.sample("sigma", dist.HalfNormal(1.0))
        with ppl.plate("N", 3), handlers.scale(scale=2.0), handlers.scale(scale=0.5 + 1.0):
            ppl.sample("y", dist.Normal(mu, sigma), obs=y)

    lp2, tr = log_density(part, (Y,), {}, point)
    assert_close(lp2, ref_log_joint(-0.3, 0.7, scale=3.0))
    assert float(to_numpy(tr["y"]["scale"])) == 3.0
    with pytest.raises(ValueError, match="positive"):
        handlers.scale(model, scale=-1.0)
    with pytest.raises(ValueError, match="positive"):
        handlers.scale(model, scale=ops.asarray([1.0, 0.0]))


def test_handler_as_decorator(backend):
    @handlers.seed(rng_seed=0)
    def decorated():
        return ppl.sample("x", dist.Normal(0.0, 1.0))

    assert ops.shape(decorated()) == ()
    with pytest.raises(TypeError, match="no function to run"):
        handlers.trace()(1, 2)
