"""The progress bar of MCMC runs: phase, iterations per second, step size, divergences.

One object per run; chains that run in threads share it (updates hold a lock).
"""

from __future__ import annotations

import threading

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

    def __init__(self, total: int, label: str, *, enabled: bool = True, phases: bool = True):
        self.label = label
        self.phases = phases
        self._lock = threading.Lock()
        self._bar = None
        if enabled and total > 0:
            from tqdm.auto import tqdm  # a dependency; imported when a bar is shown
            self._bar = tqdm(total=total, desc=label, dynamic_ncols=True)

    def phase(self, name: str) -> None:
        """A new phase (``"warmup"``, ``"sample"``) starts."""
        if self._bar is not None and self.phases:
            self._bar.set_description(f"{name} [{self.label}]")
            self._bar.set_postfix({"divergences": 0}, refresh=False)

    def update(self, n: int, step_size: float, divergences: int) -> None:
        """``n`` more iterations done; the latest mean step size and the phase's divergences."""
        if self._bar is None:
            return
        with self._lock:
            self._bar.update(n)
            self._bar.set_postfix({"step_size": f"{step_size:.3g}", "divergences": divergences},
                                  refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

