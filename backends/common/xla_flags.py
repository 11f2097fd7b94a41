"""XLA's small-loop threshold, for the backends that compile through XLA (JAX, TensorFlow).

XLA's CPU runtime launches every kernel of a ``while`` body as a separate task, ~0.1-0.3 us
each, and a NUTS leaf has ~45 of them: on a model whose gradient costs well under a microsecond
(eight schools, mesquite, kidiq, arK) that launch cost is most of a leapfrog step. XLA compiles
a loop whose one iteration touches fewer bytes than ``xla_cpu_small_while_loop_byte_threshold``
(one kilobyte by default) into a single native function instead.
:func:`request_small_loop_kernels` raises that threshold to 256 KiB in ``XLA_FLAGS``
(``--xla_backend_extra_options=...``). XLA reads the variable once per process, at its first
compile, and neither JAX's nor TensorFlow's per-program options take such a map entry, so the
setting holds for every XLA program of the process, and for the processes it starts, which
inherit the environment.

Warm runs on JAX, 4 chains on 4 host devices, microseconds per leapfrog step (ranges over runs,
``README.md``): eight schools 15-20 -> 5.5-9.2, kidiq 12-15 -> 3.9-5.3, arK 11-16 -> 5.1-8.5,
mesquite 13-16 -> 6.2-8.8; the logistic regression (N = 2,000, its loops touch more than
256 KiB) keeps ~51. At 1 MiB its loops are hoisted too and its step was slower (52 -> 61 us:
its matrix products lose the runtime's threads and tuned kernels). The price is the first run's
compile wall time: the hoisted program is generated on one thread (``benchmarks/PROFILE.md``,
tenth pass). ``PPL_JAX_SMALL_LOOP_BYTES=n`` sets another threshold (``0``: XLA's default; the
name is JAX's, the threshold serves TensorFlow's XLA alike); a threshold already in
``XLA_FLAGS`` is kept, and so is an ``XLA_FLAGS`` naming a flag file.
"""

from __future__ import annotations

import os

__all__ = ["request_small_loop_kernels"]

#: the threshold ppl asks for (see the module docstring)
_SMALL_LOOP_BYTES = 1 << 18
_SMALL_LOOP_OPTION = "xla_cpu_small_while_loop_byte_threshold"
_EXTRA_OPTIONS = "--xla_backend_extra_options="


def _small_loop_bytes() -> int:
    """``PPL_JAX_SMALL_LOOP_BYTES``, checked, else ppl's threshold."""
    wanted = os.environ.get("PPL_JAX_SMALL_LOOP_BYTES", "").strip()
    if not wanted:
        return _SMALL_LOOP_BYTES
    try:
        threshold = int(wanted)
    except ValueError:
        threshold = -1
    if not 0 <= threshold < 2**63:
        raise ValueError(f"PPL_JAX_SMALL_LOOP_BYTES must be a whole number of bytes, 0 or more "
                         f"(0 keeps XLA's default), got {wanted!r}.")
    return threshold


def request_small_loop_kernels() -> None:
    """Put ppl's small-loop threshold in ``XLA_FLAGS``, unless ``XLA_FLAGS`` already has one or
    names a file (XLA reads flags from it when the value does not start with ``-``), or
    ``PPL_JAX_SMALL_LOOP_BYTES=0``. It takes effect in an XLA that has not compiled yet."""
    threshold = _small_loop_bytes()
    flags = os.environ.get("XLA_FLAGS", "").strip()
    if threshold == 0 or _SMALL_LOOP_OPTION in flags or (flags and not flags.startswith("-")):
        return
    # XLA adds up repeated --xla_backend_extra_options flags (a map): append one
    os.environ["XLA_FLAGS"] = f"{flags} {_EXTRA_OPTIONS}{_SMALL_LOOP_OPTION}={threshold}".strip()
