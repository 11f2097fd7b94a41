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

import functools
import inspect

import numpy as np

from ppl._dispatch import active, forwarder
from ppl.backends import RANDOM_OPS, Backend
from ppl.backends.common.dtypes import is_int

__all__ = list(RANDOM_OPS) + ["as_key"]

def _check_shape(shape, public: str) -> None:
    """``shape`` (when given) as a sampler needs it: a tuple of ints >= 0. A negative size gave
    each framework's own error, or an empty draw (torch's ``normal``)."""
    dims = (shape,) if is_int(shape) else shape
    wrong = (float, bool, str, bytes, np.floating, np.bool_, type(None))
    try:                # symbolic sizes of a trace (torch's SymInt) pass: only what is surely
        ok = not isinstance(shape, str | bytes) and not any(   # wrong is refused
            isinstance(d, wrong) or (is_int(d) and d < 0) for d in dims)
    except TypeError:
        ok = False
    if not ok:
        raise ValueError(f"{public}: shape must be a tuple of ints >= 0, got {shape!r}.")


def _with_shape_check(op, method: str, public: str):
    """``op``, checking its ``shape`` argument first (for the samplers that take one)."""
    params = list(inspect.signature(getattr(Backend, method)).parameters)[1:]
    if "shape" not in params:
        return op
    where = params.index("shape")

    @functools.wraps(op)
    def checked(*args, **kwargs):
        shape = args[where] if len(args) > where else kwargs.get("shape")
        if shape is not None and not _is_concrete_shape(shape):
            _check_shape(shape, public)
            if is_int(shape):                   # an int is a 1-d shape, as NumPy's size=
                if len(args) > where:
                    args = args[:where] + ((int(shape),),) + args[where + 1:]
                else:
                    kwargs["shape"] = (int(shape),)
        return op(*args, **kwargs)

    return checked


def _is_concrete_shape(shape) -> bool:
    """The common case, checked fast: a tuple of non-negative Python ints."""
    return type(shape) is tuple and all(type(d) is int and d >= 0 for d in shape)


for _name in RANDOM_OPS:
    globals()[_name] = _with_shape_check(
        forwarder(f"random_{_name}", f"ppl.random.{_name}"), f"random_{_name}",
        f"ppl.random.{_name}")

del _name
_key, _split, _split_keys = key, split, split_keys          # noqa: F821 - made by the loop above
_categorical = categorical                                  # noqa: F821


def _seed(seed, name: str = "ppl.random.key: seed") -> int:
    """``seed`` as an int in ``[-2**63, 2**64)``, or an error naming it (``name``): one rule for
    every backend (negative seeds too, as ``jax.random.PRNGKey`` takes them)."""
    if not is_int(seed):
        raise TypeError(f"{name} must be an int (a Python or NumPy integer), got {seed!r} "
                        f"({type(seed).__name__}).")
    if not -(1 << 63) <= int(seed) < (1 << 64):
        raise ValueError(f"{name} must be an int in [-2**63, 2**64) (64 bits), got {seed}.")
    return int(seed)


def key(seed):
    """A key from an int ``seed`` in ``[-2**63, 2**64)`` (``jax.random.PRNGKey``); other
    seeds are a ``TypeError`` or ``ValueError``. Distinct seeds give distinct keys, except that
    a 64-bit backend key may equate ``s`` and ``s - 2**64``.

    >>> import ppl
    >>> with ppl.use_backend("numpy"):
    ...     bool((ppl.random.key(-1) != ppl.random.key(1)).any())
    True
    """
    return _key(_seed(seed))


def _num_keys(num, public: str) -> int:
    """``num`` as a count of keys, or a ValueError naming ``public``'s argument."""
    if not is_int(num) or num < 0:
        raise ValueError(f"{public}: num must be an int >= 0 (the count of keys), got {num!r}.")
    return int(num)


def split(key, num=2):
    """``num`` independent keys from ``key``, stacked on a leading axis
    (``jax.random.split``)."""
    return _split(key, _num_keys(num, "ppl.random.split"))


def split_keys(key, num=2) -> tuple:
    """The keys of :func:`split` as a tuple, to unpack (``k1, k2 = split_keys(key)``)."""
    return _split_keys(key, _num_keys(num, "ppl.random.split_keys"))


def categorical(key, logits, axis=-1, shape=None):
    """Indices drawn with probabilities ``softmax(logits)`` along ``axis``
    (``jax.random.categorical``). ``shape`` must end with the logits' batch shape
    (``logits.shape`` without ``axis``; its size-1 dimensions may broadcast), else a
    ``ValueError``; the default is that batch shape."""
    if shape is not None:
        b = active()
        dims = tuple(b.shape(logits)) if b.is_array(logits) else np.shape(logits)
        batch = dims[:axis % len(dims)] + dims[axis % len(dims) + 1:] if dims else ()
        shape = tuple(shape)
        tail = shape[len(shape) - len(batch):] if len(shape) >= len(batch) else None
        if tail is None or any(d not in (1, s) for s, d in zip(tail, batch)):
            raise ValueError(
                f"ppl.random.categorical: shape {shape} must end with the batch shape {batch} of "
                f"logits (shape {dims} without axis {axis}); pass shape=sample_shape + {batch} "
                "or leave shape=None.")
    return _categorical(key, logits, axis=axis, shape=shape)


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
    if is_int(rng_key):
        return _key(_seed(rng_key, f"{name}, as a seed,"))
    if rng_key is None or isinstance(rng_key, (bool, float, str, np.bool_, np.floating)) or not (
            active().is_array(rng_key) or isinstance(rng_key, np.ndarray)):
        raise TypeError(
            f"{name} must be an int seed or a key from ppl.random.key(...), got "
            f"{rng_key!r} ({type(rng_key).__name__}).")
    return rng_key
