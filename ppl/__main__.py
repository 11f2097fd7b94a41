"""The ``ppl`` command line: ``python -m ppl demo`` and ``python -m ppl compare FILE.py``."""

from __future__ import annotations

import argparse
import sys

from ppl._cli_compare import add_parser
from ppl._demo import run_demo

__all__ = ["main"]


def _demo(args) -> int:
    run_demo(args.backends.split(",") if args.backends else None, dtype=args.dtype)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="ppl", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="evaluate and differentiate a log-density on every backend")
    demo.add_argument("--backends", default=None, help="comma-separated, default: all installed")
    demo.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    demo.set_defaults(func=_demo)
    add_parser(sub)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:   # Ctrl-C: the sampler printed where it stopped
        print("ppl: interrupted.", file=sys.stderr)
        return 130              # the shell's status for SIGINT (128 + 2)


if __name__ == "__main__":
    sys.exit(main())
