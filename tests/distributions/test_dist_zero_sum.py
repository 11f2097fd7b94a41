"""ZeroSumNormal (``distributions/zero_sum.py``) and ZeroSumTransform
(``distributions/vector_transforms.py``) against independent references, on every backend and
float dtype (the ``backend`` fixture of ``tests/conftest.py``).

References, built here with NumPy: an orthonormal basis of the zero-sum subspace from the SVD of
the centring matrix ``I - J/N`` (a Kronecker product of them for two axes), in which the density
is ``scipy.stats.multivariate_normal(0, scale**2 I)``; the covariance ``scale**2 P`` (``P`` the
projection onto the subspace); the explicit Householder matrix ``I - 2 v v^T / v^T v``,
``v = e_N + 1/sqrt(N)`` whose first ``N - 1`` columns the transform applies along each axis; and
central finite differences (of the reference for gradients, of the transform for its Jacobian).
Draws: sums zero, covariance within 6 standard errors, KS tests of the coordinates. NUTS: a
model with zero-sum sites alone (posterior = prior) and a hierarchical one with data, against
the exact Gaussian posterior.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from conftest import fd_grad, to_numpy

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.diagnostics import mcse
from ppl.distributions import constraints
from ppl.distributions.transforms import ZeroSumTransform, biject_to
from ppl.distributions.zero_sum import ZeroSumNormal
from ppl.inference import MCMC, NUTS

_SCALES = np.array([0.7, 2.0])
_SHAPES = [(4,), (3, 2)]


def _tol(dtype, grad=False):
    if dtype == "float64":
        return (1e-6, 1e-8) if grad else (1e-9, 1e-10)
    return (2e-3, 2e-3) if grad else (1e-5, 1e-5)


def _basis_1d(n):
    """Orthonormal basis (n, n - 1) of the vectors summing to zero: the left singular vectors
    of the centring matrix with singular value 1."""
    u, s, _ = np.linalg.svd(np.eye(n) - np.ones((n, n)) / n)
    assert np.allclose(s[: n - 1], 1.0) and abs(s[-1]) < 1e-12
    return u[:, : n - 1]


def _basis(shape):
    """Orthonormal basis (prod N, prod (N - 1)) of the zero-sum subspace, C-order flattening."""
    out = np.ones((1, 1))
    for n in shape:
        out = np.kron(out, _basis_1d(n))
    return out


def _projection(shape):
    b = _basis(shape)
    return b @ b.T


def _ref_log_prob(x, scale, shape):
    """The Gaussian N(0, scale^2 I) of the coordinates B^T x, with SciPy."""
    x = np.asarray(x, dtype=np.float64)
    k = len(shape)
    flat = x.reshape(x.shape[: x.ndim - k] + (-1,))
    u = flat @ _basis(shape)
    scale = np.broadcast_to(scale, u.shape[:-1])
    out = np.empty(u.shape[:-1])
    for idx in np.ndindex(out.shape):
        mvn = st.multivariate_normal(np.zeros(u.shape[-1]), scale[idx] ** 2)
        out[idx] = mvn.logpdf(u[idx])
    return out


def _centre(z, k):
    for axis in range(-k, 0):
        z = z - z.mean(axis=axis, keepdims=True)
    return z


def _values(shape, batch=(3, 2), seed=0):
    z = np.random.default_rng(seed).normal(size=batch + shape) * 1.5
    return _centre(z, len(shape))


def _householder_basis(n):
    v = np.ones(n) / np.sqrt(n)
    v[-1] += 1.0
    h = np.eye(n) - 2.0 * np.outer(v, v) / (v @ v)
    return h[:, : n - 1]


# ==================================================================================== log_prob
@pytest.mark.parametrize("shape", _SHAPES, ids=str)
def test_log_prob_against_the_subspace_gaussian(backend, dtype, shape):
    d = ZeroSumNormal(ops.asarray(_SCALES), event_shape=shape)
    assert d.batch_shape == (2,) and d.event_shape == shape and d.has_rsample
    assert isinstance(d.support, constraints.zero_sum) and d.support.event_dim == len(shape)
    assert not d.is_discrete
    x = _values(shape).astype(dtype).astype(np.float64)
    scale = _SCALES.astype(dtype).astype(np.float64)
    rtol, atol = _tol(dtype)
    got = to_numpy(d.log_prob(ops.asarray(x)))
    assert got.shape == (3, 2)
    np.testing.assert_allclose(got, _ref_log_prob(x, scale, shape), rtol=rtol, atol=atol * 50)
    # differences between two points are the Gaussian ratio exactly (no normaliser involved)
    x2 = _values(shape, seed=1)
    diff = to_numpy(d.log_prob(ops.asarray(x)) - d.log_prob(ops.asarray(x2)))
    k = tuple(range(-len(shape), 0))
    ratio = -0.5 * ((x ** 2).sum(k) - (x2 ** 2).sum(k)) / scale ** 2
    np.testing.assert_allclose(diff, ratio, rtol=rtol * 10, atol=atol * 50)
    # NumPyro's construction: iid normals of the reduced shape pushed through the transform
    reduced = tuple(n - 1 for n in shape)
    base = dist.Normal(0.0, ops.asarray(_SCALES).reshape((2,) + (1,) * len(shape)))
    pushed = dist.TransformedDistribution(base.expand((2,) + reduced).to_event(len(shape)),
                                          ZeroSumTransform(len(shape)))
    assert pushed.event_shape == shape and pushed.batch_shape == (2,)
    np.testing.assert_allclose(to_numpy(pushed.log_prob(ops.asarray(x))), got,
                               rtol=rtol, atol=atol * 50)
    # entropy: that of the Gaussian in the subspace's coordinates
    dof = int(np.prod([n - 1 for n in shape]))
    ref_h = [st.multivariate_normal(np.zeros(dof), s ** 2).entropy() for s in scale]
    np.testing.assert_allclose(to_numpy(d.entropy()), ref_h, rtol=rtol, atol=atol * 10)


@pytest.mark.parametrize("shape", _SHAPES, ids=str)
def test_log_prob_gradients_against_finite_differences(backend, dtype, shape):
    x = _values(shape, batch=(2,)).astype(dtype).astype(np.float64)
    scale = _SCALES.astype(dtype).astype(np.float64)

    def f(p):
        return ops.sum(ZeroSumNormal(p["scale"], event_shape=shape).log_prob(p["x"]))

    grads = ops.grad(f)({"scale": ops.asarray(scale), "x": ops.asarray(x)})
    rtol, atol = _tol(dtype, grad=True)
    # the reference is defined off the subspace through the projection, so its derivative in x
    # is P x / scale^2: the same as the family's x / scale^2 at points of the subspace
    for name, ref in [("scale", fd_grad(lambda s: _ref_log_prob(x, s, shape).sum(), scale)),
                      ("x", fd_grad(lambda v: _ref_log_prob(v, scale, shape).sum(), x))]:
        np.testing.assert_allclose(to_numpy(grads[name]), ref, rtol=rtol,
                                   atol=atol * max(1.0, np.abs(ref).max()), err_msg=name)


# =================================================================================== transform
@pytest.mark.parametrize("shape", _SHAPES, ids=str)
def test_transform_is_the_householder_isometry(backend, dtype, shape):
    k = len(shape)
    t = ZeroSumTransform(k)
    assert t == biject_to(constraints.zero_sum(k)) and t.domain.event_dim == k
    assert isinstance(t.codomain, constraints.zero_sum) and t.codomain.event_dim == k
    ushape = tuple(n - 1 for n in shape)
    assert t.inverse_shape((5,) + shape) == (5,) + ushape
    assert t.forward_shape((5,) + ushape) == (5,) + shape
    assert t.inv.forward_shape(shape) == ushape
    y = np.random.default_rng(2).normal(size=(3,) + ushape)
    b = np.ones((1, 1))
    for n in shape:
        b = np.kron(b, _householder_basis(n))
    rtol, atol = _tol(dtype)
    x = t(ops.asarray(y))
    x_np = to_numpy(x).astype(np.float64)
    assert x_np.shape == (3,) + shape
    ref = (y.reshape(3, -1) @ b.T).reshape((3,) + shape)
    np.testing.assert_allclose(x_np, ref, rtol=rtol, atol=atol * 10)
    for axis in range(1, 1 + k):
        np.testing.assert_allclose(x_np.sum(axis), 0.0, atol=atol * 20)
    np.testing.assert_allclose(to_numpy(t.inv(x)), y, rtol=rtol, atol=atol * 20)
    assert bool(np.all(to_numpy(t.codomain.check(x))))
    ladj = to_numpy(t.log_abs_det_jacobian(ops.asarray(y), x))
    assert ladj.shape == (3,) and np.all(ladj == 0.0)
    # off the subspace the inverse gives the coordinates of the orthogonal projection, B^T x
    w = np.random.default_rng(3).normal(size=(2,) + shape)
    np.testing.assert_allclose(to_numpy(t.inv(ops.asarray(w))),
                               (w.reshape(2, -1) @ b).reshape((2,) + ushape),
                               rtol=rtol, atol=atol * 10)
    # the finite-difference Jacobian of the map has orthonormal columns (an isometry); the map
    # is linear, so the differences are exact up to rounding
    h = 1e-3 if dtype == "float32" else 1e-6
    y0 = y[0].reshape(-1)
    steps = h * np.eye(y0.size)                  # all the perturbed points in one batch
    points = np.concatenate([y0 + steps, y0 - steps]).reshape((-1,) + ushape)
    moved = to_numpy(t(ops.asarray(points))).astype(np.float64).reshape(2, y0.size, -1)
    jac = ((moved[0] - moved[1]) / (2 * h)).T
    gram_tol = 2e-3 if dtype == "float32" else 1e-8
    np.testing.assert_allclose(jac.T @ jac, np.eye(y0.size), atol=gram_tol)
    np.testing.assert_allclose(np.ones(jac.shape[0]) @ jac, 0.0, atol=gram_tol)


@pytest.mark.dtypes("float64")
def test_transform_bad_arguments(backend):
    for bad in (0, -1, 1.0, True):
        with pytest.raises(ValueError, match="transform_ndims must be an int >= 1"):
            ZeroSumTransform(bad)
    with pytest.raises(ValueError, match="at least 2 dims"):
        ZeroSumTransform(2).inverse_shape((4,))
    assert repr(ZeroSumTransform(2)) == "ZeroSumTransform(transform_ndims=2)"
    assert ZeroSumTransform(1) != ZeroSumTransform(2)


# ======================================================================================= draws
@pytest.mark.parametrize("shape", _SHAPES, ids=str)
def test_draws_sum_to_zero_with_the_projected_covariance(backend, dtype, shape):
    d = ZeroSumNormal(ops.asarray(_SCALES), event_shape=shape)
    k = len(shape)
    proj = _projection(shape)
    factor = np.prod([1.0 - 1.0 / n for n in shape])
    np.testing.assert_allclose(np.diag(proj), factor)     # the derived marginal variance
    np.testing.assert_allclose(to_numpy(d.mean), np.zeros((2,) + shape))
    np.testing.assert_allclose(to_numpy(d.variance),
                               np.broadcast_to(_SCALES.reshape((2,) + (1,) * k) ** 2 * factor,
                                               (2,) + shape), rtol=1e-6)
    n = 20_000
    x = to_numpy(d.sample(ppl.random.key(0), (n,))).astype(np.float64)
    assert x.shape == (n, 2) + shape and np.all(np.isfinite(x))
    atol = 1e-12 if dtype == "float64" else 2e-5
    for axis in range(2, 2 + k):
        assert np.max(np.abs(x.sum(axis))) <= atol * np.max(np.abs(x)), axis
    for j, s in enumerate(_SCALES):
        flat = x[:, j].reshape(n, -1)
        cov = s ** 2 * proj
        se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / n)
        assert np.all(np.abs(np.cov(flat.T) - cov) < 6.0 * se), np.cov(flat.T) - cov
        # the coordinates in an orthonormal basis are iid Normal(0, s)
        u = flat @ _basis(shape) / s
        for i in range(u.shape[1]):
            assert st.kstest(u[:, i], "norm").pvalue > 1e-4, i
    # reparameterized: d/d scale of sum(x^2) is 2 sum(x^2) / scale
    g = ops.grad(lambda s: ops.sum(ZeroSumNormal(s, event_shape=shape)
                                   .sample(ppl.random.key(1)) ** 2))(ops.asarray(2.0))
    draw = to_numpy(ZeroSumNormal(2.0, event_shape=shape).sample(ppl.random.key(1)))
    np.testing.assert_allclose(float(to_numpy(g)), (draw.astype(np.float64) ** 2).sum(),
                               rtol=1e-4, atol=1e-5)


# ======================================================================= shapes and arguments
@pytest.mark.dtypes("float64")
def test_shapes(backend):
    scale = ops.asarray(np.array([[0.5], [1.0], [3.0]]))
    for shape in _SHAPES:
        d = ZeroSumNormal(scale, event_shape=shape)
        assert d.batch_shape == (3, 1) and d.event_shape == shape
        x = d.sample(ppl.random.key(2), (2,))
        assert tuple(ops.shape(x)) == (2, 3, 1) + shape
        assert tuple(ops.shape(d.log_prob(x))) == (2, 3, 1)
        assert tuple(ops.shape(d.variance)) == (3, 1) + shape
        assert tuple(ops.shape(d.mean)) == (3, 1) + shape
        assert tuple(ops.shape(d.entropy())) == (3, 1)
        e = d.expand((3, 2))
        assert e.batch_shape == (3, 2)
        assert tuple(ops.shape(e.sample(ppl.random.key(3)))) == (3, 2) + shape
    one = ZeroSumNormal(1.0, event_shape=5)
    assert one.batch_shape == () and one.event_shape == (5,)
    assert tuple(ops.shape(one.sample(ppl.random.key(4), 7))) == (7, 5)
    # a value that broadcasts against the batch: one event for the three scales
    assert tuple(ops.shape(ZeroSumNormal(scale, event_shape=(2,)).log_prob(
        ops.asarray([1.0, -1.0])))) == (3, 1)


@pytest.mark.dtypes("float64")
def test_bad_arguments(backend):
    with pytest.raises(ValueError, match="event_shape must name at least one axis"):
        ZeroSumNormal(1.0, event_shape=())
    for bad in ((4, 1), (1,), (0, 3), 1):
        with pytest.raises(ValueError, match="every size in event_shape must be >= 2"):
            ZeroSumNormal(1.0, event_shape=bad)
    for bad in ("4", (4.0,), (True, 3), None):
        with pytest.raises(TypeError, match="event_shape must be a tuple of ints"):
            ZeroSumNormal(1.0, event_shape=bad)
    for bad in (-1.0, 0.0):
        with pytest.raises(ValueError, match="'scale'"):
            ZeroSumNormal(bad, event_shape=(3,), validate_args=True)
    with pytest.raises(ValueError, match="'scale'"):
        ZeroSumNormal(ops.asarray([1.0, -2.0]), event_shape=(3,), validate_args=True)
    with pytest.raises(TypeError, match="event_shape"):
        ZeroSumNormal(1.0)
    d = ZeroSumNormal(1.0, event_shape=(3,), validate_args=True)
    with pytest.raises(ValueError, match="outside the support zero_sum"):
        d.log_prob(ops.asarray([1.0, 0.0, 0.0]))
    assert np.isfinite(float(to_numpy(d.log_prob(ops.asarray([1.0, 0.0, -1.0])))))
    with pytest.raises(ValueError, match="does not broadcast"):
        ZeroSumNormal(1.0, event_shape=(3,)).log_prob(ops.zeros(4))


# ======================================================================================== NUTS
_G, _R, _NOISE, _MU_SD = 4, 3, 1.0, 5.0
_Y = np.array([[2.1, 3.4, 0.8, 1.9],
               [1.7, 3.9, 1.2, 2.6],
               [2.6, 2.8, 0.3, 2.2]])      # (R, G): R observations of each of G groups


def zero_sum_model(y):
    ppl.sample("z", ZeroSumNormal(1.5, event_shape=(_G,)))
    ppl.sample("w", ZeroSumNormal(1.0, event_shape=(3, 2)))
    mu = ppl.sample("mu", dist.Normal(0.0, _MU_SD))
    a = ppl.sample("a", ZeroSumNormal(1.0, event_shape=(_G,)))
    ppl.sample("y", dist.Normal(mu + a, _NOISE).expand((_R, _G)).to_event(2), obs=y)


def _exact_posterior():
    """(mean, cov) of (mu, a): a = B u with u ~ N(0, I), a linear-Gaussian model in (mu, u)."""
    b = _basis((_G,))
    design = np.concatenate([np.ones((_G, 1)), b], axis=1)     # group mean = design @ (mu, u)
    design = np.tile(design, (_R, 1))
    prior_prec = np.diag([1.0 / _MU_SD ** 2] + [1.0] * (_G - 1))
    cov = np.linalg.inv(design.T @ design / _NOISE ** 2 + prior_prec)
    mean = cov @ design.T @ _Y.reshape(-1) / _NOISE ** 2
    lift = np.zeros((1 + _G, _G))
    lift[0, 0], lift[1:, 1:] = 1.0, b
    return lift @ mean, lift @ cov @ lift.T


@pytest.mark.filterwarnings("ignore::ppl.inference.run_warnings.SamplingWarning")  # R-hat, 2 x 300
@pytest.mark.dtypes("float64")
def test_nuts_zero_sum_sites(backend):
    """Sites alone (posterior = prior): draws sum to zero, each entry's sd is
    scale * sqrt(prod (1 - 1/N)) within 20 %. The hierarchical part against its exact Gaussian
    posterior: means within 5 MCSE, sds within 25 %. Two chains of 300 + 300."""
    mcmc = MCMC(NUTS(zero_sum_model), num_warmup=300, num_samples=300, num_chains=2,
                progress_bar=False)
    mcmc.run(0, ops.asarray(_Y))
    samples = {k: to_numpy(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    z, w = samples["z"], samples["w"]
    assert z.shape == (2, 300, _G) and w.shape == (2, 300, 3, 2)
    np.testing.assert_allclose(z.sum(-1), 0.0, atol=1e-10)
    np.testing.assert_allclose(w.sum(-1), 0.0, atol=1e-10)
    np.testing.assert_allclose(w.sum(-2), 0.0, atol=1e-10)
    for draws, sd in [(z.reshape(2, 300, -1), 1.5 * np.sqrt(1 - 1 / _G)),
                      (w.reshape(2, 300, -1), np.sqrt((1 - 1 / 3) * (1 - 1 / 2)))]:
        got = draws.reshape(600, -1).std(0, ddof=1)
        assert np.all(np.abs(got / sd - 1.0) <= 0.2), (got, sd)
        assert np.all(np.abs(draws.mean((0, 1))) <= 5.0 * mcse(draws)), draws.mean((0, 1))
    mean, cov = _exact_posterior()
    theta = np.concatenate([samples["mu"][..., None], samples["a"]], axis=-1)
    np.testing.assert_allclose(samples["a"].sum(-1), 0.0, atol=1e-10)
    err, se = np.abs(theta.mean((0, 1)) - mean), mcse(theta)
    assert np.all(err <= 5.0 * se), (theta.mean((0, 1)), mean, se)
    sd = theta.reshape(600, -1).std(0, ddof=1)
    assert np.all(np.abs(sd / np.sqrt(np.diag(cov)) - 1.0) <= 0.25), (sd, np.sqrt(np.diag(cov)))
    assert int(np.sum(to_numpy(mcmc.get_extra_fields()["diverging"]))) == 0
