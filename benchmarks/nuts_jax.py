"""NUTS on JAX: ppl against NumPyro (parallel and vectorized), BlackJAX and nutpie, in one
process on the same data.

Every runner (:mod:`benchmarks.runners`; more with ``--modules benchmarks.torch_numpy``) samples
each problem (:mod:`benchmarks.problems`) once per seed, runners interleaved within a seed so the
machine's load hits them alike (which runner goes first, paying JAX's one-off eager programs for the
problem's shapes, rotates from problem to problem). Per runner and problem it prints the medians
over seeds of: wall time (setup, compilation, warmup and sampling, as a user sees it), compile time
(JAX's trace + lowering + XLA compile events; first seed / later seeds), ESS/s (smallest bulk ESS
over the unconstrained coordinates / wall), ESS per 1000 gradient evaluations, time per gradient
(wall / gradients of all chains), and ESS/s relative to the best non-ppl runner, over all seeds and
for the first (cold) run alone. A second table sets the time per leapfrog step of each runner that
reuses its compiled programs (a later seed's wall over the gradients of one chain: a step of the
whole batch of chains) beside the *floor* (:func:`floor_us`: one batched ``value_and_grad`` of ppl's
log density, all chains, inside a compiled loop; issue 13's point 3). Runners reuse what a user
would reuse between runs in one process (ppl and BlackJAX their compiled programs; NumPyro compiles
every run). The load (``os.getloadavg``) is printed beside the figures.

JAX gets ``--devices`` host devices (default 4, for NumPyro's ``parallel``), set before JAX
starts; ppl's default then spreads its chains over them. ppl's on-disk cache of compiled programs
is off (``PPL_CACHE_DIR=0`` unless set): it is JAX's setting, so it would serve the peers'
later compiles too, and a second process would find the first one's programs
(``benchmarks.first_compile --again`` measures what it saves).

Usage::

    python -m benchmarks.nuts_jax --quick     # 2 problems, 3 seeds, 500+500: ~5 min on 2 idle cores
    python -m benchmarks.nuts_jax --full      # 2 + 5 posteriordb, 3 seeds, 1000+1000: ~8 min
    python -m benchmarks.nuts_jax --problems eight_schools --runners ppl,numpyro-parallel
    python -m benchmarks.nuts_jax --scale     # logistic D=100, N=1e3/1e4/1e5: us/grad, memory
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import statistics
import sys
import time

import numpy as np

QUICK_PROBLEMS = "logistic_regression,eight_schools"
FULL_PROBLEMS = ("logistic_regression,eight_schools,kidiq_kidscore_momiq,"
                 "mesquite_logmesquite_logvolume,ark,garch11,earnings_logearn_interaction_z")
DEFAULT_RUNNERS = "ppl,ppl-vectorized,numpyro-parallel,numpyro-vectorized,blackjax,nutpie"


def _set_devices(n):
    """``n`` JAX host devices (``0``: ppl's choice, one per core), and the XLA flags ppl sets
    when it starts JAX (small loops as one kernel, ``ppl.backends.common.xla_flags``), here
    before any runner: they are process-wide, so every runner, peers included, compiles with
    them."""
    import jax

    from ppl.backends.jax.compile import use_small_loop_kernels
    if n:
        jax.config.update("jax_num_cpu_devices", n)
    use_small_loop_kernels()


class PausableClock:
    """A clock that does not count while :meth:`paused` (a runner preparing its inputs,
    ``Config.untimed``); subclasses test ``self._paused``."""

    _paused = 0

    @contextlib.contextmanager
    def paused(self):
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1


class CompileClock(PausableClock):
    """Seconds JAX spends tracing, lowering and compiling (``jax.monitoring`` events)."""

    EVENTS = ("/jax/core/compile/jaxpr_trace_duration",
              "/jax/core/compile/jaxpr_to_mlir_module_duration",
              "/jax/core/compile/backend_compile_duration")

    def __init__(self):
        import jax
        self.total = 0.0
        jax.monitoring.register_event_duration_secs_listener(self._listen)

    def _listen(self, event, duration, **_):
        if event in self.EVENTS and not self._paused:
            self.total += duration


def min_ess(draws) -> float:
    from ppl.diagnostics import effective_sample_size
    if isinstance(draws, dict):
        return float(min(np.min(effective_sample_size(np.asarray(v, float)))
                         for v in draws.values()))
    return float(np.min(effective_sample_size(np.asarray(draws, float))))


def load():
    return "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def floor_us(problem, chains, dtype="float32", seconds=0.3) -> float:
    """Microseconds per batched ``value_and_grad`` of ppl's JAX log density (``chains`` points
    at ppl's starting points) inside a compiled ``fori_loop``: the least a leapfrog step of
    the batch can cost. Each step moves the points by a tiny gradient step, so XLA cannot hoist
    the gradient out of the loop; the loop length is set for ~``seconds`` of work, best of 3."""
    import jax
    import jax.numpy as jnp

    from benchmarks.problems import potential
    logdensity, init, _ = potential(problem, 0, chains, dtype)
    value_and_grad = jax.vmap(jax.value_and_grad(logdensity))

    @jax.jit
    def loop(q, n):
        def body(_, carry):
            q, total = carry
            value, grad = value_and_grad(q)
            return q + 1e-6 * grad, total + value
        return jax.lax.fori_loop(0, n, body, (q, jnp.zeros(q.shape[0], q.dtype)))

    q = jnp.asarray(init, dtype)

    def timed(n):
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            jax.block_until_ready(loop(q, n))
            best = min(best, time.perf_counter() - t)
        return best

    jax.block_until_ready(loop(q, 1))                   # compile
    n = max(100, int(seconds / max(timed(100) / 100, 1e-8)))
    return 1e6 * timed(n) / n


def run(problems, runners, seeds, cfg_kw, out, floors=None):
    """Every runner on every problem and seed: a row each (see the module docstring).
    ``floors``, when given, a dict filled with each problem's :func:`floor_us`."""
    import jax

    from benchmarks.runners import RUNNERS, Config
    jax.jit(lambda v: v + 1)(1.0)          # XLA's one-off start-up, outside every runner
    clock = CompileClock()
    rows = []
    for i, problem in enumerate(problems):
        # the runner that goes first on a problem pays JAX's one-off eager programs for its
        # shapes (the runners after it find them compiled): the first place rotates
        order = list(runners[i % len(runners):]) + list(runners[:i % len(runners)])
        if floors is not None:
            floors[problem.name] = floor_us(problem, cfg_kw["chains"])
            print(f"  {problem.name:>22} floor: {floors[problem.name]:.2f} us per batched "
                  f"value_and_grad ({load()})", file=out, flush=True)
        cfgs = {r: Config(**cfg_kw, untimed=clock.paused) for r in runners}
        for seed in seeds:
            for r in order:
                before = clock.total
                try:
                    res = RUNNERS[r](problem, seed, cfgs[r])
                except ImportError as err:
                    print(f"  {r}: skipped ({err})", file=out)
                    continue
                ess = min_ess(res.draws)
                row = dict(problem=problem.name, runner=r, seed=seed, wall=res.wall,
                           compile=clock.total - before, ess=ess, ess_s=ess / res.wall,
                           ess_kgrad=1000 * ess / max(res.grads, 1),
                           us_grad=1e6 * res.wall / max(res.grads, 1), div=res.divergences,
                           us_step=1e6 * max(res.wall - (clock.total - before), 0.0)
                           / max(res.grads / cfg_kw["chains"], 1),
                           load=os.getloadavg()[0])
                rows.append(row)
                print(f"  {problem.name:>22} {r:>18} seed {seed}: wall {res.wall:6.2f}s "
                      f"compile {row['compile']:5.2f}s ESS/s {row['ess_s']:7.1f} "
                      f"ESS/kgrad {row['ess_kgrad']:5.1f} div {res.divergences} ({load()})",
                      file=out, flush=True)
    return rows


def _by_problem_and_runner(rows) -> dict:
    """``{problem: {runner: [rows, seed order]}}``, problems in the order they first appear,
    runners in the order they first appear in all rows (the same for every problem, whichever
    ran first on it)."""
    rank: dict = {}
    for r in rows:
        rank.setdefault(r["runner"], len(rank))
    out: dict = {}
    for r in sorted(rows, key=lambda r: rank[r["runner"]]):       # stable: seed order kept
        out.setdefault(r["problem"], {}).setdefault(r["runner"], []).append(r)
    return {p: out[p] for p in dict.fromkeys(r["problem"] for r in rows)}


def table(rows) -> str:
    med = statistics.median
    lines = [f"{'problem':>22} {'runner':>18} {'wall s':>7} {'compile s':>11} {'ESS/s':>8} "
             f"{'ESS/kgrad':>9} {'us/grad':>8} {'vs best peer':>12} {'first run':>9} {'div':>4} "
             f"{'load':>5}"]
    for p, by in _by_problem_and_runner(rows).items():
        ess_s = {k: med([r["ess_s"] for r in v]) for k, v in by.items()}
        peers = [v for k, v in ess_s.items() if not k.startswith("ppl")]
        best = max(peers) if peers else float("nan")
        first = {k: v[0]["ess_s"] for k, v in by.items()}      # the cold run, compile included
        best_first = max((v for k, v in first.items() if not k.startswith("ppl")),
                         default=float("nan"))
        for k, v in by.items():
            comp = f"{v[0]['compile']:.1f}/{med([r['compile'] for r in v[1:]] or [0]):.1f}"
            lines.append(
                f"{p:>22} {k:>18} {med([r['wall'] for r in v]):7.2f} {comp:>11} "
                f"{ess_s[k]:8.1f} {med([r['ess_kgrad'] for r in v]):9.1f} "
                f"{med([r['us_grad'] for r in v]):8.1f} {ess_s[k] / best:12.2f} "
                f"{first[k] / best_first:9.2f} "
                f"{sum(r['div'] for r in v):4d} {med([r['load'] for r in v]):5.1f}")
    return "\n".join(lines)


def step_table(rows, floors) -> str:
    """Time per leapfrog step of the batch against the floor, per problem and runner: medians
    over the later seeds of runners that reuse their compiled programs (ppl, BlackJAX).
    Runners that compile on every run (NumPyro) are left out: JAX's compile events of a
    ``pmap`` overlap its run, so their wall less compile is not their sampling time (NumPyro
    ``parallel`` on eight schools read 9 us per step so, against 20 us measured as the extra
    wall of 3000 over 300 iterations, where ppl's was 13 us)."""
    med = statistics.median
    lines = [f"{'problem':>22} {'floor us':>9} {'runner':>18} {'us/step':>8} {'x floor':>8}"]
    for p, by in _by_problem_and_runner(rows).items():
        floor = floors.get(p, float("nan"))
        for k, v in by.items():
            warm = [r for r in v[1:] if r["compile"] < 0.05 * r["wall"]]
            if not warm:
                continue
            step = med([r["us_step"] for r in warm])
            lines.append(f"{p:>22} {floor:9.2f} {k:>18} {step:8.2f} {step / floor:8.1f}")
    return "\n".join(lines)


def scale(out, chains=4, warmup=300, samples=300, chain_method=None, devices=4):
    """Time per gradient and peak memory (RSS high-water mark of this process, which grows
    monotonically: each row runs in a fresh process via ``--scale-one``)."""
    import subprocess
    for n in (1_000, 10_000, 100_000):
        cmd = [sys.executable, "-m", "benchmarks.nuts_jax", "--scale-one", str(n),
               "--chains", str(chains), "--warmup", str(warmup), "--samples", str(samples),
               "--devices", str(devices)] + (["--chain-method", chain_method] if chain_method
                                             else [])
        print(subprocess.run(cmd, capture_output=True, text=True).stdout.strip(), file=out,
              flush=True)


def scale_one(n, cfg_kw, chain_method=None):
    """One row of :func:`scale`: the run's peak RSS, and its growth over the process's RSS
    before the run (JAX, XLA and the data already loaded), against the data and the draws.

    The data are made in float32 (no float64 temporaries to set the high-water mark before the
    run) and handed over as JAX arrays, the NumPy copies dropped: the caller holds one copy."""
    import resource

    import jax

    import ppl
    from benchmarks.problems import get_problems, logistic_data
    from benchmarks.runners import RUNNERS, Config, _ppl
    from ppl import ops

    def rss_mb():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    d = 100
    x, y = logistic_data(n, d, dtype=np.float32)
    with ppl.use_backend("jax", dtype="float32"):
        x, y = ops.asarray(x), ops.asarray(y)
    problem = get_problems(["logistic_N10_D100"])[0]     # its model, with the data above
    problem = problem._replace(name=f"logistic_N{n}_D{d}", args=(x,), kwargs={"y": y})
    jax.jit(lambda v: v + 1)(1.0)                  # XLA started: part of the baseline
    cfg = Config(**cfg_kw)
    before = rss_mb()
    if chain_method is None:
        res = RUNNERS["ppl"](problem, 0, cfg)
    else:
        res = _ppl(problem, 0, cfg, chain_method=chain_method)
    peak = rss_mb()
    data_mb = (n * d + n) * 4 / 2**20
    draws_mb = cfg.chains * cfg.samples * (d + 1) * 4 / 2**20
    print(f"N={n:>7} D={d}: {1e6 * res.wall / res.grads:8.1f} us/grad (wall {res.wall:.1f}s, "
          f"{res.grads:.0f} grads), peak RSS {peak:6.0f} MB, of which the run {peak - before:6.0f}"
          f" MB; float32 data {data_mb:.1f} MB + draws {draws_mb:.1f} MB "
          f"({chain_method or 'default'} chains, {load()})")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--full", action="store_true")
    p.add_argument("--problems")
    p.add_argument("--runners", default=DEFAULT_RUNNERS)
    p.add_argument("--modules", default="", help="extra runner modules, comma separated")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--warmup", type=int)
    p.add_argument("--samples", type=int)
    p.add_argument("--devices", type=int, default=4, help="JAX host devices")
    p.add_argument("--scale", action="store_true")
    p.add_argument("--scale-one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--chain-method", help="ppl's chain_method in --scale (default: ppl's choice)")
    p.add_argument("--json")
    a = p.parse_args(argv)
    # ppl keeps JAX's compiled programs on disk between processes (backends/jax/cache.py) and
    # the setting is JAX's, process-wide: off here unless asked for, so that every sampler,
    # peers included, compiles as in a process of its own on a machine that never ran it
    os.environ.setdefault("PPL_CACHE_DIR", "0")
    _set_devices(a.devices)
    n = 500 if a.quick else 1000
    cfg_kw = dict(chains=a.chains, warmup=a.warmup or n, samples=a.samples or n)
    if a.scale_one:
        return scale_one(a.scale_one, cfg_kw, a.chain_method)
    if a.scale:
        return scale(sys.stdout, chain_method=a.chain_method, devices=a.devices)
    for m in filter(None, a.modules.split(",")):
        importlib.import_module(m)
    from benchmarks.problems import get_problems
    problems = get_problems((a.problems or (FULL_PROBLEMS if a.full else QUICK_PROBLEMS))
                            .split(","))
    runners = a.runners.split(",")
    print(f"{len(problems)} problems x {len(runners)} runners x {a.seeds} seeds, {cfg_kw}, "
          f"{a.devices} JAX host devices, {os.cpu_count()} cores, {load()}, "
          f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}", flush=True)
    t0 = time.perf_counter()
    floors = {}
    rows = run(problems, runners, list(range(a.seeds)), cfg_kw, sys.stdout, floors)
    print(f"\n{table(rows)}\n\nPer leapfrog step of the batch of {a.chains} chains (later seeds' "
          f"wall; runners that reuse their programs) against the floor:\n"
          f"{step_table(rows, floors)}\n\n"
          f"({time.perf_counter() - t0:.0f} s, {load()})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
