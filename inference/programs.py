"""The compiled programs of an MCMC run, built once and reused by later runs.

A :class:`Program` holds what the driver calls: ``init(position, data) -> carry`` and the chunk
``chunk(carry, xs, key, data) -> (carry, Draw of (K, C, ...))`` (``ops.scan`` over ``K`` iterations,
:mod:`ppl.inference.chains`; ``xs`` ``(K, 7)`` integers, a row per iteration: its index, whether it
runs, and its :class:`~ppl.inference.kernels.WarmupFlags`). Where the backend compiles control flow
(JAX) the model's data are *arguments* of these programs, not constants captured in them: the array
leaves of the model's ``(args, kwargs)`` are passed in, everything else (Python numbers, strings,
the tree structure) is part of the cache key. Programs are cached per model (or potential
function), keyed by the kernel's type and settings, the backend, the parameter layout and the
static part of the data, so a second ``run`` with a new seed or new data of the same shapes, from
the same ``MCMC`` or a new ``MCMC(NUTS(model))`` of the same settings, compiles nothing (JAX's own
cache then matches the shapes and dtypes of the arguments).

On backends whose loops run in Python (numpy, torch) a program is built per run around the
data, as the potential's own compiled graph is what pays off there.

With ``num_shards > 1`` the chunk runs with its chains split over devices
(``ops.shard_chains``): each device advances its block of chains in lock-step, drawing with its
own key (``fold_in(key, s)``, made in the program from the device's index), so ``num_shards``
single-chain blocks draw what ``"sequential"`` draws.

A program also holds the map from unconstrained draws back to the model's sites
(``postprocess(z, data)``), compiled once in the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ppl import ops, random
from ppl.inference.chain_plate import batched_value_and_grad, draw_block, postprocess_draws
from ppl.inference.kernels import WarmupFlags
from ppl.inference.program_data import (
    data_key,
    data_nbytes,
    per_chain,
    split_data,
    static_key,
)
from ppl.inference.recent import RecentModels

__all__ = ["Program", "split_data", "get_program"]

#: the model (or potential function) -> {(kernel type and settings, backend, data, shards):
#: Program}: a new kernel of the same settings on the same model finds what an earlier one
#: built; the programs of the last 8 models run are kept
_CACHE = RecentModels(8)
#: what the programs do not hold: the model (the cache's key) and the starting points' strategy
#: (starting points are an input of the programs)
_NOT_SETTINGS = ("model", "potential_fn", "init_strategy")


class Program(NamedTuple):
    """Compiled pieces of a run (see the module docstring)."""

    init: Callable       # (position (C, D), data) -> carry
    chunk: Callable      # (carry, xs, key or (key, (S,) shard indices), data) -> (carry, Draw)
    num_shards: int      # devices the chunk spreads chains over
    postprocess: Callable | None = None   # (z (N, D), data) -> {site: (N, ...)}; None: raw z
    #: (position, U, grad U) -> carry: ``init`` where the potential at the starting points is
    #: known (the model setup's check computed it), so no gradient runs or compiles again
    init_from: Callable | None = None      # (set by get_program on every backend)


def _init_from(kernel):
    return lambda z, potential_energy, grad: kernel.init(z, lambda _: (potential_energy, grad))


def _settings(kernel) -> tuple:
    return (type(kernel),) + tuple((k, static_key(v)) for k, v in sorted(vars(kernel).items())
                                   if not k.startswith("_") and k not in _NOT_SETTINGS)


def _programs_of(kernel) -> dict:
    """The cached programs of ``kernel``'s model (or potential function), by key."""
    return _CACHE.of(kernel.potential_fn if kernel.model is None else kernel.model)


def _build_chunk(iteration_of: Callable, empty_draw: Callable, num_shards: int):
    def chunk(carry, xs, key, data):
        iteration = iteration_of(data)
        if num_shards > 1:    # (the run's key, this device's index (1,)): the device's key
            key, shard = key
            key = random.fold_in(key, shard[0])

        def step(carry, x):
            # x: the iteration's row, (index, active, *WarmupFlags) as integers (one array per
            # chunk, made by the ChainRunner)
            flags = WarmupFlags(*(x[j] != 0 for j in range(2, 7)))
            return ops.cond(x[1] != 0,
                            lambda c: iteration(random.fold_in(key, x[0]), c, flags),
                            lambda c: (c, empty_draw(c)), carry)

        return ops.scan(step, carry, xs)

    if num_shards > 1:          # compiled with its shardings fixed (one compile)
        return ops.shard_chains(chunk, num_shards, in_axes=(0, None, (None, 0), None),
                                out_axes=(0, 1))
    if not ops.backend().compiles_control_flow:
        # the chunk is a Python loop over iterations whose loops read their predicates: a
        # ``jit`` of it could only try a trace and fail, once per run (torch: 10-190 ms)
        return chunk
    return ops.jit(chunk)


def get_program(kernel, setup, args, kwargs, *, num_chains: int, parallel: bool):
    """``(program, data)`` for a run of ``kernel`` on the model called with ``args, kwargs``
    (``setup``: the kernel's :class:`~ppl.inference.kernels.KernelSetup`). With ``parallel``
    the chains are spread over ``ops.chain_shards(num_chains)`` devices."""
    backend = ops.backend()
    shards = ops.chain_shards(num_chains) if parallel else 1
    if not backend.compiles_control_flow:
        vg = batched_value_and_grad(setup, num_chains)
        iteration = kernel.build_iteration(vg)
        post = setup.postprocess_fn
        block = draw_block(data_nbytes(args, kwargs))
        return Program(lambda z, _: kernel.init(z, vg),
                       _build_chunk(lambda _: iteration, kernel.empty_draw, shards), shards,
                       None if post is None else
                       (lambda z, _: postprocess_draws(post, setup.chain_plate, z,
                                                       block=block)),
                       _init_from(kernel)), ()
    data, rebuild, static = split_data(args, kwargs)
    key = (data_key(static, setup.layout), shards, _settings(kernel))
    programs = _programs_of(kernel)
    if key not in programs:
        # one compiled gradient, shared by every place the sampler calls it (traced once)
        vg_data = per_chain(setup.potential_of_args, rebuild, ops.value_and_grad)

        def vg_of(values):
            return lambda z: vg_data(z, values)

        post_of = setup.postprocess_of_args
        post = None if post_of is None else per_chain(post_of, rebuild, once=True)
        programs[key] = Program(
            ops.jit(lambda z, values: kernel.init(z, vg_of(values)), once=True),
            _build_chunk(lambda values: kernel.build_iteration(vg_of(values)),
                         kernel.empty_draw, shards), shards, post,
            ops.jit(_init_from(kernel), once=True))
    return programs[key], data
