"""Fewer tensor handles per iteration in AOTInductor's loops: a rewrite of the C++ wrapper.

torch 2.13's C++ wrapper writes a ``while_loop`` as ``while (1) { ... }`` around its condition
and body subgraphs, and every iteration makes a new tensor (a ``TensorImpl``, its storage, its
version counter, a heap handle) for each buffer the body allocates, for each view it takes of
one, and for each argument it passes to the condition and the body (a new handle on the loop
carry's storage), and reads the condition back through ``at::item``. In posteriordb's
hmm_example (a forward-algorithm ``scan`` inside NUTS, 4 x 2 numbers per step) making and
freeing those handles was ~55 % of the samples of a warm run and the fused kernels 25 %. With
the rewrite (float64, 4 chains, 1000 + 1000, warm, same draws): hmm_example 19.9 -> 11.9 s,
garch11 9.5 -> 4.1 s, gp_pois_regr 33.9 -> 27.5 s, nes2000 13.7 -> 7.0 s.

:func:`hoist` rewrites the wrapper's source, innermost loop first:

* a buffer the loop body allocates with a fixed shape (``aoti_torch_empty_strided``) and views
  of it (``reinterpret_tensor_wrapper``) move in front of the loop, made once, when nothing
  that outlives an iteration can hold them: each use is a kernel's pointer, a view that does
  not outlive the iteration either, or an input of an ATen call whose results do not; the
  buffer's ``reset()`` calls inside the loop go. A buffer moved into the loop carry (the
  body's result) keeps being made at every iteration. Each iteration writes a fresh buffer
  before reading it (inductor's buffers are uninitialised), so one storage serves them all;
* an argument that is a new handle on a named carry or invariant (``aoti_torch_assign_tensors_out``)
  becomes a reference to that handle when the body only reads it (its ``reset()`` calls go);
* the condition is read from its data instead of through ``aoti_torch_item_bool``.

The rewrite is on text, line by line, and only takes lines in the exact forms the wrapper
writes; anything else stays as it was. Compiled libraries are checked against the eager graph
before any sampler uses them (``compile_worker._check``, in a process of its own).
"""

from __future__ import annotations

import itertools
import re

__all__ = ["hoist"]

_HANDLE = re.compile(r"AtenTensorHandle (\w+)_handle;")
_EMPTY = re.compile(r"AOTI_TORCH_ERROR_CODE_CHECK\(aoti_torch_empty_strided\(\d+, \w+, \w+, "
                    r"\w+, \w+, this->device_idx_, &(\w+)_handle\)\);")
_RAII = re.compile(r"RAIIAtenTensorHandle (\w+)\((\w+)_handle\);")
_VIEW = re.compile(r"auto (\w+) = wrap_with_raii_handle_if_needed\(reinterpret_tensor_wrapper\("
                   r"(\w+), \d+, (\w+), (\w+), -?\d+L\)\);( \w+\.reset\(\);)?  // (?:alias|reuse)")
_MOVE = re.compile(r"auto (\w+) = std::move\((\w+)\);  // reuse")
_ASSIGN = re.compile(r"AOTI_TORCH_ERROR_CODE_CHECK\(aoti_torch_assign_tensors_out\((\w+), "
                     r"&(\w+)_handle\)\);")
_ARRAY = re.compile(r"static constexpr int64_t (?:(\w+)\[\] = \{[^}]*\}|\*(\w+)=nullptr);")
_ITEM = re.compile(r"AOTI_TORCH_ERROR_CODE_CHECK\(aoti_torch_item_bool\((\w+_cond_result), "
                   r"&(\w+)\)\);")
_ATEN = re.compile(r"AOTI_TORCH_ERROR_CODE_CHECK\(aoti_torch_cpu_(\w+)\(")
_KERNEL = re.compile(r"cpp_\w+\(")
_OUT = re.compile(r"&(\w+)_handle\b")
_WORD = re.compile(r"\w+")
_LOOP = "while (1) {"


def hoist(code: str) -> str:
    """``code`` (an AOTInductor wrapper) with its loops' per-iteration handles hoisted."""
    lines = code.split("\n")
    names = itertools.count()
    starts = [i for i, line in enumerate(lines) if line.strip() == _LOOP]
    for start in reversed(starts):       # a loop after the loops nested in it
        lines = _loop(lines, start, names)
    return "\n".join(_ITEM.sub(r"\2 = *static_cast<bool*>(\1.data_ptr());", line)
                     for line in lines)


def _word(name):
    return re.compile(rf"(?<!\w){name}(?!\w)")


def _block(lines, start):
    """The line closing the block opened at ``start``, and the depth of each line in it."""
    depth, depths = 1, []
    for i in range(start + 1, len(lines)):
        text = lines[i].split("//", 1)[0]
        depths.append(depth - 1)
        depth += text.count("{") - text.count("}")
        if depth <= 0:
            return i, depths[:-1]
    raise ValueError("unbalanced braces in the wrapper")


class _Body:
    """One loop's body: its lines (stripped), their depths, which lines use which names."""

    def __init__(self, lines, depths):
        self.text, self.depths = [line.strip() for line in lines], depths
        self.uses = {}
        for i, line in enumerate(self.text):
            for word in set(_WORD.findall(line.split("//", 1)[0])):
                self.uses.setdefault(word, []).append(i)

    def triples(self, second):
        """``(line, name, match)`` for each handle declared at depth 0 by the three lines
        ``AtenTensorHandle x_handle;``, a call matching ``second``, ``RAIIAtenTensorHandle x``."""
        for i in range(len(self.text) - 2):
            handle, call, raii = (_HANDLE.fullmatch(self.text[i]),
                                  second.fullmatch(self.text[i + 1]),
                                  _RAII.fullmatch(self.text[i + 2]))
            if self.depths[i] == 0 and handle and call and raii:
                name = handle.group(1)
                if call.group(call.re.groups) == name and raii.group(1) == raii.group(2) == name:
                    yield i, name, call

    def resets(self, name):
        return [i for i in self.uses.get(name, ()) if self.text[i] == f"{name}.reset();"]

    def local(self, name, decl, seen=None, held=True) -> bool:
        """Whether nothing outliving an iteration can hold ``name`` (declared on the lines
        ``decl``): every use reads it, or makes a view or result that is local too. ``held``:
        ``name`` would be made once in front of the loop, so no line left in the loop may
        reset it (a view reusing its storage inside a nested block does)."""
        seen = set() if seen is None else seen
        if name in seen:
            return True
        seen.add(name)
        ref = _word(name)
        for i in self.uses.get(name, ()):
            text = self.text[i]
            if i in decl or text == f"{name}.reset();":
                continue
            view = _VIEW.fullmatch(text)
            if view and view.group(2) == name and \
                    len(ref.findall(text)) == 1 + bool(view.group(5)) and \
                    not (held and view.group(5) and self.depths[i]):
                if self.local(view.group(1), {i}, seen, held and not self.depths[i]):
                    continue
                return False
            if _KERNEL.match(text) and not ref.search(text.replace(f"{name}.data_ptr()", "")):
                continue                                    # a kernel's pointer
            aten = _ATEN.match(text)                        # an ATen call's input, not
            if aten and not aten.group(1).endswith("_") and all(    # an in-place op's
                    self.local(out, self._decl(out, i), seen, False)
                    for out in _OUT.findall(text)):
                continue
            return False
        return True

    def _decl(self, name, at):
        """The lines declaring the handle ``name`` set by an ATen call at line ``at``."""
        return {at} | {i for i in self.uses.get(name, ())
                       if self.text[i] == f"RAIIAtenTensorHandle {name}({name}_handle);"}

    def reads_only(self, name, decl, source) -> bool:
        """Whether the body only reads the handle ``name``, a new handle on ``source`` (no
        ``std::move``, assignment or release of it), and only before ``source`` itself is
        reset, assigned or moved (the suffix that sets the loop carry): a reference to
        ``source`` then stands for it."""
        changed = min((i for i in self.uses.get(source, ()) if _changes(self.text[i], source)),
                      default=len(self.text))
        for i in self.uses.get(name, ()):
            text = self.text[i]
            if i not in decl and text != f"{name}.reset();" and \
                    (i >= changed or _changes(text, name)):
                return False
        return True


def _changes(text, name) -> bool:
    """Whether the line ``text`` resets, assigns, moves or releases the handle ``name``."""
    return (f"std::move({name})" in text or f"{name}.release()" in text
            or text == f"{name}.reset();" or re.search(rf"(?<!\w){name}\s*=[^=]", text)
            is not None)


def _renamed(lines, start, end, depths):
    """The loop's lines with each ``auto y = std::move(x);  // reuse`` of a buffer ``x`` the
    body allocates at depth 0 dropped and ``y`` called ``x`` after it (the same handle)."""
    body = _Body(lines[start + 1:end], depths)
    allocated = {name for _, name, _ in body.triples(_EMPTY)}
    lines = list(lines)
    for i, text in enumerate(body.text):
        move = _MOVE.fullmatch(text)
        if move and depths[i] == 0 and move.group(2) in allocated:
            new, old = move.groups()
            lines[start + 1 + i] = ""
            ref = _word(new)
            for j in body.uses.get(new, ()):
                if j > i:
                    lines[start + 1 + j] = ref.sub(old, lines[start + 1 + j])
    return lines


def _loop(lines, start, names):
    end, depths = _block(lines, start)
    lines = _renamed(lines, start, end, depths)
    body = _Body(lines[start + 1:end], depths)
    hoisted, drop = {}, set()
    for i, name, _ in body.triples(_EMPTY):                 # fixed-shape buffers
        if body.local(name, {i, i + 1, i + 2}):
            hoisted[name] = [i, i + 1, i + 2]
    for i, text in enumerate(body.text):                    # views of them, in order
        view = _VIEW.fullmatch(text)
        if view and depths[i] == 0 and view.group(2) in hoisted and \
                body.local(view.group(1), {i}):
            hoisted[view.group(1)] = [i]
    for name, at in hoisted.items():
        drop.update(at)
        drop.update(body.resets(name))
    references = {}
    for i, name, assign in body.triples(_ASSIGN):           # arguments: references
        if body.reads_only(name, {i, i + 1, i + 2}, assign.group(1)):
            references[i] = f"auto& {name} = {assign.group(1)};"
            drop.update((i + 1, i + 2))
            drop.update(body.resets(name))
    arrays = {}
    for text in body.text:
        m = _ARRAY.fullmatch(text)
        if m:
            arrays[m.group(1) or m.group(2)] = text
    first = lines[start]
    indent = first[:len(first) - len(first.lstrip())]
    declared, front = {}, []      # the shape arrays the moved lines use, then the lines
    for i in sorted(j for at in hoisted.values() for j in at):
        text = body.text[i]
        view = _VIEW.fullmatch(text)
        if view and view.group(5):
            text = text.replace(view.group(5), "", 1)
        for array in sorted(set(_WORD.findall(text)) & arrays.keys()):
            if array not in declared:
                declared[array] = f"ppl_hoisted_{next(names)}"
            text = _word(array).sub(declared[array], text)
        front.append(indent + text)
    front[:0] = [indent + _word(array).sub(fresh, arrays[array])
                 for array, fresh in declared.items()]
    kept = []
    for i, line in enumerate(lines[start + 1:end]):
        if i in references:
            kept.append(line[:len(line) - len(line.lstrip())] + references[i])
        elif i not in drop and line:
            kept.append(line)
    return lines[:start] + front + [first] + kept + lines[end:]
