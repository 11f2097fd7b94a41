"""``ppl.inference.log_likelihood`` with masks, scales and subsampled plates.

One table of models, each with posterior draws and the pointwise log-likelihood written by hand
with ``scipy.stats``, crossed with every backend and float dtype. The rules (those of NumPyro's
``numpyro.infer.log_likelihood``, checked against NumPyro 0.22): an entry masked out by
``obs_mask``, ``handlers.mask`` or ``Distribution.mask`` is ``0`` (finite, also where the data
hold ``NaN``); ``handlers.scale`` and a subsampled plate's ``size / subsample_size`` are not
applied; a plate that would draw a random subsample is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
import scipy.stats as st
from conftest import assert_close, to_numpy

import ppl
import ppl.distributions as dist
from ppl import handlers, ops
from ppl.inference.log_likelihood import log_likelihood

Y = np.array([0.5, np.nan, 1.5, -0.3, np.nan])     # NaN where missing
OBSERVED = ~np.isnan(Y)
Y0 = np.where(OBSERVED, Y, 0.0)                     # the same, missing entries filled with 0
COUNTS = np.array([0.0, 3.0, 7.0, 1.0, 2.0])
MU = np.array([-0.5, 0.0, 1.2])                     # three posterior draws
SIGMA = np.array([0.5, 1.0, 2.0])
DRAWS = {"mu": MU, "sigma": SIGMA}


def _latent():
    return ppl.sample("mu", dist.Normal(0.0, 1.0)), ppl.sample("sigma", dist.HalfNormal(1.0))


def _normal_ll(y=Y0, mask=OBSERVED):
    """``log N(y_i | mu_s, sigma_s)`` per draw ``s``, 0 where ``mask`` is false."""
    ll = st.norm.logpdf(y[None, :], MU[:, None], SIGMA[:, None])
    return np.where(mask, ll, 0.0)


def obs_mask_model(y):
    mu, sigma = _latent()
    with ppl.plate("N", len(y)):
        ppl.sample("y", dist.Normal(mu, sigma), obs=y, obs_mask=~np.isnan(y))


def handler_mask_model(y):
    mu, sigma = _latent()
    with ppl.plate("N", len(y)), handlers.mask(mask=~np.isnan(y)):
        ppl.sample("y", dist.Normal(mu, sigma), obs=y)


def handler_mask_false_model(y):
    mu, sigma = _latent()
    with ppl.plate("N", len(y)), handlers.mask(mask=False):
        ppl.sample("y", dist.Normal(mu, sigma), obs=y)


def distribution_mask_model(y):
    mu, sigma = _latent()
    with ppl.plate("N", len(y)):
        ppl.sample("y", dist.Normal(mu, sigma).mask(ops.asarray(~np.isnan(y))), obs=y)


def nested_masks_model(y):
    """obs_mask inside handlers.mask: both masks apply."""
    mu, sigma = _latent()
    with ppl.plate("N", len(y)), handlers.mask(mask=np.arange(len(y)) != 0):
        ppl.sample("y", dist.Normal(mu, sigma), obs=y, obs_mask=~np.isnan(y))


def poisson_mask_model(counts):
    mu, _ = _latent()
    with ppl.plate("N", len(counts)), handlers.mask(mask=OBSERVED):
        ppl.sample("c", dist.Poisson(ops.exp(mu)), obs=counts)


def scale_model(y):
    mu, sigma = _latent()
    with ppl.plate("N", len(y)), handlers.scale(scale=3.0):
        ppl.sample("y", dist.Normal(mu, sigma), obs=y)


SUBSAMPLE = np.array([3, 0])


def subsample_model(y):
    """Plate of 5 with the subsample given: log_density scales it by 5/2, log_likelihood not."""
    mu, sigma = _latent()
    with ppl.plate("N", len(y), subsample=SUBSAMPLE) as idx:
        ppl.sample("y", dist.Normal(mu, sigma), obs=ops.take(ops.asarray(y), idx, axis=0))


def random_subsample_model(y):
    mu, sigma = _latent()
    with ppl.plate("N", len(y), subsample_size=2) as idx:
        ppl.sample("y", dist.Normal(mu, sigma), obs=ops.take(ops.asarray(y), idx, axis=0))


@dataclass(frozen=True)
class Case:
    id: str
    model: Callable
    data: np.ndarray
    expected: Callable                       # () -> {site: (draws, N) reference}
    extra_draws: dict = field(default_factory=dict)


# the latent part of obs_mask is drawn far from the data: its density must not leak in
_UNOBSERVED = {"y_unobserved": np.full((3, 5), 40.0)}

CASES = [
    Case("obs_mask", obs_mask_model, Y, lambda: {"y_observed": _normal_ll()}, _UNOBSERVED),
    Case("handlers.mask", handler_mask_model, Y, lambda: {"y": _normal_ll()}),
    Case("handlers.mask-False", handler_mask_false_model, Y,
         lambda: {"y": np.zeros((3, 5))}),
    Case("Distribution.mask", distribution_mask_model, Y, lambda: {"y": _normal_ll()}),
    Case("nested-masks", nested_masks_model, Y,
         lambda: {"y_observed": _normal_ll(mask=OBSERVED & (np.arange(5) != 0))}, _UNOBSERVED),
    Case("poisson-handlers.mask", poisson_mask_model, COUNTS,
         lambda: {"c": np.where(OBSERVED, st.poisson.logpmf(COUNTS, np.exp(MU)[:, None]), 0.0)}),
    Case("handlers.scale", scale_model, Y0, lambda: {"y": _normal_ll(mask=True)}),
    Case("plate-subsample", subsample_model, Y0,
         lambda: {"y": _normal_ll(Y0[SUBSAMPLE], mask=True)}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_pointwise_log_likelihood(backend, case):
    draws = {k: ops.asarray(v) for k, v in {**DRAWS, **case.extra_draws}.items()}
    out = log_likelihood(case.model, draws, case.data)
    expected = case.expected()
    assert set(out) == set(expected)
    for name, ref in expected.items():
        got = to_numpy(out[name])
        assert np.all(np.isfinite(got)), f"{case.id}: {name} has non-finite entries {got}"
        assert_close(out[name], ref, tol=10, err_msg=f"{case.id}: {name}")


@pytest.mark.dtypes("float64")
def test_masked_entries_with_chain_dims(backend):
    """batch_ndims=2 (chains, draws): the mask still lands on the data dimension."""
    draws = {"mu": ops.asarray(np.stack([MU, MU[::-1]])),
             "sigma": ops.asarray(np.stack([SIGMA, SIGMA[::-1]])),
             "y_unobserved": ops.asarray(np.full((2, 3, 5), np.nan))}
    out = log_likelihood(obs_mask_model, draws, Y, batch_ndims=2)
    expected = np.stack([_normal_ll(), _normal_ll()[::-1]])
    assert_close(out["y_observed"], expected)


def test_random_subsample_is_refused(backend):
    with pytest.raises(ValueError, match=r"plate 'N' draws a random subsample of 2 of its 5 "
                                         r"indices.*subsample_size=None.*subsample=idx"):
        log_likelihood(random_subsample_model, {k: ops.asarray(v) for k, v in DRAWS.items()},
                       Y0)


def test_importable_from_ppl_inference():
    """``from ppl.inference import log_likelihood`` (NumPyro's ``numpyro.infer``) gives the
    function: it gave the module, and calling it a "'module' object is not callable"."""
    from ppl.inference import log_likelihood as from_package
    assert from_package is log_likelihood
