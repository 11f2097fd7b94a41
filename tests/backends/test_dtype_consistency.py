"""Float64 NumPy data in a run of another float dtype: ops, ``jit``, ``grad``, ``vmap`` and
``scan`` compute with it in the backend's float dtype (the backends convert NumPy operands as
``ops.asarray`` does), so a model whose module-level data are float64 gives float32 draws,
deterministic sites and log densities in a float32 run.

Not on the numpy backend: a NumPy array is its own array type there, and floating arrays pass
through untouched (``backends/common/dtypes.py``), so module-level float64 data stay float64
through its ops (model arguments are cast by ``MCMC.run``). Converting them in every op would
also convert an array made float64 on purpose, and cost ~4 % per gradient.

torch differs where a torch tensor and a NumPy array meet in ``add``/``multiply`` (float64) and
``subtract(array, tensor)`` (an error), and JAX's transforms once its 64-bit mode is on: those
tests run on the other backends.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as st
from conftest import assert_close

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.inference import MCMC, NUTS, log_density

#: float64 data, as models keep them at module level
DATA = np.array([[0.5, 1.5], [-0.3, 2.0]])
SPD = DATA @ DATA.T + np.eye(2)

#: (op, call on the float64 NumPy array d, NumPy reference)
OP_CALLS = [
    ("asarray", lambda d: ops.asarray(d), lambda d: d),
    ("exp", lambda d: ops.exp(d), np.exp),
    ("gammaln", lambda d: ops.gammaln(np.abs(d)), lambda d: sp.gammaln(np.abs(d))),
    ("divide", lambda d: ops.divide(d, 2.0), lambda d: d / 2.0),
    ("logsumexp", lambda d: ops.logsumexp(d, axis=-1),
     lambda d: np.log(np.sum(np.exp(d), axis=-1))),
    ("add", lambda d: ops.add(d, d), lambda d: d + d),
    ("maximum", lambda d: ops.maximum(d, 0.0), lambda d: np.maximum(d, 0.0)),
    ("where", lambda d: ops.where(d > 0, d, 0.0), lambda d: np.where(d > 0, d, 0.0)),
    ("sum", lambda d: ops.sum(d), np.sum),
    ("cumsum", lambda d: ops.cumsum(d, axis=1), lambda d: np.cumsum(d, axis=1)),
    ("reshape", lambda d: ops.reshape(d, (4,)), lambda d: d.reshape(4)),
    ("concat", lambda d: ops.concat([d, d]), lambda d: np.concatenate([d, d])),
    ("stack", lambda d: ops.stack([d, d]), lambda d: np.stack([d, d])),
    ("matmul", lambda d: ops.matmul(d, d), lambda d: d @ d),
    ("einsum", lambda d: ops.einsum("ij,jk->ik", d, d), lambda d: d @ d),
    ("cholesky", lambda d: ops.linalg.cholesky(SPD), lambda d: np.linalg.cholesky(SPD)),
    ("softmax", lambda d: ops.nn.softmax(d), lambda d: sp.softmax(d, axis=-1)),
    ("clip", lambda d: ops.clip(d, 0.0, 1.0), lambda d: np.clip(d, 0.0, 1.0)),
    ("zeros_like", lambda d: ops.zeros_like(d), np.zeros_like),
    ("index_update", lambda d: ops.index_update(d, 0, np.float64(7.0)),
     lambda d: np.concatenate([np.full((1, 2), 7.0), d[1:]])),
    ("sort", lambda d: ops.sort(d), lambda d: np.sort(d)),
    ("take", lambda d: ops.take(d, np.array([1]), axis=0), lambda d: d[[1]]),
    ("float64 scalar", lambda d: ops.exp(np.float64(1.0)), lambda d: np.exp(1.0)),
]

pytestmark = pytest.mark.backends("jax", "torch", "tensorflow")


@pytest.mark.parametrize("op, call, ref", OP_CALLS, ids=[c[0] for c in OP_CALLS])
def test_ops_compute_float64_numpy_data_in_the_float_dtype(backend, dtype, op, call, ref):
    out = call(DATA)
    assert ops.dtype_of(out) == dtype, f"ops.{op} of float64 NumPy data gave {ops.dtype_of(out)}"
    assert_close(out, np.asarray(ref(DATA), dtype=np.float64))


def test_an_explicit_float64_dtype_is_obeyed(backend):
    assert ops.dtype_of(ops.asarray(DATA, dtype="float64")) == "float64"
    assert ops.dtype_of(ops.astype(ops.asarray(DATA), "float64")) == "float64"


@pytest.mark.backends("jax", "tensorflow")
def test_arithmetic_between_an_array_and_float64_numpy_data(backend, dtype):
    """Not on torch: ``add``/``multiply`` of a tensor and a NumPy array give float64 there, and
    ``subtract(array, tensor)`` raises."""
    x = ops.asarray([[1.0, 2.0], [3.0, 4.0]])
    for out, want in ((ops.add(x, DATA), DATA + [[1, 2], [3, 4]]),
                      (ops.multiply(x, DATA), DATA * [[1, 2], [3, 4]]),
                      (ops.subtract(DATA, x), DATA - [[1, 2], [3, 4]])):
        assert ops.dtype_of(out) == dtype
        assert_close(out, want)


@pytest.mark.backends("torch", "tensorflow")
def test_transforms_take_float64_numpy_arguments_in_the_float_dtype(backend, dtype):
    """Not on JAX, where it depends on the process: once a float64 JAX backend has run (JAX's
    64-bit mode is process-wide), ``jit``, ``grad``, ``vmap`` and ``scan`` of a float32 run keep
    float64 NumPy arguments float64."""
    d = DATA[0]
    doubled = ops.jit(lambda x: x * 2.0)
    for _ in range(2):                      # the first call records (numpy) or traces, then not
        out = doubled(d)
        assert ops.dtype_of(out) == dtype
        assert_close(out, 2.0 * d)
    g = ops.grad(lambda x: ops.sum(ops.square(x)))(d)
    assert ops.dtype_of(g) == dtype
    assert_close(g, 2.0 * d)
    v = ops.vmap(ops.square)(d)
    assert ops.dtype_of(v) == dtype
    assert_close(v, d * d)
    carry, ys = ops.scan(lambda c, x: (c + x, c * x), 0.0, d)
    assert ops.dtype_of(carry) == dtype and ops.dtype_of(ys) == dtype
    assert_close(carry, d.sum())
    assert_close(ys, np.concatenate([[0.0], np.cumsum(d)[:-1]]) * d)


#: module-level float64 data of the model below
Y = np.array([0.3, -1.2, 0.8, 2.1, 0.4])


def model():
    mu = ppl.sample("mu", dist.Normal(0.0, 5.0))
    ppl.deterministic("shifted", ops.add(ops.exp(Y), mu))
    ppl.factor("penalty", -0.5 * ops.sum(ops.square(Y)))
    ppl.sample("y", dist.Normal(mu, 1.0), obs=Y)


@pytest.mark.dtypes("float32")
@pytest.mark.filterwarnings("ignore::ppl.inference.run_warnings.SamplingWarning")  # a short run
def test_a_float32_run_with_float64_module_data_is_float32(backend, dtype):
    """log_density, the draws and the deterministic sites (computed from the float64 data:
    float64 on the numpy backend before) all come out float32."""
    lp, tr = log_density(model, (), {}, {"mu": 0.1})
    want = (st.norm(0.0, 5.0).logpdf(0.1) - 0.5 * np.sum(Y ** 2)
            + st.norm(0.1, 1.0).logpdf(Y).sum())
    assert ops.dtype_of(lp) == dtype
    assert_close(lp, np.float64(want))
    assert ops.dtype_of(tr["shifted"]["value"]) == dtype
    mcmc = MCMC(NUTS(model), num_warmup=30, num_samples=20, num_chains=1, progress_bar=False)
    mcmc.run(0)
    samples = mcmc.get_samples()
    assert {k: ops.dtype_of(v) for k, v in samples.items()} == {"mu": dtype, "shifted": dtype}
    mu = ops.to_numpy(samples["mu"]).astype(np.float64)
    assert_close(samples["shifted"], np.exp(Y)[None, :] + mu[:, None])
