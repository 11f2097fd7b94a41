"""``python -m ppl demo``: one log-density written once over ``ppl.ops``, evaluated and
differentiated on every installed backend, with the time of one ``value_and_grad`` call."""

from __future__ import annotations

import time

import numpy as np

from ppl import ops
from ppl._state import available_backends, use_backend

__all__ = ["logistic_regression_data", "logistic_log_density", "run_demo"]


def logistic_regression_data(num_data: int = 2000, dim: int = 25, seed: int = 0):
    """Synthetic logistic-regression data: ``X`` (N, D) standard normal, ``y`` in {0, 1}."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((num_data, dim))
    beta = rng.standard_normal(dim) * 0.5
    y = (rng.random(num_data) < 1.0 / (1.0 + np.exp(-x @ beta))).astype(np.float64)
    return x, y


def logistic_log_density(beta, x, y):
    """``log N(beta | 0, 1) + sum_n log Bernoulli(y_n | sigmoid(x_n . beta))``."""
    logits = ops.matmul(x, beta)
    log_lik = ops.sum(y * logits - ops.softplus(logits))
    return log_lik - 0.5 * ops.sum(beta * beta)


def _time_call(fn, *args, repeats: int = 200) -> float:
    for _ in range(3):
        out = fn(*args)
    ops.to_numpy(out[0])
    start = time.perf_counter()
    for _ in range(repeats):
        out = fn(*args)
    ops.to_numpy(out[0])
    return (time.perf_counter() - start) / repeats


def run_demo(backends=None, dtype: str = "float64", num_data: int = 2000, dim: int = 25) -> dict:
    """Evaluate and differentiate the logistic log-density on each backend; print a table.

    Returns ``{backend: {"value": float, "grad_max_abs_err": float, "us_per_call": float}}``,
    where the gradient error is against a central finite-difference gradient in NumPy.
    """
    x_np, y_np = logistic_regression_data(num_data, dim)
    beta_np = np.linspace(-0.5, 0.5, dim)

    def np_logp(b):
        z = x_np @ b
        return float(np.sum(y_np * z - np.logaddexp(0.0, z)) - 0.5 * b @ b)

    h = 1e-6
    fd = np.array([(np_logp(beta_np + h * e) - np_logp(beta_np - h * e)) / (2 * h)
                   for e in np.eye(dim)])
    results = {}
    print(f"{'backend':<12}{'dtype':<9}{'log p':>16}{'max |grad - FD|':>18}"
          f"{'value_and_grad':>18}")
    for name in backends or available_backends():
        with use_backend(name, dtype=dtype) as backend:
            x, y, beta = ops.asarray(x_np), ops.asarray(y_np), ops.asarray(beta_np)
            vg = ops.jit(ops.value_and_grad(logistic_log_density))
            value, grad = vg(beta, x, y)
            err = float(np.max(np.abs(ops.to_numpy(grad) - fd)))
            seconds = _time_call(vg, beta, x, y)
            results[name] = {"value": float(ops.to_numpy(value)), "grad_max_abs_err": err,
                             "us_per_call": seconds * 1e6}
            print(f"{name:<12}{backend.dtype:<9}{results[name]['value']:>16.6f}{err:>18.2e}"
                  f"{seconds * 1e6:>15.1f} us")
    return results
