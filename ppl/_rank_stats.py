"""Rank-normalised split R-hat and bulk ESS, all elements of a ``(chains, draws, K)`` array at
once (Vehtari, Gelman, Simpson, Carpenter & Buerkner 2021, "Rank-normalization, folding, and
localization: an improved R-hat for assessing convergence of MCMC", Bayesian Analysis 16(2);
Geyer 1992, "Practical Markov chain Monte Carlo", Statistical Science 7(4)). The pieces of
:func:`ppl.diagnostics.rank_rhat_and_bulk_ess`; NumPy and the standard library only: every run
ends with these checks, and importing ``scipy.stats`` for its ranks cost a run's first call
0.55 s (as much as the sampling of a small model)."""

from __future__ import annotations

import functools
from statistics import NormalDist

import numpy as np

__all__ = ["z_scale", "z_scales", "average_ranks", "split", "basic_rhat", "basic_ess"]


def z_scale(x: np.ndarray) -> np.ndarray:
    """Rank-normalised z-scores of ``x`` ``(chains, draws, K)``, each of the ``K`` elements over
    all its draws (average ranks for ties; Blom's offset 3/8)."""
    order, ordered = _sort_columns(x.reshape(-1, x.shape[2]))
    return _z_of_sorted(order, ordered, x.shape)


def z_scales(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(z_scale(x), z_scale(|x - median(x)|))``, the median per element over all its draws
    (the folded draws of Vehtari et al. 2021, section 4.1), from one sort of ``x``: in ``x``'s
    sorted order the folded values fall, then rise, two runs that a stable sort (NumPy's
    timsort) merges in linear time."""
    order, ordered = _sort_columns(x.reshape(-1, x.shape[2]))
    size = ordered.shape[1]
    half = size // 2
    median = ordered[:, half] if size % 2 else 0.5 * (ordered[:, half - 1] + ordered[:, half])
    folded = np.abs(ordered - median[:, None])
    merge = np.argsort(folded, axis=1, kind="stable")
    return (_z_of_sorted(order, ordered, x.shape),
            _z_of_sorted(np.take_along_axis(order, merge, axis=1),
                         np.take_along_axis(folded, merge, axis=1), x.shape))


def average_ranks(a: np.ndarray) -> np.ndarray:
    """Ranks ``1 .. N`` of each column of ``a`` ``(N, K)``, tied values sharing the mean of
    their ranks (SciPy's ``rankdata(method="average", axis=0)``)."""
    order, ordered = _sort_columns(a)
    ranks = np.empty(order.shape)
    np.put_along_axis(ranks, order, 0.5 * _half_ranks(ordered) + 1.0, axis=1)
    return ranks.T


def _sort_columns(a: np.ndarray):
    """``(order, ordered)``, both ``(K, N)``: the permutation sorting each column of ``a``
    ``(N, K)`` and the sorted values."""
    cols = np.ascontiguousarray(a.T)              # (K, N): each sort runs on contiguous memory
    order = np.argsort(cols, axis=1)              # not stable: tied values share a rank anyway
    return order, np.take_along_axis(cols, order, axis=1)


def _z_of_sorted(order, ordered, shape) -> np.ndarray:
    """:func:`z_scale`'s z-scores, ``shape`` ``(chains, draws, K)``, from the sort of its
    columns (:func:`_sort_columns`)."""
    m, n, k = shape
    # ranks are multiples of 1/2 in [1, m n]: the normal quantiles of those, looked up
    z = np.empty(order.shape)
    np.put_along_axis(z, order, _rank_quantiles(m * n)[_half_ranks(ordered)], axis=1)
    return z.T.reshape(m, n, k)


def _half_ranks(ordered: np.ndarray) -> np.ndarray:
    """``2 (rank - 1)`` (an integer: average ranks are multiples of 1/2) of the sorted rows
    ``ordered`` ``(K, N)``: ``(K, N)``, or ``(N,)`` when no row has ties."""
    n = ordered.shape[1]
    tied = ordered[:, 1:] == ordered[:, :-1]
    if not tied.any():                            # continuous draws: the positions are the ranks
        return 2 * np.arange(n)
    if not (tied[:, 1:] & tied[:, :-1]).any():    # ties in pairs only (folded draws: the two
        rows, at = np.nonzero(tied)               # values around an even count's median)
        half = np.tile(2 * np.arange(n), (ordered.shape[0], 1))
        half[rows, at] = half[rows, at + 1] = 2 * at + 1
        return half
    position = np.broadcast_to(np.arange(n), ordered.shape)
    starts = np.ones(ordered.shape, bool)         # a run of equal values starts here
    starts[:, 1:] = ~tied
    ends = np.ones(ordered.shape, bool)           # ... ends here
    ends[:, :-1] = ~tied
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, position, n - 1)[:, ::-1], axis=1)[:, ::-1]
    return first + last


@functools.lru_cache(maxsize=2)
def _rank_quantiles(size: int) -> np.ndarray:
    """Normal quantiles of Blom's ``(r - 3/8) / (size + 1/4)`` for ``r = 1, 1.5, .., size``."""
    inv_cdf = NormalDist().inv_cdf
    table = np.array([inv_cdf((1.0 + 0.5 * i - 0.375) / (size + 0.25))
                      for i in range(2 * size - 1)])
    table.flags.writeable = False
    return table


def split(x: np.ndarray) -> np.ndarray:
    """Each chain cut into its first and last ``draws // 2`` draws (the middle one of an odd
    count dropped)."""
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half:]], axis=0)


def basic_rhat(z: np.ndarray) -> np.ndarray:
    n = z.shape[1]
    between = n * np.var(np.mean(z, axis=1), axis=0, ddof=1)
    within = np.mean(np.var(z, axis=1, ddof=1), axis=0)
    return np.sqrt((between / within + n - 1) / n)


def _fast_length(n: int) -> int:
    """The smallest ``2^a 3^b 5^c >= n``: a length the FFT handles fast, close above ``n``
    (the next power of two can be almost ``2n``)."""
    best = 1 << max(0, (n - 1).bit_length())
    five = 1
    while five < best:
        three = five
        while three < best:
            two = three
            while two < n:
                two *= 2
            best = min(best, two)
            three *= 3
        five *= 5
    return best


def basic_ess(z: np.ndarray) -> np.ndarray:
    """ESS of ``z`` ``(chains, draws, K)`` per element: autocorrelations from the chains'
    FFT autocovariances, truncated by Geyer's initial positive sequence and made monotone
    (Geyer 1992; Vehtari et al. 2021, section 3.2), all elements at once."""
    m, n, k = z.shape
    centred = z - z.mean(axis=1, keepdims=True)
    size = _fast_length(2 * n - 1)              # >= 2n - 1 with zeros: no wrap-around
    f = np.fft.rfft(centred, n=size, axis=1)
    acov = np.fft.irfft(f * np.conjugate(f), n=size, axis=1)[:, :n] / n  # (m, n, K)
    mean_var = acov[:, 0].mean(axis=0) * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if m > 1:
        var_plus = var_plus + np.var(z.mean(axis=1), axis=0, ddof=1)
    rho = 1.0 - (mean_var - acov.mean(axis=0)) / var_plus         # (n, K), lag 0 first
    rho[0] = 1.0
    # pairs (rho[2j], rho[2j+1]) for j >= 1 while 2j - 1 < n - 3; the sum stops at the first
    # pair whose sum is not positive (which is looked at, then dropped unless it is zero)
    limit = max(0, (n - 3) // 2)
    pairs = rho[2:2 * limit + 2:2] + rho[3:2 * limit + 3:2]       # (limit, K): P_1 .. P_limit
    first_pair = rho[0] + rho[1]
    ended = pairs <= 0
    stop = np.where(ended.any(axis=0), np.argmax(ended, axis=0) + 1, limit) if limit \
        else np.zeros(k, int)
    used = np.where(first_pair > 0, stop, 0)                       # J: pairs looked at
    sums = np.concatenate([first_pair[None], pairs], axis=0)       # (limit + 1, K)
    monotone = np.minimum.accumulate(sums, axis=0)
    kept = np.arange(limit + 1)[:, None] < used[None, :]           # pairs 0 .. J - 1
    total = np.sum(np.where(kept, monotone, 0.0), axis=0)
    last_even = np.take_along_axis(rho, (2 * used)[None, :], axis=0)[0]
    last_pair = np.take_along_axis(sums, used[None, :], axis=0)[0]
    tail = np.where((used == 0) | (last_pair >= 0) | (last_even > 0), last_even, 0.0)
    tau = np.maximum(-1.0 + 2.0 * total + tail, 1.0 / np.log10(m * n))
    ess = m * n / tau
    flat = (z.max(axis=(0, 1)) - z.min(axis=(0, 1))) < np.finfo(float).resolution
    return np.where(flat, float(m * n), ess)
