"""``ppl.random``: functional keys and the samplers, on every backend and dtype.

Keys: same key -> same numbers; split / fold_in keys -> different, uncorrelated streams.
Samplers: shape and dtype, then the marginals against SciPy: the sample mean and variance
within 5 standard errors (from the sample size and the distribution's kurtosis) and a
Kolmogorov-Smirnov test (continuous) or chi-square test (discrete) at alpha = 1e-3. Seeds are
fixed, so the tests are deterministic.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
import scipy.stats as st

import ppl
from ppl import ops
from ppl import random as rnd
from ppl.backends import RANDOM_OPS

COVERS = {f"random.{n}" for n in RANDOM_OPS}

N = 20_000
ALPHA = 1e-3
LOGITS = np.log([0.1, 0.2, 0.3, 0.4])


@dataclass(frozen=True)
class RCase:
    """draw(key) -> samples of ``shape``; marginals: (selector, scipy dist) pairs."""

    id: str
    draw: Callable
    shape: tuple
    kind: str                       # "float", "int", "bool", "number" (int or float)
    marginals: list = field(default_factory=list)
    discrete: bool = False


def _col(j):
    return lambda s: s[:, j]


def _all(s):
    return s.reshape(-1)


_MVN_MEAN = np.array([1.0, -2.0, 0.5])
_MVN_COV = np.array([[2.0, 0.6, 0.2], [0.6, 1.0, -0.3], [0.2, -0.3, 0.5]])
_V = np.array([0.3, -1.0, 2.0])

RCASES = [
    RCase("uniform", lambda k: rnd.uniform(k, (N,)), (N,), "float", [(_all, st.uniform())]),
    RCase("uniform-range", lambda k: rnd.uniform(k, (N // 4, 4), minval=-2.0, maxval=3.0),
          (N // 4, 4), "float", [(_all, st.uniform(-2.0, 5.0))]),
    RCase("indexed_uniform", lambda k: rnd.indexed_uniform(k, 7, (N // 4, 4)), (N // 4, 4),
          "float", [(_all, st.uniform())]),
    RCase("normal", lambda k: rnd.normal(k, (N,)), (N,), "float", [(_all, st.norm())]),
    RCase("normal-2d", lambda k: rnd.normal(k, (N // 4, 4)), (N // 4, 4), "float",
          [(_all, st.norm())]),
    RCase("exponential", lambda k: rnd.exponential(k, (N,)), (N,), "float",
          [(_all, st.expon())]),
    RCase("cauchy", lambda k: rnd.cauchy(k, (N,)), (N,), "float", [(_all, st.cauchy())]),
    RCase("laplace", lambda k: rnd.laplace(k, (N,)), (N,), "float", [(_all, st.laplace())]),
    RCase("logistic", lambda k: rnd.logistic(k, (N,)), (N,), "float",
          [(_all, st.logistic())]),
    # one case per gamma-based sampler (each new shape costs JAX a compilation)
    RCase("gamma", lambda k: rnd.gamma(k, ops.asarray([0.3, 1.0, 4.0]), (N, 3)), (N, 3),
          "float", [(_col(j), st.gamma(a)) for j, a in enumerate([0.3, 1.0, 4.0])]),
    RCase("beta", lambda k: rnd.beta(k, ops.asarray([0.7, 3.0]), 0.5, (N, 2)), (N, 2),
          "float", [(_col(0), st.beta(0.7, 0.5)), (_col(1), st.beta(3.0, 0.5))]),
    RCase("dirichlet", lambda k: rnd.dirichlet(k, ops.asarray([1.0, 2.0, 3.0]), (N,)),
          (N, 3), "float", [(_col(j), st.beta(a, 6.0 - a)) for j, a in enumerate([1, 2, 3])]),
    RCase("t", lambda k: rnd.t(k, 7.0, (N,)), (N,), "float", [(_all, st.t(7.0))]),
    RCase("truncated_normal", lambda k: rnd.truncated_normal(k, -1.0, 2.0, (N,)), (N,),
          "float", [(_all, st.truncnorm(-1.0, 2.0))]),
    RCase("truncated_normal-tail", lambda k: rnd.truncated_normal(k, 2.0, np.inf, (N,)), (N,),
          "float", [(_all, st.truncnorm(2.0, np.inf))]),
    RCase("multivariate_normal", lambda k: rnd.multivariate_normal(
        k, ops.asarray(_MVN_MEAN), ops.asarray(_MVN_COV), (N,)), (N, 3), "float",
        [(_col(0), st.norm(1.0, np.sqrt(2.0))),
         (lambda s: s @ _V, st.norm(_V @ _MVN_MEAN, np.sqrt(_V @ _MVN_COV @ _V)))]),
    RCase("poisson", lambda k: rnd.poisson(k, ops.asarray([0.5, 3.5, 40.0]), (N, 3)), (N, 3),
          "int", [(_col(j), st.poisson(m)) for j, m in enumerate([0.5, 3.5, 40.0])],
          discrete=True),
    RCase("binomial", lambda k: rnd.binomial(k, 10.0, 0.3, (N,)), (N,), "number",
          [(_all, st.binom(10, 0.3))], discrete=True),
    RCase("bernoulli", lambda k: rnd.bernoulli(k, 0.3, (N,)), (N,), "bool",
          [(_all, st.bernoulli(0.3))], discrete=True),
    RCase("categorical", lambda k: rnd.categorical(k, ops.asarray(LOGITS), shape=(N,)), (N,),
          "int", [(_all, st.rv_discrete(values=(range(4), np.exp(LOGITS))))], discrete=True),
    RCase("categorical-batched",
          lambda k: rnd.categorical(k, ops.asarray(np.stack([LOGITS, LOGITS[::-1]])),
                                    axis=-1, shape=(N, 2)), (N, 2), "int",
          [(_col(0), st.rv_discrete(values=(range(4), np.exp(LOGITS)))),
           (_col(1), st.rv_discrete(values=(range(4), np.exp(LOGITS[::-1]))))], discrete=True),
    RCase("categorical-axis0",
          lambda k: rnd.categorical(k, ops.asarray(np.stack([LOGITS, LOGITS[::-1]], 1)),
                                    axis=0), (2,), "int"),
    RCase("randint", lambda k: rnd.randint(k, (N,), 2, 7), (N,), "int",
          [(_all, st.randint(2, 7))], discrete=True),
]


def _key(case_id, seed=0):
    return rnd.fold_in(rnd.key(seed), sum(map(ord, case_id)))


def _moments_ok(x, dist, label):
    mean, var, kurt = (float(v) for v in dist.stats(moments="mvk"))
    n = len(x)
    if not np.isfinite(var):
        return
    se = np.sqrt(var / n)
    assert abs(x.mean() - mean) < 5 * se, f"{label}: mean {x.mean():.5g}, expected {mean:.5g}"
    if np.isfinite(kurt):
        se_var = var * np.sqrt((kurt + 2.0) / n)
        assert abs(x.var() - var) < 5 * se_var + 1e-12, (
            f"{label}: variance {x.var():.5g}, expected {var:.5g}")


def _chisquare_p(x, dist):
    lo, hi = int(dist.ppf(1e-7)), int(dist.ppf(1 - 1e-7)) + 1
    ks = np.arange(lo, hi + 1)
    expected = dist.pmf(ks) * len(x)
    counts = np.array([(x == k).sum() for k in ks], dtype=float)
    keep = expected >= 5
    obs_rest, exp_rest = len(x) - counts[keep].sum(), len(x) - expected[keep].sum()
    if exp_rest < 1e-3:  # every bin kept: nothing may fall elsewhere
        assert obs_rest == 0, f"{int(obs_rest)} draws outside the support"
        obs, exp = counts[keep], expected[keep]
    else:
        obs, exp = np.append(counts[keep], obs_rest), np.append(expected[keep], exp_rest)
    return st.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


def _check_kind(x, kind, dtype, label):
    d = ops.dtype_of(x)
    ok = {"float": (dtype,), "int": ("int32", "int64"), "bool": ("bool",),
          "number": ("int32", "int64", dtype)}[kind]
    assert d in ok, f"{label}: dtype {d}, expected one of {ok}"


@pytest.mark.parametrize("case", RCASES, ids=[c.id for c in RCASES])
def test_sampler(case, backend, dtype):
    draws = case.draw(_key(case.id))
    assert ops.shape(draws) == case.shape, f"{case.id}: shape {ops.shape(draws)}"
    _check_kind(draws, case.kind, dtype, case.id)
    again = case.draw(_key(case.id))
    np.testing.assert_array_equal(ops.to_numpy(again), ops.to_numpy(draws),
                                  err_msg=f"{case.id}: same key gave different numbers")
    # a small draw (categorical-axis0: two labels of four) repeats under another key by chance
    # (~9 %), so four other keys must not all repeat it
    others = [ops.to_numpy(case.draw(_key(case.id, seed=s))) for s in range(1, 5)]
    assert not all(np.array_equal(o, ops.to_numpy(draws)) for o in others), (
        f"{case.id}: different keys gave the same numbers")
    s = ops.to_numpy(draws).astype(np.float64)
    assert np.all(np.isfinite(s)), f"{case.id}: non-finite draws"
    if case.id == "dirichlet":
        np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-5 if dtype == "float32" else 1e-12)
    if case.id == "categorical-axis0":
        assert np.all((s >= 0) & (s < 4))
    for j, (select, dist) in enumerate(case.marginals):
        x = select(s)
        label = f"{case.id}[{j}]"
        _moments_ok(x, dist, label)
        if case.discrete:
            assert np.all(x == np.round(x)), f"{label}: non-integer draws"
            p = _chisquare_p(x, dist)
        else:
            lo, hi = dist.support()
            assert np.all((x >= lo) & (x <= hi)), f"{label}: draws outside the support"
            p = st.kstest(x, dist.cdf).pvalue
        assert p > ALPHA, f"{label}: goodness-of-fit p-value {p:.2g} < {ALPHA}"


def test_explicit_dtype(backend, dtype):
    x = rnd.normal(rnd.key(0), (3,), dtype=dtype)
    assert ops.dtype_of(x) == dtype
    u = rnd.uniform(rnd.key(0), (3,), dtype)
    assert ops.dtype_of(u) == dtype


@pytest.mark.parametrize("name, params, support", [
    ("gamma", (2.0,), (0.0, np.inf)), ("beta", (2.0, 3.0), (0.0, 1.0)),
    ("t", (3.0,), (-np.inf, np.inf)), ("poisson", (3.0,), (0, np.inf)),
    ("binomial", (10, 0.3), (0, 10)), ("bernoulli", (0.3,), (0, 1)),
])
def test_python_scalar_parameters(backend, name, params, support):
    """Python-number parameters and no shape give one 0-d draw (NumPy's generators return
    Python scalars there, which the numpy backend must wrap)."""
    x = getattr(rnd, name)(rnd.key(3), *params)
    assert ops.shape(x) == ()
    value = float(ops.to_numpy(x))
    assert support[0] <= value <= support[1]


# ------------------------------------------------------------------------------- keys
def test_key_determinism(backend):
    a = ops.to_numpy(rnd.normal(rnd.key(123), (5,)))
    b = ops.to_numpy(rnd.normal(rnd.key(123), (5,)))
    c = ops.to_numpy(rnd.normal(rnd.key(124), (5,)))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_split_shapes_and_unpacking(backend):
    key = rnd.key(0)
    keys = rnd.split(key, 3)
    assert ops.shape(keys)[0] == 3
    k1, k2 = rnd.split(key)
    draws = [ops.to_numpy(rnd.normal(k, (4,))) for k in (keys[0], keys[1], keys[2], k1, k2)]
    for i, j in itertools.combinations(range(3), 2):
        assert not np.array_equal(draws[i], draws[j]), "split keys gave equal draws"
    np.testing.assert_array_equal(draws[3], ops.to_numpy(rnd.normal(rnd.split(key)[0], (4,))))


@pytest.mark.parametrize("num", [1, 2, 5])
def test_split_keys_are_the_split_as_a_tuple(backend, num):
    """``split_keys(key, n)`` is ``split(key, n)``'s keys one by one: the same bits (the
    reference is ``split``'s array, itself checked against ``jax.random`` on JAX), a tuple of
    ``n`` keys that draw as those rows do, under ``jit`` too."""
    key = rnd.split(rnd.key(3), 2)[1]
    keys = rnd.split_keys(key, num)
    assert isinstance(keys, tuple) and len(keys) == num
    rows = ops.to_numpy(rnd.split(key, num))
    for i, k in enumerate(keys):
        np.testing.assert_array_equal(ops.to_numpy(k), rows[i])
    draw = ops.jit(lambda k: rnd.normal(k, (3,)))
    np.testing.assert_array_equal(ops.to_numpy(draw(keys[-1])),
                                  ops.to_numpy(draw(rnd.split(key, num)[num - 1])))
    traced = ops.jit(lambda k: ops.stack(rnd.split_keys(k, num), axis=0))(key)
    np.testing.assert_array_equal(ops.to_numpy(traced), rows)


@pytest.mark.parametrize("num", [-1, 2.0, True, "3", None])
@pytest.mark.parametrize("op", ["split", "split_keys"])
def test_a_count_of_keys_that_is_not_a_non_negative_int_is_refused(backend, op, num):
    """``num`` must be an int >= 0: a negative one was a backend's own error (JAX: "negative
    dimensions are not allowed"), a float or bool silently truncated."""
    with pytest.raises(ValueError, match=rf"ppl\.random\.{op}: num must be an int >= 0.*got"):
        getattr(rnd, op)(rnd.key(0), num)
    assert tuple(ops.shape(rnd.split(rnd.key(0), np.int64(0)))) == (0, 2)
    assert len(rnd.split_keys(rnd.key(0), np.int32(3))) == 3


@pytest.mark.backends("jax")
def test_jax_split_keys_of_a_concrete_key_compile_nothing(backend):
    """Unpacking ``split_keys`` of a concrete key runs no JAX program (unpacking one array of
    keys compiles JAX's ``unstack`` once per shape: a first run's cost)."""
    import jax

    if not _JAX_COMPILES:
        def on_duration(event, duration, **_):
            if event.endswith("backend_compile_duration"):
                _JAX_COMPILES.append(event)
        _JAX_COMPILES.append("listening")
        jax.monitoring.register_event_duration_secs_listener(on_duration)
    rnd.split_keys(rnd.key(12345), 3)            # JAX's first-use work, if any, done here
    before = len(_JAX_COMPILES)
    k1, k2, k3 = rnd.split_keys(rnd.key(777), 3)
    a, b = rnd.split_keys(k2, 2)
    assert len(_JAX_COMPILES) == before, "unpacking concrete keys compiled a program"
    np.testing.assert_array_equal(ops.to_numpy(a), ops.to_numpy(rnd.split(k2, 2))[0])
    before = len(_JAX_COMPILES)
    first, *_ = rnd.split(k3, next(_UNSEEN))    # the array's own unpacking: JAX compiles
    assert len(_JAX_COMPILES) > before, "the reference no longer compiles: drop this test"


#: JAX's backend compiles seen since the first test that listens (JAX keeps listeners)
_JAX_COMPILES: list = []
#: numbers of keys no other test unpacks (JAX compiles its unpacking once per shape)
_UNSEEN = itertools.count(1013)


def test_split_streams_are_independent(backend):
    key = rnd.key(7)
    keys = rnd.split(key, 4)
    # (not fold_in(key, i) against split(key, n)[i]: they coincide in jax.random itself)
    children = [keys[i] for i in range(4)] + list(rnd.split(keys[0], 2)) + [
        rnd.fold_in(key, 11), rnd.fold_in(key, 12), key]
    z = np.stack([ops.to_numpy(rnd.normal(k, (N // 4,))).astype(float) for k in children])
    corr = np.corrcoef(z)
    off = corr[~np.eye(len(children), dtype=bool)]
    # |r| of independent streams is ~ N(0, 1/n): 5 standard errors
    assert np.max(np.abs(off)) < 5 / np.sqrt(N // 4), f"correlated streams: {np.round(corr, 3)}"
    assert len({tuple(row[:3]) for row in z}) == len(children), "two keys gave the same stream"


def test_fold_in(backend):
    key = rnd.key(3)
    a = ops.to_numpy(rnd.uniform(rnd.fold_in(key, 5), (4,)))
    np.testing.assert_array_equal(a, ops.to_numpy(rnd.uniform(rnd.fold_in(key, 5), (4,))))
    assert not np.array_equal(a, ops.to_numpy(rnd.uniform(rnd.fold_in(key, 6), (4,))))
    assert not np.array_equal(a, ops.to_numpy(rnd.uniform(key, (4,))))


def test_indexed_uniform_streams(backend):
    """Each index is a stream of its own: deterministic, the same traced (inside ``jit``) as
    eager and per key under ``vmap``, and independent of the other indices and of the key's
    other draws (``uniform(key)``, the stream of ``fold_in(key, j)`` for another ``j``; for
    the same ``j`` the default draw is that stream itself)."""
    key = rnd.key(5)
    n = N // 4
    rows = [rnd.indexed_uniform(key, i, (n,)) for i in range(6)] + [
        rnd.uniform(key, (n,)), rnd.uniform(rnd.fold_in(key, 9), (n,))]
    z = np.stack([np.asarray(ops.to_numpy(x), dtype=float) for x in rows])
    off = np.corrcoef(z)[~np.eye(len(rows), dtype=bool)]
    assert np.max(np.abs(off)) < 5 / np.sqrt(n), f"correlated streams: {np.round(off, 3)}"
    np.testing.assert_array_equal(ops.to_numpy(rnd.indexed_uniform(key, 2, (n,))), z[2])
    traced = ops.jit(lambda k, i: rnd.indexed_uniform(k, i, (3, 2)))(key, ops.asarray(4))
    np.testing.assert_array_equal(ops.to_numpy(traced),
                                  ops.to_numpy(rnd.indexed_uniform(key, 4, (3, 2))))
    keys = rnd.split(key, 3)
    batched = ops.vmap(lambda k: rnd.indexed_uniform(k, 1, (4,)))(keys)
    ref = np.stack([ops.to_numpy(rnd.indexed_uniform(keys[i], 1, (4,))) for i in range(3)])
    np.testing.assert_allclose(ops.to_numpy(batched), ref, rtol=1e-6)


def test_permutation(backend):
    p = rnd.permutation(rnd.key(0), 10)
    assert ops.dtype_of(p) in ("int32", "int64")
    np.testing.assert_array_equal(np.sort(ops.to_numpy(p)), np.arange(10))
    keys = rnd.split(rnd.key(1), 240)
    perms = [tuple(ops.to_numpy(rnd.permutation(keys[i], 3))) for i in range(240)]
    counts = [perms.count(q) for q in itertools.permutations(range(3))]
    assert st.chisquare(counts).pvalue > ALPHA, f"permutations not uniform: {counts}"


def test_vmap_over_keys(backend):
    keys = rnd.split(rnd.key(2), 3)
    out = ops.vmap(lambda k: rnd.normal(k, (4,)))(keys)
    ref = np.stack([ops.to_numpy(rnd.normal(keys[i], (4,))) for i in range(3)])
    assert ops.shape(out) == (3, 4)
    np.testing.assert_allclose(ops.to_numpy(out), ref, rtol=1e-6)


def test_samplers_do_not_touch_global_state(backend):
    np.random.seed(0)
    before = np.random.random()
    np.random.seed(0)
    rnd.normal(rnd.key(0), (3,))
    rnd.uniform(rnd.key(1), (3,))
    assert np.random.random() == before
    assert ppl.get_backend() is backend


@pytest.mark.parametrize("name", RANDOM_OPS)
def test_signature_matches_jax_random(name):
    """``ppl.random.<name>`` takes ``jax.random.<name>``'s arguments, in the same order."""
    import inspect

    jr = pytest.importorskip("jax.random")
    if not hasattr(jr, name):
        pytest.skip(f"jax.random has no {name}")
    ours = list(inspect.signature(getattr(ppl.backends.Backend, f"random_{name}")).parameters)
    ours = ours[1:]  # self
    theirs = list(inspect.signature(getattr(jr, name)).parameters)
    assert ours == theirs[:len(ours)], (
        f"ppl.random.{name}{tuple(ours)} differs from jax.random.{name}{tuple(theirs)}")


@pytest.mark.backends("jax")
@pytest.mark.parametrize("shape", [(1,), (4, 3), (7,), (40,)])
def test_jax_indexed_uniform_is_threefry(backend, dtype, shape):
    """JAX's indexed draws are one Threefry-2x32 hash of the counters ``(index, j)`` under the
    key XOR a constant (``jax.extend.random.threefry_2x32``), a float32 made of one word's top
    23 bits and a float64 of two words' top 52 (the layout built here in NumPy), traced or
    not."""
    import jax.numpy as jnp
    from jax.extend.random import threefry_2x32

    from ppl.backends.jax.random import _INDEXED

    key = rnd.key(11)
    n = int(np.prod(shape))
    words = n * (2 if dtype == "float64" else 1)
    half = (words + 1) // 2
    for index in (0, 3, 2**31 - 1):
        counts = np.concatenate([np.full(half, index, np.uint32), np.arange(half, dtype=np.uint32)])
        w = np.asarray(threefry_2x32(jnp.asarray(key, jnp.uint32) ^ _INDEXED, counts))[:words]
        if dtype == "float32":
            ref = ((w >> 9) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1.0)
        else:
            w64 = (w[:n].astype(np.uint64) << np.uint64(32)) | w[n:].astype(np.uint64)
            ref = ((w64 >> np.uint64(12)) | np.uint64(0x3FF0000000000000)).view(np.float64) - 1.0
        got = rnd.indexed_uniform(key, index, shape)
        np.testing.assert_array_equal(ops.to_numpy(got), ref.reshape(shape))
        traced = ops.jit(lambda k, i: rnd.indexed_uniform(k, i, shape))(key, ops.asarray(index))
        np.testing.assert_array_equal(ops.to_numpy(traced), ref.reshape(shape))


@pytest.mark.backends("jax")
@pytest.mark.parametrize("seed", [0, 7, 2**32 - 1])
def test_jax_concrete_key_draws_on_the_host_as_jax_does(backend, dtype, seed, monkeypatch):
    """A concrete key's split and uniform draws (computed on the host with NumPy's Threefry
    where the bounds' width is a power of two) are bit for bit JAX's own (``jax.random`` traced
    under ``jit``, where JAX draws), for keys with both words set, several shapes and bounds;
    and on the host they do not call ``jax.random`` at all (so they compile nothing)."""
    import jax

    rng = np.random.default_rng(seed)
    keys = [rnd.key(seed), ops.asarray(rng.integers(0, 2**32, 2, dtype=np.uint64)
                                       .astype(np.uint32))]
    keys.append(rnd.split(keys[1], 3)[2])             # a key made by a split
    cases = [((), 0.0, 1.0), ((5,), -2.0, 2.0), ((4, 3), -1.5, 0.25), ((33,), 3, 7),
             ((9,), -0.75, 0.25), ((2, 2), 1e-3, 2.0), ((3,), 0.0, 2.0**-140)]
    for key in keys:
        for num in (1, 2, 3, 17):
            traced = jax.jit(lambda k, n=num: jax.random.split(k, n))(key)
            np.testing.assert_array_equal(ops.to_numpy(rnd.split(key, num)), np.asarray(traced))
        for shape, lo, hi in cases:
            ref = jax.jit(lambda k, s=shape, a=lo, b=hi: jax.random.uniform(
                k, s, jax.numpy.dtype(dtype), a, b))(key)
            got = rnd.uniform(key, shape, minval=lo, maxval=hi)
            assert ops.dtype_of(got) == ops.dtype_of(ref)
            np.testing.assert_array_equal(ops.to_numpy(got), np.asarray(ref))

    def not_on_the_host(*args, **kwargs):
        raise AssertionError("drawn through jax.random, not on the host")

    monkeypatch.setattr(jax.random, "split", not_on_the_host)
    monkeypatch.setattr(jax.random, "uniform", not_on_the_host)
    for key in keys:
        rnd.split(key, 2)
        rnd.uniform(key, (6, 2), minval=-2.0, maxval=2.0)
        rnd.uniform(key, (7,))
