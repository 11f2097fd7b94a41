"""Autodiff and batching transforms, with ``jax``'s signatures. All primitives: each framework
brings its own (autograd, ``jax``, ``torch.func``)."""

from __future__ import annotations

from ppl.backends import tree
from ppl.backends.common.core import not_implemented

__all__ = ["Autodiff", "check_mapped_ranks"]


class Autodiff:
    """``grad``, ``value_and_grad``, ``vmap``, ``stop_gradient``."""

    def grad(self, fun, argnums=0, has_aux=False):
        """``jax.grad``: ``fun`` returns a scalar (or ``(scalar, aux)`` with ``has_aux``)."""
        raise not_implemented(self, "grad")

    def value_and_grad(self, fun, argnums=0, has_aux=False):
        """``jax.value_and_grad``: returns ``(value, grad)`` or ``((value, aux), grad)``."""
        raise not_implemented(self, "value_and_grad")

    def vmap(self, fun, in_axes=0, out_axes=0):
        """``jax.vmap`` over pytrees. ``in_axes`` is an int, ``None`` or a tuple per argument."""
        raise not_implemented(self, "vmap")

    def stop_gradient(self, x): raise not_implemented(self, "stop_gradient")


def check_mapped_ranks(args, axes, ndim) -> None:
    """A mapped argument needs the axis it is mapped over (``vmap`` of a 0-d array said
    "tuple index out of range")."""
    for i, (a, ax) in enumerate(zip(args, axes)):
        if ax is None:
            continue
        for leaf in tree.leaves(a):
            rank = ndim(leaf)
            if not -rank <= ax < rank:
                raise ValueError(
                    f"ppl.ops.vmap: argument {i} has an array of {rank} dimensions, which has "
                    f"no axis {ax} to map over; pass in_axes=None for an argument that is not "
                    "mapped, or give it the batch axis.")
