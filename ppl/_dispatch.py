"""Build the module-level functions of ``ppl.ops`` / ``ppl.random`` that forward to the active
backend, turning a backend's own error into one that names the op and the backend."""

from __future__ import annotations

import re

from ppl import _state
from ppl.backends import Backend

# Ops that take user functions: errors raised inside those functions pass through untouched.
HIGHER_ORDER = frozenset({"grad", "value_and_grad", "vmap", "jit", "while_loop", "fori_loop",
                          "scan", "cond", "switch"})

_ACTIVE = _state._ACTIVE
_DEFAULT = _state._DEFAULT


def active() -> Backend:
    backend = _ACTIVE.get()
    if backend is not None:
        return backend
    if _DEFAULT:
        return _DEFAULT[0]
    return _state.get_backend()


#: keyword names of other array libraries -> ppl.ops' (NumPy's / the Array API's)
_OTHER_NAMES = {"dim": "axis", "keepdim": "keepdims"}


def _reraise(public: str, backend: Backend, err: Exception):
    msg = str(err)
    if isinstance(err, NotImplementedError) or msg.startswith("ppl."):
        raise err
    text = f"{public} failed on the {backend.name!r} backend ({backend.dtype}): {msg}"
    if isinstance(err, TypeError):
        unexpected = re.search(r"unexpected keyword argument '(\w+)'", msg)
        if unexpected:              # named by the op, not the backend's class that holds it
            name = unexpected.group(1)
            text = f"{public}() got an unexpected keyword argument {name!r}" + (
                f": ppl.ops takes NumPy's argument names; use {_OTHER_NAMES[name]}= instead."
                if name in _OTHER_NAMES else ".")
        raise TypeError(text) from err
    raise ValueError(text) from err


def forwarder(method: str, public: str):
    """A function that calls ``active().<method>`` (and names ``public`` in its errors)."""
    doc = getattr(Backend, method).__doc__
    if method in HIGHER_ORDER:
        def op(*args, **kwargs):
            return getattr(active(), method)(*args, **kwargs)
    else:
        def op(*args, **kwargs):
            backend = active()
            try:
                return getattr(backend, method)(*args, **kwargs)
            except Exception as err:  # noqa: BLE001 - re-raised with the op's name
                _reraise(public, backend, err)

    op.__name__ = op.__qualname__ = public.rsplit(".", 1)[-1]
    op.__doc__ = doc
    return op
