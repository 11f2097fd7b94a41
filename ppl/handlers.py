"""Effect handlers: small ``Messenger`` classes that change what a model's sites do.

Every handler works both as a function wrapper and as a context manager::

    >>> import ppl, ppl.distributions as dist
    >>> from ppl import handlers
    >>> def model():
    ...     return ppl.sample("x", dist.Normal(0.0, 1.0))
    >>> tr = handlers.trace(handlers.seed(model, rng_seed=0)).get_trace()
    >>> tr["x"]["type"], tr["x"]["is_observed"]
    ('sample', False)
    >>> with handlers.seed(rng_seed=0), handlers.trace() as tr:
    ...     _ = model()
    >>> list(tr)
    ['x']

Handlers compose by nesting: ``trace(condition(seed(model, 0), {"x": 1.0}))``. The one closest
to the model sees a site first. As in NumPyro (Phan et al., 2019, arXiv:1912.11554).
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ppl import ops
from ppl import random as _random
from ppl._messenger import Messenger
from ppl.effects import check_mapping as _check_mapping
from ppl.effects import do, infer_config, lift, reparam, scope, uncondition
from ppl.primitives import _as_array

__all__ = ["trace", "seed", "condition", "substitute", "block", "replay", "mask", "scale",
           "do", "lift", "infer_config", "reparam", "scope", "uncondition", "Messenger"]


class trace(Messenger):
    """Record every site into an ordered dict ``{name: site}``.

    Sites are dicts with NumPyro's keys: ``type, name, fn, args, kwargs, value, is_observed,
    scale, mask, cond_indep_stack, infer, intermediates``.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> model = lambda: ppl.sample("x", dist.Normal(0.0, 1.0), obs=0.5)
    >>> site = ppl.handlers.trace(model).get_trace()["x"]
    >>> site["is_observed"], float(site["value"])
    (True, 0.5)
    """

    def __init__(self, fn=None):
        super().__init__(fn)
        self.trace: OrderedDict = OrderedDict()

    def _entered(self):
        self.trace = OrderedDict()
        return self

    def __enter__(self):
        super().__enter__()
        self.trace = OrderedDict()
        return self.trace

    def postprocess_message(self, msg):
        name = msg["name"]
        if name is None:  # markov steps and key requests are not sites
            return
        if msg["type"] in ("sample", "deterministic") and name in self.trace \
                and self.trace[name]["type"] in ("sample", "deterministic"):
            raise ValueError(
                f"Site name {name!r} is used twice in the model; every sample/deterministic "
                f"site needs a unique name (e.g. add an index: f'{name}_{{i}}')."
            )
        self.trace[name] = msg.copy()

    def get_trace(self, *args, **kwargs) -> OrderedDict:
        """Run the wrapped function with ``args``/``kwargs`` and return its trace."""
        self(*args, **kwargs)
        return self.trace


class seed(Messenger):
    """Give every sample site that needs a draw its own random key.

    Sites hidden by an inner ``block`` still get their keys: hiding a site from a trace does
    not starve it of randomness. Subsampled plates, ``param`` initialisers and
    ``ppl.prng_key()`` get keys too.

    Keys are derived functionally: each entry starts from ``rng_seed`` and splits a key that
    lives only as long as that run, so nothing traced leaks into the handler between calls
    (safe under ``ops.jit``/``ops.vmap``) and two threads can share one seeded model.

    Parameters
    ----------
    fn
        The model.
    rng_seed
        An ``int`` or a key from ``ppl.random.key``.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> model = lambda: ppl.sample("x", dist.Normal(0.0, 1.0))
    >>> a = ppl.handlers.seed(model, rng_seed=1)()
    >>> b = ppl.handlers.seed(model, rng_seed=1)()
    >>> bool(a == b)
    True
    """

    sees_hidden = True
    provides_keys = True

    def __init__(self, fn=None, rng_seed=None):
        if rng_seed is None:
            raise TypeError(
                "ppl.handlers.seed needs rng_seed: an int or a key from ppl.random.key(...), "
                "e.g. seed(model, rng_seed=0)."
            )
        if isinstance(rng_seed, (bool, float, str)) or not (
                isinstance(rng_seed, (int, np.integer, np.ndarray)) or ops.is_array(rng_seed)):
            raise TypeError(
                f"ppl.handlers.seed: rng_seed must be an int or a key from ppl.random.key(...), "
                f"got {type(rng_seed).__name__}."
            )
        super().__init__(fn)
        self.rng_seed = rng_seed
        self._key = None

    def _entered(self):
        new = self._copy()
        new._key = None
        return new

    def __enter__(self):
        self._key = None
        return super().__enter__()

    def _next_key(self):
        if self._key is None:
            s = self.rng_seed
            self._key = _random.key(int(s)) if isinstance(s, (int, np.integer)) else s
        self._key, key = _random.split_keys(self._key, 2)
        return key

    def process_message(self, msg):
        if msg["value"] is not None or msg["is_observed"]:
            return
        kwargs = msg["kwargs"]
        if msg["type"] == "sample" and kwargs.get("rng_key") is None:
            kwargs["rng_key"] = self._next_key()
        elif msg["type"] in ("plate", "param", "prng_key") and "rng_key" in kwargs \
                and kwargs["rng_key"] is None:
            kwargs["rng_key"] = self._next_key()


class condition(Messenger):
    """Observe sample sites at the values in ``data`` (they become ``is_observed``).

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> model = lambda: ppl.sample("x", dist.Normal(0.0, 1.0))
    >>> float(ppl.handlers.condition(model, data={"x": 0.5})())
    0.5
    """

    def __init__(self, fn=None, data=None):
        _check_mapping(data, "condition", "data")
        super().__init__(fn)
        self.data = data

    def process_message(self, msg):
        if msg["type"] == "sample" and msg["name"] in self.data:
            msg["value"] = _as_array(self.data[msg["name"]])
            msg["is_observed"] = True


class substitute(Messenger):
    """Replace the values of sample, param and deterministic sites, leaving them latent.

    Values come from ``data[name]``, or from ``substitute_fn(site)`` (``None`` keeps the site
    as is). Used by :func:`ppl.inference.log_density` and the initialisation strategies.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> model = lambda: ppl.sample("x", dist.Normal(0.0, 1.0))
    >>> tr = ppl.handlers.trace(ppl.handlers.substitute(model, data={"x": 2.0})).get_trace()
    >>> float(tr["x"]["value"]), tr["x"]["is_observed"]
    (2.0, False)
    """

    def __init__(self, fn=None, data=None, substitute_fn=None):
        if (data is None) == (substitute_fn is None):
            raise ValueError(
                "ppl.handlers.substitute: pass exactly one of data= (a dict of values) or "
                "substitute_fn= (a function site -> value or None)."
            )
        if data is not None:
            _check_mapping(data, "substitute", "data")
        elif not callable(substitute_fn):
            raise TypeError("ppl.handlers.substitute: substitute_fn must be callable.")
        super().__init__(fn)
        self.data = data
        self.substitute_fn = substitute_fn

    def process_message(self, msg):
        if msg["type"] not in ("sample", "deterministic", "param"):
            return
        if self.data is not None:
            value = self.data.get(msg["name"])
        else:
            value = self.substitute_fn(msg)
        if value is not None:
            msg["value"] = _as_array(value)


class block(Messenger):
    """Hide sites from the handlers outside this one.

    Parameters
    ----------
    hide_fn
        ``site -> bool``: hide when true.
    hide
        Names to hide.
    expose_types
        Site types to keep visible (e.g. ``["sample"]``).
    expose
        Names to keep visible (all others hidden).

    With none of these, every site is hidden.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> def model():
    ...     ppl.sample("a", dist.Normal(0.0, 1.0), obs=0.0)
    ...     ppl.sample("b", dist.Normal(0.0, 1.0), obs=0.0)
    >>> list(ppl.handlers.trace(ppl.handlers.block(model, hide=["a"])).get_trace())
    ['b']
    """

    def __init__(self, fn=None, hide_fn=None, hide=None, expose_types=None, expose=None):
        given = [a is not None for a in (hide_fn, hide, expose_types, expose)]
        if sum(given) > 1:
            raise ValueError(
                "ppl.handlers.block: pass at most one of hide_fn=, hide=, expose_types=, expose=."
            )
        super().__init__(fn)
        if hide_fn is not None:
            if not callable(hide_fn):
                raise TypeError("ppl.handlers.block: hide_fn must be a function site -> bool.")
            self.hide_fn = hide_fn
        elif hide is not None:
            names = set([hide] if isinstance(hide, str) else hide)
            self.hide_fn = lambda msg: msg["name"] in names
        elif expose_types is not None:
            types = set([expose_types] if isinstance(expose_types, str) else expose_types)
            self.hide_fn = lambda msg: msg["type"] not in types
        elif expose is not None:
            names = set([expose] if isinstance(expose, str) else expose)
            self.hide_fn = lambda msg: msg["name"] not in names
        else:
            self.hide_fn = lambda msg: True

    def process_message(self, msg):
        if self.hide_fn(msg):
            msg["stop"] = True


class replay(Messenger):
    """Give latent sample sites the values they have in ``trace`` (from ``handlers.trace``).

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> model = lambda: ppl.sample("x", dist.Normal(0.0, 1.0))
    >>> tr = ppl.handlers.trace(ppl.handlers.seed(model, rng_seed=0)).get_trace()
    >>> bool(ppl.handlers.replay(model, trace=tr)() == tr["x"]["value"])
    True
    """

    def __init__(self, fn=None, trace=None):
        _check_mapping(trace, "replay", "trace")
        super().__init__(fn)
        self.trace = trace

    def process_message(self, msg):
        if msg["type"] != "sample" or msg["is_observed"] or msg["name"] not in self.trace:
            return
        site = self.trace[msg["name"]]
        if site["type"] != "sample" or site.get("is_observed"):
            raise ValueError(
                f"ppl.handlers.replay: site {msg['name']!r} is latent in the model but "
                f"{'observed' if site.get('is_observed') else site['type']} in the trace "
                f"being replayed; replay a trace where it is a latent sample site."
            )
        msg["value"] = site["value"]
        msg["infer"] = dict(site.get("infer") or {})


def _is_python_bool(x):
    return isinstance(x, (bool, np.bool_))


class mask(Messenger):
    """Drop the log-density of sample sites where ``mask`` is false.

    ``mask`` is a boolean (Python or array) broadcastable to the sites' batch shapes. The site
    records it as ``site["mask"]``; :func:`ppl.inference.log_density` applies it.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> from ppl.inference import log_density
    >>> model = lambda: ppl.sample("x", dist.Normal(0.0, 1.0), obs=0.0)
    >>> float(log_density(ppl.handlers.mask(model, mask=False), (), {}, {})[0])
    0.0
    """

    def __init__(self, fn=None, mask=True):
        if not _is_python_bool(mask):
            if not ops.is_array(mask):
                mask = ops.asarray(np.asarray(mask))
            if ops.dtype_of(mask) != "bool":
                raise TypeError(
                    f"ppl.handlers.mask: mask must be a boolean or an array of booleans, got "
                    f"dtype {ops.dtype_of(mask)}; use e.g. mask=(x > 0)."
                )
        else:
            mask = bool(mask)
        super().__init__(fn)
        self.mask = mask

    def process_message(self, msg):
        if msg["type"] != "sample":
            return
        old = msg.get("mask")
        if old is None or old is True:
            msg["mask"] = self.mask
        elif old is False or self.mask is False:
            msg["mask"] = False
        elif self.mask is not True:
            msg["mask"] = ops.logical_and(old, self.mask)


class scale(Messenger):
    """Multiply the log-density of sample sites by ``scale`` (a positive number or array
    broadcastable to the sites' batch shapes).

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> from ppl.inference import log_density
    >>> model = lambda: ppl.sample("x", dist.Normal(0.0, 1.0), obs=0.0)
    >>> lp1 = log_density(model, (), {}, {})[0]
    >>> lp2 = log_density(ppl.handlers.scale(model, scale=2.0), (), {}, {})[0]
    >>> abs(float(lp2) - 2 * float(lp1)) < 1e-5
    True
    """

    def __init__(self, fn=None, scale=1.0):
        if isinstance(scale, (int, float, np.number)) and not isinstance(scale, bool):
            if not scale > 0:
                raise ValueError(f"ppl.handlers.scale: scale must be positive, got {scale}.")
        elif ops.is_array(scale) or isinstance(scale, np.ndarray):
            arr = scale if not isinstance(scale, np.ndarray) else ops.asarray(scale)
            if not ops.is_tracer(arr) and not bool(ops.all(arr > 0)):
                raise ValueError("ppl.handlers.scale: every entry of scale must be positive.")
            scale = arr
        else:
            raise TypeError(
                f"ppl.handlers.scale: scale must be a positive number or array, got "
                f"{type(scale).__name__}."
            )
        super().__init__(fn)
        self.scale = scale

    def process_message(self, msg):
        if msg["type"] != "sample":
            return
        msg["scale"] = self.scale if msg["scale"] is None else self.scale * msg["scale"]
