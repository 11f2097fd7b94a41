"""torch backend: control flow. The eager Python loops of :mod:`ppl.backends.common.control_flow`:
``grad`` flows through them (``torch.func`` records through Python), and ``while_loop``,
``cond`` and ``fori_loop`` call ``bool``/``int`` on their predicates, which works eagerly and
under ``grad`` but not under ``vmap`` on a batched predicate. Nothing to override
(``compiles_control_flow = False``)."""

from __future__ import annotations

__all__ = ["TorchControlFlow"]


class TorchControlFlow:
    """Control flow of :class:`~ppl.backends.torch.TorchBackend` (the eager defaults)."""
