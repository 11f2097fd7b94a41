"""The model language: ``sample``, ``param``, ``deterministic``, ``factor``, ``prng_key``, and
(from :mod:`ppl.plates`) ``plate`` and ``markov``.

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

from ppl import ops
from ppl._messenger import apply_stack, check_name, get_stack, new_message
from ppl.distributions import Unit, constraints
from ppl.plates import CondIndepStackFrame, markov, plate

__all__ = ["sample", "param", "deterministic", "factor", "prng_key", "plate", "markov",
           "CondIndepStackFrame"]

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
    check_name(name, "sample")
    if not (hasattr(fn, "log_prob") and hasattr(fn, "sample")):
        raise TypeError(
            f"ppl.sample({name!r}, fn): fn must be a distribution with .sample and .log_prob "
            f"(e.g. ppl.distributions.Normal(0.0, 1.0)), got {type(fn).__name__}."
        )
    if obs is not None:
        obs = _as_array(obs)
    msg = new_message("sample", name, fn=fn, value=obs, is_observed=obs is not None,
                      kwargs={"rng_key": rng_key, "sample_shape": tuple(sample_shape)},
                      infer=infer)
    return apply_stack(msg)["value"]


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
