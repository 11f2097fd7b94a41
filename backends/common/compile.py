"""Compilation, devices, and the capabilities library code may branch on.

A backend describes what its framework can do with class attributes instead of library
code guessing (no ``try``/``except`` around an op, no ``if backend.name == ...`` above
``backends/``). The conformance suite (``tests/backends/test_capabilities.py``) checks that each
backend's declared values hold.

``jit_compiles``
    Whether ``jit`` turns a pure array function (no Python control flow on values, no random
    draws) into a compiled program that later calls run without re-executing the Python body.
    JAX: yes (``jax.jit``); torch: yes (a traced TorchScript graph; ``False`` when the
    environment sets ``PPL_TORCH_JIT=none``); numpy: yes (a recorded tape of NumPy calls,
    replayed; functions whose Python reads their inputs run eagerly).
``compiles_control_flow``
    Whether ``while_loop``/``fori_loop``/``scan``/``cond`` become part of the compiled program
    (the loop body is traced once, not run once per iteration), so a whole chunk of sampler
    iterations is one compiled call; inside such a ``jit`` arguments are tracers. JAX: yes;
    numpy and torch: no, their loops are Python loops. Read by the MCMC driver
    (``inference/mcmc.py``: iterations per compiled call) and the conformance suite.
``vmap_random_draws``
    Whether ``vmap`` of a function that draws from ``ppl.random`` with mapped keys gives each
    batch member the draw of its own key (as a loop over the keys would). JAX: yes; torch: yes
    (a batching rule for its key-seeded draws); numpy: yes (its ``vmap`` is a loop). Read by
    ``Predictive`` (``inference/predictive.py``), which loops over the draws where it is
    ``False``. The default is ``False``: a new backend opts in once its samplers batch.

``vmap_is_loop``
    Whether ``vmap`` runs the function once per batch member (a Python loop) instead of once on
    the whole batch. numpy: yes; JAX, torch (``torch.func.vmap``) and TensorFlow
    (``tf.vectorized_map``): no. Read by ``inference/chain_plate.py``, which then runs a model
    once for all chains (a chain plate) where that gives what the loop gives. The default is
    ``False``: a new backend whose ``vmap`` is a loop opts in to the batching.
``numpy_operands``
    Whether a NumPy array works as an operand of this backend's arrays everywhere a model runs:
    in Python operators next to a traced or differentiated array (``b * x`` with ``b`` a latent
    and ``x`` NumPy data) and as a constant of a compiled program. JAX, TensorFlow, numpy: yes;
    torch: no (``Tensor * ndarray`` is NumPy's operator, which cannot read a tensor that requires
    grad). Where it is ``False``, ``MCMC``, ``Predictive`` and ``log_density`` make a model's
    NumPy data backend arrays first (``inference/program_data.py``); where it is ``True`` they
    stay NumPy arrays, so a model may read their values in Python (``int(group.max())``), as
    NumPyro's models do.

``abstract_eval_shape``
    Whether ``eval_shape`` runs ``fun`` on abstract values (shapes and dtypes, no data), so what
    ``fun`` finds out is a function of its arguments' shapes and dtypes only. JAX: yes; the
    others call ``fun`` on the arrays themselves. Read by ``inference/model_setup.py``, which
    keeps a model's parameter layout per argument structure where it is ``True`` (a later run
    with new data of the same shapes does not trace the model again).

``device_count()`` is the number of devices ``pmap`` spreads a leading axis over (1 where it
cannot); the MCMC driver runs ``"parallel"`` chains with ``pmap`` when it is at least the
number of chains.
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

from ppl.backends import tree

__all__ = ["Compile", "ShapeDtype"]


class ShapeDtype(NamedTuple):
    """What :meth:`Compile.eval_shape` gives for an array: its shape and dtype name."""

    shape: tuple
    dtype: str


class Compile:
    """``jit``, ``pmap``, ``device_count``, ``sampling_scope`` and the capabilities."""

    #: ``jit`` compiles pure array functions (see the module docstring)
    jit_compiles: bool = False
    #: ``while_loop``/``scan``/``cond`` compile into the surrounding program
    compiles_control_flow: bool = False
    #: ``vmap`` over keys gives one independent draw per key
    vmap_random_draws: bool = False
    #: ``vmap`` calls the function once per batch member
    vmap_is_loop: bool = False
    #: NumPy arrays are operands of the backend's arrays, traced and differentiated included
    numpy_operands: bool = True
    #: ``eval_shape`` sees shapes and dtypes only, never the values
    abstract_eval_shape: bool = False

    def jit(self, fun, static_argnums=(), *, once=False):
        """Compile ``fun`` where the backend can (``jit_compiles``); the identity elsewhere.

        ``once=True`` says the program runs once or a few times per run (a check of the
        starting points, a sampler's initial state, the draws' postprocessing): a backend may
        then spend less time optimising it, since its compile, not its run, is what a user
        waits for."""
        return fun

    def eval_shape(self, fun, *args):
        """``jax.eval_shape``: the shape and dtype of each array ``fun(*args)`` returns (a
        pytree of objects with ``.shape`` and ``.dtype``), computing as little as the backend
        allows. JAX traces ``fun`` on abstract values: nothing runs or compiles, and Python
        side effects of ``fun`` see tracers. The default calls ``fun`` (its side effects see
        real arrays) and describes what it returned."""
        return tree.map(lambda x: ShapeDtype(tuple(self.shape(x)), self.dtype_of(x))
                        if self.is_array(x) else x, fun(*args))

    def device_count(self) -> int:
        """How many devices ``pmap`` can spread a leading axis over (1 where it cannot)."""
        return 1

    def pmap(self, fun, in_axes=0, out_axes=0):
        """``jax.pmap``: map ``fun`` over a leading axis, one slice per device. The default
        runs the slices in one batch on the single device (``vmap`` semantics)."""
        return self.vmap(fun, in_axes=in_axes, out_axes=out_axes)

    def chain_shards(self, num_chains: int) -> int:
        """How many devices :meth:`shard_chains` spreads ``num_chains`` chains over: the
        largest divisor of ``num_chains`` not above the number of devices (1 on a backend with
        one device)."""
        return 1

    def shard_chains(self, fun, num_shards: int, in_axes, out_axes):
        """``fun``, batched over chains, run with its chain axes split into ``num_shards``
        equal blocks, one per device, each device running ``fun`` on its block in lock-step.

        ``in_axes`` (one entry per argument) and ``out_axes`` (a prefix of the output tree)
        give the chain axis of each argument/output, or ``None`` for an argument every device
        gets whole. With ``num_shards > 1`` the result is compiled (``jit`` it only when
        ``num_shards == 1``). The default serves one device: ``fun`` itself.
        """
        if num_shards != 1:
            raise ValueError(f"shard_chains: the {self.name} backend runs on one device, got "
                             f"num_shards={num_shards}; use num_shards=chain_shards(C).")
        return fun

    def sampling_scope(self, *, data_bytes: int = 0):
        """A context manager that samplers hold while they run: backend settings that suit
        many calls of small array functions, and a model with ``data_bytes`` bytes of data
        (default: none). Not an op (``NOT_OPS``)."""
        return contextlib.nullcontext()
