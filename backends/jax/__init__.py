"""The JAX backend: ``jax.numpy``, ``jax.scipy``, ``jax.lax`` and ``jax.random`` behind the
:class:`~ppl.backends.common.Backend` protocol.

Everything compiles (``jit`` is ``jax.jit``, control flow is ``jax.lax``'s), ``vmap`` batches
``while_loop``, and random keys are JAX's legacy ``uint32[2]`` keys, so they stack, ``vmap`` and
``scan`` like any other array. One module per topic of the protocol, each holding one mixin.

>>> import ppl
>>> with ppl.use_backend("jax", dtype="float64") as b:
...     b.dtype_of(b.exp(b.asarray([0.0, 1.0])))
'float64'
"""

from __future__ import annotations

import numpy as np

from ppl.backends.common import Backend
from ppl.backends.jax.autodiff import JaxAutodiff
from ppl.backends.jax.cache import use_compilation_cache
from ppl.backends.jax.compile import JaxCompile, use_cpu_cores, use_small_loop_kernels
from ppl.backends.jax.control_flow import JaxControlFlow
from ppl.backends.jax.core import JaxCore, enable_x64, to_device
from ppl.backends.jax.linalg import JaxLinalg
from ppl.backends.jax.nn import JaxNN
from ppl.backends.jax.random import JaxRandom
from ppl.backends.jax.special import JaxSpecial

__all__ = ["JaxBackend"]


class JaxBackend(JaxCore, JaxSpecial, JaxLinalg, JaxNN, JaxRandom, JaxAutodiff, JaxControlFlow,
                 JaxCompile, Backend):
    """The JAX backend.

    Parameters
    ----------
    dtype
        ``"float32"`` (default) or ``"float64"``. A float64 backend turns on JAX's
        ``jax_enable_x64`` flag when it is constructed; the flag is process-wide, so it also
        applies to float32 backends created before or after.
    device
        ``None`` (JAX's default device), a ``jax.Device``, or ``"cpu"``, ``"gpu"``, ``"cuda"``,
        ``"cuda:1"``, ``"tpu:0"``. Arrays this backend creates are placed there; computations
        follow their inputs, as everywhere in JAX.

    Constructing one before JAX starts asks XLA for one CPU device per core
    (:mod:`ppl.backends.jax.compile`), and, unless the user configured JAX's persistent
    compilation cache, turns it on in a per-user directory so that a later process loads the
    sampler's compiled programs instead of compiling them (:mod:`ppl.backends.jax.cache`;
    ``PPL_CACHE_DIR=0`` turns it off).

    Notes
    -----
    Dtype rules, which keep a float32 backend producing float32 even once x64 is on:

    * Every creation op (``asarray`` of Python/NumPy data, ``zeros``, ``ones``, ``full``,
      float ``arange``, ``linspace``, ``eye``, every random sampler) passes an explicit dtype:
      ``self.dtype`` for floats unless ``dtype`` is given.
    * ``asarray`` casts floating Python/NumPy input to ``self.dtype``; a JAX array (or tracer)
      keeps its dtype unless ``dtype`` is given. Integers and booleans keep their kind; integer
      results are ``int32`` without x64 and ``int64`` with it (``"int64"`` requests are narrowed
      to ``int32`` silently when x64 is off).
    * Floating ops turn integer and boolean input into ``self.dtype`` (the shared float policy,
      :mod:`ppl.backends.common.dtypes`), where JAX would pick its default float.
    * Ops given Python or NumPy inputs convert them with ``asarray`` first; a Python float next
      to a floating JAX array stays weakly typed, so ``maximum(x, 0.0)`` keeps ``x``'s dtype,
      while ``where(mask, 1.0, 0.0)`` gives ``self.dtype``.
    * An explicit ``dtype="float64"`` request on a float32 backend turns x64 on, so the result
      is really float64.

    With x64 on, a float32 array combined with a *NumPy* float64 scalar or array through a
    Python operator (``x * np.log(2.0)``) is promoted to float64, as in JAX itself: use Python
    floats (``math.log``) or ``ops`` calls in backend-neutral code.
    """

    name = "jax"

    def __init__(self, dtype: str = "float32", device=None):
        super().__init__(dtype=dtype, device=device)
        self._device = to_device(device)
        self._float_dtype = np.dtype(dtype)
        if dtype == "float64":
            enable_x64()
        use_cpu_cores()
        use_small_loop_kernels()
        use_compilation_cache()
