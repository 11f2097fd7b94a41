"""jax backend: neural-network functions (``jax.nn``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ppl.backends.jax.core import _axis, _unary

__all__ = ["JaxNN"]


class JaxNN:
    """Neural-network functions of :class:`~ppl.backends.jax.JaxBackend`."""

    relu = _unary(jax.nn.relu)
    silu = _unary(jax.nn.silu)
    softsign = _unary(jax.nn.soft_sign)
    softplus = _unary(jax.nn.softplus)
    sigmoid = _unary(jax.nn.sigmoid)
    log_sigmoid = _unary(jax.nn.log_sigmoid)

    def gelu(self, x, approximate=False): return jax.nn.gelu(x, approximate=approximate)
    def elu(self, x, alpha=1.0): return jax.nn.elu(x, alpha=alpha)
    def celu(self, x, alpha=1.0): return jax.nn.celu(x, alpha=alpha)

    def leaky_relu(self, x, negative_slope=0.01):
        return jax.nn.leaky_relu(x, negative_slope=negative_slope)

    def softmax(self, x, axis=-1): return jax.nn.softmax(x, axis=_axis(axis))
    def log_softmax(self, x, axis=-1): return jax.nn.log_softmax(x, axis=_axis(axis))

    def one_hot(self, indices, num_classes, dtype=None):
        return jax.nn.one_hot(jnp.asarray(indices), num_classes, dtype=self._dt(dtype))
