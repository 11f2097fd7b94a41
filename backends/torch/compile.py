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
import ctypes
import ctypes.util
import os

import torch

from ppl.backends.torch.tracing import TracedFunction

__all__ = ["TorchCompile"]

_JIT_MODES = ("inductor", "script", "fx", "none")
_M_MMAP_THRESHOLD = -3      # glibc's mallopt parameter (malloc.h)
_malloc_fixed = [False]


def _fix_mmap_threshold():
    """Fix glibc malloc's mmap threshold at ``PPL_TORCH_MMAP_THRESHOLD`` bytes (default 1 MiB;
    0: leave malloc alone), once per process, where the C library is glibc.

    glibc raises its threshold to the size of every mmapped block freed (up to 32 MiB), so
    after the first large temporary the tensors of a large model's gradient (an ``(N, chains)``
    product, 1.6 MB at N = 1e5) come from the heap, whose freed pages stay resident: at
    N = 1e5 (logistic regression, D = 100, 4 chains) the run's peak RSS grew by 4-6x the data
    over N = 1,000's, and by 1x with the threshold fixed. A fixed threshold also turns glibc's
    adjustment off for the rest of the process; blocks below it (every tensor of a small
    model) are not affected.
    """
    if _malloc_fixed[0]:
        return
    _malloc_fixed[0] = True
    raw = os.environ.get("PPL_TORCH_MMAP_THRESHOLD", str(1 << 20))
    try:
        threshold = int(raw)
    except ValueError:
        raise ValueError(f"PPL_TORCH_MMAP_THRESHOLD must be a number of bytes (0: off), "
                         f"got {raw!r}.") from None
    if threshold <= 0:
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        if hasattr(libc, "gnu_get_libc_version"):      # glibc's mallopt only
            libc.mallopt(_M_MMAP_THRESHOLD, ctypes.c_int(threshold))
    except OSError:
        pass


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
        process-wide and restored on exit. The first scope also fixes glibc's mmap threshold
        (``PPL_TORCH_MMAP_THRESHOLD``, :func:`_fix_mmap_threshold`).
        """
        raw = os.environ.get("PPL_TORCH_NUM_THREADS", "1")
        try:
            wanted = int(raw)
        except ValueError:
            wanted = 0
        if wanted < 1:
            raise ValueError(f"PPL_TORCH_NUM_THREADS must be a positive integer, got {raw!r}.")
        _fix_mmap_threshold()
        before = torch.get_num_threads()
        torch.set_num_threads(wanted)
        try:
            yield
        finally:
            torch.set_num_threads(before)
