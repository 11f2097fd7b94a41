"""jax backend: random keys and samplers (``jax.random``).

Keys are JAX's legacy ``uint32[2]`` keys (``jax.random.PRNGKey``): plain data, so they stack,
``vmap`` and ``scan`` like any other array. Every sampler passes an explicit dtype (``self.dtype``
unless ``dtype`` is given), so a float32 backend draws float32 even once x64 is on.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ppl.backends.jax.core import _shape

__all__ = ["JaxRandom"]


def _standard(sampler):
    def method(self, key, shape=(), dtype=None):
        return sampler(key, _shape(shape), self._dt(dtype))

    method.__name__ = f"random_{sampler.__name__}"
    method.__doc__ = f"``jax.random.{sampler.__name__}(key, shape, dtype)``."
    return method


class JaxRandom:
    """Random keys and samplers of :class:`~ppl.backends.jax.JaxBackend`."""

    def _param(self, x, dtype):
        return self.asarray(x, self._dt(dtype))

    def random_key(self, seed): return self._put(jax.random.PRNGKey(seed))
    def random_split(self, key, num=2): return jax.random.split(key, int(num))
    def random_fold_in(self, key, data): return jax.random.fold_in(key, data)

    def random_uniform(self, key, shape=(), dtype=None, minval=0.0, maxval=1.0):
        return jax.random.uniform(key, _shape(shape), self._dt(dtype), minval, maxval)

    random_normal = _standard(jax.random.normal)
    random_exponential = _standard(jax.random.exponential)
    random_cauchy = _standard(jax.random.cauchy)
    random_laplace = _standard(jax.random.laplace)
    random_logistic = _standard(jax.random.logistic)

    def random_gamma(self, key, a, shape=None, dtype=None):
        return jax.random.gamma(key, self._param(a, dtype), _shape(shape), self._dt(dtype))

    def random_poisson(self, key, lam, shape=None, dtype=None):
        """Poisson counts, integer (as ``jax.random.poisson``) unless ``dtype`` is a float."""
        lam = self._param(lam, None)
        if dtype is not None and jnp.issubdtype(self._dt(dtype), jnp.floating):
            return jax.random.poisson(key, lam, _shape(shape)).astype(self._dt(dtype))
        return jax.random.poisson(key, lam, _shape(shape),
                                  None if dtype is None else self._dt(dtype))

    def random_randint(self, key, shape, minval, maxval, dtype=None):
        dt = self._dt("int64" if dtype is None else dtype)
        return jax.random.randint(key, _shape(shape), minval, maxval, dt)

    def random_binomial(self, key, n, p, shape=None, dtype=None):
        """Binomial counts as floats of ``dtype`` (as ``jax.random.binomial``)."""
        dt = self._dt(dtype)
        return jax.random.binomial(key, self._param(n, dt), self._param(p, dt), _shape(shape),
                                   dt)

    def random_beta(self, key, a, b, shape=None, dtype=None):
        dt = self._dt(dtype)
        return jax.random.beta(key, self._param(a, dt), self._param(b, dt), _shape(shape), dt)

    def random_dirichlet(self, key, alpha, shape=None, dtype=None):
        dt = self._dt(dtype)
        return jax.random.dirichlet(key, self._param(alpha, dt), _shape(shape), dt)

    def random_bernoulli(self, key, p=0.5, shape=None):
        return jax.random.bernoulli(key, self._in(p), _shape(shape))

    def random_categorical(self, key, logits, axis=-1, shape=None):
        return jax.random.categorical(key, self._in(logits), axis=axis, shape=_shape(shape))

    def random_t(self, key, df, shape=None, dtype=None):
        dt = self._dt(dtype)
        return jax.random.t(key, self._param(df, dt), _shape(shape), dt)

    def random_truncated_normal(self, key, lower, upper, shape=None, dtype=None):
        dt = self._dt(dtype)
        return jax.random.truncated_normal(key, self._param(lower, dt), self._param(upper, dt),
                                           _shape(shape), dt)

    def random_permutation(self, key, x, axis=0, independent=False):
        x = int(x) if isinstance(x, (int, np.integer)) else x
        return jax.random.permutation(key, x, axis=axis, independent=independent)

    def random_multivariate_normal(self, key, mean, cov, shape=None, dtype=None):
        dt = self._dt(dtype)
        return jax.random.multivariate_normal(key, self._param(mean, dt), self._param(cov, dt),
                                              _shape(shape), dt)
