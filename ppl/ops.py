"""``ppl.ops``: the array, special-function, linear-algebra, autodiff and control-flow ops of
the active backend.

Every name here forwards to the active backend (see :func:`ppl.get_backend`), so code written
against ``ppl.ops`` runs unchanged on numpy, JAX and torch::

    >>> import ppl
    >>> from ppl import ops
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     float(ops.logsumexp(ops.asarray([0.0, 0.0])))
    0.6931471805599453

``ops.linalg`` and ``ops.nn`` group the linear-algebra and neural-network functions; the
linear-algebra names are also available at the top level (``ops.cholesky``).
"""

from __future__ import annotations

import numpy as np

from ppl import backends as _backends
from ppl._dispatch import active, forwarder
from ppl.backends import LINALG_OPS, NN_OPS, OPS

__all__ = list(OPS) + ["linalg", "nn", "backend"]


def backend():
    """The active backend object (same as :func:`ppl.get_backend`)."""
    return active()


for _name in OPS:
    globals()[_name] = forwarder(_name, f"ppl.ops.{_name}")


def to_numpy(x) -> np.ndarray:
    """A NumPy copy of ``x``: an array of the active backend, of any other backend loaded in
    this process (a JAX array while torch is active), or NumPy/Python data.

    >>> import ppl
    >>> with ppl.use_backend("numpy"):
    ...     ppl.ops.to_numpy([1.0, 2.0]).tolist()
    [1.0, 2.0]
    """
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (bool, int, float, complex, np.generic, list, tuple)):
        return np.asarray(x)
    backend = active()
    if not backend.is_array(x):
        backend = _backends.owner(x) or backend
    return np.asarray(backend.to_numpy(x))


class _Namespace:
    def __init__(self, prefix, names):
        self.__name__ = prefix
        for n in names:
            setattr(self, n, globals()[n] if n in globals() else forwarder(n, f"{prefix}.{n}"))
        self.__all__ = list(names)

    def __repr__(self):
        return f"<namespace {self.__name__}>"


linalg = _Namespace("ppl.ops.linalg", LINALG_OPS)
nn = _Namespace("ppl.ops.nn", NN_OPS)

del _name
