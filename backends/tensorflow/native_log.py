"""TensorFlow's start-up lines, kept off the terminal.

Importing TensorFlow 2.21 and starting its runtime writes, from C++, straight to the process's
standard error: that oneDNN is on, that no CUDA driver was found, which CPU instructions the
build could use, and (before ``absl`` is initialised, so ``TF_CPP_MIN_LOG_LEVEL`` cannot hold
them back) a warning about that. On a CPU-only machine none of it is actionable, and it lands
in the middle of a run's progress (``ppl compare``). :func:`quiet_start_up` catches what the
file descriptor receives while TensorFlow starts and writes back everything but those lines;
nothing is dropped if the start fails. A user who sets ``TF_CPP_MIN_LOG_LEVEL=0`` (every log
line) sees TensorFlow's own behaviour, untouched; other values ask for fewer lines, and JAX sets
``1`` when it is imported, so they do not turn the filter off.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile

__all__ = ["quiet_start_up", "is_start_up_noise"]

_NOISE = re.compile(
    r"WARNING: All log messages before absl::InitializeLog\(\) is called"
    r"|I\d{4} [\d:.]+\s+\d+ (port|cudart_stub|cpu_feature_guard)\.cc:\d+\]"
    r"|E\d{4} [\d:.]+\s+\d+ cuda_(platform|executor|diagnostics)\.cc:\d+\] "
    r"(failed call to cuInit|.*CUDA)"
    r"|To enable the following instructions: .*rebuild TensorFlow")


def is_start_up_noise(line: str) -> bool:
    """Whether ``line`` is one of TensorFlow's start-up messages :func:`quiet_start_up`
    holds back."""
    return _NOISE.match(line) is not None


@contextlib.contextmanager
def quiet_start_up():
    """Run the block with file descriptor 2 caught; afterwards, write back every line but
    TensorFlow's start-up messages (:func:`is_start_up_noise`), or every line if the block
    raised. Does nothing where ``TF_CPP_MIN_LOG_LEVEL`` is ``0`` or descriptor 2 is not open."""
    if os.environ.get("TF_CPP_MIN_LOG_LEVEL", "").strip() == "0":
        yield
        return
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    failed = False
    with tempfile.TemporaryFile() as caught:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os.dup2(caught.fileno(), 2)
        try:
            yield
        except BaseException:
            failed = True
            raise
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            lines = caught.read().decode(errors="replace").splitlines(keepends=True)
            kept = lines if failed else [line for line in lines
                                         if not is_start_up_noise(line)]
            if kept:
                os.write(2, "".join(kept).encode())
