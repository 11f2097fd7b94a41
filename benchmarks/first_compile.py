"""First-run compile in CPU seconds: one runner, one problem, a cold process (issue 13, point 4).

Each measurement is a fresh Python process that runs one runner of :mod:`benchmarks.runners` once
(no warm-up program of its own, so XLA's one-off start-up is paid as a user pays it) and prints
JSON: CPU seconds spent inside JAX's compile events (tracing, lowering to MLIR, XLA compile;
``time.process_time``, all threads, so the machine's load barely moves it; nested events counted
once), the same in wall seconds, the number of compiled programs, the run's wall time, ESS per
1000 gradients and microseconds per gradient, and the costliest programs by name. The driver
alternates the runners over ``--rounds`` fresh processes each, so a change in load hits them
alike, and prints the per-runner medians.

ppl's processes start with an empty on-disk cache of compiled programs (its own temporary
``PPL_CACHE_DIR``: the first run on a machine, which writes the cache, as a user's does), the
peers' with none (``0``: the setting is JAX's and would serve them too). A peer that samples
ppl's log density of a posteriordb problem gets it and ppl's starting points outside the clock
(``Config.untimed``): ppl's start program is ppl's cost. With ``--again`` each
ppl process is followed by a second one on the same cache, ``"<runner> again"`` in the table: a
script run a second time.

Usage::

    python -m benchmarks.first_compile --problems eight_schools,logistic_regression \\
        --runners ppl,numpyro-parallel --rounds 3
    python -m benchmarks.first_compile --problems kidiq_kidscore_momiq --again --rounds 2
    python -m benchmarks.first_compile --one ppl eight_schools      # one cold process, JSON
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

from benchmarks.nuts_jax import CompileClock, PausableClock, _set_devices, load, min_ess


class CpuCompileClock(PausableClock):
    """CPU and wall seconds inside JAX's compile events (``jax.monitoring``: a scalar at an
    event's start, its duration at the end)."""

    EVENTS = CompileClock.EVENTS

    def __init__(self):
        import jax
        self.cpu = 0.0
        self.wall = 0.0
        self.compiles = 0
        self.by_name = defaultdict(float)
        self._open = []
        jax.monitoring.register_scalar_listener(self._start)
        jax.monitoring.register_event_duration_secs_listener(self._end)

    def _start(self, event, value, **_):
        if event in self.EVENTS:
            self._open.append((event, time.process_time()))

    def _end(self, event, duration, fun_name="?", **_):
        if event not in self.EVENTS:
            return
        while self._open:
            name, t0 = self._open.pop()
            if name == event:
                break
        else:
            return
        if self._open or self._paused:    # nested: counted by the outer one; or untimed
            return
        cpu = time.process_time() - t0
        self.cpu += cpu
        self.wall += duration
        self.compiles += event == self.EVENTS[2]
        self.by_name[f"{event.rsplit('/', 1)[1][:5]} {fun_name}"] += cpu


def one(runner, problem_name, warmup, samples, chains, devices):
    os.environ.setdefault("PPL_CACHE_DIR", "0")     # (the driver passes one)
    _set_devices(devices)
    from benchmarks.problems import get_problems
    from benchmarks.runners import RUNNERS, Config
    problem = get_problems([problem_name])[0]
    clock = CpuCompileClock()
    cpu0 = time.process_time()
    res = RUNNERS[runner](problem, 0, Config(chains=chains, warmup=warmup, samples=samples,
                                             untimed=clock.paused))
    ess = min_ess(res.draws)
    top = sorted(clock.by_name.items(), key=lambda kv: -kv[1])[:20]
    return dict(runner=runner, problem=problem_name, compile_cpu=clock.cpu,
                compile_wall=clock.wall, compiles=clock.compiles, wall=res.wall,
                run_cpu=time.process_time() - cpu0, ess_kgrad=1000 * ess / max(res.grads, 1),
                us_grad=1e6 * res.wall / max(res.grads, 1), load=os.getloadavg()[0],
                top=[(k, round(v, 3)) for k, v in top])


def _print_one(problem, label, r, verbose):
    print(f"{problem:>20} {label:>18}: compile {r['compile_cpu']:5.2f} CPU s "
          f"({r['compiles']} programs, {r['compile_wall']:5.2f} s wall), run "
          f"{r['wall']:6.2f} s wall, ESS/kgrad {r['ess_kgrad']:5.1f}, "
          f"{r['us_grad']:6.1f} us/grad ({load()})", flush=True)
    if verbose:
        for name, cpu in r["top"]:
            print(f"{'':>24}{cpu:6.3f}  {name}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--one", nargs=2, metavar=("RUNNER", "PROBLEM"))
    p.add_argument("--problems", default="eight_schools,logistic_regression")
    p.add_argument("--runners", default="ppl,numpyro-parallel")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=500)
    p.add_argument("--samples", type=int, default=500)
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--devices", type=int, default=4, help="host devices (0: ppl's default, "
                   "one per core)")
    p.add_argument("--verbose", action="store_true", help="print each process's costliest "
                   "programs")
    p.add_argument("--again", action="store_true", help="after each ppl process, a second one "
                   "on the same on-disk cache")
    a = p.parse_args(argv)
    if a.one:
        print(json.dumps(one(*a.one, a.warmup, a.samples, a.chains, a.devices)))
        return
    rows = defaultdict(list)
    for problem in a.problems.split(","):
        for _ in range(a.rounds):
            for runner in a.runners.split(","):
                cmd = [sys.executable, "-m", "benchmarks.first_compile", "--one", runner,
                       problem, "--warmup", str(a.warmup), "--samples", str(a.samples),
                       "--chains", str(a.chains), "--devices", str(a.devices)]
                ppl = runner.startswith("ppl")
                with tempfile.TemporaryDirectory(prefix="ppl-jax-cache-") as cache:
                    env = {**os.environ, "PPL_CACHE_DIR": cache if ppl else "0"}
                    for label in [runner] + ([f"{runner} again"] if a.again and ppl else []):
                        out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                                             env=env).stdout
                        r = json.loads(out.strip().splitlines()[-1])
                        rows[problem, label].append(r)
                        _print_one(problem, label, r, a.verbose)
    med = statistics.median
    print("\nmedians:")
    for (problem, runner), rs in rows.items():
        print(f"{problem:>20} {runner:>18}: compile {med(r['compile_cpu'] for r in rs):5.2f} "
              f"CPU s (min {min(r['compile_cpu'] for r in rs):5.2f}), ESS/kgrad "
              f"{med(r['ess_kgrad'] for r in rs):5.1f}, {med(r['us_grad'] for r in rs):6.1f} "
              f"us/grad")


if __name__ == "__main__":
    main()
