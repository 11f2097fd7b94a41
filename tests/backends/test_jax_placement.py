"""JAX's sharded programs place each input on the devices once: a run calls its chunk ~40
times with the same data and key, and placing them again copied them to every device per call
(~1 ms per call on eight schools). Forced host devices need a fresh process."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("jax")

_SCRIPT = """
import numpy as np, jax
import ppl
from ppl import ops
ppl.set_backend("jax", dtype="float64")
assert ops.device_count() == 2, ops.device_count()
puts = []
real_put = jax.device_put
def counting_put(x, *a, **k):
    puts.append(np.shape(x))
    return real_put(x, *a, **k)
jax.device_put = counting_put

def fun(x, y):
    return x * ops.sum(y)

f = ops.shard_chains(fun, 2, in_axes=(0, None), out_axes=0)
x = ops.asarray(np.arange(4.0).reshape(2, 2))
y = ops.asarray(np.array([1.0, 2.0, 3.0]))
y2 = ops.asarray(np.array([1.0, 1.0, 1.0]))
del puts[:]                                     # (ops.asarray puts too)
out = f(x, y)                                   # x split over the devices, y replicated
np.testing.assert_allclose(np.asarray(out), np.arange(4.0).reshape(2, 2) * 6.0)
first = len(puts)
assert first == 2, puts
out = f(out, y)                                 # the carry is placed, y was placed before
np.testing.assert_allclose(np.asarray(out), np.arange(4.0).reshape(2, 2) * 36.0)
assert len(puts) == first, puts
out = f(out, y2)                                # a new array: placed, and its values used
np.testing.assert_allclose(np.asarray(out), np.arange(4.0).reshape(2, 2) * 108.0)
assert len(puts) == first + 1, puts
del y
import gc; gc.collect()
out = f(out, y2)                                # y's copy was dropped with y; y2's kept
assert len(puts) == first + 1, puts
# inside another program (which compiles it as part of itself, without top-level options)
nested = ops.jit(lambda a, b: f(a, b) + 1.0)(x, y2)
np.testing.assert_allclose(np.asarray(nested), np.arange(4.0).reshape(2, 2) * 3.0 + 1.0)
print("ok")
"""


def test_sharded_inputs_are_placed_once():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
               JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("ok")
