"""The progress bar of MCMC runs: phase, iterations per second, step size, divergences.

One object per run; chains that run in threads share it (updates hold a lock). When the output
is not a terminal (a log file, CI), a bar's redraws would flood it: a plain line is written at
each phase and every ~5% of the run instead.
"""

from __future__ import annotations

import sys
import threading
import time

__all__ = ["Progress"]


class Progress:
    """A tqdm bar, or nothing when ``enabled`` is false.

    Parameters
    ----------
    total
        Iterations in the whole run (all chains).
    label
        How chains are run, shown after the phase (``"vectorized, 4 chains"``).
    enabled
        Show the bar.
    phases
        Show the phase in the description (off for a bar shared by chains in threads, whose
        phases do not change together).
    """

    LINES = 20          # plain lines per run when the output is not a terminal

    def __init__(self, total: int, label: str, *, enabled: bool = True, phases: bool = True):
        self.label = label
        self.phases = phases
        self._lock = threading.Lock()
        self._bar = None
        self._lines = None          # (total, done, lines written, start time) without a tty
        if enabled and total > 0:
            from tqdm.auto import tqdm  # a dependency; imported when a bar is shown
            notebook = any(c.__module__ == "tqdm.notebook" for c in tqdm.__mro__)
            if notebook or getattr(sys.stderr, "isatty", lambda: False)():
                self._bar = tqdm(total=total, desc=label, dynamic_ncols=True)
            else:
                self._lines = [total, 0, 0, time.perf_counter()]
                self._desc = label

    def phase(self, name: str) -> None:
        """A new phase (``"warmup"``, ``"sample"``) starts."""
        if not self.phases:
            return
        if self._bar is not None:
            self._bar.set_description(f"{name} [{self.label}]")
            self._bar.set_postfix({"divergences": 0}, refresh=False)
        elif self._lines is not None:
            self._desc = f"{name} [{self.label}]"

    def update(self, n: int, step_size: float, divergences: int) -> None:
        """``n`` more iterations done; the latest mean step size and the phase's divergences."""
        if self._bar is not None:
            with self._lock:
                self._bar.update(n)
                self._bar.set_postfix({"step_size": f"{step_size:.3g}",
                                       "divergences": divergences}, refresh=False)
        elif self._lines is not None:
            with self._lock:
                self._line(n, step_size, divergences)

    def _line(self, n, step_size, divergences):
        total, done, written, start = self._lines
        done += n
        due = done * self.LINES // total
        if due > written:
            elapsed = time.perf_counter() - start
            print(f"{self._desc} {done}/{total} ({100 * done // total}%) {elapsed:.1f}s "
                  f"step_size={step_size:.3g} divergences={divergences}", file=sys.stderr,
                  flush=True)
            written = due
        self._lines = [total, done, written, start]

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

