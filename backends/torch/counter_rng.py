"""Counter-based keys and draws for the torch backend, the same bits eagerly and in a graph.

``split``, ``fold_in``, ``uniform`` and ``normal`` hash ``(key, counter)`` with the SplitMix64
finaliser (Steele, Lea & Flood 2014, "Fast splittable pseudorandom number generators", OOPSLA),
as :mod:`ppl.backends.torch.keys` derives keys. Each function exists twice, bit for bit equal:

* for a concrete key (no trace, no ``torch.func`` transform): NumPy ``uint64`` arithmetic, a few
  microseconds for the small draws of a sampler;
* for a traced or batched key: ``int64`` tensor ops (two's complement wraps as ``uint64`` does;
  logical right shifts are arithmetic shifts masked), so a whole NUTS transition with its draws
  traces into one graph, and ``vmap`` over keys needs no batching rule.

A uniform takes the top 24 (``float32``) or 53 (``float64``) bits of its hash; a normal is
Box-Muller on two such uniforms (Box & Muller 1958, "A note on the generation of random normal
deviates", Ann. Math. Statist. 29), computed with torch ops in both paths.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ppl.backends.torch import keys
from ppl.backends.torch.tracing import tracing

__all__ = ["concrete", "split", "fold_in", "uniform", "normal"]

_M64 = (1 << 64) - 1
_TAG_UNIFORM, _TAG_NORMAL = 0x3C6EF372FE94F82B, 0xA54FF53A5F1D36F1
_GOLDEN, _MUL1, _MUL2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def _signed(v: int) -> int:
    v &= _M64
    return v - (1 << 64) if v >> 63 else v


def concrete(key) -> bool:
    """Whether ``key`` is a plain tensor outside any trace or transform (the NumPy path)."""
    return not (tracing() or torch._C._are_functorch_transforms_active()) \
        and type(key) is torch.Tensor


# ------------------------------------------------------------------------------ tensor path
def _lsr(z, k: int):
    return (z >> k) & ((1 << (64 - k)) - 1)


def _mix_t(z):
    z = z + _signed(_GOLDEN)
    z = (z ^ _lsr(z, 30)) * _signed(_MUL1)
    z = (z ^ _lsr(z, 27)) * _signed(_MUL2)
    return z ^ _lsr(z, 31)


def _derive_t(key, tag: int, counter):
    """The hash of ``(key, counter)`` for an ``int64`` counter tensor (``keys._derive``)."""
    k0, k1 = key[..., 0], key[..., 1]
    return _mix_t(k0 ^ _mix_t((k1 ^ _signed(tag)) ^ _mix_t(counter)))


def _counters(n: int, device, start: int = 0):
    return torch.arange(start, start + n, dtype=torch.int64, device=device)


# ------------------------------------------------------------------------------ NumPy path
def _bits_np(key, tag: int, n: int, start: int = 0) -> np.ndarray:
    k0, k1 = keys.key_words(key)
    with np.errstate(over="ignore"):
        return keys._derive(k0, k1 ^ tag, np.arange(start, start + n, dtype=np.uint64))


# ------------------------------------------------------------------------------ the four ops
def split(key, num: int):
    """``(num, 2)`` new keys (``keys._split``'s words, also for a traced key)."""
    if concrete(key):
        return keys._impl(key, [], "split", [], [num], torch.int64, None)
    words = _derive_t(key, keys._TAG_SPLIT, _counters(2 * num, key.device, 1))
    return words.reshape(num, 2)


def fold_in(key, data):
    """A new key from ``key`` and the integer ``data`` (an int or an integer tensor)."""
    if concrete(key) and not isinstance(data, torch.Tensor):
        d = int(data) & _M64
        return keys._impl(key, [], "fold_in", [], [_signed(d)], torch.int64, None)
    if concrete(key) and type(data) is torch.Tensor and data.ndim == 0:
        return fold_in(key, int(data))
    d = torch.as_tensor(data, dtype=torch.int64, device=key.device) * 2
    return torch.stack([_derive_t(key, keys._TAG_FOLD, d), _derive_t(key, keys._TAG_FOLD, d + 1)],
                       dim=-1)


def _to_unit(bits, dtype, numpy: bool):
    """Uniforms in ``[0, 1)`` from 64-bit hashes (NumPy ``uint64`` or ``int64`` tensors)."""
    wide = dtype == torch.float64
    shift, scale = (11, 2.0 ** -53) if wide else (40, 2.0 ** -24)
    if numpy:
        top = (bits >> np.uint64(shift)).astype(np.float64 if wide else np.float32)
        return torch.from_numpy(top * (np.float64(scale) if wide else np.float32(scale)))
    work = torch.float64 if wide else torch.float32
    return _lsr(bits, shift).to(work) * scale


def _uniform_work(key, n: int, dtype, device, tag):
    """``n`` uniforms of the working dtype, flat."""
    if concrete(key):
        u = _to_unit(_bits_np(key, tag, n), dtype, True)
    else:
        u = _to_unit(_derive_t(key, tag, _counters(n, key.device)), dtype, False)
    return u if device is None or u.device == device else u.to(device)


def _work(dtype):
    return torch.float64 if dtype == torch.float64 else torch.float32


def uniform(key, shape, dtype, device=None):
    """Uniforms in ``[0, 1)`` of ``shape`` and ``dtype``."""
    u = _uniform_work(key, math.prod(shape), _work(dtype), device, _TAG_UNIFORM)
    return u.reshape(tuple(shape)).to(dtype)


def normal(key, shape, dtype, device=None):
    """Standard normals of ``shape`` and ``dtype`` (Box-Muller on two uniforms each)."""
    n = math.prod(shape)
    u = _uniform_work(key, 2 * n, _work(dtype), device, _TAG_NORMAL)
    z = torch.sqrt(-2.0 * torch.log1p(-u[:n])) * torch.cos((2.0 * math.pi) * u[n:])
    return z.reshape(tuple(shape)).to(dtype)
