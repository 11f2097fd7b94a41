"""NUTS on TensorFlow: ppl's tensorflow backend side by side with TensorFlow Probability's NUTS.

The same two posteriors as ``bench_nuts.py`` (a 25-dimensional logistic regression on N = 2000
synthetic rows, and the non-centred eight schools), the same data, in one process. Each sampler
runs 4 chains of 1000 warmup + 1000 draws, in float32, for each seed:

* ``ppl[tensorflow]``: ``MCMC(NUTS(model))``, vectorized chains; the whole warmup and sampling
  loop runs as chunks of XLA-compiled iterations. Adapts the step size and a diagonal mass
  matrix (Stan's windows, with a final step-size stage of 15 % of warmup).
* ``tfp``: ``tfp.mcmc.NoUTurnSampler`` inside ``TransformedTransitionKernel`` (``tau`` through
  ``Exp``, as ppl's ``biject_to(positive)``) inside ``DualAveragingStepSizeAdaptation`` (80 % of
  the warmup, target acceptance 0.8 as ppl's), chains batched, the whole ``sample_chain``
  compiled with ``tf.function(jit_compile=True)``. TFP's NUTS adapts no mass matrix.
  Initial points are uniform on ``(-2, 2)`` in unconstrained space, as ppl's
  ``init_to_uniform``.

Both compile with the XLA flags ppl's backend sets (XLA's small-loop threshold,
``ppl.backends.common.xla_flags``), set before either runs: XLA reads them once per process.

Each sampler reuses what a user would reuse between runs in one process: ppl its ``MCMC``
object (whose compiled programs are cached on the kernel), TFP its ``tf.function`` (initial
state and seed are arguments), so the first seed pays the compilation and later seeds do not,
alike for both.

Reported per run: wall time (setup, tracing, compilation, warmup and sampling), the smallest
bulk ESS over all parameters (``theta`` included for eight schools), ESS/s, ESS per 1000
gradient evaluations (leapfrog steps of all chains, warmup included) and divergences; then per
model and sampler the median over seeds, the first (cold) run alone, and ppl's ratio to TFP.
The machine load (1-minute load average) is printed with every row.

Usage::

    python benchmarks/tensorflow_vs_tfp.py                     # both models, seeds 0 1 2
    python benchmarks/tensorflow_vs_tfp.py --models eight_schools --seeds 0
    python benchmarks/tensorflow_vs_tfp.py --warmup 500 --samples 500    # quicker
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_nuts import eight_schools_data, logistic_data, min_ess, ppl_models  # noqa: E402

MODELS = ("logistic_regression", "eight_schools")


def _data(model_name):
    if model_name == "logistic_regression":
        x, y = logistic_data()
        return (x,), y
    y, sigma = eight_schools_data()
    return (sigma,), y


def _row(sampler, model, seed, wall, samples, grads, div):
    ess = min_ess(samples)
    return {"sampler": sampler, "model": model, "seed": seed, "wall_s": wall, "min_ess": ess,
            "ess_per_s": ess / wall, "ess_per_kgrad": 1000 * ess / max(grads, 1),
            "divergences": div, "load": os.getloadavg()[0]}


# ------------------------------------------------------------------------------ ppl
def run_ppl(model_name, seed, *, chains, warmup, samples, cache):
    import ppl
    from ppl import ops
    from ppl.inference import MCMC, NUTS

    args, y = _data(model_name)
    with ppl.use_backend("tensorflow", dtype="float32"):
        t0 = time.perf_counter()
        if "mcmc" not in cache:
            cache["mcmc"] = MCMC(NUTS(ppl_models()[model_name]), num_warmup=warmup,
                                 num_samples=samples, num_chains=chains, progress_bar=False)
        mcmc = cache["mcmc"]
        mcmc.run(seed, *[ops.asarray(a) for a in args], y=ops.asarray(y))
        draws = {k: np.asarray(ops.to_numpy(v))
                 for k, v in mcmc.get_samples(group_by_chain=True).items()}
        wall = time.perf_counter() - t0
        ef = mcmc.get_extra_fields(group_by_chain=True)
        steps = np.asarray(ops.to_numpy(ef["num_steps"]))
        div = int(np.asarray(ops.to_numpy(ef["diverging"])).sum())
    # only the sampling phase's steps are recorded: scale to warmup + sampling
    row = _row("ppl[tensorflow]", model_name, seed, wall, draws,
               steps.sum() * (warmup + samples) / samples, div)
    row["timings"] = dict(mcmc.timings)      # setup, compile, warmup, sampling (seconds)
    return row


# ------------------------------------------------------------------------------ TFP
def _tfp_target(model_name):
    """``(log_prob(*parts), bijectors, event shapes, to_samples)`` of the posterior."""
    import tensorflow as tf
    import tensorflow_probability as tfp

    tfd, tfb = tfp.distributions, tfp.bijectors
    args, y = _data(model_name)
    if model_name == "logistic_regression":
        x = tf.constant(args[0], tf.float32)
        yt = tf.constant(y, tf.float32)

        def log_prob(alpha, beta):
            prior = tfd.Normal(0.0, 1.0)
            logits = alpha[..., None] + tf.linalg.matvec(x, beta)
            lik = tf.reduce_sum(tfd.Bernoulli(logits=logits, dtype=tf.float32).log_prob(yt), -1)
            return prior.log_prob(alpha) + tf.reduce_sum(prior.log_prob(beta), -1) + lik

        return log_prob, [tfb.Identity(), tfb.Identity()], [(), (x.shape[1],)], \
            lambda s: {"alpha": s[0], "beta": s[1]}
    sigma = tf.constant(args[0], tf.float32)
    yt = tf.constant(y, tf.float32)

    def log_prob(mu, tau, theta_tilde):
        theta = mu[..., None] + tau[..., None] * theta_tilde
        return (tfd.Normal(0.0, 5.0).log_prob(mu) + tfd.HalfCauchy(0.0, 5.0).log_prob(tau)
                + tf.reduce_sum(tfd.Normal(0.0, 1.0).log_prob(theta_tilde), -1)
                + tf.reduce_sum(tfd.Normal(theta, sigma).log_prob(yt), -1))

    def to_samples(s):
        mu, tau, tt = s
        return {"mu": mu, "tau": tau, "theta_tilde": tt,
                "theta": mu[..., None] + tau[..., None] * tt}

    return log_prob, [tfb.Identity(), tfb.Exp(), tfb.Identity()], [(), (), (sigma.shape[0],)], \
        to_samples


def _tfp_sampler(log_prob, bijectors, *, warmup, samples):
    import tensorflow as tf
    import tensorflow_probability as tfp

    nuts = tfp.mcmc.NoUTurnSampler(log_prob, step_size=1.0, max_tree_depth=10)
    kernel = tfp.mcmc.DualAveragingStepSizeAdaptation(
        tfp.mcmc.TransformedTransitionKernel(nuts, bijectors),
        num_adaptation_steps=int(0.8 * warmup), target_accept_prob=0.8,
        step_size_setter_fn=lambda pkr, ss: pkr._replace(
            inner_results=pkr.inner_results._replace(step_size=ss)),
        step_size_getter_fn=lambda pkr: pkr.inner_results.step_size,
        log_accept_prob_getter_fn=lambda pkr: pkr.inner_results.log_accept_ratio)

    @tf.function(jit_compile=True, autograph=False)
    def sample(init, seed):
        return tfp.mcmc.sample_chain(
            num_results=samples, num_burnin_steps=warmup, current_state=init, kernel=kernel,
            trace_fn=lambda _, pkr: (pkr.inner_results.inner_results.leapfrogs_taken,
                                     pkr.inner_results.inner_results.has_divergence), seed=seed)

    return sample


def run_tfp(model_name, seed, *, chains, warmup, samples, cache):
    import tensorflow as tf

    t0 = time.perf_counter()
    if "target" not in cache:
        cache["target"] = _tfp_target(model_name)
    log_prob, bijectors, shapes, to_samples = cache["target"]
    rng = np.random.default_rng(seed)
    init = [tf.constant(b.forward(rng.uniform(-2, 2, size=(chains,) + s).astype(np.float32)))
            for b, s in zip(bijectors, shapes)]
    if "sample" not in cache:
        cache["sample"] = _tfp_sampler(log_prob, bijectors, warmup=warmup, samples=samples)
    states, (leapfrogs, diverging) = cache["sample"](init, tf.constant([seed, 0], tf.int32))
    draws = {k: np.swapaxes(np.asarray(v), 0, 1) for k, v in to_samples(states).items()}
    wall = time.perf_counter() - t0
    # leapfrogs of the sampling phase are traced: scale to warmup + sampling
    grads = float(np.sum(leapfrogs)) * (warmup + samples) / samples
    return _row("tfp", model_name, seed, wall, draws, grads, int(np.sum(diverging)))


# ------------------------------------------------------------------------------ main
def _table(rows):
    head = ("| model | sampler | seed | wall s | min ESS | ESS/s | ESS/1000 grads | div | "
            "load |")
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        lines.append(f"| {r['model']} | {r['sampler']} | {r['seed']} | {r['wall_s']:.1f} | "
                     f"{r['min_ess']:.0f} | {r['ess_per_s']:.1f} | {r['ess_per_kgrad']:.1f} | "
                     f"{r['divergences']:g} | {r['load']:.1f} |")
    return "\n".join(lines)


def _summary(rows, models):
    """Per model and sampler: medians over seeds, the first run, and ppl / TFP."""
    lines = ["| model | sampler | median wall s | median ESS/s | first-run wall s | "
             "first-run ESS/s | ESS/1000 grads | ppl / TFP (median, first run) |",
             "|" + "---|" * 8]
    for model in models:
        med = {}
        for sampler in ("tfp", "ppl[tensorflow]"):
            rs = [r for r in rows if r["model"] == model and r["sampler"] == sampler]
            if not rs:
                continue
            med[sampler] = (float(np.median([r["ess_per_s"] for r in rs])), rs[0]["ess_per_s"])
            ratio = ""
            if sampler != "tfp" and "tfp" in med:
                ratio = (f"{med[sampler][0] / med['tfp'][0]:.2f}x, "
                         f"{med[sampler][1] / med['tfp'][1]:.2f}x")
            lines.append(
                f"| {model} | {sampler} | {np.median([r['wall_s'] for r in rs]):.1f} | "
                f"{med[sampler][0]:.1f} | {rs[0]['wall_s']:.1f} | {rs[0]['ess_per_s']:.1f} | "
                f"{np.median([r['ess_per_kgrad'] for r in rs]):.1f} | {ratio} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=1000)
    opts = parser.parse_args(argv)
    size = {"chains": opts.chains, "warmup": opts.warmup, "samples": opts.samples}
    # the XLA flags ppl's backend sets, here before TensorFlow compiles anything: they are
    # process-wide, so TFP (which runs first) compiles with them too
    from ppl.backends.common.xla_flags import request_small_loop_kernels
    request_small_loop_kernels()
    print(f"load average before: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()}), "
          f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}", flush=True)
    rows = []
    models = opts.models.split(",")
    for model in models:
        caches = {run_tfp: {}, run_ppl: {}}
        for seed in (int(s) for s in opts.seeds.split(",")):
            for run in (run_tfp, run_ppl):
                rows.append(run(model, seed, **size, cache=caches[run]))
                timings = rows[-1].get("timings")
                print(_table(rows[-1:]).splitlines()[-1],
                      " ".join(f"{k} {v:.2f}s" for k, v in (timings or {}).items()), flush=True)
    print(_table(rows))
    print()
    print(_summary(rows, models))
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
