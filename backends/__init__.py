"""Backends: one folder per framework, the same module names in each, and the shared protocol.

``ppl.backends.common`` holds the protocol (:class:`Backend`, assembled from one mixin per topic),
the op tables and the dtype/device policy; ``ppl.backends.numpy``, ``ppl.backends.jax`` and
``ppl.backends.torch`` each assemble their backend class from mixins in modules of the same names
(``core``, ``special``, ``linalg``, ``nn``, ``random``, ``autodiff``, ``control_flow``,
``compile``). ``ppl.backends.tree`` holds the pytree helpers every layer uses.

``BACKENDS`` maps a backend name to its folder, its class, the packages it needs, the pip
extra that installs them and whether its first run is worth warming up in another process
(``warm_up_ahead``: the run compiles for long into an on-disk cache that later processes
read, as torch's loops do). Adding a backend means adding one folder and one line here.
"""

from __future__ import annotations

import importlib
import importlib.util
import operator
import os
from typing import NamedTuple

from ppl.backends.common import (
    FLOATING_OPS,
    LINALG_OPS,
    NN_OPS,
    NOT_OPS,
    OPS,
    RANDOM_OPS,
    Backend,
)
from ppl.backends.common.dtypes import check_float_dtype

__all__ = ["Backend", "BACKENDS", "OPS", "LINALG_OPS", "NN_OPS", "RANDOM_OPS", "NOT_OPS",
           "FLOATING_OPS", "installed", "load", "loaded", "owner", "set_host_device_count"]


class _Entry(NamedTuple):
    module: str
    cls: str
    requires: tuple[str, ...]
    extra: str | None
    #: a short run of the same model in another process (while other backends run, e.g. in
    #: ``ppl compare``) leaves what this process's run would compile in an on-disk cache
    warm_up_ahead: bool = False


BACKENDS: dict[str, _Entry] = {
    "numpy": _Entry("ppl.backends.numpy", "NumpyBackend", ("numpy", "autograd"), None),
    "jax": _Entry("ppl.backends.jax", "JaxBackend", ("jax",), "jax"),
    "torch": _Entry("ppl.backends.torch", "TorchBackend", ("torch",), "torch",
                    warm_up_ahead=True),
    "tensorflow": _Entry("ppl.backends.tensorflow", "TensorflowBackend",
                         ("tensorflow", "tensorflow_probability"), "tensorflow"),
}


def installed(name: str) -> bool:
    """Whether the packages backend ``name`` needs are importable (without importing them)."""
    entry = BACKENDS[name]
    if importlib.util.find_spec(entry.module) is None:
        return False
    return all(importlib.util.find_spec(pkg) is not None for pkg in entry.requires)


_CACHE: dict[tuple, Backend] = {}


def load(name: str, dtype: str = "float32", device: str | None = None) -> Backend:
    """The backend instance for ``(name, dtype, device)``, created once and cached."""
    if not isinstance(name, str) or name not in BACKENDS:
        known = ", ".join(repr(n) for n in BACKENDS)
        raise ValueError(
            f"Unknown backend {name!r}. Known backends: {known}; installed here: "
            f"{[n for n in BACKENDS if installed(n)]}."
        )
    check_float_dtype(dtype)
    key = (name, dtype, device)
    if key in _CACHE:
        return _CACHE[key]
    entry = BACKENDS[name]
    if importlib.util.find_spec(entry.module) is None:
        raise ImportError(
            f"The {name!r} backend has no adapter in this version of ppl yet "
            f"({entry.module} is missing); installed backends: "
            f"{[n for n in BACKENDS if installed(n)]}."
        )
    if not installed(name):
        hint = f'pip install "ppl[{entry.extra}]"' if entry.extra else "pip install ppl"
        raise ImportError(
            f"The {name!r} backend needs {', '.join(entry.requires)}, which is not installed. "
            f"Install it with: {hint}"
        )
    module = importlib.import_module(entry.module)
    backend = getattr(module, entry.cls)(dtype=dtype, device=device)
    _CACHE[key] = backend
    return backend


def loaded() -> list[Backend]:
    """The backend instances created so far in this process."""
    return list(_CACHE.values())


def owner(x) -> Backend | None:
    """A loaded backend whose array type ``x`` is, or ``None`` (NumPy data, Python values, or
    arrays of a framework no backend has been loaded for)."""
    for backend in _CACHE.values():
        try:
            if backend.is_array(x):
                return backend
        except Exception:  # noqa: BLE001 - a backend that cannot even test the type: skip it
            continue
    return None


def set_host_device_count(n: int) -> None:
    """Run JAX on ``n`` CPU devices, so that chains run in parallel (NumPyro's name).

    ppl already gives JAX one CPU device per core by default; this picks another number. Like
    NumPyro's, it must run before JAX starts: call it at the top of the program. Afterwards it
    raises a ``RuntimeError`` if JAX has a different count. Other backends are unaffected.

    >>> set_host_device_count(2)  # doctest: +SKIP
    """
    try:
        count = operator.index(n) if not isinstance(n, bool) else None
    except TypeError:
        count = None
    if count is None:
        raise TypeError(f"set_host_device_count: n must be an int (the number of CPU devices), "
                        f"got {n!r}.")
    if count < 1:
        raise ValueError(f"set_host_device_count: n must be at least 1, got {count}.")
    if installed("jax"):
        from ppl.backends.jax.compile import set_cpu_device_count  # JAX only where installed
        set_cpu_device_count(count)
    os.environ["PPL_JAX_CPU_DEVICES"] = str(count)
