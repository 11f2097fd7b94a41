"""Shared helpers of the posteriordb examples: where the data lives, reading ``data.json`` and
``reference.json``, mapping Stan's parameter names to ppl sites, and checking draws against the
reference with the criteria of posteriordb's README.

The posteriors come from posteriordb (https://github.com/stan-dev/posteriordb, BSD-3-Clause,
Stan Developers); Magnusson et al. (2024), "posteriordb: Testing, benchmarking and developing
Bayesian inference algorithms", arXiv:2407.04967.

The folder holding the twelve ``<posterior>/{data,reference,info}.json`` directories is, in order:
``$PPL_POSTERIORDB``, ``examples/posteriordb/data`` (a vendored copy), or ``shared/posteriordb``
next to the repository.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np

__all__ = [
    "POSTERIORS",
    "data_dir",
    "load_data",
    "load_reference",
    "stan_to_site",
    "compare_to_reference",
    "passes",
    "format_rows",
    "run",
    "main",
]

#: posterior name -> module name in examples/posteriordb/
POSTERIORS = {
    "eight_schools-eight_schools_noncentered": "eight_schools_noncentered",
    "kidiq-kidscore_momiq": "kidiq_kidscore_momiq",
    "mesquite-logmesquite_logvolume": "mesquite_logmesquite_logvolume",
    "arK-arK": "ark",
    "garch-garch11": "garch11",
    "gp_pois_regr-gp_pois_regr": "gp_pois_regr",
    "low_dim_gauss_mix-low_dim_gauss_mix": "low_dim_gauss_mix",
    "earnings-logearn_interaction_z": "earnings_logearn_interaction_z",
    "sblrc-blr": "sblrc_blr",
    "hmm_example-hmm_example": "hmm_example",
    "diamonds-diamonds": "diamonds",
    "nes2000-nes": "nes2000_nes",
}

_HERE = Path(__file__).resolve().parent


def data_dir(posterior: str) -> Path:
    """The folder of ``posterior`` (raises ``FileNotFoundError`` naming where it looked)."""
    candidates = []
    if os.environ.get("PPL_POSTERIORDB"):
        candidates.append(Path(os.environ["PPL_POSTERIORDB"]))
    candidates += [_HERE / "data", _HERE.parents[2] / "shared" / "posteriordb"]
    for root in candidates:
        if (root / posterior / "data.json").is_file():
            return root / posterior
    raise FileNotFoundError(
        f"posteriordb data for {posterior!r} not found in {[str(c) for c in candidates]}; "
        "set PPL_POSTERIORDB to the folder holding the posteriordb directories."
    )


def load_data(posterior: str) -> dict:
    """``data.json`` of ``posterior`` as a dict of Python values."""
    return json.loads((data_dir(posterior) / "data.json").read_text())


def load_reference(posterior: str) -> dict:
    """``reference.json``: Stan name -> ``{"mean", "sd", "n_chains", "n_draws"}``."""
    return json.loads((data_dir(posterior) / "reference.json").read_text())


_STAN_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[([0-9, ]+)\])?$")


def stan_to_site(name: str) -> tuple[str, tuple[int, ...]]:
    """``"beta[1]" -> ("beta", (0,))``, ``"L[2,1]" -> ("L", (1, 0))``, ``"mu" -> ("mu", ())``.

    >>> stan_to_site("theta[3]")
    ('theta', (2,))
    """
    m = _STAN_NAME.match(name)
    if not m:
        raise ValueError(f"not a Stan parameter name: {name!r}")
    idx = () if m.group(2) is None else tuple(int(i) - 1 for i in m.group(2).split(","))
    return m.group(1), idx


def compare_to_reference(posterior: str, samples: dict, *, divergences=None,
                         allow_divergences: bool = False) -> list[dict]:
    """Per reference parameter: our mean/sd/R-hat against the reference mean/sd.

    Parameters
    ----------
    posterior
        posteriordb name, e.g. ``"garch-garch11"``.
    samples
        ``site -> draws`` with shape ``(chains, draws, ...)`` (NumPy or backend arrays).
    divergences
        Optional array of divergence flags; its sum is stored in every row.
    allow_divergences
        ``False`` (fail on any divergence), ``True`` (do not fail on divergences) or the largest
        number accepted. The README asks for none only in the funnel-free models: eight schools
        keeps a faint funnel even non-centred, and the GP's hyperparameters make a mild one.

    Returns
    -------
    list of dict
        ``name, mean, sd, ref_mean, ref_sd, z (= |mean - ref_mean| / ref_sd), sd_ratio, r_hat,
        n_draws, divergences, ok`` where ``ok`` applies posteriordb's README criteria:
        ``z <= 0.1``, ``|sd_ratio - 1| <= 0.2``, ``r_hat < 1.01``, no divergences.
    """
    from ppl import diagnostics, ops

    ref = load_reference(posterior)
    arrays = {k: ops.to_numpy(v) for k, v in samples.items()}
    n_div = 0 if divergences is None else int(np.sum(ops.to_numpy(divergences)))
    rows = []
    for name, r in ref.items():
        site, idx = stan_to_site(name)
        if site not in arrays:
            raise KeyError(f"{posterior}: no site {site!r} in the samples (for {name}).")
        x = arrays[site][(slice(None), slice(None)) + idx].astype(np.float64)
        mean, sd = float(x.mean()), float(x.std(ddof=1))
        z = abs(mean - r["mean"]) / r["sd"]
        sd_ratio = sd / r["sd"]
        r_hat = float(diagnostics.split_gelman_rubin(x))
        ok = (z <= 0.1 and abs(sd_ratio - 1) <= 0.2 and r_hat < 1.01
              and _divergences_ok(n_div, allow_divergences))
        rows.append({"name": name, "mean": mean, "sd": sd, "ref_mean": r["mean"],
                     "ref_sd": r["sd"], "z": z, "sd_ratio": sd_ratio, "r_hat": r_hat,
                     "n_draws": x.size, "divergences": n_div, "ok": bool(ok)})
    return rows


def _divergences_ok(n_div: int, allow) -> bool:
    """``allow``: ``False`` (none), ``True`` (any) or the largest count accepted."""
    if isinstance(allow, bool):
        return allow or n_div == 0
    return n_div <= int(allow)


def passes(rows: list[dict]) -> bool:
    """Whether every row of :func:`compare_to_reference` passes."""
    return all(r["ok"] for r in rows)


def format_rows(rows: list[dict]) -> str:
    """A readable table of :func:`compare_to_reference` rows."""
    head = f"{'param':>12} {'mean':>10} {'ref':>10} {'z':>6} {'sd/ref':>7} {'r_hat':>6}  ok"
    lines = [head]
    for r in rows:
        lines.append(f"{r['name']:>12} {r['mean']:>10.4g} {r['ref_mean']:>10.4g} {r['z']:>6.3f} "
                     f"{r['sd_ratio']:>7.3f} {r['r_hat']:>6.3f}  {'ok' if r['ok'] else 'FAIL'}")
    if rows:
        lines.append(f"divergences: {rows[0]['divergences']}")
    return "\n".join(lines)


def run(module, *, backend: str = "jax", dtype: str = "float64", num_warmup: int = 1000,
        num_samples: int = 1000, num_chains: int = 4, seed: int = 0,
        progress_bar: bool = False, chain_method: str | None = None) -> dict:
    """Run NUTS on a posteriordb example module and check it against the reference.

    Returns a dict with ``rows`` (:func:`compare_to_reference`), ``ok``, ``seconds`` (wall time,
    compilation included), ``max_z`` (largest ``|mean - ref| / ref_sd``) and ``mcmc``.
    """
    import time

    import ppl
    from ppl.inference import MCMC, NUTS

    with ppl.use_backend(backend, dtype=dtype):
        start = time.perf_counter()
        kernel = NUTS(module.model, **getattr(module, "NUTS_KWARGS", {}))
        mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples,
                    num_chains=num_chains, chain_method=chain_method, progress_bar=progress_bar)
        mcmc.run(seed, **module.data())
        samples = mcmc.get_samples(group_by_chain=True)
        seconds = time.perf_counter() - start
        diverging = mcmc.get_extra_fields().get("diverging")
    rows = compare_to_reference(module.POSTERIOR, samples, divergences=diverging,
                                allow_divergences=getattr(module, "ALLOW_DIVERGENCES", False))
    return {"rows": rows, "ok": passes(rows), "seconds": seconds,
            "max_z": max(r["z"] for r in rows), "mcmc": mcmc}


def main(module, argv=None) -> int:
    """Command line of the example modules: run NUTS, print the summary and the reference check.

    Exit status 0 when the posterior passes posteriordb's criteria, 1 otherwise.
    """
    import argparse

    parser = argparse.ArgumentParser(description=f"NUTS on posteriordb's {module.POSTERIOR}")
    parser.add_argument("--backend", default="jax")
    parser.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    parser.add_argument("--num-warmup", type=int, default=1000)
    parser.add_argument("--num-samples", type=int, default=1000)
    parser.add_argument("--num-chains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    out = run(module, backend=args.backend, dtype=args.dtype, num_warmup=args.num_warmup,
              num_samples=args.num_samples, num_chains=args.num_chains, seed=args.seed,
              progress_bar=True)
    out["mcmc"].print_summary()
    print(format_rows(out["rows"]))
    print(f"{module.POSTERIOR} on {args.backend}: {'PASS' if out['ok'] else 'FAIL'} "
          f"in {out['seconds']:.1f} s (max |mean - ref| / ref_sd = {out['max_z']:.3f})")
    return 0 if out["ok"] else 1
