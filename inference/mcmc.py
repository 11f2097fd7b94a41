"""The MCMC driver: warmup schedule, chains, chunked compiled loop, progress bar, collection.

``MCMC`` is a thin layer over a kernel's pure transition (``ppl.inference.nuts.step`` or
``ppl.inference.hmc.step``) and the adaptation functions of ``ppl.inference.adaptation``:

* one *iteration* = (at the start of a warmup stage) the step-size heuristic and mass-matrix
  update, a transition, then the dual-averaging and Welford updates; every piece is written over
  ``ppl.ops`` with ``ops.cond``/``ops.where``, so the same code runs eagerly on numpy and torch
  and compiled on JAX;
* iterations run in *chunks* (``ops.scan`` over up to ~100 iterations), one compiled call per
  chunk on JAX (compiled once per ``run``: shorter final chunks are padded with skipped
  iterations), so the progress bar updates between chunks and Ctrl-C keeps every finished chunk;
* chains: ``"vectorized"`` (default; one batch whose chains advance in lock-step),
  ``"sequential"`` (one chain after another) or ``"parallel"`` (a device per chain via
  ``ops.pmap`` where the backend has enough devices, e.g. JAX with several devices or
  ``XLA_FLAGS=--xla_force_host_platform_device_count=4``; otherwise one thread per chain:
  compiled JAX code and torch kernels release the GIL, so chains use several CPU cores).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

import ppl
from ppl import ops
from ppl.backends import tree
from ppl.inference import adaptation as adapt_mod
from ppl.inference import hmc
from ppl.inference.adaptation import AdaptState

__all__ = ["MCMC", "MCMCState"]

_CHAIN_METHODS = ("vectorized", "sequential", "parallel")
_STATS = ("diverging", "num_steps", "accept_prob", "energy", "tree_depth", "potential_energy",
          "step_size")


class MCMCState(NamedTuple):
    """A snapshot of the sampler, for ``last_state`` / ``post_warmup_state``.

    Attributes
    ----------
    hmc_state
        :class:`~ppl.inference.hmc.HMCState` with ``(C, D)`` positions.
    adapt_state
        :class:`~ppl.inference.adaptation.AdaptState` (step size, inverse mass matrix, ...).
    rng_key
        A fresh key to continue with: ``mcmc.run(mcmc.last_state.rng_key)``.
    """

    hmc_state: hmc.HMCState
    adapt_state: AdaptState
    rng_key: object

    @property
    def position(self):
        return self.hmc_state.position

    @property
    def step_size(self):
        return self.adapt_state.step_size

    @property
    def inverse_mass_matrix(self):
        return self.adapt_state.inverse_mass_matrix


class _Result(NamedTuple):
    positions: np.ndarray     # (C, N, D)
    stats: dict               # name -> (C, N)
    last: tuple
    interrupted: bool


def _check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}.")
    return int(value)


def _concat_chains(parts):
    return tree.map(lambda *xs: ops.concat(list(xs), axis=0), *parts)


def _make_chunk_fn(kernel, kernel_fn, vg, num_chains, dtype):
    """The function that runs a chunk of iterations: ``chunk(carry, xs, run_key)``."""
    empty_info = kernel.empty_info(num_chains, dtype)
    target = kernel.target_accept_prob
    adapt_step_size = kernel.adapt_step_size

    def chunk(carry, xs, run_key):
        def iteration(carry, x):
            i, active, warm, reset, update_mass, collect, last = x

            def live(c):
                state, adapt = c
                k_reset, k_step = ppl.random.split(ppl.random.fold_in(run_key, i), 2)
                adapt = ops.cond(
                    ops.logical_or(reset, update_mass),
                    lambda a: adapt_mod.adapt_reset(k_reset, a, state, vg,
                                                    update_mass=update_mass,
                                                    adapt_step_size=adapt_step_size),
                    lambda a: a, adapt)
                step_size = adapt.step_size
                state, info = kernel_fn(k_step, state, vg, step_size, adapt.inverse_mass_matrix)
                adapt = adapt_mod.adapt_update(adapt, state.position, info.accept_prob,
                                               warmup=warm, collect=collect, last=last,
                                               target_accept_prob=target,
                                               adapt_step_size=adapt_step_size)
                return (state, adapt), (state.position, state.potential_energy, info, step_size)

            def skip(c):
                state, adapt = c
                return c, (state.position, state.potential_energy, empty_info, adapt.step_size)

            return ops.cond(active, live, skip, carry)

        return ops.scan(iteration, carry, xs)

    return ops.jit(chunk)


class MCMC:
    """Run MCMC with a kernel: warmup (adaptation) then sampling, for one or more chains.

    Parameters
    ----------
    kernel
        :class:`~ppl.inference.NUTS` or :class:`~ppl.inference.HMC`.
    num_warmup
        Warmup (adaptation) iterations, discarded.
    num_samples
        Iterations kept per chain (before thinning).
    num_chains
        Number of chains.
    chain_method
        ``"vectorized"`` (one batch, chains in lock-step; works on every backend),
        ``"sequential"`` or ``"parallel"`` (a device per chain where the backend has enough
        devices, a thread per chain otherwise). ``None`` picks
        ``"vectorized"``, the fastest on every backend here.
    thinning
        Keep every ``thinning``-th draw.
    progress_bar
        Show a tqdm bar (phase, iterations per second, step size, divergences).
    chunk_size
        Iterations per compiled call (default: about 1/20 of a phase, 10 to 100, on backends
        whose control flow compiles, ``backend.compiles_control_flow``; 1 on the others).

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> from ppl.inference import MCMC, NUTS
    >>> def model(y=None):
    ...     mu = ppl.sample("mu", dist.Normal(0.0, 10.0))
    ...     ppl.sample("y", dist.Normal(mu, 1.0), obs=y)
    >>> mcmc = MCMC(NUTS(model), num_warmup=200, num_samples=200, num_chains=2,
    ...             progress_bar=False)
    >>> mcmc.run(0, y=ppl.ops.asarray([1.0, 2.0, 3.0]))
    >>> mcmc.get_samples()["mu"].shape
    (400,)
    """

    def __init__(self, kernel, *, num_warmup, num_samples, num_chains=1, chain_method=None,
                 thinning=1, progress_bar=True, chunk_size=None):
        if not (hasattr(kernel, "setup") and hasattr(kernel, "build_kernel")):
            raise TypeError(f"kernel must be a ppl kernel such as NUTS(model) or HMC(model), "
                            f"got {type(kernel).__name__}.")
        self.kernel = kernel
        self.num_warmup = _check_int("num_warmup", num_warmup, 0)
        self.num_samples = _check_int("num_samples", num_samples, 1)
        self.num_chains = _check_int("num_chains", num_chains, 1)
        self.thinning = _check_int("thinning", thinning, 1)
        if chain_method is None:
            chain_method = "vectorized"
        if chain_method not in _CHAIN_METHODS:
            raise ValueError(f"chain_method must be one of {_CHAIN_METHODS} or None, got "
                             f"{chain_method!r}.")
        self.chain_method = chain_method
        self.progress_bar = bool(progress_bar)
        self.chunk_size = None if chunk_size is None else _check_int("chunk_size", chunk_size, 1)
        self.last_state: MCMCState | None = None
        self.post_warmup_state: MCMCState | None = None
        self._result: _Result | None = None
        self._postprocess = None
        self._samples = None
        self._model_call = None

    # ------------------------------------------------------------------ running
    def run(self, rng_key, *args, init_params=None, extra_fields=(), **kwargs):
        """Run warmup and sampling.

        Parameters
        ----------
        rng_key
            An int seed or a ``ppl.random`` key. The same key gives the same draws.
        *args, **kwargs
            Passed to the model.
        init_params
            Starting points in unconstrained space: an array ``(D,)`` or ``(num_chains, D)``
            (required with ``potential_fn=``), or a dict of unconstrained site values.
        extra_fields
            Names of per-draw statistics to keep besides the default ones; all of
            ``diverging, num_steps, accept_prob, energy, tree_depth, potential_energy,
            step_size`` are always collected.

        With ``post_warmup_state`` set (e.g. ``mcmc.post_warmup_state = mcmc.last_state``, or
        by :meth:`warmup`), warmup is skipped and sampling continues from that state with its
        step size and mass matrix.
        """
        self._run(rng_key, args, kwargs, init_params, extra_fields, self.num_samples)

    def warmup(self, rng_key, *args, init_params=None, extra_fields=(), **kwargs):
        """Run only the warmup phase and keep its end state in ``post_warmup_state``, so that
        the next :meth:`run` samples without warming up again (as NumPyro's ``warmup``)."""
        self.post_warmup_state = None
        self._run(rng_key, args, kwargs, init_params, extra_fields, 0)
        self.post_warmup_state = self.last_state

    def _run(self, rng_key, args, kwargs, init_params, extra_fields, num_samples):
        # backend settings for many small calls (torch: one intra-op thread)
        with ppl.get_backend().sampling_scope():
            self._run_in_scope(rng_key, args, kwargs, init_params, extra_fields, num_samples)

    def _run_in_scope(self, rng_key, args, kwargs, init_params, extra_fields, num_samples):
        for name in extra_fields:
            if name not in _STATS:
                raise ValueError(f"extra_fields: unknown field {name!r}; available: {_STATS}.")
        key = ppl.random.as_key(rng_key)
        k_init, k_run = ppl.random.split(key, 2)
        C = self.num_chains
        setup = self.kernel.setup(k_init, args, kwargs, init_params, C)
        # batched log-density gradient, compiled on its own as well: on torch this is the one
        # function jit can trace (the tree building around it stays eager)
        vg = ops.jit(ops.vmap(ops.value_and_grad(setup.potential_fn)))
        dtype = ppl.get_backend().dtype
        start = self.post_warmup_state
        if start is not None:
            num_warmup = 0
            carry = (start.hmc_state, start.adapt_state)
            if tuple(ops.shape(start.hmc_state.position)) != tuple(ops.shape(
                    setup.init_position)):
                raise ValueError(
                    f"post_warmup_state has positions of shape "
                    f"{tuple(ops.shape(start.hmc_state.position))}, this run needs "
                    f"{tuple(ops.shape(setup.init_position))} (num_chains, D).")
        else:
            num_warmup = self.num_warmup
            z0 = setup.init_position
            state = hmc.init(z0, vg)
            pe = np.asarray(ops.to_numpy(state.potential_energy))
            if not np.all(np.isfinite(pe)):
                raise ValueError(
                    f"The potential energy is not finite at the initial point of chain(s) "
                    f"{np.flatnonzero(~np.isfinite(pe)).tolist()}: pass init_params inside the "
                    f"support (unconstrained space) or use another init_strategy.")
            D = ops.shape(z0)[-1]
            adapt = adapt_mod.adapt_init(self.kernel.step_size, C, D,
                                         dense=self.kernel.dense_mass, dtype=dtype)
            carry = (state, adapt)
        self._postprocess = setup.postprocess_fn
        self._model_call = (args, kwargs)
        self._samples = None
        method = self.chain_method
        if method == "vectorized" or C == 1:
            chunk_fn = _make_chunk_fn(self.kernel, self.kernel.build_kernel(), vg, C, dtype)
            result = self._run_batch(chunk_fn, carry, k_run, num_warmup, num_samples,
                                     f"{method}, {C} chains" if C > 1 else "1 chain")
        else:
            result = self._run_per_chain(carry, k_run, vg, dtype, num_warmup, num_samples,
                                         method)
        self._result = result
        next_key = ppl.random.fold_in(k_run, 2**31 - 1)
        self.last_state = MCMCState(result.last[0], result.last[1], next_key)

    def _run_per_chain(self, carry, k_run, vg, dtype, num_warmup, num_samples, method):
        C = self.num_chains
        chunk_fn = _make_chunk_fn(self.kernel, self.kernel.build_kernel(), vg, 1, dtype)
        carries = [tree.map(lambda a, c=c: a[c:c + 1], carry) for c in range(C)]
        keys = [ppl.random.fold_in(k_run, c) for c in range(C)]
        if method == "parallel" and ops.device_count() >= C:
            return self._run_on_devices(chunk_fn, carry, keys, num_warmup, num_samples)
        if method == "sequential":
            results = [self._run_batch(chunk_fn, carries[c], keys[c], num_warmup, num_samples,
                                       f"sequential, chain {c + 1}/{C}") for c in range(C)]
        else:
            bar = self._bar(C * (num_warmup + num_samples), f"parallel, {C} chains")
            lock = threading.Lock()
            compiled = threading.Event()    # the first chain compiles, then the others start

            def one(c):
                return self._run_batch(chunk_fn, carries[c], keys[c], num_warmup, num_samples,
                                       None, shared_bar=(bar, lock, compiled))

            with ThreadPoolExecutor(max_workers=C) as pool:
                first = pool.submit(contextvars.copy_context().run, one, 0)
                while not (compiled.wait(0.05) or first.done()):
                    pass
                futures = [first] + [pool.submit(contextvars.copy_context().run, one, c)
                                     for c in range(1, C)]
                results = [f.result() for f in futures]
            if bar is not None:
                bar.close()
        interrupted = any(r.interrupted for r in results)
        n = min(r.positions.shape[1] for r in results)
        positions = np.concatenate([r.positions[:, :n] for r in results], axis=0)
        stats = {k: np.concatenate([r.stats[k][:, :n] for r in results], axis=0)
                 for k in results[0].stats}
        last = _concat_chains([r.last for r in results])
        return _Result(positions, stats, last, interrupted)

    def _run_on_devices(self, chunk_fn, carry, keys, num_warmup, num_samples):
        """``"parallel"`` on a backend with a device per chain (JAX with several devices):
        ``ops.pmap`` of the one-chain chunk, so chain ``c`` runs on device ``c`` and draws what
        it draws with ``"sequential"``."""
        def one_chain(c, xs, key):
            c, ys = chunk_fn(tree.map(lambda a: a[None], c), xs, key)
            return tree.map(lambda a: a[0], c), tree.map(lambda a: a[:, 0], ys)

        mapped = ops.pmap(one_chain, in_axes=(0, None, 0))

        def chunk(c, xs, key):
            c, ys = mapped(c, xs, key)                       # ys: (C, K, ...)
            return c, tree.map(lambda a: ops.moveaxis(a, 0, 1), ys)

        C = self.num_chains
        return self._run_batch(chunk, carry, ops.stack(keys), num_warmup, num_samples,
                               f"parallel, {C} devices")

    def _bar(self, total, desc):
        if not self.progress_bar:
            return None
        from tqdm.auto import tqdm
        return tqdm(total=total, desc=desc, dynamic_ncols=True)

    def _chunk_size(self, num_warmup, num_samples):
        if self.chunk_size is not None:
            return self.chunk_size
        if not ppl.get_backend().compiles_control_flow:
            return 1
        longest = max(num_warmup, num_samples)
        return int(min(100, max(10, -(-longest // 20))))

    def _run_batch(self, chunk_fn, carry, run_key, num_warmup, num_samples, label,
                   shared_bar=None):
        """Warmup then sampling for one batch of chains, chunk by chunk."""
        W, N = num_warmup, num_samples
        K = self._chunk_size(W, N)
        kernel = self.kernel
        sched = adapt_mod.warmup_schedule(W, adapt_step_size=kernel.adapt_step_size,
                                          adapt_mass_matrix=kernel.adapt_mass_matrix)
        total = W + N
        flags = np.zeros((6, total), bool)
        flags[1, :W] = True
        flags[2, :W] = sched.reset
        flags[3, :W] = sched.update_mass
        flags[4, :W] = sched.collect
        if W:
            flags[5, W - 1] = True
        bar, lock, compiled = shared_bar if shared_bar is not None else (None, None, None)
        own_bar = shared_bar is None and self.progress_bar
        if own_bar:
            bar = self._bar(total, f"warmup [{label}]" if W else f"sample [{label}]")
        pieces, interrupted = [], False
        divergences = {"warmup": 0, "sample": 0}
        try:
            # a divergent trajectory overflows to inf/NaN by design: it is counted (diverging,
            # the progress bar) and gets weight 0, so NumPy's floating-point warnings are noise
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                for phase, lo, hi in (("warmup", 0, W), ("sample", W, total)):
                    if own_bar and bar is not None and hi > lo:
                        bar.set_description(f"{phase} [{label}]")
                        bar.set_postfix({"divergences": 0}, refresh=False)
                    for s in range(lo, hi, K):
                        idx = np.arange(s, s + K)
                        active = idx < hi
                        f = flags[:, np.minimum(idx, total - 1)] & active
                        xs = (ops.asarray(idx), ops.asarray(active)) + tuple(
                            ops.asarray(f[j]) for j in range(1, 6))
                        carry, ys = chunk_fn(carry, xs, run_key)
                        ys = tree.map(lambda a: np.asarray(ops.to_numpy(a)), ys)
                        if compiled is not None:
                            compiled.set()
                        n_act = int(active.sum())
                        ys = tree.map(lambda a, n=n_act: a[:n], ys)
                        divergences[phase] += int(ys[2].diverging.sum())
                        if phase == "sample":
                            pieces.append(ys)
                        if bar is not None:
                            post = {"step_size": f"{float(np.mean(ys[3][-1])):.3g}",
                                    "divergences": divergences[phase]}
                            with lock if lock is not None else contextlib.nullcontext():
                                bar.update(n_act)
                                bar.set_postfix(post, refresh=False)
        except KeyboardInterrupt:
            interrupted = True
            warnings.warn("MCMC interrupted: keeping the draws made so far.", stacklevel=3)
        finally:
            if own_bar and bar is not None:
                bar.close()
        return self._collect(pieces, carry, interrupted)

    def _collect(self, pieces, carry, interrupted):
        C = int(ops.shape(carry[0].position)[0])
        D = int(ops.shape(carry[0].position)[-1])
        if pieces:
            pos = np.concatenate([p[0] for p in pieces], axis=0)          # (N, C, D)
            pe = np.concatenate([p[1] for p in pieces], axis=0)
            eps = np.concatenate([p[3] for p in pieces], axis=0)
            infos = {f: np.concatenate([getattr(p[2], f) for p in pieces], axis=0)
                     for f in pieces[0][2]._fields}
        else:
            pos = np.zeros((0, C, D))
            pe = eps = np.zeros((0, C))
            infos = {f: np.zeros((0, C)) for f in self.kernel._info_type._fields}
        t = self.thinning
        pos = np.swapaxes(pos[::t], 0, 1)
        stats = {"potential_energy": pe[::t].T, "step_size": eps[::t].T}
        for f, v in infos.items():
            stats[f] = v[::t].T
        stats["diverging"] = stats["diverging"].astype(bool)
        stats["num_steps"] = stats["num_steps"].astype(np.int64)
        if "tree_depth" in stats:
            stats["tree_depth"] = stats["tree_depth"].astype(np.int64)
        return _Result(pos, stats, carry, interrupted)

    # ------------------------------------------------------------------ results
    def _require_run(self):
        if self._result is None:
            raise RuntimeError("No draws yet: call mcmc.run(rng_key, *model_args) first.")
        return self._result

    def get_samples(self, group_by_chain: bool = False):
        """The draws: ``{site: array}`` of the active backend, ``(chains * draws, ...)`` or
        ``(chains, draws, ...)`` with ``group_by_chain``; with ``potential_fn=`` an array of
        flat unconstrained positions."""
        result = self._require_run()
        if self._samples is None:
            C, N, D = result.positions.shape
            dtype = ppl.get_backend().dtype
            flat = result.positions.reshape(C * N, D)
            if self._postprocess is None:
                self._samples = ops.asarray(result.positions, dtype)
            elif C * N == 0:
                self._samples = {}
            else:
                out = ops.jit(ops.vmap(self._postprocess))(ops.asarray(flat, dtype))
                self._samples = {k: ops.reshape(v, (C, N) + tuple(ops.shape(v))[1:])
                                 for k, v in out.items()}
        return tree.map(lambda v: v if group_by_chain else
                         ops.reshape(v, (-1,) + tuple(ops.shape(v))[2:]), self._samples)

    def get_extra_fields(self, group_by_chain: bool = False) -> dict:
        """Per-draw sampler statistics: ``diverging``, ``num_steps``, ``accept_prob``,
        ``energy``, ``step_size``, ``potential_energy`` (and ``tree_depth`` for NUTS), as
        arrays of the active backend shaped like :meth:`get_samples`."""
        result = self._require_run()
        out = {}
        for k, v in result.stats.items():
            arr = v if group_by_chain else v.reshape((-1,) + v.shape[2:])
            out[k] = ops.asarray(arr)
        return out

    def _numpy_samples(self):
        samples = self.get_samples(group_by_chain=True)
        if not isinstance(samples, dict):
            samples = {"z": samples}
        return {k: np.asarray(ops.to_numpy(v)) for k, v in samples.items()}

    def summary(self, prob: float = 0.9) -> dict:
        """Per-site summary (mean, sd, HPDI, bulk/tail ESS, R-hat, MCSE); see
        :func:`ppl.diagnostics.summary`."""
        from ppl import diagnostics
        return diagnostics.summary(self._numpy_samples(), prob=prob, group_by_chain=True)

    def print_summary(self, prob: float = 0.9) -> None:
        """Print the summary table and the number of divergences."""
        from ppl import diagnostics
        diagnostics.print_summary(self._numpy_samples(), prob=prob, group_by_chain=True,
                                  divergences=self._require_run().stats["diverging"])

    def to_arviz(self):
        """An ``arviz.InferenceData`` with ``posterior``, ``sample_stats`` (incl.
        ``diverging``) and ``observed_data`` (needs ``pip install "ppl[arviz]"``)."""
        from ppl.inference.arviz import to_inference_data
        result = self._require_run()
        return to_inference_data(self._numpy_samples(), dict(result.stats),
                                 observed=self._observed())

    def _observed(self):
        model = getattr(self.kernel, "model", None)
        if model is None or self._model_call is None:
            return None
        from ppl.handlers import seed, trace
        args, kwargs = self._model_call
        tr = trace(seed(model, rng_seed=0)).get_trace(*args, **kwargs)
        return {name: site["value"] for name, site in tr.items()
                if site["type"] == "sample" and site["is_observed"]} or None
