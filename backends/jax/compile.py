"""jax backend: ``jax.jit``, ``jax.pmap`` and chains sharded over devices with ``jax.shard_map``;
everything compiles, control flow included, and ``vmap`` over keys draws once per key.

Host devices. XLA gives a CPU one device unless told otherwise before JAX starts; a backend
constructed before that (:func:`use_cpu_cores`) asks for one device per core
(``jax_num_cpu_devices``), so chains spread over the cores. ``PPL_JAX_CPU_DEVICES=n`` sets
another number; a count the user chose (``XLA_FLAGS=--xla_force_host_platform_device_count``,
``jax.config.update("jax_num_cpu_devices", n)``) is kept. Once JAX has started, the count is
fixed: then run ``jax.config.update("jax_num_cpu_devices", n)`` first thing in the program.

Compile options. On the CPU, ppl's programs compile with XLA's elemental kernel emitters instead
of its newer MLIR fusion emitters (``xla_cpu_use_fusion_emitters=False``, per program, so other
JAX code in the process is untouched): the fusion emitters build and optimise an LLVM module per
fusion, ~10 ms each even for a fusion of a few scalars, and a NUTS chunk holds ~140 of them.
Measured in one process, alternated, 3 repeats: the chunk's XLA compile went from 2.4-2.7 to
1.1-1.4 CPU s (eight schools, logistic regression, arK), with the same draws. The price is at
run time where a larger gradient dominates: 7-13 % per gradient on the logistic regression with
N = 2,000-10,000 (the fusion emitters vectorise its reductions better), nothing measurable at
N = 100,000 (``benchmarks/PROFILE.md``, ninth pass). ``PPL_JAX_FUSION_EMITTERS=1`` keeps XLA's
defaults (long runs on large data, whose compiled program is kept on disk between processes).
JAX takes compile options on a top-level program only, so a ``jit`` called inside another trace
compiles (as part of it) without them; a JAX whose XLA no longer knows the option compiles with
its defaults. A program that runs once per run (``jit(..., once=True)``: the starting points'
check, the sampler's first state, the draws' postprocessing) also skips LLVM's optimisations
(``xla_backend_optimization_level=0``): the check of mesquite's starting points compiled in
0.05 instead of 0.13 CPU s and ran in ~55 instead of ~45 us. The NUTS chunk keeps XLA's level:
at level 1 it compiled ~5 % faster, but eight schools' leaf took 2.2-2.7 instead of 1.7 us.

Small loops as one kernel. A backend constructed before JAX starts
(:func:`use_small_loop_kernels`) raises XLA's small-loop threshold, so that a NUTS chunk on a
small model runs as one native function instead of a task per kernel
(:mod:`ppl.backends.common.xla_flags`).
"""

from __future__ import annotations

import functools
import os
import weakref

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ppl.backends.common.xla_flags import request_small_loop_kernels
from ppl.backends.jax.core import _axis

__all__ = ["JaxCompile", "set_cpu_device_count", "use_cpu_cores", "use_small_loop_kernels"]

_AXIS = "chains"


def _jax_started() -> bool:
    from jax._src import xla_bridge  # JAX has no public "backends initialised?" query
    return bool(xla_bridge.backends_are_initialized())


def use_cpu_cores() -> None:
    """Ask XLA for one CPU device per core, if JAX has not started and the user has not chosen
    a count (see the module docstring)."""
    if _jax_started() or "xla_force_host_platform_device_count" in os.environ.get(
            "XLA_FLAGS", "") or jax.config.jax_num_cpu_devices != -1:
        return
    wanted = os.environ.get("PPL_JAX_CPU_DEVICES")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    jax.config.update("jax_num_cpu_devices", int(wanted) if wanted else max(1, cores or 1))


def set_cpu_device_count(n: int) -> None:
    """Give JAX ``n`` CPU devices (before it starts), or check that it already has them."""
    if not _jax_started():
        jax.config.update("jax_num_cpu_devices", n)
        return
    have = len(jax.devices("cpu"))
    if have != n:
        raise RuntimeError(
            f"set_host_device_count({n}): JAX has already started with {have} CPU device(s), "
            f"and the count cannot change afterwards. Call ppl.set_host_device_count({n}) at the "
            f"top of the program, before anything runs on JAX, or set "
            f"PPL_JAX_CPU_DEVICES={n} in the environment.")


def use_small_loop_kernels() -> None:
    """Ask XLA to compile small ``while`` loops into single native functions, if JAX has not
    started (:func:`~ppl.backends.common.xla_flags.request_small_loop_kernels`)."""
    if not _jax_started():
        request_small_loop_kernels()


def _spec(axis):
    return PartitionSpec() if axis is None else PartitionSpec(*([None] * axis), _AXIS)


def _specs(axes, mesh=None):
    def one(axis):
        return _spec(axis) if mesh is None else NamedSharding(mesh, _spec(axis))
    return jax.tree_util.tree_map(one, axes, is_leaf=lambda a: a is None)


#: XLA options of ppl's programs on the CPU (see the module docstring)
_CPU_OPTIONS = {"xla_cpu_use_fusion_emitters": False}
#: added for the programs that run once per run (``jit(..., once=True)``)
_ONCE_OPTIONS = {"xla_backend_optimization_level": 0}


try:        # JAX has no public "is anything being traced?" query; without it, no options
    from jax._src.core import trace_state_clean as _top_level
except ImportError:         # pragma: no cover - a JAX that moved it
    _top_level = None


@functools.cache
def _options_for(platform: str):
    """The compile options for programs on ``platform``, when this XLA accepts them (a trivial
    program compiled once per process to ask), else ``None``."""
    keep_defaults = os.environ.get("PPL_JAX_FUSION_EMITTERS", "").strip().lower()
    if platform != "cpu" or _top_level is None \
            or keep_defaults not in ("", "0", "false", "no", "off"):
        return None
    try:
        jax.jit(lambda x: x, compiler_options=_CPU_OPTIONS).lower(np.float32(0)).compile()
    except Exception:       # noqa: BLE001 - an XLA without the option: its defaults
        return None
    return dict(_CPU_OPTIONS)


class JaxCompile:
    """Compilation, devices and capabilities of :class:`~ppl.backends.jax.JaxBackend` (see
    :mod:`ppl.backends.common.compile`)."""

    jit_compiles = True
    compiles_control_flow = True
    abstract_eval_shape = True
    vmap_random_draws = True

    def _compiler_options(self):
        platform = self._device.platform if self._device is not None else jax.default_backend()
        return _options_for(platform)

    def jit(self, fun, static_argnums=(), *, once=False):
        nested = jax.jit(fun, static_argnums=_axis(static_argnums))
        top = []        # the top-level program, made at the first top-level call (the options
                        # ask XLA, which starts JAX: not when the function is wrapped)

        @functools.wraps(fun)
        def jitted(*args, **kwargs):
            if not _top_level():
                return nested(*args, **kwargs)
            if not top:
                options = self._compiler_options()
                if once and options is not None:
                    options = {**options, **_ONCE_OPTIONS}
                top.append(nested if options is None else jax.jit(
                    fun, static_argnums=_axis(static_argnums), compiler_options=options))
            return top[0](*args, **kwargs)

        return jitted

    def eval_shape(self, fun, *args):
        return jax.eval_shape(fun, *args)

    def device_count(self):
        """JAX's local devices, or 1 when this backend is pinned to one ``device``."""
        return jax.local_device_count() if self._device is None else 1

    def pmap(self, fun, in_axes=0, out_axes=0):
        return jax.pmap(fun, in_axes=_axis(in_axes), out_axes=_axis(out_axes))

    def chain_shards(self, num_chains):
        n = min(self.device_count(), int(num_chains))
        return max(d for d in range(1, n + 1) if num_chains % d == 0)

    def shard_chains(self, fun, num_shards, in_axes, out_axes):
        """One SPMD program over a 1-D mesh of the first ``num_shards`` local devices
        (``jax.shard_map``), compiled with its input and output shardings fixed, so the first
        call (inputs on one device) and the later ones (inputs already sharded) share one
        compilation: each device runs ``fun`` on its block of chains."""
        if num_shards == 1:
            return fun
        if num_shards > self.device_count():
            raise ValueError(f"shard_chains: num_shards={num_shards} but JAX has "
                             f"{self.device_count()} device(s) here; use chain_shards(C).")
        mesh = Mesh(np.array(jax.local_devices()[:num_shards]), (_AXIS,))
        mapped = jax.shard_map(fun, mesh=mesh, in_specs=_specs(tuple(in_axes)),
                               out_specs=_specs(out_axes), check_vma=False)
        in_shardings = _specs(tuple(in_axes), mesh)
        options = self._compiler_options()
        compiled, nested = (jax.jit(mapped, in_shardings=in_shardings,
                                    out_shardings=_specs(out_axes, mesh),
                                    compiler_options=opts) for opts in (options, None))

        # device arrays placed by an earlier call, by identity: (weak reference to the
        # array, sharding, placed copy). A run calls the chunk ~40 times with the same data
        # and key; placing them again each time copied them to every device per call
        placed = {}

        def place(x, sharding):
            if isinstance(x, jax.core.Tracer):      # inside another jit: a constraint
                return jax.device_put(x, sharding)
            if not isinstance(x, jax.Array):
                return jax.device_put(x, sharding)
            if x.sharding == sharding:
                return x          # the carry a previous call returned
            hit = placed.get(id(x))
            if hit is not None and hit[0]() is x and hit[1] == sharding:
                return hit[2]
            source = x
            if any(p is not None for p in sharding.spec):
                # split over the mesh through the host: device_put of a device array onto a
                # split sharding compiles a slicing program per shape (a first run's cost)
                source = np.asarray(x)
            copy = jax.device_put(source, sharding)
            key = id(x)

            def forget(ref, key=key):      # x is gone: so is its copy (arrays are immutable)
                if placed.get(key, (None,))[0] is ref:
                    del placed[key]

            placed[key] = (weakref.ref(x, forget), sharding, copy)
            return copy

        def on_devices(*args):
            # inputs on one device would select another executable: place them first
            # (an argument's shardings: one for the whole argument, or a tree of them)
            program = compiled if options is None or _top_level() else nested
            return program(*(jax.tree_util.tree_map(
                lambda s, part: jax.tree_util.tree_map(lambda x: place(x, s), part), s, a,
                is_leaf=lambda s: isinstance(s, NamedSharding))
                for a, s in zip(args, in_shardings)))

        return on_devices
