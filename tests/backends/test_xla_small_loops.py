"""When ppl starts JAX or TensorFlow it asks XLA's CPU compiler to build every ``while`` loop
whose iteration touches less than 256 KiB into one native function
(``xla_cpu_small_while_loop_byte_threshold``, ``ppl.backends.common.xla_flags``): a NUTS leaf on
a small model then pays no kernel launches. XLA reads the flag once per process, so the
end-to-end checks run in fresh processes; the loop is seen hoisted in XLA's optimised program
(its ``xla_cpu_small_call`` attribute), and a NUTS run under the flag is checked against an
analytic posterior."""

import os
import subprocess
import sys

import numpy as np
import pytest

from ppl.backends.common import xla_flags

_OPTION = "xla_cpu_small_while_loop_byte_threshold"

_HOISTED = """
import jax, jax.numpy as jnp
import ppl
ppl.set_backend("jax")
# an iteration that reads and writes ~4 x 300 floats: over XLA's 1 kB default, under ppl's
loop = jax.jit(lambda x: jax.lax.while_loop(
    lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 1.5 + c[1].sum()), (0, x)))
text = loop.lower(jnp.ones(300)).compile().as_text()
print("hoisted" if "xla_cpu_small_call" in text else "tasks")
"""


def _run(script, **env):
    full = dict(os.environ, JAX_PLATFORMS="cpu", PPL_CACHE_DIR="0")
    full.pop("XLA_FLAGS", None)
    full.pop("PPL_JAX_SMALL_LOOP_BYTES", None)
    full.update(env)
    proc = subprocess.run([sys.executable, "-c", script], env=full, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


def test_small_loops_compile_into_one_function_when_ppl_starts_jax():
    pytest.importorskip("jax")
    assert _run(_HOISTED) == "hoisted"


def test_zero_keeps_xla_default_and_a_user_threshold_is_kept():
    pytest.importorskip("jax")
    assert _run(_HOISTED, PPL_JAX_SMALL_LOOP_BYTES="0") == "tasks"
    assert _run(_HOISTED, XLA_FLAGS=f"--xla_backend_extra_options={_OPTION}=1024") == "tasks"


_NUTS = """
import numpy as np
import ppl, ppl.distributions as dist
from ppl.inference import MCMC, NUTS
ppl.set_backend("jax", dtype="float64")
import os
assert "xla_cpu_small_while_loop_byte_threshold=262144" in os.environ["XLA_FLAGS"]
y = np.array([0.8, 1.9, 1.1, 2.4, 0.3, 1.6, 2.2, 0.9])

def model(y):
    mu = ppl.sample("mu", dist.Normal(0.0, 2.0))
    with ppl.plate("N", y.shape[0]):
        ppl.sample("y", dist.Normal(mu, 1.0), obs=y)

mcmc = MCMC(NUTS(model), num_warmup=500, num_samples=2000, num_chains=2, progress_bar=False)
mcmc.run(0, ppl.ops.asarray(y))
mu = np.asarray(ppl.ops.to_numpy(mcmc.get_samples()["mu"]))
print(f"{mu.mean()} {mu.std()} {mu.size}")
"""


def test_nuts_under_the_flag_matches_the_conjugate_posterior():
    """Normal mean with known unit noise and a N(0, 2^2) prior: the posterior is normal with
    precision 1/4 + n and mean sum(y) / (1/4 + n); the sample mean is within 5 of its Monte
    Carlo standard errors (ESS taken as a quarter of the draws) and the sd within 10 %."""
    pytest.importorskip("jax")
    mean, sd, size = map(float, _run(_NUTS).split())
    y = np.array([0.8, 1.9, 1.1, 2.4, 0.3, 1.6, 2.2, 0.9])
    precision = 0.25 + y.size
    post_mean, post_sd = y.sum() / precision, precision ** -0.5
    assert abs(mean - post_mean) < 5 * post_sd / np.sqrt(size / 4)
    assert abs(sd / post_sd - 1) < 0.1


_THRESHOLD = f"--xla_backend_extra_options={_OPTION}=262144"


@pytest.mark.parametrize("given, wanted, expected", [
    ("", "", _THRESHOLD),
    ("--xla_force_host_platform_device_count=2", "",
     f"--xla_force_host_platform_device_count=2 {_THRESHOLD}"),
    # XLA adds repeated extra-option flags up (a map), so a second one keeps the user's
    ("--xla_backend_extra_options=xla_cpu_fold_all_constants=1", "",
     f"--xla_backend_extra_options=xla_cpu_fold_all_constants=1 {_THRESHOLD}"),
    (f"--xla_backend_extra_options={_OPTION}=1024", "",
     f"--xla_backend_extra_options={_OPTION}=1024"),
    ("", "65536", f"--xla_backend_extra_options={_OPTION}=65536"),
    ("", "0", ""),
    # a value not starting with "-" is a file XLA reads its flags from: not touched
    ("/etc/xla_flags.txt", "", "/etc/xla_flags.txt"),
])
def test_flags_join_xla_flags(monkeypatch, given, wanted, expected):
    monkeypatch.setenv("XLA_FLAGS", given)
    monkeypatch.setenv("PPL_JAX_SMALL_LOOP_BYTES", wanted)
    xla_flags.request_small_loop_kernels()
    assert os.environ["XLA_FLAGS"] == expected
    xla_flags.request_small_loop_kernels()        # once is enough: not added twice
    assert os.environ["XLA_FLAGS"] == expected


@pytest.mark.parametrize("wanted", ["lots", "-5", "1.5", str(2**63)])
def test_a_bad_threshold_is_named(monkeypatch, wanted):
    monkeypatch.setenv("PPL_JAX_SMALL_LOOP_BYTES", wanted)
    with pytest.raises(ValueError, match="PPL_JAX_SMALL_LOOP_BYTES must be a whole number"):
        xla_flags.request_small_loop_kernels()


def test_too_late_once_jax_has_started(monkeypatch):
    """JAX's XLA has read its flags by then: the JAX backend changes nothing."""
    pytest.importorskip("jax")
    from ppl.backends.jax import compile as jax_compile

    monkeypatch.setattr(jax_compile, "_jax_started", lambda: True)
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.delenv("PPL_JAX_SMALL_LOOP_BYTES", raising=False)
    jax_compile.use_small_loop_kernels()
    assert os.environ["XLA_FLAGS"] == ""


_TF_HOISTED = """
import os
import ppl
ppl.set_backend("tensorflow")
import tensorflow as tf

@tf.function(jit_compile=True)
def loop(x):
    return tf.while_loop(lambda i, x: i < 10, lambda i, x: (i + 1, x * 1.5 + tf.reduce_sum(x)),
                         (0, x))

x = tf.ones(300)
loop(x)
hlo = loop.experimental_get_compiler_ir(x)(stage="optimized_hlo")
print("hoisted" if "xla_cpu_small_call" in hlo else "tasks")
"""


def test_tensorflow_backend_asks_for_small_loops_too():
    pytest.importorskip("tensorflow")
    assert _run(_TF_HOISTED) == "hoisted"
    assert _run(_TF_HOISTED, PPL_JAX_SMALL_LOOP_BYTES="0") == "tasks"
