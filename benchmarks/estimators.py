"""The two mass-matrix estimators of ``NUTS`` side by side, in ESS per gradient (issue 13,
point 5): ``mass_matrix_estimator="draws"`` (Stan's window variance, the default) against
``"gradients"`` (``sqrt(var(draws) / var(gradients))``, nutpie's Fisher-divergence diagonal).

Problems: the benchmark's logistic regression (N=2000, D=25) and eight schools, and the twelve
posteriordb posteriors (float64, as their conformance tests). Each runs on JAX, 4 chains of
1000 warmup + 1000 draws, per seed; reported per problem and estimator: the median over seeds
of the smallest bulk ESS over the unconstrained coordinates per 1000 gradient evaluations
(warmup included) and of the wall time, divergences over all seeds, and for the posteriordb
posteriors how many seeds pass posteriordb's reference check (``|mean - ref| <= 0.1 sd``, sd
within 20 %, R-hat < 1.01, divergences as the module allows). A posterior that needs a dense mass
matrix (diamonds) is run with a diagonal one for both estimators, since ``"gradients"`` is
diagonal only.

Usage::

    python -m benchmarks.estimators                         # all 14 problems, seeds 0 1 2
    python -m benchmarks.estimators --problems eight_schools,ark --seeds 0
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

BENCH = ("logistic_regression", "eight_schools")
ESTIMATORS = ("draws", "gradients")


def _posteriordb_modules():
    from examples.posteriordb import POSTERIORS
    return dict(POSTERIORS)            # posterior name -> module name


def _problem(name):
    """``(model, kwargs, nuts_kwargs, posterior or None, allow_divergences, dtype)``."""
    if name in BENCH:
        from benchmarks.problems import get_problems
        p = get_problems([name])[0]
        return p.model, p.args, p.kwargs, dict(p.nuts_kwargs), None, True, "float32"
    import importlib
    mod = importlib.import_module(f"examples.posteriordb.{_posteriordb_modules()[name]}")
    kw = {k: v for k, v in dict(getattr(mod, "NUTS_KWARGS", {})).items() if k != "dense_mass"}
    return mod, (), None, kw, mod.POSTERIOR, getattr(mod, "ALLOW_DIVERGENCES", False), "float64"


def run_one(name, estimator, seed, *, chains=4, warmup=1000, samples=1000, cache=None):
    """One run: ESS per 1000 gradients, wall, divergences, reference check (or None)."""
    import ppl
    from examples.posteriordb import compare_to_reference, passes
    from ppl import ops
    from ppl.diagnostics import effective_sample_size
    from ppl.inference import MCMC, NUTS

    model, args, kwargs, nuts_kw, posterior, allow, dtype = _problem(name)
    with ppl.use_backend("jax", dtype=dtype):
        if posterior is not None:
            kwargs, model = model.data(), model.model
        else:
            args = tuple(ops.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
            kwargs = {k: ops.asarray(v) if isinstance(v, np.ndarray) else v
                      for k, v in kwargs.items()}
        key = (name, estimator)
        if cache is None or key not in cache:
            mcmc = MCMC(NUTS(model, mass_matrix_estimator=estimator, **nuts_kw),
                        num_warmup=warmup, num_samples=samples, num_chains=chains,
                        progress_bar=False)
            if cache is not None:
                cache[key] = mcmc
        mcmc = cache[key] if cache is not None else mcmc
        t0 = time.perf_counter()
        mcmc.run(seed, *args, **kwargs)
        samples_ = mcmc.get_samples(group_by_chain=True)
        wall = time.perf_counter() - t0
        stats = mcmc.get_extra_fields(group_by_chain=True)
        steps = np.asarray(ops.to_numpy(stats["num_steps"]))
        div = np.asarray(ops.to_numpy(stats["diverging"]))
        ess = float(np.min(effective_sample_size(np.asarray(mcmc._result.positions, float))))
        grads = steps.sum() * (warmup + samples) / samples
        ok = None
        if posterior is not None:
            rows = compare_to_reference(posterior, samples_, divergences=div.reshape(-1),
                                        allow_divergences=allow)
            ok = passes(rows)
    return dict(problem=name, estimator=estimator, seed=seed, ess_kgrad=1000 * ess / grads,
                wall=wall, div=int(div.sum()), ok=ok, load=os.getloadavg()[0])


def table(rows) -> str:
    med = statistics.median
    lines = [f"{'problem':>40} | {'ESS/kgrad draws':>15} | {'ESS/kgrad gradients':>19} | "
             f"{'ratio':>5} | {'ref ok (draws/grads)':>20} | {'div':>7} | {'wall s':>11}"]
    for p in dict.fromkeys(r["problem"] for r in rows):
        by = {e: [r for r in rows if r["problem"] == p and r["estimator"] == e]
              for e in ESTIMATORS}
        if not all(by.values()):
            continue
        e = {k: med([r["ess_kgrad"] for r in v]) for k, v in by.items()}

        def ok(v):
            return "-" if v[0]["ok"] is None else f"{sum(bool(r['ok']) for r in v)}/{len(v)}"
        div = {k: sum(r["div"] for r in v) for k, v in by.items()}
        wall = {k: med([r["wall"] for r in v]) for k, v in by.items()}
        lines.append(
            f"{p:>40} | {e['draws']:15.1f} | {e['gradients']:19.1f} | "
            f"{e['gradients'] / e['draws']:5.2f} | "
            f"{ok(by['draws']) + ' / ' + ok(by['gradients']):>20} | "
            f"{div['draws']:3d}/{div['gradients']:<3d} | "
            f"{wall['draws']:5.1f}/{wall['gradients']:<5.1f}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--problems", help="comma separated; default: the 2 benchmark models and "
                                      "the 12 posteriordb posteriors")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--samples", type=int, default=1000)
    a = p.parse_args(argv)
    names = a.problems.split(",") if a.problems else \
        list(BENCH) + sorted(_posteriordb_modules())
    print(f"{len(names)} problems x {ESTIMATORS} x seeds {a.seeds} "
          f"(load {os.getloadavg()[0]:.1f})", flush=True)
    rows, cache = [], {}
    for name in names:
        for seed in (int(s) for s in a.seeds.split(",")):
            for est in ESTIMATORS:
                r = run_one(name, est, seed, warmup=a.warmup, samples=a.samples, cache=cache)
                rows.append(r)
                print(f"  {name:>40} {est:>9} seed {seed}: ESS/kgrad {r['ess_kgrad']:6.1f} "
                      f"div {r['div']} ref {r['ok']} wall {r['wall']:.1f}s "
                      f"(load {r['load']:.1f})", flush=True)
    print("\n" + table(rows))
    return rows


if __name__ == "__main__":
    main()
