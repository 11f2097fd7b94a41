"""torch backend: ``torch.func``'s ``grad``, ``grad_and_value`` and ``vmap``.

Python and NumPy numbers at the differentiated positions become float tensors first (torch
differentiates tensors only). ``vmap`` passes ``randomness="different"``, which only concerns
torch's global RNG: ``ppl.random`` draws are keyed and batch through their own rule
(:mod:`ppl.backends.torch.keys`).
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from ppl.backends import tree
from ppl.backends.torch.numpy_interop import explain_numpy_calls

__all__ = ["TorchAutodiff"]


class TorchAutodiff:
    """Autodiff and batching of :class:`~ppl.backends.torch.TorchBackend`."""

    def _float_leaf(self, x):
        if isinstance(x, torch.Tensor):
            return x
        if isinstance(x, bool | int | float | np.integer | np.floating | np.ndarray):
            return self.asarray(x, self._float if np.asarray(x).dtype.kind in "iub" else None)
        return x

    def _diff_args(self, args, argnums):
        """Python and NumPy numbers at the differentiated positions become float tensors."""
        nums = (argnums,) if isinstance(argnums, int) else argnums
        args = list(args)
        for i in nums:
            if not isinstance(args[i], torch.Tensor):
                args[i] = tree.map(self._float_leaf, args[i])
        return args

    def grad(self, fun, argnums=0, has_aux=False):
        if argnums == ():   # as jax.grad: no arguments, an empty tuple of gradients
            return lambda *a, **k: ((), fun(*a, **k)[1]) if has_aux else ()
        fun = explain_numpy_calls(fun)
        if not has_aux:
            g = torch.func.grad(fun, argnums=argnums)
            return functools.wraps(fun)(
                lambda *args, **kwargs: g(*self._diff_args(args, argnums), **kwargs))

        @functools.wraps(fun)
        def grad_fun(*args, **kwargs):     # the aux's other leaves kept per call (threads)
            inner, others = _tensor_aux(fun)
            g, aux = torch.func.grad(inner, argnums=argnums, has_aux=True)(
                *self._diff_args(args, argnums), **kwargs)
            return g, others.rebuild(aux)

        return grad_fun

    def value_and_grad(self, fun, argnums=0, has_aux=False):
        if argnums == ():
            return lambda *a, **k: (fun(*a, **k), ())
        fun = explain_numpy_calls(fun)
        if not has_aux:
            gv = torch.func.grad_and_value(fun, argnums=argnums)

            @functools.wraps(fun)
            def value_and_grad_fun(*args, **kwargs):
                g, value = gv(*self._diff_args(args, argnums), **kwargs)
                return value, g

            return value_and_grad_fun

        @functools.wraps(fun)
        def value_and_grad_aux(*args, **kwargs):   # the aux's other leaves kept per call
            inner, others = _tensor_aux(fun)
            g, (value, aux) = torch.func.grad_and_value(inner, argnums=argnums, has_aux=True)(
                *self._diff_args(args, argnums), **kwargs)
            return (value, others.rebuild(aux)), g

        return value_and_grad_aux

    def vmap(self, fun, in_axes=0, out_axes=0):
        in_axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        out_axes = tuple(out_axes) if isinstance(out_axes, list) else out_axes
        vf = torch.func.vmap(explain_numpy_calls(fun), in_dims=in_axes, out_dims=out_axes,
                             randomness="different")
        conv = lambda a: self.asarray(a) if isinstance(a, np.ndarray | np.generic) else a

        @functools.wraps(fun)
        def vmapped(*args, **kwargs):
            args = [a if isinstance(a, torch.Tensor) else tree.map(conv, a) for a in args]
            return vf(*args, **kwargs)

        return vmapped

    def stop_gradient(self, x):
        return x.detach() if isinstance(x, torch.Tensor) else x


class _AuxLeaves:
    """The non-tensor leaves of a function's ``aux`` output, kept aside: ``torch.func``
    accepts only tensors there, where ``jax.grad(has_aux=True)`` passes any pytree through."""

    def __init__(self):
        self.structure = None

    def split(self, aux):
        leaves, self.structure = tree.flatten(aux)
        self.kept = [None if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]
        return [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]

    def rebuild(self, tensors):
        tensors = iter(tensors)
        return tree.unflatten(self.structure, [next(tensors) if leaf is None else leaf
                                               for leaf in self.kept])


def _tensor_aux(fun):
    """``fun`` returning ``(value, tensor leaves of aux)``, and the keeper of the rest."""
    others = _AuxLeaves()

    def inner(*args, **kwargs):
        value, aux = fun(*args, **kwargs)
        return value, others.split(aux)

    return inner, others
