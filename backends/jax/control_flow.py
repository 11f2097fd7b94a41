"""jax backend: ``jax.lax`` control flow, which compiles into the surrounding program and
batches under ``vmap`` (``compiles_control_flow = True``)."""

from __future__ import annotations

import jax

__all__ = ["JaxControlFlow"]


class JaxControlFlow:
    """Control flow of :class:`~ppl.backends.jax.JaxBackend`."""

    def while_loop(self, cond_fun, body_fun, init_val):
        return jax.lax.while_loop(cond_fun, body_fun, init_val)

    def fori_loop(self, lower, upper, body_fun, init_val):
        return jax.lax.fori_loop(lower, upper, body_fun, init_val)

    def scan(self, f, init, xs=None, length=None, reverse=False):
        if xs is None and length is None:
            raise ValueError("ops.scan: pass xs or length.")
        return jax.lax.scan(f, init, xs, length=length, reverse=reverse)

    def cond(self, pred, true_fun, false_fun, *operands):
        return jax.lax.cond(pred, true_fun, false_fun, *operands)

    def switch(self, index, branches, *operands): return jax.lax.switch(index, branches, *operands)
