"""The MCMC driver: runs a kernel's warmup and sampling for one or more chains and serves the
draws (samples, statistics, summaries, ArviZ).

``MCMC`` is thin: the kernel contract (``setup``, ``init``, ``warmup_flags``,
``build_iteration``) is documented in :mod:`ppl.inference.kernels`, running chunks and chains in
:mod:`ppl.inference.chains`.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from ppl import diagnostics, ops, random
from ppl.backends import tree
from ppl.handlers import seed, trace
from ppl.inference import hmc
from ppl.inference.adaptation import AdaptState
from ppl.inference.arviz import to_inference_data
from ppl.inference.chains import CHAIN_METHODS, ChainRunner, RunResult
from ppl.inference.programs import get_program

__all__ = ["MCMC", "MCMCState"]

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


def default_chain_method(num_chains: int) -> str:
    """``"parallel"`` when the active backend can spread ``num_chains`` chains over several
    devices (``ops.chain_shards``; JAX on a multi-core CPU or several GPUs), else
    ``"vectorized"`` (one lock-step batch, the fastest on one device)."""
    return "parallel" if ops.chain_shards(num_chains) > 1 else "vectorized"


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
        GPUs), else ``"vectorized"``; the progress bar shows the choice.
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
        self.last_state: MCMCState | None = None
        self.post_warmup_state: MCMCState | None = None
        self._result: RunResult | None = None
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
        for name in extra_fields:
            if name not in _STATS:
                raise ValueError(f"extra_fields: unknown field {name!r}; available: {_STATS}.")
        key = random.as_key(rng_key)
        # backend settings for many small calls (torch: one intra-op thread)
        with ops.backend().sampling_scope():
            k_init, k_run = random.split(key, 2)
            setup = self.kernel.setup(k_init, args, kwargs, init_params, self.num_chains)
            method = self.chain_method or default_chain_method(self.num_chains)
            program, data = get_program(self.kernel, setup, args, kwargs,
                                        num_chains=self.num_chains,
                                        parallel=method == "parallel")
            carry, num_warmup = self._start(setup.init_position, program, data)
            self._postprocess = setup.postprocess_fn
            self._model_call = (args, kwargs)
            self._samples = None
            runner = ChainRunner(self.kernel, program, data, num_warmup=num_warmup,
                                 num_samples=num_samples, thinning=self.thinning,
                                 chunk_size=self.chunk_size, progress_bar=self.progress_bar)
            result = runner.run(method, carry, k_run)
        if result.interrupted:
            warnings.warn("MCMC interrupted: keeping the draws made so far.", stacklevel=3)
        self._result = result
        next_key = random.fold_in(k_run, 2**31 - 1)
        self.last_state = MCMCState(result.last[0], result.last[1], next_key)

    def _start(self, init_position, program, data):
        """The carry to start from, and the number of warmup iterations still to run."""
        start = self.post_warmup_state
        if start is not None:
            got = tuple(ops.shape(start.hmc_state.position))
            if got != tuple(ops.shape(init_position)):
                raise ValueError(
                    f"post_warmup_state has positions of shape {got}, this run needs "
                    f"{tuple(ops.shape(init_position))} (num_chains, D).")
            return (start.hmc_state, start.adapt_state), 0
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
            raise RuntimeError("No draws yet: call mcmc.run(rng_key, *model_args) first.")
        return self._result

    def get_samples(self, group_by_chain: bool = False):
        """The draws: ``{site: array}`` of the active backend, ``(chains * draws, ...)`` or
        ``(chains, draws, ...)`` with ``group_by_chain``; with ``potential_fn=`` an array of
        flat unconstrained positions."""
        result = self._require_run()
        if self._samples is None:
            C, N, D = result.positions.shape
            dtype = ops.backend().dtype
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
        return diagnostics.summary(self._numpy_samples(), prob=prob, group_by_chain=True)

    def print_summary(self, prob: float = 0.9) -> None:
        """Print the summary table and the number of divergences."""
        diagnostics.print_summary(self._numpy_samples(), prob=prob, group_by_chain=True,
                                  divergences=self._require_run().stats["diverging"])

    def to_arviz(self):
        """An ``arviz.InferenceData`` with ``posterior``, ``sample_stats`` (incl.
        ``diverging``) and ``observed_data`` (needs ``pip install "ppl[arviz]"``)."""
        result = self._require_run()
        return to_inference_data(self._numpy_samples(), dict(result.stats),
                                 observed=self._observed())

    def _observed(self):
        model = getattr(self.kernel, "model", None)
        if model is None or self._model_call is None:
            return None
        args, kwargs = self._model_call
        tr = trace(seed(model, rng_seed=0)).get_trace(*args, **kwargs)
        return {name: site["value"] for name, site in tr.items()
                if site["type"] == "sample" and site["is_observed"]} or None
