"""numpy backend: special functions, ``autograd.scipy.special``'s where it has them and the
autograd primitives of :mod:`ppl.backends.numpy.primitives` (with their VJPs) elsewhere."""

from __future__ import annotations

import autograd.numpy as anp
import autograd.scipy.special as asp
import numpy as np
from autograd.tracer import getval

from ppl.backends.numpy import primitives as prims
from ppl.backends.numpy.core import _axis

__all__ = ["NumpySpecial"]


class NumpySpecial:
    """Special functions of :class:`~ppl.backends.numpy.NumpyBackend`."""

    log1p = staticmethod(anp.log1p)
    expm1 = staticmethod(anp.expm1)
    gammaln = staticmethod(asp.gammaln)
    digamma = staticmethod(asp.digamma)
    erf = staticmethod(asp.erf)
    erfc = staticmethod(asp.erfc)
    erfinv = staticmethod(asp.erfinv)
    ndtr = staticmethod(prims.ndtr)
    ndtri = staticmethod(prims.ndtri)
    log_ndtr = staticmethod(prims.log_ndtr)
    xlogy = staticmethod(prims.xlogy)
    xlog1py = staticmethod(prims.xlog1py)
    gammainc = staticmethod(asp.gammainc)
    gammaincc = staticmethod(asp.gammaincc)
    betainc = staticmethod(asp.betainc)
    logit = staticmethod(asp.logit)

    def polygamma(self, n, x):
        out = asp.polygamma(n, x)
        dt = np.result_type(getval(x))
        return self.astype(out, dt) if dt.kind == "f" and np.result_type(getval(out)) != dt \
            else out

    def logsumexp(self, x, axis=None, keepdims=False):
        return asp.logsumexp(x, axis=_axis(axis), keepdims=keepdims)
