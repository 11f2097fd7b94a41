"""TensorFlow-backend edge cases a user hit: a second ``MCMC.run`` whose data or chains have
new shapes (it must compile again, as JAX's ``jit`` does, not fall back to running eagerly),
Poisson draws at NaN, negative and infinite rates (TensorFlow's sampler never returns at NaN;
the reference is ``jax.random.poisson``), and the error-function family at infinities, huge
arguments and NaN (TensorFlow's float64 ``erf`` kernel gives NaN there; the reference is
SciPy)."""

import contextvars
import threading
import time
import warnings

import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as st

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.inference import MCMC, NUTS

tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.backends("tensorflow")


# ------------------------------------------------------------------- one trace per shape
def _eager_fallbacks(caught) -> list[str]:
    return [str(w.message) for w in caught if "eagerly" in str(w.message)]


@pytest.mark.dtypes("float32")
def test_jit_traces_each_new_shape_with_its_concrete_size(backend):
    """Model code reads sizes as Python integers (a plate's size): each new shape gets a trace
    of its own with that size, and a shape seen before reuses its trace."""
    traces = []

    def total(x):
        traces.append((tf.executing_eagerly(), ops.shape(x)[0]))
        with ppl.plate("N", ops.shape(x)[0]):
            return ops.sum(x)

    compiled = ops.jit(total)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [float(ops.to_numpy(compiled(ops.asarray(np.ones(n))))) for n in (3, 4, 3)]
    assert results == [3.0, 4.0, 3.0]
    assert traces == [(False, 3), (False, 4)]
    assert not _eager_fallbacks(caught)


@pytest.mark.dtypes("float32")
def test_jit_warns_when_a_function_falls_back_to_eager(backend):
    """A function whose Python reads a tensor's value cannot be traced: it still runs, eagerly,
    and says so, naming itself and the reason."""
    def reads_a_value(x):
        return x * 2.0 if float(ops.to_numpy(x)[0]) > 0 else x

    with pytest.warns(RuntimeWarning, match="reads_a_value.*eagerly") as caught:
        out = ops.jit(reads_a_value)(ops.asarray([1.0, 2.0]))
    np.testing.assert_array_equal(ops.to_numpy(out), [2.0, 4.0])
    assert len(_eager_fallbacks(caught)) == 1


_RERUNS = {                       # name: ((observations, chains) of each run)
    "more_data": ((5, 1), (6, 1), (6, 1)),
    "more_chains": ((8, 1), (8, 2), (8, 2)),
}


@pytest.mark.dtypes("float32")
@pytest.mark.parametrize("name", sorted(_RERUNS))
def test_mcmc_rerun_with_new_shapes_compiles_instead_of_running_eagerly(backend, name,
                                                                       monkeypatch):
    """A second run with new data or chain shapes compiles again (seconds; it used to run the
    whole sampler eagerly: minutes and GBs), and a third with the same shapes as the second
    compiles nothing: the model's Python is not traced again. Eagerly, the sampler's loop
    (``ops.scan`` over iterations) would run from Python: it must only ever be traced."""
    calls = {"traced": 0, "eager scan": 0}

    def model(y):
        calls["traced"] += not tf.executing_eagerly()
        mu = ppl.sample("mu", dist.Normal(0.0, 5.0))
        with ppl.plate("N", ops.shape(y)[0]):
            ppl.sample("y", dist.Normal(mu, 1.0), obs=y)

    def scan(*args, scan=backend.scan, **kwargs):
        calls["eager scan"] += tf.executing_eagerly()
        return scan(*args, **kwargs)

    monkeypatch.setattr(backend, "scan", scan)
    seconds, runs = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n, chains in _RERUNS[name]:
            before, tic = dict(calls), time.perf_counter()
            mcmc = MCMC(NUTS(model), num_warmup=20, num_samples=20, num_chains=chains,
                        progress_bar=False)
            mcmc.run(0, ops.asarray(np.linspace(-1.0, 1.0, n)))
            assert ops.shape(mcmc.get_samples()["mu"]) == (20 * chains,)
            seconds.append(time.perf_counter() - tic)
            runs.append({k: calls[k] - before[k] for k in calls})
    assert not _eager_fallbacks(caught)
    assert all(run["eager scan"] == 0 for run in runs), runs
    assert runs[0]["traced"] > 0 and runs[1]["traced"] > 0, runs
    assert seconds[1] < 60, seconds
    assert runs[2]["traced"] == 0, runs


# --------------------------------------------------------------- Poisson at invalid rates
def _within(seconds, fn):
    """``fn()``, or a failure after ``seconds`` where it does not return (the thread is a
    daemon: a hung TensorFlow op cannot be interrupted, but it does not keep pytest alive)."""
    box, context = [], contextvars.copy_context()      # the active backend included
    worker = threading.Thread(target=lambda: box.append(context.run(fn)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert box, f"no result within {seconds} s"
    return box[0]


#: jax.random.poisson (checked with jax 0.10.2): -1 at NaN and at negative rates (-inf
#: included), 0 at rate 0. At +inf JAX's draws are a mix of 0 and the dtype's largest value;
#: ppl's TensorFlow backend gives that largest value, where JAX saturates for finite rates
#: beyond the dtype's range.
_INVALID_RATES = [(np.nan, -1), (-1.0, -1), (-1e-30, -1), (-np.inf, -1), (0.0, 0),
                  (np.inf, "max")]


@pytest.mark.parametrize("out", [None, "int32", "float32"])
def test_poisson_at_invalid_rates_gives_what_jax_gives(backend, out):
    rates = np.array([r for r, _ in _INVALID_RATES] + [0.5, 3.0, 40.0, 1e4], backend.dtype)
    key = ppl.random.key(7)
    draws = _within(60, lambda: ops.to_numpy(ppl.random.poisson(key, ops.asarray(rates),
                                                                (len(rates),), dtype=out)))
    kinds = np.dtype("int64" if out is None else out)
    top = np.iinfo(kinds).max if kinds.kind == "i" else np.inf
    want = [top if w == "max" else w for _, w in _INVALID_RATES]
    np.testing.assert_array_equal(draws[:len(want)], np.array(want, kinds))
    # the valid rates draw what TensorFlow's sampler draws for them, invalid ones beside them
    # or not (each element has its own Philox stream)
    valid = rates[len(want):]
    alone = _within(60, lambda: ops.to_numpy(ppl.random.poisson(
        key, ops.asarray(np.concatenate([np.zeros(len(want)), valid]).astype(backend.dtype)),
        (len(rates),), dtype=out)))
    np.testing.assert_array_equal(draws[len(want):], alone[len(want):])


@pytest.mark.parametrize("rate", [np.nan, -1.0, -np.inf])
def test_poisson_at_invalid_rates_matches_jax_itself(backend, rate):
    jax = pytest.importorskip("jax")
    want = np.asarray(jax.random.poisson(jax.random.key(0), rate, (4,)))
    got = _within(60, lambda: ops.to_numpy(ppl.random.poisson(ppl.random.key(0), rate, (4,))))
    np.testing.assert_array_equal(got, want.astype(got.dtype))


# ----------------------------------------------------- erf and its family at the extremes
_POINTS = [-np.inf, -1e300, -1e30, -40.0, -6.0, -1.0, 0.0, 1.0, 6.0, 40.0, 1e30, 1e300, np.inf,
           np.nan]

#: ops name: (SciPy value, derivative), float64 references
_FAMILY = {
    "erf": (sp.erf, lambda x: 2.0 / np.sqrt(np.pi) * np.exp(-x * x)),
    "erfc": (sp.erfc, lambda x: -2.0 / np.sqrt(np.pi) * np.exp(-x * x)),
    "ndtr": (sp.ndtr, st.norm.pdf),
    "log_ndtr": (sp.log_ndtr, None),     # its derivative's reference cancels at -1e30
}


def test_error_functions_at_infinities_huge_arguments_and_nan_match_scipy(backend, dtype):
    """Values (and derivatives, where the reference is exact) at +-inf, +-1e300 (inf in
    float32), +-1e30, NaN and a few ordinary points, eagerly and under ``jit``: TensorFlow's
    own float64 ``erf`` kernel (not XLA's) gave NaN from |x| ~ 1e154 on."""
    with np.errstate(over="ignore"):
        x = np.array(_POINTS, dtype)
    x64 = x.astype(np.float64)
    tiny = float(np.finfo(dtype).tiny)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    wrong = []

    def compare(name, mode, kind, got, want):
        bad = ~np.isclose(got, want, rtol=rtol, atol=10 * tiny, equal_nan=True)
        wrong.extend((name, mode, kind, a, g, w) for a, g, w in zip(x[bad], got[bad], want[bad]))

    for name, (ref, dref) in _FAMILY.items():
        fn = getattr(ops, name)
        grad = ops.grad(lambda v, fn=fn: ops.sum(fn(v)))
        with np.errstate(over="ignore"):
            want = ref(x64).astype(dtype)
            dwant = None if dref is None else dref(x64).astype(dtype)
        for mode, wrap in (("eager", lambda f: f), ("jit", ops.jit)):
            compare(name, mode, "value", ops.to_numpy(wrap(fn)(ops.asarray(x))), want)
            if dwant is not None:
                compare(name, mode, "derivative", ops.to_numpy(wrap(grad)(ops.asarray(x))),
                        dwant)
    assert not wrong, wrong


@pytest.mark.backends("tensorflow")
def test_jit_leaves_a_functions_defaults_to_python(backend):
    """``tf.function`` traced a function's default arguments too and could not hash a dataclass
    there, so the function fell back to eager for good (with a warning); as ``jax.jit`` the
    defaults are Python values of the trace."""
    import dataclasses

    @dataclasses.dataclass
    class Settings:
        factor: float = 3.0

    def f(x, settings=Settings()):
        return x * settings.factor

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = ops.jit(f)(ops.ones(3))
    np.testing.assert_allclose(ops.to_numpy(out), [3.0, 3.0, 3.0])


def binomial_counts(n, y=None):
    p = ppl.sample("p", dist.Beta(2.0, 2.0))
    with ppl.plate("N", 6):
        ppl.sample("y", dist.Binomial(n, probs=p), obs=y)


def test_predictive_batches_binomial_draws_quietly(backend, caplog):
    """A Binomial draw batched by ``vectorized_map`` is a loop (TensorFlow has no batching rule
    for its integer draws), which TensorFlow announced once per op: ``Predictive`` of a
    binomial model printed it 8-32 times. The draws still follow their own ``p``."""
    from ppl.inference import Predictive

    p = np.linspace(0.05, 0.95, 40)
    with caplog.at_level("WARNING", logger="tensorflow"):
        y = Predictive(binomial_counts, {"p": ops.asarray(p)})(ppl.random.key(0), 200)["y"]
    assert not [r for r in caplog.records if "while_loop for converting" in r.getMessage()]
    freq = np.asarray(ops.to_numpy(y)).mean(-1) / 200
    assert np.all(np.abs(freq - p) < 4 * np.sqrt(p * (1 - p) / 1200))
