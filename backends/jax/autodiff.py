"""jax backend: ``jax.grad``, ``jax.value_and_grad``, ``jax.vmap``, ``jax.lax.stop_gradient``."""

from __future__ import annotations

import jax

from ppl.backends.jax.core import _axis

__all__ = ["JaxAutodiff"]


class JaxAutodiff:
    """Autodiff and batching of :class:`~ppl.backends.jax.JaxBackend`."""

    def grad(self, fun, argnums=0, has_aux=False):
        return jax.grad(fun, argnums=_axis(argnums), has_aux=has_aux)

    def value_and_grad(self, fun, argnums=0, has_aux=False):
        return jax.value_and_grad(fun, argnums=_axis(argnums), has_aux=has_aux)

    def vmap(self, fun, in_axes=0, out_axes=0):
        return jax.vmap(fun, in_axes=_axis(in_axes), out_axes=_axis(out_axes))

    def stop_gradient(self, x): return jax.lax.stop_gradient(x)
