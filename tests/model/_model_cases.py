"""The table of test models, each with a log joint density computed by hand with SciPy.

Every case gives: the model (plain ppl code, the same on every backend), its data (NumPy),
a point (constrained values of the latent sites) and the reference log joint at that point.
``supports`` lists each latent's support in the order of the model, as ``"real"``,
``"positive"`` or ``("interval", lo_hi(values))`` where the bounds may depend on other latents;
:func:`reference_potential` uses it to compute the potential energy by hand (exp and scaled
sigmoid transforms with their log-Jacobians), independently of ppl's transforms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.stats as st
from scipy.special import expit, log_expit, logsumexp

import ppl
import ppl.distributions as dist
from ppl import handlers, ops

RNG = np.random.default_rng(20240611)


@dataclass
class ModelCase:
    name: str
    model: Callable
    args: tuple
    kwargs: dict
    point: dict          # constrained values of the latent sites
    log_joint: Callable  # numpy reference: dict of constrained values -> float
    supports: dict       # site -> "real" | "positive" | ("interval", fn(values) -> (lo, hi))
    deterministic: dict = field(default_factory=dict)  # site -> fn(values) -> array


# ----------------------------------------------------------------------------- regression
X = RNG.normal(size=(12, 2))
Y_REG = 0.5 + X @ np.array([1.0, -2.0]) + 0.3 * RNG.normal(size=12)


def linreg(x, y=None):
    x = ops.asarray(x)
    alpha = ppl.sample("alpha", dist.Normal(0.0, 10.0))
    beta = ppl.sample("beta", dist.Normal(0.0, 2.0).expand([2]).to_event(1))
    sigma = ppl.sample("sigma", dist.HalfNormal(1.0))
    mu = ppl.deterministic("mu", alpha + ops.matmul(x, beta))
    with ppl.plate("N", ops.shape(x)[0]):
        ppl.sample("y", dist.Normal(mu, sigma), obs=y)


def linreg_ref(v):
    mu = v["alpha"] + X @ v["beta"]
    return (st.norm(0, 10).logpdf(v["alpha"]) + st.norm(0, 2).logpdf(v["beta"]).sum()
            + st.halfnorm(scale=1.0).logpdf(v["sigma"])
            + st.norm(mu, v["sigma"]).logpdf(Y_REG).sum())


# ----------------------------------------------------------------------------- hierarchical
J_SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
J_Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])


def eight_schools(sigma, y=None):
    mu = ppl.sample("mu", dist.Normal(0.0, 5.0))
    tau = ppl.sample("tau", dist.HalfCauchy(5.0))
    with ppl.plate("J", len(sigma)):
        theta_tilde = ppl.sample("theta_tilde", dist.Normal(0.0, 1.0))
        theta = ppl.deterministic("theta", mu + tau * theta_tilde)
        ppl.sample("obs", dist.Normal(theta, ops.asarray(sigma)), obs=y)


def eight_schools_ref(v):
    theta = v["mu"] + v["tau"] * v["theta_tilde"]
    return (st.norm(0, 5).logpdf(v["mu"]) + st.halfcauchy(scale=5).logpdf(v["tau"])
            + st.norm(0, 1).logpdf(v["theta_tilde"]).sum()
            + st.norm(theta, J_SIGMA).logpdf(J_Y).sum())


Y_GRID = RNG.normal(size=(3, 4)) + np.array([[-1.0], [0.0], [2.0]])


def nested_plates(y):
    mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
    with ppl.plate("groups", 3, dim=-2):
        g = ppl.sample("g", dist.Normal(mu, 2.0))          # batch shape (3, 1)
        with ppl.plate("items", 4):                          # dim -1
            ppl.sample("y", dist.Normal(g, 0.5), obs=y)      # batch shape (3, 4)


def nested_plates_ref(v):
    return (st.norm(0, 1).logpdf(v["mu"]) + st.norm(v["mu"], 2).logpdf(v["g"]).sum()
            + st.norm(v["g"], 0.5).logpdf(Y_GRID).sum())


# ----------------------------------------------------------------------------- time series
T = 6
Y_AR = RNG.normal(size=T)


def ar1_latent(y):
    """A latent AR(1), z_t = phi z_{t-1} + sigma eps_t, unrolled with ops.scan."""
    phi = ppl.sample("phi", dist.Uniform(-1.0, 1.0))
    sigma = ppl.sample("sigma", dist.HalfNormal(1.0))
    with ppl.plate("T", T):
        eps = ppl.sample("eps", dist.Normal(0.0, 1.0))

    def step(z_prev, e):
        z = phi * z_prev + sigma * e
        return z, z

    _, z = ops.scan(step, ops.zeros(()), eps)
    ppl.deterministic("z", z)
    with ppl.plate("T_obs", T):
        ppl.sample("y", dist.Normal(z, 0.5), obs=y)


def _ar1_path(v):
    z, prev = np.zeros(T), 0.0
    for t in range(T):
        prev = v["phi"] * prev + v["sigma"] * v["eps"][t]
        z[t] = prev
    return z


def ar1_ref(v):
    return (st.uniform(-1, 2).logpdf(v["phi"]) + st.halfnorm().logpdf(v["sigma"])
            + st.norm().logpdf(v["eps"]).sum() + st.norm(_ar1_path(v), 0.5).logpdf(Y_AR).sum())


# ----------------------------------------------------------------------------- mixture
Y_MIX = np.concatenate([RNG.normal(-2.0, 1.0, size=5), RNG.normal(3.0, 1.0, size=5)])


def mixture(y):
    """A two-component mixture, marginalised with logsumexp and added with factor."""
    w = ppl.sample("w", dist.Beta(2.0, 2.0))
    locs = ppl.sample("locs", dist.Normal(0.0, 5.0).expand([2]).to_event(1))
    scale = ppl.sample("scale", dist.HalfNormal(2.0))
    y = ops.asarray(y)
    with ppl.plate("N", ops.shape(y)[0]):
        lp0 = ops.log(w) + dist.Normal(locs[0], scale).log_prob(y)
        lp1 = ops.log1p(-w) + dist.Normal(locs[1], scale).log_prob(y)
        ppl.factor("obs", ops.logsumexp(ops.stack([lp0, lp1], axis=-1), axis=-1))


def mixture_ref(v):
    lp = np.stack([np.log(v["w"]) + st.norm(v["locs"][0], v["scale"]).logpdf(Y_MIX),
                   np.log1p(-v["w"]) + st.norm(v["locs"][1], v["scale"]).logpdf(Y_MIX)], -1)
    return (st.beta(2, 2).logpdf(v["w"]) + st.norm(0, 5).logpdf(v["locs"]).sum()
            + st.halfnorm(scale=2).logpdf(v["scale"]) + logsumexp(lp, axis=-1).sum())


# ----------------------------------------------------------------------------- dependent bounds
Y_G = np.array([0.7, 0.4, 0.9])


def dependent_bounds(y):
    """beta1 ~ Uniform(0, 1 - alpha1): the support of beta1 depends on alpha1 (GARCH-style)."""
    alpha1 = ppl.sample("alpha1", dist.Uniform(0.0, 1.0))
    beta1 = ppl.sample("beta1", dist.Uniform(0.0, 1.0 - alpha1))
    with ppl.plate("N", 3):
        ppl.sample("y", dist.Normal(alpha1 + beta1, 0.5), obs=y)


def dependent_bounds_ref(v):
    return (st.uniform(0, 1).logpdf(v["alpha1"]) + st.uniform(0, 1 - v["alpha1"]).logpdf(
        v["beta1"]) + st.norm(v["alpha1"] + v["beta1"], 0.5).logpdf(Y_G).sum())


# ----------------------------------------------------------------------------- mask and scale
Y_MS = RNG.normal(size=5)
MASK = np.array([True, False, True, True, False])


def masked_scaled(y, m):
    mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
    with ppl.plate("N", 5), handlers.mask(mask=ops.asarray(m)), handlers.scale(scale=2.5):
        ppl.sample("y", dist.Normal(mu, 1.0), obs=y)


def masked_scaled_ref(v):
    return st.norm().logpdf(v["mu"]) + 2.5 * (MASK * st.norm(v["mu"], 1).logpdf(Y_MS)).sum()


CASES = [
    ModelCase("linreg", linreg, (X,), {"y": Y_REG},
              {"alpha": 0.4, "beta": np.array([0.9, -1.7]), "sigma": 0.6}, linreg_ref,
              {"alpha": "real", "beta": "real", "sigma": "positive"},
              {"mu": lambda v: v["alpha"] + X @ v["beta"]}),
    ModelCase("eight_schools", eight_schools, (J_SIGMA,), {"y": J_Y},
              {"mu": 3.0, "tau": 2.5, "theta_tilde": RNG.normal(size=8)}, eight_schools_ref,
              {"mu": "real", "tau": "positive", "theta_tilde": "real"},
              {"theta": lambda v: v["mu"] + v["tau"] * v["theta_tilde"]}),
    ModelCase("nested_plates", nested_plates, (Y_GRID,), {},
              {"mu": 0.3, "g": np.array([[-0.8], [0.1], [1.9]])}, nested_plates_ref,
              {"mu": "real", "g": "real"}),
    ModelCase("ar1_scan", ar1_latent, (Y_AR,), {},
              {"phi": 0.6, "sigma": 0.8, "eps": RNG.normal(size=T)}, ar1_ref,
              {"phi": ("interval", lambda v: (-1.0, 1.0)), "sigma": "positive", "eps": "real"},
              {"z": _ar1_path}),
    ModelCase("mixture", mixture, (Y_MIX,), {},
              {"w": 0.45, "locs": np.array([-1.8, 2.7]), "scale": 1.2}, mixture_ref,
              {"w": ("interval", lambda v: (0.0, 1.0)), "locs": "real", "scale": "positive"}),
    ModelCase("dependent_bounds", dependent_bounds, (Y_G,), {},
              {"alpha1": 0.3, "beta1": 0.5}, dependent_bounds_ref,
              {"alpha1": ("interval", lambda v: (0.0, 1.0)),
               "beta1": ("interval", lambda v: (0.0, 1.0 - v["alpha1"]))}),
    ModelCase("masked_scaled", masked_scaled, (Y_MS, MASK), {}, {"mu": -0.4},
              masked_scaled_ref, {"mu": "real"}),
]


def constrain_by_hand(case: ModelCase, u: dict) -> tuple[dict, float]:
    """Constrained values and the summed log|det J| from unconstrained ``u`` (NumPy)."""
    values, log_det = {}, 0.0
    for name, support in case.supports.items():
        x = np.asarray(u[name], dtype=np.float64)
        if support == "real":
            values[name] = x
        elif support == "positive":
            values[name] = np.exp(x)
            log_det += x.sum()
        else:
            lo, hi = support[1](values)
            values[name] = lo + (hi - lo) * expit(x)
            log_det += (np.log(hi - lo) + log_expit(x) + log_expit(-x)).sum()
    return values, log_det


def unconstrain_by_hand(case: ModelCase, v: dict) -> dict:
    """Inverse of :func:`constrain_by_hand` (used to place test points)."""
    u = {}
    for name, support in case.supports.items():
        x = np.asarray(v[name], dtype=np.float64)
        if support == "real":
            u[name] = x
        elif support == "positive":
            u[name] = np.log(x)
        else:
            lo, hi = support[1](v)
            p = (x - lo) / (hi - lo)
            u[name] = np.log(p) - np.log1p(-p)
    return u


def reference_potential(case: ModelCase, u: dict) -> float:
    values, log_det = constrain_by_hand(case, u)
    return -(case.log_joint(values) + log_det)
