"""The torch backend's matrix-vector product under ``vmap`` over chains: the layout inductor
compiles well (one ``mm`` of the chains' vectors against the transposed matrix, rows along the
data), also when each chain's vector is a slice of its flat position, and the values NumPy
gives. A per-chain ``bmm`` (what torch traced for a strided slice) compiled to a reduction per
row, ~3x slower per leapfrog on the logistic regression."""

import numpy as np
import pytest

from ppl import ops

pytestmark = [pytest.mark.backends("torch"), pytest.mark.dtypes("float64")]


def _traced_ops(fn, *args):
    from torch.fx.experimental.proxy_tensor import make_fx
    graph = make_fx(fn)(*args).graph
    return [str(n.target) for n in graph.nodes if n.op == "call_function"]


def test_batched_matrix_vector_product_is_one_mm(backend):
    import torch
    rng = np.random.default_rng(0)
    x = rng.standard_normal((50, 6))
    z = rng.standard_normal((4, 7))          # 4 chains; the vector is z[1:] (a strided slice)
    xt = ops.asarray(x)

    def product(zs):
        return ops.vmap(lambda zc: ops.matmul(xt, zc[1:]))(zs)

    def gradient(zs):
        return ops.vmap(ops.grad(lambda zc: ops.sum(ops.softplus(ops.matmul(xt, zc[1:])))))(zs)

    for fn, want in ((product, z[:, 1:] @ x.T),
                     (gradient, np.concatenate(
                         [np.zeros((4, 1)), (1 / (1 + np.exp(-(z[:, 1:] @ x.T)))) @ x], 1))):
        np.testing.assert_allclose(ops.to_numpy(fn(ops.asarray(z))), want, rtol=1e-12)
        traced = _traced_ops(fn, torch.as_tensor(z))
        assert "aten.bmm.default" not in traced, traced
        assert "aten.mm.default" in traced, traced
