"""Helpers for states batched over chains: every array of a sampler state has the chains on its
leading axis, and chains that are done are frozen with a per-chain mask."""

from __future__ import annotations

from ppl import ops
from ppl.backends import tree

__all__ = ["select"]


def select(mask, new, old):
    """Leafwise ``where(mask, new, old)`` over two pytrees of the same structure.

    ``mask`` has the leading (chain) shape of the leaves, or is a scalar; it is broadcast over
    each leaf's trailing axes, so a ``(C,)`` mask selects whole rows of ``(C, D)`` and
    ``(C, D, D)`` leaves.

    >>> import ppl
    >>> from ppl import ops
    >>> with ppl.use_backend("numpy"):
    ...     select(ops.asarray([True, False]), (ops.ones((2, 3)),), (ops.zeros((2, 3)),))[0][:, 0]
    array([1., 0.], dtype=float32)
    """
    mask_ndim = ops.ndim(mask)
    if mask_ndim == 0:
        return tree.map(lambda n, o: ops.where(mask, n, o), new, old)

    def where(n, o):
        extra = ops.ndim(n) - mask_ndim
        m = mask if extra <= 0 else ops.reshape(mask, tuple(ops.shape(mask)) + (1,) * extra)
        return ops.where(m, n, o)

    return tree.map(where, new, old)
