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

from ppl._dispatch import active, forwarder
from ppl.backends.base import LINALG_OPS, NN_OPS, OPS

__all__ = list(OPS) + ["linalg", "nn", "backend"]


def backend():
    """The active backend object (same as :func:`ppl.get_backend`)."""
    return active()


for _name in OPS:
    globals()[_name] = forwarder(_name, f"ppl.ops.{_name}")


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
