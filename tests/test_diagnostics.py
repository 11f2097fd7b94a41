"""ppl.diagnostics against ArviZ, analytic cases and brute-force references."""

import warnings

import numpy as np
import pytest

import ppl
from ppl import diagnostics

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import arviz as az

BACKENDS = ppl.available_backends()


def _ar1(rho, shape, seed):
    """AR(1) chains x_t = rho x_{t-1} + sqrt(1 - rho^2) e_t, stationary N(0, 1) start."""
    rng = np.random.default_rng(seed)
    chains, draws = shape[:2]
    eps = rng.normal(size=shape)
    x = np.empty(shape)
    x[:, 0] = eps[:, 0]
    c = np.sqrt(1 - rho**2)
    for t in range(1, draws):
        x[:, t] = rho * x[:, t - 1] + c * eps[:, t]
    return x


CASES = {
    "iid": np.random.default_rng(0).normal(size=(4, 1000)),
    "iid_vector": np.random.default_rng(1).gamma(2.0, size=(3, 500, 2, 3)),
    "ar1_0.6": _ar1(0.6, (4, 2000), 2),
    "shifted": np.random.default_rng(3).normal(size=(4, 300)) + np.arange(4)[:, None] * 1.0,
    "one_chain_heavy": np.random.default_rng(4).standard_t(3, size=(1, 800)),
}


def _az(fn, x, **kw):
    """Apply an ArviZ diagnostic to every trailing element of a (chains, draws, ...) array."""
    out = np.empty(x.shape[2:])
    for idx in np.ndindex(*x.shape[2:]):
        # arviz 0.23.4 returns some diagnostics as (1,) arrays: take the one value
        out[idx] = np.asarray(fn(x[(slice(None), slice(None)) + idx], **kw)).reshape(())
    return out


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(
    "ours, theirs",
    [
        (lambda x: diagnostics.effective_sample_size(x), lambda x: _az(az.ess, x)),
        (lambda x: diagnostics.effective_sample_size(x, method="tail"),
         lambda x: _az(az.ess, x, method="tail")),
        (lambda x: diagnostics.mcse(x), lambda x: _az(az.mcse, x)),
        # (the MCSE of the sd is checked analytically: arviz 0.23 and arviz-stats use
        # different formulas for it)
    ],
    ids=["ess_bulk", "ess_tail", "mcse_mean"],
)
def test_matches_arviz(case, ours, theirs):
    x = CASES[case]
    np.testing.assert_allclose(ours(x), theirs(x), rtol=1e-10)


@pytest.mark.parametrize("case", sorted(c for c in CASES if c != "one_chain_heavy"))
def test_rhat_matches_arviz(case):
    x = CASES[case]
    np.testing.assert_allclose(diagnostics.split_gelman_rubin(x), _az(az.rhat, x), rtol=1e-10)


def test_rhat_single_chain_is_finite_and_detects_drift():
    x = CASES["one_chain_heavy"]
    assert np.isfinite(diagnostics.split_gelman_rubin(x))
    drift = np.linspace(0, 10, 800)[None] + np.random.default_rng(0).normal(size=(1, 800))
    assert diagnostics.split_gelman_rubin(drift) > 1.5


def test_known_cases():
    x = CASES["iid"]
    n = x.size
    assert 0.85 * n < diagnostics.effective_sample_size(x) < 1.15 * n
    assert abs(diagnostics.split_gelman_rubin(x) - 1) < 0.01
    assert diagnostics.split_gelman_rubin(CASES["shifted"]) > 1.2
    # AR(1): ESS = N (1 - rho) / (1 + rho)
    rho = 0.6
    x = CASES["ar1_0.6"]
    expected = x.size * (1 - rho) / (1 + rho)
    assert 0.8 * expected < diagnostics.effective_sample_size(x) < 1.2 * expected
    # MCSE of the mean of iid N(0,1): 1/sqrt(N)
    np.testing.assert_allclose(diagnostics.mcse(CASES["iid"]), 1 / np.sqrt(4000), rtol=0.1)
    # MCSE of the sd of iid N(0,1): 1/sqrt(2N)
    np.testing.assert_allclose(diagnostics.mcse(CASES["iid"], method="sd"), 1 / np.sqrt(8000),
                               rtol=0.1)


def test_vector_shapes():
    x = CASES["iid_vector"]
    assert diagnostics.effective_sample_size(x).shape == (2, 3)
    assert diagnostics.split_gelman_rubin(x).shape == (2, 3)
    assert diagnostics.mcse(x).shape == (2, 3)


def _hpdi_brute(x, prob):
    s = np.sort(x)
    n = len(s)
    k = int(np.floor(prob * n))
    best = min(range(n - k), key=lambda i: (s[i + k] - s[i], i))
    return np.array([s[best], s[best + k]])


@pytest.mark.parametrize("prob", [0.5, 0.9, 0.95])
@pytest.mark.parametrize("dist", ["normal", "gamma", "bimodal"])
def test_hpdi_brute_force(prob, dist):
    rng = np.random.default_rng(7)
    draws = {
        "normal": lambda: rng.normal(size=(301, 3)),
        "gamma": lambda: rng.gamma(1.5, size=(301, 3)),
        "bimodal": lambda: np.concatenate([rng.normal(-3, 1, (150, 3)),
                                           rng.normal(3, 1, (151, 3))]),
    }[dist]()
    out = diagnostics.hpdi(draws, prob=prob, axis=0)
    assert out.shape == (2, 3)
    for j in range(3):
        np.testing.assert_array_equal(out[:, j], _hpdi_brute(draws[:, j], prob))
    out_last = diagnostics.hpdi(draws.T, prob=prob, axis=-1)
    np.testing.assert_array_equal(out_last, out.T)


def test_hpdi_gamma_is_shifted_left_of_central_interval():
    x = np.random.default_rng(8).exponential(size=20000)
    lo, hi = diagnostics.hpdi(x, 0.9)
    assert lo < 0.01 and abs(hi - np.log(10)) < 0.1   # HPDI of Exp(1) is [0, log 10]


def test_summary_keys_and_values():
    x = CASES["iid_vector"]
    s = diagnostics.summary({"a": x, "b": x[..., 0, 0]}, prob=0.8)
    assert set(s) == {"a", "b"}
    assert set(s["a"]) == {"mean", "std", "median", "10.0%", "90.0%", "n_eff", "ess_tail",
                           "r_hat", "mcse"}
    flat = x.reshape(-1, 2, 3)
    np.testing.assert_allclose(s["a"]["mean"], flat.mean(0))
    np.testing.assert_allclose(s["a"]["std"], flat.std(0, ddof=1))
    np.testing.assert_allclose(s["a"]["median"], np.median(flat, 0))
    np.testing.assert_allclose(s["a"]["n_eff"], _az(az.ess, x), rtol=1e-10)
    np.testing.assert_allclose(s["a"]["r_hat"], _az(az.rhat, x), rtol=1e-10)
    np.testing.assert_allclose(s["b"]["10.0%"], _hpdi_brute(flat[:, 0, 0], 0.8)[0])
    # flat draws: one chain
    s1 = diagnostics.summary({"b": x[0, :, 0, 0]}, group_by_chain=False)
    np.testing.assert_allclose(s1["b"]["mean"], x[0, :, 0, 0].mean())


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_constant_elements_have_no_rhat_and_no_warning(capsys):
    """A fixed entry (a correlation Cholesky factor's ``L[0, 0]``): R-hat is NaN, the other
    statistics are its value, and no NumPy 0/0 warning per element reaches the user."""
    x = np.random.default_rng(0).normal(size=(2, 300, 3))
    x[..., 0] = 1.0
    r = diagnostics.split_gelman_rubin(x)
    assert np.isnan(r[0]) and 0.99 < r[2] < 1.02
    s = diagnostics.summary({"L": x})["L"]
    assert np.isnan(s["r_hat"][0]) and s["mean"][0] == 1.0 and s["std"][0] == 0.0
    diagnostics.print_summary({"L": x})
    assert "nan" in capsys.readouterr().out


def test_print_summary(capsys):
    x = CASES["iid_vector"]
    diagnostics.print_summary({"theta": x[..., 0], "mu": x[..., 0, 0]},
                              divergences=np.array([[True, False], [True, True]]))
    out = capsys.readouterr().out
    for word in ["mean", "std", "median", "5.0%", "95.0%", "n_eff", "r_hat", "theta[0]",
                 "theta[1]", "mu", "Number of divergences: 3"]:
        assert word in out


@pytest.mark.parametrize(
    "call",
    [
        lambda: diagnostics.effective_sample_size(np.zeros(10)),
        lambda: diagnostics.effective_sample_size(np.zeros((2, 10)), method="nope"),
        lambda: diagnostics.mcse(np.zeros((2, 10)), method="nope"),
        lambda: diagnostics.hpdi(np.zeros(10), prob=1.5),
        lambda: diagnostics.summary({"a": np.zeros(10)}),
    ],
)
def test_bad_input(call):
    with pytest.raises(ValueError):
        call()


@pytest.mark.parametrize("backend", BACKENDS)
def test_backend_arrays(backend):
    x = CASES["iid_vector"]
    with ppl.use_backend(backend, dtype="float64"):
        xb = ppl.ops.asarray(x)
        assert not isinstance(xb, np.ndarray) or backend == "numpy"
        ess = diagnostics.effective_sample_size(xb)
        rhat = diagnostics.split_gelman_rubin(xb)
        interval = diagnostics.hpdi(xb[0], 0.9)
        s = diagnostics.summary({"a": xb})
    np.testing.assert_allclose(ess, diagnostics.effective_sample_size(x))
    np.testing.assert_allclose(rhat, diagnostics.split_gelman_rubin(x))
    np.testing.assert_allclose(interval, diagnostics.hpdi(x[0], 0.9))
    np.testing.assert_allclose(s["a"]["mean"], x.reshape(-1, 2, 3).mean(0))
    # arrays of a loaded backend that is not the active one convert too
    np.testing.assert_allclose(diagnostics.effective_sample_size(xb),
                               diagnostics.effective_sample_size(x))


# --------------------------------------------------------------------------- to_inference_data

def _fake_run(chains=3, draws=50, seed=0):
    rng = np.random.default_rng(seed)
    samples = {"mu": rng.normal(size=(chains, draws)),
               "theta": rng.normal(size=(chains, draws, 4))}
    extra = {"diverging": rng.random((chains, draws)) < 0.1,
             "num_steps": rng.choice([1, 3, 7, 15], size=(chains, draws)),
             "accept_prob": rng.random((chains, draws)),
             "energy": rng.normal(size=(chains, draws)),
             "potential_energy": rng.normal(size=(chains, draws)),
             "step_size": np.array([0.1, 0.2, 0.3])[:chains]}
    return samples, extra


def test_to_inference_data_groups_and_names():
    arviz_mod = pytest.importorskip("ppl.inference.arviz")
    samples, extra = _fake_run()
    idata = arviz_mod.to_inference_data(samples, extra, observed={"y": np.arange(5.0)},
                                        coords={"school": list("abcd")},
                                        dims={"theta": ["school"]})
    assert set(idata.groups()) >= {"posterior", "sample_stats", "observed_data"}
    assert idata.posterior["theta"].dims == ("chain", "draw", "school")
    np.testing.assert_array_equal(idata.posterior["theta"].values, samples["theta"])
    stats = idata.sample_stats
    np.testing.assert_array_equal(stats["diverging"].values, extra["diverging"])
    assert stats["diverging"].dtype == bool
    np.testing.assert_array_equal(stats["acceptance_rate"].values, extra["accept_prob"])
    np.testing.assert_array_equal(stats["n_steps"].values, extra["num_steps"])
    np.testing.assert_array_equal(stats["tree_depth"].values,
                                  np.log2(extra["num_steps"] + 1).astype(int))
    np.testing.assert_array_equal(stats["lp"].values, -extra["potential_energy"])
    np.testing.assert_array_equal(stats["energy"].values, extra["energy"])
    np.testing.assert_array_equal(stats["step_size"].values[:, 7], extra["step_size"])
    np.testing.assert_array_equal(idata.observed_data["y"].values, np.arange(5.0))
    # ArviZ's own diagnostics read it
    np.testing.assert_allclose(az.ess(idata)["mu"].values,
                               diagnostics.effective_sample_size(samples["mu"]), rtol=1e-8)


@pytest.mark.parametrize("backend", BACKENDS)
def test_to_inference_data_backend_arrays(backend):
    arviz_mod = pytest.importorskip("ppl.inference.arviz")
    samples, extra = _fake_run(chains=2)
    with ppl.use_backend(backend, dtype="float64"):
        idata = arviz_mod.to_inference_data(
            {k: ppl.ops.asarray(v) for k, v in samples.items()},
            {"diverging": ppl.ops.asarray(extra["diverging"])})
    np.testing.assert_allclose(idata.posterior["mu"].values, samples["mu"])
    assert idata.sample_stats["diverging"].values.sum() == extra["diverging"].sum()


def test_to_inference_data_flat_and_bad_input():
    arviz_mod = pytest.importorskip("ppl.inference.arviz")
    idata = arviz_mod.to_inference_data({"mu": np.zeros(20)}, group_by_chain=False)
    assert dict(idata.posterior.sizes) == {"chain": 1, "draw": 20}
    with pytest.raises(ValueError, match="chains, draws"):
        arviz_mod.to_inference_data({"mu": np.zeros(20)})
    with pytest.raises(ValueError, match="disagree"):
        arviz_mod.to_inference_data({"a": np.zeros((2, 20)), "b": np.zeros((2, 10))})
    with pytest.raises(TypeError):
        arviz_mod.to_inference_data([1, 2])


def test_to_inference_data_without_arviz(monkeypatch):
    import sys
    arviz_mod = pytest.importorskip("ppl.inference.arviz")
    monkeypatch.setitem(sys.modules, "arviz", None)
    with pytest.raises(ImportError, match=r'pip install "ppl\[arviz\]"'):
        arviz_mod.to_inference_data({"mu": np.zeros((2, 10))})


def _ar1(rng, m, n, k, rho):
    x = np.zeros((m, n, k))
    e = rng.normal(size=(m, n, k))
    for t in range(1, n):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * e[:, t]
    return x


def test_rank_rhat_and_bulk_ess_match_arviz_elementwise():
    """The vectorised pass the run warnings use gives what ArviZ's element-by-element R-hat
    and bulk ESS give (the reference): chains from 1 to 4, odd and even lengths down to 4
    draws (Geyer's truncation at its edges), AR(1) with positive and negative correlation,
    ties, shifted chains, matrix-valued sites."""
    rng = np.random.default_rng(0)
    cases = [rng.normal(size=(4, 1000, 5)), _ar1(rng, 4, 1000, 3, 0.99),
             _ar1(rng, 1, 501, 3, 0.5), _ar1(rng, 2, 400, 2, -0.7),
             rng.integers(0, 3, size=(4, 200, 3)).astype(float),
             rng.normal(size=(4, 300, 2)) + np.arange(4)[:, None, None],
             rng.normal(size=(2, 4, 2)), rng.normal(size=(2, 5, 3)), rng.normal(size=(4, 100)),
             _ar1(rng, 2, 60, 6, 0.8).reshape(2, 60, 2, 3)]
    for seed in range(60):
        r = np.random.default_rng(seed)
        cases.append(_ar1(r, int(r.integers(1, 5)), int(r.integers(4, 60)), 6,
                          r.uniform(-0.9, 0.95)))
    for x in cases:
        rhat, ess = diagnostics.rank_rhat_and_bulk_ess(x)
        np.testing.assert_allclose(rhat, diagnostics.split_gelman_rubin(x), rtol=1e-9)
        np.testing.assert_allclose(ess, diagnostics.effective_sample_size(x), rtol=1e-9)
        assert rhat.shape == ess.shape == x.shape[2:]


def test_average_ranks_match_scipy_with_ties():
    """The ranks behind the rank-normalised diagnostics, against SciPy's ``rankdata``: ties
    share their mean rank, columns are ranked apart."""
    stats = pytest.importorskip("scipy.stats")
    from ppl._rank_stats import average_ranks
    rng = np.random.default_rng(7)
    cases = [rng.normal(size=(50, 3)), rng.integers(0, 4, size=(61, 5)).astype(float),
             np.zeros((9, 2)), np.array([[1.0], [1.0], [-2.0], [3.0], [1.0], [-2.0]]),
             rng.normal(size=(1, 4))]
    for a in cases:
        np.testing.assert_array_equal(average_ranks(a),
                                      stats.rankdata(a, method="average", axis=0))


def test_z_scales_of_draws_and_folded_draws_match_scipy():
    """The rank-normalised z-scores of the draws and of the folded draws ``|x - median|``,
    which share one sort, against SciPy's average ranks and normal quantiles at Blom's
    ``(r - 3/8) / (S + 1/4)`` per element: continuous draws, odd and even draw counts, ties
    (integer draws; a constant element; values mirrored about the median)."""
    stats = pytest.importorskip("scipy.stats")
    from ppl._rank_stats import z_scales
    rng = np.random.default_rng(11)
    mirrored = np.concatenate([[-3.0, -1.0, 0.0, 1.0, 3.0, 2.0], rng.normal(size=6)])
    cases = [rng.normal(size=(4, 250, 3)), rng.normal(size=(3, 7, 2)),
             rng.integers(0, 5, size=(2, 40, 4)).astype(float), np.ones((2, 6, 1)),
             mirrored.reshape(2, 6, 1), rng.standard_cauchy(size=(1, 9, 2))]

    def reference(x):
        flat = x.reshape(-1, x.shape[2])
        ranks = stats.rankdata(flat, method="average", axis=0)
        return stats.norm.ppf((ranks - 0.375) / (flat.shape[0] + 0.25)).reshape(x.shape)

    for x in cases:
        z, z_folded = z_scales(x)
        np.testing.assert_allclose(z, reference(x), rtol=1e-12, atol=1e-12)
        folded = np.abs(x - np.median(x, axis=(0, 1)))
        np.testing.assert_allclose(z_folded, reference(folded), rtol=1e-12, atol=1e-12)
