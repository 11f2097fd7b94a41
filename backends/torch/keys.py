"""Functional random keys for the torch backend.

A key is an ``int64`` tensor of shape ``(2,)`` holding two 64-bit words of key material. New keys
(``split``, ``fold_in``) are derived with the SplitMix64 finaliser as a counter-based hash
(Steele, Lea & Flood 2014, "Fast splittable pseudorandom number generators", OOPSLA); a draw
seeds a fresh ``torch.Generator`` with a hash of its key, so no global random state is used and
the same key gives the same draw (on the same device type). Caveat: torch's CPU generator
(MT19937) keeps only the low 32 bits of its seed, so two distinct keys share a stream with
probability 2**-32 (a repeated draw somewhere in ~10**5 sampler calls; harmless for MCMC).

Eagerly, :func:`draw` runs the sampler directly. Under a ``torch.func`` transform it goes through
the custom op ``ppl_torch::draw``, whose batching rule makes ``vmap`` over keys work (one draw per
key, stacked) and keeps JAX's semantics for an unbatched key (the same draw for every batch
member). The op carries no autograd: :func:`gamma` adds the reparameterised gradient of the gamma
draw outside it (implicit reparameterisation, Figurnov, Mohamed & Mnih 2018, "Implicit
Reparameterization Gradients", NeurIPS), through ``torch._standard_gamma_grad``.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["make_key", "key_words", "draw", "gamma"]

_M64 = (1 << 64) - 1
_TAG_SPLIT, _TAG_FOLD, _TAG_DRAW = 0x5851F42D4C957F2D, 0x2545F4914F6CDD1D, 0x14057B7EF767814F
#: kinds whose tensor parameters are elementwise in the output shape
_ELEMENTWISE = frozenset({"gamma", "poisson", "binomial"})


def _mix(z):
    """SplitMix64 finaliser on a Python int or a ``uint64`` NumPy array (wrapping)."""
    if isinstance(z, np.ndarray):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))
    z = (z + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _derive(k0, k1, counter):
    """A 64-bit word from key words ``(k0, k1)`` and a counter (int or ``uint64`` array)."""
    if isinstance(counter, np.ndarray):
        return _mix(np.uint64(k0) ^ _mix(np.uint64(k1) ^ _mix(counter)))
    return _mix(k0 ^ _mix(k1 ^ _mix(counter & _M64)))


def _key_tensor(words):
    return torch.tensor([w - (1 << 64) if w >= (1 << 63) else w for w in words],
                        dtype=torch.int64)


def make_key(seed: int) -> torch.Tensor:
    """The key of an integer seed in ``[-2**63, 2**64)``."""
    s = seed & _M64
    return _key_tensor([_mix(s ^ _TAG_SPLIT), _mix(_mix(s) ^ _TAG_FOLD)])


def key_words(key) -> tuple[int, int]:
    """The two unsigned 64-bit words of a concrete key."""
    k = key.tolist() if isinstance(key, torch.Tensor) else np.asarray(key).tolist()
    if not isinstance(k, list) or len(k) != 2 or not all(isinstance(w, int) for w in k):
        raise ValueError(
            f"key must be an integer array of shape (2,), got shape {tuple(np.shape(k))}. "
            "Make one with ppl.random.key(seed); pick one row of ppl.random.split(key, n).")
    return k[0] & _M64, k[1] & _M64


def _split(k0, k1, num):
    if num <= 16:   # Python ints beat NumPy's per-call overhead for a few keys
        return _key_tensor([_derive(k0, k1 ^ _TAG_SPLIT, c)
                            for c in range(1, 2 * num + 1)]).reshape(num, 2)
    counters = np.arange(1, 2 * num + 1, dtype=np.uint64)
    return torch.from_numpy(_derive(k0, k1 ^ _TAG_SPLIT, counters).view(np.int64)
                            .reshape(num, 2))


def _impl(key, params, kind, shape, ints, dtype, device):
    """One draw from a concrete key (no transforms active)."""
    k0, k1 = key_words(key)
    if kind == "split":
        return _split(k0, k1, ints[0])
    if kind == "fold_in":
        d = (ints[0] & _M64) << 1
        return _key_tensor([_derive(k0, k1 ^ _TAG_FOLD, d), _derive(k0, k1 ^ _TAG_FOLD, d + 1)])
    g = torch.Generator(device=device)
    g.manual_seed(_derive(k0, k1 ^ _TAG_DRAW, 0))
    if kind == "uniform":
        return torch.rand(shape, generator=g, dtype=dtype, device=device)
    if kind == "normal":
        return torch.randn(shape, generator=g, dtype=dtype, device=device)
    if kind == "gamma":
        return torch._standard_gamma(params[0], generator=g)
    if kind == "poisson":
        return torch.poisson(params[0], generator=g)
    if kind == "binomial":
        return torch.binomial(params[0], params[1], generator=g)
    if kind == "randint":
        return torch.randint(ints[0], ints[1], shape, generator=g, dtype=dtype, device=device)
    if kind == "randperm":
        return torch.randperm(ints[0], generator=g, device=device)
    raise ValueError(f"unknown random kind {kind!r}")


def _define_ops():
    @torch.library.custom_op("ppl_torch::draw", mutates_args=())
    def _draw_op(key: torch.Tensor, params: list[torch.Tensor], kind: str, shape: list[int],
                 ints: list[int], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        return _impl(key, params, kind, shape, ints, dtype, device)

    def _draw_vmap(info, in_dims, key, params, kind, shape, ints, dtype, device):
        kdim, pdims = in_dims[0], in_dims[1]
        n = info.batch_size
        params = [p if d is None else p.movedim(d, 0) for p, d in zip(params, pdims)]
        if kdim is None:
            if all(d is None for d in pdims):
                return torch.ops.ppl_torch.draw(key, params, kind, shape, ints, dtype,
                                                device), None
            if kind in _ELEMENTWISE:   # one key, batched parameters: one bigger draw
                params = [p.expand(n, *p.shape) if d is None else p
                          for p, d in zip(params, pdims)]
                return torch.ops.ppl_torch.draw(key, params, kind, [n, *shape], ints, dtype,
                                                device), 0
        outs = [torch.ops.ppl_torch.draw(
            key if kdim is None else key.select(kdim, i),
            [p if d is None else p[i] for p, d in zip(params, pdims)],
            kind, shape, ints, dtype, device) for i in range(n)]
        return torch.stack(outs), 0

    _draw_op.register_vmap(_draw_vmap)

    @torch.library.custom_op("ppl_torch::gamma_grad", mutates_args=())
    def _gamma_grad_op(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch._standard_gamma_grad(a, x)

    def _gamma_grad_vmap(info, in_dims, a, x):
        a, x = (t.movedim(d, 0) if d is not None else t.expand(info.batch_size, *t.shape)
                for t, d in zip((a, x), in_dims))
        return torch.ops.ppl_torch.gamma_grad(a, x), 0

    _gamma_grad_op.register_vmap(_gamma_grad_vmap)


if not hasattr(torch.ops.ppl_torch, "draw"):
    _define_ops()


def draw(key, params, kind, shape=(), ints=(), dtype=torch.float32, device=None):
    """Draw ``kind`` from ``key``; works eagerly and under ``torch.func`` transforms."""
    device = torch.device("cpu") if device is None else device
    if torch._C._are_functorch_transforms_active():
        return torch.ops.ppl_torch.draw(key, [p.detach() for p in params], kind, list(shape),
                                        list(ints), dtype, device)
    return _impl(key, params, kind, list(shape), list(ints), dtype, device)


def gamma(key, a, device=None):
    """Standard gamma draws of the shape of ``a``, reparameterised (differentiable in ``a``)."""
    if not torch._C._are_functorch_transforms_active():
        return _impl(key, [a], "gamma", [], [], a.dtype, device or torch.device("cpu"))
    a0 = a.detach()
    x = draw(key, [a0], "gamma", device=device)
    # value x, derivative dx/da from the implicit function theorem on the gamma CDF
    # (a - a0) is zero in value; nan_to_num keeps 0 * inf (x underflowed to 0) from
    # turning the draw into NaN.
    return x + torch.nan_to_num((a - a0) * torch.ops.ppl_torch.gamma_grad(a0, x), nan=0.0)
