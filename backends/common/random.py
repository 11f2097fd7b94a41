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
from ppl.backends.common.dtypes import dtype_name

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
        """Standard gamma draws (rate 1); differentiable in ``a`` where the framework allows.
        ``a = 0`` gives 0, ``a < 0`` or NaN gives NaN (as ``jax.random.gamma``); negative or NaN
        parameters of :meth:`random_beta`, :meth:`random_dirichlet` and :meth:`random_t` give
        NaN the same way."""
        raise not_implemented(self, "random.gamma")

    def random_poisson(self, key, lam, shape=None, dtype=None):
        """Poisson counts; a negative or NaN ``lam`` gives -1 (as ``jax.random.poisson``)."""
        raise not_implemented(self, "random.poisson")

    def random_randint(self, key, shape, minval, maxval, dtype=None):
        """Integers in ``[minval, maxval)``; an empty range (``maxval <= minval``) gives
        ``minval`` (as ``jax.random.randint``)."""
        raise not_implemented(self, "random.randint")

    def random_binomial(self, key, n, p, shape=None, dtype=None):
        """Binomial counts as floats; ``n < 0``, ``p`` outside ``[0, 1]`` or NaN parameters
        give NaN (as ``jax.random.binomial``)."""
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
        """Draw indices with probabilities ``softmax(logits)`` along ``axis`` (Gumbel-max).
        ``shape`` ends with the logits' batch shape (``logits.shape`` without ``axis``; size-1
        dimensions broadcast), as ``ppl.random.categorical`` checks."""
        logits = self.asarray(logits)
        axis = axis % self.ndim(logits)
        batch = self.shape(logits)[:axis] + self.shape(logits)[axis + 1:]
        shape = batch if shape is None else tuple(shape)
        lead = len(shape) - len(batch)
        full = shape[:lead + axis] + self.shape(logits)[axis:axis + 1] + shape[lead + axis:]
        u = self.random_uniform(key, full, minval=float(np.finfo(self.dtype).tiny), maxval=1.0)
        gumbel = -self.log(-self.log(u))
        return self.argmax(logits + gumbel, axis=lead + axis)

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
        """Standard normal draws truncated to ``[lower, upper]`` (``jax.random.truncated_normal``).

        Inverse-CDF sampling, accurate for intervals anywhere: an interval with ``lower > 0`` is
        reflected to ``[-upper, -lower]`` (and the draw negated), so both bounds' ``ndtr`` stay
        in the left tail, where they keep their relative precision (the reflection of Chopin
        2011, "Fast simulation of truncated Gaussian distributions", Stat. Comput. 21), and the
        target probability ``p`` is formed in log space from ``log_ndtr`` and inverted with
        ``ndtri_exp``, accurate where ``ndtr`` underflows (beyond ~37.5 standard deviations in
        float64, ~13 in float32). ``dist.TruncatedNormal`` samples the same way.

        An infinite bound leaves that side open; ``lower == upper`` gives that value. An empty
        interval (``lower > upper``) or a NaN bound gives NaN, as other invalid parameters do
        (JAX documents only the open interval ``(lower, upper)``; for an empty one it returns a
        value just below ``upper``). Draws are clamped into the closed ``[lower, upper]``.
        """
        lower, upper = self.asarray(lower, dtype), self.asarray(upper, dtype)
        shape = self._shape_of(shape, lower, upper)
        eps = float(np.finfo(dtype_name(dtype, self.dtype)).eps)
        flip = lower > 0
        a, b = self.where(flip, -upper, lower), self.where(flip, -lower, upper)
        la, lb = self.log_ndtr(a), self.log_ndtr(b)
        v = 1.0 - self.random_uniform(key, shape, dtype)           # in (0, 1]
        # log p for p = Phi(a) + v (Phi(b) - Phi(a)), below 1 - eps (ndtri(1) is inf)
        log_p = lb + self.log(v + (1.0 - v) * self.exp(la - lb))
        log_p = self.minimum(log_p, -eps)
        z = self.ndtri_exp(log_p)
        z = self.minimum(self.maximum(z, a), b)
        z = self.where(flip, -z, z)
        return self.where(lower <= upper, z, self.zeros_like(z) + math.nan)

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
