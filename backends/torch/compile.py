"""torch backend: ``jit`` by tracing (:mod:`ppl.backends.torch.tracing`), the sampling scope,
and the capabilities.

``PPL_TORCH_JIT`` picks what ``jit`` does: ``inductor`` (default) traces a pure array function
into an aten graph that runs as TorchScript and, once called often
(``PPL_TORCH_INDUCTOR_AFTER``, default 1000 calls), as inductor's ahead-of-time C++ code;
``script`` keeps TorchScript, ``fx`` runs the traced graph as Python, ``none`` turns tracing off.
Functions with data-dependent Python control flow or random draws run eagerly whatever the
mode, so loops stay Python loops.
"""

from __future__ import annotations

import contextlib
import os

import torch

from ppl.backends.torch.tracing import TracedFunction

__all__ = ["TorchCompile"]

_JIT_MODES = ("inductor", "script", "fx", "none")


def _jit_mode() -> str:
    mode = os.environ.get("PPL_TORCH_JIT", "inductor").lower()
    if mode not in _JIT_MODES:
        raise ValueError(f"PPL_TORCH_JIT must be 'inductor', 'script', 'fx' or 'none', "
                         f"got {mode!r}.")
    return mode


class TorchCompile:
    """Compilation and capabilities of :class:`~ppl.backends.torch.TorchBackend` (see
    :mod:`ppl.backends.common.compile`)."""

    compiles_control_flow = False
    #: samplers draw through a custom op with a batching rule (ppl.backends.torch.keys)
    vmap_random_draws = True

    @property
    def jit_compiles(self) -> bool:
        """``True`` unless ``PPL_TORCH_JIT=none``."""
        return _jit_mode() != "none"

    def jit(self, fun, static_argnums=()):
        mode = _jit_mode()
        return TracedFunction(fun, static_argnums, None if mode == "none" else mode)

    @contextlib.contextmanager
    def sampling_scope(self):
        """Intra-op threads ``PPL_TORCH_NUM_THREADS`` (default 1) while a sampler runs.

        A sampler makes hundreds of thousands of calls on small tensors; on those torch's
        thread pool costs more than it gives (a GP's ``tril`` took 60 us with two threads and
        2 us with one, and much longer when other processes hold the cores). The setting is
        process-wide and restored on exit.
        """
        raw = os.environ.get("PPL_TORCH_NUM_THREADS", "1")
        try:
            wanted = int(raw)
        except ValueError:
            wanted = 0
        if wanted < 1:
            raise ValueError(f"PPL_TORCH_NUM_THREADS must be a positive integer, got {raw!r}.")
        before = torch.get_num_threads()
        torch.set_num_threads(wanted)
        try:
            yield
        finally:
            torch.set_num_threads(before)
