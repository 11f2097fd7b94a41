"""The user-facing MCMC kernels :class:`NUTS` and :class:`HMC`, and the contract the
:class:`~ppl.inference.MCMC` driver runs them by.

A kernel object holds the settings (model or potential, adaptation options, structural choices
such as ``max_tree_depth``). The driver asks it, in this order:

1. ``setup(rng_key, model_args, model_kwargs, init_params, num_chains) -> KernelSetup``: the
   flat unconstrained starting points ``(C, D)``, the potential ``z (D,) -> U(z)``, and the map
   back to constrained site values;
2. ``init(position, potential_and_grad_fn) -> carry``: the sampler state and the warmup
   (adaptation) state of ``C`` chains;
3. ``warmup_flags(num_warmup) -> (5, num_warmup)`` booleans: per warmup iteration the
   :class:`WarmupFlags` (the warmup schedule);
4. ``build_iteration(potential_and_grad_fn) -> iteration``, a pure function
   ``iteration(rng_key, carry, flags) -> (carry, Draw)`` run once per warmup iteration (flags
   from step 3) and once per sampling iteration (all flags false); and ``empty_draw(carry)``,
   the ``Draw`` of an iteration that is skipped (padding of the last chunk).

The driver handles everything else (chunks, chains, progress, collection); the transitions live
in :mod:`ppl.inference.nuts` and :mod:`ppl.inference.hmc`, the adaptation in
:mod:`ppl.inference.adaptation`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ppl import ops, random
from ppl.inference import adaptation, hmc, nuts, step_size_search
from ppl.inference.init_params import flat_init
from ppl.inference.initialization import init_to_uniform
from ppl.inference.mass_matrix import asks_for_dense, check_mass_arguments, plan_mass_matrix
from ppl.inference.model_setup import initialize_model

__all__ = ["NUTS", "HMC", "KernelSetup", "WarmupFlags", "Draw"]


class KernelSetup(NamedTuple):
    """What ``setup`` returns: starting points, potential, postprocessing, layout."""

    init_position: object        # (C, D) unconstrained
    potential_fn: Callable       # z (D,) -> U(z)
    postprocess_fn: Callable | None   # z (D,) -> {site: constrained value}; None: raw z
    layout: object | None        # ParamLayout of the model's latent sites
    potential_of_args: Callable  # (model_args, model_kwargs) -> potential_fn, for programs
    #                              that take the data as arguments (ppl.inference.programs)
    postprocess_of_args: Callable | None = None   # likewise for postprocess_fn
    chain_plate: object = None   # the model run once for all chains (inference.chain_plate)
    init_values: tuple | None = None  # (U (C,), grad U (C, D)) at init_position, if known


class WarmupFlags(NamedTuple):
    """What one iteration does besides its transition (scalar bools)."""

    warmup: object        # adapt the step size after the transition (dual averaging)
    reset: object         # before it: restart step-size adaptation (the heuristic)
    update_mass: object   # before it: take the window's mass-matrix estimate
    collect: object       # after it: add the draw to the mass-matrix estimator
    last: object          # the last warmup iteration: fix the averaged step size


class Draw(NamedTuple):
    """What one iteration returns per chain: the draw and its statistics."""

    position: object          # (C, D)
    potential_energy: object  # (C,)
    info: NamedTuple          # NUTSInfo / HMCInfo
    step_size: object         # (C,) step size the transition used


def _check_prob(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}.")


def _check_positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 \
            or not math.isfinite(value):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}.")


class _HMCFamily:
    """Shared settings and setup of :class:`NUTS` and :class:`HMC`."""

    #: ``position (C, D) -> info``: the all-zero statistics of a skipped iteration (a plain
    #: function: a compiled torch loop keys closures by code, a class by identity)
    _empty_info: Callable

    def __init__(self, model=None, *, potential_fn=None, step_size=1.0, adapt_step_size=True,
                 adapt_mass_matrix=True, dense_mass=False, target_accept_prob=0.8,
                 init_strategy=None, max_delta_energy=1000.0, mass_matrix_estimator="draws",
                 inverse_mass_matrix=None):
        if (model is None) == (potential_fn is None):
            raise ValueError(
                f"{type(self).__name__}: pass exactly one of model= (a model function) or "
                "potential_fn= (z -> potential energy, with init_params given to MCMC.run).")
        if model is not None and not callable(model):
            raise TypeError(f"model must be callable, got {type(model).__name__}.")
        if potential_fn is not None and not callable(potential_fn):
            raise TypeError(f"potential_fn must be callable, got {type(potential_fn).__name__}.")
        _check_positive("step_size", step_size)
        _check_prob("target_accept_prob", target_accept_prob)
        _check_positive("max_delta_energy", max_delta_energy)
        dense_mass, inverse_mass_matrix = check_mass_arguments(
            dense_mass, inverse_mass_matrix, has_model=model is not None)
        if mass_matrix_estimator not in adaptation.ESTIMATORS:
            raise ValueError(f"mass_matrix_estimator must be one of {adaptation.ESTIMATORS}, "
                             f"got {mass_matrix_estimator!r}.")
        if mass_matrix_estimator == "gradients" and asks_for_dense(dense_mass,
                                                                   inverse_mass_matrix):
            raise ValueError("mass_matrix_estimator='gradients' estimates a diagonal mass "
                             "matrix: use it with dense_mass=False, or use 'draws'.")
        self.mass_matrix_estimator = mass_matrix_estimator
        self.model = model
        self.potential_fn = potential_fn
        self.step_size = float(step_size)
        self.adapt_step_size = bool(adapt_step_size)
        self.adapt_mass_matrix = bool(adapt_mass_matrix)
        self.dense_mass = dense_mass
        self.inverse_mass_matrix = inverse_mass_matrix
        self._mass_plan = None      # the run's MassMatrixPlan, made by setup (needs the layout)
        self.target_accept_prob = float(target_accept_prob)
        self.max_delta_energy = float(max_delta_energy)
        self.init_strategy = init_to_uniform() if init_strategy is None else init_strategy

    # ------------------------------------------------------------------ driver interface
    def setup(self, rng_key, model_args, model_kwargs, init_params, num_chains) -> KernelSetup:
        """Starting points ``(num_chains, D)``, the potential and the postprocessing map."""
        if self.model is None:
            if init_params is None:
                raise ValueError(
                    "With potential_fn=, pass the starting point to run: "
                    "mcmc.run(key, init_params=z0) with z0 of shape (D,) or (num_chains, D).")
            z = flat_init(init_params, num_chains, None)
            self._mass_plan = plan_mass_matrix(self.dense_mass, self.inverse_mass_matrix, None,
                                               ops.shape(z)[-1])
            return KernelSetup(z, self.potential_fn, None, None, lambda a, k: self.potential_fn)
        info = initialize_model(rng_key, self.model, model_args, model_kwargs,
                                init_strategy=self.init_strategy, num_chains=num_chains)
        z, values = info.init_position, (info.init_potential_energy, info.init_grad)
        if init_params is not None:
            z, values = flat_init(init_params, num_chains, info.layout), None
        self._mass_plan = plan_mass_matrix(self.dense_mass, self.inverse_mass_matrix,
                                           info.layout, ops.shape(z)[-1])
        return KernelSetup(z, info.potential_fn, info.postprocess_fn, info.layout,
                           info.potential_of_args, info.postprocess_of_args,
                           info.chain_plate, values)

    def build_kernel(self) -> Callable:
        """``kernel(rng_key, state, potential_and_grad_fn, step_size, inverse_mass_matrix,
        one_step=False)``; ``one_step`` (a scalar bool) makes the transition one leapfrog step,
        the step-size heuristic's trial."""
        raise NotImplementedError

    def init(self, position, potential_and_grad_fn):
        """The carry ``(HMCState, AdaptState)`` of chains starting at ``position`` ``(C, D)``."""
        state = hmc.init(position, potential_and_grad_fn)
        C, D = ops.shape(position)
        plan = self._mass_plan or plan_mass_matrix(self.dense_mass, self.inverse_mass_matrix,
                                                   None, D)
        adapt = adaptation.adapt_init(self.step_size, C, D, dense=plan.dense,
                                      dtype=ops.dtype_of(position),
                                      estimator=self.mass_matrix_estimator,
                                      initial=plan.initial, structure=plan.structure)
        return state, adapt

    def warmup_flags(self, num_warmup: int) -> np.ndarray:
        """``(5, num_warmup)`` booleans: the :class:`WarmupFlags` of every warmup iteration
        (Stan's windowed schedule, :func:`~ppl.inference.adaptation.warmup_schedule`)."""
        sched = adaptation.warmup_schedule(num_warmup, adapt_step_size=self.adapt_step_size,
                                           adapt_mass_matrix=self.adapt_mass_matrix)
        flags = np.zeros((5, num_warmup), bool)
        flags[0] = True
        flags[1], flags[2], flags[3] = sched.reset, sched.update_mass, sched.collect
        if num_warmup:
            flags[4, -1] = True
        return flags

    def build_iteration(self, potential_and_grad_fn) -> Callable:
        """``iteration(rng_key, carry, flags) -> (carry, Draw)``: at the start of a warmup
        stage the step-size heuristic and mass-matrix update, then a transition, then the
        dual-averaging and Welford updates, as the :class:`WarmupFlags` say."""
        transition = self.build_kernel()
        target = self.target_accept_prob
        adapt_step_size = self.adapt_step_size
        # (the iteration's closures hold no kernel object, which a compiled torch loop would
        # key by identity: a new key, and a trace, for every kernel)
        empty_info = type(self)._empty_info

        def iteration(rng_key, carry, flags: WarmupFlags):
            state, adapt = carry
            adapt = ops.cond(flags.update_mass, adaptation.take_mass_estimate, lambda a: a,
                             adapt)

            def step(key, step_size, one_step=False):
                return transition(key, state, potential_and_grad_fn, step_size,
                                  adapt.inverse_mass_matrix, one_step=one_step)

            if not adapt_step_size:
                step_size = adapt.step_size
                state, info = step(rng_key, step_size)
            elif ops.backend().compiles_control_flow:
                # Stan's heuristic at a stage's start, then the transition: one loop, one call
                # of the transition, so the program holds the model's gradient once
                empty = (state, empty_info(state.position))
                state, info, step_size = step_size_search.search_step_size(
                    step, rng_key, adapt.step_size, flags.reset, empty)
            else:
                # loops run in Python, or (torch) as graphs compiled apart, where a transition
                # inside the heuristic's loop made a chunk graph AOTInductor got wrong: the
                # trials take leapfrog steps of their own, at a stage's start only
                k_search, k_step = random.split(rng_key, 2)
                step_size = ops.cond(
                    flags.reset,
                    lambda eps: step_size_search.find_reasonable_step_size(
                        k_search, state, potential_and_grad_fn, eps, adapt.inverse_mass_matrix),
                    lambda eps: eps, adapt.step_size)
                state, info = step(k_step, step_size)
            if adapt_step_size:
                adapt = adaptation.restart_dual_averaging(adapt, step_size, flags.reset)
            adapt = adaptation.adapt_update(adapt, state.position, info.accept_prob,
                                            warmup=flags.warmup, collect=flags.collect,
                                            last=flags.last, target_accept_prob=target,
                                            adapt_step_size=adapt_step_size,
                                            grad=state.potential_energy_grad)
            return (state, adapt), Draw(state.position, state.potential_energy, info, step_size)

        return iteration

    @classmethod
    def empty_draw(cls, carry) -> Draw:
        """The ``Draw`` of a skipped iteration (all-zero statistics). A class method: a
        compiled chunk of iterations holding it is the same for every kernel of the class."""
        state, adapt = carry
        return Draw(state.position, state.potential_energy, cls._empty_info(state.position),
                    adapt.step_size)

    def _repr_args(self):
        target = "model=" + getattr(self.model, "__name__", "?") if self.model is not None \
            else "potential_fn=..."
        return f"{target}, step_size={self.step_size}, dense_mass={self.dense_mass}"


class NUTS(_HMCFamily):
    """The No-U-Turn Sampler (Hoffman & Gelman 2014) with Stan's adaptation.

    Parameters
    ----------
    model
        A model function (``ppl.sample`` statements). Either ``model`` or ``potential_fn``.
    potential_fn
        ``z (D,) -> U(z)``, the negative log density of a flat unconstrained vector; the start
        is then given as ``mcmc.run(key, init_params=z0)``.
    step_size
        Initial step size (tuned during warmup when ``adapt_step_size``).
    adapt_step_size
        Tune the step size by dual averaging toward ``target_accept_prob``.
    adapt_mass_matrix
        Estimate the inverse mass matrix in Stan's windows; the final stage, where only the
        step size adapts, is 15 % of warmup (at least Stan's 50 iterations), which brings the
        realised acceptance to the target (see :func:`~ppl.inference.adaptation.warmup_schedule`).
    dense_mass
        Full covariance (``True``), diagonal (``False``), or a list of tuples of site names,
        each a dense block of a block-diagonal inverse mass matrix (other sites diagonal), as
        in NumPyro (:mod:`~ppl.inference.mass_matrix`).
    inverse_mass_matrix
        Starting inverse mass matrix (kept with ``adapt_mass_matrix=False``): a ``(D,)`` or
        ``(D, D)`` array, or a dict from tuples of site names to their blocks.
    target_accept_prob
        Target of the mean acceptance statistic.
    max_tree_depth
        At most ``2^max_tree_depth - 1`` leapfrog steps per draw.
    init_strategy
        Where chains start (default ``init_to_uniform()``).
    max_delta_energy
        Energy error above which a transition is divergent (default 1000, as Stan).
    mass_matrix_estimator
        ``"draws"`` (Stan: the variance of each window's draws) or ``"gradients"``
        (``sqrt(var(draws) / var(gradients))``, the diagonal minimising the Fisher divergence
        to a Gaussian, as nutpie; Seyboldt, Carlson & Carpenter). Diagonal mass only.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> from ppl.inference import MCMC, NUTS
    >>> def model():
    ...     ppl.sample("x", dist.Normal(0.0, 1.0))
    >>> mcmc = MCMC(NUTS(model), num_warmup=100, num_samples=100, progress_bar=False)
    >>> mcmc.run(0)
    >>> mcmc.get_samples()["x"].shape
    (100,)
    """

    _empty_info = staticmethod(nuts.empty_info)

    def __init__(self, model=None, *, potential_fn=None, step_size=1.0, adapt_step_size=True,
                 adapt_mass_matrix=True, dense_mass=False, target_accept_prob=0.8,
                 max_tree_depth=10, init_strategy=None, max_delta_energy=1000.0,
                 mass_matrix_estimator="draws", inverse_mass_matrix=None):
        super().__init__(model, potential_fn=potential_fn, step_size=step_size,
                         adapt_step_size=adapt_step_size, adapt_mass_matrix=adapt_mass_matrix,
                         dense_mass=dense_mass, target_accept_prob=target_accept_prob,
                         init_strategy=init_strategy, max_delta_energy=max_delta_energy,
                         mass_matrix_estimator=mass_matrix_estimator,
                         inverse_mass_matrix=inverse_mass_matrix)
        nuts.build_transition(max_tree_depth=max_tree_depth, jit=False)   # checks it
        self.max_tree_depth = max_tree_depth

    def build_kernel(self) -> Callable:
        return nuts.build_kernel(max_tree_depth=self.max_tree_depth,
                                 max_delta_energy=self.max_delta_energy)

    def __repr__(self):
        return f"NUTS({self._repr_args()}, max_tree_depth={self.max_tree_depth})"


class HMC(_HMCFamily):
    """Hamiltonian Monte Carlo with a fixed trajectory (Duane et al. 1987; Neal 2011).

    Parameters are those of :class:`NUTS`, plus:

    num_steps
        Leapfrog steps per draw. ``None``: ``ceil(trajectory_length / step_size)`` (recomputed
        as the step size adapts, capped at ``max_num_steps``).
    trajectory_length
        Integration time when ``num_steps`` is ``None``.
    num_steps_jitter
        In ``[0, 1)``: each draw and chain uses ``ceil(n * (1 - jitter * u))`` steps with
        ``u ~ Uniform(0, 1)``, which breaks the periodicities of a fixed trajectory.
    max_num_steps
        Upper bound of the number of steps when it is derived from ``trajectory_length``.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> from ppl.inference import MCMC, HMC
    >>> def model():
    ...     ppl.sample("x", dist.Normal(0.0, 1.0))
    >>> mcmc = MCMC(HMC(model, num_steps=10), num_warmup=100, num_samples=100,
    ...             progress_bar=False)
    >>> mcmc.run(0)
    """

    _empty_info = staticmethod(hmc.empty_info)

    def __init__(self, model=None, *, potential_fn=None, step_size=1.0, num_steps=None,
                 trajectory_length=2 * math.pi, adapt_step_size=True, adapt_mass_matrix=True,
                 dense_mass=False, target_accept_prob=0.8, init_strategy=None,
                 num_steps_jitter=0.0, max_num_steps=1024, max_delta_energy=1000.0,
                 inverse_mass_matrix=None):
        super().__init__(model, potential_fn=potential_fn, step_size=step_size,
                         adapt_step_size=adapt_step_size, adapt_mass_matrix=adapt_mass_matrix,
                         dense_mass=dense_mass, target_accept_prob=target_accept_prob,
                         init_strategy=init_strategy, max_delta_energy=max_delta_energy,
                         inverse_mass_matrix=inverse_mass_matrix)
        if num_steps is not None and (isinstance(num_steps, bool) or not isinstance(
                num_steps, int) or num_steps < 1):
            raise ValueError(f"num_steps must be a positive int or None, got {num_steps!r}.")
        _check_positive("trajectory_length", trajectory_length)
        if isinstance(num_steps_jitter, bool) or not isinstance(num_steps_jitter, (int, float)) \
                or not 0 <= num_steps_jitter < 1:
            raise ValueError(f"num_steps_jitter must be in [0, 1), got {num_steps_jitter!r}.")
        if isinstance(max_num_steps, bool) or not isinstance(max_num_steps, int) \
                or max_num_steps < 1:
            raise ValueError(f"max_num_steps must be a positive int, got {max_num_steps!r}.")
        self.num_steps = num_steps
        self.trajectory_length = float(trajectory_length)
        self.num_steps_jitter = float(num_steps_jitter)
        self.max_num_steps = max_num_steps

    def build_kernel(self) -> Callable:
        fixed, length = self.num_steps, self.trajectory_length
        jitter, cap, max_de = self.num_steps_jitter, self.max_num_steps, self.max_delta_energy

        def kernel(rng_key, state, potential_and_grad_fn, step_size, inverse_mass_matrix,
                   one_step=False):
            k_jit, k_step = random.split(rng_key, 2)
            if fixed is None:
                n = ops.clip(ops.ceil(length / step_size), 1.0, float(cap))
            else:
                n = ops.full(ops.shape(step_size), float(fixed), ops.dtype_of(step_size))
            if jitter > 0:
                u = random.uniform(k_jit, ops.shape(step_size), ops.dtype_of(step_size))
                n = ops.maximum(ops.ceil(n * (1.0 - jitter * u)), 1.0)
            if one_step is not False:       # the step-size heuristic's trial
                n = ops.where(one_step, ops.ones_like(n), n)
            return hmc.step(k_step, state, potential_and_grad_fn, step_size, inverse_mass_matrix,
                            num_steps=n, max_delta_energy=max_de)

        return kernel

    def __repr__(self):
        return f"HMC({self._repr_args()}, num_steps={self.num_steps})"
