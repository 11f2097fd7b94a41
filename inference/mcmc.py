"""The MCMC driver: runs a kernel's warmup and sampling for one or more chains and serves the
draws (samples, statistics, summaries, ArviZ).

``MCMC`` is thin: the kernel contract (``setup``, ``init``, ``warmup_flags``,
``build_iteration``) is documented in :mod:`ppl.inference.kernels`, running chunks and chains in
:mod:`ppl.inference.chains`.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from ppl import diagnostics, ops, random
from ppl.backends import tree
from ppl.inference.arviz import mcmc_groups, to_inference_data
from ppl.inference.chains import CHAIN_METHODS, ChainRunner, RunResult
from ppl.inference.mcmc_state import MCMCState
from ppl.inference.program_data import as_backend_data, data_nbytes
from ppl.inference.programs import get_program
from ppl.inference.run_warnings import run_problems, warn_problems

__all__ = ["MCMC", "MCMCState", "PARALLEL_DATA_LIMIT"]

_STATS = ("diverging", "num_steps", "accept_prob", "energy", "tree_depth", "potential_energy",
          "step_size")


#: bytes of model data (the array arguments of ``run``) from which the default chain method
#: keeps the chains on one device (see ``MCMC``'s ``chain_method``)
PARALLEL_DATA_LIMIT = 2**20


def default_chain_method(num_chains: int, data_bytes: int = 0) -> str:
    """``"parallel"`` when the active backend can spread ``num_chains`` chains over several
    devices (``ops.chain_shards``; JAX on a multi-core CPU or several GPUs) and the model's
    data (``data_bytes``) are below :data:`PARALLEL_DATA_LIMIT`, else ``"vectorized"`` (one
    lock-step batch on one device: one copy of the data, whose large array ops use every core
    of a CPU from one device)."""
    if data_bytes < PARALLEL_DATA_LIMIT and ops.chain_shards(num_chains) > 1:
        return "parallel"
    return "vectorized"


def _check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}.")
    return int(value)


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
        ``"sequential"`` or ``"parallel"`` (chains split over the backend's devices, lock-step
        within each, where it has several; a thread per chain otherwise). ``None`` picks
        ``"parallel"`` when the chains split over several devices (JAX: one CPU device per core
        is arranged when ppl starts JAX, see :mod:`ppl.backends.jax.compile`; or several
        GPUs) and the model's array arguments total less than 1 MiB
        (:data:`PARALLEL_DATA_LIMIT`), else ``"vectorized"``; the progress bar shows the
        choice. Every device of a ``"parallel"`` run holds its own copy of the data, so large
        data stay on one device: one copy, and there the gradient's large array ops (a
        regression's ``X @ beta``) already use every core (logistic regression, N = 100,000,
        D = 100 on JAX with 4 chains: 1.3 ms per gradient against 2.7 ms over 4 host
        devices, and 100 MB less memory).
    thinning
        Keep every ``thinning``-th draw.
    progress_bar
        Show a tqdm bar (phase, iterations per second, step size, divergences); when the
        output is not a terminal, a plain line every ~5% of the run instead.
    chunk_size
        Iterations per call (default: on backends whose control flow compiles,
        ``backend.compiles_control_flow``, as many as take ~0.25 s, up to the longer phase,
        1000, and 32 MB of draws per call; 10 on the others). The progress bar moves and
        Ctrl-C is answered between calls.
    jit_model_args
        Accepted for NumPyro's signature; ppl always passes the model's array arguments to
        its compiled programs as arguments, so new data of the same shapes never recompiles.

    Notes
    -----
    After a run, :class:`~ppl.inference.run_warnings.SamplingWarning` warnings report
    divergences, R-hat above 1.01 or bulk ESS below 100 per chain (naming the sites) and draws
    that hit ``max_tree_depth``, each with what to try.

    Ctrl-C (``KeyboardInterrupt``) during :meth:`run` keeps the draws made so far on the object
    (``mcmc.interrupted`` is then ``True``; :meth:`get_samples`, :meth:`summary` and
    :meth:`to_arviz` use them: the chains that made draws, cut to the shortest), prints a
    one-line note and re-raises the ``KeyboardInterrupt``, so a script stops while an
    interactive session keeps ``mcmc``.

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
                 thinning=1, progress_bar=True, chunk_size=None, jit_model_args=False):
        if not all(hasattr(kernel, a) for a in ("setup", "init", "warmup_flags", "build_iteration",
                                                "empty_draw")):
            raise TypeError(f"kernel must be a ppl kernel such as NUTS(model) or HMC(model), "
                            f"got {type(kernel).__name__}.")
        self.kernel = kernel
        self.num_warmup = _check_int("num_warmup", num_warmup, 0)
        self.num_samples = _check_int("num_samples", num_samples, 1)
        self.num_chains = _check_int("num_chains", num_chains, 1)
        self.thinning = _check_int("thinning", thinning, 1)
        if chain_method is not None and chain_method not in CHAIN_METHODS:
            raise ValueError(f"chain_method must be one of {CHAIN_METHODS} or None, got "
                             f"{chain_method!r}.")
        self.chain_method = chain_method
        self.progress_bar = bool(progress_bar)
        self.chunk_size = None if chunk_size is None else _check_int("chunk_size", chunk_size, 1)
        if not isinstance(jit_model_args, bool):
            raise TypeError(f"jit_model_args must be True or False, got {jit_model_args!r}.")
        self.last_state: MCMCState | None = None
        self.post_warmup_state: MCMCState | None = None
        self._result: RunResult | None = None
        self._postprocess = None
        self._samples = None
        self._model_call = None
        self._latent = None         # the sampled sites' names (None: every site, or flat z)
        self._periodic = {}         # {site: period} of those judged by their cos and sin
        #: ``True`` when the last run was stopped by Ctrl-C (``KeyboardInterrupt``).
        self.interrupted = False
        self._schedule = (0, 0)     # (warmup, sampling) iterations the last run was to make
        #: wall seconds of the last run: ``setup`` (model tracing, initialisation), ``compile``,
        #: ``warmup``, ``sampling`` (see :attr:`ChainRunner.timings`)
        self.timings: dict[str, float] = {}

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
        for name in extra_fields:
            if name not in _STATS:
                raise ValueError(f"extra_fields: unknown field {name!r}; available: {_STATS}.")
        key = random.as_key(rng_key)
        args, kwargs = as_backend_data(args, kwargs)       # NumPy data as the backend's arrays
        self._result, self._samples, self.interrupted = None, None, False
        try:
            result, next_key = self._sample(key, args, kwargs, init_params, num_samples)
        except KeyboardInterrupt:
            self.interrupted = True
            print("ppl: MCMC interrupted while setting up the model, before warmup: no draws "
                  "were taken.", file=sys.stderr)
            raise
        self._result = result
        self.last_state = MCMCState(result.last[0], result.last[1], next_key)
        if result.interrupted:
            self.interrupted = True
            print(f"ppl: {self._interrupt_note()}", file=sys.stderr)
            raise KeyboardInterrupt
        if num_samples:
            # stacklevel: warn_problems <- _run <- run <- the user's call
            warn_problems(run_problems(self._numpy_samples(latent_only=True), result.stats,
                                       target_accept_prob=getattr(self.kernel,
                                                                  "target_accept_prob", None),
                                       max_tree_depth=getattr(self.kernel, "max_tree_depth",
                                                              None),
                                       periodic=self._periodic),
                          stacklevel=3)

    def _sample(self, key, args, kwargs, init_params, num_samples):
        # backend settings for many small calls and the data (torch: one intra-op thread,
        # malloc's mmap threshold for large data)
        start = time.perf_counter()
        data_bytes = data_nbytes(args, kwargs)
        with ops.backend().sampling_scope(data_bytes=data_bytes):
            # every key from splits in two (no compiled program on a first run)
            k_setup, k_run = random.split_keys(key, 2)
            k_init, k_next = random.split_keys(k_setup, 2)
            setup = self.kernel.setup(k_init, args, kwargs, init_params, self.num_chains)
            method = self.chain_method or default_chain_method(self.num_chains, data_bytes)
            program, data = get_program(self.kernel, setup, args, kwargs,
                                        num_chains=self.num_chains,
                                        parallel=method == "parallel")
            carry, num_warmup = self._start(setup, program, data)
            self._postprocess = (program.postprocess, data)
            self._model_call = (args, kwargs)
            self._latent = None if setup.layout is None else set(setup.layout.names)
            self._periodic = {} if setup.layout is None else setup.layout.periodic
            self._schedule = (num_warmup, num_samples)
            runner = ChainRunner(self.kernel, program, data, num_warmup=num_warmup,
                                 num_samples=num_samples, thinning=self.thinning,
                                 chunk_size=self.chunk_size, progress_bar=self.progress_bar)
            setup_seconds = time.perf_counter() - start
            result = runner.run(method, carry, k_run)
            self.timings = {"setup": setup_seconds, **runner.timings}
            return result, k_next

    def _interrupt_note(self) -> str:
        """One line: where Ctrl-C stopped the last run and what was kept."""
        (warmup, samples), result = self._schedule, self._result
        if result.num_done < warmup or result.positions.shape[1] == 0:
            return (f"MCMC interrupted during warmup at iteration {result.num_done} of "
                    f"{warmup}: no draws were taken (run it again to sample).")
        chains = result.positions.shape[0]
        return (f"MCMC interrupted at sampling iteration {result.num_done - warmup} of "
                f"{samples}: kept {result.positions.shape[1]} draws of each of {chains} "
                f"chain{'s' if chains > 1 else ''} on the MCMC object (mcmc.interrupted is "
                f"True; get_samples(), summary(), to_arviz() use them).")

    def _start(self, setup, program, data):
        """The carry to start from, and the number of warmup iterations still to run."""
        init_position, start = setup.init_position, self.post_warmup_state
        if start is not None:
            got = tuple(ops.shape(start.hmc_state.position))
            if got != tuple(ops.shape(init_position)):
                raise ValueError(
                    f"post_warmup_state has positions of shape {got}, this run needs "
                    f"{tuple(ops.shape(init_position))} (num_chains, D).")
            return (start.hmc_state, start.adapt_state), 0
        if setup.init_values is not None:
            carry = program.init_from(init_position, *setup.init_values)
        else:
            carry = program.init(init_position, data)
        pe = np.asarray(ops.to_numpy(carry[0].potential_energy))
        if not np.all(np.isfinite(pe)):
            raise ValueError(
                f"The potential energy is not finite at the initial point of chain(s) "
                f"{np.flatnonzero(~np.isfinite(pe)).tolist()}: pass init_params inside the "
                f"support (unconstrained space) or use another init_strategy.")
        return carry, self.num_warmup

    # ------------------------------------------------------------------ results
    def _require_run(self):
        if self._result is None:
            if self.interrupted:
                raise RuntimeError("No draws: the last run was interrupted before warmup "
                                   "started; call mcmc.run(rng_key, *model_args) again.")
            raise RuntimeError("No draws yet: call mcmc.run(rng_key, *model_args) first.")
        result = self._result
        if result.positions.shape[1] == 0:
            if self.interrupted:
                raise RuntimeError(f"No draws: {self._interrupt_note()}")
            raise RuntimeError("No draws: warmup() only adapts; call mcmc.run(rng_key, "
                               "*model_args) to sample.")
        return result

    def get_samples(self, group_by_chain: bool = False):
        """The draws: ``{site: array}`` of the active backend, ``(chains * draws, ...)`` or
        ``(chains, draws, ...)`` with ``group_by_chain``; with ``potential_fn=`` an array of
        flat unconstrained positions."""
        result = self._require_run()
        C, N, D = result.positions.shape
        if self._samples is None:       # kept flat: reshaping a device array compiles (JAX)
            dtype = ops.backend().dtype
            flat = result.positions.reshape(C * N, D)
            postprocess, data = self._postprocess or (None, ())
            if postprocess is None:
                self._samples = ops.asarray(flat, dtype)
            elif C * N == 0:
                self._samples = {}
            else:
                self._samples = dict(postprocess(ops.asarray(flat, dtype), data))
        return tree.map(lambda v: ops.reshape(v, (C, N) + tuple(ops.shape(v))[1:])
                        if group_by_chain else v, self._samples)

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

    def _numpy_samples(self, latent_only=False):
        """``{site: (C, N, ...)}`` NumPy arrays (grouped on the host: no device reshape); with
        ``latent_only``, the sampled sites only (no deterministic ones)."""
        samples = self.get_samples()
        if not isinstance(samples, dict):
            samples = {"z": samples}
        if latent_only and self._latent is not None:
            samples = {k: v for k, v in samples.items() if k in self._latent}
        C, N = self._result.positions.shape[:2]
        return {k: np.asarray(ops.to_numpy(v)).reshape((C, N) + tuple(ops.shape(v))[1:])
                for k, v in samples.items()}

    def summary(self, prob: float = 0.9) -> dict:
        """Per-site summary (mean, sd, HPDI, bulk/tail ESS, R-hat, MCSE); see
        :func:`ppl.diagnostics.summary`."""
        return diagnostics.summary(self._numpy_samples(), prob=prob, group_by_chain=True)

    def print_summary(self, prob: float = 0.9, exclude_deterministic: bool = True) -> None:
        """Print the summary table of the sampled sites (and of the deterministic ones unless
        ``exclude_deterministic``, as NumPyro's), the number of divergences and, after Ctrl-C,
        that the draws are partial."""
        samples = self._numpy_samples(latent_only=exclude_deterministic)
        diagnostics.print_summary(samples, prob=prob, group_by_chain=True,
                                  divergences=self._require_run().stats["diverging"])
        if self.interrupted:
            print(f"Partial: {self._interrupt_note()}")

    def to_arviz(self, *, coords: dict | None = None, dims: dict | None = None,
                 posterior_predictive: dict | None = None, prior: dict | None = None):
        """An ``arviz.InferenceData`` of the run (needs ``pip install "ppl[arviz]"``).

        Groups: ``posterior``, ``sample_stats`` (NumPyro's and ArviZ's names),
        ``observed_data``, ``log_likelihood`` (pointwise, per observed site: ``az.loo`` and
        ``az.waic`` work on it), and ``posterior_predictive`` / ``prior`` /
        ``prior_predictive`` from :class:`~ppl.inference.Predictive` output when given.
        Dimensions are named after the model's plates, shared by all groups.

        Parameters
        ----------
        coords
            ``dimension -> coordinate values``, e.g. ``{"J": school_names}``.
        dims
            ``variable -> dimension names``, overriding the plate names.
        posterior_predictive
            ``Predictive(model, mcmc.get_samples())(key, ...)`` output.
        prior
            ``Predictive(model, num_samples=S)(key, ...)`` output; its observed sites become
            ``prior_predictive``.
        """
        result = self._require_run()
        samples = self.get_samples(group_by_chain=True)
        observed, groups, plate_dims = mcmc_groups(
            getattr(self.kernel, "model", None), self._model_call, samples,
            posterior_predictive=posterior_predictive, prior=prior)
        idata = to_inference_data(self._numpy_samples(), dict(result.stats), observed,
                                  groups=groups, coords=coords,
                                  dims={**plate_dims, **(dims or {})})
        if self.interrupted:
            idata.posterior.attrs["interrupted"] = self._interrupt_note()
        return idata
