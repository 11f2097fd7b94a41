"""Shared fixtures and helpers for the ppl test suite.

Fixtures
--------
``backend``
    The active :class:`ppl.backends.Backend`. A test that asks for it runs once per installed
    backend (``ppl.available_backends()``) and float dtype, with ids such as
    ``test_x[jax-float64]``; inside the test the backend is active through
    ``ppl.use_backend(name, dtype=...)``, so plain ``from ppl import ops`` code runs on it.
``dtype``
    The float dtype of that backend, ``"float32"`` or ``"float64"``. It shares the
    parametrization of ``backend`` (asking for ``dtype`` alone also activates the backend).
``assert_close``
    :func:`assert_close` below: compare backend results with a NumPy/SciPy reference, with
    tolerances chosen from the active dtype.

Markers
-------
``@pytest.mark.backends("jax", "torch")``
    Run the test only on these backends (those installed).
``@pytest.mark.dtypes("float64")``
    Run the test only in these dtypes.

Environment
-----------
``PPL_TEST_BACKENDS=numpy,jax``
    Restrict every parametrized test to these backends (default: all installed).

Helpers (importable with ``from conftest import ...``)
------------------------------------------------------
``assert_close``, ``tolerance``, ``to_numpy``, ``fd_grad``, ``TEST_BACKENDS``, ``DTYPES``.
"""

from __future__ import annotations

import os

# OpenBLAS (NumPy's and SciPy's) reads its thread count when it is loaded: set here, it reaches
# the xdist workers started after this file is read. The suite's matrices are small, and two
# workers each running OpenBLAS's threads on two cores made the numpy backend's multivariate
# tests ~1.7x slower (a batched triangular solve is one LAPACK call per matrix)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import scipy.stats as st  # noqa: E402

# torch upgrades a traced graph to inductor's C++ after this many calls; one compile per model
# would dominate the suite's time, so it is exercised in tests/inference/test_torch_inductor.py
os.environ.setdefault("PPL_TORCH_INDUCTOR_AFTER", "1000000000")
# and compiles a loop called often (tests/inference/test_torch_loops.py), likewise off here
os.environ.setdefault("PPL_TORCH_LOOP_AFTER", "0")
# torch jit traces a signature at its first call here (by default at its 32nd: see
# test_torch_jit_traces_after_its_eager_calls), so the tests' few calls run traced graphs
os.environ.setdefault("PPL_TORCH_JIT_AFTER", "1")
# JAX's compiled programs are kept on disk between processes by default; a cache shared by runs
# of the suite would make a test's compiles depend on earlier runs (it has its own tests:
# tests/backends/test_compilation_caches.py), so it is off here even if the caller set one
os.environ["PPL_CACHE_DIR"] = "0"

import ppl  # noqa: E402
from ppl.backends import tree

__all__ = ["DTYPES", "TEST_BACKENDS", "assert_close", "fd_grad", "to_numpy", "tolerance"]

DTYPES = ("float32", "float64")


def _test_backends() -> list[str]:
    installed = ppl.available_backends()
    wanted = os.environ.get("PPL_TEST_BACKENDS", "").strip()
    if not wanted:
        return installed
    names = [n.strip() for n in wanted.split(",") if n.strip()]
    return [n for n in names if n in installed]


#: the backends every parametrized test runs on
TEST_BACKENDS: list[str] = _test_backends()


def pytest_configure(config):
    config.addinivalue_line("markers", "backends(*names): run only on these backends")
    config.addinivalue_line("markers", "dtypes(*dtypes): run only in these float dtypes")


def pytest_generate_tests(metafunc):
    if "_ppl_config" not in metafunc.fixturenames:
        return
    names, dtypes = list(TEST_BACKENDS), list(DTYPES)
    marker = metafunc.definition.get_closest_marker("backends")
    if marker is not None:
        names = [n for n in names if n in marker.args]
    marker = metafunc.definition.get_closest_marker("dtypes")
    if marker is not None:
        dtypes = [d for d in dtypes if d in marker.args]
    params = [pytest.param((n, d), id=f"{n}-{d}") for n in names for d in dtypes]
    if not params:
        params = [pytest.param(None, id="no-backend",
                               marks=pytest.mark.skip(reason="no selected backend installed"))]
    metafunc.parametrize("_ppl_config", params, indirect=True)


@pytest.fixture
def _ppl_config(request):
    return request.param


@pytest.fixture
def backend(_ppl_config):
    """The active backend object (see the module docstring)."""
    name, dtype = _ppl_config
    with ppl.use_backend(name, dtype=dtype) as b:
        yield b


@pytest.fixture
def dtype(backend):
    """``"float32"`` or ``"float64"``: the float dtype of the active backend."""
    return backend.dtype


# ---------------------------------------------------------------------------------- helpers
#: (rtol, atol) per dtype and kind; atol is relative to max(1, max|expected|)
_TOL = {
    ("float32", "value"): (3e-5, 3e-6),
    ("float64", "value"): (1e-9, 1e-12),
    ("float32", "grad"): (3e-4, 3e-5),
    ("float64", "grad"): (2e-6, 2e-8),
}


def tolerance(dtype: str | None = None, kind: str = "value") -> tuple[float, float]:
    """``(rtol, atol)`` for comparing a ``dtype`` result with a float64 reference.

    ``kind`` is ``"value"`` (an op's output) or ``"grad"`` (a gradient against central finite
    differences). ``dtype`` defaults to the active backend's.
    """
    dtype = dtype or ppl.get_backend().dtype
    return _TOL[(str(dtype), kind)]


def to_numpy(x):
    """NumPy copies of the leaves of a pytree of backend arrays (or Python/NumPy values)."""
    backend = ppl.get_backend()

    def conv(a):
        if isinstance(a, np.ndarray | np.generic | int | float | bool):
            return np.asarray(a)
        return np.asarray(backend.to_numpy(a))

    return tree.map(conv, x)


def _leaves(tree, conv) -> list:
    """Leaves in a canonical order: dicts by sorted key (JAX sorts them), sequences in order."""
    if tree is None:
        return []
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in _leaves(tree[k], conv)]
    if isinstance(tree, tuple | list):
        return [leaf for t in tree for leaf in _leaves(t, conv)]
    return [conv(tree)]


def assert_close(actual, expected, *, dtype=None, kind="value", tol=1.0, rtol=None, atol=None,
                 check_dtype=False, err_msg=""):
    """Assert that a backend result matches a NumPy/SciPy reference.

    Parameters
    ----------
    actual
        A backend array, Python/NumPy value or a pytree of them.
    expected
        The reference (NumPy arrays, float64), same tree structure as ``actual``.
    dtype
        The precision ``actual`` was computed in (default: the active backend's dtype); picks
        the default tolerances of :func:`tolerance`.
    kind
        ``"value"`` or ``"grad"`` (looser: gradients are compared with finite differences).
    tol
        Multiplies the default ``rtol`` and ``atol``.
    rtol, atol
        Override the tolerances. By default ``atol`` scales with ``max(1, max|expected|)``.
    check_dtype
        Also require float leaves of ``actual`` to have dtype ``dtype``.

    Shapes must match exactly (no broadcasting).
    """
    dtype = dtype or ppl.get_backend().dtype
    base_rtol, base_atol = tolerance(dtype, kind)
    act_leaves, exp_leaves = _leaves(actual, to_numpy), _leaves(expected, np.asarray)
    assert len(act_leaves) == len(exp_leaves), (
        f"{err_msg} result has {len(act_leaves)} leaves, reference {len(exp_leaves)}"
    )
    for i, (a, e) in enumerate(zip(act_leaves, exp_leaves)):
        where = f"{err_msg} (leaf {i})" if len(act_leaves) > 1 else err_msg
        assert a.shape == e.shape, f"{where}: shape {a.shape}, expected {e.shape}"
        if check_dtype and e.dtype.kind == "f":
            assert str(a.dtype) == str(dtype), f"{where}: dtype {a.dtype}, expected {dtype}"
        if e.dtype.kind in "biu" and a.dtype.kind in "biu":
            np.testing.assert_array_equal(a, e, err_msg=where)
            continue
        e64 = e.astype(np.float64)
        finite = e64[np.isfinite(e64)]
        scale = max(1.0, float(np.max(np.abs(finite)))) if finite.size else 1.0
        r = base_rtol * tol if rtol is None else rtol
        t = base_atol * tol * scale if atol is None else atol
        np.testing.assert_allclose(a.astype(np.float64), e64, rtol=r, atol=t, err_msg=where)


def chi2_pvalue(draws, support, pmf) -> float:
    """Chi-square goodness of fit, pooling cells with expected count < 5 into one."""
    n = len(draws)
    expected = n * np.asarray(pmf)
    observed = np.array([np.sum(draws == s) for s in support], dtype=float)
    big = expected >= 5
    obs = list(observed[big]) + [n - observed[big].sum()]
    exp = list(expected[big]) + [n - expected[big].sum()]
    if exp[-1] < 1e-9:
        obs, exp = obs[:-1], exp[:-1]
    return st.chisquare(obs, exp).pvalue


def fd_grad(f, x, *, eps: float = 1e-6) -> np.ndarray:
    """Central finite-difference gradient of a scalar NumPy function ``f`` at ``x`` (float64)."""
    x = np.array(x, dtype=np.float64, order="C")    # reshape(-1) must be a view, not a copy
    g = np.zeros_like(x)
    flat, gflat = x.reshape(-1), g.reshape(-1)
    assert np.shares_memory(flat, x) and np.shares_memory(gflat, g)
    for i in range(flat.size):
        old = flat[i]
        h = eps * max(1.0, abs(old))
        flat[i] = old + h
        fp = float(f(x))
        flat[i] = old - h
        fm = float(f(x))
        flat[i] = old
        gflat[i] = (fp - fm) / (2 * h)
    return g


@pytest.fixture(name="assert_close")
def _assert_close_fixture():
    """:func:`assert_close` as a fixture."""
    return assert_close


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Free each module's compiled programs when it ends. Every XLA executable keeps ~3 memory
    maps; thousands kept by one pytest process reached Linux's ``vm.max_map_count`` (65530), a
    later JAX compilation failed, and the C++ exception it raised crashed the unwinder (the
    default suite's segfault at 98 %)."""
    yield
    import gc
    import sys
    if "jax" in sys.modules:
        sys.modules["jax"].clear_caches()
    gc.collect()
