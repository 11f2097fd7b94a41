"""TensorFlow's C++ start-up lines stay off the terminal; everything else written to the
process's standard error while it starts still arrives."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("tensorflow")

from ppl.backends.tensorflow.native_log import is_start_up_noise, quiet_start_up  # noqa: E402

# as TensorFlow 2.21 wrote them on this machine (import, then the runtime's start)
START_UP = """\
WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
I0000 00:00:1795793761.456141   20010 port.cc:153] oneDNN custom operations are on. You may see slightly different numerical results due to floating-point round-off errors from different computation orders. To turn them off, set the environment variable `TF_ENABLE_ONEDNN_OPTS=0`.
I0000 00:00:1795793761.457198   20010 cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will not be used.
I0000 00:00:1795796626.986065   26776 cpu_feature_guard.cc:227] This TensorFlow binary is optimized to use available CPU instructions in performance-critical operations.
To enable the following instructions: AVX2 AVX512F AVX512_VNNI AVX512_BF16 FMA, in other operations, rebuild TensorFlow with the appropriate compiler flags.
E0000 00:00:1795793763.866781   20010 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)
"""  # noqa: E501

OTHER = """\
warmup [vectorized, 4 chains] 400/8000 (5%) 3.8s step_size=0.386 divergences=4
E0000 00:00:1795793763.866781   20010 gpu_device.cc:2000] Cannot dlopen some GPU libraries.
I0000 00:00:1795793763.866781   20010 xla_compilation_cache.cc:11] Compiled cluster using XLA!
UserWarning: something a user should see
"""


def test_start_up_lines_are_told_from_others():
    assert all(is_start_up_noise(line) for line in START_UP.splitlines())
    assert not any(is_start_up_noise(line) for line in OTHER.splitlines())


def test_quiet_start_up_writes_back_all_but_the_start_up_lines(capfd, monkeypatch):
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    with quiet_start_up():
        os.write(2, (START_UP[:200] + START_UP[200:] + OTHER).encode())
    assert capfd.readouterr().err == OTHER


def test_quiet_start_up_drops_nothing_when_the_start_fails(capfd, monkeypatch):
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    with pytest.raises(ImportError, match="no such"):
        with quiet_start_up():
            os.write(2, START_UP.encode())
            raise ImportError("no such library")
    assert capfd.readouterr().err == START_UP


def test_the_level_jax_sets_still_filters(capfd, monkeypatch):
    """``import jax`` sets ``TF_CPP_MIN_LOG_LEVEL=1`` (fewer lines), which kept the filter off
    when JAX ran before TensorFlow (``ppl compare``'s order)."""
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "1")
    with quiet_start_up():
        os.write(2, (START_UP + OTHER).encode())
    assert capfd.readouterr().err == OTHER


def test_a_user_setting_of_the_log_level_is_left_alone(capfd, monkeypatch):
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    with quiet_start_up():
        os.write(2, START_UP.encode())
    assert capfd.readouterr().err == START_UP


def test_a_fresh_process_starting_the_backend_writes_no_start_up_lines():
    """In a new process (TensorFlow not yet imported, JAX used first, as ``ppl compare``
    does), selecting the backend and drawing numbers writes none of TensorFlow's start-up
    lines, and a Python warning still shows."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    code = ("import warnings, ppl\n"
            "ppl.set_backend('jax')\n"
            "print(ppl.ops.to_numpy(ppl.ops.exp(ppl.ops.asarray(0.0))))\n"
            "ppl.set_backend('tensorflow')\n"
            "print(ppl.ops.to_numpy(ppl.random.normal(ppl.random.key(0), (2,))).shape)\n"
            "warnings.warn('still shown')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1.0", "(2,)"]
    assert "still shown" in out.stderr
    assert not any(is_start_up_noise(line) for line in out.stderr.splitlines()), out.stderr
    assert "absl" not in out.stderr and "cuInit" not in out.stderr, out.stderr
