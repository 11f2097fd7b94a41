"""numpy backend: autograd's reverse mode for ``grad``/``value_and_grad`` (gradients flow through
Python loops, so the eager ``scan``/``fori_loop`` are differentiable) and a ``vmap`` that loops
over the mapped axis and stacks the results. Inside a ``jit`` recording the gradient is taken on
the tape instead, so that the backward pass is recorded too (:mod:`.reverse`)."""

from __future__ import annotations

import autograd.numpy as anp
from autograd.core import make_vjp
from autograd.extend import vspace
from autograd.tracer import getval

from ppl.backends import tree
from ppl.backends.common.autodiff import check_mapped_ranks
from ppl.backends.numpy import reverse
from ppl.backends.numpy import tape as _tape

__all__ = ["NumpyAutodiff"]


class NumpyAutodiff:
    """Autodiff and batching of :class:`~ppl.backends.numpy.NumpyBackend`."""

    def value_and_grad(self, fun, argnums=0, has_aux=False):
        multiple = isinstance(argnums, (tuple, list))
        nums = tuple(argnums) if multiple else (argnums,)

        def wrapped(*args, **kwargs):
            aux_box = []

            def f(diff_args):
                full = list(args)
                for i, v in zip(nums, diff_args):
                    full[i] = v
                out = fun(*full, **kwargs)
                if has_aux:
                    out, aux = out
                    aux_box.append(aux)
                return out

            xs = tuple(args[i] for i in nums)
            tape = _tape.current()
            if tape is not None:
                value, grads = reverse.value_and_grad(tape, lambda *x: f(x), xs)
                strip = _tape.nodiff
            else:
                vjp, value = make_vjp(f, xs)
                grads, strip = vjp(vspace(value).ones()), getval
            grads = tuple(grads) if multiple else grads[0]
            if has_aux:
                return (value, tree.map(strip, aux_box[0])), grads
            return value, grads

        return wrapped

    def grad(self, fun, argnums=0, has_aux=False):
        vg = self.value_and_grad(fun, argnums=argnums, has_aux=has_aux)

        def wrapped(*args, **kwargs):
            (value, g) = vg(*args, **kwargs)
            return (g, value[1]) if has_aux else g

        return wrapped

    def vmap(self, fun, in_axes=0, out_axes=0):
        def wrapped(*args):
            axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
            if len(axes) != len(args):
                raise ValueError(
                    f"ppl.ops.vmap: in_axes has {len(axes)} entries for {len(args)} arguments."
                )
            check_mapped_ranks(args, axes, anp.ndim)
            sizes = {anp.shape(leaf)[ax] for a, ax in zip(args, axes) if ax is not None
                     for leaf in tree.leaves(a)}
            if len(sizes) != 1:
                raise ValueError(
                    f"ppl.ops.vmap: mapped axes must have one common size, got {sorted(sizes)}."
                )
            (n,) = sizes
            outs = []
            for i in range(n):
                call = [a if ax is None else tree.map(
                    lambda x, ax=ax, i=i: anp.take(x, i, axis=ax), a)
                    for a, ax in zip(args, axes)]
                outs.append(fun(*call))
            return tree.map(lambda *ys: anp.stack(ys, axis=out_axes), *outs)

        return wrapped

    def stop_gradient(self, x):
        return _tape.stop_gradient(x) if _tape.current() is not None else getval(x)

