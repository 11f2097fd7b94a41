"""The TensorFlow backend: ``tf`` ops, ``tf.GradientTape``, ``tf.vectorized_map``, XLA, and
stateless Philox random ops behind the :class:`~ppl.backends.common.Backend` protocol.

Everything compiles: ``jit`` is ``tf.function(jit_compile=True)``, control flow is
``tf.while_loop``/``tf.cond`` (a real loop for ``scan``), so a whole chunk of NUTS iterations is
one XLA program, as on JAX. Keys are ``int64[2]`` tensors (:mod:`.random`). One module per
topic of the protocol, each holding one mixin. TensorFlow Probability is not needed at run
time (the tests use it as a reference).

>>> import ppl
>>> with ppl.use_backend("tensorflow", dtype="float64") as b:
...     b.dtype_of(b.exp(b.asarray([0.0, 1.0])))
'float64'
"""

from __future__ import annotations

from ppl.backends.tensorflow.native_log import quiet_start_up

with quiet_start_up():          # TensorFlow's C++ start-up lines (native_log.py)
    import tensorflow as tf
    tf.config.list_logical_devices()         # the runtime starts (and probes for CUDA) here

from ppl.backends.common import Backend  # noqa: E402 - after TensorFlow's quiet start
from ppl.backends.common.xla_flags import request_small_loop_kernels
from ppl.backends.tensorflow.autodiff import TensorflowAutodiff
from ppl.backends.tensorflow.compile import TensorflowCompile
from ppl.backends.tensorflow.control_flow import TensorflowControlFlow
from ppl.backends.tensorflow.core import _DTYPES, TensorflowCore, to_device_name
from ppl.backends.tensorflow.linalg import TensorflowLinalg
from ppl.backends.tensorflow.nn import TensorflowNN
from ppl.backends.tensorflow.python_interop import allow_len_of_known_shape
from ppl.backends.tensorflow.random import TensorflowRandom
from ppl.backends.tensorflow.shapes import TensorflowShapes
from ppl.backends.tensorflow.special import TensorflowSpecial

__all__ = ["TensorflowBackend"]


def _unpackable_iter(original):
    def __iter__(self):
        if tf.is_symbolic_tensor(self) and self.shape.rank and self.shape[0] is not None:
            return iter(tf.unstack(self, num=self.shape[0]))
        return original(self)

    __iter__.__ppl_patched__ = True
    return __iter__


def enable_numpy_behavior():
    """Turn on TensorFlow's NumPy behaviour (process-wide, like JAX's x64 flag): NumPy indexing
    of tensors (``theta[group]`` with an integer array, boolean masks), NumPy type promotion in
    operators (``int_tensor * float_tensor``), and ``.T``/``.reshape`` on tensors, which model
    code written for NumPy, JAX and torch uses. Python floats next to a tensor keep its dtype.

    Also lets a symbolic tensor (inside ``jit``, ``vmap`` or a loop) whose first dimension is
    known be unpacked, as JAX and torch allow: ``k1, k2 = ppl.random.split(key)``. TensorFlow
    refuses to iterate over any symbolic tensor."""
    tf.experimental.numpy.experimental_enable_numpy_behavior(prefer_float32=True)
    if not getattr(tf.Tensor.__iter__, "__ppl_patched__", False):
        tf.Tensor.__iter__ = _unpackable_iter(tf.Tensor.__iter__)


class TensorflowBackend(TensorflowCore, TensorflowShapes, TensorflowSpecial, TensorflowLinalg,
                        TensorflowNN, TensorflowRandom, TensorflowAutodiff,
                        TensorflowControlFlow, TensorflowCompile, Backend):
    """The TensorFlow backend.

    Parameters
    ----------
    dtype
        ``"float32"`` (default) or ``"float64"``.
    device
        ``None`` (TensorFlow's placement), or ``"cpu"``, ``"gpu"``, ``"cuda"``, ``"cuda:1"``:
        where the arrays this backend creates are placed; computations follow their inputs.

    Notes
    -----
    Creating the backend turns on TensorFlow's NumPy behaviour for the process
    (:func:`enable_numpy_behavior`). Under it, as in NumPy, an ``int64`` tensor combined with a
    ``float32`` tensor by a Python operator gives ``float64``: use ``ops`` calls (which keep the
    backend's float dtype) or cast first in backend-neutral code.
    """

    name = "tensorflow"

    def __init__(self, dtype: str = "float32", device=None):
        super().__init__(dtype=dtype, device=device)
        enable_numpy_behavior()
        allow_len_of_known_shape()   # len(data) of a traced tensor (see python_interop)
        # XLA's small-loop threshold (backends/common/xla_flags.py): read by TensorFlow's XLA at
        # its first compile, so it holds when no XLA program of TensorFlow ran before
        request_small_loop_kernels()
        self._float = _DTYPES[dtype]
        self._device_name = to_device_name(device)
