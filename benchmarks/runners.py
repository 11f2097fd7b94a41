"""A small registry of NUTS *runners*, one per framework and setting, for the benchmarks.

A runner is ``runner(problem, seed, cfg) -> RunOutput``; :func:`register` adds one under a name
(``"ppl"``, ``"numpyro-parallel"``, ...). A module of runners for other frameworks (for example
``benchmarks/torch_numpy.py``) registers its own with the same decorator and is loaded by the
harness with ``--modules``. A runner may keep state between seeds in ``cfg.cache`` (a dict per
runner and problem), e.g. its MCMC object, as a user would reuse one.

Counting: ``grads`` is the number of gradient evaluations of all chains over warmup and
sampling; ``draws`` are ``(chains, draws, D)`` unconstrained draws or a dict of
``(chains, draws, ...)`` site draws (bulk ESS is rank-based, so elementwise monotone
constraining transforms do not change it).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

__all__ = ["RunOutput", "Config", "RUNNERS", "register"]


class RunOutput(NamedTuple):
    draws: Any              # (C, N, D) array or {site: (C, N, ...)}
    wall: float             # seconds, the whole run as a user sees it
    grads: float            # gradient evaluations, all chains, warmup + sampling
    divergences: int


@dataclass
class Config:
    chains: int = 4
    warmup: int = 1000
    samples: int = 1000
    cache: dict = field(default_factory=dict)
    #: ``untimed()``: a context in which a runner prepares its inputs; the driver's compile
    #: clock ignores what is compiled inside (see :func:`_peer_inputs`)
    untimed: Callable[[], Any] = contextlib.nullcontext


def _peer_inputs(problem, seed, cfg):
    """``(logdensity, init, to_sites)`` for a peer that samples ppl's log density of a
    posteriordb problem: the problem's inputs, made before the peer's timer starts and outside
    the compile clock. Computing ppl's starting points compiles ppl's start program in a fresh
    process, which is ppl's cost, not the peer's (it had counted for NumPyro, BlackJAX and nutpie
    on a first run; ppl's own runner pays it in its ``mcmc.run``)."""
    from benchmarks.problems import potential
    with cfg.untimed():
        return potential(problem, seed, cfg.chains)


RUNNERS: dict[str, Callable[[Any, int, Config], RunOutput]] = {}


def register(name: str):
    def deco(fn):
        RUNNERS[name] = fn
        return fn
    return deco


def _scale(cfg):           # sampling-phase step counts -> whole run
    return (cfg.warmup + cfg.samples) / cfg.samples


# ------------------------------------------------------------------------------ ppl
def _ppl(problem, seed, cfg, **nuts_options):
    import ppl
    from ppl import ops
    from ppl.inference import MCMC, NUTS

    method = nuts_options.pop("chain_method", None)
    with ppl.use_backend("jax", dtype="float32"):
        args = tuple(ops.asarray(a) if isinstance(a, np.ndarray) else a for a in problem.args)
        kwargs = {k: ops.asarray(v) if isinstance(v, np.ndarray) else v
                  for k, v in problem.kwargs.items()}
        if "mcmc" not in cfg.cache:
            cfg.cache["mcmc"] = MCMC(NUTS(problem.model, **problem.nuts_kwargs, **nuts_options),
                                     num_warmup=cfg.warmup, num_samples=cfg.samples,
                                     num_chains=cfg.chains, chain_method=method,
                                     progress_bar=False)
        mcmc = cfg.cache["mcmc"]
        t0 = time.perf_counter()
        mcmc.run(seed, *args, **kwargs)
        mcmc.get_samples()
        wall = time.perf_counter() - t0
        stats = mcmc.get_extra_fields(group_by_chain=True)
        steps = np.asarray(ops.to_numpy(stats["num_steps"]))
        div = int(np.asarray(ops.to_numpy(stats["diverging"])).sum())
    # the unconstrained draws the sampler made (benchmark-only access)
    return RunOutput(mcmc._result.positions, wall, steps.sum() * _scale(cfg), div)


@register("ppl")
def run_ppl(problem, seed, cfg):
    """ppl's defaults (chains over the host devices when there are several)."""
    return _ppl(problem, seed, cfg)


@register("ppl-vectorized")
def run_ppl_vectorized(problem, seed, cfg):
    return _ppl(problem, seed, cfg, chain_method="vectorized")


@register("ppl-fisher")
def run_ppl_fisher(problem, seed, cfg):
    """ppl with the gradient-based (Fisher divergence) diagonal mass matrix."""
    return _ppl(problem, seed, cfg, mass_matrix_estimator="gradients")


# ------------------------------------------------------------------------------ NumPyro
def _numpyro(problem, seed, cfg, method):
    import jax
    import jax.numpy as jnp
    from numpyro.infer import MCMC, NUTS

    # a new kernel and MCMC per run: NumPyro's vectorized MCMC cannot run twice (and NumPyro
    # compiles again on every run anyway)
    if problem.numpyro_model is not None:
        kernel = NUTS(problem.numpyro_model, **problem.nuts_kwargs)
    else:
        # ppl's log density of the problem (the model's definition, for NumPyro's
        # potential_fn) and this seed's starting points, outside the timed wall
        logdensity, init, _ = _peer_inputs(problem, seed, cfg)
        kernel = NUTS(potential_fn=lambda z: -logdensity(z), **problem.nuts_kwargs)
    mcmc = MCMC(kernel, num_warmup=cfg.warmup, num_samples=cfg.samples,
                num_chains=cfg.chains, chain_method=method, progress_bar=False)
    t0 = time.perf_counter()
    if problem.numpyro_model is not None:
        args = tuple(jnp.asarray(a, jnp.float32) if isinstance(a, np.ndarray) else a
                     for a in problem.args)
        kwargs = {k: jnp.asarray(v, jnp.float32) if isinstance(v, np.ndarray) else v
                  for k, v in problem.kwargs.items()}
        mcmc.run(jax.random.PRNGKey(seed), *args, extra_fields=("num_steps", "diverging"),
                 **kwargs)
        draws = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    else:
        mcmc.run(jax.random.PRNGKey(seed), init_params=jnp.asarray(init),
                 extra_fields=("num_steps", "diverging"))
        draws = np.asarray(mcmc.get_samples(group_by_chain=True))
    wall = time.perf_counter() - t0
    ef = mcmc.get_extra_fields(group_by_chain=True)
    return RunOutput(draws, wall, np.asarray(ef["num_steps"]).sum() * _scale(cfg),
                     int(np.asarray(ef["diverging"]).sum()))


@register("numpyro-parallel")
def run_numpyro_parallel(problem, seed, cfg):
    return _numpyro(problem, seed, cfg, "parallel")


@register("numpyro-vectorized")
def run_numpyro_vectorized(problem, seed, cfg):
    return _numpyro(problem, seed, cfg, "vectorized")


# ------------------------------------------------------------------------------ BlackJAX
@register("blackjax")
def run_blackjax(problem, seed, cfg):
    """BlackJAX NUTS with its Stan-style window adaptation, chains vmapped, one jit."""
    import blackjax
    import jax

    logdensity, init, _ = _peer_inputs(problem, seed, cfg)
    t0 = time.perf_counter()
    if "run" not in cfg.cache:
        W, N = cfg.warmup, cfg.samples

        def one_chain(key, z0):
            k_warm, k_draw = jax.random.split(key)
            warm = blackjax.window_adaptation(blackjax.nuts, logdensity)
            (state, params), _ = warm.run(k_warm, z0, num_steps=W)
            kernel = blackjax.nuts(logdensity, **params)

            def step(s, k):
                s, info = kernel.step(k, s)
                return s, (s.position, info.num_integration_steps, info.is_divergent)

            _, out = jax.lax.scan(step, state, jax.random.split(k_draw, N))
            return out

        cfg.cache["run"] = jax.jit(jax.vmap(one_chain))
    keys = jax.random.split(jax.random.PRNGKey(seed), cfg.chains)
    pos, steps, div = jax.block_until_ready(cfg.cache["run"](keys, init))
    wall = time.perf_counter() - t0
    return RunOutput(np.asarray(pos), wall, np.asarray(steps).sum() * _scale(cfg),
                     int(np.asarray(div).sum()))


# ------------------------------------------------------------------------------ nutpie
@register("nutpie")
def run_nutpie(problem, seed, cfg):
    """nutpie (Rust NUTS, gradient-based mass matrix) on ppl's jitted JAX gradient, called
    from Rust through Python (one call per gradient); chains on the cores."""
    import jax
    import nutpie
    from nutpie.compiled_pyfunc import from_pyfunc

    # float32 like the others (float64 would turn on JAX's x64 for the whole process)
    logdensity, init, _ = _peer_inputs(problem, seed, cfg)
    t0 = time.perf_counter()
    D = init.shape[1]
    if "model" not in cfg.cache:
        vg = jax.jit(jax.value_and_grad(logdensity))

        def make_logp():
            def logp(x):
                v, g = vg(np.asarray(x, np.float32))
                return float(v), np.asarray(g, np.float64)
            return logp

        def make_expand(*_):
            return lambda x: {"z": np.asarray(x, np.float64)}

        cfg.cache["model"] = from_pyfunc(D, make_logp, make_expand, [np.dtype("float64")], [(D,)],
                                         ["z"])
    trace = nutpie.sample(cfg.cache["model"], draws=cfg.samples, tune=cfg.warmup,
                          chains=cfg.chains, seed=seed, progress_bar=False, save_warmup=False)
    wall = time.perf_counter() - t0
    draws = np.asarray(trace.posterior["z"])
    steps = np.asarray(trace.sample_stats["n_steps"])
    div = int(np.asarray(trace.sample_stats["diverging"]).sum())
    return RunOutput(draws, wall, steps.sum() * _scale(cfg), div)
