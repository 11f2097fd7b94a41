"""torch compiles an eager ``while_loop`` called often (``ppl.backends.torch.loops``): its
closures' tensors become graph inputs, nested loops become nested loop operators, and the
compiled loop must give what independent NumPy references give: loops against NumPy loops
with new closure values at every call (the graph must not have baked the first ones in), and
whole NUTS transitions (every doubling and leaf in one graph) against the reference transition
to 1e-8. The counter-based draws must give the same bits eagerly and inside a compiled graph.
A ``scan`` inside a compiled loop becomes torch's scan operator (``ppl.backends.torch.scans``):
its gradients against finite differences of NumPy loops, and a graph that does not grow with the
scan's length.

The rest of the suite runs with loop compilation off (``tests/conftest.py``)."""

import dataclasses

import numpy as np
import pytest
import test_nuts_exact
from conftest import assert_close, fd_grad

from ppl import ops
from ppl import random as prandom

pytestmark = [pytest.mark.backends("torch"), pytest.mark.dtypes("float64")]


@pytest.fixture(autouse=True)
def _compile_at_once(monkeypatch):
    from ppl.backends.torch import loops
    monkeypatch.setenv("PPL_TORCH_LOOP_AFTER", "1")
    monkeypatch.setenv("PPL_TORCH_LOOP_WORKER", "0")     # compile here, now
    monkeypatch.setenv("PPL_TORCH_JIT", "inductor")
    monkeypatch.setattr(loops, "_cache", {})


def _compiled_loops():
    from ppl.backends.torch import loops
    return sum(e.graph is not None for e in loops._cache.values())


def _newton_sqrt(a, tol):
    """sqrt(a) by Newton's method, elementwise, until every element has converged: the loop's
    closure holds ``a`` and ``tol``."""
    def cond(c):
        x, n = c
        return ops.any(ops.abs(x * x - a) > tol) & (n < 100)

    def body(c):
        x, n = c
        return 0.5 * (x + a / x), n + 1

    return ops.while_loop(cond, body, (ops.ones_like(a), ops.zeros((), "int64")))


def test_closure_tensors_are_inputs(backend):
    rng = np.random.default_rng(0)
    for call in range(3):
        a = rng.uniform(0.5, 50.0 * (call + 1), size=(5,))
        x, n = _newton_sqrt(ops.asarray(a), 1e-10)
        np.testing.assert_allclose(ops.to_numpy(x), np.sqrt(a), rtol=1e-10)
        # the same number of steps as Newton's method run in NumPy
        ref, k = np.ones_like(a), 0
        while np.any(np.abs(ref * ref - a) > 1e-10) and k < 100:
            ref, k = 0.5 * (ref + a / ref), k + 1
        assert int(ops.to_numpy(n)) == k
    assert _compiled_loops() == 1


@dataclasses.dataclass(frozen=True)
class _Scale:
    """A value object (equality and hash by value) in a loop's closure."""
    k: float


def test_new_pieces_of_the_same_code_reuse_the_graph(backend):
    """Each call builds a new ``jit`` piece closing over new data and a new (equal or not)
    value object, as each ``MCMC.run`` builds its kernel's pieces anew: equal code and values
    reuse the compiled loop (one graph per distinct value), and every result is the root of
    that call's data, so neither the data nor the value was baked into a graph."""
    from ppl.backends.torch import loops

    def root(a_np, scale):
        a = ops.asarray(a_np)
        newton = ops.jit(lambda x: 0.5 * (x + scale.k * a / x))
        return ops.while_loop(lambda x: ops.any(ops.abs(x * x - scale.k * a) > 1e-10),
                              lambda x: newton(x), ops.ones_like(a))

    rng = np.random.default_rng(1)
    for k in (1.0, 1.0, 4.0, 1.0, 4.0):
        a = rng.uniform(0.5, 50.0, size=(5,))
        got = ops.to_numpy(root(a, _Scale(k)))
        np.testing.assert_allclose(got, np.sqrt(k * a), rtol=1e-10)
    assert _compiled_loops() == 2
    assert len(loops._cache) == 2


def test_data_beside_numbers_are_inputs(backend):
    """A closure holding a container of tensors and Python numbers (a model's data:
    ``{"N": 5, "y": array}``), new at every call as every ``MCMC.run`` passes its data: the
    tensors are graph inputs and the numbers part of the loop's key, so equal numbers reuse
    the graph (before, such a container was keyed by identity: a new graph per call) and every
    result is that call's root."""
    from ppl.backends.torch import loops

    def root(data):
        def target(x):
            return data["scale"] * data["y"] + 0 * x

        return ops.while_loop(lambda x: ops.any(ops.abs(x * x - target(x)) > 1e-10),
                              lambda x: 0.5 * (x + target(x) / x), ops.ones_like(data["y"]))

    rng = np.random.default_rng(2)
    for scale in (1.0, 1.0, 3.0, 1.0):
        y = rng.uniform(0.5, 50.0, size=(5,))
        got = ops.to_numpy(root({"N": 5, "scale": scale, "y": ops.asarray(y)}))
        np.testing.assert_allclose(got, np.sqrt(scale * y), rtol=1e-10)
    assert _compiled_loops() == 2
    assert len(loops._cache) == 2


def test_a_loop_compiled_before_compiles_at_its_first_call(backend, monkeypatch, tmp_path):
    """``PPL_TORCH_LOOP_AFTER=3``: a new loop runs eagerly twice and compiles at its third
    call; in a later process (an empty loop cache, the same cache folder) the same loop
    compiles at its first call, and a loop of other code still waits."""
    from ppl.backends.torch import compile_worker, loops

    monkeypatch.setenv("PPL_TORCH_LOOP_AFTER", "3")
    monkeypatch.setattr(compile_worker, "_dir", lambda: str(tmp_path))
    a = ops.asarray([2.0, 3.0, 5.0])
    for call in range(3):
        x, _ = _newton_sqrt(a, 1e-10)
        np.testing.assert_allclose(ops.to_numpy(x), np.sqrt([2.0, 3.0, 5.0]), rtol=1e-10)
        assert _compiled_loops() == (call == 2)
    monkeypatch.setattr(loops, "_cache", {})
    x, _ = _newton_sqrt(ops.asarray([7.0, 11.0, 13.0]), 1e-10)
    np.testing.assert_allclose(ops.to_numpy(x), np.sqrt([7.0, 11.0, 13.0]), rtol=1e-10)
    assert _compiled_loops() == 1
    x = ops.while_loop(lambda c: c < 10.0, lambda c: c + 1.5, ops.zeros(()))
    assert float(ops.to_numpy(x)) == 10.5 and _compiled_loops() == 1


def test_nested_loops_and_counter_draws(backend):
    """An outer loop whose body runs an inner loop and draws with a key from its closure: the
    sum of ``m`` uniforms of row ``i`` for ``i < k``, against the draws made one by one."""
    key = prandom.key(7)

    def total(k, m):
        def outer_body(c):
            i, acc = c

            def inner_body(d):
                j, s = d
                u = prandom.uniform(prandom.fold_in(prandom.fold_in(key, i), j), (3,))
                return j + 1, s + u

            _, s = ops.while_loop(lambda d: d[0] < m, inner_body,
                                  (ops.zeros((), "int64"), ops.zeros((3,))))
            return i + 1, acc + s

        return ops.while_loop(lambda c: c[0] < k, outer_body,
                              (ops.zeros((), "int64"), ops.zeros((3,))))[1]

    for k, m in ((3, 4), (2, 5)):
        want = sum(ops.to_numpy(prandom.uniform(prandom.fold_in(prandom.fold_in(key, i), j),
                                                (3,)))
                   for i in range(k) for j in range(m))
        got = ops.to_numpy(total(ops.asarray(k, "int64"), ops.asarray(m, "int64")))
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert _compiled_loops() >= 1


@pytest.mark.parametrize("case", test_nuts_exact.CASES[3:5],
                         ids=[c[0] for c in test_nuts_exact.CASES[3:5]])
def test_compiled_transition_matches_reference(backend, case, monkeypatch):
    """test_nuts_exact's check, with the leaves' uniforms read from the table by an op (the
    sampler's own draws are counter-based ops; ``table[:, i]`` reads ``i`` in Python, which
    keeps a loop eager), run twice: eager, then through the compiled loop."""
    monkeypatch.setattr(test_nuts_exact, "ROW",
                        lambda table, i: ops.take(table, ops.reshape(i, (1,)), axis=1)[:, 0])
    for _ in range(2):
        test_nuts_exact.test_transition_matches_reference(backend, case)
    assert _compiled_loops() >= 1


# ------------------------------------------------------------------ scans in compiled loops
def _ar1_np(p, y):
    total, prev = 0.0, 0.0
    for yt in y:
        total += -0.5 * ((yt - p[0] * prev) / np.exp(p[1])) ** 2 - p[1]
        prev = yt
    return total


def _ar1(p, y):
    """AR(1) log-likelihood: a pytree carry, ``ys`` summed in."""
    def step(c, yt):
        total, prev = c
        total = total - 0.5 * ((yt - p[0] * prev) / ops.exp(p[1])) ** 2 - p[1]
        return (total, yt), total

    (total, _), path = ops.scan(step, (ops.zeros(()), ops.zeros(())), y)
    return total + 0.0 * ops.sum(path)


def _reverse_np(p, y):
    c, s = 1.0, 0.0
    for yt in y[::-1]:
        s += c * c
        c = np.tanh(c * p[0] + yt * p[1])
    return c + 0.1 * s


def _reverse(p, y):
    c, ys = ops.scan(lambda c, yt: (ops.tanh(c * p[0] + yt * p[1]), c * c), ops.ones(()), y,
                     reverse=True)
    return c + 0.1 * ops.sum(ys)


def _length_np(p, y):
    c = np.array([1.0, 0.5])
    for _ in range(len(y)):
        c = np.array([np.sin(c[1] * p[0]) + p[1], c[0] * 0.9])
    return c.sum() + y.sum()


def _length(p, y):
    def step(c, _):
        return ops.stack([ops.sin(c[1] * p[0]) + p[1], c[0] * 0.9]), None

    c, none = ops.scan(step, ops.asarray([1.0, 0.5]), length=ops.shape(y)[0])
    assert none is None
    return ops.sum(c) + ops.sum(y)


SCANS = [("ar1", _ar1, _ar1_np), ("reverse", _reverse, _reverse_np),
         ("length", _length, _length_np)]


@pytest.mark.parametrize("unroll", ["1", "4"], ids=["op", "unroll4"])
@pytest.mark.parametrize("name, fun, ref", SCANS, ids=[c[0] for c in SCANS])
def test_scan_gradients_in_compiled_loop(backend, name, fun, ref, unroll, monkeypatch):
    """Three gradient steps of ``vmap(value_and_grad)`` of a scan (as NUTS takes them), in a
    compiled ``while_loop``, over 3 chains and 11 steps (4 per iteration: two iterations and
    three steps left over), against finite differences of the NumPy loop."""
    monkeypatch.setenv("PPL_TORCH_SCAN_UNROLL", unroll)
    vg = ops.vmap(ops.value_and_grad(fun), in_axes=(0, None))

    def descend(params, y):
        def body(c):
            k, p, _ = c
            v, g = vg(p, y)
            return k + 1, p + 0.01 * g, v
        return ops.while_loop(lambda c: c[0] < 3, body,
                              (ops.zeros((), "int64"), params, ops.zeros((3,))))

    y = np.cumsum(np.random.default_rng(3).normal(size=11)) * 0.3
    start = np.array([[0.6, -0.2], [0.1, 0.3], [-0.4, 0.0]])
    for _ in range(2):          # the second call runs the compiled loop on new closures
        _, got, last = descend(ops.asarray(start), ops.asarray(y))
        p = start.copy()
        for _ in range(3):
            values = np.array([ref(row, y) for row in p])
            p = p + 0.01 * np.stack([fd_grad(lambda q: ref(q, y), row) for row in p])
        assert_close(got, p, kind="grad", err_msg=name)
        assert_close(last, values, err_msg=name)
        start = start * 0.5
    assert _compiled_loops() == 1


def _traced_nodes(length, monkeypatch, mode):
    """Nodes of the graph of ``vmap(value_and_grad)`` of the AR(1) scan over ``length`` steps,
    traced as a loop's body is (``loops.loop_tracing()``)."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    from ppl.backends.torch import loops

    monkeypatch.setenv("PPL_TORCH_SCAN", mode)
    monkeypatch.setattr(loops._local, "capturing", True, raising=False)
    vg = ops.vmap(ops.value_and_grad(_ar1), in_axes=(0, None))
    gm = make_fx(vg, tracing_mode="fake", _allow_non_fake_inputs=True)(
        ops.zeros((4, 2)), ops.zeros((length,)))
    return sum(len(m.graph.nodes) for m in gm.modules() if isinstance(m, torch.fx.GraphModule))


def test_traced_scan_does_not_grow_with_length(backend, monkeypatch):
    """A scan of 64 steps and one of 640 (16 steps per iteration) trace to graphs of one size;
    unrolled, the longer one is ten times longer."""
    assert _traced_nodes(64, monkeypatch, "op") == _traced_nodes(640, monkeypatch, "op")
    assert _traced_nodes(640, monkeypatch, "unroll") > 5 * _traced_nodes(64, monkeypatch, "op")


def _copied_bytes(fun, least):
    """``fun()`` and the bytes of the real (not fake) tensors of at least ``least`` bytes
    that torch ops made while it ran, views and allocations without values (``empty*``)
    aside: a copy of a large input (a ``clone``, a ``contiguous``, a ``to``) counts, a
    ``detach`` or a new empty tensor the trace only reads the shape of does not."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    class Copies(TorchDispatchMode):
        made = 0
        supports_higher_order_operators = True    # (the loop operators: passed on)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if isinstance(func, torch._ops.OpOverload) and \
                    not func.__name__.startswith(("empty", "new_empty")):
                real = [t for t in tree_leaves(out) if type(t) is torch.Tensor
                        and not isinstance(t, FakeTensor) and t.device.type != "meta"]
                views = {t.untyped_storage().data_ptr() for t in tree_leaves((args, kwargs))
                         if type(t) is torch.Tensor and t.device.type != "meta"}
                Copies.made += sum(t.nbytes for t in real if t.nbytes >= least
                                   and t.untyped_storage().data_ptr() not in views)
            return out

    with Copies():
        result = fun()
    return result, Copies.made


@pytest.mark.parametrize("kind", ["while_loop", "scan"])
@pytest.mark.parametrize("where", ["closure", "carry"])
def test_loop_trace_does_not_copy_its_inputs(backend, kind, where):
    """A loop is traced with stand-ins for its inputs (fake tensors made from empty ones):
    the trace must not copy them. They were clones, so the model's data, a closure tensor of
    every NUTS transition and chunk of iterations, was copied at every trace (38 MB of peak
    memory for a logistic regression at N = 1e5, D = 100, on top of the data). A 2 MiB
    tensor in the loop's closure (the data) or in its carry: no op of the trace makes a
    tensor that large (everything else here is a few numbers)."""
    import torch

    from ppl.backends.torch import closures, loops
    from ppl.backends.torch import loop_calls as calls

    data = torch.linspace(0.0, 1.0, 1 << 18, dtype=torch.float64)        # 2 MiB
    count = torch.zeros((), dtype=torch.int64)
    if where == "closure":
        carry = (count, torch.zeros((), dtype=torch.float64))

        def step(c):
            return c[0] + 1, c[1] + data.sum()
    else:
        carry = (count, data)

        def step(c):
            return c[0] + 1, c[1] * 0.5

    if kind == "while_loop":
        call = calls.WhileCall(lambda c: c[0] < 3, step, carry, None)
    else:
        call = calls.ScanCall(lambda c, x: (step(c), x * 2.0), carry,
                              torch.arange(3, dtype=torch.float64), None)
    w = closures.walk_functions(call.functions)
    assert any(t is data for t in call.leaves + w.tensors)     # a graph input
    (gm, consts), made = _copied_bytes(lambda: loops._trace(call, w), data.nbytes)
    assert made == 0
    assert not any(c.nbytes >= data.nbytes for c in consts)      # not taken in as a constant
    inputs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    assert len(inputs) == len(call.leaves) + len(w.tensors) + len(consts)
