"""The rewrite of AOTInductor's C++ loops (``ppl.backends.torch.aot_hoisting``) on wrapper text
in the forms torch 2.13 writes: what moves in front of a loop, what must stay (anything that
outlives an iteration), arguments as references, the condition read from its data. The
compiled libraries' values are checked against NumPy in
``tests/inference/test_torch_aot_loops.py``."""

import re
import textwrap

from ppl.backends.torch.aot_hoisting import hoist

# one iteration of a loop as the wrapper writes it: the carry's argument, a buffer of fixed
# shape with a view, a kernel, the result moved into the carry
_LOOP = """\
RAIIAtenTensorHandle carry_0;
RAIIAtenTensorHandle buf9_cond_result;
while (1) {
    AtenTensorHandle c_arg0_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_assign_tensors_out(carry_0, &c_arg0_handle));
    RAIIAtenTensorHandle c_arg0(c_arg0_handle);
    static constexpr int64_t *int_array_1=nullptr;
    AtenTensorHandle c_buf0_handle;
    EMPTY(0, c_buf0, int_array_1, int_array_1, bool)
    RAIIAtenTensorHandle c_buf0(c_buf0_handle);
    cpp_fused_lt_0((const int64_t*)(c_arg0.data_ptr()), (bool*)(c_buf0.data_ptr()));
    c_arg0.reset();
    buf9_cond_result.reset();
    buf9_cond_result = std::move(c_buf0);
    bool buf9_cond_result_scalar;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_item_bool(buf9_cond_result, &buf9_cond_result_scalar));
    if (!buf9_cond_result_scalar) break;
    AtenTensorHandle b_arg0_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_assign_tensors_out(carry_0, &b_arg0_handle));
    RAIIAtenTensorHandle b_arg0(b_arg0_handle);
    static constexpr int64_t int_array_2[] = {4L, 2L};
    static constexpr int64_t int_array_3[] = {2L, 1L};
    AtenTensorHandle b_buf0_handle;
    EMPTY(2, b_buf0, int_array_2, int_array_3, float64)
    RAIIAtenTensorHandle b_buf0(b_buf0_handle);
    VIEW(b_buf1, b_buf0, int_array_2, int_array_3)
    AtenTensorHandle b_buf2_handle;
    EMPTY(2, b_buf2, int_array_2, int_array_3, float64)
    RAIIAtenTensorHandle b_buf2(b_buf2_handle);
    cpp_fused_step_1(b_arg0.data_ptr(), b_buf1.data_ptr(), b_buf2.data_ptr());
    b_arg0.reset();
    b_buf0.reset();
    b_buf1.reset();
    carry_0.reset();
    carry_0 = std::move(b_buf2);
}
"""
# the two long lines in the wrapper's own words
_LOOP = re.sub(r"EMPTY\((\d+), (\w+), (\w+), (\w+), (\w+)\)",
               r"AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(\1, \3, \4, "
               r"cached_torch_dtype_\5, cached_torch_device_type_cpu, this->device_idx_, "
               r"&\2_handle));", _LOOP)
_LOOP = re.sub(r"VIEW\((\w+), (\w+), (\w+), (\w+)\)",
               r"auto \1 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper("
               r"\2, 2, \3, \4, 0L));  // alias", _LOOP)


def _rewritten(code=_LOOP):
    return [line.strip() for line in hoist(code).split("\n")]


def _in_loop(lines):
    start = lines.index("while (1) {")
    return lines[:start], lines[start:]


def test_temporary_buffer_and_its_view_made_once_before_the_loop():
    """``b_buf0`` (and its view ``b_buf1``) is only a kernel's scratch: allocated once in
    front of the loop, its ``reset()`` calls gone; ``b_buf2`` becomes the carry and is
    still made at every iteration, as is the condition's buffer (moved into the result)."""
    front, loop = _in_loop(_rewritten())
    assert "AtenTensorHandle b_buf0_handle;" in front
    assert "RAIIAtenTensorHandle b_buf0(b_buf0_handle);" in front
    assert any(line.startswith("auto b_buf1 = wrap_with_raii_handle_if_needed") for line in front)
    assert not any("b_buf0" in line or "b_buf1" in line for line in loop
                   if not line.startswith("cpp_fused"))
    assert "RAIIAtenTensorHandle b_buf2(b_buf2_handle);" in loop
    assert "RAIIAtenTensorHandle c_buf0(c_buf0_handle);" in loop
    assert "carry_0 = std::move(b_buf2);" in loop
    # the shape arrays declared in the loop are declared again in front under new names
    alloc = next(line for line in front if "aoti_torch_empty_strided" in line)
    assert "int_array_2" not in alloc and "ppl_hoisted_" in alloc
    assert any(line.startswith("static constexpr int64_t ppl_hoisted_") and "{4L, 2L}" in line
               for line in front)


def test_arguments_become_references_to_the_carry():
    """An argument only read (a kernel's pointer) is the carry's own handle, not a new
    tensor on its storage; its ``reset()`` (which would free the carry) is gone."""
    _, loop = _in_loop(_rewritten())
    assert "auto& c_arg0 = carry_0;" in loop and "auto& b_arg0 = carry_0;" in loop
    assert not any("assign_tensors_out" in line for line in loop)
    assert "c_arg0.reset();" not in loop and "b_arg0.reset();" not in loop
    assert "carry_0.reset();" in loop                  # the suffix's own reset stays


def test_condition_read_from_its_data():
    _, loop = _in_loop(_rewritten())
    assert "buf9_cond_result_scalar = *static_cast<bool*>(buf9_cond_result.data_ptr());" in loop
    assert not any("aoti_torch_item_bool" in line for line in loop)


def _variant(old, new):
    assert old in _LOOP
    return _LOOP.replace(old, new)


def test_buffer_moved_into_the_carry_stays_in_the_loop():
    """A buffer that outlives its iteration (here the view of ``b_buf0`` becomes the carry)
    is made at every iteration, and so is the buffer it views."""
    code = _variant("carry_0 = std::move(b_buf2);", "carry_0 = std::move(b_buf1);")
    code = code.replace("    b_buf1.reset();\n", "")
    front, loop = _in_loop(_rewritten(code))
    assert "RAIIAtenTensorHandle b_buf0(b_buf0_handle);" in loop
    assert not any("b_buf0" in line or "b_buf1" in line for line in front)


def test_buffer_given_to_an_aten_call_whose_result_escapes_stays():
    """An ATen call's result may be a view of its input: the input is hoisted only when the
    result does not outlive the iteration either."""
    call = ("    AtenTensorHandle b_buf3_handle;\n"
            "    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_cumsum(b_buf0, 1L, nullptr, "
            "&b_buf3_handle));\n"
            "    RAIIAtenTensorHandle b_buf3(b_buf3_handle);\n")
    kernel = "    cpp_fused_step_1("
    local = _variant(kernel, call + "    b_buf3.reset();\n" + kernel)
    front, _ = _in_loop(_rewritten(local))
    assert "RAIIAtenTensorHandle b_buf0(b_buf0_handle);" in front
    escapes = _variant(kernel, call + kernel).replace("carry_0 = std::move(b_buf2);",
                                                     "carry_0 = std::move(b_buf3);")
    front, loop = _in_loop(_rewritten(escapes))
    assert "RAIIAtenTensorHandle b_buf0(b_buf0_handle);" in loop


def test_unknown_use_keeps_the_buffer_in_the_loop():
    """A use in a form the rewrite does not know (a handle array for the proxy executor)
    counts as escaping."""
    code = _variant("    b_buf0.reset();\n",
                    "    AtenTensorHandle args[] = {b_buf0.get()};\n    b_buf0.reset();\n")
    front, loop = _in_loop(_rewritten(code))
    assert "RAIIAtenTensorHandle b_buf0(b_buf0_handle);" in loop


def test_argument_moved_out_stays_a_new_handle():
    code = _variant("carry_0 = std::move(b_buf2);", "carry_0 = std::move(b_arg0);")
    code = code.replace("    b_arg0.reset();\n", "")
    _, loop = _in_loop(_rewritten(code))
    assert "auto& b_arg0 = carry_0;" not in loop
    assert "RAIIAtenTensorHandle b_arg0(b_arg0_handle);" in loop


def test_reused_buffer_is_one_handle():
    """``auto y = std::move(x);  // reuse`` of a temporary: one handle under one name, hoisted."""
    code = _variant("    b_buf1.reset();\n",
                    "    b_buf1.reset();\n    auto b_buf5 = std::move(b_buf0);  // reuse\n"
                    "    cpp_fused_more_2((double*)(b_buf5.data_ptr()));\n    b_buf5.reset();\n")
    code = code.replace("    b_buf0.reset();\n", "")
    front, loop = _in_loop(_rewritten(code))
    assert "RAIIAtenTensorHandle b_buf0(b_buf0_handle);" in front
    assert "cpp_fused_more_2((double*)(b_buf0.data_ptr()));" in loop
    assert not any("b_buf5" in line for line in loop)


def test_nested_loops_hoist_outwards():
    """A buffer hoisted out of an inner loop is a buffer of the outer loop's body, and moves
    out of that one too when nothing there holds it."""
    inner = textwrap.indent(_LOOP.split("\n", 2)[2], "    ")
    code = ("RAIIAtenTensorHandle top;\nwhile (1) {\n"
            "    RAIIAtenTensorHandle carry_0;\n    RAIIAtenTensorHandle buf9_cond_result;\n"
            + inner + "    top = std::move(carry_0);\n}\n")
    lines = _rewritten(code)
    outer = lines.index("while (1) {")
    assert "RAIIAtenTensorHandle b_buf0(b_buf0_handle);" in lines[:outer]
    assert lines.count("while (1) {") == 2


def test_code_without_loops_is_unchanged():
    code = "void f() {\n    AtenTensorHandle a_handle;\n}\n"
    assert hoist(code) == code


def test_argument_read_after_its_carry_is_set_stays_a_new_handle():
    """The body's result a view of its argument, taken in the suffix after the carry was
    set anew: a reference would see the new carry (or none after its reset), a handle of its
    own keeps the old storage."""
    view = ("    carry_1.reset();\n    carry_1 = std::move(wrap_with_raii_handle_if_needed("
            "reinterpret_tensor_wrapper(b_arg0, 1, int_array_2, int_array_3, 1L)));\n")
    code = _variant("    carry_0 = std::move(b_buf2);\n",
                    "    carry_0 = std::move(b_buf2);\n" + view)
    code = code.replace("    b_arg0.reset();\n", "")
    _, loop = _in_loop(_rewritten(code))
    assert "auto& b_arg0 = carry_0;" not in loop
    assert "RAIIAtenTensorHandle b_arg0(b_arg0_handle);" in loop
    assert "auto& c_arg0 = carry_0;" in loop            # read before the suffix: a reference


def test_reuse_in_a_nested_block_keeps_the_buffer_in_the_loop():
    """A view that reuses a buffer's storage and resets the buffer, inside a block of the
    body (not hoisted with it), would reset the hoisted buffer: the buffer stays."""
    code = _variant("    b_buf0.reset();\n",
                    "    if (flag) {\n        auto b_buf7 = wrap_with_raii_handle_if_needed("
                    "reinterpret_tensor_wrapper(b_buf0, 2, int_array_2, int_array_3, 0L)); "
                    "b_buf0.reset();  // reuse\n        cpp_fused_more_3(b_buf7.data_ptr());\n"
                    "        b_buf7.reset();\n    }\n")
    front, loop = _in_loop(_rewritten(code))
    assert "RAIIAtenTensorHandle b_buf0(b_buf0_handle);" in loop


def test_in_place_aten_call_keeps_its_input_in_the_loop():
    """An in-place ATen op (its name ends in ``_``) may make its argument share another
    tensor's storage: not a plain read."""
    code = _variant("    b_buf0.reset();\n",
                    "    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_set_(b_buf0, carry_0));\n"
                    "    b_buf0.reset();\n")
    front, loop = _in_loop(_rewritten(code))
    assert "RAIIAtenTensorHandle b_buf0(b_buf0_handle);" in loop
