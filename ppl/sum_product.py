"""Sum out enumerated discrete sites: plate-aware tensor variable elimination, written once
over ``ppl.ops``.

The log-densities of a model's sample sites under :class:`ppl.enumeration.enum` are factors
over enumerated variables and plates. :func:`contract` computes

    log sum_{discrete values} prod_{sites, plate elements} p(site | ...)

by the algorithm of Obermeyer, Bingham, Jankowiak, Chen, Pradhan & Goodman (2019), "Tensor
variable elimination for plated factor graphs", ICML: take the factors of the deepest plate
set ``L``, eliminate (log-sum-exp) the variables local to ``L`` one at a time, in the order
they were drawn, then turn the product over the plates of ``L`` that the remaining variables do
not live in into a sum over those plate dimensions, and hand the results to the smaller plate
set; repeat until only a number is left. With ``semiring="max"`` the eliminations maximise
instead (the MAP / Viterbi value), and :func:`sample_eliminated` walks the eliminations
backwards to draw (or maximise) each variable given the ones eliminated after it
(forward-filtering backward-sampling).

A factor is ``(vars, tensor)`` with ``tensor.shape = (K_v for v in vars) + plate_shape``,
``plate_shape`` being the ``P`` rightmost batch dimensions, those of the plates.
"""

from __future__ import annotations

from typing import NamedTuple

from ppl import ops
from ppl import random as _random

__all__ = ["Factor", "site_log_factor", "trace_factors", "contract", "sample_eliminated",
           "has_enumeration"]


class Factor(NamedTuple):
    vars: tuple        # enumerated site names, one leading axis each
    tensor: object     # (K_v for v in vars) + plate_shape
    ordinal: frozenset  # plate dims of the site


class _Elimination(NamedTuple):
    var: str
    vars: tuple
    table: object


def site_log_factor(site, extra=None):
    """The unsummed log-density of one sample site with its mask and scale applied (``None``
    when masked out entirely)."""
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
    return lp


def has_enumeration(model_trace) -> bool:
    """Whether a trace ran under :class:`~ppl.enumeration.enum` with enumerated sites."""
    return any("_enumerate_dim" in (s.get("infer") or {}) for s in model_trace.values()
               if s["type"] == "sample")


def _ordinal(site) -> frozenset:
    return frozenset(f.dim for f in site.get("cond_indep_stack", ()))


def trace_factors(model_trace, plate_ndim: int, log_dets=None):
    """The factors of a trace; also ``{var: ordinal}``, ``{var: support values}`` and the
    variables in the order they were drawn."""
    factors, var_ordinal, supports = [], {}, {}
    for name, site in model_trace.items():
        if site["type"] != "sample":
            continue
        if "_enumerate_dim" in site["infer"]:
            var_ordinal[name] = _ordinal(site)
            supports[name] = site["infer"]["_support"]
        lp = site_log_factor(site, None if log_dets is None else log_dets.get(name))
        if lp is None:
            continue
        shape = tuple(ops.shape(lp))
        if len(shape) < plate_ndim:
            shape = (1,) * (plate_ndim - len(shape)) + shape
        n_enum = len(shape) - plate_ndim
        dim_to_var = site["infer"].get("_dim_to_var", {})
        names, sizes = [], []
        for axis, size in enumerate(shape[:n_enum]):
            if size == 1:
                continue
            var = dim_to_var.get(axis - len(shape))
            if var is None:
                raise ValueError(
                    f"Site {name!r}: its log-density has shape {tuple(ops.shape(lp))}, with a "
                    f"batch dimension {axis - len(shape)} left of the plates that belongs to "
                    f"no enumerated site. With enumeration every batch dimension must be "
                    f"declared by a ppl.plate (or made an event dimension with .to_event()).")
            names.append(var)
            sizes.append(size)
        factors.append(Factor(tuple(names), ops.reshape(lp, tuple(sizes) + shape[n_enum:]),
                              _ordinal(site)))
    order = list(var_ordinal)
    return factors, var_ordinal, supports, order


def _align(factor, names, sizes, plate_ndim):
    """``factor.tensor`` with one axis per name of ``names`` (size 1 where it is absent)."""
    own = factor.vars
    perm = sorted(range(len(own)), key=lambda i: names.index(own[i]))
    t = factor.tensor
    if perm != list(range(len(own))):
        t = ops.permute_dims(t, tuple(perm) + tuple(range(len(own), len(own) + plate_ndim)))
    plate_shape = tuple(ops.shape(t))[len(own):]
    return ops.reshape(t, tuple(sizes[n] if n in own else 1 for n in names) + plate_shape)


def _eliminate(group, var, sizes, plate_ndim, semiring, records):
    names = []
    for f in group:
        names += [n for n in f.vars if n not in names]
    table = None
    for f in group:
        t = _align(f, names, sizes, plate_ndim)
        table = t if table is None else table + t
    axis = names.index(var)
    if records is not None:
        records.append(_Elimination(var, tuple(names), table))
    reduced = ops.logsumexp(table, axis=axis) if semiring == "sum" else ops.max(table, axis=axis)
    return Factor(tuple(n for n in names if n != var), reduced, group[0].ordinal)


def contract(factors, var_ordinal, order, plate_ndim: int, *, semiring="sum", records=None):
    """``log sum_vars prod_factors`` (or ``max_vars`` with ``semiring="max"``) as a scalar.

    ``records``, a list, receives each elimination (variable, its table) for
    :func:`sample_eliminated`.
    """
    total = ops.asarray(0.0)
    pending: dict = {}
    for f in factors:
        if f.vars:
            pending.setdefault(f.ordinal, []).append(f)
        else:
            total = total + ops.sum(f.tensor)
    sizes = {}
    for f in factors:
        for n, k in zip(f.vars, ops.shape(f.tensor)):
            sizes[n] = max(sizes.get(n, 1), int(k))
    while pending:
        plates = max(pending, key=len)
        group = pending.pop(plates)
        for var in [v for v in order if var_ordinal[v] == plates]:
            with_var = [f for f in group if var in f.vars]
            if with_var:
                group = [f for f in group if var not in f.vars] + [
                    _eliminate(with_var, var, sizes, plate_ndim, semiring, records)]
        for f in group:
            if not f.vars:
                total = total + ops.sum(f.tensor)
                continue
            target = frozenset().union(*(var_ordinal[v] for v in f.vars))
            if not target < plates:
                raise ValueError(
                    f"Cannot sum out the enumerated sites {list(f.vars)}: a factor in plates "
                    f"{sorted(plates)} depends on sites in plates {sorted(target)}. Tensor "
                    f"variable elimination needs every enumerated site used inside a plate to "
                    f"be declared inside it or outside all plates it is used in.")
            axes = tuple(len(f.vars) + plate_ndim + d for d in sorted(plates - target))
            t = ops.sum(f.tensor, axis=axes, keepdims=True) if axes else f.tensor
            pending.setdefault(target, []).append(Factor(f.vars, t, target))
    return total


def _gumbel(key, shape):
    u = _random.uniform(key, shape, minval=1e-12, maxval=1.0)
    return -ops.log(-ops.log(u))


def sample_eliminated(records, key=None, *, plate_ndim: int, temperature=1):
    """Walk the eliminations of :func:`contract` backwards: draw each variable from its
    conditional given the ones eliminated after it (``temperature=1``; ``key`` needed), or
    take its most likely value (``temperature=0``, after a ``semiring="max"`` contraction).

    Returns ``{var: index into its support}``, each in the plate layout (``P`` dims).
    """
    chosen: dict = {}
    keys = _random.split(key, max(len(records), 1)) if temperature else None
    for i, rec in enumerate(reversed(records)):
        t = rec.table
        n = len(rec.vars)
        for axis, name in enumerate(rec.vars):
            if name == rec.var:
                continue
            k = ops.shape(t)[axis]
            idx = ops.reshape(chosen[name], (1,) * n + tuple(ops.shape(chosen[name])))
            grid = ops.reshape(ops.arange(k, dtype=ops.dtype_of(chosen[name])),
                               (1,) * axis + (k,) + (1,) * (n - axis - 1 + plate_ndim))
            t = ops.sum(ops.where(idx == grid, t, ops.zeros_like(t)), axis=axis, keepdims=True)
        keep = rec.vars.index(rec.var)
        t = ops.reshape(t, (ops.shape(t)[keep],) + tuple(ops.shape(t))[n:])
        if temperature:
            t = t / temperature + _gumbel(keys[i], tuple(ops.shape(t)))
        chosen[rec.var] = ops.argmax(t, axis=0)
    return chosen
