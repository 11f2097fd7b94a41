"""tensorflow backend: shapes (reshape, broadcasting, concatenation, axes), gathers and
functional index updates, as a mixin over :class:`~ppl.backends.tensorflow.core.TensorflowCore`'s
conversion helpers (``_in``, ``_ins``, ``asarray``)."""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from ppl.backends.tensorflow.core import _shape

__all__ = ["TensorflowShapes"]

_Tensor = tf.Tensor | tf.Variable


class TensorflowShapes:
    """Shape and indexing ops of the tensorflow backend."""

    # ------------------------------------------------------------------ shapes
    def reshape(self, x, shape):
        x, shape = self._in(x), _shape(shape)
        size = self.size(x)
        known = math.prod(d for d in shape if d != -1)
        if (known != size) if -1 not in shape else (known == 0 or size % known):
            raise ValueError(f"cannot reshape an array of shape {self.shape(x)} (size {size}) "
                             f"into shape {shape}.")
        return tf.reshape(x, shape)

    def broadcast_to(self, x, shape):
        x, shape = self._in(x), _shape(shape)
        self.broadcast_shapes(self.shape(x), shape)
        if len(np.broadcast_shapes(self.shape(x), shape)) != len(shape) or \
                np.broadcast_shapes(self.shape(x), shape) != shape:
            raise ValueError(f"broadcast_to: shape {self.shape(x)} cannot be broadcast to "
                             f"{shape}.")
        return tf.broadcast_to(x, shape)

    def expand_dims(self, x, axis):
        x = self._in(x)
        if isinstance(axis, int):
            return tf.expand_dims(x, axis)
        out = x.shape.rank + len(axis)
        for a in sorted(a % out for a in axis):
            x = tf.expand_dims(x, a)
        return x

    def squeeze(self, x, axis=None):
        x = self._in(x)
        if axis is None:
            return tf.squeeze(x)
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        for a in axes:
            if x.shape[a] != 1:
                raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}, not 1 "
                                 f"(shape {self.shape(x)}); pass only axes of size 1.")
        return tf.squeeze(x, axis=axes)

    def concat(self, arrays, axis=0):
        arrays = self._ins(*arrays)
        if axis is None:
            return tf.concat([tf.reshape(a, (-1,)) for a in arrays], 0)
        shapes = [self.shape(a) for a in arrays]
        rest = {s[:axis % len(s)] + s[axis % len(s) + 1:] if s else None for s in shapes}
        if len(rest) > 1 or len({len(s) for s in shapes}) > 1:
            raise ValueError(f"concat along axis {axis} needs arrays whose other dimensions "
                             f"match, got shapes {shapes}.")
        return tf.concat(arrays, axis)

    def stack(self, arrays, axis=0): return tf.stack(self._ins(*arrays), axis=axis)
    def permute_dims(self, x, axes): return tf.transpose(self._in(x), tuple(axes))

    def moveaxis(self, x, source, destination):
        return tf.experimental.numpy.moveaxis(self._in(x), source, destination)

    def flip(self, x, axis=None):
        x = self._in(x)
        axes = list(range(x.shape.rank)) if axis is None else (
            [axis] if isinstance(axis, int) else list(axis))
        return tf.reverse(x, axes)

    def tril(self, x, k=0): return tf.experimental.numpy.tril(self._in(x), k)
    def triu(self, x, k=0): return tf.experimental.numpy.triu(self._in(x), k)

    def _index(self, i):
        return i if isinstance(i, _Tensor) else self.asarray(i, "int64")

    def take(self, x, indices, axis=None):
        x, indices = self._in(x), self._index(indices)
        if axis is None:
            x, axis = tf.reshape(x, (-1,)), 0
        n = tf.shape(x, out_type=indices.dtype)[axis]
        return tf.gather(x, tf.where(indices < 0, indices + n, indices), axis=axis)

    def take_along_axis(self, x, indices, axis):
        return tf.experimental.numpy.take_along_axis(self._in(x), self._index(indices), axis)

    def _flat_positions(self, x, index):
        """The flat positions ``x[index]`` selects, and their shape."""
        if isinstance(index, list):
            index = self._index(index)
        # int32 positions where they fit: TensorFlow's vectorized_map cannot batch a scatter
        # with int64 positions (its converter mixes them with int32 batch indices)
        size = self.size(x)
        dtype = tf.int32 if isinstance(size, int) and size < 2 ** 31 else tf.int64
        pos = tf.reshape(tf.range(size, dtype=dtype), self.shape(x))[index]
        return tf.reshape(pos, (-1, 1)), self.shape(pos)

    def _put(self, op, x, index, value):
        x = self._in(x)
        pos, shape = self._flat_positions(x, index)
        value = tf.reshape(tf.broadcast_to(tf.cast(self._in(value), x.dtype), shape), (-1,))
        return tf.reshape(op(tf.reshape(x, (-1,)), pos, value), self.shape(x))

    def index_update(self, x, index, value):
        return self._put(tf.tensor_scatter_nd_update, x, index, value)

    def index_add(self, x, index, value):
        """Functional ``x[index] += value``; repeated indices accumulate (as in JAX)."""
        return self._put(tf.tensor_scatter_nd_add, x, index, value)

    def diag(self, v): return tf.linalg.diag(self._in(v))
    def ravel(self, x): return tf.reshape(self._in(x), (-1,))
