"""NumPy functions applied to tensors, as NumPyro models apply them to their data
(``obs_mask=~np.isnan(y)``): where the model's NumPy data have become tensors (``MCMC``,
``Predictive`` and the handlers convert them on torch, whose tensors take no NumPy operands),
a NumPy ufunc on a tensor must give what it gives on the array.

torch's ``Tensor.__array_wrap__`` turns a boolean result into ``uint8`` (a workaround from before
torch had boolean tensors), so ``~np.isnan(y)`` became ``254``/``255`` instead of a mask.
:func:`keep_numpy_dtypes` replaces it, once per process, when a torch backend is constructed, by
one that keeps the result's dtype; tensor subclasses with ``__torch_function__`` keep torch's.
Inside ``grad``/``vmap`` torch cannot hand a tensor to NumPy at all: :func:`explain_numpy_calls`
says so, and what to write instead.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from torch.overrides import has_torch_function_unary

__all__ = ["explain_numpy_calls", "keep_numpy_dtypes"]

_TORCH_ARRAY_WRAP = torch.Tensor.__array_wrap__


def _array_wrap(self, array, context=None, return_scalar=False):
    """A NumPy ufunc's result on a tensor, as a tensor of the result's own dtype."""
    if has_torch_function_unary(self):
        return _TORCH_ARRAY_WRAP(self, array)
    return torch.from_numpy(np.asarray(array))


def keep_numpy_dtypes() -> None:
    """Make NumPy ufuncs on tensors keep their result's dtype (booleans stay booleans)."""
    if torch.Tensor.__array_wrap__ is not _array_wrap:
        torch.Tensor.__array_wrap__ = _array_wrap


def explain_numpy_calls(fun):
    """``fun``, whose failure to hand a transformed tensor to NumPy (``np.isnan(y)`` inside
    ``grad``/``vmap``, where torch's tensors have no storage NumPy could read) is raised as a
    ``TypeError`` that says what to do instead of torch's "Cannot access data pointer"."""
    @functools.wraps(fun)
    def called(*args, **kwargs):
        try:
            return fun(*args, **kwargs)
        except RuntimeError as err:
            if "doesn't have storage" not in str(err):
                raise
            raise TypeError(
                "A NumPy function was applied to a tensor inside torch's grad/vmap (e.g. "
                "np.isnan(y) on the model's data, which MCMC makes tensors on torch), and torch "
                "cannot hand those tensors to NumPy. In the model use ppl.ops instead "
                "(ops.isnan(y), ops.where, ...), or compute the value outside the model and "
                "pass it as data.") from err
    return called
