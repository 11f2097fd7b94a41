"""Log densities far in the tails, where a naive formula overflows: against the same formula in
NumPy's extended precision (``np.longdouble``, exponent range ~1e4932), which does not."""

import numpy as np
import pytest

import ppl.distributions as dist
from ppl import ops


def _far(dtype):
    """Points up to just below the dtype's overflow, where the square overflows."""
    top = 1e30 if dtype == "float32" else 1e300
    return np.array([0.0, -0.5, 3.0, 1e10, -1e18, top])


def _log1p_square(w):
    w = np.asarray(w, np.longdouble)
    return np.log1p(w * w)


@pytest.mark.parametrize("scale", [0.5, 2.0])
def test_cauchy_and_student_t_far_in_the_tails(backend, dtype, scale):
    x = _far(dtype)
    xs = np.asarray(x.astype(dtype), np.longdouble)
    z = xs / np.longdouble(scale)
    cauchy = -np.log(np.longdouble(np.pi)) - np.log(np.longdouble(scale)) - _log1p_square(z)
    df = np.longdouble(3.0)
    lg = {1.5: 0.5 * np.log(np.longdouble(np.pi)) - np.log(np.longdouble(2.0)),  # ln Γ(3/2)
          2.0: np.longdouble(0.0)}                                               # ln Γ(2)
    student = (lg[2.0] - lg[1.5] - 0.5 * np.log(df * np.longdouble(np.pi))
               - np.log(np.longdouble(scale)) - 2.0 * _log1p_square(z / np.sqrt(df)))
    rtol = 2e-6 if dtype == "float32" else 1e-12
    for d, want in ((dist.Cauchy(0.0, scale), cauchy), (dist.StudentT(3.0, 0.0, scale), student)):
        got = ops.to_numpy(d.log_prob(ops.asarray(x)))
        assert np.all(np.isfinite(got)), (type(d).__name__, got)
        np.testing.assert_allclose(got, want.astype(float), rtol=rtol, err_msg=type(d).__name__)


def test_cauchy_and_student_t_gradients_far_in_the_tails(backend, dtype):
    """d/dx log p against the analytic ``-2 z / (scale (1 + z^2))`` (Cauchy) and
    ``-(df + 1) z / (scale (df + z^2))`` (StudentT), both written without the square where it
    would overflow; finite everywhere, including where |x| = scale (the two sides meet)."""
    top = 1e30 if dtype == "float32" else 1e300
    x = np.array([0.0, 0.3, -2.0, 2.0, 1e10, -1e18, top])
    scale, df = 2.0, 3.0
    for d, slope in ((dist.Cauchy(0.0, scale), lambda z: -2.0 / (z + 1.0 / z)),
                     (dist.StudentT(df, 0.0, scale), lambda z: -(df + 1.0) / (z + df / z))):
        g = ops.to_numpy(ops.vmap(ops.grad(lambda v: d.log_prob(v)))(ops.asarray(x)))
        z = x.astype(dtype).astype(np.float64) / scale
        with np.errstate(divide="ignore"):
            want = np.where(z == 0.0, 0.0, slope(np.where(z == 0.0, 1.0, z))) / scale
        assert np.all(np.isfinite(g)), (type(d).__name__, g)
        np.testing.assert_allclose(g, want, rtol=1e-5 if dtype == "float32" else 1e-12,
                                   atol=1e-30, err_msg=type(d).__name__)
