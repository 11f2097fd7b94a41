"""Loop-invariant code motion for torch's traced loops (:mod:`ppl.backends.torch.loops`).

A model that prepares its data inside the model function (centring the columns of a design
matrix, ``1 - y``, a support check of the observations) does that work at every leapfrog step
once its transition is one compiled loop: the data reach the loop as inputs, not constants, so
inductor cannot fold them, and it does not move work out of a ``while_loop`` body itself. XLA
folds such expressions on JAX (the data are constants of its program).

:func:`hoist_invariants` moves every pure operation of a loop body that depends only on the
loop's invariant inputs (its ``additional_inputs``, not its carries) to the graph around the
loop, and passes the results the body still needs as new invariant inputs; loops inside loops
first, so an expression of the data inside the innermost loop (the leaves of a NUTS doubling)
rises to the top graph and runs once per call. Left in place: operations of constants alone
(inductor folds them), views (an input of the loop operator may not alias another), operations
that mutate or draw random numbers, and other higher-order operators (a ``scan``).
"""

from __future__ import annotations

import operator

import torch

__all__ = ["hoist_invariants"]

_LOOP = torch.ops.higher_order.while_loop
#: other operators with subgraphs (where their subgraph arguments are)
_OTHERS = {torch.ops.higher_order.scan: slice(0, 1), torch.ops.higher_order.cond: slice(1, 3)}
#: elements computed by the hoistable work of one iteration below which a loop is left as is
_MIN_WORK = 1 << 15


def hoist_invariants(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Hoist the loop-invariant work of every ``while_loop`` in ``gm`` (recursively, also in
    the subgraphs of scans and conditions: each hoisted into the graph around it), in place;
    ``gm`` recompiled once at the end (a recompile regenerates every subgraph's code, so one
    per nested graph grows with the square of the nesting)."""
    _hoist_all(gm)
    gm.recompile()
    return gm


def _hoist_all(gm):
    for node in [n for n in gm.graph.nodes if n.target in _OTHERS]:
        for arg in node.args[_OTHERS[node.target]]:
            _hoist_all(operator.attrgetter(arg.target)(gm))
    for loop in [n for n in gm.graph.nodes if n.target is _LOOP]:
        cond_gm = operator.attrgetter(loop.args[0].target)(gm)
        body_gm = operator.attrgetter(loop.args[1].target)(gm)
        _hoist_all(body_gm)
        _hoist(gm, loop, cond_gm, body_gm)
    dead_code_out(gm.graph)


def dead_code_out(graph: torch.fx.Graph) -> None:
    """Erase the nodes of ``graph`` (not of its subgraphs) whose values nobody uses and that
    have no side effects; nothing recompiled (``Graph.eliminate_dead_code`` recompiles every
    subgraph)."""
    for node in reversed(graph.nodes):
        if not node.users and not node.is_impure():
            graph.erase_node(node)


def _aten(node):
    """The aten operator ``node`` calls, or ``None`` (a placeholder, a higher-order operator)."""
    if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
        return node.target
    return None


def _pure(node) -> bool:
    """A call of an aten operator that returns one tensor, mutates nothing, draws nothing."""
    op = _aten(node)
    if op is None:
        return False
    schema = op._schema
    return not schema.is_mutable and torch.Tag.nondeterministic_seeded not in op.tags \
        and len(schema.returns) == 1 and str(schema.returns[0].type) == "Tensor" \
        and isinstance(node.meta.get("val"), torch.Tensor)


def _mutates(node) -> bool:
    op = _aten(node)
    return op is not None and op._schema.is_mutable


def _is_view(node) -> bool:
    return any(r.alias_info is not None for r in node.target._schema.returns)


def _hoist(gm, loop, cond_gm, body_gm):
    n = len(loop.args[2])
    placeholders = [p for p in body_gm.graph.nodes if p.op == "placeholder"]
    outer_of = dict(zip(placeholders[n:], loop.args[3], strict=True))
    invariant = set(outer_of)           # computable outside: invariant inputs and their work
    hoisted = []
    for node in body_gm.graph.nodes:
        if _pure(node) and node.all_input_nodes \
                and all(a in invariant for a in node.all_input_nodes):
            invariant.add(node)
            hoisted.append(node)
    # views the body uses stay in it (an input of the loop may not alias another), on top of
    # what it is passed; what it still needs from the hoisted work: new tensors
    staying = set()
    for h in reversed(hoisted):
        inside = [u for u in h.users if u not in invariant or u in staying]
        if inside and (_is_view(h) or any(_mutates(u) for u in inside)):
            staying.add(h)      # (also what the body changes in place, e.g. ``detach_``)
    invariant -= staying
    needed = [h for h in hoisted if h not in staying and any(u not in invariant for u in h.users)]
    # each input of the loop costs its Python wrapper a little per iteration: hoist only work
    # that outweighs it (diamonds' centred design matrix, 5000 x 24, yes; a logistic
    # regression's 2000 labels, no: 7 more inputs made its leapfrog 7 % slower)
    work = sum(h.meta["val"].numel() for h in hoisted if h not in staying and not _is_view(h))
    if not needed or work < _MIN_WORK:
        return
    env = dict(outer_of)
    with gm.graph.inserting_before(loop):
        for node in hoisted:      # (views too: hoisted work may use them; unused ones go)
            env[node] = gm.graph.node_copy(node, lambda a: env[a])
    last = placeholders[-1]
    cond_last = [p for p in cond_gm.graph.nodes if p.op == "placeholder"][-1]
    for i, h in enumerate(needed):
        with body_gm.graph.inserting_after(last):
            last = body_gm.graph.placeholder(f"hoisted_{i}")
        last.meta = dict(h.meta)
        with cond_gm.graph.inserting_after(cond_last):
            cond_last = cond_gm.graph.placeholder(f"hoisted_{i}")
        cond_last.meta = dict(h.meta)
        h.replace_all_uses_with(last, delete_user_cb=lambda u: u not in invariant)
    loop.args = (*loop.args[:3], tuple(loop.args[3]) + tuple(env[h] for h in needed),
                 *loop.args[4:])
    dead_code_out(body_gm.graph)
