"""torch compiles an eager ``while_loop`` called often (``ppl.backends.torch.loops``): its
closures' tensors become graph inputs, nested loops become nested loop operators, and the
compiled loop must give what independent NumPy references give: loops against NumPy loops
with new closure values at every call (the graph must not have baked the first ones in), and
whole NUTS transitions (every doubling and leaf in one graph) against the reference transition
to 1e-8. The counter-based draws must give the same bits eagerly and inside a compiled graph.

The rest of the suite runs with loop compilation off (``tests/conftest.py``)."""

import numpy as np
import pytest
import test_nuts_exact

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
    original = test_nuts_exact.build_transition

    def build(**kw):
        transition = original(**kw)

        def run(state, momentum, forward, uniform_fn, *rest):
            table = uniform_fn.__closure__[0].cell_contents
            return transition(state, momentum, forward,
                              lambda i: ops.take(table, ops.reshape(i, (1,)), axis=1)[:, 0],
                              *rest)
        return run

    monkeypatch.setattr(test_nuts_exact, "build_transition", build)
    for _ in range(2):
        test_nuts_exact.test_transition_matches_reference(backend, case)
    assert _compiled_loops() >= 1
