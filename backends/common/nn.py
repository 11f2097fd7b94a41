"""Neural-network functions: the ``ppl.ops.nn`` namespace (the set the Array API's
deep-learning-extension discussion found common to the frameworks). Every public method here is
one ``NN_OPS`` name; all but ``relu`` and ``one_hot`` are floating ops
(:mod:`ppl.backends.common.dtypes`). All are composites over the core and special ops."""

from __future__ import annotations

import math

from ppl.backends.common.dtypes import floating

__all__ = ["NN"]


class NN:
    """Activations, ``softmax``/``log_softmax`` and ``one_hot``."""

    def relu(self, x):
        return self.maximum(x, 0)     # an int 0: integer input stays integer

    @floating()
    def sigmoid(self, x):
        return 0.5 * (self.tanh(0.5 * x) + 1.0)

    @floating()
    def log_sigmoid(self, x):
        return -self.softplus(-x)

    @floating()
    def softplus(self, x):
        """``log(1 + exp(x))``, stable for large ``|x|``."""
        return self.maximum(x, 0.0) + self.log1p(self.exp(-self.abs(x)))

    @floating()
    def gelu(self, x, approximate=False):
        if approximate:
            c = math.sqrt(2.0 / math.pi)
            return 0.5 * x * (1.0 + self.tanh(c * (x + 0.044715 * x * x * x)))
        return 0.5 * x * self.erfc(-x / math.sqrt(2.0))

    @floating()
    def silu(self, x):
        return x * self.sigmoid(x)

    @floating()
    def elu(self, x, alpha=1.0):
        return self.where(x > 0, x, alpha * self.expm1(self.minimum(x, 0.0)))

    @floating()
    def celu(self, x, alpha=1.0):
        return self.where(x > 0, x, alpha * self.expm1(self.minimum(x, 0.0) / alpha))

    @floating()
    def leaky_relu(self, x, negative_slope=0.01):
        return self.where(x >= 0, x, negative_slope * x)

    @floating()
    def softsign(self, x):
        return x / (1.0 + self.abs(x))

    @floating()
    def softmax(self, x, axis=-1):
        return self.exp(self.log_softmax(x, axis=axis))

    @floating()
    def log_softmax(self, x, axis=-1):
        return x - self.logsumexp(x, axis=axis, keepdims=True)

    def one_hot(self, indices, num_classes, dtype=None):
        return self.astype(
            self.equal(self.expand_dims(indices, -1), self.arange(num_classes)),
            dtype or self.dtype,
        )
