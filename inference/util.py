"""A model's log joint density, its flat unconstrained parameter layout, the potential energy and
the map back to constrained values (initial positions: :mod:`ppl.inference.model_setup`).

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

import numpy as np

from ppl import ops
from ppl.distributions.distribution import Wrapper
from ppl.distributions.transforms import biject_to
from ppl.enumeration import (
    enum,
    first_enumerated_dim,
    is_enumerated,
    max_plate_nesting,
    placeholder_enumerated,
)
from ppl.handlers import Messenger, seed, trace
from ppl.inference.program_data import as_backend_data
from ppl.sum_product import contract, has_enumeration, site_log_factor, trace_factors

__all__ = ["log_density", "ParamLayout", "period_of", "potential_energy", "constrain_fn",
           "site_log_prob", "run_unconstrained"]


def site_log_prob(site, extra=None):
    """Summed log-density of one sample site, with its mask and scale applied."""
    lp = site_log_factor(site, extra)
    return None if lp is None else ops.sum(lp)


def _log_joint(model_trace, log_dets=None):
    if has_enumeration(model_trace):
        # enumerated discrete sites are summed out (ppl.sum_product)
        plate_ndim = max_plate_nesting(model_trace)
        factors, var_ordinal, _, order = trace_factors(model_trace, plate_ndim, log_dets)
        return contract(factors, var_ordinal, order, plate_ndim)
    total = None
    for name, site in model_trace.items():
        if site["type"] != "sample":
            continue
        lp = site_log_prob(site, None if log_dets is None else log_dets.get(name))
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
        if is_enumerated(msg) and msg["name"] not in self.params:
            return  # summed out
        if msg["name"] in self.params:
            msg["infer"].pop("_enumerate_dim", None)  # given a value: not summed out
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
    ``factor`` sites; each with its ``scale`` and ``mask`` handlers applied. Latent sites
    marked ``infer={"enumerate": "parallel"}`` and absent from ``params`` are summed out
    (:mod:`ppl.sum_product`); their values in the returned trace are their whole supports.

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
    model_args, model_kwargs = as_backend_data(model_args, model_kwargs or {})
    probe = placeholder_enumerated(model)
    model_trace = trace(_require_params(probe, params)).get_trace(*model_args, **model_kwargs)
    if probe.found:
        model = enum(model, first_available_dim=first_enumerated_dim(model_trace))
        model_trace = trace(_require_params(model, params)).get_trace(
            *model_args, **model_kwargs)
    return _log_joint(model_trace), model_trace


# ---------------------------------------------------------------------------- layout
def period_of(fn) -> float | None:
    """The period of a site's density on the real line (``CircularReparam``'s unwrapped
    angles: 2 pi), looking through the wrappers a plate or mask adds; ``None`` if it has none."""
    while fn is not None:
        period = getattr(type(fn), "period", None)
        if period is not None:
            return float(period)
        fn = fn.base_dist if isinstance(fn, Wrapper) else None
    return None


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
    periodic
        ``{name: period}`` of the latent sites whose density is periodic (:func:`period_of`),
        judged by their cos and sin in the convergence warnings.
    """

    def __init__(self, names, shapes, constrained_shapes=None, periodic=None):
        self.names = tuple(names)
        self.periodic = dict(periodic or {})
        self.shapes = tuple(tuple(int(d) for d in s) for s in shapes)
        self.constrained_shapes = tuple(tuple(s) for s in (constrained_shapes or shapes))
        sizes = [math.prod(s) for s in self.shapes]
        self.sizes = tuple(sizes)
        self.offsets = tuple(int(o) for o in np.cumsum([0] + sizes[:-1]))
        self.size = int(sum(sizes))

    def __eq__(self, other):
        return type(other) is ParamLayout and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def _key(self):
        return self.names, self.shapes, self.constrained_shapes

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


def run_unconstrained(model, model_args, model_kwargs, params, *, log_det):
    handler = _unconstrain(model, params, log_det=log_det)
    model_trace = trace(seed(handler, rng_seed=_DUMMY_SEED)).get_trace(
        *model_args, **model_kwargs)
    return model_trace, handler.log_dets


def potential_energy(model, model_args, model_kwargs, params):
    """``-(log joint + log|det J|)`` at the unconstrained ``params`` (a dict)."""
    model_trace, log_dets = run_unconstrained(model, model_args, model_kwargs, params,
                                               log_det=True)
    return -_log_joint(model_trace, log_dets)


def constrain_fn(model, model_args, model_kwargs, params, *, return_deterministic=True):
    """Constrained values of the latent sites (and deterministic sites) at unconstrained
    ``params``."""
    model_trace, _ = run_unconstrained(model, model_args, model_kwargs, params, log_det=False)
    return {name: site["value"] for name, site in model_trace.items()
            if (site["type"] == "sample" and name in params)
            or (return_deterministic and site["type"] == "deterministic")}
