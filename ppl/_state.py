"""Which backend is active: a process default plus a context-local override.

``set_backend`` sets the process default; ``use_backend`` overrides it in a ``contextvars``
variable, so each thread and each asyncio task sees its own choice, restored on exit and on
exceptions. The default's default is ``$PPL_BACKEND``, else ``"numpy"``.
"""

from __future__ import annotations

import contextlib
import contextvars
import os

from ppl import backends as _backends
from ppl.backends import Backend

__all__ = ["available_backends", "enable_x64", "set_backend", "use_backend", "get_backend"]

_ACTIVE: contextvars.ContextVar[Backend | None] = contextvars.ContextVar(
    "ppl_backend", default=None)
_DEFAULT: list[Backend] = []


def available_backends() -> list[str]:
    """Names of the installed backends, e.g. ``["numpy", "jax", "torch"]``.

    >>> "numpy" in available_backends()
    True
    """
    return [name for name in _backends.BACKENDS if _backends.installed(name)]


def set_backend(name: str, dtype: str = "float32", device: str | None = None) -> Backend:
    """Set the process-wide default backend and return it.

    >>> b = set_backend("numpy", dtype="float64")
    >>> b.name, b.dtype
    ('numpy', 'float64')
    """
    backend = _backends.load(name, dtype=dtype, device=device)
    _DEFAULT[:] = [backend]
    return backend


@contextlib.contextmanager
def use_backend(name: str, dtype: str = "float32", device: str | None = None):
    """Use a backend inside a ``with`` block (this thread/task only).

    >>> with use_backend("numpy", dtype="float64") as b:
    ...     b.dtype
    'float64'
    """
    backend = _backends.load(name, dtype=dtype, device=device)
    token = _ACTIVE.set(backend)
    try:
        yield backend
    finally:
        _ACTIVE.reset(token)


def get_backend() -> Backend:
    """The active backend: the innermost ``use_backend``, else the process default."""
    backend = _ACTIVE.get()
    return backend if backend is not None else _process_default()


def _process_default() -> Backend:
    """The process default (``set_backend``'s), made from the environment on first use."""
    if not _DEFAULT:
        name = os.environ.get("PPL_BACKEND", "numpy") or "numpy"
        dtype = os.environ.get("PPL_DTYPE", "float32") or "float32"
        _DEFAULT.append(_backends.load(name, dtype=dtype))
    return _DEFAULT[0]


def enable_x64(use_x64: bool = True) -> Backend:
    """Make the process default backend compute in ``float64`` (``False``: ``float32``), keeping
    its framework and device; returns it (NumPyro's name).

    The same as ``set_backend(name, dtype="float64")``; a ``use_backend`` block keeps its own
    dtype.

    >>> _ = set_backend("numpy")
    >>> enable_x64().dtype
    'float64'
    >>> enable_x64(False).dtype
    'float32'
    """
    try:
        use_x64 = bool(use_x64)
    except (TypeError, ValueError):     # an array of several values, say
        raise TypeError(f"enable_x64: use_x64 must be True or False, got {use_x64!r}.") from None
    default = _process_default()
    return set_backend(default.name, dtype="float64" if use_x64 else "float32",
                       device=default.device)
