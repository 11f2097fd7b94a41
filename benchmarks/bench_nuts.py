"""NUTS speed: ppl on each backend side by side with NumPyro (JAX) and Pyro (torch).

Two posteriors: a 25-dimensional logistic regression (N = 2000 synthetic rows, fixed seed) and
eight schools (non-centred). Each sampler runs 4 chains of 1000 warmup + 1000 draws; the wall
time covers the whole run (model setup, compilation, warmup and sampling). Reported per run:

* ``ESS/s``: the smallest bulk ESS over all parameters, divided by the wall time;
* ``us/grad``: wall time per gradient evaluation of one chain (total leapfrog steps of all
  chains);
* ``us/leapfrog``: wall time per *batched* leapfrog step (ppl's vectorized chains advance in
  lock-step, so one batched step is one gradient of every chain).

Usage::

    python benchmarks/bench_nuts.py                      # everything
    python benchmarks/bench_nuts.py --backends jax,torch --models eight_schools
    python benchmarks/bench_nuts.py --no-reference       # skip NumPyro / Pyro
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # run as a script too
from benchmarks.problems import logistic_data, numpyro_logistic  # noqa: E402

EIGHT_SCHOOLS = (Path(__file__).resolve().parents[2] / "shared" / "posteriordb"
                 / "eight_schools-eight_schools_noncentered")


# ------------------------------------------------------------------------------ data
def eight_schools_data():
    try:
        d = json.loads((EIGHT_SCHOOLS / "data.json").read_text())
        return np.array(d["y"], float), np.array(d["sigma"], float)
    except FileNotFoundError:
        return (np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0]),
                np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0]))


def min_ess(samples: dict) -> float:
    from ppl.diagnostics import effective_sample_size
    return float(min(np.min(effective_sample_size(np.asarray(v))) for v in samples.values()))


# ------------------------------------------------------------------------------ ppl
def ppl_models():
    import ppl
    import ppl.distributions as dist

    def logistic(x, y=None):
        d = x.shape[1]
        alpha = ppl.sample("alpha", dist.Normal(0.0, 1.0))
        with ppl.plate("D", d):
            beta = ppl.sample("beta", dist.Normal(0.0, 1.0))
        with ppl.plate("N", x.shape[0]):
            ppl.sample("y", dist.Bernoulli(logits=alpha + ppl.ops.matmul(x, beta)), obs=y)

    def eight_schools(sigma, y=None):
        mu = ppl.sample("mu", dist.Normal(0.0, 5.0))
        tau = ppl.sample("tau", dist.HalfCauchy(5.0))
        with ppl.plate("J", sigma.shape[0]):
            theta_tilde = ppl.sample("theta_tilde", dist.Normal(0.0, 1.0))
            theta = ppl.deterministic("theta", mu + tau * theta_tilde)
            ppl.sample("obs", dist.Normal(theta, sigma), obs=y)

    return {"logistic_regression": logistic, "eight_schools": eight_schools}


def run_ppl(backend, model_name, *, chains, warmup, samples, dtype="float32", method=None):
    import ppl
    from ppl import ops
    from ppl.inference import MCMC, NUTS

    model = ppl_models()[model_name]
    with ppl.use_backend(backend, dtype=dtype):
        if model_name == "logistic_regression":
            x, y = logistic_data()
            args, kwargs = (ops.asarray(x),), {"y": ops.asarray(y)}
        else:
            y, sigma = eight_schools_data()
            args, kwargs = (ops.asarray(sigma),), {"y": ops.asarray(y)}
        mcmc = MCMC(NUTS(model), num_warmup=warmup, num_samples=samples, num_chains=chains,
                    chain_method=method, progress_bar=False)
        t0 = time.perf_counter()
        mcmc.run(0, *args, **kwargs)
        samples_g = {k: np.asarray(ops.to_numpy(v))
                     for k, v in mcmc.get_samples(group_by_chain=True).items()}
        wall = time.perf_counter() - t0
        ef = mcmc.get_extra_fields(group_by_chain=True)
        steps = np.asarray(ops.to_numpy(ef["num_steps"]))
        div = int(np.asarray(ops.to_numpy(ef["diverging"])).sum())
    # sampling-phase leapfrogs only are recorded; scale by (warmup + samples) / samples
    scale = (warmup + samples) / samples
    return _row(f"ppl[{backend}]", model_name, wall, samples_g, steps.sum() * scale,
                steps.max(axis=0).sum() * scale, div)


def _row(name, model, wall, samples, grads, batched, div):
    ess = min_ess(samples)
    return {"sampler": name, "model": model, "wall_s": wall, "min_ess": ess,
            "ess_per_s": ess / wall, "us_per_grad": 1e6 * wall / max(grads, 1),
            "us_per_leapfrog": (1e6 * wall / max(batched, 1)) if batched else float("nan"),
            "divergences": div}


# ------------------------------------------------------------------------------ NumPyro
def run_numpyro(model_name, *, chains, warmup, samples, method="vectorized"):
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as nd
    from numpyro.infer import MCMC, NUTS

    def eight_schools(sigma, y=None):
        mu = numpyro.sample("mu", nd.Normal(0.0, 5.0))
        tau = numpyro.sample("tau", nd.HalfCauchy(5.0))
        with numpyro.plate("J", sigma.shape[0]):
            theta_tilde = numpyro.sample("theta_tilde", nd.Normal(0.0, 1.0))
            theta = numpyro.deterministic("theta", mu + tau * theta_tilde)
            numpyro.sample("obs", nd.Normal(theta, sigma), obs=y)

    if model_name == "logistic_regression":
        x, y = logistic_data()
        model, args = numpyro_logistic, (jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32))
    else:
        y, sigma = eight_schools_data()
        model, args = eight_schools, (jnp.asarray(sigma, jnp.float32),
                                      jnp.asarray(y, jnp.float32))
    mcmc = MCMC(NUTS(model), num_warmup=warmup, num_samples=samples, num_chains=chains,
                chain_method=method, progress_bar=False)
    t0 = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(0), *args, extra_fields=("num_steps", "diverging"))
    s = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    wall = time.perf_counter() - t0
    ef = mcmc.get_extra_fields(group_by_chain=True)
    steps = np.asarray(ef["num_steps"])
    scale = (warmup + samples) / samples
    batched = steps.max(axis=0).sum() * scale if method == "vectorized" else steps.sum() * scale
    return _row(f"numpyro[{method[:3]}]", model_name, wall, s, steps.sum() * scale, batched,
                int(np.asarray(ef["diverging"]).sum()))


# ------------------------------------------------------------------------------ Pyro
def pyro_problem(model_name):
    """Pyro's version of a benchmark model and its arguments (float32 tensors)."""
    import pyro
    import pyro.distributions as pd
    import torch

    def logistic(x, y=None):
        alpha = pyro.sample("alpha", pd.Normal(0.0, 1.0))
        with pyro.plate("D", x.shape[1]):
            beta = pyro.sample("beta", pd.Normal(0.0, 1.0))
        with pyro.plate("N", x.shape[0]):
            pyro.sample("y", pd.Bernoulli(logits=alpha + x @ beta), obs=y)

    def eight_schools(sigma, y=None):
        mu = pyro.sample("mu", pd.Normal(0.0, 5.0))
        tau = pyro.sample("tau", pd.HalfCauchy(5.0))
        with pyro.plate("J", sigma.shape[0]):
            theta_tilde = pyro.sample("theta_tilde", pd.Normal(0.0, 1.0))
            theta = pyro.deterministic("theta", mu + tau * theta_tilde)
            pyro.sample("obs", pd.Normal(theta, sigma), obs=y)

    if model_name == "logistic_regression":
        x, y = logistic_data()
        model, args = logistic, (torch.tensor(x, dtype=torch.float32),
                                 torch.tensor(y, dtype=torch.float32))
    else:
        y, sigma = eight_schools_data()
        model, args = eight_schools, (torch.tensor(sigma, dtype=torch.float32),
                                      torch.tensor(y, dtype=torch.float32))
    return model, args


def run_pyro(model_name, *, chains, warmup, samples, jit_compile=True):
    import pyro
    import torch
    from pyro.infer import MCMC, NUTS

    torch.set_default_dtype(torch.float32)

    model, args = pyro_problem(model_name)
    # one process, chains one after another (Pyro's multi-chain mode forks processes)
    draws, steps = [], []
    t0 = time.perf_counter()
    for c in range(chains):
        pyro.set_rng_seed(c)
        kernel = NUTS(model, jit_compile=jit_compile, ignore_jit_warnings=True)
        mcmc = MCMC(kernel, num_samples=samples, warmup_steps=warmup, num_chains=1,
                    disable_progbar=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mcmc.run(*args)
        draws.append({k: v.detach().numpy() for k, v in mcmc.get_samples().items()})
        steps.append(np.nan)
    wall = time.perf_counter() - t0
    s = {k: np.stack([d[k] for d in draws]) for k in draws[0]}
    return _row("pyro[jit]" if jit_compile else "pyro[eager]", model_name, wall, s, np.nan,
                None, -1)


# ------------------------------------------------------------------------------ main
def main(argv=None):
    import ppl

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--backends", default=",".join(ppl.available_backends()))
    p.add_argument("--models", default="logistic_regression,eight_schools")
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--samples", type=int, default=1000)
    p.add_argument("--no-reference", action="store_true", help="skip NumPyro and Pyro")
    p.add_argument("--numpyro-methods", default="vectorized,sequential",
                   help="NumPyro chain methods to time (its best is the reference)")
    p.add_argument("--pyro-jit", default="1",
                   help="Pyro jit_compile settings: 1, 0, 0,1 or \"\" (skip Pyro)")
    p.add_argument("--json", help="also write the rows to this JSON file")
    args = p.parse_args(argv)
    opts = dict(chains=args.chains, warmup=args.warmup, samples=args.samples)
    rows = []
    for model in args.models.split(","):
        runs = [(f"ppl[{b}]", lambda b=b, m=model: run_ppl(b, m, **opts))
                for b in args.backends.split(",") if b]
        if not args.no_reference:
            for meth in filter(None, args.numpyro_methods.split(",")):
                runs.append((f"numpyro[{meth}]",
                             lambda m=model, meth=meth: run_numpyro(m, method=meth, **opts)))
            for jit in filter(None, args.pyro_jit.split(",")):
                runs.append((f"pyro[jit={jit}]",
                             lambda m=model, jit=jit: run_pyro(m, jit_compile=jit == "1",
                                                               **opts)))
        for name, fn in runs:
            try:
                row = fn()
            except ImportError as err:
                print(f"  {name} {model}: skipped ({err})")
                continue
            rows.append(row)
            print(_format(row), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print("\n" + table(rows))
    return rows


def _format(r):
    return (f"{r['model']:>20} {r['sampler']:>13}  wall {r['wall_s']:7.1f} s  min ESS "
            f"{r['min_ess']:7.0f}  ESS/s {r['ess_per_s']:7.1f}  us/grad {r['us_per_grad']:8.1f}"
            f"  us/leapfrog {r['us_per_leapfrog']:8.1f}  div {r['divergences']}")


def table(rows):
    head = (f"{'model':>20} {'sampler':>13} {'wall s':>8} {'min ESS':>8} {'ESS/s':>8} "
            f"{'us/grad':>9} {'us/leapfrog':>12} {'div':>4}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['model']:>20} {r['sampler']:>13} {r['wall_s']:8.1f} {r['min_ess']:8.0f} "
                     f"{r['ess_per_s']:8.1f} {r['us_per_grad']:9.1f} {r['us_per_leapfrog']:12.1f} "
                     f"{r['divergences']:>4}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
