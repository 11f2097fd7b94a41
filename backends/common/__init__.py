"""The backend protocol: the whole ``ppl.ops`` / ``ppl.random`` surface, one method per op.

:class:`Backend` is assembled from one mixin per topic, each in its own module with the same name
as the module that implements it in every backend folder (``ppl.backends.numpy.core`` implements
``ppl.backends.common.core``):

=================  =====================================================================
``core``           conversion, creation, elementwise ops, reductions, shapes
``special``        special functions (``gammaln``, ``ndtri``, ``logsumexp``, ...)
``linalg``         ``ops.linalg``: products, decompositions, solves
``nn``             ``ops.nn``: activations, ``softmax``, ``one_hot``
``random``         ``ppl.random``: keys, primitive and derived samplers
``autodiff``       ``grad``, ``value_and_grad``, ``vmap``, ``stop_gradient``
``control_flow``   ``while_loop``, ``fori_loop``, ``scan``, ``cond``, ``switch`` (eager defaults)
``compile``        ``jit``, ``pmap``, ``device_count``, ``sampling_scope``, the capabilities
``dtypes``         the dtype and device policy (not a topic of ops: it applies to all)
=================  =====================================================================

A topic method that raises :func:`~ppl.backends.common.core.not_implemented` is a primitive
every backend implements; the others are composites written once over the primitives.

Conventions (the Python Array API standard where it has a name, ``jax.numpy``/``jax.lax``
otherwise): argument names follow NumPy/SciPy (``axis``, never ``dim``; ``keepdims``;
``solve_triangular(a, b, lower=True)``); floating arrays are created in ``self.dtype`` unless a
``dtype`` is passed, integer arrays in ``int64`` (``int32`` on JAX without x64); control flow,
autodiff and random keys have ``jax``'s signatures.
"""

from __future__ import annotations

from ppl.backends.common.autodiff import Autodiff
from ppl.backends.common.compile import Compile
from ppl.backends.common.control_flow import ControlFlow
from ppl.backends.common.core import Core, not_implemented
from ppl.backends.common.dtypes import (
    DtypePolicy,
    apply_float_policy,
    check_float_dtype,
    floating_ops,
)
from ppl.backends.common.linalg import Linalg
from ppl.backends.common.nn import NN
from ppl.backends.common.random import Random
from ppl.backends.common.special import Special

__all__ = ["Backend", "OPS", "LINALG_OPS", "NN_OPS", "RANDOM_OPS", "NOT_OPS", "FLOATING_OPS",
           "not_implemented"]


class Backend(Core, Special, Linalg, NN, Random, Autodiff, ControlFlow, Compile, DtypePolicy):
    """Base class of every backend.

    A backend is assembled the same way: ``class JaxBackend(JaxCore, JaxSpecial, ...,
    Backend)``, one mixin per topic module of its folder, then this class for the composites,
    the eager defaults and the policy. Creating a subclass applies the float policy of
    :mod:`~ppl.backends.common.dtypes` to its floating ops.

    Parameters
    ----------
    dtype
        The floating dtype arrays are created in: ``"float32"`` (default) or ``"float64"``.
    device
        Where arrays live (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...); ``None`` for the
        framework's default.
    """

    #: registry name, e.g. ``"numpy"``
    name: str = "base"

    def __init__(self, dtype: str = "float32", device: str | None = None):
        self.dtype = check_float_dtype(dtype)
        self.device = device

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        apply_float_policy(cls, FLOATING_OPS)

    def __repr__(self):
        dev = "" if self.device is None else f", device={self.device!r}"
        return f"<ppl backend {self.name!r} dtype={self.dtype!r}{dev}>"


def _public_methods(*topics) -> tuple[str, ...]:
    return tuple(n for topic in topics for n, v in vars(topic).items()
                 if callable(v) and not n.startswith("_"))


#: ``{op: ((position, name), ...)}``: the floating ops and their floating operands
FLOATING_OPS: dict[str, tuple[tuple[int, str], ...]] = floating_ops(Backend)
apply_float_policy(Backend, FLOATING_OPS)

#: Backend methods that are settings for library code, not array ops (no ``ppl.ops`` name)
NOT_OPS = frozenset({"sampling_scope"})
#: ``ppl.ops.linalg.<name>`` (Array API's linalg extension plus cho_solve / logdet)
LINALG_OPS: tuple[str, ...] = _public_methods(Linalg)
#: ``ppl.ops.nn.<name>``
NN_OPS: tuple[str, ...] = _public_methods(NN)
#: ops reachable as ``ppl.ops.<name>`` (the linalg and nn names included)
OPS: tuple[str, ...] = tuple(
    n for n in _public_methods(Core, Special, Linalg, NN, Autodiff, ControlFlow, Compile)
    if n not in NOT_OPS)
#: ``ppl.random.<name>`` -> ``Backend.random_<name>``
RANDOM_OPS: tuple[str, ...] = tuple(
    n[len("random_"):] for n in _public_methods(Random) if n.startswith("random_"))
