"""The torch backend's matrix-vector product under ``vmap`` over chains: the layout inductor
compiles well (one ``mm`` of the chains' vectors against the transposed matrix, rows along the
data), also when each chain's vector is a slice of its flat position, and the values NumPy
gives. A per-chain ``bmm`` (what torch traced for a strided slice) compiled to a reduction per
row, ~3x slower per leapfrog on the logistic regression. A model's own ``X @ b[..., None]``
(the ``@`` of torch, not ``ops.matmul``) is written as one ``mm`` by the traces' decomposition
table (``ppl.backends.torch.decompositions``): 9x faster on posteriordb's diamonds."""

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


def _traced_with_table(fn, *args):
    from torch.fx.experimental.proxy_tensor import make_fx

    from ppl.backends.torch.decompositions import DECOMPOSITIONS
    graph = make_fx(fn, decomposition_table=DECOMPOSITIONS, tracing_mode="fake",
                    _allow_non_fake_inputs=True)(*args)
    return graph, [str(n.target) for n in graph.graph.nodes if n.op == "call_function"]


@pytest.mark.parametrize("m", [1, 3])
def test_shared_matrix_product_under_vmap_is_one_mm(backend, m):
    """``X @ B`` with ``X`` the same for every chain and ``B`` each chain's ``(K, m)``, and
    ``B.T @ X.T`` (the shared matrix on the right), with the gradient of a likelihood of
    them: one ``mm`` in the traced graph, and the values and gradients NumPy gives."""
    import torch
    rng = np.random.default_rng(3)
    x_np = rng.standard_normal((40, 6))
    b_np = rng.standard_normal((4, 6, m))
    x = torch.as_tensor(x_np)

    def left(b):
        return torch.func.vmap(torch.func.grad_and_value(
            lambda bc: torch.sum(torch.nn.functional.softplus(x @ bc))))(b)

    def right(b):
        return torch.func.vmap(torch.func.grad_and_value(
            lambda bc: torch.sum(torch.nn.functional.softplus(bc.mT @ x.T))))(b)

    products = x_np @ b_np                                      # (4, 40, m)
    want_value = np.log1p(np.exp(products)).sum(axis=(1, 2))
    want_grad = np.einsum("nk,cnm->ckm", x_np, 1 / (1 + np.exp(-products)))
    for fn in (left, right):
        graph, traced = _traced_with_table(fn, torch.as_tensor(b_np))
        assert "aten.bmm.default" not in traced, traced
        assert "aten.mm.default" in traced, traced
        grad, value = graph(torch.as_tensor(b_np))
        np.testing.assert_allclose(value.numpy(), want_value, rtol=1e-12)
        np.testing.assert_allclose(grad.numpy(), want_grad, rtol=1e-12)


def test_batched_matrices_keep_bmm(backend):
    """Both operands differ per chain: the product stays a ``bmm`` (nothing to share), with
    NumPy's values."""
    import torch
    rng = np.random.default_rng(4)
    a_np, b_np = rng.standard_normal((4, 5, 3)), rng.standard_normal((4, 3, 2))
    graph, traced = _traced_with_table(torch.func.vmap(torch.matmul), torch.as_tensor(a_np),
                                       torch.as_tensor(b_np))
    assert "aten.bmm.default" in traced, traced
    np.testing.assert_allclose(graph(torch.as_tensor(a_np), torch.as_tensor(b_np)).numpy(),
                               a_np @ b_np, rtol=1e-12)
