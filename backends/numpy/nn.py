"""numpy backend: neural-network functions. ``sigmoid`` and ``softplus`` use autograd's stable
natives; the other activations are the composites of :mod:`ppl.backends.common.nn`."""

from __future__ import annotations

import autograd.numpy as anp
import autograd.scipy.special as asp

__all__ = ["NumpyNN"]


class NumpyNN:
    """Neural-network functions of :class:`~ppl.backends.numpy.NumpyBackend`."""

    sigmoid = staticmethod(asp.expit)

    def softplus(self, x):
        return anp.logaddexp(0.0, x)
