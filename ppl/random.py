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

numpy derives keys and draws from NumPy's counter-based Philox generator, torch from a
``torch.Generator`` seeded with key material; neither touches global random state.
"""

from __future__ import annotations

from ppl._dispatch import forwarder
from ppl.backends.base import RANDOM_OPS

__all__ = list(RANDOM_OPS)

for _name in RANDOM_OPS:
    globals()[_name] = forwarder(f"random_{_name}", f"ppl.random.{_name}")

del _name
