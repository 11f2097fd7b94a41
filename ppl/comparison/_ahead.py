"""Warm-up runs in background processes, for backends whose first run compiles for long.

torch compiles its sampler's loops (inductor, then g++) into an on-disk cache that any later
process reads (``ppl.backends.BACKENDS[name].warm_up_ahead``). On a cold cache that compile is
most of the backend's first run (eight schools: ~30 of ~35 s), and it keeps one core busy while
the other waits. ``ppl compare`` therefore starts a short run of the same model on such a
backend in a separate process at its start (:class:`WarmUp`), runs the other backends
meanwhile, and runs that backend last, once its warm-up has ended: the run it reports then
finds its loops compiled. The warm-up's draws are thrown away; its duration is reported
(``timings["ahead"]``), and so is that the other backends shared the CPU with it.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import tempfile
import threading
import time

__all__ = ["WarmUp", "WARM_UP_ITERATIONS", "WARM_UP_SECONDS"]

#: warmup and sampling iterations of a warm-up run (at most): enough for torch to compile a
#: NUTS trajectory's loop (after 20 calls) and to run the compiled loop once
WARM_UP_ITERATIONS = (100, 20)
#: a warm-up still running this long after it started is stopped (the backend then compiles
#: in the comparison's process, as without it)
WARM_UP_SECONDS = 900.0


class WarmUp:
    """A warm-up run of backend ``name`` in a separate process running ``argv``, started now.

    What it leaves is the backend's on-disk cache; its output is discarded, and a warm-up
    that fails leaves the backend's run here to compile as it would have without it. It runs
    in its own session, so that a Ctrl-C at the terminal reaches the comparison only, which
    then stops it (:meth:`stop`: the whole process group, its compilers included).
    """

    def __init__(self, name: str, argv: list[str]):
        self.name = name
        self._seconds = math.nan
        start = time.perf_counter()
        self._deadline = start + WARM_UP_SECONDS
        self.error: str | None = None      # why it failed: the last line it wrote
        self._stderr = tempfile.TemporaryFile(mode="w+", prefix="ppl-warm-up-")
        self._process = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=self._stderr,
                                         start_new_session=True)
        self._watch = threading.Thread(target=self._time, args=(start,), daemon=True)
        self._watch.start()

    def _time(self, start: float) -> None:
        code = self._process.wait()
        if code == 0:
            self._seconds = time.perf_counter() - start
        else:
            self._stderr.seek(0)
            lines = [line.strip() for line in self._stderr.read().splitlines() if line.strip()]
            self.error = lines[-1] if lines else f"exit status {code}"
        self._stderr.close()

    def wait(self) -> float:
        """Wait for the warm-up to end; the wall seconds it ran (NaN if it failed, or was
        stopped after :data:`WARM_UP_SECONDS`)."""
        self._watch.join(max(self._deadline - time.perf_counter(), 0.0))
        if self._watch.is_alive():
            self.stop()
            self._watch.join()
            self.error = f"still running after {WARM_UP_SECONDS:.0f} s, stopped"
        return self._seconds

    def stop(self) -> None:
        """End the warm-up if it still runs (an interrupted or failed comparison): its whole
        process group, politely first."""
        for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, None)):
            if self._process.poll() is not None:
                break
            try:
                os.killpg(self._process.pid, sig)
            except ProcessLookupError:
                break
            try:
                self._process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                continue
