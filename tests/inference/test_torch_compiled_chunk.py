"""torch compiles a ``scan`` called often outside any trace (``ppl.backends.torch.loops.run_scan``,
the MCMC driver's chunk of iterations) into one graph of torch's scan operator, with the
``ops.cond`` of a traced predicate in it as torch's condition operator and its ``while_loop``
as nested loop operators (``ppl.backends.torch.loop_calls``). The compiled scan must give what
a NumPy loop gives, with new closure values at every call; and NUTS run through a compiled
chunk must still sample its posterior (a conjugate normal model: the exact posterior).

The rest of the suite runs with loop compilation off (``tests/conftest.py``)."""

import numpy as np
import pytest
from test_torch_loops import _compile_at_once  # noqa: F401  (autouse: loops compile at once)

import ppl
from ppl import ops
from ppl import random as prandom

pytestmark = [pytest.mark.backends("torch"), pytest.mark.dtypes("float64")]


def _compiled(kind):
    from ppl.backends.torch import loops
    return sum(e.graph is not None and e.kind == kind for e in loops._cache.values())


def _collatz_chunk(scale, key, xs):
    """A scan whose step counts Collatz steps of its ``x`` with a ``while_loop``, then adds
    either a uniform draw or ``scale`` (``ops.cond`` on the flag in ``xs``)."""
    def step(total, x):
        n, flag = x

        def collatz(c):
            m, k = c
            return ops.where(m % 2 == 0, m // 2, 3 * m + 1), k + 1

        _, steps = ops.while_loop(lambda c: c[0] != 1, collatz, (n, ops.zeros((), "int64")))
        add = ops.cond(flag, lambda s: prandom.uniform(prandom.fold_in(key, n), ()) + s,
                       lambda s: scale * s, ops.asarray(1.0))
        return total + steps + add, (steps, add)

    return ops.scan(step, ops.zeros(()), xs)


def _collatz_numpy(scale, key, ns, flags):
    total, steps_all, adds = 0.0, [], []
    for n, flag in zip(ns, flags):
        m, k = int(n), 0
        while m != 1:
            m, k = (m // 2 if m % 2 == 0 else 3 * m + 1), k + 1
        add = float(ops.to_numpy(prandom.uniform(prandom.fold_in(key, int(n)), ()))) + 1.0 \
            if flag else scale
        total += k + add
        steps_all.append(k)
        adds.append(add)
    return total, np.array(steps_all), np.array(adds)


def test_scan_with_loop_and_cond_compiles_and_matches_numpy(backend):
    rng = np.random.default_rng(3)
    for call in range(3):
        ns = rng.integers(1, 60, size=7)
        flags = rng.random(7) < 0.5
        scale, key = 0.5 + call, prandom.key(call)
        total, (steps, adds) = _collatz_chunk(ops.asarray(scale), key,
                                              (ops.asarray(ns, "int64"), ops.asarray(flags)))
        want_total, want_steps, want_adds = _collatz_numpy(scale, key, ns, flags)
        np.testing.assert_array_equal(ops.to_numpy(steps), want_steps)
        np.testing.assert_allclose(ops.to_numpy(adds), want_adds, rtol=1e-12)
        np.testing.assert_allclose(float(ops.to_numpy(total)), want_total, rtol=1e-12)
    # one graph for the three calls: the scale and key were its inputs, not constants
    assert _compiled("scan") == 1


def test_cond_branches_must_agree(backend):
    """Inside a compiled graph as under ``jax.lax.cond``: branches returning different
    structures are an error naming ``ops.cond`` (the scan then runs eagerly and the eager
    ``cond`` takes one branch; the result stays right)."""
    def step(c, flag):
        out = ops.cond(flag, lambda s: (s + 1.0, s), lambda s: s - 1.0, c)
        return (out[0] if isinstance(out, tuple) else out), c

    flags = ops.asarray([True, True])
    total, _ = ops.scan(step, ops.zeros(()), flags)
    assert float(ops.to_numpy(total)) == 2.0
    assert _compiled("scan") == 0


def test_nuts_through_compiled_chunks_samples_the_posterior(backend):
    """y_i ~ Normal(mu, 1), mu ~ Normal(0, 2), 12 observations: the posterior of ``mu`` is
    Normal(m, s) in closed form. 4 chains of 300 + 600 iterations, the driver's chunks compiled
    (the first 20 chunks' calls eager, as ``PPL_TORCH_LOOP_AFTER=1`` compiles at the first call):
    the mean within 5 Monte Carlo standard errors, the sd within 10 %."""
    from ppl.inference import MCMC, NUTS

    y = np.random.default_rng(0).normal(1.3, 1.0, size=12)

    def model(y):
        mu = ppl.sample("mu", ppl.distributions.Normal(0.0, 2.0))
        with ppl.plate("data", len(y)):
            ppl.sample("y", ppl.distributions.Normal(mu, 1.0), obs=y)

    mcmc = MCMC(NUTS(model), num_warmup=300, num_samples=600, num_chains=4,
                progress_bar=False)
    mcmc.run(prandom.key(1), ops.asarray(y))
    assert _compiled("scan") == 1
    mu = ops.to_numpy(mcmc.get_samples()["mu"])
    precision = 1 / 4.0 + len(y)
    m, s = y.sum() / precision, precision ** -0.5
    assert abs(mu.mean() - m) < 5 * s / np.sqrt(mu.size / 4)
    assert abs(mu.std() / s - 1) < 0.1
