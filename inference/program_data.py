"""A model's data as arguments of compiled programs: the array leaves of its ``(args, kwargs)``
are passed in, everything else (Python numbers, strings, NumPy arrays by their contents, the tree
structure) is part of the cache key, so a second run with new data of the same shapes reuses
what was compiled (:mod:`ppl.inference.programs`, the start check of
:mod:`ppl.inference.model_setup`)."""

from __future__ import annotations

import hashlib

import numpy as np

from ppl import ops
from ppl._data import as_backend_data
from ppl.backends import tree

__all__ = ["as_backend_data", "static_key", "split_data", "data_nbytes", "data_key", "per_chain"]


def static_key(v):
    """``v`` itself when it is hashable, a NumPy array by its contents (the same data, loaded
    again, finds what was compiled for it), else ``("id", id(v))``: a part of a cache key."""
    if isinstance(v, np.ndarray) and v.dtype.kind in "biufc":
        digest = hashlib.blake2b(np.ascontiguousarray(v).data, digest_size=16).digest()
        return ("ndarray", v.dtype.str, v.shape, digest)
    try:
        hash(v)
    except TypeError:
        return ("id", id(v))
    return v


def split_data(args, kwargs):
    """``(data, rebuild, static)``: the array leaves of ``(args, kwargs)``, a function putting
    (traced) leaves back into the structure, and a hashable key of everything else."""
    leaves, treedef = tree.flatten((tuple(args), dict(kwargs)))
    dynamic = [ops.is_array(v) for v in leaves]
    data = tuple(v for v, d in zip(leaves, dynamic) if d)
    static = tuple(None if d else static_key(v)
                   for v, d in zip(leaves, dynamic))

    def rebuild(values):
        it = iter(values)
        return tree.unflatten(treedef, [next(it) if d else v for v, d in zip(leaves, dynamic)])

    return data, rebuild, (treedef, static)


def data_nbytes(args, kwargs) -> int:
    """Bytes of the array leaves (backend or NumPy arrays) of a model's ``(args, kwargs)``: what
    picks the chain method (:func:`ppl.inference.mcmc.default_chain_method`) and the draws
    postprocessed at once (:func:`ppl.inference.chain_plate.draw_block`)."""
    def nbytes(v):
        if isinstance(v, np.ndarray):
            return v.nbytes
        return ops.size(v) * np.dtype(ops.dtype_of(v)).itemsize if ops.is_array(v) else 0
    return sum(nbytes(v) for v in tree.flatten((tuple(args), dict(kwargs)))[0])


def data_key(static, layout) -> tuple:
    """The part of a compiled program's cache key that a run's backend, argument structure
    (``split_data``'s ``static``) and parameter layout decide."""
    backend = ops.backend()
    return (backend.name, backend.dtype, str(backend.device), static,
            None if layout is None else (tuple(layout.names), tuple(map(tuple, layout.shapes))))


def per_chain(fn_of_args, rebuild, transform=None, *, once=False):
    """``compiled(z (C, D), data)``: ``transform(fn)`` for each chain's ``z``, where ``fn`` is
    ``fn_of_args(args, kwargs)`` with the arguments rebuilt from the shared ``data`` leaves
    (``split_data``), so new data of the same shapes reuses the compiled program. ``once``:
    called once per run when called at top level (``ops.jit``'s ``once``)."""
    def fn(z, values):
        return fn_of_args(*rebuild(values))(z)

    return ops.jit(ops.vmap(fn if transform is None else transform(fn), in_axes=(0, None)),
                   once=once)
