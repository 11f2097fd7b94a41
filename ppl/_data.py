"""A model's NumPy data as the backend's arrays, where the backend's arrays take no NumPy
operands (torch): the one conversion :class:`~ppl.inference.MCMC`, ``Predictive``,
``log_density`` and every effect handler's call (``seed(model, 0)(X, y)``) apply to the
arguments a model is called with."""

from __future__ import annotations

import numpy as np

from ppl import ops
from ppl.backends import tree

__all__ = ["as_backend_data"]


def _numpy_data(v) -> bool:
    """Whether ``v`` is a NumPy array of numbers or bools that the backend does not hold."""
    return (isinstance(v, np.ndarray) and v.dtype.kind in "biuf"
            and not ops.is_array(v))


def as_backend_data(args, kwargs):
    """``(args, kwargs)`` of a model, with each NumPy array of numbers or bools made a backend
    array (``ops.asarray``: floats in the backend's float dtype, on its device) where the
    backend's arrays do not take NumPy operands (``numpy_operands``, torch: a latent times a
    NumPy array fails). Elsewhere NumPy data stay NumPy arrays, constants of the compiled
    programs that a model may read in Python, as in NumPyro (a new array compiles again; the
    backend's arrays, ``ops.asarray(x)``, are inputs instead: new data of the same shapes
    compile nothing); their floats are cast to the backend's float dtype, as ``ops.asarray``
    casts them (float64 data would otherwise make a float32 run's arithmetic float64 where
    JAX's 64-bit mode is on). NumPy scalars (often sizes: ``np.int64(8)``) and everything else
    are kept."""
    leaves, treedef = tree.flatten((tuple(args), dict(kwargs)))
    if not any(_numpy_data(v) for v in leaves):
        return args, kwargs
    backend = ops.backend()
    if backend.numpy_operands:
        float_dtype = np.dtype(backend.dtype)
        made = [v.astype(float_dtype) if _numpy_data(v) and v.dtype.kind == "f"
                and v.dtype != float_dtype else v for v in leaves]
    else:
        made = [ops.asarray(v) if _numpy_data(v) else v for v in leaves]
    if all(m is v for m, v in zip(made, leaves)):
        return args, kwargs     # already converted (a handler inside another, JAX's cast data)
    args, kwargs = tree.unflatten(treedef, made)
    return tuple(args), dict(kwargs)
