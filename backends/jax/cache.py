"""jax backend: compiled programs kept on disk between processes.

JAX can keep compiled executables on disk (its persistent compilation cache, keyed by the
program, jaxlib's version, the XLA flags, the compile options and the devices). A backend
constructed while the user has not configured it (:func:`use_compilation_cache`) turns it on in
ppl's directory for JAX (:func:`ppl.backends.common.disk_cache.cache_dir`), so a second process
loads the sampler's chunk instead of compiling it (1.5-3 s on a 2-core CPU):

* programs whose compile took at least 0.2 s are stored (JAX's default is 1 s, which a faster
  machine's chunk can fall under);
* the directory is bounded at 1 GiB, least recently used first out, where the ``filelock``
  package that JAX's eviction needs is installed;
* a cache the user configured (``JAX_COMPILATION_CACHE_DIR``,
  ``jax.config.update("jax_compilation_cache_dir", ...)``, ``jax_enable_compilation_cache``
  off) is left as it is, as are the two limits when the user set them.

The setting is JAX's and process-wide: the user's own programs that take 0.2 s or more to
compile are kept too. A directory that cannot be created or written is skipped silently (the
run compiles as without a cache).
"""

from __future__ import annotations

import jax

from ppl.backends.common.disk_cache import cache_dir, writable

__all__ = ["use_compilation_cache"]

_MIN_COMPILE_SECS = 0.2
_MAX_BYTES = 1 << 30


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
