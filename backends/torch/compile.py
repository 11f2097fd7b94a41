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
import os
import sys

import torch

from ppl.backends.torch import cpu_allocator
from ppl.backends.torch.tracing import TracedFunction, env_count

__all__ = ["TorchCompile"]

_JIT_MODES = ("inductor", "script", "fx", "none")
_M_MMAP_THRESHOLD = -3      # glibc's mallopt parameter (malloc.h)
_mmap_threshold_set = [False]


def _mmap_threshold() -> int:
    """``PPL_TORCH_MMAP_THRESHOLD``: bytes, default 1 MiB; 0 leaves malloc alone."""
    return env_count("PPL_TORCH_MMAP_THRESHOLD", 1 << 20, minimum=0)


def _fix_mmap_threshold(threshold: int) -> bool:
    """Fix glibc malloc's mmap threshold at ``threshold`` bytes, once per process; whether it
    is (now) fixed by this function.

    glibc raises its threshold to the size of every mmapped block freed (up to 32 MiB), so
    after the first large temporary the tensors of a large model's gradient (an ``(N, chains)``
    product, 1.6 MB at N = 1e5) come from the heap, whose freed pages stay resident: at
    N = 1e5 (logistic regression, D = 100, 4 chains) the run's peak RSS grew by 4-6x the data
    over N = 1,000's, and by 1x with the threshold fixed.

    The setting is process-wide and cannot be scoped: glibc has no call that reads the
    threshold, and setting it switches the dynamic adjustment off for good. So it is made only
    where it is glibc's (Linux, ``gnu_get_libc_version`` present), not when the user set malloc's
    threshold (``MALLOC_MMAP_THRESHOLD_``, ``GLIBC_TUNABLES``), and only by runs whose data
    reach the threshold (:meth:`TorchCompile.sampling_scope`). Blocks below it are served as
    before; blocks above it are always mmapped (fresh pages: a loop making 2-8 MB NumPy
    temporaries ran up to 1.4x slower than with the raised threshold).
    """
    if _mmap_threshold_set[0]:
        return True
    if threshold <= 0 or not sys.platform.startswith("linux") \
            or "MALLOC_MMAP_THRESHOLD_" in os.environ \
            or "mmap_threshold" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        libc = ctypes.CDLL(None)                # the process's own symbols: no library loaded
        if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):
            return False                        # musl and others: leave them alone
        threshold = ctypes.c_int(min(threshold, 2**31 - 1))     # glibc refuses > 32 MiB
        _mmap_threshold_set[0] = libc.mallopt(_M_MMAP_THRESHOLD, threshold) == 1
    except (OSError, AttributeError):
        return False
    return _mmap_threshold_set[0]


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
    #: ``Tensor * ndarray`` is NumPy's operator: a model's NumPy data become tensors first
    numpy_operands = False

    @property
    def jit_compiles(self) -> bool:
        """``True`` unless ``PPL_TORCH_JIT=none``."""
        return _jit_mode() != "none"

    def jit(self, fun, static_argnums=(), *, once=False):
        mode = _jit_mode()
        return TracedFunction(fun, static_argnums, None if mode == "none" else mode)

    @contextlib.contextmanager
    def sampling_scope(self, *, data_bytes: int = 0):
        """Intra-op threads ``PPL_TORCH_NUM_THREADS`` (default 1) and a caching CPU allocator
        (:mod:`ppl.backends.torch.cpu_allocator`) while a sampler runs, and glibc's mmap
        threshold fixed for a model with large data.

        A sampler makes hundreds of thousands of calls on small tensors; on those torch's
        thread pool costs more than it gives (a GP's ``tril`` took 60 us with two threads and
        2 us with one, and much longer when other processes hold the cores). The setting is
        process-wide and restored on exit.

        When the model's data (``data_bytes``) reach ``PPL_TORCH_MMAP_THRESHOLD`` bytes
        (default 1 MiB; 0: off), malloc's mmap threshold is fixed there, for the rest of the
        process (:func:`_fix_mmap_threshold`, glibc only): the peak memory of a large model's
        run then stays near its data and draws.
        """
        raw = os.environ.get("PPL_TORCH_NUM_THREADS", "1")
        try:
            wanted = int(raw)
        except ValueError:
            wanted = 0
        if wanted < 1:
            raise ValueError(f"PPL_TORCH_NUM_THREADS must be a positive integer, got {raw!r}.")
        threshold = _mmap_threshold()
        if data_bytes >= threshold > 0:
            _fix_mmap_threshold(threshold)
        cached = cpu_allocator.install()     # (first: a bad setting raises, nothing changed)
        before = torch.get_num_threads()
        torch.set_num_threads(wanted)
        try:
            yield
        finally:
            if cached:
                cpu_allocator.remove()
            torch.set_num_threads(before)
