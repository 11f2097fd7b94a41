"""Run a model once for all chains: a *chain plate* left of the model's own plates.

Where the backend's ``vmap`` is a Python loop (``backend.vmap_is_loop``: numpy), the batched
gradient of ``C`` chains runs the model, its effect handlers and the autodiff tracing ``C``
times per leapfrog step, and the draws are mapped back to constrained values one draw at a
time. A model written with plates computes its log density at many parameter values at once
when every latent value gets a leading *chain* dimension left of all the batch dimensions the
model uses: a site of shape ``s`` with ``b`` batch dimensions gets the shape
``(C,) + (1,) * (P - b) + s``, where ``P`` is the largest number of batch dimensions of any
sample site (at least the plate nesting). Each log density then has the chain dimension first;
summing the others gives every chain's log joint, and the gradient of their sum is every
chain's gradient, in one pass. This is Pyro's vectorised particles (``Trace_ELBO`` with
``vectorize_particles=True``, whose ``max_plate_nesting`` plays the role of ``P``; Bingham et
al. 2019, "Pyro: Deep Universal Probabilistic Programming", JMLR 20(28)).

Only models whose array code respects plate semantics broadcast this way (a model that calls
``x.shape`` on a latent, multiplies a matrix by a latent vector, or sums over every axis does
not). So the batched functions are used only after they agree with the per-chain ones
(:func:`batched_value_and_grad`: values and gradients at ``C`` distinct points and at ``C``
points nearby; :func:`postprocess_draws`: the map of the first draws) and when the model has no
enumerated sites; anything that raises, or disagrees, keeps the per-chain ``vmap``, unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ppl import ops
from ppl.enumeration import max_plate_nesting
from ppl.inference.util import run_unconstrained
from ppl.sum_product import has_enumeration, site_log_factor

__all__ = ["ChainPlate", "chain_plate", "chain_plate_value_and_grad", "batched_value_and_grad",
           "chain_plate_constrain", "postprocess_draws", "draw_block"]

_CHECK_DRAWS = 3           # draws the batched postprocessing is checked on


class ChainPlate(NamedTuple):
    """A model's functions of many parameter vectors at once (see the module docstring)."""

    potential: Callable    # Z (C, D) -> U (C,), the model run once
    constrain: Callable    # Z (B, D) -> {site: (B,) + shape}, latent and deterministic sites


def _batch_rank(site) -> int:
    event = len(site["fn"].event_shape)
    return max(ops.ndim(site["value"]) - event, 0)


def chain_plate(model, model_args, model_kwargs, layout, model_trace) -> ChainPlate | None:
    """The :class:`ChainPlate` of ``model`` (``layout`` and ``model_trace``: its latent
    layout and a trace of one run), or ``None`` for models with enumerated sites."""
    if has_enumeration(model_trace) or any(
            "enumerate" in (s.get("infer") or {}) for s in model_trace.values()):
        return None
    sites = [s for s in model_trace.values() if s["type"] == "sample"]
    P = max([max_plate_nesting(model_trace)] + [_batch_rank(s) for s in sites])
    lead = {name: P - (len(cshape) - len(model_trace[name]["fn"].event_shape))
            for name, cshape in zip(layout.names, layout.constrained_shapes)}
    plain = {name: tuple(ops.shape(s["value"])) for name, s in model_trace.items()
             if s["type"] == "deterministic"}

    def params(Z):
        B = ops.shape(Z)[0]
        return {name: ops.reshape(Z[:, off:off + n], (B,) + (1,) * lead[name] + shape)
                for name, shape, off, n in zip(layout.names, layout.shapes, layout.offsets,
                                               layout.sizes)}

    def potential(Z):
        C = ops.shape(Z)[0]
        model_trace, log_dets = run_unconstrained(model, model_args, model_kwargs, params(Z),
                                                  log_det=True)
        total = ops.zeros((C,), ops.dtype_of(Z))
        for name, site in model_trace.items():
            if site["type"] != "sample":
                continue
            lp = site_log_factor(site, log_dets.get(name))
            if lp is not None:
                total = total + _per_chain(name, lp, P)
        return -total

    def constrain(Z):
        B = ops.shape(Z)[0]
        model_trace, _ = run_unconstrained(model, model_args, model_kwargs, params(Z),
                                           log_det=False)
        out = {name: ops.reshape(model_trace[name]["value"], (B,) + cshape)
               for name, cshape in zip(layout.names, layout.constrained_shapes)}
        for name, shape in plain.items():
            value = model_trace[name]["value"]
            size = int(np.prod(ops.shape(value), dtype=np.int64))
            out[name] = ops.reshape(value, (B,) + shape) if size == B * int(np.prod(shape)) \
                else ops.broadcast_to(ops.reshape(value, shape), (B,) + shape)
        return out

    return ChainPlate(potential, constrain)


def _per_chain(name, lp, P):
    """Each chain's sum of a site's log density ``lp`` (chain dim first, when it has one)."""
    ndim = ops.ndim(lp)
    if ndim > P + 1:
        raise ValueError(f"site {name!r}: log density of {ndim} batch dims, beyond the "
                         f"{P} of the model and the chain dim")
    if ndim == P + 1:
        return ops.sum(ops.reshape(lp, (ops.shape(lp)[0], -1)), axis=1)
    return ops.sum(lp)


def _agree(got, want) -> bool:
    """Leafwise equality up to rounding (NaN and inf where the reference has them) of two
    lists of arrays."""
    if len(got) != len(want):
        return False
    for a, b in zip(got, want):
        a, b = np.asarray(ops.to_numpy(a), np.float64), np.asarray(ops.to_numpy(b), np.float64)
        rtol = 1e-4 if ops.backend().dtype == "float32" else 1e-9
        finite = np.abs(b[np.isfinite(b)])
        atol = rtol * max(1.0, float(finite.max()) if finite.size else 1.0)
        if a.shape != b.shape or not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            return False
    return True


def _checked(batched, looped, points) -> bool:
    try:
        with np.errstate(all="ignore"):
            return all(_agree(batched(z), looped(z)) for z in points)
    except Exception:   # noqa: BLE001 - a model that does not broadcast over chains
        return False


def _nearby(z):
    """``C`` distinct points near the rows of ``z`` (as many as ``z`` has rows)."""
    noise = np.random.default_rng(0).normal(size=ops.shape(z))
    return z + ops.asarray(0.1 * noise, ops.dtype_of(z))


def chain_plate_value_and_grad(setup) -> Callable | None:
    """``Z (C, D) -> (U (C,), grad U (C, D))`` from one model run for all chains (the setup's
    :class:`ChainPlate`, compiled), if its values and gradients agree with the per-chain
    potential's at the starting points ``setup.init_position`` and at points nearby; else
    ``None``."""
    plate = getattr(setup, "chain_plate", None)
    if plate is None:
        return None

    def total(Z):
        U = plate.potential(Z)
        return ops.sum(U), U

    vg = ops.jit(ops.value_and_grad(total, has_aux=True))

    def batched(Z):
        (_, U), G = vg(Z)
        return U, G

    z0 = ops.asarray(setup.init_position)
    looped = ops.vmap(ops.value_and_grad(setup.potential_fn))
    return batched if _checked(batched, looped, [z0, _nearby(z0)]) else None


def batched_value_and_grad(setup, num_chains: int) -> Callable:
    """``Z (C, D) -> (U (C,), grad U (C, D))`` of a run's chains, compiled (``ops.jit``): from
    one model run for all chains (:func:`chain_plate_value_and_grad`) where the backend's
    ``vmap`` is a loop and that agrees with the per-chain potential, else ``vmap`` of the
    per-chain gradient."""
    if num_chains > 1 and ops.backend().vmap_is_loop:
        batched = chain_plate_value_and_grad(setup)
        if batched is not None:
            return batched
    return ops.jit(ops.vmap(ops.value_and_grad(setup.potential_fn)))


def chain_plate_constrain(postprocess_fn: Callable, plate: ChainPlate | None, flat):
    """``{site: (N, ...)}`` constrained values of the draws ``flat`` ``(N, D)`` from one model
    run (``plate.constrain``), if the values of the first draws agree with
    ``postprocess_fn``'s; else ``None``."""
    if plate is None or ops.shape(flat)[0] < 2:
        return None
    probe = flat[:_CHECK_DRAWS]
    try:
        with np.errstate(all="ignore"):
            got, want = plate.constrain(probe), ops.vmap(postprocess_fn)(probe)
            if sorted(got) != sorted(want) or not _agree([got[k] for k in sorted(want)],
                                                          [want[k] for k in sorted(want)]):
                return None
            return plate.constrain(flat)
    except Exception:   # noqa: BLE001 - a model that does not broadcast over draws
        return None


def postprocess_draws(postprocess_fn: Callable, plate: ChainPlate | None, flat, *,
                      block: int | None = None):
    """``{site: (N, ...)}`` constrained values of the draws ``flat`` ``(N, D)``: one model run
    for all draws (:func:`chain_plate_constrain`) where the backend's ``vmap`` is a loop and
    that agrees with ``postprocess_fn``, else ``postprocess_fn`` mapped over the draws,
    ``block`` draws at a time when given (:func:`draw_block`)."""
    out = chain_plate_constrain(postprocess_fn, plate, flat) \
        if ops.backend().vmap_is_loop else None
    if out is not None:
        return out
    mapped = ops.jit(ops.vmap(postprocess_fn))
    n = ops.shape(flat)[0]
    if block is None or n <= block:
        return mapped(flat)
    # the last block padded with copies of the last draw: one compiled signature
    pad = -n % block
    if pad:
        flat = ops.concat([flat, ops.broadcast_to(flat[-1:], (pad,) + ops.shape(flat)[1:])])
    parts = [mapped(flat[i:i + block]) for i in range(0, n + pad, block)]
    return {k: ops.concat([p[k] for p in parts])[:n] for k in parts[0]}


#: bytes of model data times draws mapped at once by :func:`postprocess_draws` (see
#: :func:`draw_block`)
POSTPROCESS_BYTES = 2**30


def draw_block(data_bytes: int) -> int | None:
    """Draws mapped at once when constraining draws of a model with ``data_bytes`` of data
    (``None``: all at once), where the model runs once per draw (:func:`postprocess_draws` on
    torch, and on numpy without a chain plate; compiled programs do not call it).

    Each draw's model run recomputes the likelihood's terms (a logistic regression's
    ``x @ beta``: ``N`` numbers per draw) that only the trace needs; mapped over 400 draws of
    logistic regression at N = 1e5 that was a 160 MB temporary, 4x the data."""
    if data_bytes <= 0:
        return None
    return max(16, POSTPROCESS_BYTES // data_bytes)
