"""numpy backend: nothing compiles (``jit`` is the identity, loops are Python loops); ``vmap``
is a loop, so random draws inside it use each batch member's own key."""

from __future__ import annotations

__all__ = ["NumpyCompile"]


class NumpyCompile:
    """Capabilities of :class:`~ppl.backends.numpy.NumpyBackend` (see
    :mod:`ppl.backends.common.compile`)."""

    jit_compiles = False
    compiles_control_flow = False
    vmap_random_draws = True
