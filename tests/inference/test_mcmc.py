"""The MCMC driver: shapes and types of the results, determinism, continuation from
``post_warmup_state``, chain methods, thinning, compile-once on JAX, Ctrl-C, summaries, ArviZ
conversion and input checking."""

import warnings

import numpy as np
import pytest

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.inference import HMC, MCMC, NUTS


def model(y=None):
    mu = ppl.sample("mu", dist.Normal(0.0, 3.0))
    sigma = ppl.sample("sigma", dist.HalfNormal(2.0))
    with ppl.plate("J", 3):
        z = ppl.sample("z", dist.Normal(0.0, 1.0))
        ppl.deterministic("w", mu + sigma * z)
    with ppl.plate("N", 4):
        ppl.sample("y", dist.Normal(mu, sigma), obs=y)


Y = np.array([0.5, 1.5, -0.3, 1.0])


def _std_normal(z):
    return 0.5 * ops.sum(z * z)


def _small(kernel, **kw):
    opts = dict(num_warmup=30, num_samples=20, num_chains=2, progress_bar=False)
    opts.update(kw)
    return MCMC(kernel, **opts)


@pytest.mark.dtypes("float32")
def test_samples_and_extra_fields(backend):
    mcmc = _small(NUTS(model), thinning=2)
    mcmc.run(0, y=ops.asarray(Y))
    s = mcmc.get_samples()
    assert set(s) == {"mu", "sigma", "z", "w"}
    assert ops.shape(s["z"]) == (20, 3) and ops.shape(s["mu"]) == (20,)
    assert all(ops.is_array(v) for v in s.values())
    g = mcmc.get_samples(group_by_chain=True)
    assert ops.shape(g["w"]) == (2, 10, 3)
    w = ops.to_numpy(g["mu"])[..., None] + ops.to_numpy(g["sigma"])[..., None] \
        * ops.to_numpy(g["z"])
    np.testing.assert_allclose(ops.to_numpy(g["w"]), w, rtol=1e-5, atol=1e-5)
    assert np.all(ops.to_numpy(s["sigma"]) > 0)
    ef = mcmc.get_extra_fields()
    for name in ("diverging", "num_steps", "accept_prob", "energy", "step_size", "tree_depth",
                 "potential_energy"):
        assert ops.shape(ef[name]) == (20,), name
    assert ops.to_numpy(ef["diverging"]).dtype == bool
    steps, depth = ops.to_numpy(ef["num_steps"]), ops.to_numpy(ef["tree_depth"])
    assert np.all(steps >= 1) and np.all(steps <= 2 ** (depth + 1) - 1)
    acc = ops.to_numpy(ef["accept_prob"])
    assert np.all((acc >= 0) & (acc <= 1))
    assert ops.shape(mcmc.get_extra_fields(group_by_chain=True)["energy"]) == (2, 10)


@pytest.mark.dtypes("float64")
def test_same_seed_same_draws(backend):
    def draws(seed):
        mcmc = _small(NUTS(model))
        mcmc.run(seed, y=ops.asarray(Y))
        return ops.to_numpy(mcmc.get_samples()["z"])

    a, b = draws(3), draws(3)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, draws(ppl.random.key(4)))


@pytest.mark.dtypes("float64")
def test_post_warmup_state_skips_warmup(backend):
    mcmc = _small(NUTS(potential_fn=_std_normal), num_warmup=50)
    mcmc.run(0, init_params=ops.zeros((2, 3)))
    assert mcmc.post_warmup_state is None            # only set by the user or by warmup()
    adapted = ops.to_numpy(mcmc.last_state.step_size)
    eps = ops.to_numpy(mcmc.get_extra_fields(group_by_chain=True)["step_size"])
    np.testing.assert_allclose(eps, np.broadcast_to(adapted[:, None], eps.shape))
    last = ops.to_numpy(mcmc.last_state.position)
    mcmc.post_warmup_state = mcmc.last_state
    mcmc.run(mcmc.post_warmup_state.rng_key, init_params=ops.zeros((2, 3)))
    eps2 = ops.to_numpy(mcmc.get_extra_fields(group_by_chain=True)["step_size"])
    np.testing.assert_allclose(eps2, np.broadcast_to(adapted[:, None], eps2.shape))
    assert ops.shape(mcmc.get_samples()) == (40, 3)
    # the chains continue from where they stopped (not from init_params)
    assert not np.allclose(last, 0.0)
    assert not np.allclose(ops.to_numpy(mcmc.get_samples(group_by_chain=True))[:, 0], 0.0)
    # warmup() runs the warmup phase only and sets post_warmup_state
    other = _small(NUTS(potential_fn=_std_normal), num_warmup=50)
    other.warmup(0, init_params=ops.zeros((2, 3)))
    warm = ops.to_numpy(other.post_warmup_state.step_size)
    np.testing.assert_allclose(warm, adapted)          # same seed, same warmup
    other.run(5, init_params=ops.zeros((2, 3)))
    eps3 = ops.to_numpy(other.get_extra_fields(group_by_chain=True)["step_size"])
    np.testing.assert_allclose(eps3, np.broadcast_to(warm[:, None], eps3.shape))


def _sequential_and_parallel_agree(make):
    out = {}
    for method in ("sequential", "parallel"):
        mcmc = _small(make(), chain_method=method)
        mcmc.run(1, init_params=ops.asarray(np.array([[0.5, -0.5], [1.0, 0.2]])))
        out[method] = ops.to_numpy(mcmc.get_samples(group_by_chain=True))
        assert out[method].shape == (2, 20, 2)
        ef = mcmc.get_extra_fields(group_by_chain=True)
        assert ops.shape(ef["accept_prob"]) == (2, 20)
    np.testing.assert_array_equal(out["sequential"], out["parallel"])


@pytest.mark.dtypes("float64")
def test_sequential_and_parallel_agree(backend):
    _sequential_and_parallel_agree(lambda: NUTS(potential_fn=_std_normal))


_DEVICES_SCRIPT = """
import numpy as np, jax, ppl
from ppl import ops
from ppl.inference import MCMC, NUTS
ppl.set_backend("jax", dtype="float64")
assert ops.device_count() == 2, ops.device_count()
out = {}
kernel = NUTS(potential_fn=lambda z: 0.5 * ops.sum(z * z))
for method in ("sequential", "parallel", None):
    mcmc = MCMC(kernel, num_warmup=30, num_samples=20, num_chains=2, chain_method=method,
                progress_bar=False)
    mcmc.run(1, init_params=ops.asarray(np.array([[0.5, -0.5], [1.0, 0.2]])))
    out[method] = np.asarray(mcmc.get_samples(group_by_chain=True))
    if method != "sequential":          # None: the default spreads chains over devices
        assert len(mcmc.last_state.position.devices()) == 2   # chains stayed on two devices
np.testing.assert_allclose(out["sequential"], out["parallel"], rtol=1e-12)
np.testing.assert_array_equal(out["parallel"], out[None])
import ppl.distributions as dist
from ppl.inference.mcmc import PARALLEL_DATA_LIMIT
def big(y):
    mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
    with ppl.plate("N", y.shape[0]):
        ppl.sample("y", dist.Normal(mu, 1.0), obs=y)
y = ops.asarray(np.zeros(PARALLEL_DATA_LIMIT // 8))    # float64: exactly the limit
mcmc = MCMC(NUTS(big), num_warmup=5, num_samples=5, num_chains=2, progress_bar=False)
mcmc.run(0, y)
assert len(mcmc.last_state.position.devices()) == 1    # large data: one device, one copy
print("ok", out["parallel"].shape)
"""


@pytest.mark.backends("jax")
@pytest.mark.dtypes("float64")
def test_parallel_uses_one_device_per_chain(backend):
    """With two (forced host) JAX devices, ``"parallel"`` (and the default) shards the chains
    over the devices (``ops.shard_chains``) and, one chain per device, draws what
    ``"sequential"`` draws."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
               JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", _DEVICES_SCRIPT], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ok (2, 20, 2)" in proc.stdout


@pytest.mark.dtypes("float64")
def test_timings_add_up_to_the_run(backend):
    """``mcmc.timings``: each chunk's seconds are counted once, also where JAX runs a chunk while
    the previous one's draws are read (compile + warmup + sampling within the run's wall)."""
    import time
    mcmc = _small(NUTS(potential_fn=_std_normal), num_warmup=40, num_samples=40, chunk_size=5)
    mcmc.run(0, init_params=ops.zeros((2, 2)))          # compiled programs, where there are
    t0 = time.perf_counter()
    mcmc.run(1, init_params=ops.zeros((2, 2)))
    wall = time.perf_counter() - t0
    t = mcmc.timings
    assert set(t) >= {"setup", "compile", "warmup", "sampling"}
    assert min(t.values()) >= 0.0 and t["warmup"] > 0.0 and t["sampling"] > 0.0
    assert t["setup"] + t["compile"] + t["warmup"] + t["sampling"] <= wall + 1e-3, (t, wall)


@pytest.mark.dtypes("float64")
def test_draws_do_not_depend_on_the_calls(backend, monkeypatch):
    """The default count of iterations per call (sized by time where the chunk compiles, so it
    changes from call to call), a fixed ``chunk_size`` and calls of a single iteration give the
    same draws and statistics: each iteration's key is its index's, whatever call runs it."""
    from ppl.inference import chains
    # calls of a few iterations, whatever the machine's speed: many calls of changing counts
    monkeypatch.setattr(chains, "CALL_SECONDS", 1e-4)
    runs = []
    for chunk_size in (None, 7, 1):
        mcmc = _small(NUTS(potential_fn=_std_normal), num_warmup=45, num_samples=31,
                      chunk_size=chunk_size)
        mcmc.run(3, init_params=ops.zeros((2, 3)))
        runs.append((ops.to_numpy(mcmc.get_samples(group_by_chain=True)),
                     {k: ops.to_numpy(v) for k, v in mcmc.get_extra_fields().items()}))
    for samples, stats in runs[1:]:
        np.testing.assert_array_equal(samples, runs[0][0])
        for k, v in stats.items():
            np.testing.assert_array_equal(v, runs[0][1][k], err_msg=k)
    assert runs[0][0].shape == (2, 31, 3)


@pytest.mark.dtypes("float64")
def test_a_chunk_is_sized_by_its_draws_bytes(backend, monkeypatch):
    """Where the chunk compiles, the default chunk holds the longer phase, fewer iterations
    where the draws of one call would pass ``MAX_CHUNK_BYTES`` (never fewer than 10): with a
    tiny budget and no limit on a call's seconds, every call runs at most 10 iterations, and
    the draws are those of fixed calls of 7."""
    from ppl.inference import chains
    monkeypatch.setattr(chains, "CALL_SECONDS", 1e6)
    counts = []
    rows = chains.ChainRunner._chunk_rows

    def spy(self, s, hi):
        counts.append((self.chunk_size, hi - s))
        return rows(self, s, hi)

    monkeypatch.setattr(chains.ChainRunner, "_chunk_rows", spy)
    runs = []
    for budget, chunk_size in ((chains.MAX_CHUNK_BYTES, None), (1, None), (None, 7)):
        if budget is not None:
            monkeypatch.setattr(chains, "MAX_CHUNK_BYTES", budget)
        counts.clear()
        mcmc = _small(NUTS(potential_fn=_std_normal), num_warmup=45, num_samples=31,
                      chunk_size=chunk_size)
        mcmc.run(3, init_params=ops.zeros((2, 3)))
        runs.append((ops.to_numpy(mcmc.get_samples(group_by_chain=True)), list(counts)))
        if chunk_size is None and backend.compiles_control_flow:
            sizes = {size for size, _ in counts}
            assert sizes == ({45} if budget > 1 else {10}), counts
            assert max(n for _, n in counts) <= (45 if budget > 1 else 10)
    for samples, _ in runs[1:]:
        np.testing.assert_array_equal(samples, runs[0][0])


@pytest.mark.dtypes("float64")
def test_calls_before_the_speed_is_known_are_short(backend, monkeypatch):
    """Where the chunk compiles and a call's count adapts, the calls made before any call's
    speed is read run 10 iterations each, however long the phase: a slow model moves the bar
    and answers Ctrl-C after 10 of its iterations. Once the speed is known (here: no limit
    on a call's seconds), a call runs the rest of the phase."""
    from ppl.inference import chains
    monkeypatch.setattr(chains, "CALL_SECONDS", 1e6)
    counts = []
    rows = chains.ChainRunner._chunk_rows

    def spy(self, s, hi):
        counts.append(hi - s)
        return rows(self, s, hi)

    monkeypatch.setattr(chains.ChainRunner, "_chunk_rows", spy)
    mcmc = _small(NUTS(potential_fn=_std_normal), num_warmup=300, num_samples=200)
    mcmc.run(3, init_params=ops.zeros((2, 3)))
    if backend.compiles_control_flow:
        assert counts[0] == 10 and sum(counts) == 500 and max(counts) > 100, counts
        assert counts.index(max(counts)) <= 3, counts
    else:
        assert set(counts) == {10}, counts


def test_chunk_size_below_one_is_refused():
    with pytest.raises(ValueError, match="chunk_size must be an int >= 1"):
        _small(NUTS(potential_fn=_std_normal), chunk_size=0)


def _regression(x, y=None):
    """Not plate code (a matrix product with a latent vector): numpy keeps its per-draw map."""
    beta = ppl.sample("beta", dist.Normal(0.0, 1.0).expand((2,)).to_event(1))
    sigma = ppl.sample("sigma", dist.HalfNormal(1.0))
    mu = ppl.deterministic("mu", ops.matmul(x, beta))
    with ppl.plate("N", ops.shape(x)[0]):
        ppl.sample("y", dist.Normal(mu, sigma), obs=y)


@pytest.mark.backends("numpy", "torch")
@pytest.mark.dtypes("float64")
@pytest.mark.filterwarnings("ignore::ppl.inference.run_warnings.SamplingWarning")
def test_postprocess_in_blocks_for_large_data(backend, monkeypatch):
    """Where the model runs once per draw, a run whose data are large maps its draws back in
    blocks (``chain_plate.draw_block``, here made 16 draws): the samples of one call, and each
    draw's sites together (``mu`` by hand from the same draw's ``beta``)."""
    from ppl.inference import chain_plate, programs
    x = np.random.default_rng(1).normal(size=(6, 2))
    y = x @ np.array([1.0, -0.5]) + 0.1
    blocks = []

    def spy(*args, block=None):
        blocks.append(block)
        return chain_plate.postprocess_draws(*args, block=block)

    monkeypatch.setattr(programs, "postprocess_draws", spy)
    runs = {}
    for name, limit in (("one call", chain_plate.POSTPROCESS_BYTES), ("blocks", 1)):
        monkeypatch.setattr(chain_plate, "POSTPROCESS_BYTES", limit)
        mcmc = _small(NUTS(_regression), num_samples=25)      # 50 draws: 3 blocks and a part
        mcmc.run(0, ops.asarray(x), y=ops.asarray(y))
        runs[name] = {k: ops.to_numpy(v) for k, v in mcmc.get_samples().items()}
    assert blocks[0] >= 50 and blocks[1] == 16
    for k, want in runs["one call"].items():
        np.testing.assert_allclose(runs["blocks"][k], want, rtol=1e-12, atol=1e-12,
                                   err_msg=k)
    got = runs["blocks"]
    np.testing.assert_allclose(got["mu"], got["beta"] @ x.T, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("args, kwargs, nbytes, num_chains, many_devices", [
    ((), {}, 0, 4, "parallel"),
    ((np.zeros(10),), {}, 80, 4, "parallel"),
    ((np.zeros(2**17 - 1), 1.0), {}, 2**20 - 8, 4, "parallel"),   # just below 1 MiB
    ((np.zeros(2**17),), {}, 2**20, 4, "vectorized"),             # 1 MiB: one device
    ((np.zeros(2**16),), {"y": np.zeros(2**16)}, 2**20, 4, "vectorized"),   # leaves add up
    ((np.zeros(2**18, np.float32), "a"), {}, 2**20, 4, "vectorized"),
    ((), {}, 0, 1, "vectorized"),
])
def test_default_chain_method(backend, monkeypatch, args, kwargs, nbytes, num_chains,
                              many_devices):
    """``chain_method=None``: chains over devices only where there are several and the data
    (every array leaf of the model's arguments, NumPy or backend) stay below 1 MiB."""
    from ppl.inference.mcmc import default_chain_method
    from ppl.inference.program_data import data_nbytes
    assert data_nbytes(args, kwargs) == nbytes
    assert data_nbytes((ops.zeros((2**18,)),), {}) >= 2**20       # backend arrays count
    expected = many_devices if ops.chain_shards(num_chains) > 1 else "vectorized"
    assert default_chain_method(num_chains, nbytes) == expected
    # the rule itself, with two devices pretended on any backend
    monkeypatch.setattr(type(ops.backend()), "chain_shards", lambda self, c: min(c, 2))
    assert default_chain_method(num_chains, nbytes) == many_devices


@pytest.mark.backends("numpy")
@pytest.mark.dtypes("float64")
def test_sequential_and_parallel_agree_hmc(backend):
    _sequential_and_parallel_agree(lambda: HMC(potential_fn=_std_normal, num_steps=5))


@pytest.mark.backends("jax")
@pytest.mark.dtypes("float32")
def test_log_density_traced_once_per_run(backend):
    calls = []

    def potential(z):
        calls.append(1)
        return _std_normal(z)

    counts = []
    for n, method in ((20, "vectorized"), (100, "vectorized"), (100, "sequential"),
                      (100, "parallel")):
        calls.clear()
        mcmc = _small(NUTS(potential_fn=potential), num_warmup=40, num_samples=n, chunk_size=10,
                      chain_method=method)
        mcmc.run(0, init_params=ops.zeros((2, 2)))
        counts.append(len(calls))
    # one trace per program and batch shape, whatever the number of chunks: the (2, 2) batch
    # (initial state, and the vectorized chunks); none for a new kernel of the same settings
    # on the same potential (programs are cached per potential); the (1, 2) batch of the
    # per-chain methods (the parallel program, chains on devices, traces its init again)
    assert counts == [1, 0, 1, 2], counts


@pytest.mark.backends("numpy")
@pytest.mark.dtypes("float64")
def test_keyboard_interrupt_keeps_draws(backend):
    calls = [0]
    limit = [None]

    def potential(z):
        ops.to_numpy(z)   # reading z keeps numpy's jit from recording the potential: it
        calls[0] += 1     # runs, and counts, once per gradient
        if limit[0] is not None and calls[0] > limit[0]:
            raise KeyboardInterrupt
        return _std_normal(z)

    mcmc = _small(NUTS(potential_fn=potential), num_chains=1)
    mcmc.run(0, init_params=ops.zeros(2))
    total = calls[0]
    calls[0], limit[0] = 0, total - 3
    with pytest.raises(KeyboardInterrupt):
        mcmc.run(0, init_params=ops.zeros(2))
    assert mcmc.interrupted
    n = ops.shape(mcmc.get_samples())[0]
    assert 0 < n < 20
    assert ops.shape(mcmc.get_extra_fields()["diverging"]) == (n,)
    # interrupted during warmup: no draws, and the errors say where it stopped
    calls[0], limit[0] = 0, 10
    with pytest.raises(KeyboardInterrupt):
        mcmc.run(0, init_params=ops.zeros(2))
    for method in (mcmc.get_samples, mcmc.print_summary, mcmc.summary):
        with pytest.raises(RuntimeError, match=r"during warmup at iteration \d+ of 30"):
            method()


@pytest.mark.backends("jax")
@pytest.mark.dtypes("float64")
def test_summary_print_summary_and_arviz(backend, capsys):
    pytest.importorskip("arviz")
    mcmc = _small(NUTS(model), num_samples=50)
    mcmc.run(0, y=ops.asarray(Y))
    s = mcmc.summary()
    assert set(s) == {"mu", "sigma", "z", "w"}
    assert np.shape(s["z"]["mean"]) == (3,) and "r_hat" in s["mu"] and "n_eff" in s["mu"]
    mcmc.print_summary()
    out = capsys.readouterr().out
    assert "Number of divergences" in out and "z[2]" in out
    assert "w[0]" not in out                # deterministic sites hidden, as NumPyro's default
    mcmc.print_summary(exclude_deterministic=False)
    assert "w[0]" in capsys.readouterr().out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = mcmc.to_arviz()
    assert dict(idata.posterior.sizes)["chain"] == 2 and dict(idata.posterior.sizes)["draw"] == 50
    assert idata.sample_stats["diverging"].shape == (2, 50)
    np.testing.assert_allclose(np.asarray(idata.observed_data["y"]), Y)


@pytest.mark.backends("numpy")
@pytest.mark.dtypes("float64")
def test_progress_bar(backend, capsys):
    mcmc = _small(NUTS(potential_fn=_std_normal), progress_bar=True)
    mcmc.run(0, init_params=ops.zeros((2, 2)))
    err = capsys.readouterr().err
    assert "sample" in err and "divergences" in err and "step_size" in err


@pytest.mark.backends("numpy")
@pytest.mark.dtypes("float64")
def test_hmc_extra_fields_and_repr(backend):
    mcmc = _small(HMC(model, num_steps=4))
    mcmc.run(0, y=ops.asarray(Y))
    ef = mcmc.get_extra_fields()
    assert np.all(ops.to_numpy(ef["num_steps"]) == 4)
    assert "tree_depth" not in ef
    assert "HMC(" in repr(mcmc.kernel) and "NUTS(" in repr(NUTS(model))


BAD = [
    (lambda: MCMC(3, num_warmup=1, num_samples=1), TypeError, "kernel"),
    (lambda: MCMC(NUTS(model), num_warmup=-1, num_samples=1), ValueError, "num_warmup"),
    (lambda: MCMC(NUTS(model), num_warmup=1, num_samples=0), ValueError, "num_samples"),
    (lambda: MCMC(NUTS(model), num_warmup=1, num_samples=1, num_chains=0), ValueError,
     "num_chains"),
    (lambda: MCMC(NUTS(model), num_warmup=1, num_samples=1, chain_method="gpu"), ValueError,
     "chain_method"),
    (lambda: MCMC(NUTS(model), num_warmup=1, num_samples=1, thinning=0), ValueError,
     "thinning"),
    (lambda: NUTS(), ValueError, "exactly one"),
    (lambda: NUTS(model, potential_fn=_std_normal), ValueError, "exactly one"),
    (lambda: NUTS(model, step_size=-1.0), ValueError, "step_size"),
    (lambda: NUTS(model, target_accept_prob=1.5), ValueError, "target_accept_prob"),
    (lambda: NUTS(model, max_tree_depth=0), ValueError, "max_tree_depth"),
    (lambda: NUTS(model, dense_mass="yes"), TypeError, "dense_mass"),
    (lambda: HMC(model, num_steps=0), ValueError, "num_steps"),
    (lambda: HMC(model, num_steps_jitter=1.0), ValueError, "num_steps_jitter"),
]


@pytest.mark.parametrize("make, err, match", BAD, ids=[b[2] + str(i) for i, b in enumerate(BAD)])
def test_bad_arguments(make, err, match):
    with pytest.raises(err, match=match):
        make()


@pytest.mark.backends("numpy")
@pytest.mark.dtypes("float64")
def test_bad_run_arguments(backend):
    mcmc = _small(NUTS(potential_fn=_std_normal))
    with pytest.raises(RuntimeError, match="run"):
        mcmc.get_samples()
    with pytest.raises(ValueError, match="init_params"):
        mcmc.run(0)
    with pytest.raises(ValueError, match="init_params"):
        mcmc.run(0, init_params=ops.zeros((3, 2)))
    with pytest.raises(ValueError, match="extra_fields"):
        mcmc.run(0, init_params=ops.zeros(2), extra_fields=("bogus",))
    with pytest.raises(TypeError, match="rng_key"):
        mcmc.run(1.5, init_params=ops.zeros(2))


def test_init_params_of_a_model_name_the_sites(backend):
    """A dict of init_params that misses a site, names one the model lacks, or gives a site
    the wrong shape is a ValueError naming init_params, the site and the expected shape;
    per-chain values next to shared ones start each chain from its own."""
    mcmc = _small(NUTS(model), num_warmup=5, num_samples=5)
    start = {"mu": 0.0, "sigma": 0.0, "z": np.zeros(3)}
    for bad, match in (({"mu": 0.0, "z": np.zeros(3)}, r"init_params: missing \['sigma'\]"),
                       (dict(start, tau=1.0), r"not latent sites of the model: \['tau'\]"),
                       (dict(start, z=np.zeros(4)),
                        r"init_params\['z'\] has shape \(4,\).*\(3,\).*\(2, 3\)")):
        with pytest.raises(ValueError, match=match):
            mcmc.run(0, y=Y, init_params=bad)
    mcmc = _small(NUTS(model), num_warmup=0, num_samples=1)
    mcmc.run(0, y=Y, init_params=dict(start, mu=np.array([-1.0, 1.0])))
    assert mcmc.get_samples(group_by_chain=True)["z"].shape == (2, 1, 3)


@pytest.mark.backends("numpy")
@pytest.mark.dtypes("float64")
def test_non_finite_start_is_reported(backend):
    mcmc = _small(NUTS(potential_fn=lambda z: ops.sum(ops.log(z))))
    with pytest.raises(ValueError, match="not finite"):
        mcmc.run(0, init_params=ops.asarray([[1.0, -1.0], [1.0, 1.0]]))


@pytest.mark.backends("torch")
@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("env, threads", [(None, 1), ("2", 2)])
def test_torch_samples_with_few_intra_op_threads(backend, monkeypatch, env, threads):
    import torch
    if env is None:
        monkeypatch.delenv("PPL_TORCH_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("PPL_TORCH_NUM_THREADS", env)
    seen = []

    def potential(z):
        seen.append(torch.get_num_threads())
        return _std_normal(z)

    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        _small(NUTS(potential_fn=potential), num_warmup=5, num_samples=5).run(
            0, init_params=ops.zeros((2, 2)))
        assert torch.get_num_threads() == 3          # restored after the run
    finally:
        torch.set_num_threads(before)
    assert seen and set(seen) == {threads}


@pytest.mark.backends("torch")
@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("variable, value", [("PPL_TORCH_NUM_THREADS", "many"),
                                             ("PPL_TORCH_MMAP_THRESHOLD", "1MB")])
def test_torch_bad_setting(backend, monkeypatch, variable, value):
    """A setting the torch backend reads from the environment fails naming the variable."""
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=variable):
        _small(NUTS(potential_fn=_std_normal)).run(0, init_params=ops.zeros((2, 2)))


_MMAP_SCRIPT = r"""
import ctypes, os
import numpy as np
import ppl, ppl.distributions as dist
from ppl.backends.torch import compile as torch_compile
from ppl.inference import MCMC, NUTS

libc = ctypes.CDLL(None)
class Info(ctypes.Structure):
    _fields_ = [(f, ctypes.c_size_t) for f in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc.mallinfo2.restype = Info
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]

def mmapped(size):   # whether a new block of ``size`` bytes is mmapped, not from the heap
    libc.malloc_trim(0)                    # no free heap top to serve it from
    before = libc.mallinfo2().hblkhd
    p = libc.malloc(size)
    grew = libc.mallinfo2().hblkhd - before >= size
    libc.free(p)
    return grew

def model(y):
    mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
    with ppl.plate("N", y.shape[0]):
        ppl.sample("y", dist.Normal(mu, 1.0), obs=y)

def run(n):
    with ppl.use_backend("torch", dtype="float64"):
        MCMC(NUTS(model), num_warmup=3, num_samples=3, num_chains=2,
             progress_bar=False).run(0, ppl.ops.asarray(np.zeros(n)))
    return torch_compile._mmap_threshold_set[0]

MB = 1 << 20
libc.free(libc.malloc(30 * MB))       # glibc raises its threshold to 30 MB
assert not mmapped(20 * MB)
assert not run(1000)                  # small data: malloc left alone
os.environ["PPL_TORCH_MMAP_THRESHOLD"] = "0"
assert not run(MB // 8)               # 1 MiB of data, switched off
del os.environ["PPL_TORCH_MMAP_THRESHOLD"]
assert not mmapped(20 * MB)
assert run(MB // 8)                   # 1 MiB of data: fixed at 1 MiB
# (sizes no free chunk of the heap can serve: those are reused whatever the threshold)
assert mmapped(28 * MB)
libc.free(libc.malloc(31 * MB))       # no longer raises it
assert mmapped(28 * MB)
print("ok")
"""


@pytest.mark.backends("torch")
@pytest.mark.dtypes("float64")
def test_torch_mmap_threshold_fixed_for_large_data(backend):
    """glibc only: a run whose data reach ``PPL_TORCH_MMAP_THRESHOLD`` (1 MiB) fixes malloc's
    mmap threshold there for the process (blocks above it mmapped again after a larger one
    was freed); small data and ``PPL_TORCH_MMAP_THRESHOLD=0`` leave malloc alone. In a child
    process: the setting outlives the run."""
    import ctypes
    import os
    import subprocess
    import sys
    if not sys.platform.startswith("linux") or \
            not hasattr(ctypes.CDLL(None), "gnu_get_libc_version"):
        pytest.skip("glibc's malloc only")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PPL_TORCH_MMAP_THRESHOLD", "MALLOC_MMAP_THRESHOLD_")}
    proc = subprocess.run([sys.executable, "-c", _MMAP_SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ok" in proc.stdout


@pytest.mark.backends("numpy")
@pytest.mark.dtypes("float64")
def test_run_warnings_judge_the_sampled_sites_only(backend, monkeypatch):
    """R-hat and ESS warnings look at the sampled sites, not at deterministic functions of them
    (200 deterministic elements of a regression gave R-hat warnings by multiple testing alone,
    where NumPyro warns about nothing); jit_model_args is taken for NumPyro's signature."""
    import ppl.inference.mcmc as mcmc_module
    seen = []
    real = mcmc_module.run_problems
    monkeypatch.setattr(mcmc_module, "run_problems",
                        lambda samples, *a, **k: seen.append(set(samples))
                        or real(samples, *a, **k))
    mcmc = _small(NUTS(model), jit_model_args=True)
    mcmc.run(0, y=ops.asarray(Y))
    assert seen == [{"mu", "sigma", "z"}]
    assert set(mcmc.get_samples()) == {"mu", "sigma", "z", "w"}
    with pytest.raises(TypeError, match="jit_model_args must be True or False"):
        _small(NUTS(model), jit_model_args="yes")
