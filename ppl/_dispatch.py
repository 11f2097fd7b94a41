"""Build the module-level functions of ``ppl.ops`` / ``ppl.random`` that forward to the active
backend, turning a backend's own error into one that names the op and the backend."""

from __future__ import annotations

import re

import numpy as np

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


def _scalar_valued(fun, has_aux: bool, public: str):
    """``fun``, checking what it returns as ``grad`` needs it: one scalar (``(scalar, aux)``
    with ``has_aux``). JAX and torch refuse anything else with their own words; autograd and
    TensorFlow's tape silently differentiate the sum of a non-scalar output."""
    def checked(*args, **kwargs):
        out = fun(*args, **kwargs)
        value = out
        if has_aux:
            if not (isinstance(out, tuple | list) and len(out) == 2):
                raise TypeError(
                    f"{public}(..., has_aux=True): the function must return a pair (value, aux), "
                    f"got {type(out).__name__}.")
            value = out[0]
        backend = active()
        if isinstance(value, int | float | np.number) and not isinstance(value, bool):
            value = backend.asarray(float(value))   # a constant: its gradient is zero
            out = (value, out[1]) if has_aux else value
        shape = None if value is None else backend.shape(value)
        if shape != ():
            got = "None" if value is None else f"an array of shape {shape}"
            raise TypeError(
                f"{public}: the function must return a scalar (shape ()) to differentiate, got "
                f"{got}; return a sum (ppl.ops.sum) or a single element, or map a scalar function "
                "over the batch with ppl.ops.vmap.")
        return out

    return checked


def forwarder(method: str, public: str):
    """A function that calls ``active().<method>`` (and names ``public`` in its errors)."""
    doc = getattr(Backend, method).__doc__
    if method in ("grad", "value_and_grad"):
        def op(fun, argnums=0, has_aux=False):
            return getattr(active(), method)(_scalar_valued(fun, has_aux, public), argnums,
                                             has_aux)
    elif method in HIGHER_ORDER:
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
