"""``ops.cholesky`` of a matrix that is not positive definite: NaN, on every backend, eager and
compiled (LAPACK raised on numpy: a NUTS proposal that made a covariance matrix indefinite, in
a Gaussian process, stopped the whole run where JAX, torch and TensorFlow go on), and NUTS on a
model whose covariance is indefinite over part of the prior's support, against quadrature."""

import numpy as np
import pytest
from conftest import to_numpy

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.diagnostics import effective_sample_size
from ppl.inference import MCMC, NUTS

BAD = np.array([[1.0, 2.0], [2.0, 1.0]])
GOOD = np.array([[4.0, 1.0], [1.0, 3.0]])


@pytest.mark.parametrize("compiled", [False, True])
def test_nan_where_not_positive_definite(backend, dtype, compiled):
    chol = ops.jit(ops.cholesky) if compiled else ops.cholesky
    batch = to_numpy(chol(ops.asarray(np.stack([GOOD, BAD, GOOD]))))
    np.testing.assert_allclose(batch[0], np.linalg.cholesky(GOOD), rtol=1e-6)
    np.testing.assert_allclose(batch[2], np.linalg.cholesky(GOOD), rtol=1e-6)
    assert np.isnan(batch[1][np.tril_indices(2)]).all()
    assert np.isnan(to_numpy(chol(ops.asarray(BAD)))[np.tril_indices(2)]).all()


def test_gradient_of_a_positive_definite_batch_member_is_finite(backend):
    """The NaN of one matrix does not reach the gradient of the log-determinant of another."""
    def logdet_first(a):
        return 2.0 * ops.sum(ops.log(ops.diagonal(ops.cholesky(a)[0])))
    g = to_numpy(ops.grad(logdet_first)(ops.asarray(np.stack([GOOD, BAD]))))
    np.testing.assert_allclose(g[0], np.linalg.inv(GOOD), rtol=1e-5)


Y = np.random.default_rng(3).multivariate_normal([0.0, 0.0], [[1.0, 0.3], [0.3, 1.0]], 20)


def model(y):
    """The correlation's prior reaches past [-1, 1], where the covariance is indefinite."""
    rho = ppl.sample("rho", dist.Uniform(-1.5, 1.5))
    cov = ops.stack([ops.stack([ops.ones_like(rho), rho]), ops.stack([rho, ops.ones_like(rho)])])
    with ppl.plate("N", len(y)):
        ppl.sample("y", dist.MultivariateNormal(ops.zeros(2), covariance_matrix=cov), obs=y)


def _posterior_mean():
    rho = np.linspace(-0.999, 0.999, 20001)
    det = 1.0 - rho ** 2
    x0, x1 = Y[:, :1], Y[:, 1:]
    quad = x0 ** 2 + x1 ** 2 - 2 * rho * x0 * x1
    lp = (-0.5 * np.log(det) - 0.5 * quad / det).sum(0)
    w = np.exp(lp - lp.max())
    mean = w @ rho / w.sum()
    return mean, np.sqrt(w @ (rho - mean) ** 2 / w.sum())


@pytest.mark.dtypes("float64")
@pytest.mark.filterwarnings("ignore::ppl.inference.run_warnings.SamplingWarning")  # a short run
def test_nuts_where_the_covariance_can_be_indefinite(backend):
    mean, sd = _posterior_mean()
    mcmc = MCMC(NUTS(model), num_warmup=300, num_samples=400, num_chains=2, progress_bar=False)
    mcmc.run(0, Y)
    rho = to_numpy(mcmc.get_samples(group_by_chain=True)["rho"])
    assert np.all(np.abs(rho) < 1.0)
    ess = float(effective_sample_size(rho))
    assert ess > 100, ess
    assert abs(rho.mean() - mean) < 4 * sd / np.sqrt(ess), (rho.mean(), mean, sd, ess)
