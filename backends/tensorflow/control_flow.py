"""tensorflow backend: control flow with ``jax.lax``'s signatures on ``tf.while_loop``,
``tf.cond`` and ``tf.switch_case``, so inside ``jit`` (a ``tf.function`` compiled with XLA) a
loop is one node of the program, traced once (``compiles_control_flow = True``).

``scan`` is a real loop too: the step function is traced once into a concrete function whose
outputs tell the dtypes and shapes of the stacked ``ys``, then a ``tf.while_loop`` writes them
into ``TensorArray``s. Its trip count is static, so gradients flow through it under XLA.
Eagerly (outside ``jit``/``vmap``), ``scan`` and ``fori_loop`` with Python bounds run the step
as Python, which ``GradientTape`` records.
"""

from __future__ import annotations

import tensorflow as tf

from ppl.backends import tree
from ppl.backends.tensorflow.core import _Tensor

__all__ = ["TensorflowControlFlow"]


def _spec(x):
    return tf.TensorSpec(x.shape, x.dtype)


class TensorflowControlFlow:
    """Control flow of :class:`~ppl.backends.tensorflow.TensorflowBackend`."""

    def _tensors(self, val):
        return tree.map(lambda a: a if isinstance(a, _Tensor) else self.asarray(a), val)

    def while_loop(self, cond_fun, body_fun, init_val):
        init_val = self._tensors(init_val)
        leaves, d = tree.flatten(init_val)

        def cond(*flat):
            return tf.cast(cond_fun(tree.unflatten(d, list(flat))), tf.bool)

        def body(*flat):
            out = tree.leaves(body_fun(tree.unflatten(d, list(flat))))
            return [tf.cast(self._in(o), a.dtype) for o, a in zip(out, flat)]

        if not leaves:
            raise ValueError("ops.while_loop: init_val has no arrays to loop over.")
        out = tf.while_loop(cond, body, leaves)
        return tree.unflatten(d, list(out) if isinstance(out, list | tuple) else [out])

    def fori_loop(self, lower, upper, body_fun, init_val):
        static = all(isinstance(b, int) for b in (lower, upper))
        if static and tf.executing_eagerly():
            return super().fori_loop(lower, upper, body_fun, init_val)
        lower, upper = self._in(lower), self._in(upper)
        i0 = tf.cast(lower, tf.int64)
        _, val = self.while_loop(lambda c: c[0] < tf.cast(upper, tf.int64),
                                 lambda c: (c[0] + 1, body_fun(c[0], c[1])), (i0, init_val))
        return val

    def scan(self, f, init, xs=None, length=None, reverse=False):
        self._scan_length(xs, length)
        if tf.executing_eagerly():
            return super().scan(f, init, xs, length=length, reverse=reverse)
        init = self._tensors(init)
        c_leaves, c_def = tree.flatten(init)
        x_leaves, x_def = tree.flatten(self._tensors(xs)) if xs is not None else ([], None)
        n = int(self.shape(x_leaves[0])[0]) if x_leaves else int(length)
        y_def = []

        def step(carry, x):
            c = tree.unflatten(c_def, carry)
            new_c, y = f(c, None if x_def is None else tree.unflatten(x_def, x))
            y_leaves, d = tree.flatten(y)
            y_def.append(d)
            return ([tf.cast(self._in(o), a.dtype) for o, a in zip(tree.leaves(new_c), carry)],
                    [self._in(v) for v in y_leaves])

        traced = tf.function(step, autograph=False).get_concrete_function(
            [_spec(a) for a in c_leaves], [tf.TensorSpec(a.shape[1:], a.dtype) for a in x_leaves])
        _, y_specs = traced.structured_outputs
        arrays = [tf.TensorArray(s.dtype, size=n, element_shape=s.shape) for s in y_specs]

        def body(i, carry, arrays):
            j = n - 1 - i if reverse else i
            carry, ys = traced(carry, [a[j] for a in x_leaves])
            return i + 1, carry, [ta.write(j, y) for ta, y in zip(arrays, ys)]

        _, carry, arrays = tf.while_loop(lambda i, *_: i < n, body,
                                         (tf.constant(0), c_leaves, arrays),
                                         maximum_iterations=n)
        carry = tree.unflatten(c_def, carry)
        if not y_specs:
            return carry, tree.unflatten(y_def[-1], []) if y_def else None
        return carry, tree.unflatten(y_def[-1], [ta.stack() for ta in arrays])

    def cond(self, pred, true_fun, false_fun, *operands):
        if not self.is_tracer(pred) and tf.executing_eagerly():
            return super().cond(pred, true_fun, false_fun, *operands)
        return tf.cond(tf.cast(pred, tf.bool), lambda: true_fun(*operands),
                       lambda: false_fun(*operands))

    def switch(self, index, branches, *operands):
        if not self.is_tracer(index) and tf.executing_eagerly():
            return super().switch(index, branches, *operands)
        index = tf.clip_by_value(tf.cast(index, tf.int32), 0, len(branches) - 1)
        return tf.switch_case(index, [lambda b=b: b(*operands) for b in branches])
