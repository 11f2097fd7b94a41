"""From a model to what samplers need: the log joint density, a flat unconstrained parameter
layout, the potential energy, the map back to constrained values, and initial positions.

The potential is the negative log joint density in unconstrained space,

    U(z) = -[log p(T(z), data) + log|det J_T(z)|],

where ``T = biject_to(support)`` is rebuilt from each site's distribution on every call, so a
support with bounds that depend on other latents (``interval(0, 1 - alpha)``) gets the right
transform and Jacobian at every point (Carpenter et al., 2017, "Stan: A Probabilistic
Programming Language", J. Stat. Softw. 76(1), section on constrained variables).

``potential_fn`` and ``postprocess_fn`` are pure functions of ``z``: they run the model under
handlers created inside the call, so they work under ``ops.jit``, ``ops.grad`` and ``ops.vmap``
on every backend.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from ppl import ops
from ppl import random as _random
from ppl._messenger import Messenger
from ppl.handlers import seed, substitute, trace
from ppl.inference.initialization import (
    init_to_feasible,
    init_to_mean,
    init_to_median,
    init_to_sample,
    init_to_uniform,
    init_to_value,
    site_shape,
)

__all__ = ["log_density", "ParamLayout", "ModelInfo", "initialize_model", "potential_energy",
           "constrain_fn", "init_to_uniform", "init_to_median", "init_to_mean",
           "init_to_sample", "init_to_feasible", "init_to_value"]

Array = Any


def _site_log_prob(site, extra=None):
    """Summed log-density of one sample site, with its mask and scale applied."""
    mask = site.get("mask")
    if mask is False:
        return None
    lp = site["fn"].log_prob(site["value"])
    if extra is not None:
        lp = lp + extra
    if mask is not None and mask is not True:
        lp = ops.where(mask, lp, 0.0)
    if site["scale"] is not None:
        lp = site["scale"] * lp
    return ops.sum(lp)


def _log_joint(model_trace, log_dets=None):
    total = None
    for name, site in model_trace.items():
        if site["type"] != "sample":
            continue
        lp = _site_log_prob(site, None if log_dets is None else log_dets.get(name))
        if lp is not None:
            total = lp if total is None else total + lp
    return ops.asarray(0.0) if total is None else total


class _require_params(Messenger):
    """Outermost handler of ``log_density``: a latent site without a value is an error."""

    def __init__(self, fn, params):
        super().__init__(fn)
        self.params = params

    def process_message(self, msg):
        if msg["type"] != "sample" or msg["is_observed"]:
            return
        if msg["name"] in self.params:
            msg["value"] = ops.asarray(self.params[msg["name"]]) \
                if not ops.is_array(self.params[msg["name"]]) else self.params[msg["name"]]
        elif msg["value"] is None and msg["kwargs"].get("rng_key") is None:
            raise ValueError(
                f"log_density: no value for the latent site {msg['name']!r}. Pass it in params "
                f"(params={{{msg['name']!r}: value, ...}}), or observe it."
            )


def log_density(model: Callable, model_args=(), model_kwargs=None, params=None):
    """The log joint density of ``model`` at the latent values ``params``.

    Every sample site counts: latent sites at ``params[name]``, observed sites at their data,
    ``factor`` sites; each with its ``scale`` and ``mask`` handlers applied.

    Parameters
    ----------
    model
        The model function.
    model_args, model_kwargs
        Arguments to call it with.
    params
        ``{site name: constrained value}`` for every latent site.

    Returns
    -------
    (log_joint, trace)
        A scalar array, and the model's trace at ``params``.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> from ppl.inference import log_density
    >>> def model(y):
    ...     mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
    ...     ppl.sample("y", dist.Normal(mu, 1.0), obs=y)
    >>> lp, tr = log_density(model, (0.0,), {}, {"mu": 0.0})
    >>> round(float(lp), 4)  # 2 * log N(0 | 0, 1)
    -1.8379
    """
    params = {} if params is None else params
    if not isinstance(params, Mapping):
        raise TypeError(f"log_density: params must be a dict, got {type(params).__name__}.")
    model_trace = trace(_require_params(model, params)).get_trace(
        *model_args, **(model_kwargs or {}))
    return _log_joint(model_trace), model_trace


# ---------------------------------------------------------------------------- layout
class ParamLayout:
    """Where each latent site lives in the flat unconstrained vector ``z``.

    Attributes
    ----------
    names
        Latent site names, in the model's order.
    shapes
        Unconstrained shape of each site (``biject_to(support).inverse_shape``).
    constrained_shapes
        Shape of each site's value.
    offsets
        Start of each site in ``z``.
    size
        Length ``D`` of ``z``.
    """

    def __init__(self, names, shapes, constrained_shapes=None):
        self.names = tuple(names)
        self.shapes = tuple(tuple(int(d) for d in s) for s in shapes)
        self.constrained_shapes = tuple(tuple(s) for s in (constrained_shapes or shapes))
        sizes = [math.prod(s) for s in self.shapes]
        self.sizes = tuple(sizes)
        self.offsets = tuple(int(o) for o in np.cumsum([0] + sizes[:-1]))
        self.size = int(sum(sizes))

    def unravel(self, z) -> dict:
        """``z`` of shape ``(..., D)`` to ``{name: array of shape (...,) + shape}``."""
        batch = tuple(ops.shape(z)[:-1])
        return {name: ops.reshape(z[..., off:off + n], batch + shape)
                for name, shape, off, n in zip(self.names, self.shapes, self.offsets, self.sizes)}

    def ravel(self, values: Mapping):
        """``{name: unconstrained array}`` (with common leading batch dims) to ``z``."""
        if not self.names:
            return ops.zeros((0,))
        first = values[self.names[0]]
        batch = tuple(ops.shape(first)[:ops.ndim(first) - len(self.shapes[0])])
        parts = [ops.reshape(values[n], batch + (size,))
                 for n, size in zip(self.names, self.sizes)]
        return parts[0] if len(parts) == 1 else ops.concat(parts, axis=-1)

    def __repr__(self):
        body = ", ".join(f"{n}: {s}" for n, s in zip(self.names, self.shapes))
        return f"ParamLayout({body}; size={self.size})"


class _unconstrain(Messenger):
    """Set each latent site from its unconstrained value, with the transform built from the
    distribution of this run; record the log|det J| per site (summed over event dims)."""

    def __init__(self, fn, params, *, log_det=True):
        super().__init__(fn)
        self.params = params
        self.log_det = log_det
        self.log_dets: dict = {}

    def process_message(self, msg):
        if msg["type"] != "sample" or msg["is_observed"] or msg["name"] not in self.params:
            return
        from ppl.distributions.transforms import biject_to

        fn = msg["fn"]
        t = biject_to(fn.support)
        u = self.params[msg["name"]]
        value = t(u)
        msg["value"] = value
        if self.log_det:
            ld = t.log_abs_det_jacobian(u, value)
            lp_ndim = ops.ndim(value) - len(fn.event_shape)
            extra = ops.ndim(ld) - lp_ndim
            if extra > 0:
                ld = ops.sum(ld, axis=tuple(range(-extra, 0)))
            self.log_dets[msg["name"]] = ld


_DUMMY_SEED = 0


def _run_unconstrained(model, model_args, model_kwargs, params, *, log_det):
    handler = _unconstrain(model, params, log_det=log_det)
    model_trace = trace(seed(handler, rng_seed=_DUMMY_SEED)).get_trace(
        *model_args, **model_kwargs)
    return model_trace, handler.log_dets


def potential_energy(model, model_args, model_kwargs, params):
    """``-(log joint + log|det J|)`` at the unconstrained ``params`` (a dict)."""
    model_trace, log_dets = _run_unconstrained(model, model_args, model_kwargs, params,
                                               log_det=True)
    return -_log_joint(model_trace, log_dets)


def constrain_fn(model, model_args, model_kwargs, params, *, return_deterministic=True):
    """Constrained values of the latent sites (and deterministic sites) at unconstrained
    ``params``."""
    model_trace, _ = _run_unconstrained(model, model_args, model_kwargs, params, log_det=False)
    return {name: site["value"] for name, site in model_trace.items()
            if (site["type"] == "sample" and name in params)
            or (return_deterministic and site["type"] == "deterministic")}


class ModelInfo(NamedTuple):
    """What ``initialize_model`` returns; see its docstring."""

    init_position: Array
    potential_fn: Callable
    postprocess_fn: Callable
    layout: ParamLayout


def _latent_sites(model_trace):
    return [(name, site) for name, site in model_trace.items()
            if site["type"] == "sample" and not site["is_observed"]]


def _check_latents(latents):
    for name, site in latents:
        support = site["fn"].support
        if getattr(support, "is_discrete", False):
            raise ValueError(
                f"Site {name!r} is a discrete latent variable ({type(site['fn']).__name__}); "
                f"gradient-based samplers need continuous latents. Marginalise it out (e.g. "
                f"sum over its values with ops.logsumexp and ppl.factor) or observe it."
            )


def _unconstrained_position(model_trace, layout):
    from ppl.distributions.transforms import biject_to

    return layout.ravel({name: biject_to(model_trace[name]["fn"].support).inv(
        model_trace[name]["value"]) for name in layout.names})


def _not_finite(x) -> bool:
    return not np.all(np.isfinite(np.asarray(ops.to_numpy(x))))


def _diagnose(z, grad, layout, model, model_args, model_kwargs):
    """Names of the sites whose value, log-density or gradient is not finite at ``z``."""
    bad_value = [n for n, v in layout.unravel(z).items() if _not_finite(v)]
    bad_lp, bad_grad = [], []
    if not bad_value:
        model_trace, log_dets = _run_unconstrained(model, model_args, model_kwargs,
                                                   layout.unravel(z), log_det=True)
        for name, site in model_trace.items():
            if site["type"] == "sample":
                lp = _site_log_prob(site, log_dets.get(name))
                if lp is not None and _not_finite(lp):
                    bad_lp.append(name)
        if grad is not None:
            bad_grad = [n for n, g in layout.unravel(grad).items() if _not_finite(g)]
    return bad_value, bad_lp, bad_grad


def _find_valid_position(key, init_trace, layout, value_and_grad, model, model_args,
                         model_kwargs, *, max_tries, first, strategy):
    previous, z, grad, tried = None, None, None, 0
    for attempt in range(max_tries):
        if attempt == 0 and first is not None:
            model_trace = first
        else:
            key, sub = _random.split(key, 2)
            model_trace = init_trace(sub)
        z_new = _unconstrained_position(model_trace, layout)
        z_np = np.asarray(ops.to_numpy(z_new))
        if previous is not None and np.array_equal(z_np, previous, equal_nan=True):
            break  # the strategy is deterministic: retrying gives the same point
        previous, z, grad, tried = z_np, z_new, None, tried + 1
        if not np.all(np.isfinite(z_np)):
            continue
        with np.errstate(all="ignore"):  # failed attempts are expected; reported below
            pe, grad = value_and_grad(z)
        if not (_not_finite(pe) or _not_finite(grad)):
            return z
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
        sites) and ``layout`` (:class:`ParamLayout`).

    Raises
    ------
    ValueError
        If no finite starting point is found; the message names the sites whose log-density
        or gradient is not finite.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> from ppl.inference.util import initialize_model
    >>> def model():
    ...     ppl.sample("sigma", dist.HalfNormal(1.0))
    >>> info = initialize_model(0, model)
    >>> info.layout.size, ppl.ops.shape(info.potential_fn(info.init_position))
    (1, ())
    """
    model_kwargs = dict(model_kwargs or {})
    model_args = tuple(model_args)
    if not callable(model):
        raise TypeError(f"initialize_model: model must be callable, got {type(model).__name__}.")
    if num_chains is not None and (isinstance(num_chains, bool) or int(num_chains) < 1):
        raise ValueError(f"num_chains must be a positive int or None, got {num_chains!r}.")
    if init_strategy is None or not callable(init_strategy):
        raise TypeError(
            "init_strategy must be an initialisation strategy such as init_to_uniform(), "
            f"init_to_median() or init_to_value(values=...), got {init_strategy!r}."
        )
    key = _random.as_key(rng_key)

    def init_trace(k):
        return trace(substitute(seed(model, rng_seed=k), substitute_fn=init_strategy)) \
            .get_trace(*model_args, **model_kwargs)

    keys = _random.split(key, 1 if num_chains is None else int(num_chains))
    proto = init_trace(keys[0])
    latents = _latent_sites(proto)
    _check_latents(latents)
    from ppl.distributions.transforms import biject_to

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
    layout = ParamLayout([n for n, _ in latents], shapes, cshapes)

    def potential_fn(z):
        return potential_energy(model, model_args, model_kwargs, layout.unravel(z))

    def postprocess_fn(z):
        return constrain_fn(model, model_args, model_kwargs, layout.unravel(z))

    value_and_grad = ops.jit(ops.value_and_grad(potential_fn))  # one compile, not one per op
    positions = [
        _find_valid_position(keys[c], init_trace, layout, value_and_grad, model, model_args,
                             model_kwargs, max_tries=max_tries, first=proto if c == 0 else None,
                             strategy=init_strategy)
        for c in range(1 if num_chains is None else int(num_chains))
    ]
    init_position = positions[0] if num_chains is None else ops.stack(positions, axis=0)
    return ModelInfo(init_position, potential_fn, postprocess_fn, layout)
