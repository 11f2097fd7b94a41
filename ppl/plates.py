"""Conditional independence in the model language: ``plate`` (with subsampling), ``plate_stack``
(several contiguous plates at once) and ``markov`` (a loop whose enumerated sites recycle their
batch dimensions).

A plate broadcasts the sites inside it along one batch dimension and records a
:class:`CondIndepStackFrame` in each site's ``cond_indep_stack``; with ``subsample_size`` it draws
a random subset of the indices (with the key of the enclosing ``seed`` handler, or takes the
``subsample=`` given) and scales the log-density of the sites inside by
``size / subsample_size``, the unbiased estimate of the full-data log-likelihood used by
stochastic-gradient methods (Hoffman et al., 2013, "Stochastic Variational Inference", JMLR 14).
It also answers the ``"subsample"`` messages of :func:`ppl.primitives.subsample`, taking its
indices along its dim of the data.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np

from ppl import ops
from ppl import random as _random
from ppl._messenger import Messenger, apply_stack, check_name, get_stack, new_message

__all__ = ["plate", "plate_stack", "markov", "CondIndepStackFrame"]


class CondIndepStackFrame(NamedTuple):
    """One enclosing plate of a site: its name, batch dim (negative) and size (the subsample
    size when subsampling)."""

    name: str
    dim: int
    size: int


def _as_size(name, size, what):
    if isinstance(size, bool) or not isinstance(size, int):
        try:
            size = int(ops.to_numpy(size)) if ops.is_array(size) else size.__index__()
        except (AttributeError, TypeError, ValueError):
            raise TypeError(
                f"ppl.plate({name!r}, {what}): {what} must be a positive integer, got {size!r}."
            ) from None
    if size < 1:
        raise ValueError(f"ppl.plate({name!r}, {what}): {what} must be >= 1, got {size}.")
    return size


def _batch_shape_of_value(msg):
    """Batch part (sample_shape + batch_shape) of an observed value's shape."""
    shape = ops.shape(msg["value"])
    event_ndim = len(msg["fn"].event_shape)
    return shape[: len(shape) - event_ndim]


class plate(Messenger):
    """Declare ``size`` conditionally independent copies along one batch dimension.

    Sample sites inside the plate get their distribution's batch shape broadcast to the plate:
    dimension ``dim`` (counted from the right of the batch dimensions, event dimensions not
    included) has size ``size``. Nested plates take ``dim = -1, -2, ...`` in order of entry
    unless ``dim`` is given.

    Parameters
    ----------
    name
        Plate name (unique among the active plates).
    size
        Number of independent copies.
    dim
        Negative batch dimension of the plate; ``None`` picks the rightmost free one.
    subsample_size
        Size of a random subsample of ``range(size)`` (``None``: all of it). The indices are
        what ``with plate(...) as idx`` yields; index the data with them. Sites inside have
        batch size ``subsample_size`` and their log-density is scaled by
        ``size / subsample_size``.
    subsample
        The subsample indices themselves (instead of a random draw).

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> with ppl.handlers.seed(rng_seed=0):
    ...     with ppl.plate("rows", 4, dim=-2), ppl.plate("cols", 3):
    ...         x = ppl.sample("x", dist.Normal(0.0, 1.0))
    >>> ppl.ops.shape(x)
    (4, 3)
    >>> with ppl.handlers.seed(rng_seed=0):
    ...     with ppl.plate("data", 100, subsample_size=10) as idx:
    ...         pass
    >>> ppl.ops.shape(idx)
    (10,)
    """

    def __init__(self, name: str, size: int, subsample_size: int | None = None,
                 dim: int | None = None, *, subsample=None):
        check_name(name, "plate")
        size = _as_size(name, size, "size")
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim >= 0):
            raise ValueError(
                f"ppl.plate({name!r}, dim=...): dim must be a negative integer (counted from "
                f"the right of the batch dimensions) or None, got {dim!r}."
            )
        if subsample is not None:
            subsample = subsample if ops.is_array(subsample) else ops.asarray(subsample)
            if ops.ndim(subsample) != 1:
                raise ValueError(f"ppl.plate({name!r}, subsample=...): subsample must be a 1-d "
                                 f"array of indices, got shape {ops.shape(subsample)}.")
            given = ops.shape(subsample)[0]
            if subsample_size is not None and int(subsample_size) != given:
                raise ValueError(
                    f"ppl.plate({name!r}): subsample_size={subsample_size} but subsample has "
                    f"{given} indices; pass one of them or make them agree.")
            subsample_size = given
        subsample_size = size if subsample_size is None else _as_size(
            name, subsample_size, "subsample_size")
        if subsample_size > size:
            raise ValueError(
                f"ppl.plate({name!r}): subsample_size={subsample_size} is larger than size="
                f"{size}; pass at most size.")
        self.subsample_size = subsample_size
        self.subsample = subsample
        self.name = name
        self.size = size
        self._user_dim = dim
        self.dim = dim
        self._indices = None  # the indices of the current entry (``with``), for ``subsample``
        super().__init__(None)

    def _allocate(self):
        active = [h for h in get_stack() if isinstance(h, plate)]
        occupied = {h.dim for h in active}
        for h in active:
            if h.name == self.name:
                raise ValueError(
                    f"ppl.plate({self.name!r}) is already active; nested plates need "
                    f"distinct names."
                )
        if self._user_dim is None:
            dim = -1
            while dim in occupied:
                dim -= 1
            self.dim = dim
        elif self._user_dim in occupied:
            other = next(h.name for h in active if h.dim == self._user_dim)
            raise ValueError(
                f"ppl.plate({self.name!r}, dim={self._user_dim}): dim {self._user_dim} is "
                f"already used by the enclosing plate {other!r}; give it another dim= or "
                f"leave dim=None to pick a free one."
            )

    def _entered(self):
        self._allocate()
        return self

    def __enter__(self):
        self._allocate()
        super().__enter__()
        value, kwargs = self.subsample, {}
        if value is None and self.subsample_size == self.size:
            value = ops.arange(self.size)
        elif value is None:
            kwargs = {"rng_key": None}  # a seed handler fills it in
        msg = new_message("plate", self.name, fn=self._draw_indices, value=value,
                          args=(self.size, self.subsample_size), kwargs=kwargs)
        try:
            self._indices = apply_stack(msg)["value"]
        except BaseException:
            super().__exit__(None, None, None)  # `with` calls no __exit__ when __enter__ fails
            raise
        return self._indices

    def __exit__(self, exc_type, exc_value, traceback):
        self._indices = None  # no array (or tracer) outlives the ``with`` block
        return super().__exit__(exc_type, exc_value, traceback)

    def _draw_indices(self, key):
        return _random.permutation(key, self.size)[:self.subsample_size]

    @property
    def frame(self) -> CondIndepStackFrame:
        return CondIndepStackFrame(self.name, self.dim, self.subsample_size)

    def postprocess_message(self, msg):
        if msg["type"] == "subsample":
            msg["value"] = self._subsample(msg["value"], msg["kwargs"]["event_dim"])

    def _subsample(self, data, event_dim):
        """``data`` indexed by this plate's indices along its dim (``dim - event_dim`` of the
        data), or as is where it already has the subsample size or broadcasts (size 1, or
        too few dims)."""
        shape = tuple(ops.shape(data) if ops.is_array(data) else np.shape(data))
        axis = self.dim - event_dim
        if len(shape) < -axis or shape[axis] in (1, self.subsample_size):
            return data
        if shape[axis] != self.size:
            raise ValueError(
                f"ppl.subsample(data, event_dim={event_dim}): data of shape {shape} has size "
                f"{shape[axis]} at dim {axis} (dim {self.dim} of plate {self.name!r}, left of "
                f"the {event_dim} event dims), but ppl.plate({self.name!r}, size={self.size}, "
                f"subsample_size={self.subsample_size}) expects its full size {self.size} (the "
                f"data to subsample) or its subsample size {self.subsample_size} (data already "
                f"subsampled). Pass data whose dim {axis} runs over the plate, or set event_dim "
                f"(or the plate's dim=) so that they line up.")
        if self._indices is None:
            raise ValueError(
                f"ppl.subsample: plate {self.name!r} has no subsample indices here; enter it "
                f"with `with ppl.plate({self.name!r}, ...):` (not as a decorator) to subsample "
                f"data inside it.")
        data = data if ops.is_array(data) else ops.asarray(data)
        return ops.take(data, self._indices, axis=axis)

    def process_message(self, msg):
        if msg["type"] not in ("sample", "deterministic"):
            return
        msg["cond_indep_stack"].append(self.frame)
        if msg["type"] != "sample":
            return
        if self.subsample_size < self.size:
            factor = self.size / self.subsample_size
            msg["scale"] = factor if msg["scale"] is None else factor * msg["scale"]
        fn = msg["fn"]
        sample_shape = tuple(msg["kwargs"].get("sample_shape", ()))
        batch = sample_shape + tuple(fn.batch_shape)
        pos = len(batch) + self.dim
        size = self.subsample_size
        if pos >= 0 and batch[pos] not in (1, size):
            raise ValueError(
                f"Site {msg['name']!r} has batch shape {batch} with size {batch[pos]} at dim "
                f"{self.dim}, but it is inside plate {self.name!r} of size {size} at that "
                f"dim. Make the distribution's batch shape broadcast to the plate (size 1 or "
                f"{size} at dim {self.dim}), e.g. with .expand() or by reshaping its "
                f"parameters, or place the plate at another dim=."
            )
        if msg["is_observed"] and msg["value"] is not None:
            obs_batch = _batch_shape_of_value(msg)
            opos = len(obs_batch) + self.dim
            if opos >= 0 and obs_batch[opos] not in (1, self.subsample_size):
                raise ValueError(
                    f"Observed site {msg['name']!r} has a value of batch shape {obs_batch} "
                    f"with size {obs_batch[opos]} at dim {self.dim}, but plate {self.name!r} "
                    f"there has size {self.subsample_size}. Pass data matching the plate."
                )
        if pos < 0:
            new = (1,) * (-pos) + batch
            pos = 0
        else:
            new = batch
        new = new[:pos] + (self.subsample_size,) + new[pos + 1:]
        if new != tuple(fn.batch_shape):
            msg["fn"] = fn.expand(new)
        if sample_shape:
            msg["kwargs"]["sample_shape"] = ()


@contextlib.contextmanager
def plate_stack(prefix: str, sizes: Sequence[int], rightmost_dim: int = -1) -> Iterator[None]:
    """Enter one plate per entry of ``sizes``, on the contiguous batch dimensions
    ``rightmost_dim - len(sizes) + 1, ..., rightmost_dim`` (NumPyro's ``plate_stack``).

    The last size is the rightmost dimension: plate ``f"{prefix}_0"`` has size ``sizes[-1]``
    at dim ``rightmost_dim``, plate ``f"{prefix}_1"`` size ``sizes[-2]`` at
    ``rightmost_dim - 1``, and so on, so a site inside gets batch shape ``tuple(sizes)`` (for
    ``rightmost_dim=-1``). Handy to declare a batch shape taken from data, ``x.shape``.

    Parameters
    ----------
    prefix
        Name prefix of the plates.
    sizes
        Plate sizes, leftmost first (a shape).
    rightmost_dim
        The (negative) batch dimension of the last plate.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> with ppl.handlers.seed(rng_seed=0), ppl.handlers.trace() as tr:
    ...     with ppl.plate_stack("data", (2, 3)):
    ...         x = ppl.sample("x", dist.Normal(0.0, 1.0))
    >>> ppl.ops.shape(x), [(f.name, f.dim, f.size) for f in tr["x"]["cond_indep_stack"]]
    ((2, 3), [('data_1', -2, 2), ('data_0', -1, 3)])
    """
    check_name(prefix, "plate_stack")
    if isinstance(rightmost_dim, bool) or not isinstance(rightmost_dim, int) \
            or rightmost_dim >= 0:
        raise ValueError(
            f"ppl.plate_stack({prefix!r}, rightmost_dim=...): rightmost_dim must be a negative "
            f"integer (a batch dimension counted from the right), got {rightmost_dim!r}.")
    try:
        sizes = list(sizes)
    except TypeError:
        raise TypeError(
            f"ppl.plate_stack({prefix!r}, sizes): sizes must be a sequence of positive "
            f"integers (a shape such as (2, 3)), got {sizes!r}.") from None
    plates = [plate(f"{prefix}_{i}", size, dim=rightmost_dim - i)
              for i, size in enumerate(reversed(sizes))]
    with contextlib.ExitStack() as stack:
        for p in plates:
            stack.enter_context(p)
        yield


_LOOP_IDS = itertools.count()


def markov(iterable, history: int = 1):
    """Iterate over ``iterable`` as a Markov chain: a site enumerated at step ``t`` depends on
    the sites of at most the ``history`` previous steps, so the enumeration handler can reuse
    the batch dimensions of older steps and memory stays linear in the number of steps.

    Without enumeration it is a plain loop.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> def chain(T=3):
    ...     x = 0
    ...     for t in ppl.markov(range(T)):
    ...         x = ppl.sample(f"x_{t}", dist.Bernoulli(0.3 + 0.4 * x))
    >>> tr = ppl.handlers.trace(ppl.handlers.seed(chain, rng_seed=0)).get_trace()
    >>> [n for n in tr]
    ['x_0', 'x_1', 'x_2']
    """
    if isinstance(history, bool) or not isinstance(history, int) or history < 0:
        raise ValueError(f"ppl.markov: history must be an int >= 0, got {history!r}.")
    loop_id = next(_LOOP_IDS)
    for step, item in enumerate(iterable):
        apply_stack(new_message("markov", None, args=(loop_id, step, history)))
        yield item
