"""jax backend: ``jax.jit`` and ``jax.pmap``; everything compiles, control flow included, and
``vmap`` over keys draws once per key."""

from __future__ import annotations

import jax

from ppl.backends.jax.core import _axis

__all__ = ["JaxCompile"]


class JaxCompile:
    """Compilation, devices and capabilities of :class:`~ppl.backends.jax.JaxBackend` (see
    :mod:`ppl.backends.common.compile`)."""

    jit_compiles = True
    compiles_control_flow = True
    vmap_random_draws = True

    def jit(self, fun, static_argnums=()):
        return jax.jit(fun, static_argnums=_axis(static_argnums))

    def device_count(self):
        """JAX's local devices, or 1 when this backend is pinned to one ``device``."""
        return jax.local_device_count() if self._device is None else 1

    def pmap(self, fun, in_axes=0, out_axes=0):
        return jax.pmap(fun, in_axes=_axis(in_axes), out_axes=_axis(out_axes))
