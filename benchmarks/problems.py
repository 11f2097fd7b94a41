"""The posteriors the NUTS benchmarks run, with the same data for every framework.

A :class:`Problem` holds a ppl model with its arguments as NumPy data, and where there is one a
native NumPyro model of the same posterior (logistic regression, eight schools). Peers without a
native model sample ppl's JAX log density of the flat unconstrained vector (:func:`potential`),
so they pay the same gradient and differ only in their sampler and driver.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

__all__ = ["Problem", "PROBLEMS", "get_problems", "logistic_data", "numpyro_logistic",
           "potential"]


class Problem(NamedTuple):
    name: str
    model: Callable              # the ppl model
    args: tuple                  # NumPy / Python data
    kwargs: dict
    numpyro_model: Callable | None = None   # same signature, or None
    nuts_kwargs: dict = {}


def logistic_data(n=2000, d=25, seed=0, dtype=np.float64):
    """Rows ``x (n, d)`` and labels ``y (n,)`` in ``dtype`` (made in it: no float64 copy)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d), dtype=dtype)
    beta = rng.normal(scale=0.5, size=d).astype(dtype)
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-(x @ beta + 0.3)))).astype(dtype)
    return x, y


def _logistic(n=2000, d=25):
    import ppl
    import ppl.distributions as dist

    def model(x, y=None):
        alpha = ppl.sample("alpha", dist.Normal(0.0, 1.0))
        with ppl.plate("D", x.shape[1]):
            beta = ppl.sample("beta", dist.Normal(0.0, 1.0))
        with ppl.plate("N", x.shape[0]):
            ppl.sample("y", dist.Bernoulli(logits=alpha + ppl.ops.matmul(x, beta)), obs=y)

    x, y = logistic_data(n, d)
    name = "logistic_regression" if (n, d) == (2000, 25) else f"logistic_N{n}_D{d}"
    return Problem(name, model, (x,), {"y": y}, numpyro_logistic)


def numpyro_logistic(x, y=None):
    """The logistic regression in NumPyro."""
    import numpyro
    import numpyro.distributions as nd
    alpha = numpyro.sample("alpha", nd.Normal(0.0, 1.0))
    with numpyro.plate("D", x.shape[1]):
        beta = numpyro.sample("beta", nd.Normal(0.0, 1.0))
    with numpyro.plate("N", x.shape[0]):
        numpyro.sample("y", nd.Bernoulli(logits=alpha + x @ beta), obs=y)


def _eight_schools():
    import examples.posteriordb.eight_schools_noncentered as es
    from examples.posteriordb import load_data

    def numpyro_model(J, y, sigma):
        import numpyro
        import numpyro.distributions as nd
        mu = numpyro.sample("mu", nd.Normal(0.0, 5.0))
        tau = numpyro.sample("tau", nd.HalfCauchy(5.0))
        with numpyro.plate("J", J):
            theta_trans = numpyro.sample("theta_trans", nd.Normal(0.0, 1.0))
            numpyro.sample("y", nd.Normal(mu + tau * theta_trans, sigma), obs=y)

    d = load_data(es.POSTERIOR)
    return Problem("eight_schools", es.model, (), {"J": d["J"], "y": np.asarray(d["y"], float),
                                                   "sigma": np.asarray(d["sigma"], float)},
                   numpyro_model)


def _posteriordb(module_name):
    import importlib

    import ppl
    from ppl import ops

    mod = importlib.import_module(f"examples.posteriordb.{module_name}")
    with ppl.use_backend("numpy", dtype="float64"):
        kwargs = {k: (np.asarray(ops.to_numpy(v)) if ops.is_array(v) else v)
                  for k, v in mod.data().items()}
    return Problem(module_name, mod.model, (), kwargs, None, dict(mod.NUTS_KWARGS))


#: name -> zero-argument factory
PROBLEMS: dict[str, Callable[[], Problem]] = {
    "logistic_regression": _logistic,
    "eight_schools": _eight_schools,
    **{m: (lambda m=m: _posteriordb(m)) for m in (
        "kidiq_kidscore_momiq", "mesquite_logmesquite_logvolume", "ark", "garch11",
        "earnings_logearn_interaction_z", "sblrc_blr", "low_dim_gauss_mix", "gp_pois_regr",
        "nes2000_nes", "diamonds", "hmm_example")},
}


def get_problems(names) -> list[Problem]:
    unknown = [n for n in names if n not in PROBLEMS and not n.startswith("logistic_N")]
    if unknown:
        raise SystemExit(f"unknown problem(s) {unknown}; known: {sorted(PROBLEMS)}")
    out = []
    for n in names:
        if n.startswith("logistic_N"):                 # logistic_N100000_D100
            nn, dd = n[len("logistic_N"):].split("_D")
            out.append(_logistic(int(nn), int(dd)))
        else:
            out.append(PROBLEMS[n]())
    return out


def potential(problem: Problem, seed: int, num_chains: int, dtype="float32"):
    """``(logdensity_fn, init (C, D) NumPy, to_sites)``: ppl's JAX log density of the flat
    unconstrained vector (``-potential``), ppl's starting points, and the map back to sites."""
    import jax

    import ppl
    from ppl import ops
    from ppl.inference import initialize_model

    with ppl.use_backend("jax", dtype=dtype):
        args = tuple(ops.asarray(a) if isinstance(a, np.ndarray) else a for a in problem.args)
        kwargs = {k: ops.asarray(v) if isinstance(v, np.ndarray) else v
                  for k, v in problem.kwargs.items()}
        info = initialize_model(seed, problem.model, args, kwargs, num_chains=num_chains)
        pot = info.potential_fn

        def logdensity(z):
            with ppl.use_backend("jax", dtype=dtype):
                return -pot(z)

        return logdensity, np.asarray(info.init_position), jax.jit(jax.vmap(info.postprocess_fn))
