"""Caches kept per model for the most recently run models only.

A model's compiled programs close over the model (they trace it), so a cache keyed weakly on the
model never lets it go: a model defined anew in a loop, or a notebook cell run again, kept every
earlier model's programs for the life of the process (~25 MB each for eight schools on JAX).
:class:`RecentModels` holds the caches of the last few models run and drops the oldest.
"""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["RecentModels"]


class RecentModels:
    """A dict per model (any object, keyed by identity) for the ``size`` most recently used.

    >>> recent = RecentModels(2)
    >>> f, g, h = (lambda: 1), (lambda: 2), (lambda: 3)
    >>> recent.of(f)["program"] = "f's"
    >>> _ = recent.of(g), recent.of(h)          # f is the oldest: dropped
    >>> recent.of(f)
    {}
    """

    def __init__(self, size: int):
        self.size = size
        #: id(model) -> (model, its dict); holding the model keeps its id from being reused
        self._entries: OrderedDict[int, tuple[object, dict]] = OrderedDict()

    def of(self, model) -> dict:
        """``model``'s dict (new and empty the first time), now the most recently used."""
        key = id(model)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = (model, {})
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(key)
        return entry[1]

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
