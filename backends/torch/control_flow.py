"""torch backend: control flow. The eager Python loops of :mod:`ppl.backends.common.control_flow`:
``grad`` flows through them (``torch.func`` records through Python), and ``while_loop``,
``cond`` and ``fori_loop`` call ``bool``/``int`` on their predicates, which works eagerly and
under ``grad`` but not under ``vmap`` on a batched predicate (``compiles_control_flow = False``).

One exception: an eager ``while_loop`` called many times with closures of the same code (the
leaves of a NUTS trajectory doubling) is traced once into torch's loop operator and compiled
by inductor (:mod:`ppl.backends.torch.loops`; ``PPL_TORCH_LOOP_AFTER`` calls, 0 turns it off).
A ``scan`` traced inside such a loop becomes torch's scan operator instead of one copy of its
body per step (:mod:`ppl.backends.torch.scans`; a body it cannot take is unrolled as before); a
``scan`` called often outside any trace (the MCMC driver's chunk of iterations) is compiled
whole, and a ``cond`` on a traced predicate in either becomes torch's condition operator
(:mod:`ppl.backends.torch.loop_calls`).
"""

from __future__ import annotations

import torch

from ppl.backends.torch import loop_calls, loops, scans
from ppl.backends.torch.compile import _jit_mode

__all__ = ["TorchControlFlow"]


class TorchControlFlow:
    """Control flow of :class:`~ppl.backends.torch.TorchBackend` (see the module docstring)."""

    def while_loop(self, cond_fun, body_fun, init_val):
        eager = super().while_loop
        if loops.capturing():
            return loop_calls.nested_while(cond_fun, body_fun, init_val)
        if not self._compiles_loops():
            return eager(cond_fun, body_fun, init_val)
        return loops.run_compiled(cond_fun, body_fun, init_val, loops.loop_after(), eager)

    def cond(self, pred, true_fun, false_fun, *operands):
        if loops.capturing() and isinstance(pred, torch.Tensor):
            return loop_calls.nested_cond(pred, true_fun, false_fun, operands)
        return super().cond(pred, true_fun, false_fun, *operands)

    def scan(self, f, init, xs=None, length=None, reverse=False):
        self._scan_length(xs, length)
        if loops.loop_tracing():
            if scans.scan_op_enabled():
                try:
                    return scans.traced_scan(f, init, xs, length, reverse)
                except Exception as e:  # noqa: BLE001 - a body torch's scan cannot take: unroll
                    loops._debug("scan unrolled", e)
        elif xs is not None and not reverse and self._compiles_loops():
            return loops.run_scan(f, init, xs, loops.loop_after(), super().scan)
        return super().scan(f, init, xs, length, reverse)

    @staticmethod
    def _compiles_loops() -> bool:
        return loops.loop_after() != 0 and _jit_mode() == "inductor" and not loops.inactive()
