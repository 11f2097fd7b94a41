"""``SimplexToOrderedTransform`` (NumPyro's name): category probabilities onto ordered cut points
``anchor + logit(cumsum(p)[:-1])``, the induced-Dirichlet prior of ordinal regression
(Betancourt 2019). Values and inverse against NumPy, the log-Jacobian against a finite-difference
determinant over the simplex's free coordinates, the transformed Dirichlet's density against a
hand-written change of variables, and NUTS on that prior against draws pushed forward in NumPy."""

import numpy as np
import pytest
import scipy.stats as st
from conftest import to_numpy
from scipy.special import expit, logit

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.distributions import constraints
from ppl.distributions.transforms import SimplexToOrderedTransform
from ppl.inference import MCMC, NUTS

P = np.array([[0.1, 0.2, 0.3, 0.4], [0.55, 0.05, 0.25, 0.15]])
ANCHOR = np.array([0.0, -1.5])


def _cuts(p, anchor):
    return logit(np.cumsum(p, axis=-1)[..., :-1]) + np.asarray(anchor)[..., None]


def _fd_log_det(p, anchor):
    """log|det| of the map from the first K - 1 entries of ``p`` to the cut points."""
    def f(free):
        return _cuts(np.append(free, 1.0 - free.sum()), anchor)

    free, h = p[:-1], 1e-6
    jac = np.stack([(f(free + h * e) - f(free - h * e)) / (2 * h) for e in np.eye(free.size)],
                   axis=-1)
    return np.linalg.slogdet(jac)[1]


def test_values_inverse_and_jacobian(backend, dtype):
    t = SimplexToOrderedTransform(ops.asarray(ANCHOR))
    p = ops.asarray(P)
    y = t(p)
    tol = 1e-9 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(to_numpy(y), _cuts(P, ANCHOR), rtol=tol, atol=tol)
    assert np.all(to_numpy(constraints.ordered_vector.check(y)))
    np.testing.assert_allclose(to_numpy(t.inv(y)), P, rtol=10 * tol, atol=10 * tol)
    ref = [_fd_log_det(P[i], ANCHOR[i]) for i in range(2)]
    np.testing.assert_allclose(to_numpy(t.log_abs_det_jacobian(p, y)), ref,
                               rtol=1e-5 if dtype == "float64" else 1e-4)
    np.testing.assert_allclose(to_numpy(t.inv.log_abs_det_jacobian(y, p)), -np.asarray(ref),
                               rtol=1e-5 if dtype == "float64" else 1e-4)
    assert t.forward_shape((2, 4)) == (2, 3) and t.inverse_shape((2, 3)) == (2, 4)
    # a scalar anchor, the default
    np.testing.assert_allclose(to_numpy(SimplexToOrderedTransform()(p)), _cuts(P, 0.0),
                               rtol=tol, atol=tol)


def test_the_induced_dirichlet_density(backend, dtype):
    """``log Dir(p) + sum_k log(s_k (1 - s_k))`` at ``p = inv(c)``, written out in NumPy."""
    alpha = np.array([2.0, 3.0, 1.5, 4.0])
    d = dist.TransformedDistribution(dist.Dirichlet(ops.asarray(alpha)),
                                     SimplexToOrderedTransform(0.7))
    assert d.event_shape == (3,) and d.batch_shape == ()
    cuts = np.array([[-1.2, 0.1, 0.9], [-0.3, 0.2, 2.5]])
    s = expit(cuts - 0.7)
    p = np.concatenate([s[:, :1], np.diff(s, axis=-1), 1.0 - s[:, -1:]], axis=-1)
    ref = np.array([st.dirichlet.logpdf(row, alpha) for row in p]) \
        + np.sum(np.log(s) + np.log1p(-s), axis=-1)
    np.testing.assert_allclose(to_numpy(d.log_prob(ops.asarray(cuts))), ref,
                               rtol=1e-9 if dtype == "float64" else 1e-4)
    draws = d.sample(ppl.random.key(0), (200,))
    assert tuple(ops.shape(draws)) == (200, 3)
    assert np.all(np.diff(to_numpy(draws), axis=-1) > 0)


ALPHA = np.array([2.0, 3.0, 4.0])


def induced_prior():
    ppl.sample("c", dist.TransformedDistribution(dist.Dirichlet(ops.asarray(ALPHA)),
                                                 SimplexToOrderedTransform(0.5)))


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.dtypes("float64")
def test_nuts_samples_the_induced_prior(backend):
    """NUTS on the cut points (an ordered vector, unconstrained by ``biject_to``) against
    Dirichlet draws pushed through the map in NumPy: means within 4 MC standard errors."""
    ref = _cuts(np.random.default_rng(0).dirichlet(ALPHA, 400_000), 0.5)
    mcmc = MCMC(NUTS(induced_prior), num_warmup=300, num_samples=500, num_chains=2,
                progress_bar=False)
    mcmc.run(0)
    c = to_numpy(mcmc.get_samples()["c"])
    assert c.shape == (1000, 2) and np.all(np.diff(c, axis=-1) > 0)
    se = ref.std(0) / np.sqrt(250)                # ~250 effective draws of 1000
    np.testing.assert_array_less(np.abs(c.mean(0) - ref.mean(0)), 4 * se)
    np.testing.assert_allclose(c.std(0), ref.std(0), rtol=0.2)
