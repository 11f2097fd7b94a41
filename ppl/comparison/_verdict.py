"""The decision rule of :func:`ppl.compare`: per element and statistic, is every pair of result
sets within Monte Carlo error of each other?

For every pair of result sets (backends, and the reference if any), every scalar element and
every judged statistic ``s`` (mean, sd, 5 % and 95 % quantiles) the difference is set against
the Monte Carlo standard errors of both sides:

    z = (s_a - s_b) / sqrt(MCSE_a^2 + MCSE_b^2),   p = 2 (1 - Phi(|z|)),

and the p-values of all tests together are corrected with Holm's step-down procedure (Holm 1979,
"A simple sequentially rejective multiple test procedure", *Scand. J. Statist.* 6(2)), which
keeps the family-wise error rate at ``alpha`` over every element and statistic. An element
*disagrees* when one of its corrected p-values is below ``alpha``.

Only results whose chains converged on an element are judged on it: an element whose R-hat on
some backend exceeds 1.01, or a backend with divergences, is *not converged* there, which is
reported as such and is not a disagreement (unless the converged result sets disagree). An
element only one result set holds (a site a partial reference does not cover) is *unchecked*.
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np

from ppl.comparison._mcse import STATISTICS

__all__ = ["Test", "ElementVerdict", "judge", "holm", "element_label", "VERDICTS"]

#: element verdicts, worst first (the report's order)
VERDICTS = ("disagree", "missing", "not converged", "unchecked", "agree")


class Test(NamedTuple):
    """One comparison of one statistic of one element between two result sets."""

    a: str
    b: str
    statistic: str
    difference: float
    se: float
    z: float
    p: float
    p_adjusted: float      # Holm-corrected; NaN for tests not judged (not converged)
    judged: bool


class ElementVerdict(NamedTuple):
    """The verdict on one scalar element (``"theta[3]"``)."""

    label: str
    site: str
    index: int             # flat index into the site's elements
    verdict: str           # one of VERDICTS
    reasons: tuple         # e.g. ("sd: jax vs torch", ) or ("torch: R-hat 1.03",)
    tests: tuple           # the Test records of the element

    @property
    def worst(self) -> Test | None:
        """The judged test with the smallest p-value (any test if none was judged)."""
        pool = [t for t in self.tests if t.judged] or list(self.tests)
        return min(pool, key=lambda t: (t.p, -abs(t.z))) if pool else None


def element_label(site: str, shape: tuple, index: int) -> str:
    """``"mu"`` for a scalar, ``"theta[3]"`` / ``"L[1,0]"`` (0-based) for array elements.

    >>> element_label("L", (2, 2), 2)
    'L[1,0]'
    """
    if not shape:
        return site
    return f"{site}[{','.join(str(int(i)) for i in np.unravel_index(index, shape))}]"


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error control).

    >>> holm(np.array([0.01, 0.04, 0.03])).round(3).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p, dtype=np.float64)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p)
    adjusted = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out = np.empty(m)
    out[order] = adjusted
    return out


def _normal_sf(x: float) -> float:
    """``P(Z > x)`` for a standard normal ``Z`` (``erfc`` keeps the far tail accurate)."""
    return 0.5 * math.erfc(x / math.sqrt(2.0))


def _z(a: dict, b: dict, stat: str, i: int):
    diff = float(a[stat][i] - b[stat][i])
    se = float(np.hypot(a[f"mcse_{stat}"][i], b[f"mcse_{stat}"][i]))
    if not np.isfinite(diff) or not np.isfinite(se):
        return None
    if se > 0:
        z = diff / se
    else:
        z = 0.0 if diff == 0 else np.copysign(np.inf, diff)
    return diff, se, z


def judge(sets, sites: dict[str, tuple], alpha: float) -> list[ElementVerdict]:
    """Judge every element of ``sites`` across the result ``sets``.

    Parameters
    ----------
    sets
        Result sets with ``name``, ``stats`` (``site -> {statistic: (E,) array}``, missing
        sites absent, NaN where a set has no value) and ``converged(site) -> (E,) bool``, and
        ``partial`` (a reference that need not hold every element).
    sites
        ``site -> shape`` of every element to judge, in report order.
    alpha
        Family-wise error rate over all tests.

    Returns
    -------
    list of ElementVerdict
        One per element, in site order.
    """
    raw = []            # (site, index, reasons, [test fields], missing)
    for site, shape in sites.items():
        size = int(np.prod(shape, dtype=int))
        holders = [s for s in sets if site in s.stats and s.stats[site]["mean"].size == size]
        missing = [s.name for s in sets if not s.partial and s not in holders]
        conv = {s.name: s.converged(site) for s in holders}
        for i in range(size):
            present = [s for s in holders if np.isfinite(s.stats[site]["mean"][i])]
            reasons = [f"not in {n}" for n in missing]
            reasons += [s.not_converged_reason(site, i) for s in present if not conv[s.name][i]]
            tests = []
            for a, b in itertools.combinations(present, 2):
                judged = bool(conv[a.name][i] and conv[b.name][i])
                for stat in STATISTICS:
                    z = _z(a.stats[site], b.stats[site], stat, i)
                    if z is not None:
                        p = float(2 * _normal_sf(abs(z[2])))
                        tests.append([a.name, b.name, stat, *z, p, np.nan, judged])
            if not tests:
                reasons.append("held by one result set only" if len(present) < 2 else
                               "no finite Monte Carlo error (a constant?)")
            raw.append((site, i, reasons, tests, bool(missing)))
    judged = [t for _, _, _, tests, _ in raw for t in tests if t[-1]]
    for t, p_adj in zip(judged, holm(np.array([t[6] for t in judged]))):
        t[7] = float(p_adj)
    out = []
    for site, i, reasons, tests, missing in raw:
        tests = tuple(Test(*t) for t in tests)
        bad = [t for t in tests if t.judged and t.p_adjusted < alpha]
        if bad:
            verdict = "disagree"
            reasons = [f"{t.statistic}: {t.a} vs {t.b} (z = {t.z:+.1f})" for t in bad] + reasons
        elif missing:
            verdict = "missing"
        elif not tests:
            verdict = "unchecked"
        elif reasons:
            verdict = "not converged"
        else:
            verdict = "agree"
        out.append(ElementVerdict(element_label(site, sites[site], i), site, i, verdict,
                                  tuple(reasons), tests))
    return out
