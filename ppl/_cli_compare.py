"""``python -m ppl compare FILE.py[:MODEL]``: load a model file and run :func:`ppl.compare`."""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import signal
import sys
import threading

import numpy as np

from ppl import handlers, ops
from ppl._state import use_backend
from ppl.backends import BACKENDS
from ppl.comparison import STATUSES, WarmUp, check_backends, compare, load_reference
from ppl.comparison._ahead import WARM_UP_ITERATIONS
from ppl.comparison._runs import run_backend

__all__ = ["add_parser", "run"]


class BadInput(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


_EPILOG = """\
exit status:
  0  the backends (and the reference) agree on every element
  1  they do not: some element differs beyond Monte Carlo error, or did not converge
     (R-hat > 1.01 or divergences) on some backend so agreement cannot be confirmed
  2  bad input (file, model, data, options, reference; fewer than two result sets)
  3  a backend failed to run (each failure is printed with its reason)
  130 interrupted (Ctrl-C)

FILE.py may also define KERNEL_KWARGS (or NUTS_KWARGS), a dict of NUTS options, and
ALLOW_DIVERGENCES (True, or the number of divergences a backend may have and still count as
converged).

A backend whose first run compiles for long into an on-disk cache (torch) is warmed up by a
short run in a background process while the other backends run, and runs last; its line in
the table says how long the warm-up took. --sequential runs every backend here, in order."""


def add_parser(sub):
    p = sub.add_parser("compare", help="run a model on several backends and compare",
                       description="Run FILE.py's model with NUTS on several backends and judge, "
                                   "element by element, whether the posteriors agree within "
                                   "Monte Carlo error (mean, sd, 5%% and 95%% quantiles).",
                       epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", help="FILE.py or FILE.py:MODEL (default model name: 'model')")
    p.add_argument("--backends", default=None,
                   help="comma-separated backend names (default: every installed backend)")
    p.add_argument("--num-warmup", type=int, default=1000)
    p.add_argument("--num-samples", type=int, default=1000)
    p.add_argument("--num-chains", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--alpha", type=float, default=0.01,
                   help="family-wise error rate of the verdict (default 0.01)")
    p.add_argument("--reference", default=None, metavar="REF.json",
                   help="reference posterior: posteriordb-style means and sds (Stan's 1-based "
                        "names, e.g. theta[1]), posteriordb draws, or an .npz of site draws")
    p.add_argument("--plot", default=None, metavar="OUT.png",
                   help="write marginal posteriors of every element (OUT.png, OUT-2.png, ... "
                        "when long), OUT-forest.png and OUT-ess.png")
    p.add_argument("--json", default=None, metavar="OUT.json",
                   help="write the full report (every element and test) as JSON")
    p.add_argument("--html", default=None, metavar="OUT.html",
                   help="write one self-contained HTML page (tables and plots)")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.add_argument("--sequential", action="store_true",
                   help="no warm-up runs in background processes: every backend runs in this "
                        "process, in the order given, alone on the CPU")
    # the warm-up run itself (in the background process: ppl.comparison._ahead)
    p.add_argument("--warm-up", default=None, metavar="BACKEND", help=argparse.SUPPRESS)
    p.set_defaults(func=run)
    return p


def _load(target: str):
    path, _, name = target.partition(":")
    name = name or "model"
    if not path.endswith(".py"):
        raise BadInput(f"expected FILE.py or FILE.py:MODEL, got {target!r}")
    if not os.path.isfile(path):
        raise BadInput(f"no such file: {path}")
    spec = importlib.util.spec_from_file_location(
        f"_ppl_compare_{os.path.basename(path)[:-3]}", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # noqa: BLE001 - user file: one-line report
        raise BadInput(f"{path} failed to import: {type(err).__name__}: {err}") from err
    finally:
        sys.path.pop(0)
    model = getattr(module, name, None)
    if model is None or not callable(model):
        raise BadInput(f"{path} defines no model function named {name!r} "
                       f"(pass FILE.py:NAME to pick another)")
    data_fn = getattr(module, "data", None)
    try:
        data = data_fn() if callable(data_fn) else {}
    except Exception as err:  # noqa: BLE001
        raise BadInput(f"{path}: data() failed: {type(err).__name__}: {err}") from err
    if not isinstance(data, dict):
        raise BadInput(f"{path}: data() must return a dict of keyword arguments, "
                       f"got {type(data).__name__}")
    try:
        inspect.signature(model).bind(**data)
    except TypeError as err:
        raise BadInput(f"{path}: data() does not fit {name}(): {err}") from err
    kernel_kwargs = getattr(module, "KERNEL_KWARGS", None) or getattr(module, "NUTS_KWARGS", {})
    allow = getattr(module, "ALLOW_DIVERGENCES", 0)
    max_divergences = 2**62 if allow is True else int(allow)
    return model, data, dict(kernel_kwargs or {}), max_divergences


def _preflight(model, data, dtype) -> dict[str, tuple]:
    """Run the model once (numpy backend) so data that does not fit fails here, clearly;
    returns the shapes of its latent and deterministic sites."""
    with use_backend("numpy", dtype=dtype):
        kwargs = {k: ops.asarray(np.asarray(v)) if hasattr(v, "__array__") else v
                  for k, v in data.items()}
        try:
            tr = handlers.trace(handlers.seed(model, rng_seed=0)).get_trace(**kwargs)
        except Exception as err:  # noqa: BLE001
            raise BadInput(f"the model fails on its data: {type(err).__name__}: {err}") from err
    return {name: tuple(ops.shape(site["value"])) for name, site in tr.items()
            if (site["type"] == "sample" and not site["is_observed"])
            or site["type"] == "deterministic"}


def _reference(path, sites):
    try:
        ref = load_reference(path).bind(sites)
    except ValueError as err:
        raise BadInput(str(err)) from err
    if ref.unmatched:
        raise BadInput(f"reference {path}: {', '.join(ref.unmatched[:6])} name no element of the "
                       f"model (its sites: {', '.join(sites)}; names are Stan-style, 1-based)")
    return ref


def _write_outputs(report, args):
    if args.plot:
        root, _ = os.path.splitext(args.plot)
        paths = report.plot(args.plot) + [report.plot_forest(f"{root}-forest.png"),
                                          report.plot_ess(f"{root}-ess.png")]
        print(f"plots written to {', '.join(paths)}")
    if args.json:
        print(f"JSON written to {report.to_json(args.json)}")
    if args.html:
        print(f"HTML report written to {report.to_html(args.html)}")


def _start_warm_ups(args, names) -> dict[str, WarmUp]:
    """Warm-up runs in background processes for the backends that gain from one
    (``BACKENDS[name].warm_up_ahead``), when another backend runs meanwhile."""
    ahead = [n for n in names if BACKENDS[n].warm_up_ahead]
    if args.sequential or not ahead or len(ahead) == len(names):
        return {}
    most_warmup, most_samples = WARM_UP_ITERATIONS
    warmup, samples = min(args.num_warmup, most_warmup), min(args.num_samples, most_samples)
    return {n: WarmUp(n, [sys.executable, "-m", "ppl", "compare", args.target, "--warm-up", n,
                          "--dtype", args.dtype, "--num-chains", str(args.num_chains),
                          "--num-warmup", str(warmup), "--num-samples", str(samples),
                          "--seed", str(args.seed), "--no-progress"])
            for n in ahead}


def _warm_up(args) -> int:
    """The warm-up run (``--warm-up BACKEND``): the model on that backend, draws dropped."""
    try:
        model, data, kernel_kwargs, max_divergences = _load(args.target)
    except BadInput as err:
        print(f"ppl compare: error: {err}", file=sys.stderr)
        return 2
    run = run_backend(args.warm_up, model, (), data, dtype=args.dtype, seed=args.seed,
                      mcmc_kwargs={"num_warmup": args.num_warmup,
                                   "num_samples": args.num_samples,
                                   "num_chains": args.num_chains, "progress_bar": False},
                      kernel_kwargs=kernel_kwargs, max_divergences=max_divergences)
    if not run.ok:
        print(f"ppl compare: warm-up on {args.warm_up} failed: {run.error}", file=sys.stderr)
    return 0 if run.ok else 3


def run(args) -> int:
    if args.warm_up is not None:
        return _warm_up(args)
    warm_ups: dict[str, WarmUp] = {}
    # a SIGTERM (a timeout, CI) ends the comparison through its clean-up too: no warm-up left
    on_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminated) if on_main else None
    try:
        return _run(args, warm_ups)
    finally:
        for warm_up in warm_ups.values():
            warm_up.stop()
        if on_main:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _terminated(signum, frame):
    raise SystemExit(128 + signum)


def _run(args, warm_ups) -> int:
    try:
        names = None
        if args.backends is not None:
            names = [n.strip() for n in args.backends.split(",") if n.strip()]
        try:
            names = check_backends(names, has_reference=args.reference is not None)
        except ValueError as err:
            raise BadInput(str(err).replace("backends=", "--backends ").replace(
                "reference=...", "--reference FILE")) from err
        for flag in ("num_warmup", "num_samples", "num_chains"):
            if getattr(args, flag) < (0 if flag == "num_warmup" else 1):
                raise BadInput(f"--{flag.replace('_', '-')} must be positive")
        if not 0.0 < args.alpha < 1.0:
            raise BadInput(f"--alpha must be in (0, 1), got {args.alpha}")
        model, data, kernel_kwargs, max_divergences = _load(args.target)
        warm_ups.update(_start_warm_ups(args, names))
        sites = _preflight(model, data, args.dtype)
        reference = _reference(args.reference, sites) if args.reference else None
    except BadInput as err:
        print(f"ppl compare: error: {err}", file=sys.stderr)
        return 2
    try:
        report = compare(model, backends=names, num_warmup=args.num_warmup,
                         num_samples=args.num_samples, num_chains=args.num_chains,
                         seed=args.seed, dtype=args.dtype, progress_bar=not args.no_progress,
                         alpha=args.alpha, kernel_kwargs=kernel_kwargs, reference=reference,
                         max_divergences=max_divergences, warm_ups=warm_ups, **data)
    except KeyboardInterrupt:
        print("ppl compare: interrupted", file=sys.stderr)
        return 130
    print(report)
    _write_outputs(report, args)
    return STATUSES[report.status]
