"""Control flow with ``jax.lax``'s signatures: ``while_loop(cond_fun, body_fun, init_val)``,
``fori_loop(lower, upper, body_fun, init_val)``, ``scan(f, init, xs, length=None,
reverse=False) -> (carry, ys)``, ``cond(pred, true_fun, false_fun, *operands)``,
``switch(index, branches, *operands)``; carries are pytrees.

The defaults here are eager Python loops over concrete values: they are differentiable wherever
the backend's ``grad`` sees through Python, and they call ``bool``/``int`` on predicates, so they
do not batch under ``vmap`` over a batched predicate. A backend that compiles control flow
overrides them (and says so with ``compiles_control_flow``, see
:mod:`ppl.backends.common.compile`).
"""

from __future__ import annotations

from ppl.backends import tree

__all__ = ["ControlFlow"]


class ControlFlow:
    """Eager ``while_loop``, ``fori_loop``, ``scan``, ``cond``, ``switch``."""

    def _scan_length(self, xs, length) -> int:
        """The iterations of ``scan(f, init, xs, length)``: the leading size every leaf of
        ``xs`` shares, which ``length`` (if given) must equal, as ``jax.lax.scan`` requires;
        a ValueError otherwise (a Python loop would run the shortest, or ``xs``' size)."""
        leaves = [] if xs is None else tree.leaves(xs)
        if not leaves:
            if length is None:
                raise ValueError("ops.scan: pass xs or length.")
            return int(length)
        shapes = [tuple(self.shape(a)) for a in leaves]
        if any(not s for s in shapes):
            raise ValueError(f"ops.scan: every leaf of xs needs a leading axis to scan over; "
                             f"got shapes {shapes}.")
        sizes = sorted({s[0] for s in shapes})
        if len(sizes) > 1:
            raise ValueError(f"ops.scan: the leaves of xs must share their leading size; got "
                             f"{sizes} (shapes {shapes}).")
        if length is not None and int(length) != sizes[0]:
            raise ValueError(f"ops.scan: length={length} differs from the leading size "
                             f"{sizes[0]} of xs.")
        return int(sizes[0])

    def while_loop(self, cond_fun, body_fun, init_val):
        val = init_val
        while bool(cond_fun(val)):
            val = body_fun(val)
        return val

    def fori_loop(self, lower, upper, body_fun, init_val):
        val = init_val
        for i in range(int(lower), int(upper)):
            val = body_fun(i, val)
        return val

    def scan(self, f, init, xs=None, length=None, reverse=False):
        n = self._scan_length(xs, length)
        carry = init
        ys = []
        order = range(n - 1, -1, -1) if reverse else range(n)
        for i in order:
            x = None if xs is None else tree.map(lambda a, i=i: a[i], xs)
            carry, y = f(carry, x)
            ys.append(y)
        if reverse:
            ys.reverse()
        if not ys or ys[0] is None:
            return carry, None
        return carry, tree.map(lambda *a: self.stack(a, axis=0), *ys)

    def cond(self, pred, true_fun, false_fun, *operands):
        return true_fun(*operands) if bool(pred) else false_fun(*operands)

    def switch(self, index, branches, *operands):
        """``branches[index]``, the index clamped to the branches, as ``jax.lax.switch``."""
        return branches[min(max(int(index), 0), len(branches) - 1)](*operands)
