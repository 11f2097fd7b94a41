"""``scan`` traced inside a compiled torch loop as torch's scan operator, not one copy of its
body per step.

Eagerly, ``ops.scan`` on torch is the Python loop of :mod:`ppl.backends.common.control_flow`.
When :mod:`ppl.backends.torch.loops` traces a NUTS transition, that loop would record its body
once per step, forward and backward: the forward algorithm of posteriordb's hmm_example (99
steps) made the transition a 2671-node graph, GARCH(1,1)'s variance recursion (199 steps) a
5550-node one (inductor: 58 and 70 s on 2 busy cores), and a scan a few times longer would pass
the loops' node limit and leave the whole transition eager. Here it becomes
``torch.ops.higher_order.scan`` (inductor lowers it to a ``while_loop``), and so does its
gradient: torch's operator has no ``torch.func.grad`` rule, so :class:`_Scan` is an
``autograd.Function`` (differentiable under ``torch.func.grad``, batched under ``vmap`` by its
generated rule) whose backward is a reverse scan of the step's VJP over the saved carries.

Each iteration of inductor's loop costs ~10 us of Python around its kernels, and a gradient
runs two per step (forward, backward): with one step per iteration hmm_example sampled for 137 s
against 41 s unrolled. So the operator runs ``PPL_TORCH_SCAN_UNROLL`` steps (default 16) per
iteration and the ``length % 16`` left over unrolled after them; the graph no longer grows with
the length. Measured (4 chains, 1000 + 1000, float64, load 2-3 on 2 cores; cold: an empty
inductor cache): garch11 72 s cold / 39 s warm against 105 / 38 unrolled; hmm_example 172 / 64
against 169 / 53 (its loop compiles in 37 s instead of 58, and samples ~15 s longer).

The step's closure tensors (a transition matrix, the model's parameters) become inputs of the
operator, walked as :mod:`ppl.backends.torch.loops` walks a loop's closures. A body the operator
cannot take (an object other than a function holding tensors that depend on the parameters)
raises while tracing, and :class:`~ppl.backends.torch.control_flow.TorchControlFlow` unrolls it.
A ``jit`` trace keeps unrolling: its graph runs as TorchScript, which cannot run the operator.
"""

from __future__ import annotations

import os
import types

import torch

from ppl.backends import tree
from ppl.backends.torch import closures
from ppl.backends.torch import loop_graphs as graphs
from ppl.backends.torch import tracing as _tracing

__all__ = ["scan_op_enabled", "traced_scan", "Body"]


def scan_op_enabled() -> bool:
    """Whether a traced ``scan`` becomes torch's scan operator (``PPL_TORCH_SCAN``: ``op``, the
    default, or ``unroll``)."""
    mode = os.environ.get("PPL_TORCH_SCAN", "op").lower()
    if mode not in ("op", "unroll"):
        raise ValueError(f"PPL_TORCH_SCAN must be 'op' or 'unroll', got {mode!r}.")
    return mode == "op"


class Body:
    """The user's ``f(carry, x) -> (carry, y)`` over flat tensors:
    ``(*carry, *x, *consts) -> (*carry, *y)``, the closure tensors ``consts`` set into their
    cells while it runs (``xs_def`` ``None``: ``f`` gets ``x = None`` and the operator's dummy
    slice is dropped); the treedef of ``y`` is recorded on the first call."""

    def __init__(self, f, cells, carry_def, xs_def, like, n_xs):
        self.f, self.cells, self.carry_def, self.xs_def = f, cells, carry_def, xs_def
        self.n_carry, self.like, self.y_def = len(like), like, None
        self.n_xs = 1 if xs_def is None else n_xs

    def __call__(self, *flat):
        carry = tree.unflatten(self.carry_def, list(flat[:self.n_carry]))
        x = None if self.xs_def is None else \
            tree.unflatten(self.xs_def, list(flat[self.n_carry:self.n_carry + self.n_xs]))
        with closures.cells_set(self.cells, flat[self.n_carry + self.n_xs:]):
            new, y = self.f(carry, x)
        new_leaves, new_def = tree.flatten(new)
        if new_def != self.carry_def:
            raise TypeError("ops.scan: the body changed the carry's structure")
        y_leaves, y_def = tree.flatten(y)
        if self.y_def is None:
            self.y_def = y_def
        return (*graphs.fresh(new_leaves, self.like),
                *(torch.as_tensor(v).clone(memory_format=torch.contiguous_format)
                  for v in y_leaves))


def _differentiable(t) -> bool:
    return t.dtype.is_floating_point or t.dtype.is_complex


class _Raw(torch.autograd.Function):
    """torch's scan operator over flat tensors, ``(*carry, *ys)``, with a batching rule that
    batches every operand: torch's own rule fails when an unbatched initial carry (a zero)
    meets a batched body (the parameters of each chain). Not differentiable itself
    (:class:`_Scan` is)."""

    @staticmethod
    def forward(body, n_carry, n_xs, *flat):
        init, xs, consts = flat[:n_carry], flat[n_carry:n_carry + n_xs], flat[n_carry + n_xs:]
        return tuple(torch.ops.higher_order.scan(body, list(init), list(xs), tuple(consts)))

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("ops.scan on torch: differentiate through the outer scan")

    @staticmethod
    def vmap(info, in_dims, body, n_carry, n_xs, *flat):
        size = info.batch_size

        def batched(t, d, axis):
            if d is None:
                t = t.unsqueeze(axis).expand(*t.shape[:axis], size, *t.shape[axis:])
            else:
                t = t.movedim(d, axis)
            return t.contiguous()

        dims = in_dims[3:]
        moved = [batched(t, d, 1 if n_carry <= i < n_carry + n_xs else 0)
                 for i, (t, d) in enumerate(zip(flat, dims))]
        out = _Raw.apply(torch.func.vmap(body), n_carry, n_xs, *moved)
        return out, (0,) * n_carry + (1,) * (len(out) - n_carry)


class _Scan(torch.autograd.Function):
    """``(*final carry, *ys, *carries)`` of the scan of ``body`` over ``xs``; ``carries`` (the
    carry entering each step, stacked) are saved for the backward pass."""

    generate_vmap_rule = True

    @staticmethod
    def forward(body, n_carry, n_xs, *flat):
        init, xs, consts = flat[:n_carry], flat[n_carry:n_carry + n_xs], \
            flat[n_carry + n_xs:]

        def step(*a):
            out = body(*a)
            return (*out[:n_carry], *out[n_carry:],
                    *(c.clone(memory_format=torch.contiguous_format) for c in a[:n_carry]))

        return _Raw.apply(step, n_carry, n_xs, *init, *xs, *consts)

    @staticmethod
    def setup_context(ctx, inputs, output):
        body, n_carry, n_xs, *flat = inputs
        carries = output[len(output) - n_carry:]
        ctx.mark_non_differentiable(*carries)
        ctx.body, ctx.n_carry, ctx.n_xs = body, n_carry, n_xs
        ctx.y_float = [_differentiable(y) for y in output[n_carry:len(output) - n_carry]]
        ctx.save_for_backward(*flat, *carries)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, *grads):
        body, n_carry, n_xs = ctx.body, ctx.n_carry, ctx.n_xs
        saved = ctx.saved_tensors
        flat, carries = saved[:len(saved) - n_carry], saved[len(saved) - n_carry:]
        xs, consts = flat[n_carry:n_carry + n_xs], flat[n_carry + n_xs:]
        n_y = len(ctx.y_float)
        g_carry = grads[:n_carry]
        g_ys = [g for g, y in zip(grads[n_carry:n_carry + n_y], ctx.y_float) if y]
        n_y = len(g_ys)
        wrt_c = [i for i in range(n_carry) if _differentiable(carries[i])]
        wrt_x = [i for i in range(n_xs) if _differentiable(xs[i])]
        wrt_k = [i for i in range(len(consts)) if _differentiable(consts[i])]
        nc = len(wrt_c)

        def back(*a):
            # carry: (d carry, accumulated d consts); xs: (carry_t, x_t, d y_t); consts
            gc, gk = a[:nc], a[nc:nc + len(wrt_k)]
            rest = a[nc + len(wrt_k):]
            c_t, x_t, gy_t = rest[:n_carry], rest[n_carry:n_carry + n_xs], \
                rest[n_carry + n_xs:n_carry + n_xs + n_y]
            k = rest[n_carry + n_xs + n_y:]

            def fwd(dc, dx, dk):
                c, x, kk = list(c_t), list(x_t), list(k)
                for i, v in zip(wrt_c, dc):
                    c[i] = v
                for i, v in zip(wrt_x, dx):
                    x[i] = v
                for i, v in zip(wrt_k, dk):
                    kk[i] = v
                out = body(*c, *x, *kk)
                return tuple(out[i] for i in wrt_c), tuple(
                    o for o in out[n_carry:] if _differentiable(o))

            primals = (tuple(c_t[i] for i in wrt_c), tuple(x_t[i] for i in wrt_x),
                       tuple(k[i] for i in wrt_k))
            _, vjp = torch.func.vjp(fwd, *primals)
            dc, dx, dk = vjp((tuple(gc), tuple(gy_t)))
            return (*(v.clone() for v in dc), *(a + b for a, b in zip(gk, dk)),
                    *(v.clone() for v in dx))

        init = [g_carry[i] for i in wrt_c] + [torch.zeros_like(consts[i]) for i in wrt_k]
        rev = [c.flip(0) for c in carries] + [x.flip(0) for x in xs] + \
            [g.flip(0) for g in g_ys]
        out = _Raw.apply(back, len(init), len(rev), *init, *rev, *consts)
        dc, dk, dx = out[:nc], out[nc:nc + len(wrt_k)], [d.flip(0) for d in out[nc + len(wrt_k):]]
        grads_in = [None] * (n_carry + n_xs + len(consts))
        for i, v in zip(wrt_c, dc):
            grads_in[i] = v
        for i, v in zip(wrt_x, dx):
            grads_in[n_carry + i] = v
        for i, v in zip(wrt_k, dk):
            grads_in[n_carry + n_xs + i] = v
        return (None, None, None, *grads_in)


def _unroll() -> int:
    return _tracing.env_count("PPL_TORCH_SCAN_UNROLL", 16, minimum=1)


def traced_scan(f, init, xs, length, reverse):
    """``ops.scan(f, init, xs, length, reverse)`` as torch's scan operator, ``k`` steps of ``f``
    per iteration (``PPL_TORCH_SCAN_UNROLL``) and the ``length % k`` left over unrolled after
    them; raises where the body cannot be traced so (the caller unrolls the scan)."""
    if not isinstance(f, types.FunctionType):
        raise closures.Skip("ops.scan: the body is not a Python function")
    n = int(length) if xs is None else int(tree.leaves(xs)[0].shape[0])
    if reverse and xs is not None:
        xs = tree.map(lambda a: a.flip(0), xs)
    k = _unroll()
    m = n - n % k if n >= 2 * k else 0

    def chunk(carry, xc):
        ys = []
        for j in range(k):
            carry, y = f(carry, None if xc is None else tree.map(lambda a, j=j: a[j], xc))
            ys.append(y)
        return carry, tree.map(lambda *a: torch.stack(a), *ys)

    carry, ys = init, []
    if m:
        head = None if xs is None else tree.map(lambda a: a[:m].reshape(m // k, k, *a.shape[1:]),
                                                xs)
        carry, y = _scan(chunk, init, head, m // k)
        if y is not None:
            ys.append(tree.map(lambda a: a.reshape(m, *a.shape[2:]), y))
    for i in range(m, n):
        carry, y = f(carry, None if xs is None else tree.map(lambda a, i=i: a[i], xs))
        if y is not None:
            ys.append(tree.map(lambda a: a[None], y))
    ys = tree.map(lambda *a: torch.cat(a), *ys) if ys else None
    if reverse and ys is not None:
        ys = tree.map(lambda a: a.flip(0), ys)
    return carry, ys


def _scan(f, init, xs, length):
    """The scan operator of ``f`` (a forward scan; ``xs`` ``None``: ``length`` steps)."""
    init_leaves, carry_def = tree.flatten(init)
    xs_leaves, xs_def = tree.flatten(xs)
    leaves = init_leaves + xs_leaves
    if not init_leaves or not all(isinstance(v, torch.Tensor) for v in leaves):
        raise closures.Skip("ops.scan: a carry or xs that is not all tensors")
    w = closures.walk_functions((f,), traced=True)
    init_leaves = [v.contiguous() for v in init_leaves]
    body = Body(f, w.cells, carry_def, None if xs is None else xs_def, init_leaves,
                 len(xs_leaves))
    if xs is None:      # the operator needs something to scan: a dummy the body drops
        xs_leaves = [torch.zeros((length,), dtype=torch.int64)]
    out = _Scan.apply(body, len(init_leaves), len(xs_leaves), *init_leaves, *xs_leaves,
                      *w.tensors)
    n = len(init_leaves)
    ys = list(out[n:len(out) - n])
    return tree.unflatten(carry_def, list(out[:n])), \
        tree.unflatten(body.y_def, ys) if ys else None
