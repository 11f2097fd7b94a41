"""jax backend: compiled programs kept on disk between processes.

A NUTS run on JAX spends most of its first seconds in XLA compiling the sampler's chunk
(1.5-3 s on a 2-core CPU), and a new Python process compiles it again: a script run twice, a
restarted notebook, each process of a cluster job. JAX can keep compiled executables on disk
(its persistent compilation cache, keyed by the program, jaxlib's version, the XLA flags, the
compile options and the devices); a backend constructed while the user has not chosen a cache
(:func:`use_compilation_cache`) turns it on in a per-user directory, as Stan keeps compiled
models, PyMC its compiled C and torch inductor its kernels:

* ``$PPL_JAX_CACHE_DIR`` if set (``0`` or empty: no cache), else
  ``$XDG_CACHE_HOME/ppl/jax/<cpu>`` (``~/.cache`` by default), created readable by the user
  alone. ``<cpu>`` names the processor's model and instruction-set flags: XLA compiles for the
  host's instruction set and JAX's key does not hold it, so a home directory shared by machines
  of different CPUs keeps one cache per kind.
* Programs whose compile took at least 0.2 s are stored (JAX's default is 1 s, which a
  faster machine's chunk can fall under); the directory is bounded at 1 GiB, least recently
  used first out, where the ``filelock`` package that JAX's eviction needs is installed.
* A cache the user configured (``JAX_COMPILATION_CACHE_DIR``,
  ``jax.config.update("jax_compilation_cache_dir", ...)``, ``jax_enable_compilation_cache``
  off) is left as it is, as are the two limits when the user set them.

The setting is JAX's and process-wide: the user's own programs that take 0.2 s or more to
compile are kept too. A directory that cannot be created or written is skipped silently (the
run compiles as without a cache).
"""

from __future__ import annotations

import hashlib
import os
import platform

import jax

__all__ = ["cache_dir", "use_compilation_cache"]

_MIN_COMPILE_SECS = 0.2
_MAX_BYTES = 1 << 30


def _cpu_tag() -> str:
    """A short name for the host's processor model and instruction-set flags."""
    text = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        keep = ("model name", "flags", "Features", "CPU part", "CPU implementer")
        seen = {}
        for line in lines:
            key = line.split(":", 1)[0].strip()
            if key in keep and key not in seen:
                seen[key] = line.split(":", 1)[-1].strip()
        text = "|".join(f"{k}={seen[k]}" for k in sorted(seen))
    except OSError:
        pass
    text = text or f"{platform.processor()}|{platform.platform()}"
    return f"{platform.machine() or 'cpu'}-{hashlib.sha1(text.encode()).hexdigest()[:12]}"


def cache_dir() -> str | None:
    """The directory ppl would keep compiled programs in (``None``: ``PPL_JAX_CACHE_DIR=0``)."""
    chosen = os.environ.get("PPL_JAX_CACHE_DIR")
    if chosen is not None:
        chosen = chosen.strip()
        return None if chosen in ("", "0") else os.path.abspath(os.path.expanduser(chosen))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ppl", "jax", _cpu_tag())


def _writable(path: str) -> bool:
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def use_compilation_cache() -> str | None:
    """Turn on JAX's persistent compilation cache in :func:`cache_dir` unless the user chose a
    cache or turned it off (see the module docstring). Returns the directory in use by JAX
    (``None``: none)."""
    config = jax.config
    current = config.jax_compilation_cache_dir
    if current or not config.jax_enable_compilation_cache:
        return current or None
    path = cache_dir()
    if path is None or not _writable(path):
        return None
    config.update("jax_compilation_cache_dir", path)
    if config.jax_persistent_cache_min_compile_time_secs == 1.0:       # JAX's default
        config.update("jax_persistent_cache_min_compile_time_secs", _MIN_COMPILE_SECS)
    if config.jax_compilation_cache_max_size == -1:                     # unbounded by default
        try:
            import filelock  # noqa: F401 - JAX's least-recently-used eviction locks with it
        except ImportError:
            pass
        else:
            config.update("jax_compilation_cache_max_size", _MAX_BYTES)
    return path
