"""The model language: ``sample``, ``deterministic``, ``factor`` and ``plate``.

A model is a plain Python function that calls these primitives::

    >>> import ppl
    >>> import ppl.distributions as dist
    >>> def model(y=None):
    ...     mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
    ...     with ppl.plate("N", 3):
    ...         ppl.sample("y", dist.Normal(mu, 1.0), obs=y)
    >>> tr = ppl.handlers.trace(ppl.handlers.seed(model, rng_seed=0)).get_trace()
    >>> [name for name, site in tr.items() if site["type"] == "sample"]
    ['mu', 'y']
    >>> tr["y"]["fn"].batch_shape
    (3,)

Each primitive builds a message (a dict with NumPyro's keys: ``type, name, fn, args, kwargs,
value, is_observed, scale, mask, cond_indep_stack, infer, intermediates``) and sends it through
the active effect handlers (:mod:`ppl.handlers`), which is how one model function serves for
sampling, conditioning, log-density evaluation and prediction.
"""

from __future__ import annotations

from typing import NamedTuple

from ppl import ops
from ppl._messenger import Messenger, apply_stack, get_stack
from ppl.distributions import Unit

__all__ = ["sample", "deterministic", "factor", "plate", "CondIndepStackFrame"]


class CondIndepStackFrame(NamedTuple):
    """One enclosing plate of a site: its name, batch dim (negative) and size."""

    name: str
    dim: int
    size: int


def _check_name(name, primitive):
    if not isinstance(name, str) or not name:
        raise TypeError(
            f"ppl.{primitive}: the site name must be a non-empty string, got {name!r}."
        )


def _as_array(x):
    """Data given as Python/NumPy values becomes an array of the active backend."""
    return x if ops.is_array(x) else ops.asarray(x)


def sample(name: str, fn, obs=None, *, rng_key=None, sample_shape=(), infer=None):
    """Declare a random variable ``name`` with distribution ``fn``.

    Parameters
    ----------
    name
        Site name, unique within one run of the model.
    fn
        A distribution (``ppl.distributions``).
    obs
        Observed value: the site is conditioned on it and ``sample`` returns it.
    rng_key
        A key to draw with, overriding the one a ``seed`` handler would supply.
    sample_shape
        Extra leading dimensions of the draw.
    infer
        Free-form dict of inference hints, kept in the site.

    Returns
    -------
    The observed value, a value supplied by a handler (``substitute``, ``condition``, ...), or
    a draw from ``fn`` with the key of the innermost ``seed`` handler.

    Raises
    ------
    ValueError
        When a draw is needed and no key is available: run the model under
        ``ppl.handlers.seed(model, rng_seed=0)``.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> with ppl.handlers.seed(rng_seed=0):
    ...     x = ppl.sample("x", dist.Normal(0.0, 1.0))
    >>> ppl.ops.shape(x)
    ()
    """
    _check_name(name, "sample")
    if not (hasattr(fn, "log_prob") and hasattr(fn, "sample")):
        raise TypeError(
            f"ppl.sample({name!r}, fn): fn must be a distribution with .sample and .log_prob "
            f"(e.g. ppl.distributions.Normal(0.0, 1.0)), got {type(fn).__name__}."
        )
    if obs is not None:
        obs = _as_array(obs)
    msg = {
        "type": "sample",
        "name": name,
        "fn": fn,
        "args": (),
        "kwargs": {"rng_key": rng_key, "sample_shape": tuple(sample_shape)},
        "value": obs,
        "is_observed": obs is not None,
        "scale": None,
        "mask": None,
        "cond_indep_stack": [],
        "infer": dict(infer) if infer else {},
        "intermediates": [],
    }
    return apply_stack(msg)["value"]


def deterministic(name: str, value):
    """Record ``value`` as the site ``name`` (returned by MCMC and Predictive) and return it.

    Examples
    --------
    >>> import ppl
    >>> ppl.deterministic("two", 2.0)
    2.0
    """
    _check_name(name, "deterministic")
    msg = {
        "type": "deterministic",
        "name": name,
        "fn": None,
        "args": (),
        "kwargs": {},
        "value": value,
        "is_observed": False,
        "scale": None,
        "mask": None,
        "cond_indep_stack": [],
        "infer": {},
        "intermediates": [],
    }
    return apply_stack(msg)["value"]


def factor(name: str, log_factor):
    """Add ``log_factor`` to the model's log joint density (an observed site of a ``Unit``
    distribution, as in NumPyro).

    Inside a plate, a scalar ``log_factor`` is broadcast to the plate and counted once per
    plate element, like any other site.

    Examples
    --------
    >>> import ppl
    >>> from ppl.inference import log_density
    >>> lp, _ = log_density(lambda: ppl.factor("f", -1.5), (), {}, {})
    >>> float(lp)
    -1.5
    """
    _check_name(name, "factor")
    log_factor = _as_array(log_factor)
    return sample(name, Unit(log_factor), obs=ops.zeros(ops.shape(log_factor) + (0,)))


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
        Accepted for NumPyro compatibility; subsampling is not supported (must be ``None`` or
        ``size``).

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> with ppl.handlers.seed(rng_seed=0):
    ...     with ppl.plate("rows", 4, dim=-2), ppl.plate("cols", 3):
    ...         x = ppl.sample("x", dist.Normal(0.0, 1.0))
    >>> ppl.ops.shape(x)
    (4, 3)
    """

    def __init__(self, name: str, size: int, dim: int | None = None, *, subsample_size=None):
        _check_name(name, "plate")
        if isinstance(size, bool) or not isinstance(size, int):
            try:
                size = int(ops.to_numpy(size)) if ops.is_array(size) else size.__index__()
            except (AttributeError, TypeError, ValueError):
                raise TypeError(
                    f"ppl.plate({name!r}, size): size must be a positive integer, got {size!r}."
                ) from None
        if size < 1:
            raise ValueError(f"ppl.plate({name!r}, size): size must be >= 1, got {size}.")
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim >= 0):
            raise ValueError(
                f"ppl.plate({name!r}, dim=...): dim must be a negative integer (counted from "
                f"the right of the batch dimensions) or None, got {dim!r}."
            )
        if subsample_size is not None and subsample_size != size:
            raise NotImplementedError(
                f"ppl.plate({name!r}): subsampling (subsample_size={subsample_size}) is not "
                f"supported; use the full data (subsample_size=None)."
            )
        self.name = name
        self.size = size
        self._user_dim = dim
        self.dim = dim
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
        indices = ops.arange(self.size)
        msg = {
            "type": "plate", "name": self.name, "fn": None, "args": (self.size, None),
            "kwargs": {}, "value": indices, "is_observed": False, "scale": None,
            "mask": None, "cond_indep_stack": [], "infer": {}, "intermediates": [],
        }
        return apply_stack(msg)["value"]

    @property
    def frame(self) -> CondIndepStackFrame:
        return CondIndepStackFrame(self.name, self.dim, self.size)

    def process_message(self, msg):
        if msg["type"] not in ("sample", "deterministic"):
            return
        msg["cond_indep_stack"].append(self.frame)
        if msg["type"] != "sample":
            return
        fn = msg["fn"]
        sample_shape = tuple(msg["kwargs"].get("sample_shape", ()))
        batch = sample_shape + tuple(fn.batch_shape)
        pos = len(batch) + self.dim
        if pos >= 0 and batch[pos] not in (1, self.size):
            raise ValueError(
                f"Site {msg['name']!r} has batch shape {batch} with size {batch[pos]} at dim "
                f"{self.dim}, but it is inside plate {self.name!r} of size {self.size} at that "
                f"dim. Make the distribution's batch shape broadcast to the plate (size 1 or "
                f"{self.size} at dim {self.dim}), e.g. with .expand() or by reshaping its "
                f"parameters, or place the plate at another dim=."
            )
        if msg["is_observed"] and msg["value"] is not None:
            obs_batch = _batch_shape_of_value(msg)
            opos = len(obs_batch) + self.dim
            if opos >= 0 and obs_batch[opos] not in (1, self.size):
                raise ValueError(
                    f"Observed site {msg['name']!r} has a value of batch shape {obs_batch} "
                    f"with size {obs_batch[opos]} at dim {self.dim}, but plate {self.name!r} "
                    f"there has size {self.size}. Pass data matching the plate."
                )
        if pos < 0:
            new = (1,) * (-pos) + batch
            pos = 0
        else:
            new = batch
        new = new[:pos] + (self.size,) + new[pos + 1:]
        if new != tuple(fn.batch_shape):
            msg["fn"] = fn.expand(new)
        if sample_shape:
            msg["kwargs"]["sample_shape"] = ()
