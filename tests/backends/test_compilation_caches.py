"""ppl keeps JAX's compiled programs on disk between processes (``backends/common/disk_cache.py``,
``backends/jax/cache.py``): a second process running the same model loads the sampler's chunk
instead of compiling it, and draws exactly what the process that compiled it drew. A user's own
cache setting is kept; a directory others may write to is not used; the oldest entries go past
the size limit.

The suite runs with ``PPL_CACHE_DIR=0`` (``conftest.py``); these tests set it themselves."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from ppl.backends.common import disk_cache

_MODEL = """
import hashlib, json, numpy as np
import ppl, ppl.distributions as dist
from ppl import ops
from ppl.inference import MCMC, NUTS
def model(y):
    mu = ppl.sample("mu", dist.Normal(0.0, 5.0))
    sigma = ppl.sample("sigma", dist.HalfNormal(2.0))
    with ppl.plate("data", y.shape[0]):
        ppl.sample("y", dist.Normal(mu, sigma), obs=y)
def draws_hash(backend):
    ppl.set_backend(backend, dtype="float64")
    y = ops.asarray(np.array([1.2, 0.3, -0.4, 2.2, 1.1, 0.8, 1.9, 0.1]))
    mcmc = MCMC(NUTS(model), num_warmup=40, num_samples=40, num_chains=2, progress_bar=False)
    mcmc.run(3, y)
    draws = np.concatenate([np.asarray(v).ravel()
                            for _, v in sorted(mcmc.get_samples().items())])
    return hashlib.sha256(draws.tobytes()).hexdigest()
"""


def _subprocess(script, **env):
    env = {**os.environ, "JAX_PLATFORMS": "cpu", **env}
    for name in ("JAX_COMPILATION_CACHE_DIR", "JAX_ENABLE_COMPILATION_CACHE"):
        env.pop(name, None)
    proc = subprocess.run([sys.executable, "-c", _MODEL + script], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_directory_is_per_user_framework_and_cpu(monkeypatch, tmp_path):
    monkeypatch.delenv("PPL_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = disk_cache.cache_dir("jax")
    parent, leaf = os.path.split(path)
    assert parent == os.path.join(str(tmp_path), "ppl", "jax")
    assert leaf == disk_cache.cpu_tag()
    assert leaf.startswith(os.uname().machine) and len(leaf.rsplit("-", 1)[1]) == 12
    monkeypatch.setenv("PPL_CACHE_DIR", "0")
    assert disk_cache.cache_dir("jax") is None
    monkeypatch.setenv("PPL_CACHE_DIR", "~/x")
    assert disk_cache.cache_dir("tensorflow") == os.path.join(
        os.path.expanduser("~"), "x", "tensorflow", leaf)
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert not disk_cache.writable(str(blocker / "sub"))
    assert disk_cache.writable(str(tmp_path / "new" / "dir"))
    assert ((tmp_path / "new" / "dir").stat().st_mode & 0o077) == 0
    monkeypatch.delenv("PPL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")          # not absolute: ignored
    assert disk_cache.cache_dir("jax") == os.path.join(
        os.path.expanduser("~"), ".cache", "ppl", "jax", leaf)


def test_a_directory_others_may_write_to_is_not_used(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert not disk_cache.writable(str(shared))
    shared.chmod(0o755)
    assert disk_cache.writable(str(shared))


def test_prune_deletes_the_least_recently_used_entries(tmp_path):
    for i, age in enumerate([50, 10, 40, 20, 30]):          # seconds ago, last used
        f = tmp_path / f"e{i}-cache"
        f.write_bytes(b"x" * 100)
        t = 1_000_000 - age
        os.utime(f, (t, t))
    (tmp_path / "other").write_bytes(b"x" * 1000)            # not an entry: kept
    assert disk_cache.prune(str(tmp_path), 250, suffix="-cache") == 3
    assert sorted(os.listdir(tmp_path)) == ["e1-cache", "e3-cache", "other"]
    assert disk_cache.prune(str(tmp_path), 250, suffix="-cache") == 0
    assert disk_cache.prune(str(tmp_path / "missing"), 0) == 0


# ----------------------------------------------------------------------------------- JAX
def _installed(name):
    return pytest.mark.skipif(importlib.util.find_spec(name) is None,
                              reason=f"{name} not installed")


_jax = _installed("jax")

_JAX_SCRIPT = """
import jax
events = {"chunk_seconds": 0.0, "cache_hits": 0}
def on_duration(event, duration, fun_name="", **_):
    # (recorded around a load from the cache too)
    if event.endswith("backend_compile_duration") and "chunk" in fun_name:
        events["chunk_seconds"] += duration
def on_event(event, **_):
    if event == "/jax/compilation_cache/cache_hits":
        events["cache_hits"] += 1
jax.monitoring.register_event_duration_secs_listener(on_duration)
jax.monitoring.register_event_listener(on_event)
draws = draws_hash("jax")
print(json.dumps(dict(events, dir=jax.config.jax_compilation_cache_dir, draws=draws)))
"""


def _run(**env):
    return _subprocess(_JAX_SCRIPT, XLA_FLAGS="--xla_force_host_platform_device_count=2", **env)


@_jax
def test_jax_second_process_loads_the_chunk_and_draws_the_same(tmp_path):
    where = os.path.join(str(tmp_path), "jax", disk_cache.cpu_tag())
    first = _run(PPL_CACHE_DIR=str(tmp_path))
    assert first["dir"] == where
    assert first["cache_hits"] == 0 and first["chunk_seconds"] > 0.2
    stored = [f for f in os.listdir(where) if f.startswith("jit_chunk")]
    assert stored, os.listdir(where)

    second = _run(PPL_CACHE_DIR=str(tmp_path))
    assert second["cache_hits"] >= 1
    assert second["chunk_seconds"] < first["chunk_seconds"] / 5     # ~1.5 s -> ~0.01 s
    assert second["draws"] == first["draws"]

    uncached = _run(PPL_CACHE_DIR="0")
    assert uncached["dir"] is None
    assert uncached["cache_hits"] == 0 and uncached["chunk_seconds"] > 0.2
    assert uncached["draws"] == first["draws"]


@pytest.fixture
def jax_cache():
    """``ppl.backends.jax.cache``; JAX's cache settings restored after the test, which lets ppl
    choose them (nothing compiles in between, so JAX never opens the directory)."""
    jax = pytest.importorskip("jax")
    from ppl.backends.jax import cache
    names = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
             "jax_compilation_cache_max_size", "jax_enable_compilation_cache")
    saved = {n: getattr(jax.config, n) for n in names}
    yield jax, cache
    for name, value in saved.items():
        jax.config.update(name, value)


def test_jax_cache_on_with_its_limits(monkeypatch, tmp_path, jax_cache):
    jax, cache = jax_cache
    where = tmp_path / "jax" / disk_cache.cpu_tag()
    where.mkdir(parents=True)
    for i in range(4):                                       # the two oldest go past 250 bytes
        f = where / f"jit_f{i}-cache"
        f.write_bytes(b"x" * 100)
        os.utime(f, (1000 + i, 1000 + i))
    monkeypatch.setenv("PPL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_MAX_BYTES", 250)
    jax.config.update("jax_compilation_cache_dir", None)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    assert cache.use_compilation_cache() == str(where)
    assert jax.config.jax_compilation_cache_dir == str(where)
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 0.2
    assert jax.config.jax_compilation_cache_max_size == -1       # JAX's own bound left off
    assert sorted(os.listdir(where)) == ["jit_f2-cache", "jit_f3-cache"]


def test_jax_a_users_choice_is_kept(monkeypatch, tmp_path, jax_cache):
    jax, cache = jax_cache
    monkeypatch.setenv("PPL_CACHE_DIR", str(tmp_path / "ppl"))
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "mine"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 5.0)
    assert cache.use_compilation_cache() == str(tmp_path / "mine")
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 5.0
    assert not (tmp_path / "ppl").exists()

    jax.config.update("jax_compilation_cache_dir", None)
    jax.config.update("jax_enable_compilation_cache", False)
    assert cache.use_compilation_cache() is None
    assert jax.config.jax_compilation_cache_dir is None


def test_jax_unwritable_directory_means_no_cache(monkeypatch, tmp_path, jax_cache):
    jax, cache = jax_cache
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("PPL_CACHE_DIR", str(blocker / "sub"))
    jax.config.update("jax_compilation_cache_dir", None)
    assert cache.use_compilation_cache() is None
    assert jax.config.jax_compilation_cache_dir is None
