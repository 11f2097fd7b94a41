"""The PyTorch backend: eager ``torch`` ops, ``torch.func`` autodiff and seeded generators.

Arrays are ``torch.Tensor``; derivatives and batching come from ``torch.func`` (``grad``,
``grad_and_value``, ``vmap``), so every op is written out-of-place and works under those
transforms. One module per topic of the protocol, each holding one mixin, plus the torch-only
machinery they use:

* :mod:`.tracing`: ``jit`` traces a pure array function once per input signature into a
  graph that runs as TorchScript, then, once called often, as inductor's ahead-of-time C++
  code, cached on disk (``PPL_TORCH_JIT=script`` keeps TorchScript, ``fx`` runs the traced
  graph as Python, ``none`` turns tracing off); functions with data-dependent Python
  control flow run eagerly, and loops stay Python loops (``jit_compiles = True``,
  ``compiles_control_flow = False``), except:
* :mod:`.loops` (with :mod:`.loop_graphs`, :mod:`.compile_worker`): an eager ``while_loop``
  called often with closures of the same code (a NUTS transition) is traced once into torch's
  loop operator, nested loops included, and compiled by inductor, cached on disk;
* :mod:`.scans`: an ``ops.scan`` inside such a loop as torch's scan operator (16 steps per
  iteration) with its own gradient, instead of one copy of its body per step.
* :mod:`.counter_rng`: ``split``, ``fold_in``, ``uniform`` and ``normal`` as counter-based
  hashes, the same bits eagerly and inside a graph.
* :mod:`.keys`: functional keys (``int64[2]`` key material) and the custom op through which
  every draw goes, with a batching rule for ``vmap`` over keys (``vmap_random_draws = True``).
* :mod:`.indexing`: out-of-place index updates under ``torch.func``.
* :mod:`.transforms`: reading tensors inside ``torch.func`` transforms.
* :mod:`.numpy_interop`: NumPy ufuncs on tensors keep their result's dtype (a boolean stays
  boolean; torch's own makes it ``uint8``), set for the process when a backend is made.
* :mod:`.betainc`: the regularised incomplete beta function, which torch lacks
  (``gammainc``/``gammaincc``/``betainc`` are differentiable in ``x`` only).
"""

from __future__ import annotations

import torch

from ppl.backends.common import Backend
from ppl.backends.common.dtypes import parse_device
from ppl.backends.torch.autodiff import TorchAutodiff
from ppl.backends.torch.compile import TorchCompile
from ppl.backends.torch.control_flow import TorchControlFlow
from ppl.backends.torch.core import _DTYPES, TorchCore
from ppl.backends.torch.linalg import TorchLinalg
from ppl.backends.torch.nn import TorchNN
from ppl.backends.torch.numpy_interop import keep_numpy_dtypes
from ppl.backends.torch.random import TorchRandom
from ppl.backends.torch.special import TorchSpecial

__all__ = ["TorchBackend"]


class TorchBackend(TorchCore, TorchSpecial, TorchLinalg, TorchNN, TorchRandom, TorchAutodiff,
                   TorchControlFlow, TorchCompile, Backend):
    """PyTorch backend of the :class:`~ppl.backends.common.Backend` protocol (see the module
    docstring).

    Parameters
    ----------
    dtype
        ``"float32"`` (default) or ``"float64"``.
    device
        ``None`` (the CPU), a ``torch.device``, or a device string (``"cpu"``, ``"cuda"``,
        ``"cuda:1"``, ``"mps"``): where arrays and draws are created.
    """

    name = "torch"

    def __init__(self, dtype: str = "float32", device: str | None = None):
        super().__init__(dtype=dtype, device=device)
        self._float = _DTYPES[dtype]
        self._device = None if device is None else _to_device(device)
        self._gen_device = self._device or torch.device("cpu")
        keep_numpy_dtypes()      # ~np.isnan(y) on a tensor: a bool mask, not uint8 (see module)


def _device_counts() -> dict:
    """Devices torch can use here, per platform (``cuda`` also names ROCm builds' GPUs)."""
    mps = getattr(torch.backends, "mps", None)
    return {"cpu": 1,
            "cuda": torch.cuda.device_count() if torch.cuda.is_available() else 0,
            "mps": int(bool(mps is not None and mps.is_available()))}


def _to_device(device) -> torch.device:
    """A ``torch.device`` for ``device``, checked against what this machine has (torch
    itself accepts ``"cuda"`` without a GPU and fails at the first op)."""
    if isinstance(device, torch.device):
        return device
    platform, index = parse_device(device)
    platform = {"gpu": "cuda", "rocm": "cuda"}.get(platform, platform)  # torch's GPU platform
    counts = _device_counts()
    if counts.get(platform, 0) <= (index or 0):
        have = [p if n == 1 and p != "cuda" else f"{p}:0..{n - 1}"
                for p, n in counts.items() if n]
        found = (f"{counts[platform]} {platform} device(s)" if platform in counts
                 else "unknown platform")
        raise ValueError(f"device {device!r} is not available to torch here ({found}); "
                         f"available: {have}. Pass device=None or 'cpu'.")
    return torch.device(platform if index is None else f"{platform}:{index}")
