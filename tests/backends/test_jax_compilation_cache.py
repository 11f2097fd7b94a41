"""ppl keeps JAX's compiled programs on disk between processes (``backends/jax/cache.py``): a
second process running the same model loads the sampler's chunk instead of compiling it, and
draws exactly what a process without the cache draws. A user's own cache setting is kept.

The suite runs with ``PPL_JAX_CACHE_DIR=0`` (``conftest.py``); these tests set it themselves."""

import json
import os
import subprocess
import sys

import pytest

jax = pytest.importorskip("jax")

from ppl.backends.jax import cache  # noqa: E402

_SCRIPT = """
import hashlib, json, jax, numpy as np
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
import ppl, ppl.distributions as dist
from ppl import ops
from ppl.inference import MCMC, NUTS
ppl.set_backend("jax", dtype="float64")
def model(y):
    mu = ppl.sample("mu", dist.Normal(0.0, 5.0))
    sigma = ppl.sample("sigma", dist.HalfNormal(2.0))
    with ppl.plate("data", y.shape[0]):
        ppl.sample("y", dist.Normal(mu, sigma), obs=y)
y = ops.asarray(np.array([1.2, 0.3, -0.4, 2.2, 1.1, 0.8, 1.9, 0.1]))
mcmc = MCMC(NUTS(model), num_warmup=40, num_samples=40, num_chains=2, progress_bar=False)
mcmc.run(3, y)
draws = np.concatenate([np.asarray(v).ravel() for _, v in sorted(mcmc.get_samples().items())])
print(json.dumps(dict(events, dir=jax.config.jax_compilation_cache_dir,
                      draws=hashlib.sha256(draws.tobytes()).hexdigest())))
"""


def _run(**env):
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
           "JAX_PLATFORMS": "cpu", **env}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_chunk_and_draws_the_same(tmp_path):
    where = str(tmp_path / "cache")
    first = _run(PPL_JAX_CACHE_DIR=where)
    assert first["dir"] == where
    assert first["cache_hits"] == 0 and first["chunk_seconds"] > 0.2
    stored = [f for f in os.listdir(where) if f.startswith("jit_chunk")]
    assert stored, os.listdir(where)

    second = _run(PPL_JAX_CACHE_DIR=where)
    assert second["cache_hits"] >= 1
    assert second["chunk_seconds"] < first["chunk_seconds"] / 5     # ~1.5 s -> ~0.01 s
    assert second["draws"] == first["draws"]

    uncached = _run(PPL_JAX_CACHE_DIR="0")
    assert uncached["dir"] is None
    assert uncached["cache_hits"] == 0 and uncached["chunk_seconds"] > 0.2
    assert uncached["draws"] == first["draws"]


@pytest.fixture
def jax_cache_config():
    """Restore JAX's cache settings after a test that lets ppl choose them (nothing compiles
    in between, so JAX never opens the directory)."""
    names = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
             "jax_compilation_cache_max_size", "jax_enable_compilation_cache")
    saved = {n: getattr(jax.config, n) for n in names}
    yield
    for name, value in saved.items():
        jax.config.update(name, value)


def test_default_directory_is_per_user_and_per_cpu(monkeypatch, tmp_path):
    monkeypatch.delenv("PPL_JAX_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = cache.cache_dir()
    parent, leaf = os.path.split(path)
    assert parent == os.path.join(str(tmp_path), "ppl", "jax")
    assert leaf.startswith(os.uname().machine) and len(leaf.rsplit("-", 1)[1]) == 12
    monkeypatch.setenv("PPL_JAX_CACHE_DIR", "0")
    assert cache.cache_dir() is None
    monkeypatch.setenv("PPL_JAX_CACHE_DIR", "~/x")
    assert cache.cache_dir() == os.path.join(os.path.expanduser("~"), "x")


def test_ppl_turns_the_cache_on_with_its_limits(monkeypatch, tmp_path, jax_cache_config):
    where = tmp_path / "c"
    monkeypatch.setenv("PPL_JAX_CACHE_DIR", str(where))
    jax.config.update("jax_compilation_cache_dir", None)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    assert cache.use_compilation_cache() == str(where)
    assert jax.config.jax_compilation_cache_dir == str(where)
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 0.2
    assert where.is_dir() and (where.stat().st_mode & 0o077) == 0


def test_a_users_choice_is_kept(monkeypatch, tmp_path, jax_cache_config):
    monkeypatch.setenv("PPL_JAX_CACHE_DIR", str(tmp_path / "ppl"))
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "mine"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 5.0)
    assert cache.use_compilation_cache() == str(tmp_path / "mine")
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 5.0
    assert not (tmp_path / "ppl").exists()

    jax.config.update("jax_compilation_cache_dir", None)
    jax.config.update("jax_enable_compilation_cache", False)
    assert cache.use_compilation_cache() is None
    assert jax.config.jax_compilation_cache_dir is None


def test_an_unwritable_directory_means_no_cache(monkeypatch, tmp_path, jax_cache_config):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("PPL_JAX_CACHE_DIR", str(blocker / "sub"))
    jax.config.update("jax_compilation_cache_dir", None)
    assert cache.use_compilation_cache() is None
    assert jax.config.jax_compilation_cache_dir is None
