"""initialize_model: layouts of constrained supports (simplex, correlation Cholesky, ordered),
the Jacobian of the potential against a finite-difference determinant, the initialisation
strategies, and the errors for models that cannot be initialised."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from conftest import assert_close, fd_grad, to_numpy

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.distributions import constraints
from ppl.inference import (
    init_to_feasible,
    init_to_mean,
    init_to_median,
    init_to_sample,
    init_to_uniform,
    init_to_value,
    initialize_model,
    log_density,
)

pytestmark = pytest.mark.dtypes("float64")


def structured():
    ppl.sample("p", dist.Dirichlet(ops.ones(3)))
    with ppl.plate("G", 2):
        ppl.sample("q", dist.Dirichlet(ops.asarray([1.0, 2.0, 3.0])))
    ppl.sample("o", dist.ImproperUniform(constraints.ordered_vector, (), (4,)))
    ppl.sample("s", dist.HalfNormal(1.0))


def correlation():
    ppl.sample("L", dist.LKJCholesky(3, 2.0))
    ppl.sample("s", dist.HalfNormal(1.0))


# free coordinates of each constrained value (the measure its density is written in)
FREE = {
    "p": lambda v: v[..., :-1],
    "q": lambda v: v[..., :-1],
    "L": lambda v: v[np.tril_indices(3, -1)],
    "o": lambda v: v,
    "s": lambda v: v,
}

LAYOUTS = [
    (structured, {"p": ((2,), (3,)), "q": ((2, 2), (2, 3)), "o": ((4,), (4,)), "s": ((), ())}),
    (correlation, {"L": ((3,), (3, 3)), "s": ((), ())}),
]


@pytest.mark.parametrize("model, expected", LAYOUTS, ids=["simplex-ordered", "corr_cholesky"])
def test_layout_and_jacobian(backend, model, expected):
    info = initialize_model(0, model)
    layout = info.layout
    assert layout.names == tuple(expected)
    assert layout.shapes == tuple(u for u, _ in expected.values())
    assert layout.constrained_shapes == tuple(c for _, c in expected.values())
    assert layout.size == sum(int(np.prod(u)) for u, _ in expected.values())
    z0 = to_numpy(info.init_position)
    assert np.all(np.abs(z0) < 2.0)
    post = ops.jit(info.postprocess_fn)

    def free_coords(z):
        out = post(ops.asarray(z))
        return np.concatenate([np.ravel(FREE[n](np.asarray(to_numpy(out[n]))))
                               for n in layout.names])

    # log|det d(free coords)/dz| by central differences, independent of ppl's transforms
    h = 1e-6
    jac = np.stack([(free_coords(z0 + h * e) - free_coords(z0 - h * e)) / (2 * h)
                    for e in np.eye(layout.size)], axis=1)
    log_det = np.linalg.slogdet(jac)[1]
    values = post(info.init_position)
    lp = ops.jit(lambda v: log_density(model, (), {}, v)[0])(values)
    assert_close(ops.jit(info.potential_fn)(info.init_position),
                 -(float(to_numpy(lp)) + log_det), rtol=1e-6, atol=1e-6)
    potential = ops.jit(info.potential_fn)
    expected_grad = fd_grad(lambda z: float(to_numpy(potential(ops.asarray(z)))), z0)
    assert_close(ops.jit(ops.grad(info.potential_fn))(info.init_position), expected_grad,
                 kind="grad", tol=10.0)
    # round trip: ravel(unravel(z)) == z
    assert_close(layout.ravel(layout.unravel(info.init_position)), z0)


def prior_model():
    ppl.sample("loc", dist.Normal(3.0, 1.0))
    with ppl.plate("N", 2):
        ppl.sample("scale", dist.LogNormal(0.0, 0.5))


@pytest.mark.parametrize("radius", [2.0, 0.5])
def test_init_to_uniform_radius(backend, radius):
    info = initialize_model(3, prior_model, init_strategy=init_to_uniform(radius=radius),
                            num_chains=4)
    z = to_numpy(info.init_position)
    assert z.shape == (4, 3)
    assert np.all(np.abs(z) < radius)
    assert len({tuple(row) for row in z}) == 4           # chains start apart


def test_init_to_value_median_feasible(backend):
    info = initialize_model(0, prior_model,
                            init_strategy=init_to_value(values={"loc": 1.5, "scale": 2.0}))
    assert_close(info.init_position, np.array([1.5, np.log(2.0), np.log(2.0)]))
    info = initialize_model(0, prior_model, init_strategy=init_to_value(values={"loc": 1.5}))
    assert_close(info.init_position[0], 1.5)              # others: uniform in (-2, 2)
    assert np.all(np.abs(to_numpy(info.init_position)[1:]) < 2)
    info = initialize_model(0, prior_model, init_strategy=init_to_feasible())
    assert_close(info.init_position, np.zeros(3))
    info = initialize_model(0, prior_model, init_strategy=init_to_median(num_samples=101))
    # median of 101 draws: loc near 3, log(scale) near 0 (5 standard errors of the median)
    se = np.sqrt(np.pi / 2 / 101)
    assert np.all(np.abs(to_numpy(info.init_position) - [3.0, 0.0, 0.0]) < 5 * se * np.array(
        [1.0, 0.5, 0.5]))
    info = initialize_model(0, prior_model, init_strategy=init_to_mean())
    assert_close(info.init_position[0], 3.0)
    assert ops.shape(initialize_model(0, prior_model, init_strategy=init_to_sample())
                     .init_position) == (3,)
    with pytest.raises(ValueError, match=r"site 'scale' has shape \(3,\)"):
        initialize_model(0, prior_model, init_strategy=init_to_value(values={"scale": [1., 2, 3]}))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_bad_init_names_the_sites(backend):
    def wall():
        x = ppl.sample("x", dist.Normal(0.0, 1.0))
        ppl.factor("wall", ops.log(x * 0.0))            # -inf everywhere

    with pytest.raises(ValueError, match=r"log-density not finite at \['wall'\]"):
        initialize_model(0, wall, max_tries=5)

    def kink():
        x = ppl.sample("x", dist.Normal(0.0, 1.0))
        ppl.sample("y", dist.Normal(0.0, 1.0), obs=0.0)
        ppl.factor("kink", ops.sqrt(x * x * 0.0))       # finite, but d/dx is 0/0

    with pytest.raises(ValueError, match=r"gradient not finite for \['x'\]"):
        initialize_model(0, kink, max_tries=3)

    def outside():
        ppl.sample("s", dist.HalfNormal(1.0))

    with pytest.raises(ValueError, match=r"value for site 's' is outside its support"):
        initialize_model(0, outside, init_strategy=init_to_value(values={"s": -1.0}))

    def pinned(y):
        m = ppl.sample("m", dist.Normal(0.0, 1.0))
        ppl.sample("y", dist.Normal(m, 0.0 * m), obs=y)   # scale 0: log-density not finite

    with pytest.raises(ValueError, match=r"after 1 attempt\(s\).*not finite at \['y'\]"):
        initialize_model(0, pinned, (0.5,), init_strategy=init_to_value(values={"m": 0.0}))


def test_initialize_model_argument_errors(backend):
    def discrete():
        ppl.sample("k", dist.Bernoulli(probs=0.3))

    with pytest.raises(ValueError, match="'k' is a discrete latent variable"):
        initialize_model(0, discrete)
    with pytest.raises(TypeError, match="rng_key must be an int seed"):
        initialize_model(0.5, prior_model)
    with pytest.raises(TypeError, match="init_strategy must be"):
        initialize_model(0, prior_model, init_strategy=None)
    with pytest.raises(ValueError, match="num_chains"):
        initialize_model(0, prior_model, num_chains=0)
    with pytest.raises(ValueError, match="radius must be positive"):
        init_to_uniform(radius=0.0)


def test_potential_ignores_observed_and_matches_scipy(backend):
    """A one-site check that is easy to read: HalfNormal scale with exp transform."""
    def model(y):
        s = ppl.sample("s", dist.HalfNormal(2.0))
        ppl.sample("y", dist.Normal(0.0, s), obs=y)

    info = initialize_model(0, model, (0.7,))
    for u in (-1.0, 0.0, 1.3):
        s = np.exp(u)
        expected = -(st.halfnorm(scale=2).logpdf(s) + st.norm(0, s).logpdf(0.7) + u)
        assert_close(info.potential_fn(ops.asarray([u])), expected)
