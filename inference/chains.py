"""Running chains: chunks of iterations, warmup then sampling, and the ways to run several chains.

* An *iteration* is the kernel's pure ``iteration(rng_key, carry, flags) -> (carry, Draw)``
  (:mod:`ppl.inference.kernels`). A *chunk* is ``ops.scan`` over up to 1000 of them by default,
  compiled as one call where the backend compiles control flow (JAX), with the model's data as
  arguments (:mod:`ppl.inference.programs`, which also caches it across runs); a call runs the
  first iterations of the chunk and skips the rest (the last of a phase, and calls sized by
  time), so every call has the same shape and the chunk compiles once.
  Between chunks the progress bar moves and the draws are copied to the host.
* ``"vectorized"``: one batch whose chains advance in lock-step (every backend).
  ``"sequential"``: one chain after another. ``"parallel"``: the chains split over devices
  (``ops.shard_chains``; lock-step within a device) where the backend has several, else a
  thread per chain (compiled code and torch kernels release the GIL, so threads use several
  cores).
"""

from __future__ import annotations

import contextvars
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from ppl import ops, random
from ppl.backends import tree
from ppl.inference.kernels import Draw
from ppl.inference.progress import Progress

__all__ = ["RunResult", "ChainRunner", "CHAIN_METHODS"]

CHAIN_METHODS = ("vectorized", "sequential", "parallel")

#: seconds a call of a chunk takes at most, where the count of its iterations adapts (the
#: progress bar moves and Ctrl-C is answered between calls)
CALL_SECONDS = 0.25
#: iterations of an adaptive chunk at most
MAX_CHUNK = 1000
#: bytes of draws an adaptive chunk returns at most (a row: the chains' positions and
#: statistics, counted as float64)
MAX_CHUNK_BYTES = 32 << 20

#: chunk rows made as backend arrays, by backend and content, the most recently used last
_ROWS: dict = {}
_ROWS_KEPT = 64
_ROWS_LOCK = threading.Lock()


class RunResult(NamedTuple):
    """The draws of a run, on the host."""

    positions: np.ndarray     # (C, N, D) unconstrained draws (after thinning)
    stats: dict               # name -> (C, N) per-draw statistics
    last: tuple               # the final carry (sampler state, adaptation state), backend arrays
    interrupted: bool         # stopped by KeyboardInterrupt
    num_done: int             # iterations (warmup + sampling) completed by the shortest chain


class ChainRunner:
    """Runs a kernel's iterations for a batch of chains: warmup, then sampling.

    Parameters
    ----------
    kernel
        The kernel object (its ``empty_draw``, ``warmup_flags``).
    program, data
        The run's :class:`~ppl.inference.programs.Program` and the data it takes.
    num_warmup, num_samples, thinning
        As in :class:`~ppl.inference.MCMC`.
    chunk_size
        Iterations per call (``None``: where the backend compiles control flow, as many as
        take ~:data:`CALL_SECONDS`, in a chunk of the longer phase, at most :data:`MAX_CHUNK`
        iterations and :data:`MAX_CHUNK_BYTES` of draws; 10 elsewhere).
    progress_bar
        Show progress.
    """

    def __init__(self, kernel, program, data, *, num_warmup, num_samples, thinning,
                 chunk_size, progress_bar):
        self.kernel = kernel
        self.program, self.data = program, data
        self.num_warmup, self.num_samples, self.thinning = num_warmup, num_samples, thinning
        self.progress_bar = progress_bar
        # iterations per call: a fixed count (``chunk_size``, or 10 where iterations run one
        # by one in Python: the progress bar and Ctrl-C are answered often, the per-call work
        # paid a tenth as often, ~0.2 ms per iteration on torch), or, where the whole chunk
        # compiles, as many as take ~CALL_SECONDS, up to a chunk of a phase (the chunk's
        # shape, compiled once; the rest of it is skipped; :meth:`_fit_chunk`). Each call
        # costs ~1-2 ms beyond its iterations (JAX, 4 devices: the launch with its inputs, the
        # draws read back): eight schools' 1000 + 1000 took 20 calls at 1/10 of a phase, 10
        # in chunks of 1/4 of a phase, 5 now
        if chunk_size is not None and (isinstance(chunk_size, bool) or int(chunk_size) < 1):
            raise ValueError(f"chunk_size must be an int >= 1 or None, got {chunk_size!r}.")
        longest = max(num_warmup, num_samples)
        self._adaptive = chunk_size is None and ops.backend().compiles_control_flow
        if chunk_size is None:
            chunk_size = int(min(MAX_CHUNK, max(10, longest))) if self._adaptive \
                else 10
        self.chunk_size = chunk_size
        # until a call's speed is known, 10 iterations per call: a slow model moves the bar
        # and answers Ctrl-C after 10 of its iterations, not after a tenth of a phase
        self._first_count = min(self.chunk_size, 10)
        total = num_warmup + num_samples
        # each iteration's row of the chunk's input: its index, "active", then the WarmupFlags
        # (one (K, 7) integer array per chunk: one transfer, not one per column; the backend's
        # default integer type, which the iteration index had as a column of its own)
        self._rows = np.zeros((total, 7), np.int64)
        self._rows[:, 0] = np.arange(total)
        self._rows[:num_warmup, 2:] = kernel.warmup_flags(num_warmup).T
        self._chunk = program.chunk
        self._first_chunk_done = threading.Event()
        self._stop = threading.Event()    # set on Ctrl-C: every chain stops after its chunk
        self._threads = False
        # per batch: phase -> (wall seconds, iterations) of each chunk read
        self._chunk_times: list[dict] = []

    # ------------------------------------------------------------------ chain methods
    def run(self, method: str, carry, run_key) -> RunResult:
        """Run ``carry``'s chains by ``method`` (one of :data:`CHAIN_METHODS`)."""
        C = int(ops.shape(carry[0].position)[0])
        self._fit_chunk(C, int(ops.shape(carry[0].position)[-1]))
        total = self.num_warmup + self.num_samples
        if method == "vectorized" or C == 1:
            label = f"{method}, {C} chains" if C > 1 else "1 chain"
            with Progress(total * C, label, enabled=self.progress_bar) as bar:
                return self._run_batch(self._chunk, carry, run_key, bar)
        shards = self.program.num_shards
        if method == "parallel" and shards > 1:
            # block s of chains draws with fold_in(run_key, s), made inside the compiled chunk
            # from its device's index (no key program of its own on a first run)
            label = f"parallel, {C} chains on {shards} devices"
            shard_index = ops.asarray(np.arange(shards, dtype=np.int32))
            with Progress(total * C, label, enabled=self.progress_bar) as bar:
                return self._run_batch(self._chunk, carry, (run_key, shard_index), bar)
        keys = [random.fold_in(run_key, c) for c in range(C)]     # chain c: as block c above
        carries = [tree.map(lambda a, c=c: a[c:c + 1], carry) for c in range(C)]
        if method == "sequential":
            results = []
            for c in range(C):
                with Progress(total, f"sequential, chain {c + 1}/{C}",
                              enabled=self.progress_bar) as bar:
                    results.append(self._run_batch(self._chunk, carries[c], keys[c], bar))
                if results[-1].interrupted:   # chains not started: no iterations
                    results += [self._collect([], carries[d], True, 0) for d in range(c + 1, C)]
                    break
        else:
            results = self._in_threads(carries, keys)
        return _concat(results)

    def _in_threads(self, carries, keys):
        self._threads = True
        C = len(carries)
        total = (self.num_warmup + self.num_samples) * C
        with Progress(total, f"parallel, {C} chains", enabled=self.progress_bar,
                      phases=False) as bar, ThreadPoolExecutor(max_workers=C) as pool:
            def one(c):
                return self._run_batch(self._chunk, carries[c], keys[c], bar)

            # the first chain compiles what every chain runs, then the others start; Ctrl-C
            # may come as soon as chain 0 reports progress, so it is submitted inside the try
            futures = []
            try:
                futures.append(pool.submit(contextvars.copy_context().run, one, 0))
                while not (futures[0].done() or self._first_chunk_done.wait(0.05)):
                    pass
                futures += [pool.submit(contextvars.copy_context().run, one, c)
                            for c in range(1, C)]
                return [f.result() for f in futures]
            except KeyboardInterrupt:     # caught by the main thread: stop the workers
                self._stop.set()
                done = [f.result() for f in futures]
                return done + [self._collect([], carries[c], True, 0)
                               for c in range(len(done), C)]

    # ------------------------------------------------------------------ one batch
    def _run_batch(self, chunk_fn, carry, run_key, bar: Progress) -> RunResult:
        """Warmup then sampling for one batch of chains, chunk by chunk."""
        W, N = self.num_warmup, self.num_samples
        total = W + N
        pieces, interrupted = [], False
        times = {"warmup": [], "sample": []}
        self._chunk_times.append(times)
        # the chunk dispatched last, not yet read: (phase, first iteration, iterations, its
        # Draw, start time)
        pending = []
        done = 0
        divergences = {"warmup": 0, "sample": 0}
        last_read = 0.0      # when the previous chunk's draws were on the host

        def read():
            """Copy the pending chunk's draws to the host (of a warmup chunk, only what the
            bar shows), move the bar. A chunk's seconds run from the previous chunk's read (or
            its own dispatch, the first of a phase) to its own read, so the chunks' seconds add
            up to the phase's wall time."""
            nonlocal done, last_read
            phase, s, n, ys, tic = pending.pop()

            def host(a):
                a = np.asarray(ops.to_numpy(a))
                # a copy of the rows used: a view would keep the whole chunk's buffer alive
                return a[:n].copy() if n < len(a) else a
            if phase == "sample":
                ys = tree.map(host, ys)
                pieces.append(ys)
                diverging, step_size = ys.info.diverging, ys.step_size
            else:
                diverging, step_size = host(ys.info.diverging), host(ys.step_size)
            divergences[phase] += int(diverging.sum())
            now = time.perf_counter()
            times[phase].append((now - max(tic, last_read), n))
            last_read = now
            done = s + n
            # the bar counts iterations of every chain of the batch
            bar.update(n * step_size.shape[1], float(np.mean(step_size[-1])),
                       divergences[phase])

        try:
            # a divergent trajectory overflows to inf/NaN by design: it is counted (diverging,
            # the progress bar) and gets weight 0, so NumPy's floating-point warnings are noise
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                for phase, lo, hi in (("warmup", 0, W), ("sample", W, total)):
                    if hi > lo:
                        bar.phase(phase)
                    s = lo
                    while s < hi:
                        n = min(self._count(times), hi - s)
                        tic = time.perf_counter()
                        carry, ys = chunk_fn(carry, self._chunk_rows(s, s + n), run_key,
                                             self.data)
                        self._first_chunk_done.set()
                        # where the call returned before its work is done (JAX dispatches
                        # asynchronously), the previous chunk's draws are read while this one
                        # runs: the device does not wait for the host between chunks
                        if pending:
                            read()
                        pending.append((phase, s, n, ys, tic))
                        s += n
                        if self._stop.is_set():
                            raise KeyboardInterrupt
                    if pending:
                        read()
        except KeyboardInterrupt:
            interrupted = True
            self._stop.set()
            if pending:         # the carry holds its iterations: keep its draws with them
                read()
        return self._collect(pieces, carry, interrupted, done)

    def _fit_chunk(self, num_chains: int, dim: int) -> None:
        """An adaptive chunk small enough that the draws of one call (``num_chains`` chains
        of ``dim`` coordinates and their statistics, as float64) stay within
        :data:`MAX_CHUNK_BYTES`."""
        if self._adaptive:
            rows = max(10, MAX_CHUNK_BYTES // (8 * num_chains * (dim + 16)))
            self.chunk_size = min(self.chunk_size, rows)

    def _count(self, times) -> int:
        """Iterations of the next call: the chunk's where the count is fixed, else as many as
        take ~:data:`CALL_SECONDS` at the batch's speed so far (its calls read, but the first:
        it compiles). The speed is taken over all of them: a call's seconds run from one read
        to the next, which, where a call returns only when its work is done (TensorFlow),
        holds the next call's work, not its own."""
        if not self._adaptive:
            return self.chunk_size
        timed = (times["warmup"] + times["sample"])[1:]
        if not timed:
            return self._first_count
        rate = sum(n for _, n in timed) / max(sum(t for t, _ in timed), 1e-9)
        return int(min(self.chunk_size, max(1, CALL_SECONDS * rate)))

    def _chunk_rows(self, s, hi):
        """The rows of the chunk starting at iteration ``s``, active up to ``hi``, a
        backend array. Where the chunk compiles, the same rows give the same array, kept
        across calls and runs (:data:`_ROWS`; the calls of a warm run at full count repeat
        the last run's): a device program then finds them already placed, where a new
        array per chunk was a transfer per call (JAX on 4 devices: ~0.5 ms of a ~2 ms call)."""
        K, total = self.chunk_size, self.num_warmup + self.num_samples
        idx = np.arange(s, s + K)
        rows = self._rows[np.minimum(idx, total - 1)]
        rows[:, 0] = idx
        rows[:, 1] = idx < hi            # the padding's iterations are skipped
        rows[:, 2:] *= rows[:, 1:2]
        if not ops.backend().compiles_control_flow:      # read in Python: nothing to place
            return ops.asarray(rows)
        # int32 whatever JAX's 64-bit mode (switched on by a float64 backend): a cached array
        # made before it then still matches the chunk's compiled input
        rows = rows.astype(np.int32)
        key = (ops.backend(), rows.tobytes())
        with _ROWS_LOCK:                 # chains run in threads share the cache
            made = _ROWS.pop(key, None)
            if made is None:
                made = ops.asarray(rows)
            _ROWS[key] = made            # most recent last
            while len(_ROWS) > _ROWS_KEPT:
                del _ROWS[next(iter(_ROWS))]
        return made

    @property
    def timings(self) -> dict:
        """Wall time in seconds of ``compile`` (the first chunk's excess over its iterations at
        the typical speed of the others: tracing and compilation), ``warmup`` and
        ``sampling``; summed over batches run one after another, the longest of batches run
        in threads."""
        per_batch = []
        for times in self._chunk_times:
            chunks = times["warmup"] + times["sample"]
            first_phase = "warmup" if times["warmup"] else "sample"
            # seconds per iteration of the phase's other chunks (or the sampling phase's)
            rest = [t / n for t, n in times[first_phase][1:] or times["sample"][1:]]
            compile_s = max(chunks[0][0] - chunks[0][1] * float(np.median(rest)), 0.0) \
                if rest else 0.0
            warmup, sampling = (sum(t for t, _ in times[p]) for p in ("warmup", "sample"))
            per_batch.append((compile_s, warmup - compile_s * (first_phase == "warmup"),
                              sampling - compile_s * (first_phase == "sample")))
        combine = max if self._threads else sum
        return {k: float(combine(t[i] for t in per_batch)) if per_batch else 0.0
                for i, k in enumerate(("compile", "warmup", "sampling"))}

    def _collect(self, pieces, carry, interrupted, done) -> RunResult:
        C, D = (int(d) for d in ops.shape(carry[0].position))
        if pieces:
            draws = Draw(*[tree.map(lambda *a: np.concatenate(a, axis=0), *parts)
                           for parts in zip(*pieces)])
        else:
            info = type(self.kernel.empty_draw(carry).info)
            draws = Draw(np.zeros((0, C, D)), np.zeros((0, C)),
                         info(*[np.zeros((0, C)) for _ in info._fields]), np.zeros((0, C)))
        t = self.thinning
        stats = {"potential_energy": draws.potential_energy[::t].T,
                 "step_size": draws.step_size[::t].T}
        for f, v in draws.info._asdict().items():
            stats[f] = v[::t].T
        stats["diverging"] = stats["diverging"].astype(bool)
        stats["num_steps"] = stats["num_steps"].astype(np.int64)
        if "tree_depth" in stats:
            stats["tree_depth"] = stats["tree_depth"].astype(np.int64)
        return RunResult(np.swapaxes(draws.position[::t], 0, 1), stats, carry, interrupted,
                         done)


def _concat(results) -> RunResult:
    """One result from per-chain results. After an interrupt: the chains that made draws,
    cut to the shortest of them (``last`` keeps every chain)."""
    last = tree.map(lambda *xs: ops.concat(list(xs), axis=0), *[r.last for r in results])
    kept = [r for r in results if r.positions.shape[1] > 0] or results
    n = min(r.positions.shape[1] for r in kept)
    positions = np.concatenate([r.positions[:, :n] for r in kept], axis=0)
    stats = {k: np.concatenate([r.stats[k][:, :n] for r in kept], axis=0)
             for k in results[0].stats}
    return RunResult(positions, stats, last, any(r.interrupted for r in results),
                     min(r.num_done for r in kept))
