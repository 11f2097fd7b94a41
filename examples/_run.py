"""The command line every example shares: ``python examples/<name>.py --backend jax ...``."""

import argparse

import ppl


def run_example(model, data, description, argv=None, *, dtype="float32", report=None):
    """Parse the example's arguments, run NUTS on ``model(**data())`` and print the summary.

    Parameters
    ----------
    model, data
        The example's model function and its ``data()`` (keyword arguments of the model).
    description
        The first line of the example's docstring (``--help``).
    argv
        Command-line arguments (``None``: ``sys.argv``).
    dtype
        The default ``--dtype``.
    report
        Optional ``report(mcmc)`` run after the summary, under the chosen backend (e.g. print
        the true values of the simulation).

    Returns
    -------
    ppl.inference.MCMC
        The finished run.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--backend", default=ppl.get_backend().name,
                        choices=ppl.available_backends())
    parser.add_argument("--dtype", default=dtype, choices=["float32", "float64"])
    parser.add_argument("--num-warmup", type=int, default=1000)
    parser.add_argument("--num-samples", type=int, default=1000)
    parser.add_argument("--num-chains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-tree-depth", type=int, default=10,
                        help="NUTS's largest tree: at most 2**depth - 1 leapfrog steps")
    args = parser.parse_args(argv)

    from ppl.inference import MCMC, NUTS

    with ppl.use_backend(args.backend, dtype=args.dtype):
        kernel = NUTS(model, max_tree_depth=args.max_tree_depth)
        mcmc = MCMC(kernel, num_warmup=args.num_warmup, num_samples=args.num_samples,
                    num_chains=args.num_chains)
        mcmc.run(args.seed, **data())
        mcmc.print_summary()
        if report is not None:
            report(mcmc)
    return mcmc
