"""A model's data given as NumPy arrays, as NumPyro users pass them. Where the backend's arrays
take NumPy operands (JAX, TensorFlow, numpy) the data stay NumPy arrays, which a model may read
in Python, as in NumPyro; on torch they become tensors (a latent times a NumPy array used to
fail), giving the draws of tensor data. Programs are reused by a new ``MCMC(NUTS(model))`` of the
same settings, on the backend's arrays of the same shapes or NumPy data of the same contents."""

import warnings

import numpy as np
import pytest

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.inference import MCMC, NUTS, Predictive, log_density
from ppl.inference import programs as programs_module


def new_regression():
    """A new model function (programs are cached per model)."""
    def regression(x, group, y=None):
        a = ppl.sample("a", dist.Normal(0.0, 1.0).expand([2]).to_event(1))
        b = ppl.sample("b", dist.Normal(0.0, 1.0))
        with ppl.plate("N", x.shape[0]):
            return ppl.sample("y", dist.Normal(a[group] + b * x, 1.0), obs=y)
    return regression


regression = new_regression()


def _data(seed, n=12):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)                              # float64, whatever the backend's dtype
    group = rng.integers(0, 2, size=n)                  # int64 indices
    return x, group, 1.0 + 2.0 * x + rng.normal(size=n)


def _run(x, group, y, model=regression, **kernel_kw):
    mcmc = MCMC(NUTS(model, **kernel_kw), num_warmup=40, num_samples=30, num_chains=2,
                progress_bar=False)
    mcmc.run(5, x, group, y=y)
    return mcmc


def _draws(mcmc):
    return {k: ops.to_numpy(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_numpy_data_on_torch_samples_as_tensors(backend):
    """Where the backend's arrays take no NumPy operands (torch), MCMC, prior and posterior
    ``Predictive`` and ``log_density`` of a model whose latent values meet NumPy data in
    arithmetic (``b * x``) and indexing (``a[group]``) give what they give on the same data
    as ``ops.asarray`` arrays, bit for bit."""
    if backend.numpy_operands:
        pytest.skip("NumPy data stay NumPy arrays (test_a_model_may_read_its_numpy_data)")
    x, group, y = _data(0)
    as_ops = tuple(ops.asarray(v) for v in (x, group, y))
    from_numpy, from_ops = _run(x, group, y), _run(*as_ops)
    for name, value in _draws(from_ops).items():
        np.testing.assert_array_equal(_draws(from_numpy)[name], value, err_msg=name)
    assert _draws(from_numpy)["a"].shape == (2, 30, 2)

    prior = Predictive(regression, num_samples=5)
    posterior = Predictive(regression, from_ops.get_samples())
    for predictive in (prior, posterior):
        got, want = predictive(1, x, group), predictive(1, *as_ops[:2])
        assert set(got) == set(want)
        for name in want:
            np.testing.assert_array_equal(ops.to_numpy(got[name]), ops.to_numpy(want[name]))

    params = {"a": ops.asarray([0.5, -0.5]), "b": ops.asarray(1.5)}
    lp_numpy, _ = log_density(regression, (x, group), {"y": y}, params)
    lp_ops, _ = log_density(regression, as_ops[:2], {"y": as_ops[2]}, params)
    np.testing.assert_array_equal(ops.to_numpy(lp_numpy), ops.to_numpy(lp_ops))


def linear(X, y=None):
    """A linear regression written as NumPyro users write it, ``X @ beta``."""
    beta = ppl.sample("beta", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    with ppl.plate("N", X.shape[0]):
        return ppl.sample("y", dist.Normal(X @ beta, 1.0), obs=y)


def test_handlers_take_numpy_data(backend):
    """A model run under handlers outside MCMC (``trace(seed(model, 0)).get_trace(X, y)``, as
    NumPyro users debug a model) with NumPy data gives, on every backend, what it gives with the
    data as the backend's arrays: on torch ``X @ beta`` with a NumPy ``X`` used to fail in
    NumPy's operator. The trace's log density is checked against SciPy."""
    from scipy import stats

    from ppl import handlers
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(12, 3)), rng.normal(size=12)

    def traced(*args, **kwargs):
        tr = handlers.trace(handlers.seed(linear, rng_seed=3)).get_trace(*args, **kwargs)
        return {name: ops.to_numpy(site["value"]) for name, site in tr.items()}, tr

    got, tr = traced(X, y=y)
    want, _ = traced(ops.asarray(X), y=ops.asarray(y))
    assert {"beta", "y"} <= set(got)
    tol = 1e-4 if backend.dtype == "float32" else 1e-10
    for name in want:       # (the numpy backend keeps float64 data in a float32 run)
        np.testing.assert_allclose(got[name], want[name], rtol=tol, err_msg=name)
    ref = stats.norm.logpdf(y, X @ got["beta"].astype(np.float64), 1.0).sum()
    np.testing.assert_allclose(float(ops.sum(tr["y"]["fn"].log_prob(tr["y"]["value"]))),
                               ref, rtol=tol)
    # the data reach the model through an inner handler's call under an outer context
    with handlers.seed(rng_seed=3):
        out = handlers.trace(linear).get_trace(X, y=y)
    np.testing.assert_allclose(ops.to_numpy(out["beta"]["value"]), got["beta"], rtol=tol)


def groups(group, y=None):
    """Group means with a N(0, 1) prior and unit noise; the number of groups read from the
    data in Python, as NumPyro models may."""
    num_groups = int(group.max()) + 1
    with ppl.plate("G", num_groups):
        a = ppl.sample("a", dist.Normal(0.0, 1.0))
    with ppl.plate("N", group.shape[0]):
        ppl.sample("y", dist.Normal(a[group], 1.0), obs=y)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.dtypes("float32")
def test_a_model_may_read_its_numpy_data(backend):
    """A model reading its NumPy data in Python samples on every backend, and its posterior
    is the conjugate one: a_g ~ N(sum of group g's y / (n_g + 1), 1 / (n_g + 1))."""
    group = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 2])
    y = np.array([0.3, 1.1, 0.7, -1.2, -0.4, 2.0, 1.5, 2.4, 1.9, 2.2])
    mcmc = MCMC(NUTS(groups), num_warmup=300, num_samples=500, num_chains=2, progress_bar=False)
    mcmc.run(0, group, y=y)
    draws = ops.to_numpy(mcmc.get_samples()["a"])
    n = np.bincount(group)
    mean, sd = np.bincount(group, weights=y) / (n + 1), 1 / np.sqrt(n + 1)
    assert draws.shape == (1000, 3)
    # ~4 Monte Carlo standard errors at ESS >= 250 of the 1000 draws
    np.testing.assert_array_less(np.abs(draws.mean(0) - mean), 4 * sd / np.sqrt(250))
    np.testing.assert_allclose(draws.std(0), sd, rtol=0.2)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.dtypes("float32")
def test_a_new_kernel_of_the_same_settings_builds_no_new_programs(backend, monkeypatch):
    """Where runs compile (JAX, TensorFlow), a new ``MCMC(NUTS(model))`` with the settings of
    an earlier one builds no new program for new data of the same shapes as the backend's
    arrays, nor for NumPy data of the same contents; other settings, or other NumPy data where
    they are constants of the programs, build one."""
    if not backend.compiles_control_flow:
        pytest.skip("programs are built per run where loops run in Python")
    built = []
    build = programs_module._build_chunk
    monkeypatch.setattr(programs_module, "_build_chunk",
                        lambda *a, **k: built.append(1) or build(*a, **k))
    model = new_regression()
    _run(*map(ops.asarray, _data(1)), model=model)
    _run(*map(ops.asarray, _data(2)), model=model)
    assert len(built) == 1, built
    _run(*map(ops.asarray, _data(3)), model=model, target_accept_prob=0.9)
    assert len(built) == 2, built
    _run(*_data(1), model=model)
    _run(*(v.copy() for v in _data(1)), model=model)
    assert len(built) == 3, built
    _run(*_data(2), model=model)
    assert len(built) == 3 + backend.numpy_operands, built


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.dtypes("float32")
@pytest.mark.backends("jax")
def test_programs_of_models_defined_anew_are_let_go(backend, monkeypatch):
    """Programs close over their model, so a cache keyed weakly on the model never freed them:
    a model defined anew in a loop (a notebook cell run again) kept ~25 MB of programs each on
    JAX for the life of the process. The caches keep the last 8 models run; the most recent
    ones still reuse their programs."""
    cache = programs_module.RecentModels(8)
    monkeypatch.setattr(programs_module, "_CACHE", cache)
    built = []
    build = programs_module._build_chunk
    monkeypatch.setattr(programs_module, "_build_chunk",
                        lambda *a, **k: built.append(1) or build(*a, **k))
    data = tuple(map(ops.asarray, _data(1, n=4)))
    models = [new_regression() for _ in range(10)]
    for model in models:
        MCMC(NUTS(model), num_warmup=3, num_samples=2, progress_bar=False).run(0, *data[:2],
                                                                             y=data[2])
    assert len(cache) == 8 and len(built) == 10
    MCMC(NUTS(models[-1]), num_warmup=3, num_samples=2, progress_bar=False).run(1, *data[:2],
                                                                              y=data[2])
    assert len(built) == 10                        # the last model's programs are still there
    MCMC(NUTS(models[0]), num_warmup=3, num_samples=2, progress_bar=False).run(1, *data[:2],
                                                                             y=data[2])
    assert len(built) == 11 and len(cache) == 8    # the first model's were dropped


def counted_regression(calls):
    """A new regression model that counts its calls."""
    inner = new_regression()

    def model(x, group, y=None):
        calls.append(ops.shape(x))
        return inner(x, group, y=y)
    return model


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.dtypes("float32")
def test_a_later_run_does_not_trace_the_model_again(backend):
    """Where ``eval_shape`` is abstract (JAX), a run's model structure (its sites and their
    shapes) is kept per model and argument structure: a second run on new data of the same
    shapes calls the model not at all (~4-8 ms of tracing per run of eight schools). New
    shapes, or an outer handler, trace it again, and the draws follow the new data."""
    if not backend.abstract_eval_shape:
        pytest.skip("the structure is found by running the model on the data")
    calls = []
    model = counted_regression(calls)
    _run(*map(ops.asarray, _data(1)), model=model)
    first = len(calls)
    assert first > 0
    mcmc = _run(*map(ops.asarray, _data(2)), model=model)
    assert len(calls) == first, calls[first:]
    x, group, y = _data(3, n=40)
    y = y + 5.0                                       # b ~ 2, a ~ 6 now
    mcmc = _run(*map(ops.asarray, (x, group, y)), model=model)
    assert len(calls) > first
    assert abs(float(np.mean(_draws(mcmc)["a"])) - 6.0) < 1.0
    seen = len(calls)
    with ppl.handlers.seed(rng_seed=0):
        _run(*map(ops.asarray, (x, group, y)), model=model)
    assert len(calls) > seen


def masked_mean(y):
    """NumPyro's idiom for missing data: a NumPy mask computed in the model."""
    mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
    with ppl.plate("N", len(y)):
        ppl.sample("y", dist.Normal(mu, 1.0), obs=y, obs_mask=~np.isnan(y))


@pytest.mark.backends("torch")
@pytest.mark.dtypes("float64")
def test_numpy_functions_of_the_data_on_torch(backend):
    """On torch the data are tensors: a NumPy ufunc on them keeps its dtype outside a transform
    (``~np.isnan(y)`` a boolean mask, not torch's uint8 254/255), and inside MCMC's ``grad``,
    where torch cannot hand a tensor to NumPy, the error says what to write instead."""
    from scipy import stats

    from ppl import handlers
    y = np.array([0.3, np.nan, -0.4])
    tr = handlers.trace(handlers.seed(masked_mean, rng_seed=0)).get_trace(y)
    mu = float(ops.to_numpy(tr["mu"]["value"]))
    lp = ops.to_numpy(tr["y_observed"]["fn"].log_prob(tr["y_observed"]["value"]))
    np.testing.assert_allclose(lp[[0, 2]], stats.norm.logpdf(y[[0, 2]], mu, 1.0), rtol=1e-10)
    assert np.isnan(y).sum() == 1 and ops.dtype_of(~np.isnan(ops.asarray(y))) == ops.dtype_of(
        ops.asarray(np.array([True])))
    mcmc = MCMC(NUTS(masked_mean), num_warmup=5, num_samples=5, progress_bar=False)
    with pytest.raises(TypeError, match=r"NumPy function .*\(ops\.isnan\(y\)"):
        mcmc.run(0, y)


def len_of_data(y):
    """NumPyro's idiom: the plate's size as ``len`` of the data."""
    mu = ppl.sample("mu", dist.Normal(0.0, 10.0))
    with ppl.plate("data", len(y)):
        ppl.sample("obs", dist.Normal(mu, 1.0), obs=y)


@pytest.mark.filterwarnings("error::RuntimeWarning")     # no eager fallback of ops.jit
@pytest.mark.dtypes("float64")
def test_len_of_the_backends_data_inside_compiled_programs(backend):
    """``len(y)`` of data given as the backend's arrays, inside the compiled programs: on
    TensorFlow a traced tensor refused ``len``, so the sampler ran eagerly (~100x slower, with a
    warning). The posterior mean of ``mu`` against the conjugate one; ``len`` of a traced scalar
    still raises."""
    y = np.array([0.0, 1.0, 10.0, 11.0, 12.0])
    mcmc = MCMC(NUTS(len_of_data), num_warmup=200, num_samples=400, num_chains=2,
                progress_bar=False)
    mcmc.run(0, ops.asarray(y))
    mu = to_numpy_(mcmc.get_samples()["mu"])
    post_var = 1.0 / (len(y) + 1e-2)
    assert abs(mu.mean() - y.sum() * post_var) < 4 * np.sqrt(post_var / 200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # TensorFlow's jit then runs eagerly
        with pytest.raises(TypeError):
            ops.jit(lambda x: len(x))(ops.asarray(1.0))


def to_numpy_(x):
    return np.asarray(ops.to_numpy(x))
