"""The dtype and device policy of every backend, written once.

* **Float dtypes.** A backend computes in ``"float32"`` or ``"float64"``
  (:func:`check_float_dtype`); floating arrays are created in that dtype unless a ``dtype`` is
  passed.
* **Dtype names.** ``dtype`` arguments accept the names in :data:`DTYPE_NAMES`, NumPy dtypes,
  framework dtypes with one of those names, and the Python types ``float`` (the backend's
  float dtype), ``int`` (``int64``) and ``bool`` (:func:`dtype_name`).
* **Floating ops.** An op marked :func:`floating` in the protocol has a floating result
  whatever its input: integer and boolean arguments (backend arrays, NumPy arrays, Python
  numbers) are converted to the backend's float dtype before the backend's implementation
  runs, and floating arrays are passed through untouched (a float32 array stays float32 on a
  float64 backend). :func:`apply_float_policy` wraps every backend class's implementation of
  such an op, so no backend can forget the rule; a backend only says *how* to convert
  (:meth:`DtypePolicy.float_operand`). NumPy lacks the rule (``np.exp`` of an ``int64`` array is
  float64 on a float32 backend, of a ``bool`` array float16) and torch applies it with its
  process-wide default dtype instead of the backend's.
* **Devices.** ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"gpu"``, ``"tpu:0"``...: a platform and an
  optional index (:func:`parse_device`); each backend maps them to its framework's devices.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

__all__ = ["FLOAT_DTYPES", "DTYPE_NAMES", "DtypePolicy", "apply_float_policy",
           "check_float_dtype", "dtype_name", "floating", "floating_ops", "is_floating_name",
           "is_int", "parse_device"]


def is_int(x) -> bool:
    """Whether ``x`` is an integer, Python's or NumPy's, and not a bool: what a count, a size
    or a seed given as an argument must be."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))

#: the float dtypes a backend can compute in
FLOAT_DTYPES = ("float32", "float64")
#: every dtype name a ``dtype`` argument accepts
DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "bfloat16", "float32", "float64", "complex64", "complex128")
_FLOATING_KINDS = frozenset({"float16", "bfloat16", "float32", "float64", "complex64",
                             "complex128"})


def check_float_dtype(dtype) -> str:
    """``dtype`` if it is a float dtype a backend can compute in, else a ``ValueError``."""
    if dtype not in FLOAT_DTYPES:
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}.")
    return dtype


def dtype_name(dtype, float_dtype: str) -> str:
    """The name in :data:`DTYPE_NAMES` of a ``dtype`` argument.

    ``None`` and ``float`` mean ``float_dtype`` (the backend's), ``int`` is ``"int64"`` and
    ``bool`` is ``"bool"``; NumPy dtypes and framework dtypes (``torch.float32``,
    ``jnp.int32``) give their names.

    >>> dtype_name(None, "float32"), dtype_name(int, "float32"), dtype_name("float64", "float32")
    ('float32', 'int64', 'float64')
    """
    if dtype is None or dtype is float:
        return float_dtype
    if isinstance(dtype, str) and dtype in DTYPE_NAMES:
        return dtype
    if dtype is int or dtype is bool:
        return "int64" if dtype is int else "bool"
    try:
        name = np.dtype(dtype).name     # NumPy dtypes, aliases ("f8"), jax.numpy dtypes
    except TypeError:                   # a framework dtype NumPy does not know (torch.float32)
        name = getattr(dtype, "name", None) or str(dtype).rpartition(".")[2]
    if name not in DTYPE_NAMES:
        raise TypeError(f"dtype must be one of {list(DTYPE_NAMES)} (or a NumPy/framework dtype "
                        f"of those names), got {dtype!r}.")
    return name


def is_floating_name(name: str) -> bool:
    """Whether the dtype called ``name`` is floating (real or complex)."""
    return name in _FLOATING_KINDS


def parse_device(device: str) -> tuple[str, int | None]:
    """``(platform, index)`` of a device string: ``"cpu"`` -> ``("cpu", None)``,
    ``"cuda:1"`` -> ``("cuda", 1)``. Each backend checks the platform against its framework.

    >>> parse_device("cuda:1"), parse_device("CPU")
    (('cuda', 1), ('cpu', None))
    """
    if not isinstance(device, str):
        raise TypeError(f"device must be a string such as 'cpu' or 'cuda:0', got {device!r}.")
    platform, colon, index = device.strip().lower().partition(":")
    if not platform or not platform.isalpha() or (colon and not index.isdigit()):
        raise ValueError(f"device {device!r}: expected '<platform>' or '<platform>:<index>', "
                         f"such as 'cpu', 'cuda' or 'cuda:1'.")
    return platform, int(index) if colon else None


# ------------------------------------------------------------------------ floating ops
def floating(*operands: str):
    """Mark a protocol method as a floating op: integer and boolean values of the named
    parameters (default: the first) become the backend's float dtype before it runs.
    Implementations keep the protocol's parameter names and order."""
    def mark(fn):
        params = list(inspect.signature(fn).parameters)[1:]   # without self
        fn.__ppl_floating__ = tuple((params.index(n), n) for n in operands or params[:1])
        return fn
    return mark


def floating_ops(cls) -> dict[str, tuple[tuple[int, str], ...]]:
    """``{op: ((position, name), ...)}``: the ops ``cls`` marks :func:`floating` and their
    floating operands."""
    out = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            operands = getattr(value, "__ppl_floating__", None)
            if operands is not None:
                out[name] = operands
    return out


def _wrap(impl, operands, static, unary):
    """``impl`` with its floating operands (passed by position or by name) converted first.
    This wrapper runs on every call of every floating op, so the common call shapes take short
    paths: ``op(x)``, ``op(x, *options)``, and all ``n`` operands by position."""
    n = len(operands)
    leading = tuple(i for i, _ in operands) == tuple(range(n))

    def converted(self, args, kwargs):
        if leading and len(args) >= n:
            return (*self.float_operands(*args[:n]), *args[n:])
        args = list(args)
        given = [i for i, _ in operands if i < len(args)]
        for i, value in zip(given, self.float_operands(*(args[i] for i in given))):
            args[i] = value
        for i, name in operands:
            if i >= len(args) and name in kwargs:
                kwargs[name] = self.float_operand(kwargs[name])
        return args

    if unary:       # the protocol signature is (self, x)
        if static:
            def method(self, x):
                return impl(self.float_operand(x))
        else:
            def method(self, x):
                return impl(self, self.float_operand(x))
    elif n == 1 and leading and operands[0][1] == "x":      # (self, x, options...)
        if static:
            def method(self, x, *args, **kwargs):
                return impl(self.float_operand(x), *args, **kwargs)
        else:
            def method(self, x, *args, **kwargs):
                return impl(self, self.float_operand(x), *args, **kwargs)
    else:
        def method(self, *args, **kwargs):
            args = self.float_operands(*args) if leading and len(args) == n and not kwargs \
                else converted(self, args, kwargs)
            return impl(*args, **kwargs) if static else impl(self, *args, **kwargs)
    functools.update_wrapper(method, impl)
    method.__ppl_floating__ = operands
    method.__ppl_policy__ = True
    return method


def apply_float_policy(cls, ops: dict) -> None:
    """Wrap ``cls``'s implementation of every op in ``ops`` (from :func:`floating_ops`; see the
    module docstring). Implementations already wrapped (inherited from a wrapped class) stay."""
    for name, operands in ops.items():
        raw = inspect.getattr_static(cls, name)
        static = isinstance(raw, staticmethod)
        impl = raw.__func__ if static else raw
        if getattr(impl, "__ppl_policy__", False):
            continue
        declared = next(vars(k)[name] for k in reversed(cls.__mro__)
                        if hasattr(vars(k).get(name), "__ppl_floating__"))
        unary = list(inspect.signature(declared).parameters) == ["self", "x"]
        setattr(cls, name, _wrap(impl, operands, static, unary))


class DtypePolicy:
    """The conversions the float policy needs; a backend overrides them for speed."""

    def float_operand(self, x):
        """``x`` as an array of this backend, floating: integer and boolean input becomes
        ``self.dtype``; floating arrays are returned unchanged."""
        if not self.is_array(x):
            x = self.asarray(x)
        return x if is_floating_name(self.dtype_of(x)) else self.astype(x, self.dtype)

    def float_operands(self, *xs) -> list:
        """:meth:`float_operand` of each operand of an n-ary floating op."""
        return [self.float_operand(x) for x in xs]
