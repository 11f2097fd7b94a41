"""The model language: ``sample`` (with ``obs_mask`` for missing data), ``param``,
``deterministic``, ``factor``, ``prng_key``, ``subsample``, and (from :mod:`ppl.plates`)
``plate``, ``plate_stack`` and ``markov``.

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

import numpy as np

from ppl import ops
from ppl import random as _random
from ppl._messenger import apply_stack, check_name, get_stack, new_message
from ppl.distributions import Unit, constraints
from ppl.plates import CondIndepStackFrame, markov, plate, plate_stack

__all__ = ["sample", "param", "deterministic", "factor", "prng_key", "subsample", "plate",
           "plate_stack", "markov", "CondIndepStackFrame"]


def _as_array(x):
    """Data given as Python/NumPy values becomes an array of the active backend."""
    return x if ops.is_array(x) else ops.asarray(x)


def sample(name: str, fn, obs=None, *, obs_mask=None, rng_key=None, sample_shape=(),
           infer=None):
    """Declare a random variable ``name`` with distribution ``fn``.

    Parameters
    ----------
    name
        Site name, unique within one run of the model.
    fn
        A distribution (``ppl.distributions``).
    obs
        Observed value: the site is conditioned on it and ``sample`` returns it.
    obs_mask
        Boolean array broadcastable with the site's batch shape, true where ``obs`` is
        observed: missing-data imputation as in NumPyro. The site splits into the latent site
        ``f"{name}_unobserved"``, the observed site ``f"{name}_observed"`` (its log-density
        masked by ``obs_mask``) and the deterministic site ``name``, ``where(obs_mask, obs,
        unobserved)``, which ``sample`` returns. Entries of ``obs`` where ``obs_mask`` is
        false are never read (``NaN`` is fine). With ``obs=None`` both parts are drawn
        (prediction). Unlike NumPyro, the latent site keeps its prior density at the observed
        entries too, where nothing else reads it: NumPyro drops it there, which leaves those
        entries improper (flat) and is why NumPyro warns against ``obs_mask`` under MCMC;
        here they are proper nuisance draws, the posterior of every other site is the same,
        and NUTS works. Without any handler active, ``obs_mask`` is checked and ignored.
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
        ``ppl.handlers.seed(model, rng_seed=0)``; or when ``obs_mask`` does not broadcast with
        the site's batch shape.
    TypeError
        When ``obs_mask`` is not boolean.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> with ppl.handlers.seed(rng_seed=0):
    ...     x = ppl.sample("x", dist.Normal(0.0, 1.0))
    >>> ppl.ops.shape(x)
    ()
    >>> import numpy as np
    >>> y = np.array([0.5, np.nan, 1.5])
    >>> with ppl.handlers.seed(rng_seed=0), ppl.handlers.trace() as tr:
    ...     z = ppl.sample("y", dist.Normal(0.0, 1.0), obs=y, obs_mask=~np.isnan(y))
    >>> list(tr), bool(z[0] == 0.5), bool(ppl.ops.isnan(z[1]))
    (['y_unobserved', 'y_observed', 'y'], True, False)
    """
    check_name(name, "sample")
    if not (hasattr(fn, "log_prob") and hasattr(fn, "sample")):
        raise TypeError(
            f"ppl.sample({name!r}, fn): fn must be a distribution with .sample and .log_prob "
            f"(e.g. ppl.distributions.Normal(0.0, 1.0)), got {type(fn).__name__}."
        )
    if obs is not None:
        obs = _as_array(obs)
    if obs_mask is not None:
        obs_mask, batch_shape = _check_obs_mask(name, fn, obs, obs_mask, sample_shape)
        if get_stack():  # as NumPyro: without handlers, a plain sample
            return _masked_sample(name, fn, obs, obs_mask, batch_shape, rng_key, infer)
    msg = new_message("sample", name, fn=fn, value=obs, is_observed=obs is not None,
                      kwargs={"rng_key": rng_key, "sample_shape": tuple(sample_shape)},
                      infer=infer)
    return apply_stack(msg)["value"]


def _plate_shape():
    """The batch shape the active plates give a site (size 1 where no plate is)."""
    frames = [(h.dim, h.subsample_size) for h in get_stack() if isinstance(h, plate)]
    shape = [1] * max([-dim for dim, _ in frames], default=0)
    for dim, size in frames:
        shape[dim] = size
    return tuple(shape)


def _check_obs_mask(name, fn, obs, obs_mask, sample_shape):
    """``obs_mask`` as a boolean backend array, and the batch shape of the two parts of the
    site (``fn``'s, broadcast with the mask's and the data's)."""
    where = f"ppl.sample({name!r}, ..., obs_mask=...)"
    if not ops.is_array(obs_mask):
        raw = np.asarray(obs_mask)
        if raw.dtype.kind != "b":
            raise TypeError(
                f"{where}: obs_mask must be boolean (True where obs is observed), got dtype "
                f"{raw.dtype}; pass e.g. obs_mask=~np.isnan(y), or convert with .astype(bool).")
        obs_mask = ops.asarray(raw)
    elif ops.dtype_of(obs_mask) != "bool":
        raise TypeError(
            f"{where}: obs_mask must be boolean (True where obs is observed), got dtype "
            f"{ops.dtype_of(obs_mask)}; pass e.g. obs_mask=~isnan(y), or compare (x > 0).")
    if tuple(sample_shape):
        raise ValueError(
            f"{where}: sample_shape={tuple(sample_shape)} cannot be combined with obs_mask; "
            f"give the distribution that batch shape instead (fn.expand(...) or a plate).")
    event_ndim = len(fn.event_shape)
    obs_batch = () if obs is None else tuple(ops.shape(obs))[:ops.ndim(obs) - event_ndim]
    mask_shape = tuple(ops.shape(obs_mask))
    try:
        site_shape = np.broadcast_shapes(tuple(fn.batch_shape), obs_batch, _plate_shape())
    except ValueError:
        site_shape = None  # the plate or the distribution reports that mismatch
    try:
        if site_shape is not None:
            np.broadcast_shapes(site_shape, mask_shape)
        batch_shape = np.broadcast_shapes(tuple(fn.batch_shape), obs_batch, mask_shape)
    except ValueError:
        raise ValueError(
            f"{where}: obs_mask of shape {mask_shape} does not broadcast with the site's "
            f"batch shape {site_shape if site_shape is not None else tuple(fn.batch_shape)} "
            f"(from fn.batch_shape {tuple(fn.batch_shape)}, obs and the enclosing plates); "
            f"give obs_mask the batch shape of the data, one entry per observation "
            f"(without event dims).") from None
    return obs_mask, tuple(batch_shape)


def _masked_sample(name, fn, obs, obs_mask, batch_shape, rng_key, infer):
    """NumPyro's ``obs_mask`` split: a latent site for the missing entries, an observed site
    masked to the present ones, and their interleaving as a deterministic site."""
    if batch_shape != tuple(fn.batch_shape):
        fn = fn.expand(batch_shape)
    keys = (None, None) if rng_key is None else _random.split_keys(rng_key, 2)

    def part(suffix, key, **extra):
        msg = new_message("sample", f"{name}_{suffix}", fn=fn, infer=infer,
                          kwargs={"rng_key": key, "sample_shape": ()}, **extra)
        if "value" in extra:
            msg["mask"] = obs_mask
        return apply_stack(msg)["value"]

    # the latent part is not masked: its entries at observed places keep their (proper) prior
    latent = part("unobserved", keys[0])
    observed_here = ops.reshape(obs_mask, tuple(ops.shape(obs_mask))
                                + (1,) * len(fn.event_shape))
    if obs is None:
        observed = part("observed", keys[1])
    else:  # the unread entries of obs (NaN, say) take the latent values: finite gradients
        observed = part("observed", keys[1], value=ops.where(observed_here, obs, latent),
                        is_observed=True)
    return deterministic(name, ops.where(observed_here, observed, latent))


def deterministic(name: str, value):
    """Record ``value`` as the site ``name`` (returned by MCMC and Predictive) and return it.

    Examples
    --------
    >>> import ppl
    >>> ppl.deterministic("two", 2.0)
    2.0
    """
    check_name(name, "deterministic")
    msg = new_message("deterministic", name, value=value)
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
    check_name(name, "factor")
    log_factor = _as_array(log_factor)
    return sample(name, Unit(log_factor), obs=ops.zeros(ops.shape(log_factor) + (0,)))


def param(name: str, init_value=None, constraint=constraints.real, *, event_dim=None):
    """Declare a parameter ``name``: a value a model uses that is not a random variable.

    The site has type ``"param"``; its value lives in the constrained space (inside
    ``constraint``). It is ``init_value`` (or ``init_value(rng_key)`` when that is a function,
    with the key of the enclosing ``seed`` handler) unless a handler sets it:
    ``substitute(model, data={name: value})`` fixes it, ``lift(model, prior)`` turns it into a
    random variable. Samplers treat params as constants; they add nothing to the log-density.

    Parameters
    ----------
    name
        Site name.
    init_value
        The initial value (an array or number), or a function ``rng_key -> value``.
    constraint
        The set the value lies in (``ppl.distributions.constraints``), recorded in the site as
        ``kwargs["constraint"]``.
    event_dim
        Number of rightmost dims that form one event (for plates), recorded as
        ``kwargs["event_dim"]``.

    Examples
    --------
    >>> import ppl
    >>> from ppl.distributions import constraints
    >>> def model():
    ...     return ppl.param("s", 2.0, constraint=constraints.positive)
    >>> float(model())
    2.0
    >>> float(ppl.handlers.substitute(model, data={"s": 3.0})())
    3.0
    """
    check_name(name, "param")
    if init_value is None:
        raise ValueError(
            f"ppl.param({name!r}): init_value is required (an array, or a function "
            f"rng_key -> array), unless a handler sets the value.")
    if not isinstance(constraint, constraints.Constraint):
        raise TypeError(
            f"ppl.param({name!r}, constraint=...): expected a constraint from "
            f"ppl.distributions.constraints (e.g. constraints.positive), got {constraint!r}.")
    kwargs = {"constraint": constraint, "event_dim": event_dim}
    if callable(init_value):
        kwargs["rng_key"] = None  # a seed handler fills it in
    else:
        init_value = _as_array(init_value)
        if not ops.is_tracer(init_value) and not bool(ops.all(constraint.check(init_value))):
            raise ValueError(
                f"ppl.param({name!r}): init_value is outside its constraint {constraint!r}; "
                f"give an initial value inside it.")
    msg = new_message("param", name, args=(init_value,), kwargs=kwargs)
    return apply_stack(msg)["value"]


def prng_key():
    """A fresh random key from the enclosing ``seed`` handler (``None`` outside of one).

    >>> import ppl
    >>> with ppl.handlers.seed(rng_seed=0):
    ...     key = ppl.prng_key()
    >>> key is not None
    True
    """
    if not any(getattr(h, "provides_keys", False) for h in get_stack()):
        return None
    msg = new_message("prng_key", None, kwargs={"rng_key": None})
    return apply_stack(msg)["value"]


def subsample(data, event_dim: int):
    """``data`` indexed by the subsample indices of the enclosing plates (NumPyro's
    ``subsample``).

    Inside ``with ppl.plate(name, size, subsample_size=m):``, the dim of ``data`` that the
    plate covers (its ``dim``, counted left of the ``event_dim`` rightmost dims) is indexed by
    the plate's current indices (``x[idx]`` for ``with ppl.plate(...) as idx``), so a model
    can take the full data set as its argument and still see only the minibatch. Each
    enclosing plate with ``subsample_size < size`` indexes its own dim. ``data`` comes back
    as is outside such plates, and along a plate's dim where it already has the subsample
    size (data subsampled beforehand) or size 1 (it broadcasts), or does not reach that dim.

    Parameters
    ----------
    data
        An array whose dims left of the ``event_dim`` rightmost ones are batch dims, laid out
        as the plates are (the plate at ``dim=-1`` on the rightmost batch dim, and so on).
    event_dim
        Number of rightmost dims of ``data`` that form one observation (``0`` for scalars,
        ``1`` for vectors, ...).

    Returns
    -------
    The subsampled data (a backend array where it was indexed).

    Raises
    ------
    ValueError
        When ``data`` has, along a subsampled plate's dim, neither the plate's ``size`` nor
        its ``subsample_size`` (nor 1); or when ``event_dim`` is not an integer >= 0.

    Examples
    --------
    >>> import numpy as np
    >>> import ppl, ppl.distributions as dist
    >>> x = np.arange(10.0)
    >>> with ppl.plate("N", 10, subsample=[7, 2]) as idx:
    ...     batch = ppl.subsample(x, event_dim=0)      # the same as x[idx]
    >>> ppl.ops.to_numpy(batch).tolist()
    [7.0, 2.0]
    >>> def model(x):
    ...     mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
    ...     with ppl.plate("N", len(x), subsample_size=4):
    ...         ppl.sample("x", dist.Normal(mu, 1.0), obs=ppl.subsample(x, event_dim=0))
    >>> tr = ppl.handlers.trace(ppl.handlers.seed(model, rng_seed=0)).get_trace(x)
    >>> ppl.ops.shape(tr["x"]["value"]), tr["x"]["scale"]
    ((4,), 2.5)
    """
    if isinstance(event_dim, bool) or not isinstance(event_dim, (int, np.integer)) \
            or event_dim < 0:
        raise ValueError(
            f"ppl.subsample(data, event_dim=...): event_dim must be an integer >= 0 (the "
            f"number of rightmost dims of data that form one observation), got {event_dim!r}.")
    if not get_stack():  # as NumPyro: no handler, no plate, nothing to do
        return data
    msg = new_message("subsample", None, value=data, kwargs={"event_dim": int(event_dim)})
    return apply_stack(msg)["value"]
