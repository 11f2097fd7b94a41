"""Backend selection: ``available_backends``, ``set_backend``, ``use_backend`` (scoped, restored
on exceptions, per thread), the ``PPL_BACKEND`` default, and the errors for unknown and
uninstalled backends. Also the ``ops``/``ops.linalg``/``ops.nn``/``ppl.random`` namespaces."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from conftest import TEST_BACKENDS

import ppl
from ppl import _state, ops
from ppl import backends as registry
from ppl.backends import LINALG_OPS, NN_OPS, OPS, RANDOM_OPS

OTHER = next((n for n in TEST_BACKENDS if n != "numpy"), "numpy")


@pytest.fixture
def restore_default():
    saved = list(_state._DEFAULT)
    yield
    _state._DEFAULT[:] = saved


def test_available_backends():
    names = ppl.available_backends()
    assert "numpy" in names
    assert all(n in registry.BACKENDS for n in names)
    assert names == [n for n in registry.BACKENDS if registry.installed(n)]


def test_set_and_get_backend(restore_default):
    b = ppl.set_backend("numpy", dtype="float64")
    assert (b.name, b.dtype) == ("numpy", "float64")
    assert ppl.get_backend() is b
    b2 = ppl.set_backend(OTHER)
    assert ppl.get_backend() is b2 and b2.dtype == "float32"
    assert ops.dtype_of(ops.asarray(1.0)) == "float32"


def test_use_backend_scopes_and_nests(restore_default):
    ppl.set_backend("numpy")
    with ppl.use_backend(OTHER, dtype="float64") as b:
        assert ppl.get_backend() is b and (b.name, b.dtype) == (OTHER, "float64")
        assert ops.backend() is b
        with ppl.use_backend("numpy", dtype="float64") as inner:
            assert ppl.get_backend() is inner
        assert ppl.get_backend() is b
    assert ppl.get_backend().name == "numpy" and ppl.get_backend().dtype == "float32"


def test_use_backend_restores_on_exception(restore_default):
    ppl.set_backend("numpy")
    with pytest.raises(RuntimeError, match="inside"):
        with ppl.use_backend(OTHER, dtype="float64"):
            raise RuntimeError("inside")
    assert (ppl.get_backend().name, ppl.get_backend().dtype) == ("numpy", "float32")


def test_use_backend_is_thread_local(restore_default):
    ppl.set_backend("numpy")
    seen, errors = {}, []
    entered, release = threading.Event(), threading.Event()

    def worker():
        try:
            seen["initial"] = ppl.get_backend().name
            with ppl.use_backend(OTHER, dtype="float64"):
                seen["inside"] = (ppl.get_backend().name, ppl.get_backend().dtype)
                entered.set()
                release.wait(10)
        except Exception as err:  # noqa: BLE001
            errors.append(err)
            entered.set()

    with ppl.use_backend("numpy", dtype="float64"):
        t = threading.Thread(target=worker)
        t.start()
        assert entered.wait(30)
        # the worker's use_backend does not leak into this thread, and vice versa
        assert (ppl.get_backend().name, ppl.get_backend().dtype) == ("numpy", "float64")
        release.set()
        t.join(30)
    assert not errors, errors
    assert seen["initial"] == "numpy"  # the process default, not this thread's override
    assert seen["inside"] == (OTHER, "float64")


def _run(code, **env):
    full_env = {k: v for k, v in os.environ.items() if k not in ("PPL_BACKEND", "PPL_DTYPE")}
    full_env.update(env)
    out = subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_ppl_backend_environment_variable():
    code = "import ppl; b = ppl.get_backend(); print(b.name, b.dtype)"
    assert _run(code) == "numpy float32"
    assert _run(code, PPL_BACKEND=OTHER, PPL_DTYPE="float64") == f"{OTHER} float64"


def test_unknown_backend_lists_names():
    with pytest.raises(ValueError) as info:
        ppl.use_backend("nonexistent").__enter__()
    msg = str(info.value)
    assert "nonexistent" in msg and "numpy" in msg
    with pytest.raises(ValueError):
        ppl.set_backend("Numpy ")


def test_bad_dtype():
    with pytest.raises(ValueError, match="float64"):
        ppl.set_backend("numpy", dtype="float16")


def test_not_installed_names_pip_extra(monkeypatch):
    name = "torch"      # an adapter that exists; pretend its framework is not installed
    monkeypatch.setattr(registry, "installed", lambda n: n != name)
    monkeypatch.setattr(registry, "_CACHE", {})
    with pytest.raises(ImportError) as info:
        with ppl.use_backend(name):
            pass
    msg = str(info.value)
    assert "ppl[torch]" in msg and "pip install" in msg


def test_backend_without_adapter_says_so(monkeypatch):
    entry = registry.BACKENDS["jax"]
    monkeypatch.setitem(registry.BACKENDS, "jax", entry._replace(module="ppl.backends._nope"))
    monkeypatch.setattr(registry, "_CACHE", {})
    with pytest.raises(ImportError, match="no adapter") as info:
        ppl.set_backend("jax")
    assert "pip install" not in str(info.value)


def test_namespaces():
    for n in OPS:
        assert callable(getattr(ops, n)), n
        assert n in ops.__all__
    for n in LINALG_OPS:
        assert callable(getattr(ops.linalg, n)), n
    for n in NN_OPS:
        assert callable(getattr(ops.nn, n)), n
    for n in RANDOM_OPS:
        assert callable(getattr(ppl.random, n)), n
    with ppl.use_backend("numpy", dtype="float64"):
        assert float(ops.linalg.cholesky(ops.eye(2) * 4.0)[0, 0]) == 2.0
        assert float(ops.nn.relu(ops.asarray(-1.0))) == 0.0


@pytest.mark.parametrize("name", TEST_BACKENDS)
def test_backend_has_no_missing_ops(name):
    """Every op of the protocol is implemented (no ``NotImplementedError`` left)."""
    b = registry.load(name)
    cls = type(b)
    base = registry.Backend
    missing = []
    for n in list(OPS) + [f"random_{r}" for r in RANDOM_OPS]:
        impl = getattr(cls, n)
        if impl is getattr(base, n) and "raise not_implemented" in _source(getattr(base, n)):
            missing.append(n)
    assert not missing, f"{name} backend leaves unimplemented: {missing}"


def _source(fn):
    import inspect
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return ""


def test_enable_x64_switches_the_default_dtype(restore_default):
    ppl.set_backend(OTHER)
    assert (ppl.enable_x64().name, ppl.get_backend().dtype) == (OTHER, "float64")
    assert float(ops.asarray(1.0) / 3.0) == 1.0 / 3.0             # float64 arithmetic
    with ppl.use_backend("numpy", dtype="float32"):                # a scoped choice is kept
        ppl.enable_x64()
        assert ppl.get_backend().dtype == "float32"
    assert ppl.enable_x64(False).dtype == "float32"
    assert ppl.enable_x64(1).dtype == "float64" and ppl.enable_x64(0).dtype == "float32"
    with pytest.raises(TypeError, match="use_x64"):
        ppl.enable_x64(np.ones(2))


@pytest.mark.skipif("jax" not in TEST_BACKENDS, reason="needs JAX")
def test_set_host_device_count_before_and_after_jax_starts():
    code = (
        "import ppl, jax\n"
        "ppl.set_host_device_count(3)\n"
        "ppl.set_backend('jax')\n"
        "print(len(jax.devices('cpu')), ppl.ops.device_count())\n"
        "import numpy as np; ppl.set_host_device_count(np.int64(3))\n"  # the same count: fine
        "try:\n"
        "    ppl.set_host_device_count(2)\n"
        "except RuntimeError as e:\n"
        "    print('started with 3' in str(e), 'PPL_JAX_CPU_DEVICES=2' in str(e))\n")
    assert _run(code).split() == ["3", "3", "True", "True"]
    with pytest.raises(ValueError, match="at least 1"):
        ppl.set_host_device_count(0)
    with pytest.raises(TypeError, match="must be an int"):
        ppl.set_host_device_count(2.0)
