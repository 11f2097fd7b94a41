"""Warnings after a run (divergences, R-hat / bulk ESS, tree-depth saturation), on every
backend and also without a progress bar; the thresholds against hand-made chains; the plain
progress lines when the output is not a terminal."""

import warnings

import numpy as np
import pytest

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.inference import MCMC, NUTS
from ppl.inference.run_warnings import SamplingWarning, run_problems


def funnel():
    """Neal's funnel, centred: divergences and poor mixing in the neck."""
    v = ppl.sample("v", dist.Normal(0.0, 3.0))
    with ppl.plate("K", 3):
        ppl.sample("x", dist.Normal(0.0, ops.exp(v / 2)))


def _messages(record):
    return [str(w.message) for w in record if issubclass(w.category, SamplingWarning)]


@pytest.mark.dtypes("float64")
def test_funnel_warns_divergences_and_convergence(backend):
    # a large target step size (accept 0.6) makes the neck diverge on every backend's streams
    mcmc = MCMC(NUTS(funnel, max_tree_depth=6, target_accept_prob=0.6), num_warmup=150,
                num_samples=150, num_chains=2, progress_bar=False)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mcmc.run(1)
    msgs = _messages(record)
    div = [m for m in msgs if "diverged" in m]
    n_div = int(np.sum(ops.to_numpy(mcmc.get_extra_fields()["diverging"])))
    assert n_div > 0 and len(div) == 1
    assert div[0].startswith(f"{n_div} of 300 draws after warmup (")
    assert "target_accept_prob" in div[0] and "LocScaleReparam" in div[0]
    conv = [m for m in msgs if "R-hat" in m or "bulk ESS" in m]
    assert len(conv) == 1 and "v (" in conv[0] or "x[" in conv[0]
    # the warning points at the caller's line, not inside ppl
    assert all(w.filename == __file__ for w in record if issubclass(w.category,
                                                                   SamplingWarning))


def _correlated(z):
    """A thin Gaussian (sd 1 and 0.001 along the diagonals) needs deep trees."""
    a, b = (z[0] + z[1]) / np.sqrt(2), (z[0] - z[1]) / np.sqrt(2)
    return 0.5 * (a * a + (b / 1e-3) ** 2)


@pytest.mark.dtypes("float64")
def test_tree_depth_saturation(backend):
    mcmc = MCMC(NUTS(potential_fn=_correlated, max_tree_depth=3, adapt_mass_matrix=False),
                num_warmup=50, num_samples=50, num_chains=1, progress_bar=False)
    with pytest.warns(SamplingWarning, match=r"draws after warmup .* hit max_tree_depth=3"):
        mcmc.run(0, init_params=ops.zeros(2))


@pytest.mark.dtypes("float64")
def test_quiet_on_a_good_run(backend):
    # 4 x 1000 draws: split R-hat of a good run stays well below 1.01 (2 x 400 reached 1.012)
    mcmc = MCMC(NUTS(potential_fn=lambda z: 0.5 * ops.sum(z * z)), num_warmup=200,
                num_samples=1000, num_chains=4, progress_bar=False)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mcmc.run(0, init_params=ops.zeros((4, 2)))
    assert _messages(record) == []


def test_thresholds_on_constructed_chains():
    rng = np.random.default_rng(0)
    good = rng.normal(size=(4, 1000, 2))
    assert run_problems({"a": good}, {"diverging": np.zeros((4, 1000), bool)}) == []
    shifted = good + np.array([0.0, 0.0, 0.0, 2.0])[:, None, None] * np.array([0.0, 1.0])
    (msg,) = run_problems({"a": shifted}, {})
    assert msg.startswith("R-hat above 1.01 (the chains disagree) for a[1] (")
    # AR(1) with rho = 0.99: bulk ESS far below 100 per chain, R-hat fine or not
    x = np.zeros((4, 1000))
    e = rng.normal(size=(4, 1000))
    for t in range(1, 1000):
        x[:, t] = 0.99 * x[:, t - 1] + np.sqrt(1 - 0.99**2) * e[:, t]
    (msg,) = run_problems({"b": x, "c": np.ones((4, 1000))}, {})
    assert "bulk ESS below 100 per chain (400 over 4 chains) for b (ESS" in msg and "c (" not in msg
    div = np.zeros((4, 1000), bool)
    div[0, :8] = True
    (msg,) = run_problems({"a": good}, {"diverging": div}, target_accept_prob=0.8)
    assert msg.startswith("8 of 4000 draws after warmup (0.2%) diverged")
    assert "target_accept_prob (now 0.8" in msg


@pytest.mark.parametrize("batch", [2 ** 24, 4 * 1000 * 3])
def test_sites_checked_together_keep_their_labels(monkeypatch, batch):
    """The sites' elements go through R-hat and ESS together (in batches of draws): each value
    lands on its own element's label, whatever the batch (the small one checks site by site
    and splits the 4-element site), and constant elements are left out."""
    import ppl.inference.run_warnings as rw
    monkeypatch.setattr(rw, "_BATCH_VALUES", batch)
    rng = np.random.default_rng(1)
    a = rng.normal(size=(4, 1000, 2))
    b = rng.normal(size=(4, 1000, 2, 2))
    b[..., 1, 0] = 7.0                                        # constant: not checked
    b[3, :, 0, 1] += 3.0                                      # one chain off: R-hat
    c = np.zeros((4, 1000))
    e = rng.normal(size=(4, 1000))
    for t in range(1, 1000):                                  # AR(1), rho 0.99: low ESS
        c[:, t] = 0.99 * c[:, t - 1] + np.sqrt(1 - 0.99 ** 2) * e[:, t]
    (msg,) = run_problems({"a": a, "b": b, "c": c}, {})
    rhat_part, ess_part = msg.split("; bulk ESS")
    assert rhat_part.startswith("R-hat above 1.01 (the chains disagree) for b[0,1] (")
    assert "a[" not in rhat_part and "b[1,0]" not in msg and "b[0,0]" not in msg
    assert ess_part.startswith(" below 100 per chain (400 over 4 chains) for ")
    assert "c (ESS" in ess_part and "a[" not in ess_part


@pytest.mark.backends("numpy")
@pytest.mark.dtypes("float64")
def test_progress_lines_off_a_terminal(backend, capsys):
    mcmc = MCMC(NUTS(potential_fn=lambda z: 0.5 * ops.sum(z * z)), num_warmup=100,
                num_samples=100, num_chains=2, chunk_size=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mcmc.run(0, init_params=ops.zeros((2, 2)))
    lines = capsys.readouterr().err.strip().splitlines()
    # 200 chunks of one iteration, but a line per 5% of the run (captured stderr is no tty)
    assert 2 <= len(lines) <= 20 and "\r" not in "".join(lines)
    assert lines[0].startswith("warmup [vectorized, 2 chains]")
    assert lines[-1].startswith("sample [vectorized, 2 chains] 400/400 (100%)")
    assert "step_size=" in lines[-1] and "divergences=" in lines[-1]


def test_rhat_shown_with_the_digits_that_put_it_above_the_threshold():
    """1.0104 was printed as 1.010 in a warning about values above 1.01."""
    from ppl.inference.run_warnings import _above
    assert _above(1.0104, 1.01) == "1.0104"
    assert _above(1.0151, 1.01) == "1.015"
    assert _above(1.01000004, 1.01) == "1.01000004"


def test_periodic_sites_are_judged_by_their_cos_and_sin():
    """Chains of an unwrapped angle (``CircularReparam``) on different copies of the circle are
    one posterior: no R-hat warning on cos/sin, where the raw values disagree by 2 pi."""
    rng = np.random.default_rng(1)
    angle = 0.3 * rng.normal(size=(4, 1000)) + 2 * np.pi * np.array([0, 1, -3, 5])[:, None]
    (msg,) = run_problems({"t": angle}, {})
    assert msg.startswith("R-hat above 1.01 (the chains disagree) for t (")
    assert run_problems({"t": angle}, {}, periodic={"t": 2 * np.pi}) == []
    # chains that do disagree on the circle are still flagged, by their cos and sin
    apart = angle + np.array([0.0, 0.0, 0.0, 1.5])[:, None]
    (msg,) = run_problems({"t": apart, "u": angle}, {}, periodic={"t": 2 * np.pi})
    assert "sin(t) (" in msg and "cos(t) (" in msg and "u (" in msg


def test_advice_knows_the_sites_are_non_centred_already():
    """A model that already non-centres a site with ``LocScaleReparam`` (its
    ``{name}_decentered`` draws) is not told to non-centre; a fixed centring is told to try
    another, a learned one (``{name}_centered`` draws) is named as learned."""
    rng = np.random.default_rng(0)
    stuck = rng.normal(size=(2, 200)) + [[0.0], [3.0]]          # chains that disagree
    diverging = {"diverging": np.ones((2, 200), bool)}
    plain = run_problems({"theta": stuck}, diverging)
    assert len(plain) == 2 and all("e.g. non-centred: ppl.inference.reparam.LocScaleReparam"
                                   in m for m in plain)
    fixed = run_problems({"theta_decentered": stuck, "tau": stuck}, diverging)
    assert len(fixed) == 2
    for message in fixed:
        assert "e.g. non-centred" not in message
        assert "already reparameterises theta with LocScaleReparam; try another centring " \
               "for theta (centered=None learns it)" in message
    learned = run_problems({"theta_decentered": stuck, "theta_centered": stuck}, diverging)
    assert all("theta with LocScaleReparam, its centring learned" in m for m in learned)
