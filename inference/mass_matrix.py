"""The shape and starting value of HMC's inverse mass matrix: NumPyro's ``dense_mass`` and
``inverse_mass_matrix`` arguments of :class:`~ppl.inference.NUTS` and :class:`~ppl.inference.HMC`.

* ``dense_mass=False`` / ``True``: a diagonal / full inverse mass matrix.
* ``dense_mass=[("a", "b"), ("c",)]``: a block-diagonal one. Each group of latent sites gets a
  full block (their joint covariance is estimated in warmup), every other site a diagonal entry.
  A model whose correlations live among a few of its sites then pays for a dense estimate of
  those only in the number of warmup draws it needs (Stan's dense adaptation estimates
  ``D (D + 1) / 2`` covariances from each window; a block of size ``d`` only ``d (d + 1) / 2``).
* ``inverse_mass_matrix``: the starting value (the value throughout, with
  ``adapt_mass_matrix=False``): a ``(D,)`` or ``(D, D)`` array over the flat unconstrained
  vector, or a dict from tuples of site names to their blocks, a ``(d,)`` diagonal or a
  ``(d, d)`` matrix over the sites' unconstrained values flattened in the tuple's order. A
  matrix-valued block is a dense block, as if its sites formed a group of ``dense_mass``. With
  site groups, an array starts the blocks the groups make: its entries between blocks are
  dropped.

The blocks are kept in a ``(D, D)`` matrix with a 0/1 pattern (:func:`plan_mass_matrix`), so
the metric (:mod:`~ppl.inference.metrics`) and the adaptation
(:mod:`~ppl.inference.adaptation`) are those of a dense matrix: each window's covariance
estimate is multiplied by the pattern, which zeroes the covariances between blocks.

References
----------
Betancourt, M. (2017). A Conceptual Introduction to Hamiltonian Monte Carlo, sec. 4.2
(the mass matrix as the posterior covariance). arXiv:1701.02434.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

__all__ = ["MassMatrixPlan", "asks_for_dense", "check_mass_arguments", "plan_mass_matrix"]


class MassMatrixPlan(NamedTuple):
    """What a run's adaptation starts from.

    Attributes
    ----------
    dense
        Whether the inverse mass matrix is ``(C, D, D)`` (else ``(C, D)``).
    structure
        ``(D, D)`` 0/1 pattern of the blocks, or ``None`` where every entry is estimated
        (diagonal, or one dense block).
    initial
        ``(D,)`` / ``(D, D)`` starting inverse mass matrix, or ``None`` (the identity).
    """

    dense: bool
    structure: np.ndarray | None
    initial: np.ndarray | None


def _group(group, where: str) -> tuple:
    if isinstance(group, str):
        return (group,)
    if isinstance(group, Sequence) and group and all(isinstance(n, str) for n in group):
        return tuple(group)
    raise TypeError(f"{where}: a group of sites is a tuple of site names, e.g. ('a', 'b'); "
                    f"got {group!r}.")


def check_mass_arguments(dense_mass, inverse_mass_matrix, *, has_model: bool):
    """``(dense_mass, inverse_mass_matrix)`` checked and made hashable where they can be:
    ``dense_mass`` a bool or a tuple of site-name tuples, ``inverse_mass_matrix`` ``None``, a
    float64 array or a dict of them. Raises ``TypeError`` / ``ValueError`` naming the fix."""
    if not isinstance(dense_mass, bool):
        if isinstance(dense_mass, (str, Mapping)) or not isinstance(dense_mass, Sequence):
            raise TypeError(
                f"dense_mass must be True, False or a list of tuples of site names (each tuple "
                f"a dense block), e.g. [('a', 'b')]; got {dense_mass!r}.")
        dense_mass = tuple(_group(g, "dense_mass") for g in dense_mass)
        if not has_model:
            raise ValueError("dense_mass as site groups needs a model (site names); with "
                             "potential_fn= use dense_mass=True or False.")
    if inverse_mass_matrix is None:
        return dense_mass, None
    if isinstance(inverse_mass_matrix, Mapping):
        if not has_model:
            raise ValueError("inverse_mass_matrix as a dict of site blocks needs a model; with "
                             "potential_fn= pass a (D,) or (D, D) array.")
        return dense_mass, {_group(k, "inverse_mass_matrix"): _matrix(v, f"inverse_mass_matrix"
                                                                        f"[{k!r}]")
                            for k, v in inverse_mass_matrix.items()}
    return dense_mass, _matrix(inverse_mass_matrix, "inverse_mass_matrix")


def asks_for_dense(dense_mass, inverse_mass_matrix) -> bool:
    """Whether the checked arguments (:func:`check_mass_arguments`) make any block of the
    inverse mass matrix dense: ``dense_mass`` true or site groups, or a matrix given."""
    given = inverse_mass_matrix.values() if isinstance(inverse_mass_matrix, dict) else \
        [inverse_mass_matrix]
    return bool(dense_mass) or any(m is not None and m.ndim == 2 for m in given)


def _matrix(value, name: str) -> np.ndarray:
    try:
        m = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of numbers, got {type(value).__name__}."
                        ) from None
    if m.ndim == 1 and np.all(np.isfinite(m)) and np.all(m > 0):
        return m
    if m.ndim == 2 and m.shape[0] == m.shape[1] and np.all(np.isfinite(m)) \
            and np.allclose(m, m.T) and np.all(np.linalg.eigvalsh(m) > 0):
        return m
    raise ValueError(f"{name} must be a positive (D,) diagonal or a symmetric positive "
                     f"definite (D, D) matrix, got an array of shape {m.shape} that is not.")


def _indices(layout, sites: tuple, where: str) -> np.ndarray:
    unknown = [s for s in sites if s not in layout.names]
    if unknown:
        what = "is not a latent site" if len(unknown) == 1 else "are not latent sites"
        raise ValueError(f"{where}: {unknown} {what} of the model; its latent sites are "
                         f"{list(layout.names)}.")
    spans = {n: (o, s) for n, o, s in zip(layout.names, layout.offsets, layout.sizes)}
    return np.concatenate([np.arange(o, o + s) for o, s in (spans[n] for n in sites)])


def plan_mass_matrix(dense_mass, inverse_mass_matrix, layout, dim: int) -> MassMatrixPlan:
    """The :class:`MassMatrixPlan` of the checked arguments (:func:`check_mass_arguments`) for
    a model with the :class:`~ppl.inference.util.ParamLayout` ``layout`` (``None`` for a
    potential function) and ``dim`` unconstrained coordinates.

    Examples
    --------
    >>> from ppl.inference.util import ParamLayout
    >>> layout = ParamLayout(["a", "b", "c"], [(2,), (), ()])
    >>> plan = plan_mass_matrix((("a", "c"),), None, layout, 4)
    >>> plan.dense, plan.structure.astype(int).tolist()
    (True, [[1, 1, 0, 1], [1, 1, 0, 1], [0, 0, 1, 0], [1, 1, 0, 1]])
    """
    inv = inverse_mass_matrix
    if not isinstance(inv, dict):
        if inv is not None and inv.shape[0] != dim:
            raise ValueError(f"inverse_mass_matrix has shape {inv.shape}; this model has "
                             f"{dim} unconstrained coordinates: pass ({dim},) or "
                             f"({dim}, {dim}).")
        if not isinstance(dense_mass, tuple):
            dense = bool(dense_mass) or (inv is not None and inv.ndim == 2)
            return MassMatrixPlan(dense, None, np.diag(inv) if dense and inv is not None
                                  and inv.ndim == 1 else inv)
        if inv is not None:
            # the groups give the pattern; a start over the whole vector keeps its blocks
            plan = plan_mass_matrix(dense_mass, None, layout, dim)
            if plan.structure is None:          # no group, or one group of every site
                return plan_mass_matrix(plan.dense, inv, layout, dim)
            start = np.diag(inv) if inv.ndim == 1 else inv
            return plan._replace(initial=start * plan.structure)
        inv = {}
    groups = dense_mass if isinstance(dense_mass, tuple) else ()
    blocks = {g: inv.get(g) for g in groups}
    blocks.update((k, v) for k, v in inv.items() if k not in blocks)
    seen: dict = {}
    for sites in blocks:
        for s in sites:
            if s in seen:
                raise ValueError(f"Site {s!r} is in two blocks of the mass matrix, {seen[s]} "
                                 f"and {sites}: give each site one block (dense_mass groups "
                                 f"and inverse_mass_matrix keys).")
            seen[s] = sites

    def dense_block(sites, value) -> bool:
        return sites in groups or (value is not None and value.ndim == 2)

    full = dense_mass is True
    dense = full or any(dense_block(k, v) for k, v in blocks.items())
    initial = np.eye(dim) if dense else np.ones(dim)
    structure = np.eye(dim) if dense else None
    for sites, value in blocks.items():
        idx = _indices(layout, sites, "dense_mass / inverse_mass_matrix")
        d = len(idx)
        if value is not None and value.shape[0] != d:
            raise ValueError(f"inverse_mass_matrix[{sites!r}] has shape {value.shape}; its "
                             f"sites have {d} unconstrained coordinates: pass ({d},) or "
                             f"({d}, {d}).")
        if dense:
            block = np.eye(d) if value is None else (np.diag(value) if value.ndim == 1
                                                     else value)
            initial[np.ix_(idx, idx)] = block
            if dense_block(sites, value):
                structure[np.ix_(idx, idx)] = 1.0
        elif value is not None:
            initial[idx] = value
    if dense and (full or structure.all()):
        structure = None
    return MassMatrixPlan(dense, structure, initial)
