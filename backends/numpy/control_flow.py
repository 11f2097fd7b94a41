"""numpy backend: control flow. The eager Python loops of
:mod:`ppl.backends.common.control_flow` are exactly right here: autograd records through them,
so ``grad`` flows through ``scan`` and ``fori_loop``; nothing to override."""

from __future__ import annotations

__all__ = ["NumpyControlFlow"]


class NumpyControlFlow:
    """Control flow of :class:`~ppl.backends.numpy.NumpyBackend` (the eager defaults)."""
