"""``python -m ppl compare FILE.py[:MODEL]``: load a model file and run :func:`ppl.compare`."""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys

import numpy as np

from ppl import handlers, ops
from ppl._state import use_backend
from ppl.backends import BACKENDS
from ppl.comparison import compare

__all__ = ["add_parser", "run"]


class BadInput(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


def add_parser(sub):
    p = sub.add_parser("compare", help="run a model on several backends and compare",
                       description="Run FILE.py's model with NUTS on several backends and "
                                   "compare. Exit 0 when they agree, 1 when not, 2 on bad input.")
    p.add_argument("target", help="FILE.py or FILE.py:MODEL (default model name: 'model')")
    p.add_argument("--backends", default=None,
                   help="comma-separated backend names (default: every installed backend)")
    p.add_argument("--num-warmup", type=int, default=1000)
    p.add_argument("--num-samples", type=int, default=1000)
    p.add_argument("--num-chains", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--plot", default=None, metavar="OUT.png", help="write marginal-posterior plot")
    p.add_argument("--json", default=None, metavar="OUT.json", help="write the report as JSON")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
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
    kernel_kwargs = dict(getattr(module, "KERNEL_KWARGS", {}) or {})
    return model, data, kernel_kwargs


def _preflight(model, data, dtype):
    """Run the model once (numpy backend) so data that does not fit fails here, clearly."""
    with use_backend("numpy", dtype=dtype):
        kwargs = {k: ops.asarray(np.asarray(v)) if hasattr(v, "__array__") else v
                  for k, v in data.items()}
        try:
            handlers.trace(handlers.seed(model, rng_seed=0)).get_trace(**kwargs)
        except Exception as err:  # noqa: BLE001
            raise BadInput(f"the model fails on its data: {type(err).__name__}: {err}") from err


def run(args) -> int:
    try:
        names = None
        if args.backends:
            names = [n.strip() for n in args.backends.split(",") if n.strip()]
            unknown = [n for n in names if n not in BACKENDS]
            if unknown:
                raise BadInput(f"unknown backend(s) {', '.join(unknown)}; known: "
                               f"{', '.join(BACKENDS)}")
        for flag in ("num_warmup", "num_samples", "num_chains"):
            if getattr(args, flag) < (0 if flag == "num_warmup" else 1):
                raise BadInput(f"--{flag.replace('_', '-')} must be positive")
        model, data, kernel_kwargs = _load(args.target)
        _preflight(model, data, args.dtype)
    except BadInput as err:
        print(f"ppl compare: error: {err}", file=sys.stderr)
        return 2
    report = compare(model, backends=names, num_warmup=args.num_warmup,
                         num_samples=args.num_samples, num_chains=args.num_chains,
                         seed=args.seed, dtype=args.dtype, progress_bar=not args.no_progress,
                         kernel_kwargs=kernel_kwargs, **data)
    print(report)
    if args.plot:
        report.plot(args.plot)
        print(f"plot written to {args.plot}")
    if args.json:
        report.to_json(args.json)
        print(f"JSON written to {args.json}")
    return 0 if report.agree() else 1
