"""Special functions torch lacks, written with torch ops for the torch backend."""

from __future__ import annotations

import math

import torch

__all__ = ["betainc"]


def _betacf(a, b, x, eps, max_iter, check):
    """Continued fraction of the incomplete beta function by the modified Lentz method
    (Press et al., Numerical Recipes, 3rd ed., 2007, section 6.4); no gradients."""
    tiny = torch.finfo(x.dtype).tiny / eps
    fix = lambda t: torch.where(t.abs() < tiny, tiny, t)
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = torch.ones_like(x)
    d = 1.0 / fix(1.0 - qab * x / qap)
    h = d
    for m in range(1, max_iter + 1):
        m2 = 2.0 * m
        num = m * (b - m) * x / ((qam + m2) * (a + m2))
        d, c = 1.0 / fix(1.0 + num * d), fix(1.0 + num / c)
        h = h * d * c
        num = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d, c = 1.0 / fix(1.0 + num * d), fix(1.0 + num / c)
        step = d * c
        h = h * step
        if check and m % 8 == 0 and bool(((step - 1.0).abs() <= eps).all()):
            break
    return h


def betainc(a, b, x):
    """Regularised incomplete beta function ``I_x(a, b)`` of broadcastable tensors.

    Evaluated in float64 by the continued fraction of :func:`_betacf` on the side where it
    converges fast (``I_x(a, b) = 1 - I_{1-x}(b, a)``), to about the machine epsilon of
    ``x.dtype``; NaN for ``x`` outside ``[0, 1]``. Differentiable in ``x`` (the derivative is the
    beta density), not in ``a`` or ``b``, as in JAX. Works under ``torch.func`` transforms
    (then always with the full iteration count, as convergence cannot be checked).
    """
    a, b, x = torch.broadcast_tensors(a, b, x)
    a0, b0, x0 = (t.detach().to(torch.float64) for t in (a, b, x))
    with torch.no_grad():
        swap = x0 > (a0 + 1.0) / (a0 + b0 + 2.0)
        aa, bb = torch.where(swap, b0, a0), torch.where(swap, a0, b0)
        xx = torch.where(swap, 1.0 - x0, x0)
        lbeta = torch.special.gammaln(aa) + torch.special.gammaln(bb) \
            - torch.special.gammaln(aa + bb)
        front = torch.exp(torch.special.xlogy(aa, xx) + torch.special.xlog1py(bb, -xx) - lbeta)
        cf = _betacf(aa, bb, xx, torch.finfo(x.dtype).eps, 300,
                     not torch._C._are_functorch_transforms_active())
        r = front * cf / aa
        r = torch.where(swap, 1.0 - r, r)
        r = torch.where((x0 < 0) | (x0 > 1), math.nan, r).to(x.dtype)
        dens = torch.exp(torch.special.xlogy(a0 - 1.0, x0)
                         + torch.special.xlog1py(b0 - 1.0, -x0) - lbeta).to(x.dtype)
    # value r; derivative in x the density (x - x.detach() is zero in value)
    return r + torch.nan_to_num((x - x.detach()) * dens, nan=0.0)
