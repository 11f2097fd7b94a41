"""``ppl.random``: functional random keys and samplers with ``jax.random``'s signatures.

A key is a value, not hidden state: the same key always gives the same draw, and
:func:`split` gives independent streams::

    >>> import ppl
    >>> with ppl.use_backend("numpy"):
    ...     k1, k2 = ppl.random.split(ppl.random.key(0))
    ...     a = ppl.random.normal(k1, (3,))
    ...     b = ppl.random.normal(k1, (3,))
    ...     bool((a == b).all())
    True

:func:`split_keys` gives the same keys as a tuple, to unpack: ``k1, k2 = split_keys(key)``
(on JAX, unpacking one array of keys compiles a small program on a first run; this does not).

numpy derives keys and draws from NumPy's counter-based Philox generator, torch from a
``torch.Generator`` seeded with key material; neither touches global random state.
"""

from __future__ import annotations

import numpy as np

from ppl._dispatch import active, forwarder
from ppl.backends import RANDOM_OPS

__all__ = list(RANDOM_OPS) + ["as_key"]

for _name in RANDOM_OPS:
    globals()[_name] = forwarder(f"random_{_name}", f"ppl.random.{_name}")

del _name
_split, _split_keys = split, split_keys          # noqa: F821 - made by the loop above


def _num_keys(num, public: str) -> int:
    """``num`` as a count of keys, or a ValueError naming ``public``'s argument."""
    if isinstance(num, (bool, np.bool_)) or not isinstance(num, (int, np.integer)) or num < 0:
        raise ValueError(f"{public}: num must be an int >= 0 (the count of keys), got {num!r}.")
    return int(num)


def split(key, num=2):
    """``num`` independent keys from ``key``, stacked on a leading axis
    (``jax.random.split``)."""
    return _split(key, _num_keys(num, "ppl.random.split"))


def split_keys(key, num=2) -> tuple:
    """The keys of :func:`split` as a tuple, to unpack (``k1, k2 = split_keys(key)``)."""
    return _split_keys(key, _num_keys(num, "ppl.random.split_keys"))


def as_key(rng_key, name: str = "rng_key"):
    """A key from an int seed, or ``rng_key`` itself when it already is a key.

    Every function that takes "an int seed or a key" (``MCMC.run``, ``Predictive``,
    ``handlers.seed``, ...) goes through this one check.

    >>> import ppl
    >>> with ppl.use_backend("numpy"):
    ...     k = ppl.random.as_key(3)
    ...     bool((ppl.random.normal(k, ()) == ppl.random.normal(ppl.random.key(3), ())).all())
    True
    """
    if isinstance(rng_key, (int, np.integer)) and not isinstance(rng_key, (bool, np.bool_)):
        return active().random_key(int(rng_key))
    if rng_key is None or isinstance(rng_key, (bool, float, str, np.bool_, np.floating)) or not (
            active().is_array(rng_key) or isinstance(rng_key, np.ndarray)):
        raise TypeError(
            f"{name} must be an int seed or a key from ppl.random.key(...), got "
            f"{rng_key!r} ({type(rng_key).__name__}).")
    return rng_key
