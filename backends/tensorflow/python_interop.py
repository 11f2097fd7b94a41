"""Python's ``len`` of a traced tensor, as NumPyro models use it on their data
(``ppl.plate("data", len(data))``).

A model's data given as TensorFlow tensors become symbolic tensors inside ppl's compiled programs
(``tf.function``), and TensorFlow's ``Tensor.__len__`` refuses every symbolic tensor, even one
whose leading dimension is known. The model then could not be traced, so the whole sampler ran
eagerly (a warning, and ~100x slower). :func:`allow_len_of_known_shape` lets ``len`` give the
leading dimension where the traced shape knows it, once per process when a tensorflow backend
is constructed; an unknown or scalar shape still raises TensorFlow's ``TypeError``. Eager
tensors have their own ``__len__`` and are unchanged. (JAX's tracers answer ``len`` the same
way.)
"""

from __future__ import annotations

from tensorflow.python.framework.tensor import Tensor

__all__ = ["allow_len_of_known_shape"]

_TENSORFLOW_LEN = Tensor.__len__


def _len(self):
    """The leading dimension of a traced tensor where it is known, else TensorFlow's error."""
    shape = self.shape
    if shape.rank and shape[0] is not None:
        return int(shape[0])
    return _TENSORFLOW_LEN(self)


def allow_len_of_known_shape() -> None:
    """Let ``len`` of a traced tensor give its known leading dimension (see the module)."""
    if Tensor.__len__ is not _len:
        Tensor.__len__ = _len
