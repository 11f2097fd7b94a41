"""jax backend: compiled programs kept on disk between processes.

JAX can keep compiled executables on disk (its persistent compilation cache, keyed by the
program, jaxlib's version, the XLA flags, the compile options and the devices; an entry that
cannot be read or written is compiled as usual, with a warning). A backend constructed while
the user has not configured it (:func:`use_compilation_cache`) turns it on in ppl's directory
for JAX (:func:`ppl.backends.common.disk_cache.cache_dir`), so a second process loads the
sampler's chunk instead of compiling it (1.5-3 s on a 2-core CPU):

* programs whose compile took at least 0.2 s are stored (JAX's default minimum, 1 s, which a
  faster machine's chunk can fall under, is taken as "not set");
* once per process, when the backend is made, the directory's least recently used entries are
  deleted down to 1 GiB (:func:`~ppl.backends.common.disk_cache.prune`; JAX's own bound needs
  the ``filelock`` package and bookkeeping files that a cache written without it lacks);
* a cache the user configured (``JAX_COMPILATION_CACHE_DIR``,
  ``jax.config.update("jax_compilation_cache_dir", ...)``, ``jax_enable_compilation_cache``
  off) is left as it is, as is a minimum compile time the user set.

The setting is JAX's and process-wide: the user's own programs that take 0.2 s or more to
compile are kept too. A directory that cannot be created or written, or that another user could
write to, is skipped silently (the run compiles as without a cache).
"""

from __future__ import annotations

import jax

from ppl.backends.common.disk_cache import cache_dir, prune, writable

__all__ = ["use_compilation_cache"]

_MIN_COMPILE_SECS = 0.2
_MAX_BYTES = 1 << 30
_PRUNED: set = set()


def use_compilation_cache() -> str | None:
    """Turn on JAX's persistent compilation cache in ppl's directory unless the user chose a
    cache or turned it off (see the module docstring). Returns the directory JAX uses
    (``None``: none)."""
    config = jax.config
    current = config.jax_compilation_cache_dir
    if current or not config.jax_enable_compilation_cache:
        return current or None
    path = cache_dir("jax")
    if path is None or not writable(path):
        return None
    if path not in _PRUNED:
        _PRUNED.add(path)
        prune(path, _MAX_BYTES, suffix="-cache")
    _reset_if_initialised_without_a_directory()
    config.update("jax_compilation_cache_dir", path)
    if config.jax_persistent_cache_min_compile_time_secs == 1.0:       # JAX's default
        config.update("jax_persistent_cache_min_compile_time_secs", _MIN_COMPILE_SECS)
    return path


def _reset_if_initialised_without_a_directory() -> None:
    """Some JAX releases mark their cache initialised at the first compile even without a
    directory, and then never read one set later: let the next compile start it afresh. (Here
    no directory was set, so there is no open cache to lose.)"""
    try:
        from jax.experimental.compilation_cache import compilation_cache
        compilation_cache.reset_cache()
    except Exception:  # noqa: BLE001 - an API this JAX lacks: the directory applies as it can
        pass
