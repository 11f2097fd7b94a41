"""How families take their parameters: :func:`set_parameters` stores them as float arrays and
returns their broadcast batch shape; families with alternative parametrizations (``probs=`` or
``logits=``; ``covariance_matrix=``, ``precision_matrix=`` or ``scale_tril=``) store the one given
with :func:`set_one_of` and compute the others on access (:class:`derived_parameter`).

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     round(float(dist.Bernoulli(logits=0.0).probs), 6)
0.5
"""

from __future__ import annotations

from ppl.distributions.util import as_float
from ppl.distributions.validation import batch_shape_of, exactly_one

__all__ = ["derived_parameter", "set_one_of", "set_parameters"]


class derived_parameter:
    """A parameter computed from the given parametrization on access (never cached, so no
    traced value outlives a compiled call).

    Unlike ``property``, assigning the attribute stores the value on the instance, which then
    shadows the computation: a family stores the parametrization it was given under the same
    name.
    """

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, obj, objtype=None):
        return self if obj is None else self.fn(obj)


def set_one_of(dist, **options) -> str:
    """Store on ``dist`` the one keyword of ``options`` that is not ``None`` (as a float array,
    under its name) and return that name.

    Raises ``ValueError`` naming the family and the alternatives when none or several are given.
    """
    name, value = exactly_one(dist, **options)
    setattr(dist, name, as_float(value))
    return name


def set_parameters(dist, **params) -> tuple:
    """Store each parameter on ``dist`` as a float array (``None`` stays ``None``) and return the
    broadcast batch shape of all the parameters stored on ``dist`` so far
    (:func:`~ppl.distributions.validation.batch_shape_of`).

    >>> import ppl
    >>> import ppl.distributions as dist
    >>> with ppl.use_backend("numpy"):
    ...     d = dist.Normal.__new__(dist.Normal)
    ...     set_parameters(d, loc=ppl.ops.zeros(3), scale=1.0)
    (3,)
    """
    for name, value in params.items():
        setattr(dist, name, None if value is None else as_float(value))
    return batch_shape_of(dist)
