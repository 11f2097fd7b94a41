"""``sample(..., obs_mask=...)``: missing-data imputation, as NumPyro's, on every backend.

Trace-level checks (site names, types, masks, values), ``log_density`` against a SciPy sum,
its gradient against the analytic one with NaN in the missing data, and the argument errors.
NUTS on it: tests/inference/test_obs_mask_posterior.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from conftest import assert_close, to_numpy

import ppl
import ppl.distributions as dist
from ppl import handlers, ops
from ppl.inference import log_density

Y = np.array([0.3, np.nan, 1.2, np.nan, -0.5, 0.8])
MASK = ~np.isnan(Y)
PRIOR_SD = 2.0


def model(y=None, mask=None):
    mu = ppl.sample("mu", dist.Normal(0.0, PRIOR_SD))
    with ppl.plate("N", 6):
        return ppl.sample("y", dist.Normal(mu, 1.0), obs=y, obs_mask=mask)


def ref_log_joint(mu, u, y=Y, mask=MASK):
    """log p(mu) + observed entries of y + every entry of the latent y_unobserved (its prior
    density is kept at the observed entries, where nothing reads it)."""
    return (st.norm(0.0, PRIOR_SD).logpdf(mu) + st.norm(mu, 1.0).logpdf(y[mask]).sum()
            + st.norm(mu, 1.0).logpdf(u).sum())


def test_sites_masks_and_values(backend):
    tr = handlers.trace(handlers.seed(model, rng_seed=0)).get_trace(Y, MASK)
    assert [(n, s["type"]) for n, s in tr.items()] == [
        ("mu", "sample"), ("N", "plate"), ("y_unobserved", "sample"),
        ("y_observed", "sample"), ("y", "deterministic")]
    lat, obs, y = tr["y_unobserved"], tr["y_observed"], tr["y"]
    assert not lat["is_observed"] and obs["is_observed"]
    assert lat["mask"] is None                       # the latent part keeps its density
    np.testing.assert_array_equal(to_numpy(obs["mask"]), MASK)
    assert lat["fn"].batch_shape == obs["fn"].batch_shape == (6,)
    frame = ppl.primitives.CondIndepStackFrame("N", -1, 6)
    assert lat["cond_indep_stack"] == obs["cond_indep_stack"] == y["cond_indep_stack"] == [frame]
    u = to_numpy(lat["value"])
    expected = np.where(MASK, Y, u)
    assert_close(y["value"], expected)
    assert_close(obs["value"], expected)             # the unread NaN entries hold the latent
    assert not np.isnan(to_numpy(y["value"])).any()


def test_log_density_and_gradient_with_nan_data(backend, dtype):
    mu, u = 0.7, np.array([0.1, -0.4, 2.0, 0.5, 1.1, -1.3])
    params = {"mu": ops.asarray(mu), "y_unobserved": ops.asarray(u)}
    lp, _ = log_density(model, (Y, MASK), {}, params)
    assert_close(lp, np.asarray(ref_log_joint(mu, u)))

    def f(m):
        return log_density(model, (Y, MASK), {}, {"mu": m, "y_unobserved": ops.asarray(u)})[0]

    grad = ops.grad(f)(ops.asarray(mu))
    expected = -mu / PRIOR_SD**2 + (Y[MASK] - mu).sum() + (u - mu).sum()
    assert_close(grad, np.asarray(expected), kind="grad")   # finite: NaN data never read


def test_obs_none_draws_both_parts(backend):
    tr = handlers.trace(handlers.seed(model, rng_seed=1)).get_trace(None, MASK)
    lat, obs = tr["y_unobserved"], tr["y_observed"]
    assert not lat["is_observed"] and not obs["is_observed"]
    assert lat["mask"] is None and obs["mask"] is None
    assert_close(tr["y"]["value"], np.where(MASK, to_numpy(obs["value"]), to_numpy(lat["value"])))
    mu, a, b = (np.asarray(0.2), np.linspace(-1, 1, 6), np.linspace(0, 2, 6))
    lp, _ = log_density(model, (None, MASK), {},
                        {"mu": mu, "y_observed": a, "y_unobserved": b})
    assert_close(lp, np.asarray(st.norm(0, PRIOR_SD).logpdf(mu) + st.norm(mu, 1).logpdf(a).sum()
                                + st.norm(mu, 1).logpdf(b).sum()))


def _event_model(y, mask):
    loc = ppl.sample("loc", dist.Normal(ops.zeros(2), 1.0).to_event(1))
    with ppl.plate("rows", 4):
        return ppl.sample("x", dist.Normal(loc, 1.0).to_event(1), obs=y, obs_mask=mask)


def test_event_dims_mask_whole_events(backend):
    y = np.array([[0.5, 1.0], [np.nan, np.nan], [-1.0, 0.2], [np.nan, np.nan]])
    mask = np.array([True, False, True, False])
    loc, u = np.array([0.1, -0.2]), np.arange(8.0).reshape(4, 2) / 4
    lp, tr = log_density(_event_model, (y, mask), {}, {"loc": loc, "x_unobserved": u})
    assert ops.shape(tr["x"]["value"]) == (4, 2)
    assert_close(tr["x"]["value"], np.where(mask[:, None], y, u))
    ref = (st.norm().logpdf(loc).sum() + st.norm(loc, 1).logpdf(y[mask]).sum()
           + st.norm(loc, 1).logpdf(u).sum())
    assert_close(lp, np.asarray(ref))


def test_mask_broadcasting_and_composition(backend):
    def flat(y, mask):    # a scalar distribution, no plate: the data give the batch shape
        return ppl.sample("z", dist.Normal(0.0, 1.0), obs=y, obs_mask=mask)

    y = np.array([1.0, np.nan, 3.0])
    for mask in (np.array([True, False, True]), False):
        tr = handlers.trace(handlers.seed(flat, rng_seed=0)).get_trace(y, mask)
        u = to_numpy(tr["z_unobserved"]["value"])
        assert u.shape == (3,) and len(set(u.tolist())) == 3     # one latent per entry
        assert_close(tr["z"]["value"], np.where(mask, y, u))
    # an outer mask handler is combined with obs_mask (and), as with any masked site
    outer = np.array([True, True, False])
    tr = handlers.trace(handlers.seed(handlers.mask(flat, mask=outer), rng_seed=0)).get_trace(
        y, np.array([True, False, True]))
    np.testing.assert_array_equal(to_numpy(tr["z_observed"]["mask"]), [True, False, False])
    np.testing.assert_array_equal(to_numpy(tr["z_unobserved"]["mask"]), outer)
    # counts: the data's dtype and the draws' are combined by where
    def counts(y, mask):
        return ppl.sample("c", dist.Poisson(3.0).expand((3,)), obs=y, obs_mask=mask)

    tr = handlers.trace(handlers.seed(counts, rng_seed=0)).get_trace(
        np.array([2.0, 0.0, 5.0]), np.array([True, False, True]))
    c = to_numpy(tr["c"]["value"])
    assert c[0] == 2 and c[2] == 5 and c[1] >= 0 and c[1] == int(c[1])
    # without any handler, obs_mask is checked and obs returned (as NumPyro)
    assert_close(flat(y[[0, 2]], np.array([True, True])), y[[0, 2]])


def test_obs_mask_errors(backend):
    seeded = handlers.seed(model, rng_seed=0)
    with pytest.raises(TypeError, match=r"obs_mask must be boolean .*got dtype float"):
        seeded(Y, MASK.astype(float))
    with pytest.raises(TypeError, match=r"obs_mask must be boolean .*got dtype int"):
        seeded(Y, [1, 0, 1, 0, 1, 1])
    with pytest.raises(ValueError, match=r"obs_mask of shape \(3,\) does not broadcast with "
                                         r"the site's batch shape \(6,\)"):
        seeded(Y, MASK[:3])
    with pytest.raises(ValueError, match="sample_shape=.* cannot be combined with obs_mask"):
        handlers.seed(lambda: ppl.sample("s", dist.Normal(0.0, 1.0), obs=np.zeros(2),
                                         obs_mask=np.ones(2, bool), sample_shape=(2,)), 0)()
