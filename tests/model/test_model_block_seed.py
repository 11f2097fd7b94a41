"""Issue 16, point 1: hiding a site from the handlers outside (``block``) must not starve it of
its random key. Every way of hiding, nested handlers, on every backend: the blocked model draws
the same values as the unblocked one (the seed's key stream does not depend on who sees a
site), and the hidden sites are absent from an outer trace."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import to_numpy

import ppl
import ppl.distributions as dist
from ppl import handlers

pytestmark = pytest.mark.dtypes("float32")


def model():
    a = ppl.sample("a", dist.Normal(0.0, 1.0))
    with ppl.plate("N", 3):
        b = ppl.sample("b", dist.Normal(a, 1.0))
    ppl.deterministic("c", a + 1.0)
    return {"a": a, "b": b}


BLOCKS = [
    ("hide", dict(hide=["a"]), ["N", "b", "c"]),
    ("hide-str", dict(hide="b"), ["a", "N", "c"]),
    ("expose", dict(expose=["b"]), ["b"]),
    ("expose_types", dict(expose_types=["deterministic"]), ["c"]),
    ("hide_fn", dict(hide_fn=lambda site: site["type"] == "sample"), ["N", "c"]),
    ("all", {}, []),
]


def _values(out):
    return {k: to_numpy(v) for k, v in out.items()}


@pytest.mark.parametrize("label,kwargs,visible", BLOCKS, ids=[b[0] for b in BLOCKS])
def test_seed_outside_block(backend, label, kwargs, visible):
    reference = _values(handlers.seed(model, rng_seed=3)())
    blocked = handlers.seed(handlers.block(model, **kwargs), rng_seed=3)
    tr = handlers.trace(blocked).get_trace()
    assert list(tr) == visible
    out = _values(blocked())
    for name in reference:
        np.testing.assert_array_equal(out[name], reference[name])
    # context-manager form
    with handlers.seed(rng_seed=3), handlers.block(**kwargs):
        out = _values(model())
    for name in reference:
        np.testing.assert_array_equal(out[name], reference[name])


NESTED = [
    ("block-in-block", lambda m: handlers.block(handlers.block(m, hide=["a"]), hide=["b"])),
    ("trace-inside-block", lambda m: handlers.block(handlers.trace(m))),
    ("condition-inside-block", lambda m: handlers.block(handlers.condition(m, data={"x": 0.5}))),
    ("substitute-outside-block",
     lambda m: handlers.substitute(handlers.block(m, hide=["a"]), data={"a": 9.0})),
    ("scale-mask-around-block",
     lambda m: handlers.scale(handlers.mask(handlers.block(m, expose=["b"]), mask=True), 2.0)),
    ("replay-outside-block", lambda m: handlers.replay(handlers.block(m), trace={})),
]


@pytest.mark.parametrize("label,wrap", NESTED, ids=[n[0] for n in NESTED])
def test_nested_handlers_keep_keys(backend, label, wrap):
    def model2():
        out = model()
        out["x"] = ppl.sample("x", dist.Normal(0.0, 1.0))
        return out

    reference = _values(handlers.seed(model2, rng_seed=5)())
    out = _values(handlers.seed(wrap(model2), rng_seed=5)())
    for name, value in reference.items():
        if label.startswith("condition") and name == "x":
            np.testing.assert_allclose(out[name], 0.5)
        else:  # a hidden site is hidden from the substitute outside it, too
            np.testing.assert_array_equal(out[name], value)


def test_seed_inside_block_and_unseeded_error(backend):
    # a seed inside the block works as before
    out = handlers.block(handlers.seed(model, rng_seed=1))()
    np.testing.assert_array_equal(to_numpy(out["a"]), to_numpy(handlers.seed(model, 1)()["a"]))
    # without any seed the error still names the fix
    with pytest.raises(ValueError, match="seed"):
        handlers.block(model, hide=["a"])()
