"""Parameters whose shapes do not broadcast: every family with several parameters raises a
``ValueError`` that names the family and each parameter with its shape (not the backend op
that failed), on every backend."""

from __future__ import annotations

import re

import numpy as np
import pytest

import ppl
import ppl.distributions as dist
from ppl import ops


def _a(shape, fill=1.0):
    return ops.asarray(np.full(shape, fill))


def _eye(batch, n=2):
    return ops.asarray(np.broadcast_to(np.eye(n), tuple(batch) + (n, n)).copy())


# (id, build, the parameters the message must list, in order)
CASES = [
    ("Normal", lambda: dist.Normal(_a(3, 0.0), _a(4)),
     "loc with shape (3,) and scale with shape (4,)"),
    ("Cauchy", lambda: dist.Cauchy(_a(3, 0.0), _a((2, 4))),
     "loc with shape (3,) and scale with shape (2, 4)"),
    ("Laplace", lambda: dist.Laplace(_a(3, 0.0), _a(4)),
     "loc with shape (3,) and scale with shape (4,)"),
    ("Logistic", lambda: dist.Logistic(_a(3, 0.0), _a(4)),
     "loc with shape (3,) and scale with shape (4,)"),
    ("StudentT", lambda: dist.StudentT(_a(2, 3.0), _a(3, 0.0), _a(4)),
     "df with shape (2,), loc with shape (3,) and scale with shape (4,)"),
    ("LogNormal", lambda: dist.LogNormal(_a(3, 0.0), _a(4)),
     "loc with shape (3,) and scale with shape (4,)"),
    ("Gamma", lambda: dist.Gamma(_a(3), _a(4)),
     "concentration with shape (3,) and rate with shape (4,)"),
    ("InverseGamma", lambda: dist.InverseGamma(_a(3), _a(4)),
     "concentration with shape (3,) and rate with shape (4,)"),
    ("Weibull", lambda: dist.Weibull(_a(3), _a(4)),
     "scale with shape (3,) and concentration with shape (4,)"),
    ("Beta", lambda: dist.Beta(_a(3), _a(4)),
     "concentration1 with shape (3,) and concentration0 with shape (4,)"),
    ("Uniform", lambda: dist.Uniform(_a(3, 0.0), _a(4)),
     "low with shape (3,) and high with shape (4,)"),
    ("TruncatedNormal", lambda: dist.TruncatedNormal(_a(3, 0.0), 1.0, high=_a(4)),
     "loc with shape (3,), scale with shape () and high with shape (4,)"),
    ("Binomial", lambda: dist.Binomial(_a(3, 5.0), probs=_a(4, 0.5)),
     "total_count with shape (3,) and probs with shape (4,)"),
    ("Binomial-logits", lambda: dist.Binomial(_a(3, 5.0), logits=_a(4, 0.0)),
     "total_count with shape (3,) and logits with shape (4,)"),
    ("NegativeBinomial", lambda: dist.NegativeBinomial(_a(3, 2.0), probs=_a(4, 0.5)),
     "total_count with shape (3,) and probs with shape (4,)"),
    ("Multinomial", lambda: dist.Multinomial(_a(3, 5.0), probs=_a((4, 2), 0.5)),
     "total_count with shape (3,) and probs with batch shape (4,) (shape (4, 2))"),
    ("MultivariateNormal", lambda: dist.MultivariateNormal(_a((3, 2), 0.0),
                                                           covariance_matrix=_eye((4,))),
     "loc with batch shape (3,) (shape (3, 2)) and covariance_matrix with batch shape (4,) "
     "(shape (4, 2, 2))"),
]


@pytest.mark.dtypes("float32")
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_parameters_that_do_not_broadcast(case, backend):
    name, build, params = case
    family = name.split("-")[0]
    expected = f"{family}: {params} do not broadcast"
    with pytest.raises(ValueError, match=re.escape(expected)) as err:
        build()
    assert "broadcast_shapes" not in str(err.value), str(err.value)


@pytest.mark.dtypes("float32")
def test_parameters_that_broadcast(backend):
    """The check rejects only what NumPy's rules reject (size-1 and missing dims broadcast)."""
    assert dist.Normal(_a((2, 1), 0.0), _a(3)).batch_shape == (2, 3)
    assert dist.Multinomial(_a((2, 1), 4.0), probs=_a((3, 2), 0.5)).batch_shape == (2, 3)
    assert dist.TruncatedNormal(0.0, _a(3), low=None, high=_a((2, 1))).batch_shape == (2, 3)


def test_sample_shape_and_batch_shape_take_an_int_and_refuse_the_rest(backend):
    """``sample(key, 3)`` is ``sample(key, (3,))`` and ``expand(3)`` is ``expand((3,))`` for
    every family (they said "'int' object is not iterable"); a float, a string or a negative
    size is an error naming the method and the argument."""
    key = ppl.random.key(0)
    for d in (dist.Normal(0.0, 1.0), dist.Dirichlet(ops.ones(3)), dist.Poisson(2.0),
              dist.Normal(0.0, 1.0).expand([2]).to_event(1)):
        assert tuple(ops.shape(d.sample(key, 4))) == (4,) + d.batch_shape + d.event_shape
        np.testing.assert_array_equal(ops.to_numpy(d.sample(key, 4)),
                                      ops.to_numpy(d.sample(key, (4,))))
    assert dist.Normal(0.0, 1.0).expand(3).batch_shape == (3,)
    with pytest.raises(TypeError, match=r"Normal.sample: sample_shape must be a tuple of ints"):
        dist.Normal(0.0, 1.0).sample(key, 2.5)
    with pytest.raises(TypeError, match=r"Gamma.sample: sample_shape"):
        dist.Gamma(2.0, 1.0).sample(key, "ab")
    with pytest.raises(ValueError, match=r"Normal.expand: batch_shape must have non-negative"):
        dist.Normal(0.0, 1.0).expand((-1,))


def test_a_keyword_the_family_lacks_names_the_family_and_its_arguments(backend):
    """``Normal(loc=0.0, sd=1.0)`` names Normal and its arguments, not the base class whose
    ``__init__`` it inherits (it said ``_LocScale.__init__() got an unexpected keyword``)."""
    with pytest.raises(TypeError, match=re.escape(
            "Normal() got an unexpected keyword argument 'sd'; its arguments are "
            "['loc', 'scale', 'validate_args'].")):
        dist.Normal(loc=0.0, sd=1.0)
    with pytest.raises(TypeError, match=r"^Gamma\(\) got an unexpected keyword argument 'scale'"):
        dist.Gamma(concentration=2.0, scale=1.0)


# (id, build the distribution, shape of a value that does not broadcast with it)
VALUE_CASES = [
    ("Normal", lambda: dist.Normal(_a(3, 0.0), 1.0), (4,)),
    ("Gamma", lambda: dist.Gamma(_a((2, 3)), 1.0), (2, 4)),
    ("Poisson", lambda: dist.Poisson(_a(3)), (5,)),
    ("MultivariateNormal", lambda: dist.MultivariateNormal(_a(3, 0.0), _eye((), 3)), (4,)),
    ("Dirichlet", lambda: dist.Dirichlet(_a(3)), (2, 4)),
    ("Independent", lambda: dist.Normal(_a(3, 0.0), 1.0).to_event(1), (2, 4)),
]


@pytest.mark.dtypes("float32")
@pytest.mark.parametrize("case", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_log_prob_of_a_value_that_does_not_broadcast(case, backend):
    """``log_prob`` of a value whose shape does not broadcast with the batch and event shapes
    names the family, both shapes and the fix (it was the backend op's own error: jax "sub got
    incompatible shapes", torch "The size of tensor a (4) must match", TensorFlow's
    InvalidArgumentError)."""
    name, build, shape = case
    d = build()
    batch, event = d.batch_shape, d.event_shape
    expected = (f"{name}.log_prob: a value of shape {shape} does not broadcast with the "
                f"distribution's batch shape {batch} and event shape {event}; pass a value of "
                f"shape sample_shape + {tuple(batch) + tuple(event)}")
    with pytest.raises(ValueError, match=re.escape(expected)):
        d.log_prob(_a(shape, 0.5))
    # what broadcasts is still accepted: a sample shape in front, size-1 dims
    ok = d.log_prob(_a((2,) + tuple(batch) + tuple(event), 0.25))
    assert tuple(ops.shape(ok)) == (2,) + tuple(batch)
