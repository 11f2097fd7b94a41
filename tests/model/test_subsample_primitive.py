"""``ppl.subsample(data, event_dim)`` on every backend: the values against NumPy indexing with
the plates' indices, the scaled log density against SciPy, and NUTS on a conjugate model whose
plate subsamples all of its data (so the posterior is the analytic one)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import scipy.stats as st
from conftest import assert_close, to_numpy

import ppl
import ppl.distributions as dist
from ppl import handlers
from ppl.diagnostics import mcse, split_gelman_rubin
from ppl.inference import MCMC, NUTS, log_density

X = np.random.default_rng(0).normal(size=(6, 5, 3))  # (rows, cols, event)
Y = np.array([0.3, -1.2, 0.8, 2.0, -0.1, 0.7, 1.1, -0.4, 0.0, 0.9])

# (event_dim, plates as (name, size, dim, subsample or None), data shape): one table
INDEXING_CASES = {
    "one plate": (0, [("N", 6, -1, [4, 0, 2])], (6,)),
    "one plate, event_dim=1": (1, [("N", 6, -1, [5, 1])], (6, 3)),
    "plate at dim=-2": (0, [("N", 6, -2, [3, 1])], (6, 5)),
    "two plates": (0, [("rows", 6, -2, [5, 0, 3]), ("cols", 5, -1, [1, 4])], (6, 5)),
    "two plates, event_dim=1": (1, [("rows", 6, -2, [2, 3]), ("cols", 5, -1, [0, 2, 4])],
                                (6, 5, 3)),
    "two plates, one full": (1, [("rows", 6, -2, None), ("cols", 5, -1, [3])], (6, 5, 3)),
}


def _index(x, event_dim, plates, indices):
    """NumPy reference: ``x`` indexed along each plate's dim by its indices."""
    for (_, _, dim, _), idx in zip(plates, indices):
        x = np.take(x, idx, axis=dim - event_dim)
    return x


def _run(data, event_dim, plates, seed=None):
    """``subsample(data)`` inside the plates, and the plates' indices (drawn under ``seed``
    where no ``subsample=`` is given: then the plate subsamples 2 of its entries)."""
    with contextlib.ExitStack() as stack:
        if seed is not None:
            stack.enter_context(handlers.seed(rng_seed=seed))
        tr = stack.enter_context(handlers.trace())
        for name, size, dim, sub in plates:
            kwargs = {"subsample": sub} if sub is not None else \
                {"subsample_size": size if seed is None else 2}
            stack.enter_context(ppl.plate(name, size, dim=dim, **kwargs))
        out = ppl.subsample(data, event_dim=event_dim)
    return out, [to_numpy(tr[name]["value"]) for name, *_ in plates]


@pytest.mark.parametrize("case", list(INDEXING_CASES))
def test_subsample_matches_numpy_indexing(backend, case):
    event_dim, plates, shape = INDEXING_CASES[case]
    x = X.reshape(-1)[: int(np.prod(shape))].reshape(shape)
    out, indices = _run(x, event_dim, plates)
    for (_, size, _, sub), idx in zip(plates, indices):  # the plates yield the indices given
        np.testing.assert_array_equal(idx, np.arange(size) if sub is None else sub)
    assert_close(out, _index(x, event_dim, plates, indices))
    # the same with backend data
    out, _ = _run(ppl.ops.asarray(x), event_dim, plates)
    assert_close(out, _index(x, event_dim, plates, indices))


@pytest.mark.parametrize("case", ["one plate", "two plates, event_dim=1"])
def test_subsample_with_drawn_indices(backend, case):
    event_dim, plates, shape = INDEXING_CASES[case]
    plates = [(name, size, dim, None) for name, size, dim, _ in plates]
    x = X.reshape(-1)[: int(np.prod(shape))].reshape(shape)
    out, indices = _run(x, event_dim, plates, seed=3)
    for (_, size, _, _), idx in zip(plates, indices):
        assert idx.shape == (2,) and len(set(idx.tolist())) == 2
        assert 0 <= idx.min() and idx.max() < size
    assert_close(out, _index(x, event_dim, plates, indices))
    again, _ = _run(x, event_dim, plates, seed=3)  # the seed fixes the subsample
    assert_close(again, to_numpy(out))


def test_subsample_returns_data_unchanged(backend):
    x = X[:, 0, 0]
    assert ppl.subsample(x, event_dim=0) is x  # no handler
    with handlers.seed(rng_seed=0):
        assert ppl.subsample(x, event_dim=0) is x  # no plate
        with ppl.plate("N", 6):
            assert ppl.subsample(x, event_dim=0) is x  # a plate that does not subsample
        with ppl.plate("N", 6, subsample_size=2):
            small = x[:2]
            assert ppl.subsample(small, event_dim=0) is small  # already subsampled
            one = x[:1]
            assert ppl.subsample(one, event_dim=0) is one  # size 1 broadcasts
            scalar = x[0]
            assert ppl.subsample(scalar, event_dim=0) is scalar  # no dim under the plate
            assert ppl.subsample(None, event_dim=0) is None  # model(y=None)
            # event_dim=1: the plate's dim -1 is the data's dim -2, which a vector lacks
            assert ppl.subsample(x, event_dim=1) is x


def test_subsample_errors(backend):
    x = X[:, 0, 0]
    with ppl.plate("N", 10, subsample=[1, 2, 3]):
        with pytest.raises(ValueError, match=r"subsample.*size 6 at dim -1.*plate 'N'.*"
                                             r"size=10, subsample_size=3"):
            ppl.subsample(x, event_dim=0)
    with ppl.plate("rows", 6, dim=-2, subsample=[0, 1]):
        with pytest.raises(ValueError, match=r"size 5 at dim -3.*'rows'.*event dims"):
            ppl.subsample(X[:5], event_dim=1)
    for bad in (-1, 1.0, None, True):
        with pytest.raises(ValueError, match="event_dim"):
            ppl.subsample(x, event_dim=bad)


def model(y, m=None, subsample=None):
    mu = ppl.sample("mu", dist.Normal(0.0, PRIOR_SD))
    with ppl.plate("N", len(y), subsample_size=m, subsample=subsample):
        ppl.sample("y", dist.Normal(mu, NOISE_SD), obs=ppl.subsample(y, event_dim=0))


PRIOR_SD, NOISE_SD = 2.0, 1.5


@pytest.mark.dtypes("float64")
def test_subsample_log_density_is_scaled(backend):
    idx = np.array([7, 2, 5, 0])
    lp, tr = log_density(model, (Y,), {"subsample": idx}, {"mu": 0.4})
    expected = (st.norm(0.0, PRIOR_SD).logpdf(0.4)
                + len(Y) / len(idx) * st.norm(0.4, NOISE_SD).logpdf(Y[idx]).sum())
    assert_close(lp, expected)
    assert_close(tr["y"]["value"], Y[idx])
    assert tr["y"]["scale"] == len(Y) / len(idx)
    # drawn indices: the density of the drawn minibatch
    lp, tr = log_density(handlers.seed(model, rng_seed=1), (Y, 3), {}, {"mu": -0.2})
    idx = to_numpy(tr["N"]["value"])
    expected = (st.norm(0.0, PRIOR_SD).logpdf(-0.2)
                + len(Y) / 3 * st.norm(-0.2, NOISE_SD).logpdf(Y[idx]).sum())
    assert_close(lp, expected)


@pytest.mark.dtypes("float64")
@pytest.mark.filterwarnings("ignore::ppl.inference.run_warnings.SamplingWarning")
@pytest.mark.parametrize("subsample", [None, [7, 2, 5, 0]], ids=["full", "fixed-minibatch"])
def test_subsample_under_nuts_gives_the_conjugate_posterior(backend, subsample):
    """mu ~ N(0, 2^2), y_i ~ N(mu, 1.5^2). With the plate's subsample_size the full size the
    posterior of mu is normal with precision 1/4 + n/2.25; with a fixed minibatch of m
    indices, scaled by n/m, it is normal with the same precision and mean
    (n/m) sum(y[idx]) / 2.25 / precision (the indexing then runs inside the compiled
    gradient)."""
    steps = 200 if backend.name == "numpy" else 300
    mcmc = MCMC(NUTS(model), num_warmup=steps, num_samples=steps, num_chains=2,
                progress_bar=False)
    if subsample is None:
        mcmc.run(0, Y, len(Y))
        total = Y.sum()
    else:
        mcmc.run(0, Y, subsample=np.array(subsample))
        total = len(Y) / len(subsample) * Y[subsample].sum()
    prec = 1 / PRIOR_SD**2 + len(Y) / NOISE_SD**2
    mean, sd = total / NOISE_SD**2 / prec, np.sqrt(1 / prec)
    mu = to_numpy(mcmc.get_samples(group_by_chain=True)["mu"])
    assert mu.shape == (2, steps)
    assert split_gelman_rubin(mu) < 1.05
    assert abs(mu.mean() - mean) < 4 * mcse(mu), (mu.mean(), mean, mcse(mu))
    assert abs(mu.std(ddof=1) / sd - 1) < 0.2, (mu.std(ddof=1), sd)


def test_a_plate_that_fails_to_enter_leaves_the_stack(backend):
    """A plate whose subsample needs a key it does not have raises, and is not left active:
    the next plate of the same name works (it said "already active")."""
    with pytest.raises(Exception, match="key"):
        with ppl.plate("N", 10, subsample_size=3):
            pass
    with ppl.plate("N", 10, subsample=[1, 2, 3]) as idx:
        assert ppl.ops.to_numpy(idx).tolist() == [1, 2, 3]
