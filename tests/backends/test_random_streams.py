"""Independence of the random streams the samplers derive from one key, on every backend.

NUTS draws each leaf's uniforms from ``fold_in(k_leaf, j)`` for consecutive ``j`` and each
iteration's keys from ``split(fold_in(run_key, i), 2)``; MCMC and ``initialize_model`` give each
chain a row of ``split(key, num_chains)``. A flaw in how those keys are derived (repeated keys,
a hash that leaves neighbouring counters related, rows of ``split`` that share a stream) would
couple chains, iterations or leaves, so each pattern is checked here on ``M`` consecutive
derived keys, one small draw from each:

* no two derived keys give the same draw;
* every pair of columns of the stacked draws, and each column against the same column one key
  later, has ``|correlation| < 5 / sqrt(M)`` (an independent pair has ``r ~ N(0, 1/M)``);
* the pairs ``(u_j, u_{j+1})`` fill a ``B x B`` grid of the unit square uniformly (chi-square,
  ``p > ALPHA``), which also sees dependence that is not linear.

Seeds are fixed, so the tests are deterministic (float64 only: keys have no float dtype).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

from ppl import ops
from ppl import random as rnd

M = 2000        # derived keys per pattern
B = 5           # bins per axis of the joint histogram (M / B^2 = 80 pairs per cell)
ALPHA = 1e-4
WIDTH = 3       # uniforms per key, as a NUTS leaf draws for each chain


def _fold_in(key):
    return [rnd.fold_in(key, j) for j in range(M)]


def _split(key):
    # the rows of one split (more than 16: the vectorised path of the torch keys)
    keys = rnd.split(key, M)
    return [keys[j] for j in range(M)]


def _split_pairs(key):
    # the MCMC pattern: both halves of split(fold_in(run_key, i), 2), iteration after iteration
    return [k for i in range(M // 2) for k in rnd.split(rnd.fold_in(key, i), 2)]


def _nested(key):
    # the NUTS pattern: leaf keys fold_in(k_leaf, j) with k_leaf = split(iteration key, 2)[1]
    return [rnd.fold_in(rnd.split(rnd.fold_in(key, i), 2)[1], j)
            for i in range(M // 4) for j in range(4)]


PATTERNS = {"fold_in": _fold_in, "split": _split, "split-pairs": _split_pairs,
            "nested": _nested}


def _stream(pattern, seed):
    keys = PATTERNS[pattern](rnd.key(seed))
    return np.stack([ops.to_numpy(rnd.uniform(k, (WIDTH,))).astype(np.float64) for k in keys])


def check_independent(u, label):
    """Assert the rows of ``u`` (``(M, k)`` uniforms, one row per derived key) look like
    independent draws: distinct rows, uncorrelated columns and neighbours, a uniform joint
    histogram of neighbours."""
    m, k = u.shape
    assert len({tuple(r) for r in u}) == m, f"{label}: two derived keys gave the same draw"
    bound = 5 / np.sqrt(m)
    cols = np.corrcoef(u.T)[~np.eye(k, dtype=bool)]
    assert np.max(np.abs(cols), initial=0.0) < bound, (
        f"{label}: columns of one draw correlated, max |r| {np.max(np.abs(cols)):.3f}")
    for c in range(k):
        r = np.corrcoef(u[:-1, c], u[1:, c])[0, 1]
        assert abs(r) < bound, f"{label}: draw j and j+1 correlated (column {c}), r = {r:.3f}"
        counts, _, _ = np.histogram2d(u[:-1, c], u[1:, c], bins=B, range=[[0, 1], [0, 1]])
        p = st.chisquare(counts.ravel()).pvalue
        assert p > ALPHA, f"{label}: pairs (u_j, u_j+1) not uniform on the square, p = {p:.2g}"


@pytest.mark.dtypes("float64")     # key derivation does not depend on the float dtype
@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_derived_keys_give_independent_uniforms(backend, pattern):
    u = _stream(pattern, seed=2024)
    check_independent(u, pattern)
    # and the marginal is uniform
    p = st.kstest(u.ravel(), "uniform").pvalue
    assert p > ALPHA, f"{pattern}: uniforms not uniform, KS p = {p:.2g}"


def test_check_sees_repeated_and_dependent_streams():
    """The check rejects the flaws it is meant to catch (on NumPy draws with a planted flaw)."""
    good = np.random.default_rng(0).uniform(size=(M, WIDTH))
    check_independent(good, "independent")
    repeated = good.copy()
    repeated[1::2] = repeated[::2]                        # neighbouring keys share a stream
    with pytest.raises(AssertionError, match="same draw"):
        check_independent(repeated, "repeated")
    lagged = good.copy()
    lagged[1:, 0] = 0.8 * good[1:, 0] + 0.2 * good[:-1, 0]   # the next draw leans on this one
    with pytest.raises(AssertionError, match="correlated"):
        check_independent(lagged, "lagged")
    tent = good.copy()                                    # uncorrelated but dependent:
    tent[1::2, 2] = np.abs(2 * good[::2, 2] - 1)          # u_j+1 = |2 u_j - 1| every other j
    assert abs(np.corrcoef(tent[:-1, 2], tent[1:, 2])[0, 1]) < 5 / np.sqrt(M)
    with pytest.raises(AssertionError, match="not uniform on the square"):
        check_independent(tent, "tent")
