"""The posteriordb example helpers: Stan-name mapping and the reference check."""

import numpy as np
import pytest
from _posteriordb_cases import available, pdb

pytestmark = pytest.mark.skipif(not available(), reason="posteriordb data not found")


@pytest.mark.parametrize("name, expected", [
    ("mu", ("mu", ())), ("beta[1]", ("beta", (0,))), ("theta1[2]", ("theta1", (1,))),
    ("L[2,3]", ("L", (1, 2))), ("Intercept", ("Intercept", ())),
])
def test_stan_to_site(name, expected):
    assert pdb.stan_to_site(name) == expected


def test_stan_to_site_rejects_garbage():
    with pytest.raises(ValueError):
        pdb.stan_to_site("beta[")


def _fake_draws(posterior, shift=0.0, scale=1.0, seed=0):
    """Independent normal draws with the reference mean (+ shift sd) and sd (x scale)."""
    rng = np.random.default_rng(seed)
    ref = pdb.load_reference(posterior)
    sites = {}
    for name, r in ref.items():
        site, idx = pdb.stan_to_site(name)
        sites.setdefault(site, {})[idx] = r
    out = {}
    for site, entries in sites.items():
        n = 1 + max((i[0] for i in entries if i), default=-1)
        shape = (n,) if n else ()
        x = np.empty((4, 1000) + shape)
        for idx, r in entries.items():
            x[(slice(None), slice(None)) + idx] = (r["mean"] + shift * r["sd"]
                                                   + scale * r["sd"] * rng.normal(size=(4, 1000)))
        out[site] = x
    return out


def test_reference_check_accepts_reference_like_draws():
    rows = pdb.compare_to_reference("garch-garch11", _fake_draws("garch-garch11"))
    assert [r["name"] for r in rows] == ["mu", "alpha0", "alpha1", "beta1"]
    assert pdb.passes(rows), pdb.format_rows(rows)


@pytest.mark.parametrize("kwargs, divergences", [
    ({"shift": 0.3}, None), ({"scale": 1.5}, None), ({}, np.ones(3, bool)),
])
def test_reference_check_rejects(kwargs, divergences):
    rows = pdb.compare_to_reference("sblrc-blr", _fake_draws("sblrc-blr", **kwargs),
                                    divergences=divergences)
    assert not pdb.passes(rows)


@pytest.mark.parametrize("allow, n_div, ok", [
    (False, 0, True), (False, 1, False), (True, 50, True), (2, 2, True), (2, 3, False),
])
def test_reference_check_divergence_allowance(allow, n_div, ok):
    div = np.zeros(4000, bool)
    div[:n_div] = True
    rows = pdb.compare_to_reference("sblrc-blr", _fake_draws("sblrc-blr"), divergences=div,
                                    allow_divergences=allow)
    assert pdb.passes(rows) is ok


def test_reference_check_needs_every_site():
    draws = _fake_draws("sblrc-blr")
    draws.pop("sigma")
    with pytest.raises(KeyError, match="sigma"):
        pdb.compare_to_reference("sblrc-blr", draws)
