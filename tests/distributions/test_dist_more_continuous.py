"""HalfStudentT, FoldedDistribution, VonMises, Gumbel and Pareto against independent references,
crossed with every backend and float dtype (the ``backend`` fixture of ``tests/conftest.py``).

References: ``scipy.stats`` (``foldnorm``, ``foldcauchy``, ``vonmises``, ``gumbel_r``,
``pareto``), and, where SciPy has no folded family, Student-t folded by hand in NumPy
(``p(x) + p(-x)``, moments by quadrature). Per case of the table: ``log_prob`` (inside and
outside the support), its gradients in the parameters and the value against central finite
differences of the reference's ``logpdf``, ``mean`` / ``variance``, draws (Kolmogorov-Smirnov at
alpha = 1e-3 on a fixed key, sample mean and variance within 6 standard errors) and pathwise
gradients of the sample mean; ``cdf``, ``icdf`` and ``entropy`` of Gumbel and Pareto. VonMises
has its own draws tests at concentrations 0.01, 2 and 500 (KS of the centred angle, circular
moments) and under ``vmap`` / ``jit``, and checks of the ``log I0`` helper against
``scipy.special``; then ``biject_to`` of every new support. Last, NUTS on HalfStudentT,
VonMises and LowRankMultivariateNormal priors recovers their means and sds on every backend.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
import scipy.stats as st
from conftest import fd_grad, to_numpy
from scipy import integrate, special

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.diagnostics import mcse, split_gelman_rubin
from ppl.distributions import biject_to, constraints
from ppl.distributions.circular import i1_over_i0, log_i0e
from ppl.inference import MCMC, NUTS


class FoldedRef:
    """``|X|`` for ``X ~ family(**params)`` (a frozen ``scipy.stats`` family), in NumPy:
    density ``p(x) + p(-x)`` on ``x >= 0``, moments by quadrature of that density."""

    def __init__(self, family, **params):
        self.family, self.params = family, params
        self.base = family(**params)

    def logpdf(self, x):
        x = np.asarray(x, dtype=np.float64)
        lp = np.logaddexp(self.base.logpdf(x), self.base.logpdf(-x))
        return np.where(x >= 0, lp, -np.inf)

    def cdf(self, x):
        return np.where(x >= 0, self.base.cdf(x) - self.base.cdf(-x), 0.0)

    def rvs(self, size, random_state):
        return np.abs(self.base.rvs(size=size, random_state=random_state))

    def _moment(self, power):
        shape = np.broadcast(*self.params.values()).shape
        out = np.empty(shape)
        for idx in np.ndindex(shape):
            b = self.family(**{k: np.broadcast_to(v, shape)[idx] for k, v in self.params.items()})
            out[idx] = integrate.quad(lambda x, b=b: x ** power * (b.pdf(x) + b.pdf(-x)), 0.0,
                                      np.inf, epsabs=1e-13, epsrel=1e-12, limit=200)[0]
        return out

    def mean(self):
        return self._moment(1)

    def var(self):
        return self._moment(2) - self.mean() ** 2


@dataclass(frozen=True)
class Case:
    """``make(**params)`` builds the distribution; ``ref(**params)`` the reference."""

    id: str
    make: Callable
    params: dict
    ref: Callable
    outside: list = field(default_factory=list)    # points outside the support (-inf)
    moments: bool = True                            # defines mean / variance
    heavy: bool = False                             # no finite mean / variance
    circular: bool = False                          # an angle: points drawn on [-pi, pi]


def _a(*v):
    return np.array(v, dtype=np.float64)


def _folded(family):
    return lambda **p: dist.FoldedDistribution(family(**p))


CASES = [
    Case("HalfStudentT", dist.HalfStudentT, dict(df=_a(5.0, 9.5), scale=_a(1.0, 2.0)),
         lambda df, scale: FoldedRef(st.t, df=df, scale=scale), outside=[-0.5]),
    Case("Folded(Normal)", _folded(dist.Normal), dict(loc=_a(0.7, -1.5), scale=_a(1.0, 0.8)),
         lambda loc, scale: st.foldnorm(np.abs(loc) / scale, scale=scale), outside=[-1.0]),
    Case("Folded(StudentT)", _folded(dist.StudentT),
         dict(df=_a(4.5, 7.0), loc=_a(1.0, -0.5), scale=_a(1.5, 0.5)),
         lambda df, loc, scale: FoldedRef(st.t, df=df, loc=loc, scale=scale), outside=[-2.0],
         moments=False),
    Case("Folded(Cauchy)", _folded(dist.Cauchy), dict(loc=_a(0.5, -2.0), scale=_a(1.0, 0.5)),
         lambda loc, scale: st.foldcauchy(np.abs(loc) / scale, scale=scale), outside=[-0.1],
         moments=False, heavy=True),
    Case("Gumbel", dist.Gumbel, dict(loc=_a(0.5, -1.0), scale=_a(1.0, 2.5)),
         lambda loc, scale: st.gumbel_r(loc, scale)),
    Case("Pareto", dist.Pareto, dict(scale=_a(1.0, 2.5), alpha=_a(6.0, 9.0)),
         lambda scale, alpha: st.pareto(alpha, scale=scale), outside=[0.5]),
    Case("VonMises", dist.VonMises, dict(loc=_a(0.5, -2.5), concentration=_a(2.0, 0.3)),
         lambda loc, concentration: st.vonmises(concentration, loc=loc),
         moments=False, circular=True),
]
IDS = [c.id for c in CASES]
BATCH = (2,)


def _rounded(params, dtype):
    """The parameters as the backend sees them (rounded to ``dtype``), in float64."""
    return {k: v.astype(dtype).astype(np.float64) for k, v in params.items()}


def _build(case, params=None):
    params = case.params if params is None else params
    return case.make(**{k: ops.asarray(v) for k, v in params.items()})


def _points(case, dtype, n=5, seed=0):
    rng = np.random.RandomState(seed)
    if case.circular:
        x = rng.uniform(-np.pi, np.pi, size=(n,) + BATCH)
    else:
        x = case.ref(**case.params).rvs(size=(n,) + BATCH, random_state=rng)
    return x.astype(dtype).astype(np.float64)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_log_prob(case, backend, dtype):
    d = _build(case)
    assert d.batch_shape == BATCH and d.event_shape == ()
    x = _points(case, dtype)
    lp = to_numpy(d.log_prob(ops.asarray(x)))
    assert lp.shape == x.shape
    expected = case.ref(**_rounded(case.params, dtype)).logpdf(x)
    rtol, atol = (1e-9, 1e-11) if dtype == "float64" else (1e-4, 1e-4)
    np.testing.assert_allclose(lp, expected, rtol=rtol,
                               atol=atol * max(1.0, np.abs(expected).max()))
    for bad in case.outside:
        out = to_numpy(d.log_prob(ops.asarray(np.full(BATCH, bad))))
        assert np.all(out == -np.inf), f"log_prob({bad}) = {out}, expected -inf"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_log_prob_grad(case, backend, dtype):
    """d/d(params, value) of sum(log_prob) vs finite differences of the reference logpdf."""
    x = _points(case, dtype, n=3, seed=1)
    params = _rounded(case.params, dtype)
    names = list(params)

    def f(p):
        return ops.sum(case.make(**{k: p[k] for k in names}).log_prob(p["__x"]))

    arrays = {k: ops.asarray(v) for k, v in params.items()}
    arrays["__x"] = ops.asarray(x)
    grads = ops.grad(f)(arrays)
    for name in names + ["__x"]:
        def ref_f(v, name=name):
            ps = dict(params)
            if name == "__x":
                return case.ref(**ps).logpdf(v).sum()
            ps[name] = v
            return case.ref(**ps).logpdf(x).sum()

        ref = fd_grad(ref_f, x if name == "__x" else params[name], eps=1e-6)
        rtol, atol = (1e-5, 1e-6) if dtype == "float64" else (2e-3, 2e-3)
        np.testing.assert_allclose(to_numpy(grads[name]), ref, rtol=rtol,
                                   atol=atol * max(1.0, np.abs(ref).max()),
                                   err_msg=f"d log_prob / d {name}")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_mean_variance(case, backend, dtype):
    if case.circular:
        pytest.skip("circular mean and variance: test_von_mises_moments_and_entropy")
    d = _build(case)
    if not case.moments:
        with pytest.raises(NotImplementedError, match="Normal base"):
            _ = d.mean
        return
    ref = case.ref(**_rounded(case.params, dtype))
    mean, var = to_numpy(d.mean), to_numpy(d.variance)
    assert mean.shape == BATCH and var.shape == BATCH
    rtol = 1e-9 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(mean, ref.mean(), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(var, ref.var(), rtol=rtol, atol=rtol)


N = 10_000


@pytest.mark.parametrize("case", [c for c in CASES if not c.circular],
                         ids=[c.id for c in CASES if not c.circular])
def test_sample(case, backend, dtype):
    d = _build(case)
    x = d.sample(ppl.random.key(0), (N,))
    assert tuple(ops.shape(x)) == (N,) + BATCH and ops.dtype_of(x) == dtype
    assert np.all(np.isfinite(to_numpy(d.log_prob(x)))), "draws off the support"
    x = to_numpy(x).astype(np.float64)
    for j in range(BATCH[0]):
        rj = case.ref(**{k: v[j] for k, v in case.params.items()})
        p = st.kstest(x[:, j], rj.cdf).pvalue
        assert p > 1e-3, f"batch {j}: KS p-value {p:.2e}"
    if case.heavy:
        return
    ref = case.ref(**case.params)
    mean, var = ref.mean(), ref.var()
    assert np.all(np.abs(x.mean(0) - mean) < 6 * np.sqrt(var / N)), (x.mean(0), mean)
    se_var = np.sqrt(np.var((x - x.mean(0)) ** 2, axis=0) / N)   # from the draws' 4th moment
    assert np.all(np.abs(x.var(0) - var) < 6 * se_var), (x.var(0), var)


WITH_CDF = [c for c in CASES if c.id in ("Gumbel", "Pareto")]


@pytest.mark.parametrize("case", WITH_CDF, ids=[c.id for c in WITH_CDF])
def test_cdf_icdf_entropy(case, backend, dtype):
    d = _build(case)
    ref = case.ref(**_rounded(case.params, dtype))
    x = _points(case, dtype)
    q = np.array([[0.1, 0.7], [0.35, 0.9]]).astype(dtype).astype(np.float64)
    rtol = 1e-9 if dtype == "float64" else 1e-4
    for got, expected in [(d.cdf(ops.asarray(x)), ref.cdf(x)), (d.icdf(ops.asarray(q)), ref.ppf(q)),
                          (d.entropy(), ref.entropy())]:
        np.testing.assert_allclose(to_numpy(got), expected, rtol=rtol, atol=rtol)


@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("case", [c for c in CASES if c.moments], ids=[c.id for c in CASES
                                                                      if c.moments])
def test_reparameterized_sample_grad(case, backend, dtype):
    """Gradients flow through ``sample``: d/dθ of the sample mean ~ d/dθ of the exact mean."""
    assert _build(case).has_rsample

    def f(p):
        return ops.sum(ops.mean(case.make(**p).sample(ppl.random.key(3), (N,)), axis=0))

    grads = ops.grad(f)({k: ops.asarray(v) for k, v in case.params.items()})
    for name, v in case.params.items():
        def m(val, name=name):
            return case.ref(**{**case.params, name: val}).mean().sum()

        got = to_numpy(grads[name])
        assert np.all(np.isfinite(got)), f"non-finite pathwise gradient for {name}: {got}"
        np.testing.assert_allclose(got, fd_grad(m, v, eps=1e-5), rtol=0.05, atol=0.05,
                                   err_msg=f"d E[x] / d {name}")


# ----------------------------------------------------------------------------- VonMises
def _wrap(a):
    return (a + np.pi) % (2.0 * np.pi) - np.pi


@pytest.mark.parametrize("kappa", [0.01, 2.0, 500.0])
def test_von_mises_sample(kappa, backend, dtype):
    """Best & Fisher draws: the angle about ``loc`` against SciPy's cdf, and its circular
    moments ``E cos(x - loc) = I1/I0``, ``E sin(x - loc) = 0`` within 6 standard errors."""
    loc = np.array([0.5, 3.0, -3.1])
    d = dist.VonMises(ops.asarray(loc), kappa)
    x = d.sample(ppl.random.key(7), (N,))
    assert tuple(ops.shape(x)) == (N, 3) and ops.dtype_of(x) == dtype
    assert np.all(to_numpy(constraints.circular.check(x))), "draws outside [-pi, pi]"
    assert np.all(np.isfinite(to_numpy(d.log_prob(x))))
    theta = _wrap(to_numpy(x).astype(np.float64) - loc)
    a = special.i1e(kappa) / special.i0e(kappa)
    var_cos = 0.5 * (1.0 + (1.0 - 2.0 * a / kappa)) - a * a     # I2/I0 = 1 - 2 A / kappa
    var_sin = a / kappa
    for j in range(3):
        p = st.kstest(theta[:, j], st.vonmises(kappa).cdf).pvalue
        assert p > 1e-3, f"loc {loc[j]}: KS p-value {p:.2e}"
        c, s = np.cos(theta[:, j]).mean(), np.sin(theta[:, j]).mean()
        assert abs(c - a) < 6 * np.sqrt(var_cos / N) + 1e-6, (c, a)
        assert abs(s) < 6 * np.sqrt(var_sin / N) + 1e-6, s


@pytest.mark.dtypes("float64")
def test_von_mises_sample_under_vmap_and_jit(backend):
    """The sampler has no data-dependent loop, so it runs under ``ops.vmap`` over keys (as
    ``Predictive`` draws) and ``ops.jit`` on every backend; the draws keep their law."""
    keys = ppl.random.split(ppl.random.key(0), 500)
    mapped = ops.vmap(lambda k: dist.VonMises(0.3, 5.0).sample(k))(keys)
    jitted = ops.jit(lambda k: dist.VonMises(0.3, 5.0).sample(k, (500,)))(ppl.random.key(1))
    for x in (mapped, jitted):
        assert tuple(ops.shape(x)) == (500,)
        theta = _wrap(to_numpy(x).astype(np.float64) - 0.3)
        assert st.kstest(theta, st.vonmises(5.0).cdf).pvalue > 1e-3


def test_von_mises_moments_and_entropy(backend, dtype):
    loc, kappa = np.array([0.5, 4.0, -7.0]), np.array([0.01, 2.0, 500.0])
    d = dist.VonMises(ops.asarray(loc), ops.asarray(kappa))
    rtol = 1e-9 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(to_numpy(d.mean), _wrap(loc), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(to_numpy(d.variance), 1.0 - special.i1e(kappa) / special.i0e(kappa),
                               rtol=rtol, atol=rtol)
    np.testing.assert_allclose(to_numpy(d.entropy()), st.vonmises(kappa).entropy(), rtol=rtol,
                               atol=rtol)


def test_von_mises_loc_gradient_through_sample(backend, dtype):
    """``loc`` is reparameterized: each draw moves one-for-one with it (the wrap is flat)."""
    g = ops.grad(lambda m: ops.sum(dist.VonMises(m, 3.0).sample(ppl.random.key(1), (50,))))(
        ops.asarray([0.2, 3.0]))
    np.testing.assert_allclose(to_numpy(g), [50.0, 50.0], rtol=1e-6)


def test_log_bessel_helpers(backend, dtype):
    """``log_i0e`` and ``i1_over_i0`` against ``scipy.special``, on both sides of the switch
    from the series to the asymptotic expansion; the derivative of ``log_i0e`` against the
    exact ``I1/I0 - 1``."""
    x = np.array([0.0, 1e-4, 0.3, 1.0, 7.5, 19.999, 20.0, 20.001, 55.0, 500.0, 1e5])
    x = x.astype(dtype).astype(np.float64)
    tol = dict(rtol=1e-13, atol=1e-14) if dtype == "float64" else dict(rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(to_numpy(log_i0e(ops.asarray(x))), np.log(special.i0e(x)), **tol)
    ratio = special.i1e(x) / special.i0e(x)
    np.testing.assert_allclose(to_numpy(i1_over_i0(ops.asarray(x))), ratio, **tol)
    g = ops.grad(lambda v: ops.sum(log_i0e(v)))(ops.asarray(x))
    np.testing.assert_allclose(to_numpy(g), ratio - 1.0, **tol)


# ----------------------------------------------------------------------------- supports
SUPPORTS = [
    ("HalfStudentT", lambda: dist.HalfStudentT(3.0), "positive"),
    ("Folded(Normal)", lambda: dist.FoldedDistribution(dist.Normal(1.0, 2.0)), "positive"),
    ("VonMises", lambda: dist.VonMises(1.0, 2.0), "circular"),
    ("Gumbel", lambda: dist.Gumbel(1.0, 2.0), "real"),
    ("Pareto", lambda: dist.Pareto(1.5, 3.0), "greater_than(1.5)"),
]


@pytest.mark.parametrize("name,make,support", SUPPORTS, ids=[s[0] for s in SUPPORTS])
def test_support_and_biject_to(name, make, support, backend, dtype):
    """``biject_to(support)`` maps reals into the support, inverts, and its log-Jacobian is
    the log of the finite-difference derivative; the family's log_prob is finite there."""
    d = make()
    assert repr(d.support) == support
    support = d.support
    t = biject_to(support)
    u = np.array([-4.0, -0.3, 0.0, 1.7, 5.0])
    y = t(ops.asarray(u))
    assert np.all(to_numpy(support.check(y))) and np.all(np.isfinite(to_numpy(d.log_prob(y))))
    rtol = 1e-8 if dtype == "float64" else 1e-4
    np.testing.assert_allclose(to_numpy(t.inv(y)), u, rtol=rtol, atol=rtol)
    h = 1e-6
    fd = (to_numpy(t(ops.asarray(u + h))) - to_numpy(t(ops.asarray(u - h)))) / (2 * h)
    if dtype == "float64":
        np.testing.assert_allclose(to_numpy(t.log_abs_det_jacobian(ops.asarray(u), y)),
                                   np.log(fd), rtol=1e-6, atol=1e-6)


@pytest.mark.dtypes("float64")
def test_circular_constraint(backend):
    assert repr(constraints.circular) == "circular"
    inside = to_numpy(constraints.circular.check(ops.asarray([-math.pi, 0.0, math.pi, 3.2])))
    assert inside.tolist() == [True, True, True, False]
    assert float(constraints.circular.feasible_like(ops.zeros(()))) == 0.0


# ----------------------------------------------------------------------------- errors, shapes
BAD = [
    ("HalfStudentT", "df", lambda: dist.HalfStudentT(-1.0, validate_args=True)),
    ("HalfStudentT", "scale", lambda: dist.HalfStudentT(2.0, 0.0, validate_args=True)),
    ("VonMises", "concentration", lambda: dist.VonMises(0.0, -1.0, validate_args=True)),
]


@pytest.mark.dtypes("float64")
@pytest.mark.parametrize("family,param,make", BAD, ids=[f"{b[0]}-{b[1]}" for b in BAD])
def test_bad_parameters(family, param, make, backend):
    with pytest.raises(ValueError) as err:
        make()
    assert family in str(err.value) and repr(param) in str(err.value), str(err.value)


@pytest.mark.dtypes("float64")
def test_bad_arguments_and_values(backend):
    with pytest.raises(ValueError, match="univariate"):
        dist.FoldedDistribution(dist.MultivariateNormal(ops.zeros(2), scale_tril=ops.eye(2)))
    with pytest.raises(ValueError, match="support constraints.real"):
        dist.FoldedDistribution(dist.Gamma(2.0, 1.0))
    with pytest.raises(TypeError, match="Distribution"):
        dist.FoldedDistribution(1.0)
    with pytest.raises(ValueError, match="outside the support circular"):
        dist.VonMises(0.0, 1.0, validate_args=True).log_prob(4.0)
    with pytest.raises(ValueError, match="outside the support positive"):
        dist.HalfStudentT(3.0, validate_args=True).log_prob(-1.0)


@pytest.mark.dtypes("float64")
def test_shapes(backend):
    loc, kappa = ops.zeros((3, 1)), ops.ones(2)
    d = dist.VonMises(loc, kappa)
    assert d.batch_shape == (3, 2)
    assert tuple(ops.shape(d.sample(ppl.random.key(0), (4,)))) == (4, 3, 2)
    assert tuple(ops.shape(d.log_prob(ops.zeros((5, 1, 1))))) == (5, 3, 2)
    h = dist.HalfStudentT(ops.asarray([3.0, 4.0]), ops.ones((3, 1)))
    assert h.batch_shape == (3, 2) and h.expand((2, 3, 2)).batch_shape == (2, 3, 2)
    assert tuple(ops.shape(h.log_prob(ops.ones((4, 1, 1))))) == (4, 3, 2)
    f = dist.FoldedDistribution(dist.Normal(ops.zeros(3), 1.0)).to_event(1)
    assert f.event_shape == (3,) and tuple(ops.shape(f.log_prob(ops.ones((2, 3))))) == (2,)
    assert f.has_rsample and not dist.VonMises(0.0, 1.0).is_discrete


# ----------------------------------------------------------------------------- NUTS
_LR_LOC = np.array([1.0, -0.5, 2.0])
_LR_W = np.array([[1.0], [0.8], [-0.6]])
_LR_D = np.array([0.5, 0.3, 0.8])


def _priors():
    ppl.sample("t", dist.HalfStudentT(8.0, 2.0))
    ppl.sample("a", dist.VonMises(0.0, 2.0))
    ppl.sample("v", dist.LowRankMultivariateNormal(ops.asarray(_LR_LOC), ops.asarray(_LR_W),
                                                   ops.asarray(_LR_D)))


@pytest.mark.dtypes("float64")
@pytest.mark.filterwarnings("ignore::ppl.inference.run_warnings.SamplingWarning")  # ESS < 400
def test_nuts_recovers_priors(backend, dtype):
    """NUTS on a model of three prior sites, HalfStudentT(8, 2) (through
    ``biject_to(positive)``), VonMises(0, 2) (through ``biject_to(circular)``) and a 3-d
    LowRankMultivariateNormal: each coordinate's mean within 5 MCSE of the exact one (by
    quadrature for HalfStudentT, SciPy's for the angle on [-pi, pi]), its sd within 25 % of
    the exact sd (about 4 standard errors with ~200 effective draws), split R-hat below
    1.05."""
    mcmc = MCMC(NUTS(_priors), num_warmup=200, num_samples=200, num_chains=4,
                progress_bar=False)
    mcmc.run(ppl.random.key(0))
    draws = mcmc.get_samples(group_by_chain=True)
    t, a, v = (np.asarray(to_numpy(draws[k]), dtype=np.float64) for k in "tav")
    assert t.shape == a.shape == (4, 200) and v.shape == (4, 200, 3)
    assert np.all(t > 0) and np.all(np.abs(a) <= np.pi)
    x = np.concatenate([t[..., None], a[..., None], v], axis=-1)
    ref, angle = FoldedRef(st.t, df=8.0, scale=2.0), st.vonmises(2.0)
    cov = _LR_W @ _LR_W.T + np.diag(_LR_D)
    mean = np.concatenate([ref.mean().ravel(), [angle.mean()], _LR_LOC])
    sd = np.concatenate([np.sqrt(ref.var()).ravel(), [angle.std()], np.sqrt(np.diag(cov))])
    err, se = np.abs(x.mean(axis=(0, 1)) - mean), mcse(x)
    assert np.all(err < 5 * se), (err, se)
    ratio = x.reshape(-1, 5).std(axis=0, ddof=1) / sd
    assert np.all(np.abs(ratio - 1.0) < 0.25), ratio
    assert np.all(split_gelman_rubin(x) < 1.05), split_gelman_rubin(x)


def test_von_mises_density_is_periodic(backend, dtype):
    """Angles given in [0, 2 pi) score as the same angles in [-pi, pi), as in NumPyro and
    SciPy (it was -inf outside [-pi, pi])."""
    x = np.array([-3.0, -0.5, 0.2, 3.5, 5.0, 2 * np.pi - 0.1])
    d = dist.VonMises(0.5, 2.0)
    got = to_numpy(d.log_prob(ops.asarray(x.astype(dtype))))
    want = st.vonmises(2.0, loc=0.5).logpdf(x.astype(dtype).astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-12)
