"""The control flow that :mod:`ppl.backends.torch.loops` traces into one graph, as torch's
higher-order operators.

At the top of a compiled graph, a call is one of

* :class:`WhileCall`: an eager ``ops.while_loop`` (the doublings of a NUTS trajectory) as
  ``torch.ops.higher_order.while_loop``;
* :class:`ScanCall`: a ``scan`` called outside any trace (the MCMC driver's chunk of
  iterations, :mod:`ppl.inference.programs`) as ``torch.ops.higher_order.scan``, so that a
  whole chunk of sampler iterations (the momentum draw, the trajectory, the adaptation) is one
  call of compiled code instead of ~0.5 ms of Python per iteration around the trajectory.

Inside such a trace, :func:`nested_while` and :func:`nested_cond` turn a ``while_loop`` and a
``cond`` with a traced predicate into the loop and condition operators. Every function
given to an operator gets the tensors its closures hold (walked by
:mod:`ppl.backends.torch.closures`) as extra inputs, set into their cells while it runs: the
operators take explicit inputs only.
"""

from __future__ import annotations

import torch

from ppl.backends import tree
from ppl.backends.torch import closures
from ppl.backends.torch import loop_graphs as graphs
from ppl.backends.torch.scans import Body

__all__ = ["WhileCall", "ScanCall", "nested_while", "nested_cond"]


def _wrappers(cond_fun, body_fun, cells, n, treedef):
    """``cond(*carry, *extra)`` and ``body(*carry, *extra)`` for the loop operator."""

    def cond(*xs):
        with closures.cells_set(cells, xs[n:]):
            pred = cond_fun(tree.unflatten(treedef, list(xs[:n])))
        return torch.as_tensor(pred).to(torch.bool).reshape(()).clone()

    def body(*xs):
        with closures.cells_set(cells, xs[n:]):
            out, out_def = tree.flatten(body_fun(tree.unflatten(treedef, list(xs[:n]))))
        if out_def != treedef:
            raise TypeError("while_loop: the body changed the carry's structure")
        return graphs.fresh(out, xs[:n])

    return cond, body


class WhileCall:
    """``while_loop(cond_fun, body_fun, init_val)``; ``eager`` runs it without a graph."""

    kind = "while_loop"

    def __init__(self, cond_fun, body_fun, init_val, eager):
        self.functions = (cond_fun, body_fun)
        self.leaves, self.treedef = tree.flatten(init_val)
        self._args, self._eager = (cond_fun, body_fun, init_val), eager

    def eager(self):
        return self._eager(*self._args)

    def top(self, cells):
        """The function of ``(*carry, *closure tensors)`` to trace."""
        n = len(self.leaves)
        cond, body = _wrappers(*self.functions, cells, n, self.treedef)

        def top(*xs):
            return torch.ops.higher_order.while_loop(cond, body, tuple(xs[:n]), tuple(xs[n:]))

        return top

    def out_def(self):
        """How the traced graph's flat outputs make the result (known after :meth:`top`
        was traced)."""
        return self.treedef

    @staticmethod
    def result(out_def, flat):
        return tree.unflatten(out_def, flat)


class ScanCall:
    """``scan(f, init, xs)`` (forward, ``xs`` given); ``eager`` runs it without a graph."""

    kind = "scan"

    def __init__(self, f, init, xs, eager):
        self.functions = (f,)
        carry, self.carry_def = tree.flatten(init)
        xs_leaves, self.xs_def = tree.flatten(xs)
        self.n_carry, self.n_xs = len(carry), len(xs_leaves)
        self.leaves, self.treedef = carry + xs_leaves, (self.carry_def, self.xs_def)
        self._args, self._eager, self._body = (f, init, xs), eager, None

    def eager(self):
        return self._eager(*self._args)

    def top(self, cells):
        nc, nx = self.n_carry, self.n_xs
        self._body = body = Body(self.functions[0], cells, self.carry_def, self.xs_def,
                                 self.leaves[:nc], nx)

        def top(*xs):
            return tuple(torch.ops.higher_order.scan(body, list(xs[:nc]), list(xs[nc:nc + nx]),
                                                     tuple(xs[nc + nx:])))

        return top

    def out_def(self):
        return self.n_carry, self.carry_def, self._body.y_def

    @staticmethod
    def result(out_def, flat):
        n, carry_def, y_def = out_def
        return tree.unflatten(carry_def, flat[:n]), tree.unflatten(y_def, flat[n:])


def _distinct(values, others=()):
    """``values`` as tensors of the running trace sharing no memory with each other or with
    ``others`` (the operators reject inputs that alias)."""
    out = list(others)
    for v in values:
        shared = any(v is o or torch._C._is_alias_of(v, o) for o in out)
        out.append(v.clone() if shared else torch.ops.aten.alias.default(v))
    return out[len(others):]


def nested_while(cond_fun, body_fun, init_val):
    """``while_loop`` in a graph being traced: torch's loop operator."""
    leaves, treedef = tree.flatten(init_val)
    if not leaves or not all(isinstance(x, torch.Tensor) for x in leaves):
        raise closures.Skip
    w = closures.walk_functions((cond_fun, body_fun), traced=True)
    n = len(leaves)
    cond, body = _wrappers(cond_fun, body_fun, w.cells, n, treedef)
    carried = _distinct([x.contiguous() for x in leaves])
    extra = _distinct(w.tensors, carried)
    out = torch.ops.higher_order.while_loop(cond, body, tuple(carried), tuple(extra))
    return tree.unflatten(treedef, list(out))


def nested_cond(pred, true_fun, false_fun, operands):
    """``cond`` on a traced predicate in a graph being traced: torch's condition operator,
    both branches traced (they must return the same structure, shapes and dtypes, as under
    ``jax.lax.cond``)."""
    leaves, treedef = tree.flatten(operands)
    if not all(isinstance(x, torch.Tensor) for x in leaves):
        raise closures.Skip
    w = closures.walk_functions((true_fun, false_fun), traced=True)
    n = len(leaves)
    out_defs = []

    def branch(fun):
        def run(*xs):
            with closures.cells_set(w.cells, xs[n:]):
                out, out_def = tree.flatten(fun(*tree.unflatten(treedef, list(xs[:n]))))
            out_defs.append(out_def)
            return tuple(torch.as_tensor(o).clone(memory_format=torch.contiguous_format)
                         for o in out)
        return run

    inputs = _distinct([x.contiguous() for x in leaves])
    inputs += _distinct(w.tensors, inputs)
    pred = torch.as_tensor(pred).to(torch.bool).reshape(())
    out = torch.ops.higher_order.cond(pred, branch(true_fun), branch(false_fun), tuple(inputs))
    if len(out_defs) != 2 or out_defs[0] != out_defs[1]:
        raise TypeError("ops.cond: the branches return different structures: "
                        f"{out_defs[0]} and {out_defs[-1]}")
    return tree.unflatten(out_defs[0], list(out))
