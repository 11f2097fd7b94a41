"""How the torch backend's traces write some aten ops (``make_fx``'s decomposition table).

Every trace of the torch backend (``jit`` pieces, :mod:`ppl.backends.torch.tracing`; compiled
loops, :mod:`ppl.backends.torch.loops`) records aten ops with this table, so the graphs inductor
compiles hold the forms it compiles well:

* **A batched product with a shared operand is one** ``mm``. Under ``vmap`` over chains a
  model's ``X @ b[..., None]`` (a data matrix times each chain's coefficients: posteriordb's
  diamonds, nes2000) is traced as ``bmm(X.expand(C, N, K), b)``, and the gradient's product
  as ``bmm(X.T.expand(C, K, N), g)``. Inductor computes a ``bmm`` whose matrices have one
  column as a reduction per output row (``C * N`` dot products of length ``K``) and does not
  see that the expanded operand is the same matrix ``C`` times: the diamonds gradient (N = 5000,
  K = 24, 4 chains) took 1.1 ms compiled, against 0.12 ms as one ``mm`` of the shared matrix
  with all chains' columns (JAX: 0.25 ms). The result keeps each chain's rows contiguous
  along the data, the layout the elementwise likelihood after it vectorizes best.

The rewrite is exact up to the order of floating-point sums inside the product (BLAS).
"""

from __future__ import annotations

import torch

__all__ = ["DECOMPOSITIONS"]

_aten = torch.ops.aten


def _shared(x) -> bool:
    """Whether the batch dimension of the 3-d ``x`` repeats one matrix (stride 0)."""
    return x.shape[0] > 1 and x.stride(0) == 0


def _bmm(a, b):
    """``bmm(a, b)`` as one ``mm`` when ``a`` or ``b`` repeats one matrix over the batch."""
    batch, n, k = a.shape
    m = b.shape[2]
    if _shared(a) and not _shared(b):
        # (batch * m, k) @ (k, n): every batch's m columns as rows, each result row along n
        out = torch.mm(b.transpose(1, 2).reshape(batch * m, k), a[0].t())
        return out.reshape(batch, m, n).transpose(1, 2)
    if _shared(b) and not _shared(a):
        return torch.mm(a.reshape(batch * n, k), b[0]).reshape(batch, n, m)
    return NotImplemented


#: the table given to every ``make_fx`` trace of the torch backend
DECOMPOSITIONS = {_aten.bmm.default: _bmm}
