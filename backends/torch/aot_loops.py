"""Loop graphs compiled by AOTInductor: the whole loop in one shared library, loaded in a
millisecond by any later process (:mod:`ppl.backends.torch.loops`).

Inductor's usual output (``loop_graphs.compile_graph``) is Python code that calls C++ kernels:
every iteration of a ``while_loop`` runs ~50 lines of Python (buffer allocations, the call of
the fused kernel, the loop test read back), and a process that finds the graph in inductor's
cache still imports inductor's compiler and loads the code (~1.5 s on this machine for a chunk
of NUTS iterations). AOTInductor compiles the same graph with a C++ wrapper into one ``.so``
(the loops run in C++) that ``torch._C._aoti`` loads without Python code generation.

Measured on the 2-core machine (float32, 4 chains): a NUTS transition of the logistic
regression 1.73 -> 0.98 ms per call, a chunk of eight schools iterations 0.40 -> 0.30 ms; a
chunk of logistic regression iterations ran at the same speed either way (its kernels
dominate). Loading: ~1 ms against 1.5-2.5 s.

Only graphs without a ``scan`` go this way (:mod:`ppl.backends.torch.scan_lowering` rewrites
most scans as loops), and only through the compile worker, which runs the library once on the
first call's inputs in a separate process and compares it with the graph run eagerly before
any sampler uses it (``compile_worker._check``): AOTInductor's code for a scan crashed the
process on some graphs. Two faults of torch 2.13's C++ wrapper are mended while compiling: a
branch or loop body that returns one buffer in two places moved it twice, leaving the second
output empty (:func:`_suffix`), and a loop's invariant input that is a view of a buffer was a
temporary handle freed after its first use (:func:`_while_loop`); either crashed at the next
iteration. The wrapper's loops are then rewritten to make their tensors once, not at every
iteration, where nothing outlives an iteration (:mod:`ppl.backends.torch.aot_hoisting`).
"""

from __future__ import annotations

import contextlib
import os
import shutil

import torch

from ppl.backends.torch import aot_hoisting
from ppl.backends.torch.loop_graphs import fake_inputs, loop_config
from ppl.backends.torch.scan_lowering import has_scans
from ppl.backends.torch.tracing import env_switch

__all__ = ["enabled", "eligible", "compile_library", "companion", "load"]


def enabled() -> bool:
    """Whether loop graphs compile with AOTInductor where they can (``PPL_TORCH_AOT``: ``1``,
    the default, or ``0``)."""
    return env_switch("PPL_TORCH_AOT")


def eligible(gm) -> bool:
    """Whether ``gm`` may go to AOTInductor: enabled, and no ``scan`` left in it."""
    return enabled() and not has_scans(gm)


def _suffix(self, subgraph, outer_inputs, outer_outputs):
    """``CppWrapperCpu.codegen_subgraph_suffix`` that moves each inner buffer once and gives
    a later output naming the same buffer a copy of it."""
    from torch._inductor import ir

    moved = {}
    for inner, outer in zip(subgraph.graph.graph_outputs, outer_outputs, strict=True):
        src = inner.codegen_reference()
        if isinstance(inner, ir.ShapeAsConstantBuffer):
            self.writeline(f"{outer} = {src};")
            continue
        self.writeline(f"{outer}.reset();")
        if src in moved:
            self.writeline("{ AtenTensorHandle ppl_copy; AOTI_TORCH_ERROR_CODE_CHECK("
                           f"aoti_torch_clone({moved[src]}, &ppl_copy)); "
                           f"{outer} = RAIIAtenTensorHandle(ppl_copy); }}")
        else:
            self.writeline(f"{outer} = std::move({src});")
            moved[src] = outer


class _Named:
    """A loop's invariant input as the named handle it was kept in."""

    def __init__(self, name: str):
        self.name = name

    def codegen_reference(self, writer=None) -> str:
        return self.name


_handles = iter(range(1 << 62))


def _while_loop(original):
    """``CppWrapperCpu.codegen_while_loop`` whose invariant inputs are named handles: a view
    of a buffer is referenced as a temporary handle that frees itself after one use, and the
    loop used it in its condition and body at every iteration (a crash at the second use)."""

    def codegen_while_loop(self, while_loop, stack_output=False):
        temporary = "RAIIAtenTensorHandle("
        kept = []
        for buf in while_loop.additional_inputs:
            ref = buf.codegen_reference()
            if ref.startswith(temporary):
                name = f"ppl_invariant_{next(_handles)}"
                self.writeline(f"RAIIAtenTensorHandle {name}({ref[len(temporary):]};")
                kept.append(_Named(name))
            else:
                kept.append(buf)
        inputs, while_loop.additional_inputs = while_loop.additional_inputs, kept
        try:
            return original(self, while_loop, stack_output)
        finally:
            while_loop.additional_inputs = inputs

    return codegen_while_loop


def hoisting() -> bool:
    """Whether the C++ wrapper's loops are rewritten by :func:`aot_hoisting.hoist`
    (``PPL_TORCH_AOT_HOIST``: ``1``, the default, or ``0``)."""
    return env_switch("PPL_TORCH_AOT_HOIST")


def _hoisted(compile_):
    """``AotCodeCompiler.compile`` on the wrapper after :func:`aot_hoisting.hoist`."""

    def compile_with_hoisting(cls, graph, wrapper_code, *args, **kwargs):
        return compile_.__func__(cls, graph, aot_hoisting.hoist(wrapper_code), *args, **kwargs)

    return classmethod(compile_with_hoisting)


@contextlib.contextmanager
def _mended_wrapper():
    """torch 2.13's C++ wrapper with :func:`_suffix` and :func:`_while_loop`, and its loops
    rewritten by :func:`aot_hoisting.hoist` (when :func:`hoisting`)."""
    from torch._inductor.codecache import AotCodeCompiler
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    suffix, loop = CppWrapperCpu.codegen_subgraph_suffix, CppWrapperCpu.codegen_while_loop
    compile_ = AotCodeCompiler.compile
    CppWrapperCpu.codegen_subgraph_suffix = _suffix
    CppWrapperCpu.codegen_while_loop = _while_loop(loop)
    if hoisting():
        AotCodeCompiler.compile = _hoisted(compile_)
    try:
        yield
    finally:
        CppWrapperCpu.codegen_subgraph_suffix, CppWrapperCpu.codegen_while_loop = suffix, loop
        AotCodeCompiler.compile = compile_


def compile_library(gm, tensors, path: str) -> None:
    """Compile ``gm`` (after ``compile_worker.prepare``) for inputs like ``tensors`` with
    AOTInductor into the shared library ``path``."""
    options = {k: v for k, v in loop_config().items() if k != "cpp_wrapper"}
    options["aot_inductor.package"] = True
    with fake_inputs(tensors) as fakes, _mended_wrapper():
        files = torch._inductor.aot_compile(gm, tuple(fakes), options=options)
    library = next(str(f) for f in files if str(f).endswith(".so"))
    # the ops without C++ code (a Cholesky factor's) run through a proxy executor, which the
    # runner sets up from the JSON file of the library's name
    for src, dst in ((library[:-3] + ".json", companion(path)), (library, path)):
        if os.path.exists(src):
            shutil.copyfile(src, dst + ".part")
            os.replace(dst + ".part", dst)


def companion(path: str) -> str:
    """The JSON file that goes with the library ``path`` (where it has one)."""
    return path[:-3] + ".json"


class _Library:
    """A loaded library, called like the graph it was compiled from."""

    __slots__ = ("runner", "path")

    def __init__(self, path: str):
        self.path = path
        self.runner = torch._C._aoti.AOTIModelContainerRunnerCpu(path, 1)

    def __call__(self, *tensors):
        return self.runner.run(list(tensors))


def load(path: str) -> _Library:
    """The library at ``path`` (see :func:`compile_library`), ready to call."""
    return _Library(path)
