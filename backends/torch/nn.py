"""torch backend: neural-network functions (``torch.nn.functional``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["TorchNN"]


class TorchNN:
    """Neural-network functions of :class:`~ppl.backends.torch.TorchBackend`."""

    def relu(self, x): return torch.relu(self._t(x))
    def sigmoid(self, x): return torch.sigmoid(x)
    def log_sigmoid(self, x): return F.logsigmoid(x)
    def silu(self, x): return F.silu(x)
    def elu(self, x, alpha=1.0): return F.elu(x, alpha=alpha)
    def celu(self, x, alpha=1.0): return F.celu(x, alpha=alpha)
    def softsign(self, x): return F.softsign(x)
    def softmax(self, x, axis=-1): return torch.softmax(x, dim=axis)
    def log_softmax(self, x, axis=-1): return torch.log_softmax(x, dim=axis)

    def softplus(self, x):
        # F.softplus returns x above ``threshold``; pick it where log1p(exp(-x)) < eps.
        return F.softplus(x, threshold=20.0 if x.dtype != torch.float64 else 40.0)

    def gelu(self, x, approximate=False):
        return F.gelu(x, approximate="tanh" if approximate else "none")

    def leaky_relu(self, x, negative_slope=0.01):
        return F.leaky_relu(x, negative_slope=negative_slope)
