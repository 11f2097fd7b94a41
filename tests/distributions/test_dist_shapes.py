"""Shape semantics (sample + batch + event) and the wrappers: to_event / Independent, expand,
mask, Delta, ImproperUniform, Unit; on every backend and float dtype."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from conftest import to_numpy

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.distributions import constraints

# (id, build, batch_shape, event_shape)
SHAPES = [
    ("scalar", lambda: dist.Normal(0.0, 1.0), (), ()),
    ("batch", lambda: dist.Normal(ops.zeros(3), 1.0), (3,), ()),
    ("broadcast", lambda: dist.Normal(ops.zeros((2, 1)), ops.ones(3)), (2, 3), ()),
    ("broadcast-3", lambda: dist.StudentT(ops.full((4, 1, 1), 5.0), ops.zeros((2, 1)),
                                          ops.ones(3)), (4, 2, 3), ()),
    ("to_event", lambda: dist.Normal(ops.zeros((2, 3)), 1.0).to_event(1), (2,), (3,)),
    ("to_event-all", lambda: dist.Laplace(ops.ones((2, 3)), 1.0).to_event(), (), (2, 3)),
    ("expand", lambda: dist.Exponential(1.0).expand((2, 3)), (2, 3), ()),
    ("expand-interior", lambda: dist.Normal(ops.zeros((2, 1)), 1.0).expand((4, 2, 3)),
     (4, 2, 3), ()),
    ("expand-to_event", lambda: dist.HalfNormal(2.0).expand((3,)).to_event(1), (), (3,)),
    ("to_event-expand", lambda: dist.Normal(ops.zeros(3), 1.0).to_event(1).expand((2,)),
     (2,), (3,)),
    ("mask", lambda: dist.Normal(ops.zeros(3), 1.0).mask(ops.asarray([True, False, True])),
     (3,), ()),
    ("mask-broadcast", lambda: dist.Normal(ops.zeros(3), 1.0).mask(
        ops.asarray([[True], [False]])), (2, 3), ()),
    ("delta", lambda: dist.Delta(ops.ones((2, 3)), event_dim=1), (2,), (3,)),
    ("truncated", lambda: dist.TruncatedNormal(ops.zeros((2, 1)), 1.0, low=ops.zeros(3)),
     (2, 3), ()),
    ("uniform", lambda: dist.Uniform(ops.zeros(2), ops.ones((3, 1)) * 2.0), (3, 2), ()),
]


# Shapes do not depend on the float dtype; jax compiles its gamma sampler once per shape, so
# only one case here draws gammas (StudentT).
@pytest.mark.dtypes("float32")
@pytest.mark.parametrize("sample_shape", [(), (5,), (2, 4)], ids=str)
@pytest.mark.parametrize("case", SHAPES, ids=[c[0] for c in SHAPES])
def test_shapes(case, sample_shape, backend):
    _, build, batch, event = case
    d = build()
    assert d.batch_shape == batch and d.event_shape == event
    assert d.shape(sample_shape) == tuple(sample_shape) + batch + event
    x = d.sample(ppl.random.key(1), sample_shape)
    assert tuple(ops.shape(x)) == tuple(sample_shape) + batch + event
    lp = d.log_prob(x)
    assert tuple(ops.shape(lp)) == tuple(sample_shape) + batch
    assert np.all(np.isfinite(to_numpy(lp)))
    # a value broadcast against the batch from a smaller shape
    lp1 = d.log_prob(x[(0,) * len(sample_shape)] if sample_shape else x)
    assert tuple(ops.shape(lp1)) == batch


def test_to_event_sums(backend, dtype):
    loc = np.array([[0.0, 1.0, -1.0], [2.0, 0.5, 0.0]])
    d = dist.Normal(ops.asarray(loc), 2.0).to_event(1)
    v = np.arange(6.0).reshape(2, 3) / 3.0
    ref = st.norm(loc, 2.0).logpdf(v).sum(-1)
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(to_numpy(d.log_prob(ops.asarray(v))), ref, rtol=tol)
    assert d.support.event_dim == 1
    np.testing.assert_allclose(to_numpy(d.mean), np.broadcast_to(loc, (2, 3)))
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims"):
        dist.Normal(ops.zeros(3), 1.0).to_event(2)


def test_expand_independent_draws(backend):
    """Expanded entries are independent draws, not copies, and have the base's marginals."""
    d = dist.Normal(ops.asarray([[0.0], [10.0]]), 1.0).expand((3, 2, 4))
    x = to_numpy(d.sample(ppl.random.key(0), (2000,)))
    assert x.shape == (2000, 3, 2, 4)
    flat0 = x[:, :, 0, :].reshape(2000, -1)
    assert np.abs(np.corrcoef(flat0.T) - np.eye(12)).max() < 0.1
    np.testing.assert_allclose(x[:, :, 0].mean(), 0.0, atol=0.05)
    np.testing.assert_allclose(x[:, :, 1].mean(), 10.0, atol=0.05)
    np.testing.assert_allclose(x.std(axis=0), 1.0, atol=0.1)
    np.testing.assert_allclose(to_numpy(d.mean), np.broadcast_to([[0.0], [10.0]], (3, 2, 4)))
    with pytest.raises(ValueError, match="cannot broadcast"):
        dist.Normal(ops.zeros(3), 1.0).expand((2,))


def test_mask(backend, dtype):
    d = dist.Normal(ops.zeros(3), 1.0)
    v = ops.asarray([0.5, 1.0, -2.0])
    m = dist.Normal(ops.zeros(3), 1.0).mask(ops.asarray([True, False, True]))
    ref = st.norm.logpdf([0.5, 1.0, -2.0]) * np.array([1, 0, 1])
    np.testing.assert_allclose(to_numpy(m.log_prob(v)), ref, rtol=1e-5)
    np.testing.assert_allclose(to_numpy(d.mask(False).log_prob(v)), np.zeros(3))
    assert d.mask(True) is d
    # the gradient of a masked-out -inf entry is zero, not nan
    e = dist.Exponential(1.0)

    def f(x):
        return ops.sum(e.mask(ops.asarray([True, False])).log_prob(x))

    g = to_numpy(ops.grad(f)(ops.asarray([1.0, -1.0])))
    np.testing.assert_allclose(g, [-1.0, 0.0])
    with pytest.raises(TypeError, match="bool"):
        d.mask(ops.asarray([1.0, 0.0, 1.0]))


def test_delta(backend, dtype):
    d = dist.Delta(ops.asarray([1.0, 2.0]), log_density=0.5)
    lp = to_numpy(d.log_prob(ops.asarray([1.0, 3.0])))
    assert lp[0] == 0.5 and lp[1] == -np.inf
    v = dist.Delta(ops.asarray([[1.0, 2.0]]), event_dim=1)
    assert v.batch_shape == (1,) and v.event_shape == (2,)
    np.testing.assert_array_equal(to_numpy(v.log_prob(ops.asarray([[1.0, 2.0], [1.0, 0.0]]))),
                                  [0.0, -np.inf])
    np.testing.assert_array_equal(to_numpy(v.sample(ppl.random.key(0), (3,))),
                                  np.ones((3, 1, 2)) * [1.0, 2.0])
    np.testing.assert_array_equal(to_numpy(v.variance), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="event_dim"):
        dist.Delta(ops.zeros(2), event_dim=2)


def test_improper_uniform(backend):
    d = dist.ImproperUniform(constraints.positive, (2,), (3,))
    assert d.batch_shape == (2,) and d.event_shape == (3,) and d.support.event_dim == 1
    assert tuple(ops.shape(d.log_prob(ops.ones((4, 2, 3))))) == (4, 2)
    np.testing.assert_array_equal(to_numpy(d.log_prob(ops.ones((2, 3)))), np.zeros(2))
    with pytest.raises(NotImplementedError, match="biject_to"):
        d.sample(ppl.random.key(0))
    with pytest.raises(TypeError, match="constraint"):
        dist.ImproperUniform("positive")
    s = dist.ImproperUniform(constraints.simplex, (), (3,))
    assert s.support is constraints.simplex


def test_unit(backend, dtype):
    """NumPyro's ``Unit``: ``log_prob`` is ``log_factor`` whatever the empty value."""
    log_factor = np.array([0.5, -1.25])
    d = dist.Unit(ops.asarray(log_factor))
    assert d.batch_shape == (2,) and d.event_shape == (0,)
    assert d.support is constraints.real
    np.testing.assert_array_equal(to_numpy(d.log_prob(ops.zeros((2, 0)))), log_factor)
    np.testing.assert_array_equal(to_numpy(d.log_prob(ops.zeros((3, 2, 0)))),
                                  np.broadcast_to(log_factor, (3, 2)))
    x = d.sample(ppl.random.key(0), (3,))
    assert tuple(ops.shape(x)) == (3, 2, 0)
    e = d.expand((4, 2))
    assert e.batch_shape == (4, 2) and e.event_shape == (0,)
    np.testing.assert_array_equal(to_numpy(e.log_prob(ops.zeros((4, 2, 0)))),
                                  np.broadcast_to(log_factor, (4, 2)))
    assert tuple(ops.shape(e.sample(ppl.random.key(1), (5,)))) == (5, 4, 2, 0)
    s = dist.Unit(-1.5)
    assert s.batch_shape == () and float(to_numpy(s.log_prob(ops.zeros((0,))))) == -1.5
    # d log_prob / d log_factor = 1 for every entry
    g = ops.grad(lambda f: ops.sum(dist.Unit(f).log_prob(ops.zeros((3, 2, 0)))))(
        ops.asarray(log_factor))
    np.testing.assert_allclose(to_numpy(g), [3.0, 3.0])


def test_contract_flags(backend):
    assert dist.Normal(0.0, 1.0).has_rsample
    assert dist.Normal(0.0, 1.0).to_event(0).has_rsample
    assert not dist.Normal(0.0, 1.0).is_discrete
    assert dist.Normal(ops.zeros(2), 1.0).to_event(1).has_rsample
    assert dist.Gamma(2.0, 1.0).expand((3,)).has_rsample
    assert dist.Normal(0.0, 1.0).arg_constraints["scale"] is constraints.positive
    assert dist.Uniform(0.0, 2.0).support.upper_bound is not None
    assert isinstance(dist.Normal(0.0, 1.0).expand((2,)), dist.ExpandedDistribution)
    assert "Normal" in repr(dist.Normal(0.0, 1.0))
    r = dist.Normal(0.0, 1.0).rsample(ppl.random.key(0), (2,))
    assert tuple(ops.shape(r)) == (2,)
