"""NUTS on ppl's torch and numpy backends beside Pyro (``jit_compile=True``), and a torch scale run.

Two posteriors (the data of :mod:`benchmarks.bench_nuts`): logistic regression (N = 2000, D = 25)
and eight schools (non-centred), float32, 1000 warmup + 1000 draws (``--quick``: 300 + 300).
Every runner returns one :class:`Run` (wall time of the whole run, compile time inside it,
smallest bulk ESS, gradient evaluations of all chains), so the rows plug into the table of
:mod:`benchmarks.bench_nuts`. Derived columns:

* ``ESS/s`` = min bulk ESS / wall; ``ESS/1k grad`` = min bulk ESS per 1000 gradients (sampler
  efficiency, independent of speed); ``us/grad`` = wall per gradient of one chain;
* ``compile`` = seconds spent compiling inside the run (ppl torch: tracing and inductor; Pyro: a
  run of one warmup and one draw, which holds its JIT trace).

Pyro's best setting here is one chain with ``jit_compile=True`` (its multi-chain mode forks
processes); its 4-chain row runs the chains one after another. The timings depend on the load of
the machine: the load average is printed with every row, compare rows of one run.

The scale run times the batched log-density gradient of 4 chains of logistic regression with
D = 100 on torch for N = 1,000 / 10,000 / 100,000, and the peak resident memory of a short NUTS
run in a fresh process beside the size of the data plus the draws.

Usage::

    python -m benchmarks.torch_numpy --quick        # 300 + 300, both models
    python -m benchmarks.torch_numpy --full         # 1000 + 1000, both models, + scale run
    python -m benchmarks.torch_numpy --samplers torch4,pyro1 --models eight_schools
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np

from benchmarks.bench_nuts import (
    eight_schools_data,
    logistic_data,
    min_ess,
    ppl_models,
    pyro_problem,
)

MODELS = ("logistic_regression", "eight_schools")


class Run(NamedTuple):
    """What a runner measures."""

    wall: float        # seconds, whole run (setup, compile, warmup, sampling)
    compile: float     # seconds of it spent compiling
    min_ess: float     # smallest bulk ESS over all parameters
    grads: float       # gradient evaluations of all chains (warmup + sampling)


def _ppl_args(model_name, ops):
    if model_name == "logistic_regression":
        x, y = logistic_data()
        return (ops.asarray(x),), {"y": ops.asarray(y)}
    y, sigma = eight_schools_data()
    return (ops.asarray(sigma),), {"y": ops.asarray(y)}


def run_ppl(backend, model_name, *, chains, warmup, samples, dtype="float32", seed=0) -> Run:
    """ppl's NUTS with its defaults (vectorized chains) on ``backend``."""
    import ppl
    from ppl import ops
    from ppl.inference import MCMC, NUTS

    compile_seconds = _compile_clock(backend)
    with ppl.use_backend(backend, dtype=dtype):
        args, kwargs = _ppl_args(model_name, ops)
        mcmc = MCMC(NUTS(ppl_models()[model_name]), num_warmup=warmup, num_samples=samples,
                    num_chains=chains, progress_bar=False)
        c0, t0 = compile_seconds(), time.perf_counter()
        mcmc.run(seed, *args, **kwargs)
        draws = {k: np.asarray(ops.to_numpy(v))
                 for k, v in mcmc.get_samples(group_by_chain=True).items()}
        wall, compiled = time.perf_counter() - t0, compile_seconds() - c0
        steps = np.asarray(ops.to_numpy(mcmc.get_extra_fields()["num_steps"]))
    # only sampling-phase steps are recorded: scale to warmup + sampling
    grads = float(steps.sum()) * (warmup + samples) / samples
    return Run(wall, compiled, min_ess(draws), grads)


def _compile_clock(backend):
    if backend == "torch":
        from ppl.backends.torch.tracing import compile_seconds
        return compile_seconds
    return lambda: 0.0


def run_pyro(model_name, *, chains, warmup, samples, seed=0) -> Run:
    """Pyro's NUTS, ``jit_compile=True``, chains one after another in this process."""
    import pyro
    import pyro.ops.integrator as integrator
    import torch
    from pyro.infer import MCMC, NUTS

    torch.set_default_dtype(torch.float32)

    model, args = pyro_problem(model_name)
    # count gradients: velocity_verlet looks potential_grad up in its module at each step
    count = [0]
    original = integrator.potential_grad

    def counted(*a, **k):
        count[0] += 1
        return original(*a, **k)

    def one_chain(seed, w, n):
        pyro.set_rng_seed(seed)
        mcmc = MCMC(NUTS(model, jit_compile=True, ignore_jit_warnings=True), num_samples=n,
                    warmup_steps=w, num_chains=1, disable_progbar=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mcmc.run(*args)
        return {k: v.detach().numpy() for k, v in mcmc.get_samples().items()}

    t0 = time.perf_counter()
    one_chain(0, 1, 1)
    compiled = time.perf_counter() - t0
    integrator.potential_grad = counted
    try:
        t0 = time.perf_counter()
        draws = [one_chain(seed * chains + c, warmup, samples) for c in range(chains)]
        wall = time.perf_counter() - t0
    finally:
        integrator.potential_grad = original
    stacked = {k: np.stack([d[k] for d in draws]) for k in draws[0]}
    return Run(wall, compiled, min_ess(stacked), float(count[0]))


SAMPLERS = {
    "torch4": ("ppl torch, 4 chains", lambda m, o: run_ppl("torch", m, chains=4, **o)),
    "torch1": ("ppl torch, 1 chain", lambda m, o: run_ppl("torch", m, chains=1, **o)),
    "numpy4": ("ppl numpy, 4 chains", lambda m, o: run_ppl("numpy", m, chains=4, **o)),
    "pyro1": ("Pyro jit, 1 chain", lambda m, o: run_pyro(m, chains=1, **o)),
}


def row(label, model, run: Run) -> dict:
    """The table row of one run."""
    return {"sampler": label, "model": model, "wall_s": run.wall, "compile_s": run.compile,
            "min_ess": run.min_ess, "ess_per_s": run.min_ess / run.wall,
            "ess_per_1k_grad": 1000 * run.min_ess / max(run.grads, 1),
            "us_per_grad": 1e6 * run.wall / max(run.grads, 1), "load": os.getloadavg()[0]}


def format_table(rows) -> str:
    head = ("| model | sampler | wall s | compile s | min ESS | ESS/s | ESS/1k grad | us/grad "
            "| load |\n|---|---|---|---|---|---|---|---|---|")
    lines = [f"| {r['model']} | {r['sampler']} | {r['wall_s']:.1f} | {r['compile_s']:.1f} | "
             f"{r['min_ess']:.0f} | {r['ess_per_s']:.1f} | {r['ess_per_1k_grad']:.1f} | "
             f"{r['us_per_grad']:.0f} | {r['load']:.1f} |" for r in rows]
    return "\n".join([head] + lines)


# ------------------------------------------------------------------------------ scale
_SCALE_CHILD = r"""
import json, resource, sys, time
import numpy as np
import ppl, ppl.distributions as dist
from ppl import ops
from ppl.inference import MCMC, NUTS
n, d, chains, steps = (int(a) for a in sys.argv[1:5])
rng = np.random.default_rng(0)
x = rng.standard_normal((n, d), dtype=np.float32)   # float32 directly: no float64 temporary
y = (rng.uniform(size=n) < 0.5).astype(np.float32)
def model(x, y=None):
    beta = ppl.sample("beta", dist.Normal(0.0, 1.0).expand((x.shape[1],)).to_event(1))
    with ppl.plate("N", x.shape[0]):
        ppl.sample("y", dist.Bernoulli(logits=ops.matmul(x, beta)), obs=y)
with ppl.use_backend("torch", dtype="float32"):
    xs, ys = ops.asarray(x), ops.asarray(y)
    del x, y                                  # the run's caller holds one copy of the data
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    mcmc = MCMC(NUTS(model), num_warmup=steps, num_samples=steps, num_chains=chains,
                progress_bar=False)
    t0 = time.perf_counter()
    mcmc.run(0, xs, y=ys)
    wall = time.perf_counter() - t0
    grads = float(ops.to_numpy(mcmc.get_extra_fields()["num_steps"]).sum()) * 2
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"wall": wall, "grads": grads, "base_kb": base, "peak_kb": peak}))
"""


def scale_run(sizes=(1_000, 10_000, 100_000), d=100, chains=4, steps=100) -> list:
    """Time per gradient and peak memory of torch logistic regression, one process per N."""
    out = []
    for n in sizes:
        res = subprocess.run([sys.executable, "-c", _SCALE_CHILD, str(n), str(d), str(chains),
                              str(steps)], capture_output=True, text=True, check=True)
        r = json.loads(res.stdout.strip().splitlines()[-1])
        data_mb = (n * d + n) * 4 / 2**20
        draws_mb = chains * steps * d * 4 / 2**20
        out.append({"N": n, "D": d, "us_per_grad": 1e6 * r["wall"] / max(r["grads"], 1),
                    "peak_mb": r["peak_kb"] / 1024, "growth_mb": (r["peak_kb"] - r["base_kb"])
                    / 1024, "data_plus_draws_mb": data_mb + draws_mb,
                    "load": os.getloadavg()[0]})
        print(out[-1], flush=True)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="300 warmup + 300 draws (default)")
    size.add_argument("--full", action="store_true", help="1000 + 1000, and the scale run")
    p.add_argument("--samplers", default=",".join(SAMPLERS), help=",".join(SAMPLERS))
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--scale", action="store_true", help="the torch scale run (on with --full)")
    p.add_argument("--no-scale", action="store_true", help="no scale run, even with --full")
    p.add_argument("--json", help="write the rows to this file")
    p.add_argument("--seed", type=int, default=0, help="seed of every run (default 0)")
    args = p.parse_args(argv)
    n = 1000 if args.full else 300
    opts = dict(warmup=n, samples=n, seed=args.seed)
    rows = []
    for model in args.models.split(","):
        for name in args.samplers.split(","):
            label, runner = SAMPLERS[name]
            rows.append(row(label, model, runner(model, opts)))
            print(format_table(rows[-1:]).splitlines()[-1], flush=True)
    print("\n" + format_table(rows))
    scale = scale_run() if (args.scale or args.full) and not args.no_scale else []
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "scale": scale}, indent=1))
    return rows, scale


if __name__ == "__main__":
    main()
