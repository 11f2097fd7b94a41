"""Child process of test_interrupt.py: runs MCMC and reports what Ctrl-C (SIGINT sent by the
parent) left behind. Usage: ``python _interrupt_child.py BACKEND METHOD,PHASE ...``.

Writes to stderr: ``START i`` before run ``i``, the plain progress lines (stderr is a pipe), and
``RESULT i {json}`` after the ``KeyboardInterrupt``.
"""

import json
import sys
import warnings

import ppl
from ppl import ops
from ppl.inference import MCMC, NUTS
from ppl.inference.progress import Progress

Progress.LINES = 10**5          # a line every few iterations, so the parent sees each phase


def potential(z):
    return 0.5 * ops.sum(z * z)


def one(i, method, phase):
    big = 10**6
    warmup, samples = (big, 10) if phase == "warmup" else (20, big)
    mcmc = MCMC(NUTS(potential_fn=potential), num_warmup=warmup, num_samples=samples,
                num_chains=2, chain_method=method, progress_bar=True)
    print(f"START {i}", file=sys.stderr, flush=True)
    out = {}
    try:
        mcmc.run(0, init_params=ops.zeros((2, 3)))
        out["returned"] = True
    except KeyboardInterrupt:
        out["interrupted"] = mcmc.interrupted
    for name in ("get_samples", "summary", "to_arviz"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = getattr(mcmc, name)(**({"group_by_chain": True}
                                               if name == "get_samples" else {}))
            if name == "get_samples":
                out["shape"] = list(ops.shape(value))
            if name == "to_arviz":
                out["attrs"] = str(value.posterior.attrs.get("interrupted"))
        except RuntimeError as err:
            out[name] = str(err)
    print(f"RESULT {i} {json.dumps(out)}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    with ppl.use_backend(sys.argv[1], dtype="float64"):
        for i, case in enumerate(sys.argv[2:]):
            one(i, *case.split(","))
