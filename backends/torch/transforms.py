"""Reading tensors inside ``torch.func`` transforms, through torch's private functorch API
(kept in this one place).

Under ``grad`` a tensor is wrapped but its values are readable once unwrapped; under ``vmap`` it
is batched and has no single value.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["is_batched", "to_numpy"]

_ft = torch._C._functorch


def is_batched(x: torch.Tensor) -> bool:
    """Whether ``x`` is batched by an enclosing ``vmap`` (its values cannot be read)."""
    if not torch._C._are_functorch_transforms_active():
        return False
    while _ft.is_functorch_wrapped_tensor(x):
        if _ft.is_batchedtensor(x):
            return True
        x = _ft.get_unwrapped(x)
    return False


def to_numpy(x: torch.Tensor) -> np.ndarray:
    """A NumPy copy of ``x``, also under ``grad`` (where the values are readable unwrapped)."""
    if not torch._C._are_functorch_transforms_active():
        return x.detach().cpu().numpy()
    while _ft.is_functorch_wrapped_tensor(x) and not _ft.is_batchedtensor(x):
        x = _ft.get_unwrapped(x)
    with torch._C._DisableFuncTorch():
        return x.detach().cpu().numpy().copy()
