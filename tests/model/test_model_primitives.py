"""sample / deterministic / factor / plate on every backend: shapes, broadcasting, errors, and
the context-local handler stack (two threads running models at once)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from conftest import assert_close, to_numpy

import ppl
import ppl.distributions as dist
from ppl import handlers, ops
from ppl.inference import log_density
from ppl.primitives import CondIndepStackFrame

pytestmark = pytest.mark.dtypes("float64")


def _shape_of(model, *args):
    tr = handlers.trace(handlers.seed(model, rng_seed=0)).get_trace(*args)
    return {n: ops.shape(s["value"]) for n, s in tr.items() if s["type"] == "sample"}, tr


def test_sample_without_seed_explains_what_to_do(backend):
    with pytest.raises(ValueError, match=r"ppl\.handlers\.seed\(model, rng_seed=0\)"):
        ppl.sample("x", dist.Normal(0.0, 1.0))
    # observed sites and deterministic values need no key
    obs = ppl.sample("y", dist.Normal(0.0, 1.0), obs=[1.0, 2.0])
    assert ops.is_array(obs)
    assert_close(obs, np.array([1.0, 2.0]))
    assert ppl.deterministic("d", 3.0) == 3.0
    # an explicit rng_key works without a handler
    assert ops.shape(ppl.sample("z", dist.Normal(0.0, 1.0), rng_key=ppl.random.key(0),
                                sample_shape=(2,))) == (2,)


def test_sample_argument_errors(backend):
    with pytest.raises(TypeError, match="must be a distribution"):
        ppl.sample("x", 1.0)
    with pytest.raises(TypeError, match="non-empty string"):
        ppl.sample(3, dist.Normal(0.0, 1.0))


def test_plate_shapes_and_dims(backend):
    def model():
        with ppl.plate("a", 3) as idx:
            assert_close(idx, np.arange(3))
            x = ppl.sample("x", dist.Normal(0.0, 1.0))
            with ppl.plate("b", 4):
                y = ppl.sample("y", dist.Normal(0.0, 1.0))
                v = ppl.sample("v", dist.Normal(ops.zeros(2), 1.0).to_event(1))
        with ppl.plate("c", 2, dim=-2), ppl.plate("d", 5):
            z = ppl.sample("z", dist.Normal(ops.zeros((2, 1)), 1.0))  # (2, 1) -> (2, 5)
        w = ppl.sample("w", dist.Normal(0.0, 1.0), sample_shape=(6,))
        return x, y, v, z, w

    shapes, tr = _shape_of(model)
    assert shapes == {"x": (3,), "y": (4, 3), "v": (4, 3, 2), "z": (2, 5), "w": (6,)}
    assert tr["y"]["cond_indep_stack"] == [CondIndepStackFrame("b", -2, 4),
                                           CondIndepStackFrame("a", -1, 3)]
    assert tr["z"]["fn"].batch_shape == (2, 5)
    assert tr["v"]["fn"].event_shape == (2,)


def test_plate_batch_shape_conflict(backend):
    def bad():
        with ppl.plate("N", 3):
            ppl.sample("x", dist.Normal(ops.zeros(4), 1.0))

    with pytest.raises(ValueError, match=r"'x' has batch shape \(4,\).*plate 'N' of size 3"):
        handlers.seed(bad, rng_seed=0)()

    def bad_obs():
        with ppl.plate("N", 3):
            ppl.sample("y", dist.Normal(0.0, 1.0), obs=np.zeros(4))

    with pytest.raises(ValueError, match="Observed site 'y'.*plate 'N' there has size 3"):
        bad_obs()


def test_plate_argument_errors(backend):
    with pytest.raises(ValueError, match="dim must be a negative integer"):
        ppl.plate("N", 3, dim=0)
    with pytest.raises(ValueError, match="size must be >= 1"):
        ppl.plate("N", 0)
    with pytest.raises(TypeError, match="size must be a positive integer"):
        ppl.plate("N", "three")
    with pytest.raises(ValueError, match="larger than size"):
        ppl.plate("N", 10, subsample_size=20)
    with pytest.raises(ValueError, match="subsample must be a 1-d"):
        ppl.plate("N", 10, subsample=[[1]])
    with pytest.raises(ValueError, match="already active"):
        with ppl.plate("N", 3), ppl.plate("N", 3):
            pass
    with pytest.raises(ValueError, match="already used by the enclosing plate 'A'"):
        with ppl.plate("A", 3, dim=-1), ppl.plate("B", 2, dim=-1):
            pass


def test_factor(backend):
    def model():
        ppl.factor("f", -1.0)
        with ppl.plate("N", 3):
            ppl.factor("g", ops.asarray([0.5, 1.0, 2.0]))
            ppl.factor("h", -0.25)  # a scalar factor counts once per plate element

    lp, tr = log_density(model, (), {}, {})
    assert_close(lp, -1.0 + 3.5 - 0.75)
    assert tr["f"]["type"] == "sample" and tr["f"]["is_observed"]


def test_deterministic_is_recorded(backend):
    def model():
        x = ppl.sample("x", dist.Normal(0.0, 1.0))
        return ppl.deterministic("x2", x * 2.0)

    tr = handlers.trace(handlers.seed(model, rng_seed=0)).get_trace()
    assert_close(tr["x2"]["value"], 2.0 * to_numpy(tr["x"]["value"]))


def test_handler_stack_is_thread_local(backend):
    """Two threads run traced, seeded models at the same time; each sees only its own sites
    (the stack is a contextvars variable)."""
    barrier = threading.Barrier(2, timeout=60)
    results, errors = {}, []

    def worker(i):
        try:
            with ppl.use_backend(backend.name, dtype=backend.dtype):
                with handlers.trace() as tr, handlers.seed(rng_seed=i):
                    barrier.wait()   # both stacks are built before either samples
                    ppl.sample(f"x{i}", dist.Normal(0.0, 1.0))
                    barrier.wait()
                    ppl.sample(f"y{i}", dist.Normal(0.0, 1.0))
                results[i] = list(tr)
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert results == {0: ["x0", "y0"], 1: ["x1", "y1"]}
    assert ppl._messenger.get_stack() == ()
