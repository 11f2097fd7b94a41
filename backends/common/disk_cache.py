"""Where the compiling backends keep compiled programs between processes.

A NUTS run on JAX or TensorFlow spends its first seconds compiling the sampler's chunk, and a
new Python process compiles it again: a script run twice, a restarted notebook, every process of
a cluster job. Both frameworks can keep compiled executables on disk; ppl turns that on, as Stan
keeps compiled models, PyMC its compiled C and torch inductor its kernels, in

* ``$PPL_CACHE_DIR/<framework>/<cpu>`` when ``PPL_CACHE_DIR`` is set (``0`` or empty: no
  cache), else ``$XDG_CACHE_HOME/ppl/<framework>/<cpu>`` (``~/.cache`` by default), created
  readable by the user alone (a compilation cache is trusted code).

``<cpu>`` names the processor's architecture, model and instruction-set flags: the frameworks
compile for the host's instruction set and their cache keys do not hold it, so a home directory
shared by machines of different CPUs keeps one cache per kind. Each backend decides what to keep
(:mod:`ppl.backends.jax.cache`, :mod:`ppl.backends.tensorflow.xla_cache`); a cache the user
configured for the framework is left alone.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform

__all__ = ["cache_dir", "cpu_tag", "writable"]


@functools.lru_cache(maxsize=1)
def cpu_tag() -> str:
    """A short name for the host's processor: architecture, then a hash of its model and
    instruction-set flags (``/proc/cpuinfo``; elsewhere the platform's description)."""
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


def cache_dir(framework: str) -> str | None:
    """The directory ppl keeps ``framework``'s compiled programs in (``None``: turned off with
    ``PPL_CACHE_DIR=0``). Not created here."""
    root = os.environ.get("PPL_CACHE_DIR")
    if root is not None:
        root = root.strip()
        if root in ("", "0"):
            return None
        root = os.path.abspath(os.path.expanduser(root))
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                ".cache")
        root = os.path.join(base, "ppl")
    return os.path.join(root, framework, cpu_tag())


def writable(path: str) -> bool:
    """Create ``path`` (user-only) if needed; whether this process can write into it."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)
