"""The chain plate (``ppl.inference.chain_plate``): the model table run once for many chains,
against SciPy by hand per chain; models that do not broadcast over chains are refused and keep
the per-chain functions.

The chain plate is what numpy samples with (its ``vmap`` is a loop). The batched functions are
backend-neutral; besides numpy they are checked on torch (eager JAX and TensorFlow run the
model table op by op, minutes for no new coverage of this code).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest
from _model_cases import CASES, constrain_by_hand, reference_potential
from conftest import assert_close, fd_grad, to_numpy

import ppl
import ppl.distributions as dist
from ppl import handlers, ops
from ppl.inference import chain_plate as chain_plate_module
from ppl.inference import initialize_model
from ppl.inference.chain_plate import (
    batched_value_and_grad,
    chain_plate,
    chain_plate_constrain,
    chain_plate_value_and_grad,
    draw_block,
    postprocess_draws,
)
from ppl.inference.program_data import data_nbytes

IDS = [c.name for c in CASES]
#: not plate code, so a leading chain dimension breaks them: ``alpha + x @ beta`` with
#: ``beta`` a latent vector (a matrix product over the batch), ``ops.scan`` over a plate's
#: latent (it scans its leading axis, which becomes the chain axis), ``locs[0]`` for the first
#: entry of an event dimension (``locs[..., 0]`` would broadcast)
REFUSED = {"linreg", "ar1_scan", "mixture"}
C = 3


class _Setup(NamedTuple):
    init_position: object
    potential_fn: object
    chain_plate: object


def _setup(model, args, kwargs, num_chains=C):
    info = initialize_model(1, model, args, kwargs, num_chains=num_chains)
    plate = info.chain_plate
    if plate is None:    # built where the backend's vmap is a loop; build it here
        proto = handlers.trace(handlers.seed(model, 0)).get_trace(*args, **kwargs)
        plate = chain_plate(model, args, kwargs, info.layout, proto)
    return info, _Setup(info.init_position, info.potential_fn, plate)


def _unravel(layout, z):
    return {n: z[o:o + s].reshape(shape)
            for n, o, s, shape in zip(layout.names, layout.offsets, layout.sizes, layout.shapes)}


def _points(z, seed=0):
    noise = np.random.default_rng(seed).normal(size=ops.shape(z))
    return z + ops.asarray(noise, ops.dtype_of(z))


@pytest.mark.backends("numpy", "torch")
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_batched_potential_and_gradient_match_scipy(backend, case):
    info, setup = _setup(case.model, case.args, case.kwargs)
    vg = chain_plate_value_and_grad(setup)
    if case.name in REFUSED:
        assert vg is None, f"{case.name} does not broadcast over chains: must be refused"
        return
    assert vg is not None, f"{case.name} is plate code: the chain plate must be used"
    tol = 1.0 if backend.dtype == "float64" else 10.0
    for seed in (1, 2):      # the first call records (numpy) or compiles, the second replays
        zs = _points(setup.init_position, seed)
        U, G = vg(zs)
        zs_np = np.asarray(to_numpy(zs), np.float64)
        assert ops.shape(U) == (C,) and ops.shape(G) == ops.shape(zs)
        for c in range(C):
            def ref(z):
                return reference_potential(case, _unravel(info.layout, z))
            assert_close(U[c], ref(zs_np[c]), tol=tol, err_msg=f"{case.name} chain {c}")
            assert_close(G[c], fd_grad(ref, zs_np[c]), kind="grad", tol=tol,
                         err_msg=f"{case.name} chain {c}")


@pytest.mark.backends("numpy", "torch")
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_batched_postprocessing_matches_scipy(backend, case):
    info, setup = _setup(case.model, case.args, case.kwargs)
    draws = _points(ops.concat([setup.init_position, setup.init_position], axis=0), 3)
    out = chain_plate_constrain(info.postprocess_fn, setup.chain_plate, draws)
    if case.name in REFUSED:
        assert out is None
        return
    assert out is not None
    tol = 1.0 if backend.dtype == "float64" else 10.0
    draws_np = np.asarray(to_numpy(draws), np.float64)
    for i, z in enumerate(draws_np):
        values, _ = constrain_by_hand(case, _unravel(info.layout, z))
        for name in case.supports:
            assert_close(out[name][i], values[name], tol=tol, err_msg=name)
        for name, fn in case.deterministic.items():
            assert_close(out[name][i], fn(values), tol=tol, err_msg=name)


@pytest.mark.backends("numpy", "torch")
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_blockwise_postprocessing_matches_scipy(backend, case, monkeypatch):
    """Draws of a model with large data are mapped back ``draw_block`` draws at a time (the
    model run once per draw: torch, or numpy without a chain plate); here every model's data
    count as large. Each draw's sites against SciPy by hand, and the whole against one call
    over all the draws."""
    monkeypatch.setattr(chain_plate_module, "POSTPROCESS_BYTES", 1)
    block = draw_block(data_nbytes(case.args, case.kwargs))
    assert block == 16
    info = initialize_model(1, case.model, case.args, case.kwargs, num_chains=1)
    n = 2 * block + 5                  # two whole blocks and one padded with 11 copies
    draws = _points(ops.broadcast_to(info.init_position[:1], (n, info.layout.size)), 4)
    sizes, jit = [], ops.jit

    def sizing_jit(fn):           # the draws each compiled call maps
        compiled = jit(fn)
        return lambda z: sizes.append(ops.shape(z)[0]) or compiled(z)

    with monkeypatch.context() as m:
        m.setattr(ops, "jit", sizing_jit)
        got = postprocess_draws(info.postprocess_fn, None, draws, block=block)
    assert sizes == [block] * 3       # one compiled signature
    whole = postprocess_draws(info.postprocess_fn, None, draws)
    assert sorted(got) == sorted(whole)
    for name in whole:
        assert ops.shape(got[name]) == ops.shape(whole[name]), name
        assert_close(got[name], to_numpy(whole[name]), err_msg=name)
    tol = 1.0 if backend.dtype == "float64" else 10.0
    draws_np = np.asarray(to_numpy(draws), np.float64)
    for i, z in enumerate(draws_np):
        values, _ = constrain_by_hand(case, _unravel(info.layout, z))
        for name in case.supports:
            assert_close(got[name][i], values[name], tol=tol, err_msg=f"{name} draw {i}")
        for name, fn in case.deterministic.items():
            assert_close(got[name][i], fn(values), tol=tol, err_msg=f"{name} draw {i}")


Y8 = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])


def _pooled_mean(y):
    """Not plate code: the mean over every axis of a plate's latent (so, with a chain
    dimension, over every chain)."""
    with ppl.plate("J", 8):
        theta = ppl.sample("theta", dist.Normal(0.0, 5.0))
    ppl.sample("m", dist.Normal(ops.mean(theta), 1.0), obs=ops.asarray(3.0))
    with ppl.plate("J2", 8):
        ppl.sample("y", dist.Normal(theta, 10.0), obs=y)


def _shape_reader(y):
    """Not plate code: the latent's shape sizes an array."""
    with ppl.plate("J", 8):
        theta = ppl.sample("theta", dist.Normal(0.0, 5.0))
    flat = ops.reshape(theta, (ops.shape(theta)[0],))
    with ppl.plate("J2", 8):
        ppl.sample("y", dist.Normal(flat, 10.0), obs=y)


@pytest.mark.backends("numpy")
@pytest.mark.parametrize("model", [_pooled_mean, _shape_reader])
def test_models_that_mix_chains_keep_the_loop(backend, model):
    """Refused by the check, and the batched gradient is exactly the per-chain loop's."""
    info, setup = _setup(model, (ops.asarray(Y8),), {})
    assert setup.chain_plate is not None
    assert chain_plate_value_and_grad(setup) is None
    vg = batched_value_and_grad(setup, C)
    zs = _points(setup.init_position)
    looped = ops.vmap(ops.value_and_grad(setup.potential_fn))(zs)
    for got, want in zip(vg(zs), looped):
        np.testing.assert_array_equal(to_numpy(got), to_numpy(want))


@pytest.mark.backends("numpy")
def test_enumerated_models_have_no_chain_plate(backend):
    def model(y):
        p = ppl.sample("p", dist.Beta(2.0, 2.0))
        with ppl.plate("N", 4):
            z = ppl.sample("z", dist.Bernoulli(p), infer={"enumerate": "parallel"})
            ppl.sample("y", dist.Normal(ops.astype(z, ops.dtype_of(p)), 1.0), obs=y)

    info = initialize_model(0, model, (ops.asarray([0.1, 0.9, 1.2, -0.3]),), {}, num_chains=2)
    assert info.chain_plate is None
