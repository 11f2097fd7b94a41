"""Scans as loops in torch's traced graphs (:mod:`ppl.backends.torch.loops`).

A traced loop graph reaches the compiler that runs it fastest, AOTInductor
(:mod:`ppl.backends.torch.aot_loops`: the whole loop in C++, loaded in a millisecond), only
without ``torch.ops.higher_order.scan``: AOTInductor's code for a scan crashed the process on
some of ppl's graphs (the chunk of NUTS iterations of a logistic regression, a GARCH model's
recursion inside a leapfrog), while the same graphs with only ``while_loop`` and ``cond`` ran
and matched. :func:`lower_scans` rewrites every scan of a graph, nested ones included, as a
``while_loop`` over the step index whose carry also holds the stacked outputs, each step
writing its row (``index_copy``): the same results, step by step.

Each step's ``index_copy`` makes a new buffer of all the stacked outputs (a loop's outputs may
not alias its inputs), so a scan whose stacked outputs hold more than ``max_elements`` elements
is left as it is (its graph then runs without AOTInductor).
"""

from __future__ import annotations

import math
import operator

import torch

__all__ = ["lower_scans", "has_scans"]

_aten = torch.ops.aten
_SCAN = torch.ops.higher_order.scan
_LOOP = torch.ops.higher_order.while_loop
#: stacked-output elements above which a scan stays a scan (see the module docstring)
MAX_ELEMENTS = 1 << 16
_names = iter(range(1 << 62))


def has_scans(gm: torch.fx.GraphModule) -> bool:
    """Whether ``gm`` or any of its subgraphs calls the scan operator."""
    return any(n.target is _SCAN for m in gm.modules() if isinstance(m, torch.fx.GraphModule)
               for n in m.graph.nodes)


def lower_scans(gm: torch.fx.GraphModule, max_elements: int = MAX_ELEMENTS):
    """Every scan of ``gm`` and of its subgraphs (innermost first) whose stacked outputs hold
    at most ``max_elements`` elements, and whose traced shapes are known, as a ``while_loop``;
    in place, nothing recompiled (the caller's passes recompile ``gm`` once)."""
    # innermost first: an outer scan's body is built from copies of its subgraph's nodes
    for module in reversed([m for m in gm.modules() if isinstance(m, torch.fx.GraphModule)]):
        for node in [n for n in module.graph.nodes if n.target is _SCAN]:
            _lower(module, node, max_elements)
    return gm


def _val(node):
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def _lower(owner: torch.fx.GraphModule, scan: torch.fx.Node, max_elements: int) -> None:
    combine_attr, init, xs, extra = scan.args[:4]
    combine = operator.attrgetter(combine_attr.target)(owner)
    init, xs, extra = list(init), list(xs), list(extra)
    outs = next(n for n in combine.graph.nodes if n.op == "output").args[0]
    ys = [_val(o) for o in outs[len(init):]]
    x_vals = [_val(x) for x in xs]
    if not xs or any(v is None for v in ys + x_vals):
        return
    steps = int(x_vals[0].shape[0])
    if steps * sum(math.prod(y.shape) for y in ys) > max_elements:
        return
    n_c, n_y = len(init), len(ys)

    cond = torch.fx.Graph()
    i = cond.placeholder("i")
    for k in range(n_c + n_y + len(xs) + len(extra)):
        cond.placeholder(f"a{k}")
    cond.output(cond.call_function(_aten.lt.Scalar, (i, steps)))

    body = torch.fx.Graph()
    i = body.placeholder("i")
    carry = [body.placeholder(f"c{k}") for k in range(n_c)]
    stacked = [body.placeholder(f"y{k}") for k in range(n_y)]
    slices = [body.placeholder(f"x{k}") for k in range(len(xs))]
    consts = [body.placeholder(f"k{k}") for k in range(len(extra))]
    row = body.call_function(_aten.reshape.default, (i, [1]))
    step_x = [body.call_function(_aten.squeeze.dim, (
        body.call_function(_aten.index_select.default, (x, 0, row)), 0)) for x in slices]
    env = dict(zip([n for n in combine.graph.nodes if n.op == "placeholder"],
                   carry + step_x + consts, strict=True))
    for node in combine.graph.nodes:
        if node.op not in ("placeholder", "output"):
            env[node] = body.node_copy(node, lambda n: env[n])
    new = [env[o] for o in outs]
    fresh = [body.call_function(_aten.clone.default, (v,)) if v.op == "placeholder" else v
             for v in new[:n_c]]
    written = [body.call_function(_aten.index_copy.default, (
        buf, 0, row, body.call_function(_aten.unsqueeze.default, (y, 0))))
        for buf, y in zip(stacked, new[n_c:])]
    body.output((body.call_function(_aten.add.Tensor, (i, 1)), *fresh, *written))

    tag = next(_names)
    cond_name, body_name = f"_ppl_scan_cond_{tag}", f"_ppl_scan_body_{tag}"
    setattr(owner, cond_name, torch.fx.GraphModule(torch.nn.Module(), cond))
    setattr(owner, body_name, torch.fx.GraphModule(combine, body))
    graph = owner.graph
    with graph.inserting_before(scan):
        start = graph.call_function(_aten.scalar_tensor.default, (0,),
                                    {"dtype": torch.int64, "device": torch.device("cpu")})
        # distinct carries (a loop's inputs may not alias), zeroed stacks of the traced shapes
        first = [graph.call_function(_aten.clone.default, (c,)) for c in init]
        empty = [graph.call_function(_aten.zeros.default, ([steps, *y.shape],),
                                     {"dtype": y.dtype, "device": y.device}) for y in ys]
        loop = graph.call_function(_LOOP, (graph.get_attr(cond_name), graph.get_attr(body_name),
                                           (start, *first, *empty), (*xs, *extra)))
    for user in list(scan.users):
        if user.target is operator.getitem:
            with graph.inserting_before(user):
                user.replace_all_uses_with(graph.call_function(
                    operator.getitem, (loop, user.args[1] + 1)))
            graph.erase_node(user)
    if not scan.users:
        graph.erase_node(scan)
