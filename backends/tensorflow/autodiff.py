"""tensorflow backend: ``grad`` and ``value_and_grad`` with ``tf.GradientTape``, ``vmap`` with
``tf.vectorized_map`` (``pfor``; ops without a vectorisation rule run in a ``while_loop``).

A function that runs a loop of its own (``ops.scan``/``while_loop``, and their gradients) is
mapped with ``tf.map_fn`` instead, one example after the other: ``pfor`` turns a loop into one
whose trip count may differ per example, kept in ``TensorArray``s of unknown size (and of
``TensorList`` variants for a gradient's accumulators), which XLA cannot compile; ``map_fn`` has a
fixed trip count and compiles.

Python and NumPy numbers at the differentiated positions become float tensors first (a tape
watches tensors only); gradients that do not depend on an input are zeros, as in JAX.
"""

from __future__ import annotations

import contextlib
import functools
import logging

import numpy as np
import tensorflow as tf

from ppl.backends import tree
from ppl.backends.common.autodiff import check_mapped_ranks
from ppl.backends.tensorflow.core import _Tensor

__all__ = ["TensorflowAutodiff"]

_LOOPS = frozenset({"While", "StatelessWhile"})


def _loop_signature(fn, specs):
    """``fn`` traced on one example (``specs``): ``None`` if it holds no while loop anywhere
    (nested functions included: branches, loop bodies, gradients), else the ``TensorSpec``s of
    its outputs (what ``tf.map_fn`` needs)."""
    concrete = tf.function(fn, autograph=False).get_concrete_function(*specs)
    graph_def = concrete.graph.as_graph_def()
    if not any(n.op in _LOOPS for n in graph_def.node) and not any(
            n.op in _LOOPS for f in graph_def.library.function for n in f.node_def):
        return None
    return [tf.TensorSpec(o.shape, o.dtype) for o in concrete.outputs]


class TensorflowAutodiff:
    """Autodiff and batching of :class:`~ppl.backends.tensorflow.TensorflowBackend`."""

    def _float_leaf(self, x):
        if isinstance(x, _Tensor):
            return x
        if isinstance(x, bool | int | float | np.integer | np.floating | np.ndarray):
            return self.asarray(x, self._float if np.asarray(x).dtype.kind in "iub" else None)
        return x

    def value_and_grad(self, fun, argnums=0, has_aux=False):
        nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)

        @functools.wraps(fun)
        def value_and_grad_fun(*args, **kwargs):
            args = list(args)
            for i in nums:
                # a copy of each differentiated leaf: the tape follows a tensor, not a use of
                # it, so f(a) = sum(a * x) called at a = x would differentiate both factors
                args[i] = tree.map(_own_copy, tree.map(self._float_leaf, args[i]))
            flat = [tree.flatten(args[i]) for i in nums]
            with tf.GradientTape(watch_accessed_variables=False) as tape:
                for leaves, _ in flat:
                    tape.watch(leaves)
                out = fun(*args, **kwargs)
            value, aux = out if has_aux else (out, None)
            watched = [leaf for leaves, _ in flat for leaf in leaves]
            grads = tape.gradient(value, watched,
                                  unconnected_gradients=tf.UnconnectedGradients.ZERO)
            grads = iter([tf.convert_to_tensor(g) for g in grads])
            trees = tuple(tree.unflatten(d, [next(grads) for _ in leaves]) for leaves, d in flat)
            g = trees[0] if isinstance(argnums, int) else trees
            return ((value, aux) if has_aux else value), g

        return value_and_grad_fun

    def grad(self, fun, argnums=0, has_aux=False):
        vg = self.value_and_grad(fun, argnums=argnums, has_aux=has_aux)

        @functools.wraps(fun)
        def grad_fun(*args, **kwargs):
            value, g = vg(*args, **kwargs)
            return (g, value[1]) if has_aux else g

        return grad_fun

    def vmap(self, fun, in_axes=0, out_axes=0):
        @functools.wraps(fun)
        def vmapped(*args):
            axes = tuple(in_axes) if isinstance(in_axes, list | tuple) else (in_axes,) * len(args)
            if len(axes) != len(args):
                raise ValueError(f"ppl.ops.vmap: in_axes has {len(axes)} entries for {len(args)} "
                                 "arguments; pass one axis (or None) per argument.")
            flat = [tree.flatten(a) for a in args]
            check_mapped_ranks(args, axes, lambda leaf: len(self.shape(leaf)))
            mapped = [self.moveaxis(self._in(leaf), ax, 0)
                      for (leaves, _), ax in zip(flat, axes) if ax is not None
                      for leaf in leaves]
            if not mapped:
                raise ValueError("ppl.ops.vmap: no argument is mapped (every in_axes is None).")
            sizes = {self.shape(m)[0] for m in mapped}
            if len(sizes) > 1:
                raise ValueError(
                    f"ppl.ops.vmap: mapped axes must have one common size, got {sorted(sizes)}.")
            out_def = []

            def body(elems):
                it = iter(elems)
                call = [tree.unflatten(d, [next(it) for _ in leaves]) if ax is not None else a
                        for (leaves, d), ax, a in zip(flat, axes, args)]
                leaves, d = tree.flatten(fun(*call))
                out_def.append(d)
                return [self._in(leaf) for leaf in leaves]

            signature = None
            if not tf.executing_eagerly():
                signature = _loop_signature(lambda *e: body(e),
                                            [tf.TensorSpec(m.shape[1:], m.dtype) for m in mapped])
            if signature is not None:
                out = tf.map_fn(body, mapped, fn_output_signature=signature)
            else:
                with _quiet_fallbacks():
                    out = tf.vectorized_map(body, mapped, fallback_to_while_loop=True)
            out_leaves, d = out, out_def[-1]
            oax = out_axes
            if isinstance(oax, list | tuple):
                oax_flat = tree.leaves(tuple(oax))
            else:
                oax_flat = [oax] * len(out_leaves)
            out_leaves = [leaf[0] if ax is None else leaf if ax == 0 else
                          self.moveaxis(leaf, 0, ax) for leaf, ax in zip(out_leaves, oax_flat)]
            return tree.unflatten(d, out_leaves)

        return vmapped

    def stop_gradient(self, x): return tf.stop_gradient(x)


@contextlib.contextmanager
def _quiet_fallbacks():
    """Without TensorFlow's warning for each op ``vectorized_map`` batches as a loop ("Using a
    while_loop for converting ..."): ppl asks for that fallback, and a Binomial draw in
    ``Predictive`` printed it 32 times."""
    logger = logging.getLogger("tensorflow")
    level = logger.level
    logger.setLevel(max(level, logging.ERROR))
    try:
        yield
    finally:
        logger.setLevel(level)


def _own_copy(v):
    """A tensor of its own (``tf.identity``) for a tensor leaf; other leaves as they are."""
    return tf.identity(v) if isinstance(v, _Tensor) else v
