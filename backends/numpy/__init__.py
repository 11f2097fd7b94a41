"""The numpy backend: NumPy arrays, ``autograd`` for derivatives, eager control flow.

* ``grad``/``value_and_grad`` are autograd's reverse mode; gradients flow through Python loops,
  so ``scan``/``fori_loop`` (eager loops here) are differentiable (:mod:`.autodiff`).
* ``vmap`` loops over the mapped axis and stacks; ``jit`` records the NumPy calls of a pure
  array function once per input signature, its gradient's included, and replays them
  (:mod:`.tape`, :mod:`.replay`); a function whose Python reads its inputs runs eagerly.
* Random keys are two ``uint64`` words of key material for NumPy's counter-based Philox
  generator (:mod:`.random`).
* Ops autograd lacks are autograd primitives with their VJPs (:mod:`.primitives`).
* Only ``device=None`` or ``"cpu"`` is accepted.

One module per topic of the protocol (:mod:`ppl.backends.common`), each holding one mixin.
"""

from __future__ import annotations

import numpy as np

from ppl.backends.common import Backend
from ppl.backends.common.dtypes import parse_device
from ppl.backends.numpy.autodiff import NumpyAutodiff
from ppl.backends.numpy.compile import NumpyCompile
from ppl.backends.numpy.control_flow import NumpyControlFlow
from ppl.backends.numpy.core import NumpyCore
from ppl.backends.numpy.linalg import NumpyLinalg
from ppl.backends.numpy.nn import NumpyNN
from ppl.backends.numpy.random import NumpyRandom
from ppl.backends.numpy.special import NumpySpecial

__all__ = ["NumpyBackend"]


class NumpyBackend(NumpyCore, NumpySpecial, NumpyLinalg, NumpyNN, NumpyRandom, NumpyAutodiff,
                   NumpyControlFlow, NumpyCompile, Backend):
    """NumPy + autograd; eager, float32 or float64. See the module docstring."""

    name = "numpy"

    def __init__(self, dtype="float32", device=None):
        if device is not None and parse_device(device) != ("cpu", None):
            raise ValueError(
                f"The numpy backend runs on the CPU only; got device={device!r}. "
                "Use device=None or 'cpu', or a backend with accelerator support (jax, torch)."
            )
        super().__init__(dtype=dtype, device=device)
        self._np_dtype = np.dtype(dtype)
