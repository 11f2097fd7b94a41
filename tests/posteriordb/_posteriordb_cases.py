"""The posteriordb cases of the conformance tests: each posterior's ppl module, a parameter point
(constrained values) and an independent NumPy/SciPy log density (Stan's ``target`` without the
Jacobian terms: flat priors contribute 0, constant terms are kept)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
from scipy import stats
from scipy.special import logsumexp

_PACKAGE = Path(__file__).resolve().parents[2] / "examples" / "posteriordb"
_NAME = "ppl_examples_posteriordb"
if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(
        _NAME, _PACKAGE / "__init__.py", submodule_search_locations=[str(_PACKAGE)])
    sys.modules[_NAME] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules[_NAME])
pdb = sys.modules[_NAME]
POSTERIORS, data_dir, load_data = pdb.POSTERIORS, pdb.data_dir, pdb.load_data
load_module, load_reference, stan_to_site = pdb.load_module, pdb.load_reference, pdb.stan_to_site

__all__ = ["CASES", "POSTERIORS", "available", "load_module", "pdb", "point"]


def available() -> bool:
    try:
        data_dir("eight_schools-eight_schools_noncentered")
        return True
    except FileNotFoundError:
        return False


def _ref_point(posterior):
    """Reference means per site (Stan names grouped back into vectors)."""
    out = {}
    for name, r in load_reference(posterior).items():
        site, idx = stan_to_site(name)
        out.setdefault(site, {})[idx] = r["mean"]
    return {s: (np.array(v[()]) if () in v else np.array([v[(i,)] for i in range(len(v))]))
            for s, v in out.items()}


def _norm(x, m, s):
    return stats.norm.logpdf(x, m, s).sum()


def _eight_schools(d, p):
    theta = p["mu"] + p["tau"] * p["theta_trans"]
    return (_norm(p["mu"], 0, 5) + stats.halfcauchy.logpdf(p["tau"], 0, 5)
            + _norm(p["theta_trans"], 0, 1) + _norm(np.array(d["y"]), theta, np.array(d["sigma"])))


def _kidiq(d, p):
    b = p["beta"]
    return (stats.halfcauchy.logpdf(p["sigma"], 0, 2.5)
            + _norm(np.array(d["kid_score"]), b[0] + b[1] * np.array(d["mom_iq"]), p["sigma"]))


def _mesquite(d, p):
    vol = np.log(np.array(d["diam1"]) * np.array(d["diam2"]) * np.array(d["canopy_height"]))
    return _norm(np.log(d["weight"]), p["beta"][0] + p["beta"][1] * vol, p["sigma"])


def _ark(d, p):
    K, T, y = d["K"], d["T"], np.array(d["y"])
    lp = _norm(p["alpha"], 0, 10) + _norm(p["beta"], 0, 10)
    lp += stats.halfcauchy.logpdf(p["sigma"], 0, 2.5)
    for t in range(K, T):
        mu = p["alpha"] + sum(p["beta"][k] * y[t - k - 1] for k in range(K))
        lp += stats.norm.logpdf(y[t], mu, p["sigma"])
    return lp


def _garch(d, p):
    y = np.array(d["y"])
    sigma = np.empty(d["T"])
    sigma[0] = d["sigma1"]
    for t in range(1, d["T"]):
        sigma[t] = np.sqrt(p["alpha0"] + p["alpha1"] * (y[t - 1] - p["mu"]) ** 2
                           + p["beta1"] * sigma[t - 1] ** 2)
    return _norm(y, p["mu"], sigma)


def _gp(d, p):
    x = np.array(d["x"], float)
    cov = p["alpha"] ** 2 * np.exp(-(x[:, None] - x[None]) ** 2 / (2 * p["rho"] ** 2))
    f = np.linalg.cholesky(cov + 1e-10 * np.eye(len(x))) @ p["f_tilde"]
    return (stats.gamma.logpdf(p["rho"], 25, scale=1 / 4) + stats.halfnorm.logpdf(p["alpha"], 0, 2)
            + _norm(p["f_tilde"], 0, 1) + stats.poisson.logpmf(d["k"], np.exp(f)).sum())


def _gauss_mix(d, p):
    y = np.array(d["y"])
    mu, s, th = p["mu"], p["sigma"], p["theta"]
    mix = np.logaddexp(np.log(th) + stats.norm.logpdf(y, mu[0], s[0]),
                       np.log1p(-th) + stats.norm.logpdf(y, mu[1], s[1]))
    return (_norm(mu, 0, 2) + stats.halfnorm.logpdf(s, 0, 2).sum()
            + stats.beta.logpdf(th, 5, 5) + mix.sum())


def _earnings(d, p):
    h, male = np.array(d["height"]), np.array(d["male"], float)
    z = (h - h.mean()) / h.std(ddof=1)
    b = p["beta"]
    return _norm(np.log(d["earn"]), b[0] + b[1] * z + b[2] * male + b[3] * z * male, p["sigma"])


def _blr(d, p):
    X = np.array(d["X"])
    return (_norm(p["beta"], 0, 10) + stats.halfnorm.logpdf(p["sigma"], 0, 10)
            + _norm(np.array(d["y"]), X @ p["beta"], p["sigma"]))


def _hmm(d, p):
    y = np.array(d["y"])
    theta = np.stack([p["theta1"], p["theta2"]])
    mu = p["mu"]
    lp = stats.norm.logpdf(mu[0], 3, 1) + stats.norm.logpdf(mu[1], 10, 1)
    gamma = stats.norm.logpdf(y[0], mu, 1)
    for t in range(1, len(y)):
        gamma = np.array([logsumexp(gamma + np.log(theta[:, k]) + stats.norm.logpdf(y[t], mu[k], 1))
                          for k in range(2)])
    return lp + logsumexp(gamma)


def _diamonds(d, p):
    X = np.array(d["X"])
    Xc = X[:, 1:] - X[:, 1:].mean(0)
    return (_norm(np.array(d["Y"]), p["Intercept"] + Xc @ p["b"], p["sigma"])
            + _norm(p["b"], 0, 1) + stats.t.logpdf(p["Intercept"], 3, 8, 10)
            + stats.t.logpdf(p["sigma"], 3, 0, 10) - stats.t.logsf(0, 3, 0, 10))


def _nes(d, p):
    age = np.array(d["age_discrete"])
    cols = [np.ones(d["N"]), d["real_ideo"], d["race_adj"], age == 2, age == 3, age == 4,
            d["educ1"], d["gender"], d["income"]]
    X = np.stack([np.asarray(c, float) for c in cols], -1)
    return _norm(np.array(d["partyid7"], float), X @ p["beta"], p["sigma"])


def _with(extra):
    """Reference means plus extra latent sites drawn from a fixed generator."""
    def make(posterior):
        p = _ref_point(posterior)
        rng = np.random.default_rng(0)
        for name, shape in extra.items():
            p[name] = rng.normal(scale=0.5, size=shape)
        return p
    return make


def _drop(*names, extra=None):
    def make(posterior):
        p = _with(extra or {})(posterior)
        for n in names:
            p.pop(n)
        return p
    return make


#: posterior -> (point maker, scipy log density)
CASES = {
    "eight_schools-eight_schools_noncentered": (_drop("theta", extra={"theta_trans": 8}),
                                                _eight_schools),
    "kidiq-kidscore_momiq": (_with({}), _kidiq),
    "mesquite-logmesquite_logvolume": (_with({}), _mesquite),
    "arK-arK": (_with({}), _ark),
    "garch-garch11": (_with({}), _garch),
    "gp_pois_regr-gp_pois_regr": (_drop("f", extra={"f_tilde": 11}), _gp),
    "low_dim_gauss_mix-low_dim_gauss_mix": (_with({}), _gauss_mix),
    "earnings-logearn_interaction_z": (_with({}), _earnings),
    "sblrc-blr": (_with({}), _blr),
    "hmm_example-hmm_example": (_with({}), _hmm),
    "diamonds-diamonds": (_with({}), _diamonds),
    "nes2000-nes": (_with({}), _nes),
}


def point(posterior):
    """``(params, data, reference log density)`` for ``posterior``."""
    make, logp = CASES[posterior]
    params = make(posterior)
    raw = load_data(posterior)
    return params, raw, float(logp(raw, params))
