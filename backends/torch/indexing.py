"""Out-of-place index updates for the torch backend that work under ``torch.func``.

``x[index] = value`` (or ``+=``) becomes one ``index_put`` on the flattened tensor with the flat
positions ``index`` selects: differentiable, batchable by ``vmap`` and free of in-place writes.
The flat positions of static indices (ints, slices, ``...``, ``None``) are cached per shape.
"""

from __future__ import annotations

import torch

from ppl.backends.torch.tracing import tracing

__all__ = ["flat_put"]

_INDEX_CACHE: dict = {}


def _static_index(index):
    """A hashable stand-in for an index made of ints, slices, ``...`` and ``None``; ``None``
    when the index holds arrays (those are not cached)."""
    parts = index if isinstance(index, tuple) else (index,)
    key = []
    for p in parts:
        if isinstance(p, slice):
            key.append(("s", p.start, p.stop, p.step))
        elif p is None or p is Ellipsis or isinstance(p, int):
            key.append(p)
        else:
            return None
    return tuple(key)


def _flat_positions(x, index):
    flat = torch.arange(x.numel(), device=x.device).reshape(x.shape)[index]
    return flat.reshape(-1), flat.shape


def flat_put(x, index, value, accumulate: bool):
    """Out-of-place ``x[index] = value`` (``+=`` when ``accumulate``; repeated positions then
    add up, as in JAX)."""
    key = _static_index(index)
    if key is None:
        flat, shape = _flat_positions(x, index)
    else:
        key = (tuple(x.shape), key, x.device)
        cached = _INDEX_CACHE.get(key)
        if cached is None:
            if len(_INDEX_CACHE) > 1024:
                _INDEX_CACHE.clear()
            cached = _flat_positions(x, index)
            if not tracing():      # never keep a fake tensor made while tracing
                _INDEX_CACHE[key] = cached
        flat, shape = cached
    value = value.to(x.dtype) if isinstance(value, torch.Tensor) else \
        torch.as_tensor(value, dtype=x.dtype, device=x.device)
    value = torch.broadcast_to(value, shape).reshape(-1)
    return x.reshape(-1).index_put((flat,), value, accumulate=accumulate).reshape(x.shape)
