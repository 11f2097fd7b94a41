"""tensorflow backend: neural-network functions (``tf.nn``; ``gelu`` and ``leaky_relu`` are
the shared composites: ``tf.nn``'s round their constants to float32)."""

from __future__ import annotations

import tensorflow as tf

from ppl.backends.tensorflow.core import _unary

__all__ = ["TensorflowNN"]


class TensorflowNN:
    """Neural-network functions of :class:`~ppl.backends.tensorflow.TensorflowBackend`."""

    silu = _unary(tf.nn.silu)
    softsign = _unary(tf.nn.softsign)
    softplus = _unary(tf.nn.softplus)
    sigmoid = _unary(tf.sigmoid)
    log_sigmoid = _unary(tf.math.log_sigmoid)

    def softmax(self, x, axis=-1): return tf.nn.softmax(x, axis=axis)
    def log_softmax(self, x, axis=-1): return tf.nn.log_softmax(x, axis=axis)

    def one_hot(self, indices, num_classes, dtype=None):
        return tf.one_hot(self._in(indices), int(num_classes), dtype=self._dt(dtype))
