"""Pytrees: nested tuples, lists, dicts and NamedTuples of arrays, for every layer.

The one home of the tree helpers: eager backends run their loops over these, and the layers
above (samplers, Predictive) map over their states with them. ``None`` is an empty subtree and
dicts flatten in sorted key order, as in ``jax.tree_util``.
"""

from __future__ import annotations

__all__ = ["flatten", "unflatten", "leaves", "map"]


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def flatten(tree):
    """Return ``(leaves, treedef)``; ``unflatten(treedef, leaves)`` rebuilds the tree."""
    out: list = []

    def rec(t):
        if t is None:
            return ("none",)
        if _is_namedtuple(t):
            return ("namedtuple", type(t), tuple(rec(c) for c in t))
        if isinstance(t, (tuple, list)):
            return (type(t).__name__, tuple(rec(c) for c in t))
        if isinstance(t, dict):
            try:  # sorted, as jax.tree_util does, so both flatten dicts alike
                keys = sorted(t.keys())
            except TypeError:
                keys = list(t.keys())
            return ("dict", type(t), tuple(keys), tuple(rec(t[k]) for k in keys))
        out.append(t)
        return ("leaf",)

    treedef = rec(tree)
    return out, treedef


def unflatten(treedef, leaves):
    it = iter(leaves)

    def rec(d):
        kind = d[0]
        if kind == "none":
            return None
        if kind == "leaf":
            return next(it)
        if kind == "namedtuple":
            return d[1](*[rec(c) for c in d[2]])
        if kind == "tuple":
            return tuple(rec(c) for c in d[1])
        if kind == "list":
            return [rec(c) for c in d[1]]
        if kind == "dict":
            vals = [rec(c) for c in d[3]]
            return d[1](zip(d[2], vals))
        raise TypeError(f"unknown tree node {kind!r}")

    return rec(treedef)


def leaves(tree) -> list:
    return flatten(tree)[0]


def map(fn, tree, *rest):
    """Apply ``fn`` leafwise over trees of the same structure."""
    flat, treedef = flatten(tree)
    others = [flatten(r)[0] for r in rest]
    for o in others:
        if len(o) != len(flat):
            raise ValueError(
                f"tree_map: trees have {len(flat)} and {len(o)} leaves; they must match."
            )
    return unflatten(treedef, [fn(*args) for args in zip(flat, *others)])
