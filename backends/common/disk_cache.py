"""Where a compiling backend keeps compiled programs between processes.

A NUTS run on JAX spends its first seconds compiling the sampler's chunk, and a new Python
process compiles it again: a script run twice, a restarted notebook, every process of a cluster
job. JAX can keep compiled executables on disk; ppl turns that on (:mod:`ppl.backends.jax.cache`),
as Stan keeps compiled models, PyMC its compiled C and torch inductor its kernels, in

* ``$PPL_CACHE_DIR/<framework>/<cpu>`` when ``PPL_CACHE_DIR`` is set (``0`` or empty: no
  cache), else ``$XDG_CACHE_HOME/ppl/<framework>/<cpu>`` (``~/.cache`` by default, or when
  ``XDG_CACHE_HOME`` is not an absolute path, as the XDG specification says).

``<cpu>`` names the processor's architecture, model and instruction-set flags: the frameworks
compile for the host's instruction set and their cache keys do not hold it, so a home directory
shared by machines of different CPUs keeps one cache per kind. A compilation cache is trusted
code, so a directory is used only if this user owns it and nobody else may write to it
(:func:`writable`); the oldest entries go once the directory passes its size (:func:`prune`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import stat

__all__ = ["cache_dir", "cpu_tag", "writable", "prune"]


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
    ``PPL_CACHE_DIR=0``, or no home directory to put it in). Not created here."""
    root = os.environ.get("PPL_CACHE_DIR")
    if root is not None:
        root = root.strip()
        if root in ("", "0"):
            return None
        root = os.path.expanduser(root)
    else:
        base = os.environ.get("XDG_CACHE_HOME", "")
        if not os.path.isabs(base):
            base = os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "ppl")
    if not os.path.isabs(root):          # "~" that did not expand (no HOME), or a relative path
        if root.startswith("~"):
            return None
        root = os.path.abspath(root)
    return os.path.join(root, framework, cpu_tag())


def writable(path: str) -> bool:
    """Create ``path`` (readable by this user alone) if needed; whether it is this user's,
    writable by nobody else, and writable by this process."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return False
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return False
    return os.access(path, os.W_OK | os.X_OK)


def prune(path: str, max_bytes: int, suffix: str = "") -> int:
    """Delete the least recently used files of ``path`` whose names end in ``suffix`` (by access
    time where the file system keeps it, Linux's default ``relatime`` within a day, else by
    modification time) until they total at most ``max_bytes``; returns how many went. Files
    another process removes meanwhile are skipped."""
    entries = []
    try:
        with os.scandir(path) as it:
            for entry in it:
                if entry.name.endswith(suffix) and entry.is_file(follow_symlinks=False):
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    last = max(info.st_atime, info.st_mtime)   # (atime: relatime, daily)
                    entries.append((last, info.st_size, entry.path))
    except OSError:
        return 0
    total = sum(size for _, size, _ in entries)
    removed = 0
    for _, size, file in sorted(entries):
        if total <= max_bytes:
            break
        try:
            os.remove(file)
        except OSError:
            continue
        total -= size
        removed += 1
    return removed
