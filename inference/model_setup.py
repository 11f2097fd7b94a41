"""From a model to what samplers need: the flat unconstrained parameterisation of its latent
sites, the potential ``z -> -(log joint + log|det J|)``, the map back to constrained values, and
valid starting points (Stan's initialisation: retry until the density and its gradient are
finite, and say which sites are at fault when none is found).

The model's first trace gives the sites and shapes; on JAX it runs under ``ops.eval_shape``
(nothing compiles op by op). With ``init_to_uniform`` (Stan's default) the chains' starts are
one uniform draw in unconstrained space. Where the backend compiles (JAX, TensorFlow) they are
checked in one batched call of a compiled program (the potential and its gradient) that takes
the model's data as arguments and is cached per model and argument structure, so a second run
with a new seed or new data of the same shapes compiles nothing here; the potential and
gradient it returns start the sampler. The draw itself is eager (JAX draws from a concrete key
on the host: a Threefry hash inside the program cost ~0.1 CPU s of its compile). Only when a
chain's first draw is not finite does the per-chain retry loop run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ppl import ops, random
from ppl._messenger import get_stack
from ppl.distributions.transforms import biject_to
from ppl.enumeration import enum, first_enumerated_dim, is_enumerated
from ppl.handlers import seed, substitute, trace
from ppl.inference.chain_plate import ChainPlate, chain_plate
from ppl.inference.initialization import init_to_uniform, site_shape
from ppl.inference.program_data import as_backend_data, data_key, per_chain, split_data
from ppl.inference.recent import RecentModels
from ppl.inference.util import (
    ParamLayout,
    constrain_fn,
    period_of,
    potential_energy,
    run_unconstrained,
    site_log_prob,
)

__all__ = ["ModelInfo", "initialize_model"]

Array = Any


class ModelInfo(NamedTuple):
    """What ``initialize_model`` returns; see its docstring."""

    init_position: Array
    potential_fn: Callable
    postprocess_fn: Callable
    layout: ParamLayout
    #: ``(model_args, model_kwargs) -> potential_fn`` for other data of the same structure
    #: (enumerated sites summed out as in ``potential_fn``); compiled programs take the data
    #: as arguments through it
    potential_of_args: Callable
    #: ``(model_args, model_kwargs) -> postprocess_fn``, likewise
    postprocess_of_args: Callable | None = None
    #: the model's functions of many parameter vectors at once (``None`` for enumerated
    #: models), for backends whose ``vmap`` is a loop (:mod:`ppl.inference.chain_plate`)
    chain_plate: ChainPlate | None = None
    #: the potential energy and its gradient at ``init_position`` (as NumPyro's ``ParamInfo``),
    #: computed by the check that the starting points are valid
    init_potential_energy: Array | None = None
    init_grad: Array | None = None


#: model -> {(backend, argument structure, layout): compiled start (:func:`_batched_start`)}
_CHECKS = RecentModels(8)
#: model -> {(backend, argument structure, array shapes and dtypes): (layout, first enumerated
#: dim)} (:func:`_abstract_structure`)
_STRUCTURES = RecentModels(8)


def _batched_start(model, potential_of_args, layout, enumerated, split):
    """``start(z) -> (z (C, D), U (C,), grad (C, D))`` through a compiled program cached per
    model (see the module docstring); ``split()``: the arguments' ``split_data``."""
    data, rebuild, static = split()
    key = (data_key(static, layout), enumerated)
    cache = _CHECKS.of(model)
    if key not in cache:
        value_and_grad = per_chain(potential_of_args, rebuild, ops.value_and_grad)

        def start(z, values):
            return (z, *value_and_grad(z, values))

        cache[key] = ops.jit(start, once=True)
    return lambda z: cache[key](z, data)


def _first_draws_valid(start, flat, trace_key, num_chains, init_trace, layout):
    """``(z, U, grad U)`` at the first draw of every chain, when every one of them has a
    finite position, potential and gradient, else ``None``. The draws are ``flat``
    (:func:`init_to_uniform`'s, drawn directly in unconstrained space) or, without them, drawn
    as the retry loop draws them, from ``trace_key``."""
    x = flat if flat is not None else ops.stack(
        [_unconstrained_position(init_trace(random.split_keys(k, 2)[1]), layout)
         for k in random.split_keys(trace_key, num_chains)], axis=0)
    with np.errstate(all="ignore"):
        z, pe, grad = start(x)
    return None if _not_finite(z) or _not_finite(pe) or _not_finite(grad) else (z, pe, grad)


def _structure(model_trace):
    """``(layout, first enumerated dim or None)`` of a first model trace: the latent sites, their
    shapes, and where enumeration starts (``None``: nothing to enumerate). Only shapes and site
    metadata are read, so the trace may hold abstract values (:func:`_abstract_structure`)."""
    latents = _latent_sites(model_trace)
    _check_latents(latents)
    shapes, cshapes = [], []
    for name, site in latents:
        cshape = tuple(ops.shape(site["value"]))
        expected = site_shape(site)
        if cshape != expected:
            raise ValueError(
                f"The initial value of site {name!r} has shape {cshape}, but the site's "
                f"distribution gives shape {expected}."
            )
        cshapes.append(cshape)
        shapes.append(tuple(biject_to(site["fn"].support).inverse_shape(cshape)))
    layout = ParamLayout([n for n, _ in latents], shapes, cshapes,
                         periodic={n: p for n, site in latents
                                   if (p := period_of(site["fn"])) is not None})
    enumerated = any(is_enumerated(site) for site in model_trace.values())
    return layout, first_enumerated_dim(model_trace) if enumerated else None


def _abstract_structure(trace_of, key, model, split, strategy):
    """:func:`_structure` of the first model trace ``trace_of(args, kwargs)(key)``, run under
    ``ops.eval_shape``: on JAX the model runs on abstract values, so its eager ops (a compile per
    op and shape on a first run) do not run. A model that cannot run so (Python control flow on
    values) runs eagerly.

    Where ``eval_shape`` is abstract (``abstract_eval_shape``) the model's array arguments are
    abstract too, so the structure depends on the argument structure only (NumPy data and
    Python values by value, arrays by shape and dtype): it is kept per model for later runs,
    which then do not trace the model here (~4-8 ms per run of eight schools on JAX). Only for
    :func:`init_to_uniform`, whose values have the sites' own shapes (a start given with
    ``init_to_value`` is checked against them every time), and not under an outer handler,
    which may change what the model's sites are. ``split()``: the arguments' ``split_data``."""
    data, rebuild, static = split()
    cache = key_of = None
    if ops.backend().abstract_eval_shape and not get_stack() \
            and _uniform_radius(strategy) is not None:
        cache = _STRUCTURES.of(model)
        key_of = (data_key(static, None),
                  tuple((tuple(ops.shape(v)), str(ops.dtype_of(v))) for v in data))
        if key_of in cache:
            return cache[key_of]
    found = []
    try:
        ops.eval_shape(lambda k, values: found.append(_structure(trace_of(*rebuild(values))(k))),
                       key, data)
    except Exception:          # noqa: BLE001 - the eager run below raises the model's errors
        return _structure(trace_of(*rebuild(data))(key))
    if cache is not None:
        cache[key_of] = found[0]
    return found[0]


def _uniform_radius(strategy):
    """The radius of :func:`init_to_uniform`, whose starts are drawn directly in unconstrained
    space (one ``(C, D)`` draw, no model run), or ``None`` for any other strategy."""
    func = getattr(strategy, "func", strategy)
    if func is not init_to_uniform:
        return None
    return float((getattr(strategy, "keywords", None) or {}).get("radius", 2.0))


def _latent_sites(model_trace):
    """The continuous latent sites (enumerated discrete sites are summed out)."""
    return [(name, site) for name, site in model_trace.items()
            if site["type"] == "sample" and not site["is_observed"] and not is_enumerated(site)]


def _check_latents(latents):
    for name, site in latents:
        support = site["fn"].support
        if getattr(support, "is_discrete", False):
            raise ValueError(
                f"Site {name!r} is a discrete latent variable ({type(site['fn']).__name__}); "
                f"gradient-based samplers need continuous latents. Mark it "
                f"infer={{'enumerate': 'parallel'}} (or wrap the model in "
                f"ppl.inference.config_enumerate) to sum it out, or observe it."
            )


def _unconstrained_position(model_trace, layout):
    return layout.ravel({name: biject_to(model_trace[name]["fn"].support).inv(
        model_trace[name]["value"]) for name in layout.names})


def _not_finite(x) -> bool:
    return not np.all(np.isfinite(np.asarray(ops.to_numpy(x))))


def _diagnose(z, grad, layout, model, model_args, model_kwargs):
    """Names of the sites whose value, log-density or gradient is not finite at ``z``."""
    bad_value = [n for n, v in layout.unravel(z).items() if _not_finite(v)]
    bad_lp, bad_grad = [], []
    if not bad_value:
        model_trace, log_dets = run_unconstrained(model, model_args, model_kwargs,
                                                   layout.unravel(z), log_det=True)
        for name, site in model_trace.items():
            if site["type"] == "sample":
                lp = site_log_prob(site, log_dets.get(name))
                if lp is not None and _not_finite(lp):
                    bad_lp.append(name)
        if grad is not None:
            bad_grad = [n for n, g in layout.unravel(grad).items() if _not_finite(g)]
    return bad_value, bad_lp, bad_grad


def _find_valid_position(key, init_trace, layout, value_and_grad, model, model_args,
                         model_kwargs, *, max_tries, first, strategy):
    """``(z, U, grad U)`` at a finite starting point: ``first`` (an unconstrained position, or
    ``None``), then the strategy's draws from fresh keys, ``max_tries`` in all."""
    previous, z, grad, tried = None, None, None, 0
    for attempt in range(max_tries):
        if attempt == 0 and first is not None:
            z_new = first
        else:
            key, sub = random.split_keys(key, 2)
            z_new = _unconstrained_position(init_trace(sub), layout)
        z_np = np.asarray(ops.to_numpy(z_new))
        if previous is not None and np.array_equal(z_np, previous, equal_nan=True):
            break  # the strategy is deterministic: retrying gives the same point
        previous, z, grad, tried = z_np, z_new, None, tried + 1
        if not np.all(np.isfinite(z_np)):
            continue
        with np.errstate(all="ignore"):  # failed attempts are expected; reported below
            pe, grad = value_and_grad(z)
        if not (_not_finite(pe) or _not_finite(grad)):
            return z, pe, grad
    with np.errstate(all="ignore"):
        bad_value, bad_lp, bad_grad = _diagnose(z, grad, layout, model, model_args,
                                                model_kwargs)
    parts = []
    if bad_value:
        parts.append(f"initial values outside the support (or not finite) at {bad_value}")
    if bad_lp:
        parts.append(f"log-density not finite at {bad_lp}")
    if bad_grad:
        parts.append(f"gradient not finite for {bad_grad}")
    if not parts:
        parts.append("the potential energy or its gradient is not finite")
    raise ValueError(
        f"Cannot find a valid initial point for the model after {tried} attempt(s) with "
        f"{_strategy_name(strategy)}: {'; '.join(parts)}. Check the priors' parameters and the "
        f"data (e.g. observations outside a distribution's support), or start elsewhere with "
        f"init_strategy=init_to_value(values={{...}}) using values inside the supports."
    )


def _strategy_name(strategy) -> str:
    func = getattr(strategy, "func", strategy)
    kw = getattr(strategy, "keywords", None) or {}
    args = ", ".join(f"{k}={v!r}" for k, v in kw.items() if k != "init_strategy")
    return f"init_strategy={getattr(func, '__name__', repr(func))}({args})"


def initialize_model(rng_key, model, model_args=(), model_kwargs=None, *,
                     init_strategy=init_to_uniform(), num_chains=None,
                     max_tries: int = 100) -> ModelInfo:
    """Build the flat unconstrained parameterisation of ``model`` and a valid starting point.

    Parameters
    ----------
    rng_key
        An int seed or a key from ``ppl.random.key``.
    model, model_args, model_kwargs
        The model and what to call it with.
    init_strategy
        An initialisation strategy (:func:`init_to_uniform`, :func:`init_to_median`,
        :func:`init_to_value`, ...).
    num_chains
        ``None`` for one ``(D,)`` position; an int for ``(num_chains, D)`` positions.
    max_tries
        Fresh draws tried per chain until the potential and its gradient are finite.

    Returns
    -------
    ModelInfo
        ``init_position``, ``potential_fn`` (``z -> -(log joint + log|det J|)``),
        ``postprocess_fn`` (``z -> {site: constrained value}`` for latent and deterministic
        sites), ``layout`` (:class:`ParamLayout`) and ``potential_of_args`` (the potential for
        other model arguments of the same structure).

    Raises
    ------
    ValueError
        If no finite starting point is found; the message names the sites whose log-density
        or gradient is not finite.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> from ppl.inference import initialize_model
    >>> def model():
    ...     ppl.sample("sigma", dist.HalfNormal(1.0))
    >>> info = initialize_model(0, model)
    >>> info.layout.size, ppl.ops.shape(info.potential_fn(info.init_position))
    (1, ())
    """
    model_args, model_kwargs = as_backend_data(tuple(model_args), dict(model_kwargs or {}))
    if not callable(model):
        raise TypeError(f"initialize_model: model must be callable, got {type(model).__name__}.")
    if num_chains is not None and (isinstance(num_chains, bool) or int(num_chains) < 1):
        raise ValueError(f"num_chains must be a positive int or None, got {num_chains!r}.")
    if init_strategy is None or not callable(init_strategy):
        raise TypeError(
            "init_strategy must be an initialisation strategy such as init_to_uniform(), "
            f"init_to_median() or init_to_value(values=...), got {init_strategy!r}."
        )
    key = random.as_key(rng_key)

    def trace_of(args, kwargs):
        return lambda k: trace(substitute(seed(model, rng_seed=k), substitute_fn=init_strategy)) \
            .get_trace(*args, **kwargs)

    init_trace = trace_of(model_args, model_kwargs)
    # the arguments' data leaves and structure, found once (NumPy data are hashed by content)
    split = functools.cache(lambda: split_data(model_args, model_kwargs))

    C = 1 if num_chains is None else int(num_chains)
    k_trace, k_flat = random.split_keys(key, 2)
    # the chain plate (backends whose vmap is a loop) is built from a real first trace; the
    # others only need the trace's structure, found without running (or compiling) the model
    proto = init_trace(k_trace) if ops.backend().vmap_is_loop else None
    layout, first_dim = _structure(proto) if proto is not None \
        else _abstract_structure(trace_of, k_trace, model, split, init_strategy)
    # discrete sites marked for enumeration are summed out of the potential
    density_model = model if first_dim is None \
        else enum(model, first_available_dim=first_dim)

    def potential_of_args(args, kwargs):
        return lambda z: potential_energy(density_model, args, kwargs, layout.unravel(z))

    def postprocess_of_args(args, kwargs):
        return lambda z: constrain_fn(model, args, kwargs, layout.unravel(z))

    potential_fn = potential_of_args(model_args, model_kwargs)
    postprocess_fn = postprocess_of_args(model_args, model_kwargs)

    radius = _uniform_radius(init_strategy)
    draw = None if radius is None else (lambda k: random.uniform(
        k, (C, layout.size), minval=-radius, maxval=radius))
    flat = None if draw is None else draw(k_flat)
    start = None
    if num_chains is not None and ops.backend().compiles_control_flow:
        first = _batched_start(model, potential_of_args, layout, density_model is not model,
                               split)
        start = _first_draws_valid(first, flat, k_trace, C, init_trace, layout)
    if start is None:
        keys = random.split_keys(k_trace, C)
        # one compile, not one per op
        value_and_grad = ops.jit(ops.value_and_grad(potential_fn), once=True)
        positions = [
            _find_valid_position(keys[c], init_trace, layout, value_and_grad, density_model,
                                 model_args, model_kwargs, max_tries=max_tries,
                                 first=None if flat is None else flat[c],
                                 strategy=init_strategy)
            for c in range(C)
        ]
        start = positions[0] if num_chains is None else \
            tuple(ops.stack(parts, axis=0) for parts in zip(*positions))
    plate = chain_plate(model, model_args, model_kwargs, layout, proto) \
        if ops.backend().vmap_is_loop else None
    init_position, init_pe, init_grad = start
    return ModelInfo(init_position, potential_fn, postprocess_fn, layout, potential_of_args,
                     postprocess_of_args, plate, init_pe, init_grad)
