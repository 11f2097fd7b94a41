"""Functional random numbers with ``jax.random``'s signatures: ``ppl.random.<name>`` is
``Backend.random_<name>``.

A key is a value: ``random_key(seed)`` makes one, ``random_split(key, n)`` gives ``n`` keys stacked
on a leading axis, and the same key always gives the same draw. The key ops and the basic
samplers are primitives; the other samplers are derived here, once, from uniform, normal and
gamma draws (a backend overrides one where its framework has a native).
"""

from __future__ import annotations

import math

import numpy as np

from ppl.backends.common.core import not_implemented

__all__ = ["Random"]


class Random:
    """Key ops, primitive samplers and derived samplers."""

    # ------------------------------------------------------------------ keys (primitive)
    def random_key(self, seed: int):
        """A key from an integer seed."""
        raise not_implemented(self, "random.key")

    def random_split(self, key, num: int = 2):
        """``num`` independent keys stacked on a leading axis."""
        raise not_implemented(self, "random.split")

    def random_split_keys(self, key, num: int = 2) -> tuple:
        """The keys of ``random_split(key, num)`` as a tuple, to unpack
        (``k1, k2 = split_keys(key)``) or index without array ops."""
        return tuple(self.random_split(key, num))

    def random_fold_in(self, key, data: int):
        """A new key from ``key`` and an integer (``jax.random.fold_in``)."""
        raise not_implemented(self, "random.fold_in")

    # ------------------------------------------------------------------ samplers (primitive)
    def random_uniform(self, key, shape=(), dtype=None, minval=0.0, maxval=1.0):
        raise not_implemented(self, "random.uniform")

    def random_normal(self, key, shape=(), dtype=None):
        raise not_implemented(self, "random.normal")

    def random_gamma(self, key, a, shape=None, dtype=None):
        """Standard gamma draws (rate 1); differentiable in ``a`` where the framework allows."""
        raise not_implemented(self, "random.gamma")

    def random_poisson(self, key, lam, shape=None, dtype=None):
        raise not_implemented(self, "random.poisson")

    def random_randint(self, key, shape, minval, maxval, dtype=None):
        raise not_implemented(self, "random.randint")

    def random_binomial(self, key, n, p, shape=None, dtype=None):
        raise not_implemented(self, "random.binomial")

    # ------------------------------------------------------------------ derived samplers
    def _shape_of(self, shape, *params):
        if shape is not None:
            return tuple(shape)
        return self.broadcast_shapes(*[self.shape(p) for p in params])

    def random_beta(self, key, a, b, shape=None, dtype=None):
        shape = self._shape_of(shape, a, b)
        ka, kb = self.random_split(key, 2)
        ga = self.random_gamma(ka, a, shape, dtype)
        gb = self.random_gamma(kb, b, shape, dtype)
        return ga / (ga + gb)

    def random_dirichlet(self, key, alpha, shape=None, dtype=None):
        alpha = self.asarray(alpha, dtype)
        batch = self.shape(alpha)[:-1] if shape is None else tuple(shape)
        g = self.random_gamma(key, alpha, batch + self.shape(alpha)[-1:], dtype)
        return g / self.sum(g, axis=-1, keepdims=True)

    def random_indexed_uniform(self, key, index, shape=(), dtype=None):
        """Uniform draws on ``[0, 1)`` from ``key`` and an integer ``index`` (traced or not):
        distributed as ``uniform(fold_in(key, index), shape, dtype)``, which is what this
        default computes. A backend may draw them in one step instead (counter-based: one hash
        per counter ``(index, j)``; Salmon et al. 2011, "Parallel random numbers: as easy as 1,
        2, 3"), so the numbers may differ from the two-step draw's. The same ``(key, index)``
        always gives the same numbers, other indices or keys independent ones. A NUTS
        trajectory draws its leaves' uniforms this way."""
        return self.random_uniform(self.random_fold_in(key, index), shape, dtype)

    def random_exponential(self, key, shape=(), dtype=None):
        u = self.random_uniform(key, shape, dtype)
        return -self.log1p(-u)

    def random_bernoulli(self, key, p=0.5, shape=None):
        shape = self._shape_of(shape, p)
        return self.random_uniform(key, shape) < p

    def random_categorical(self, key, logits, axis=-1, shape=None):
        """Draw indices with probabilities ``softmax(logits)`` along ``axis`` (Gumbel-max)."""
        logits = self.asarray(logits)
        axis = axis % self.ndim(logits)
        batch = self.shape(logits)[:axis] + self.shape(logits)[axis + 1:]
        shape = batch if shape is None else tuple(shape)
        k = self.shape(logits)[axis]
        full = shape[: len(shape) - len(batch)] + self.shape(logits)[:axis] + (k,) \
            + self.shape(logits)[axis + 1:]
        u = self.random_uniform(key, full, minval=float(np.finfo(self.dtype).tiny), maxval=1.0)
        gumbel = -self.log(-self.log(u))
        return self.argmax(logits + gumbel, axis=len(full) - self.ndim(logits) + axis)

    def random_cauchy(self, key, shape=(), dtype=None):
        u = self.random_uniform(key, shape, dtype)
        return self.tan(math.pi * (u - 0.5))

    def random_laplace(self, key, shape=(), dtype=None):
        u = self.random_uniform(key, shape, dtype, minval=-1.0, maxval=1.0)
        return -self.sign(u) * self.log1p(-self.abs(u))

    def random_logistic(self, key, shape=(), dtype=None):
        u = self.random_uniform(key, shape, dtype)
        return self.log(u) - self.log1p(-u)

    def random_t(self, key, df, shape=None, dtype=None):
        shape = self._shape_of(shape, df)
        kn, kg = self.random_split(key, 2)
        z = self.random_normal(kn, shape, dtype)
        g = self.random_gamma(kg, 0.5 * df, shape, dtype)
        return z * self.sqrt(0.5 * df / g)

    def random_truncated_normal(self, key, lower, upper, shape=None, dtype=None):
        """Standard normal truncated to ``[lower, upper]``, by inverting the CDF."""
        shape = self._shape_of(shape, lower, upper)
        lo, hi = self.ndtr(self.asarray(lower, dtype)), self.ndtr(self.asarray(upper, dtype))
        u = self.random_uniform(key, shape, dtype)
        p = self.clip(lo + u * (hi - lo), 1e-38 if (dtype or self.dtype) == "float32"
                      else 1e-300, 1.0 - np.finfo(dtype or self.dtype).eps)
        return self.clip(self.ndtri(p), lower, upper)

    def random_permutation(self, key, x, axis=0, independent=False):
        """``jax.random.permutation``: a permutation of ``range(x)`` for an int ``x``, else
        ``x`` shuffled along ``axis`` (each slice on its own when ``independent``)."""
        if not self.is_array(x) or self.ndim(x) == 0:
            return self.argsort(self.random_uniform(key, (int(x),)))
        if independent:
            order = self.argsort(self.random_uniform(key, self.shape(x)), axis=axis)
            return self.take_along_axis(x, order, axis)
        n = self.shape(x)[axis]
        return self.take(x, self.argsort(self.random_uniform(key, (n,))), axis=axis)

    def random_multivariate_normal(self, key, mean, cov, shape=None, dtype=None):
        mean = self.asarray(mean, dtype)
        l = self.cholesky(self.asarray(cov, dtype))
        batch = self.broadcast_shapes(self.shape(mean)[:-1], self.shape(l)[:-2])
        shape = batch if shape is None else tuple(shape)
        z = self.random_normal(key, shape + self.shape(mean)[-1:], dtype)
        return mean + self.squeeze(self.matmul(l, self.expand_dims(z, -1)), -1)
