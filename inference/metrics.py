"""Euclidean metrics for Hamiltonian Monte Carlo: momentum draws, kinetic energy, velocity.

A metric is fixed by the *inverse mass matrix* ``M^{-1}`` (an estimate of the posterior
covariance): momenta are drawn as ``p ~ N(0, M)``, the kinetic energy is
``K(p) = p^T M^{-1} p / 2`` and the velocity ``dK/dp = M^{-1} p`` (Betancourt 2017, sec. 4).

Everything is batched over chains: positions and momenta are ``(C, D)``; a *diagonal* inverse
mass matrix is ``(C, D)`` and a *dense* one ``(C, D, D)``. Which of the two is used is decided
from the number of dimensions of the array (a static property), so the same code compiles on
JAX and runs eagerly on numpy and torch.

References
----------
Betancourt, M. (2017). A Conceptual Introduction to Hamiltonian Monte Carlo. arXiv:1701.02434.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ppl import ops, random

__all__ = ["Metric", "gaussian_euclidean", "is_dense"]


class Metric(NamedTuple):
    """The three functions a sampler needs from a Euclidean metric.

    Attributes
    ----------
    sample_momentum
        ``sample_momentum(rng_key, shape) -> p`` with ``p ~ N(0, M)`` of ``shape`` ``(C, D)``.
    momentum_from_normal
        ``momentum_from_normal(eps) -> p``: the same from standard normal draws ``eps``.
    kinetic_energy
        ``kinetic_energy(p) -> (C,)``, ``p^T M^{-1} p / 2``.
    velocity
        ``velocity(p) -> (C, D)``, ``M^{-1} p`` (the "sharp" momentum of Betancourt 2017).
    """

    sample_momentum: Callable
    kinetic_energy: Callable
    velocity: Callable
    momentum_from_normal: Callable


def is_dense(inverse_mass_matrix, position) -> bool:
    """Whether ``inverse_mass_matrix`` is dense (one more axis than ``position``)."""
    return ops.ndim(inverse_mass_matrix) == ops.ndim(position) + 1


def gaussian_euclidean(inverse_mass_matrix, *, dense: bool | None = None) -> Metric:
    """The Gaussian-Euclidean metric of a (batched) inverse mass matrix.

    Parameters
    ----------
    inverse_mass_matrix
        ``(C, D)`` (diagonal) or ``(C, D, D)`` (dense) array.
    dense
        Force the interpretation; by default a 3-D array is dense and a 2-D one diagonal.

    Returns
    -------
    Metric

    Examples
    --------
    >>> import ppl
    >>> from ppl import ops
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     m = gaussian_euclidean(ops.ones((1, 3)))
    ...     float(m.kinetic_energy(ops.ones((1, 3)))[0])
    1.5
    """
    if dense is None:
        dense = ops.ndim(inverse_mass_matrix) == 3
    if dense:
        return _dense(inverse_mass_matrix)
    return _diagonal(inverse_mass_matrix)


def _diagonal(inv_mass) -> Metric:
    def velocity(p):
        return inv_mass * p

    def kinetic_energy(p):
        return 0.5 * ops.sum(p * velocity(p), axis=-1)

    def momentum_from_normal(eps):
        return eps / ops.sqrt(inv_mass)

    def sample_momentum(rng_key, shape):
        return momentum_from_normal(random.normal(rng_key, tuple(shape)))

    return Metric(sample_momentum, kinetic_energy, velocity, momentum_from_normal)


def _dense(inv_mass) -> Metric:
    def velocity(p):
        return ops.squeeze(ops.matmul(inv_mass, ops.expand_dims(p, -1)), -1)

    def kinetic_energy(p):
        return 0.5 * ops.sum(p * velocity(p), axis=-1)

    def momentum_from_normal(eps):
        # M^{-1} = L L^T  =>  p = L^{-T} eps has covariance (L L^T)^{-1} = M.
        chol = ops.cholesky(inv_mass)
        p = ops.solve_triangular(ops.matrix_transpose(chol), ops.expand_dims(eps, -1),
                                 lower=False)
        return ops.squeeze(p, -1)

    def sample_momentum(rng_key, shape):
        return momentum_from_normal(random.normal(rng_key, tuple(shape)))

    return Metric(sample_momentum, kinetic_energy, velocity, momentum_from_normal)
