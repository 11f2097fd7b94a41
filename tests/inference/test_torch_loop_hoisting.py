"""Loop-invariant work leaves torch's compiled loops (``ppl.backends.torch.loop_hoisting``): an
expression of the data inside the innermost of two nested loops (the centred columns of a
matrix) runs once, in the graph around both loops, and the loops give what a NumPy loop gives;
small invariant work (below the hoisting threshold) and views stay in the body."""

import numpy as np
import pytest

from ppl import ops

pytestmark = [pytest.mark.backends("torch"), pytest.mark.dtypes("float64")]


@pytest.fixture(autouse=True)
def _compile_at_once(monkeypatch):
    from ppl.backends.torch import loops
    monkeypatch.setenv("PPL_TORCH_LOOP_AFTER", "1")
    monkeypatch.setenv("PPL_TORCH_LOOP_WORKER", "0")
    monkeypatch.setenv("PPL_TORCH_JIT", "inductor")
    monkeypatch.setattr(loops, "_cache", {})


def _nested(data, w, outer_steps=3, inner_steps=4):
    """``x <- x + 0.1 * tanh(centred(data) @ w_x)`` ``inner_steps`` times per outer step, with
    ``w_x = w * (1 + x[:, :1])``; the centring is loop-invariant work of the inner loop."""
    def inner(x):
        def cond(c):
            return c[1] < inner_steps

        def body(c):
            x, j = c
            centred = data - ops.mean(data, axis=0)
            return x + 0.1 * ops.tanh(ops.matmul(centred, w * (1.0 + x[:1]))), j + 1

        return ops.while_loop(cond, body, (x, ops.zeros((), "int64")))[0]

    def cond(c):
        return c[1] < outer_steps

    def body(c):
        return inner(c[0]), c[1] + 1

    return ops.while_loop(cond, body, (ops.zeros(data.shape[:1]), ops.zeros((), "int64")))[0]


def _numpy_nested(data, w, outer_steps=3, inner_steps=4):
    x = np.zeros(data.shape[0])
    centred = data - data.mean(0)
    for _ in range(outer_steps * inner_steps):
        x = x + 0.1 * np.tanh(centred @ (w * (1.0 + x[:1])))
    return x


def test_invariant_work_runs_outside_the_loops(backend, monkeypatch):
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    from ppl.backends.torch import loops
    from ppl.backends.torch.loop_hoisting import hoist_invariants

    rng = np.random.default_rng(0)
    data, w = rng.standard_normal((400, 100)), rng.standard_normal(100) * 0.1
    graphs = []
    monkeypatch.setattr(loops, "hoist_invariants", lambda gm: graphs.append(hoist_invariants(gm))
                        or graphs[-1])
    for call in range(2):       # the second call: the compiled graph, new data
        d = data * (1 + call)
        got = ops.to_numpy(_nested(ops.asarray(d), ops.asarray(w)))
        np.testing.assert_allclose(got, _numpy_nested(d, w), rtol=1e-10, atol=1e-12)
    assert sum(e.graph is not None for e in loops._cache.values()) == 1
    (gm,) = graphs
    codes = {name: m.code for name, m in gm.named_modules() if isinstance(m, torch.fx.GraphModule)}
    assert "aten.mean" in codes[""]                      # once, before the outer loop
    assert not any("aten.mean" in code for name, code in codes.items() if name)

    # small invariant work (a 20-element vector's square) stays in the loop: another input of
    # the loop operator would cost more per iteration than it saves
    def small(v):
        def cond(s, i, v):
            return i < 3

        def body(s, i, v):
            return s + (v * v).sum(), i + 1

        return torch.ops.higher_order.while_loop(
            cond, body, (torch.zeros(()), torch.zeros((), dtype=torch.int64)), (v,))

    traced = make_fx(small, tracing_mode="fake")(torch.ones(20))
    before = {n: m.code for n, m in traced.named_modules() if isinstance(m, torch.fx.GraphModule)}
    after = hoist_invariants(traced)
    assert {n: m.code for n, m in after.named_modules()
            if isinstance(m, torch.fx.GraphModule)} == before
