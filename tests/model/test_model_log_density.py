"""log_density, potential_fn and postprocess_fn of the model table against SciPy by hand.

Each model in ``_model_cases.CASES`` (regression, hierarchical with plates, nested plates, an
AR(1) unrolled with ops.scan, a logsumexp mixture, bounds that depend on a latent, mask and
scale handlers) runs unchanged on every backend and dtype.
"""

from __future__ import annotations

import numpy as np
import pytest
from _model_cases import (
    CASES,
    constrain_by_hand,
    reference_potential,
    unconstrain_by_hand,
)
from conftest import assert_close, fd_grad, to_numpy

import ppl
from ppl import ops
from ppl.inference import initialize_model, log_density

IDS = [c.name for c in CASES]


def _tol(dtype):
    return 1.0 if dtype == "float64" else 10.0


def _unravel_np(layout, z):
    return {n: z[o:o + s].reshape(shape)
            for n, o, s, shape in zip(layout.names, layout.offsets, layout.sizes, layout.shapes)}


def _z_for(layout, u):
    return layout.ravel({k: ops.asarray(v) for k, v in u.items()})


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_log_density_matches_scipy(backend, case):
    # under ops.jit: one compile on JAX instead of one per eager op (identity elsewhere)
    def run(point):
        lp, tr = log_density(case.model, case.args, case.kwargs, point)
        return lp, {name: tr[name]["value"] for name in case.deterministic}

    point = {k: ops.asarray(v) for k, v in case.point.items()}
    lp, det = ops.jit(run)(point)
    assert ops.shape(lp) == ()
    assert_close(lp, case.log_joint(case.point), tol=_tol(backend.dtype), err_msg=case.name)
    for name, fn in case.deterministic.items():
        assert_close(det[name], fn(case.point), tol=_tol(backend.dtype))


@pytest.mark.backends("numpy", "torch")
@pytest.mark.dtypes("float64")
def test_log_density_eager_trace(backend):
    case = CASES[1]
    lp, tr = log_density(case.model, case.args, case.kwargs, case.point)
    assert_close(lp, case.log_joint(case.point))
    assert [n for n, s in tr.items() if s["type"] == "sample"] == \
        ["mu", "tau", "theta_tilde", "obs"]
    assert tr["obs"]["is_observed"] and not tr["mu"]["is_observed"]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_potential_gradient_and_postprocess(backend, case):
    info = initialize_model(0, case.model, case.args, case.kwargs)
    layout = info.layout
    assert list(layout.names) == list(case.supports)
    assert ops.shape(info.init_position) == (layout.size,)
    u = unconstrain_by_hand(case, case.point)
    z = _z_for(layout, u)
    tol = _tol(backend.dtype)
    # jit: one compile on JAX instead of one per eager op (identity on the other backends)
    potential_fn = ops.jit(info.potential_fn)
    assert_close(potential_fn(z), reference_potential(case, u), tol=tol, err_msg=case.name)

    z64 = np.concatenate([np.ravel(u[n]) for n in layout.names])
    expected_grad = fd_grad(lambda zz: reference_potential(case, _unravel_np(layout, zz)), z64)
    assert_close(ops.jit(ops.grad(info.potential_fn))(z), expected_grad, kind="grad", tol=tol,
                 err_msg=case.name)

    out = ops.jit(info.postprocess_fn)(z)
    values, _ = constrain_by_hand(case, u)
    for name in case.supports:
        assert_close(out[name], values[name], tol=tol, err_msg=name)
    for name, fn in case.deterministic.items():
        assert_close(out[name], fn(values), tol=tol, err_msg=name)


@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_potential_under_jit_and_vmap(backend, case):
    info = initialize_model(1, case.model, case.args, case.kwargs, num_chains=3)
    zs = info.init_position
    assert ops.shape(zs) == (3, info.layout.size)
    zs_np = to_numpy(zs)
    expected = [reference_potential(case, _unravel_np(info.layout, zs_np[i])) for i in range(3)]
    jitted = ops.jit(info.potential_fn)
    for _ in range(2):  # a second call reuses the compiled function: nothing leaked
        assert_close(jitted(zs[0]), expected[0])
    assert_close(ops.jit(ops.vmap(info.potential_fn))(zs), np.array(expected))
    post = ops.jit(ops.vmap(info.postprocess_fn))(zs)
    for name in case.supports:
        assert ops.shape(post[name])[0] == 3


@pytest.mark.dtypes("float64")
def test_dependent_bound_jacobian(backend):
    """beta1 ~ Uniform(0, 1 - alpha1): the transform of beta1 is rebuilt from alpha1 at every
    call, so the potential carries log(1 - alpha1) in its log-Jacobian."""
    case = next(c for c in CASES if c.name == "dependent_bounds")
    info = initialize_model(0, case.model, case.args, case.kwargs)
    from scipy.special import expit, log_expit

    for ua, ub in [(-1.0, 0.5), (0.0, 0.0), (2.0, -1.5)]:
        z = ops.asarray([ua, ub])
        alpha1 = expit(ua)
        beta1 = (1 - alpha1) * expit(ub)
        out = info.postprocess_fn(z)
        assert_close(out["alpha1"], alpha1)
        assert_close(out["beta1"], beta1)
        log_det = (log_expit(ua) + log_expit(-ua) + np.log1p(-alpha1) + log_expit(ub)
                   + log_expit(-ub))
        lp, _ = log_density(case.model, case.args, case.kwargs,
                            {"alpha1": alpha1, "beta1": beta1})
        assert_close(info.potential_fn(z), -(float(to_numpy(lp)) + log_det))


def test_log_density_missing_latent_is_an_error(backend):
    case = CASES[0]
    with pytest.raises(ValueError, match="no value for the latent site 'sigma'"):
        log_density(case.model, case.args, case.kwargs, {"alpha": 0.0, "beta": [0.0, 0.0]})


def test_log_density_of_factor_and_empty_model(backend):
    lp, _ = log_density(lambda: ppl.factor("f", -1.5), (), {}, {})
    assert_close(lp, -1.5)
    lp, tr = log_density(lambda: None, (), {}, {})
    assert_close(lp, 0.0)
    assert len(tr) == 0
