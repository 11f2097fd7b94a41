"""The handlers that change what a site *is*: ``do`` (interventions), ``lift`` (params become
random variables), ``infer_config`` (inference hints), ``reparam`` (a site rewritten as a
transform of other sites) and ``scope`` (site names prefixed). Re-exported by
:mod:`ppl.handlers`; as in NumPyro (Phan et al., 2019, arXiv:1912.11554).
"""

from __future__ import annotations

from collections.abc import Mapping

from ppl import ops
from ppl._messenger import Messenger
from ppl.plates import CondIndepStackFrame

__all__ = ["do", "lift", "infer_config", "reparam", "scope", "uncondition"]


def _to_array(x):
    return x if ops.is_array(x) else ops.asarray(x)


def check_mapping(data, handler, arg):
    """``data`` must be a dict of site names to values (a clear error otherwise)."""
    if not isinstance(data, Mapping):
        raise TypeError(
            f"ppl.handlers.{handler}: {arg} must be a dict mapping site names to values, "
            f"got {type(data).__name__}."
        )


class do(Messenger):
    """Intervene on sample sites: each site named in ``data`` takes that value, contributes no
    log-density (it is not evidence, unlike ``condition``), and the sites downstream see it
    (Pearl's do-operator).

    The site stays in the trace with ``is_observed=True``, ``mask=False`` and
    ``infer["do"] = True``, so samplers and ``log_density`` skip it.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> from ppl.inference import log_density
    >>> def model():
    ...     x = ppl.sample("x", dist.Normal(0.0, 1.0))
    ...     return ppl.sample("y", dist.Normal(x, 1.0), obs=0.0)
    >>> lp, tr = log_density(ppl.handlers.do(model, data={"x": 1.0}), (), {}, {})
    >>> round(float(lp), 4)  # only y | x = 1 counts: log N(0 | 1, 1)
    -1.4189
    """

    def __init__(self, fn=None, data=None):
        check_mapping(data, "do", "data")
        super().__init__(fn)
        self.data = data

    def process_message(self, msg):
        if msg["type"] != "sample" or msg["name"] not in self.data:
            return
        msg["value"] = _to_array(self.data[msg["name"]])
        msg["is_observed"] = True
        msg["mask"] = False
        msg["infer"]["do"] = True


class uncondition(Messenger):
    """Forget the observations: every observed sample site (``obs=`` or ``condition``) becomes
    a latent site drawn from its distribution, as NumPyro's ``uncondition``. The observed value
    is kept in the site's ``infer["obs"]`` (with ``infer["was_observed"] = True``).

    The model's joint prior over its latent and observed sites, e.g. for simulation-based
    calibration (``MCMC`` on an unconditioned model samples the data too) or to draw fake data.
    Sites fixed by ``do`` stay fixed.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> def model():
    ...     x = ppl.sample("x", dist.Normal(0.0, 1.0))
    ...     return ppl.sample("y", dist.Normal(x, 1.0), obs=10.0)
    >>> tr = ppl.handlers.trace(ppl.handlers.seed(ppl.handlers.uncondition(model), 0)
    ...                         ).get_trace()
    >>> tr["y"]["is_observed"], float(tr["y"]["infer"]["obs"]), abs(float(tr["y"]["value"])) < 9
    (False, 10.0, True)
    """

    def process_message(self, msg):
        if msg["type"] != "sample" or not msg["is_observed"] or msg["infer"].get("do"):
            return
        msg["infer"]["obs"], msg["infer"]["was_observed"] = msg["value"], True
        msg["value"], msg["is_observed"] = None, False


class lift(Messenger):
    """Turn ``param`` sites into sample sites with the prior ``prior`` (a distribution for
    every param, or a dict ``{name: distribution}``). The prior is expanded to the shape of the
    param's initial value when that is known.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> model = lambda: ppl.param("w", 0.5)
    >>> tr = ppl.handlers.trace(ppl.handlers.seed(
    ...     ppl.handlers.lift(model, prior={"w": dist.Normal(0.0, 1.0)}), rng_seed=0)).get_trace()
    >>> tr["w"]["type"]
    'sample'
    """

    def __init__(self, fn=None, prior=None):
        if prior is None:
            raise TypeError("ppl.handlers.lift needs prior=: a distribution or a dict "
                            "{param name: distribution}.")
        super().__init__(fn)
        self.prior = prior

    def process_message(self, msg):
        if msg["type"] != "param" or msg["value"] is not None:
            return
        if isinstance(self.prior, Mapping):
            fn = self.prior.get(msg["name"])
            if fn is None:
                return
        else:
            fn = self.prior
        init = msg["args"][0] if msg["args"] else None
        if init is not None and not callable(init):
            shape = tuple(ops.shape(init))
            batch = shape[: len(shape) - len(fn.event_shape)]
            if tuple(fn.batch_shape) != batch:
                fn = fn.expand(batch)
        msg.update(type="sample", fn=fn, args=(), is_observed=False,
                   kwargs={"rng_key": None, "sample_shape": ()})


class infer_config(Messenger):
    """Add ``config_fn(site)`` (a dict, or ``None``) to the ``infer`` dict of every sample
    site, e.g. to mark discrete sites for enumeration.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> model = lambda: ppl.sample("z", dist.Bernoulli(0.3))
    >>> marked = ppl.handlers.infer_config(model, lambda site: {"enumerate": "parallel"})
    >>> tr = ppl.handlers.trace(ppl.handlers.seed(marked, rng_seed=0)).get_trace()
    >>> tr["z"]["infer"]
    {'enumerate': 'parallel'}
    """

    def __init__(self, fn=None, config_fn=None):
        if not callable(config_fn):
            raise TypeError("ppl.handlers.infer_config: config_fn must be a function "
                            "site -> dict of infer options (or None).")
        super().__init__(fn)
        self.config_fn = config_fn

    def process_message(self, msg):
        if msg["type"] != "sample":
            return
        extra = self.config_fn(msg)
        if extra:
            msg["infer"].update(extra)


class reparam(Messenger):
    """Rewrite sample sites with reparameterizers (``ppl.inference.reparam``).

    ``config`` maps site names to reparameterizers, or is a function ``site -> reparameterizer
    or None``. A reparameterizer is called as ``reparam(name, fn, obs)`` and returns
    ``(new_fn, value)``; it may declare new sample sites. With ``new_fn=None`` the site
    becomes a deterministic site of value ``value``.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> from ppl.inference.reparam import LocScaleReparam
    >>> def model():
    ...     return ppl.sample("x", dist.Normal(1.0, 2.0))
    >>> rep = ppl.handlers.reparam(model, config={"x": LocScaleReparam(centered=0)})
    >>> tr = ppl.handlers.trace(ppl.handlers.seed(rep, rng_seed=0)).get_trace()
    >>> [(n, s["type"]) for n, s in tr.items()]
    [('x_decentered', 'sample'), ('x', 'deterministic')]
    """

    def __init__(self, fn=None, config=None):
        if not (isinstance(config, Mapping) or callable(config)):
            raise TypeError("ppl.handlers.reparam: config must be a dict {site name: "
                            "reparameterizer} or a function site -> reparameterizer or None.")
        super().__init__(fn)
        self.config = config

    def process_message(self, msg):
        if msg["type"] != "sample":
            return
        if isinstance(self.config, Mapping):
            rep = self.config.get(msg["name"])
        else:
            rep = self.config(msg)
        if rep is None:
            return
        obs = msg["value"] if msg["is_observed"] else None
        new_fn, value = rep(msg["name"], msg["fn"], obs)
        if value is not None and new_fn is None:
            msg.update(type="deterministic", value=value, fn=None, is_observed=False)
            return
        if value is not None:
            msg["value"] = value
            msg["is_observed"] = True
        msg["fn"] = new_fn


class scope(Messenger):
    """Prefix the names of the sites inside: ``name`` becomes ``f"{prefix}{divider}{name}"``.

    As NumPyro's ``scope``: every named message is renamed (sample, deterministic, param and
    plate sites alike) unless its type is in ``hide_types``, and so are the plate names in
    the sites' ``cond_indep_stack`` (unless ``"plate"`` is in ``hide_types``). Nested scopes
    compose, the outer prefix first: ``scope(prefix="a")`` around ``scope(prefix="b")``
    names ``x`` ``"a/b/x"``. Use it to call one sub-model twice without name clashes.

    Parameters
    ----------
    fn
        The model (``None`` for a context manager).
    prefix
        The prefix (a string).
    divider
        The string between the prefix and the name.
    hide_types
        Site types not to rename (e.g. ``["plate"]``).

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> def sub():
    ...     return ppl.sample("x", dist.Normal(0.0, 1.0))
    >>> def model():
    ...     ppl.handlers.scope(sub, prefix="a")()
    ...     with ppl.handlers.scope(prefix="b", divider="."):
    ...         sub()
    >>> list(ppl.handlers.trace(ppl.handlers.seed(model, rng_seed=0)).get_trace())
    ['a/x', 'b.x']
    """

    def __init__(self, fn=None, prefix=None, divider="/", *, hide_types=None):
        if not isinstance(prefix, str):
            raise TypeError(
                f"ppl.handlers.scope: prefix must be a string, got {prefix!r}; e.g. "
                f"scope(model, prefix='group1').")
        if not isinstance(divider, str):
            raise TypeError(f"ppl.handlers.scope: divider must be a string, got {divider!r}.")
        hide = [] if hide_types is None else \
            ([hide_types] if isinstance(hide_types, str) else list(hide_types))
        if not all(isinstance(t, str) for t in hide):
            raise TypeError(
                f"ppl.handlers.scope: hide_types must be a list of site types (strings such "
                f"as 'sample', 'deterministic', 'param', 'plate'), got {hide_types!r}.")
        super().__init__(fn)
        self.prefix = prefix
        self.divider = divider
        self.hide_types = frozenset(hide)

    def _rename(self, name):
        return f"{self.prefix}{self.divider}{name}"

    def process_message(self, msg):
        if msg.get("name") and msg["type"] not in self.hide_types:
            msg["name"] = self._rename(msg["name"])
        if msg.get("cond_indep_stack") and "plate" not in self.hide_types:
            msg["cond_indep_stack"] = [CondIndepStackFrame(self._rename(f.name), f.dim, f.size)
                                       for f in msg["cond_indep_stack"]]
