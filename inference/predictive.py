"""Prior and posterior predictive draws.

``Predictive(model, num_samples=N)`` runs the model ``N`` times with fresh keys (the prior
predictive); ``Predictive(model, posterior_samples)`` runs it once per posterior draw with the
latent sites fixed at that draw (the posterior predictive; Gelman et al., 2013, "Bayesian Data
Analysis", 3rd ed., ch. 6); ``batch_ndims`` says how many leading dimensions of the samples
are draws (2 for ``mcmc.get_samples(group_by_chain=True)``, 0 for one point). The runs are
batched with ``ops.jit(ops.vmap(...))`` on backends whose ``vmap`` gives each key its own draw
(``backend.vmap_random_draws``: JAX, torch, and numpy, whose ``vmap`` is itself a loop) and made
one after another otherwise (or with ``parallel=False``). Under ``vmap`` the
model must not branch in Python on sampled values (``if x > 0``), as under ``jit``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence

from ppl import ops
from ppl import random as _random
from ppl.backends import tree
from ppl.backends.common.dtypes import is_int
from ppl.distributions import Unit
from ppl.handlers import seed, substitute, trace
from ppl.inference.discrete import infer_discrete as _infer_discrete
from ppl.inference.program_data import as_backend_data, split_data

__all__ = ["Predictive"]


def _batch_shape_of(posterior_samples, batch_ndims) -> tuple:
    """The common leading ``batch_ndims`` dimensions of the posterior samples."""
    shapes = {}
    for name, value in posterior_samples.items():
        shape = tuple(ops.shape(value))
        if len(shape) < batch_ndims:
            raise ValueError(
                f"Predictive: posterior_samples[{name!r}] has shape {shape}, but "
                f"batch_ndims={batch_ndims} needs {batch_ndims} leading sample dimension(s): "
                f"shape (num_samples, ...) as from mcmc.get_samples() (batch_ndims=1), or "
                f"(num_chains, num_draws, ...) as from mcmc.get_samples(group_by_chain=True) "
                f"(batch_ndims=2); batch_ndims=0 takes one draw.")
        shapes[name] = shape[:batch_ndims]
    if len(set(shapes.values())) > 1:
        raise ValueError(
            f"Predictive: posterior_samples have different numbers of draws (leading shapes "
            f"{shapes} with batch_ndims={batch_ndims}); they must all share the first "
            f"batch_ndims dimensions.")
    return next(iter(shapes.values()))


class Predictive:
    """Draw from the prior predictive or the posterior predictive distribution of a model.

    Parameters
    ----------
    model
        The model function.
    posterior_samples
        ``{site: array of shape batch_shape + site shape}``, e.g. ``mcmc.get_samples()``
        (``batch_shape = (num_samples,)``). ``None`` for prior predictive draws.
    num_samples
        Number of prior draws (required without ``posterior_samples``).
    return_sites
        Names of the sites to return (sites in ``posterior_samples`` included). Default:
        every sample site not in ``posterior_samples`` (observed sites included: they are
        drawn when their data is ``None``) and every deterministic site.
    infer_discrete
        Draw the sites marked for enumeration from their conditional posterior given each
        posterior draw (:func:`ppl.inference.infer_discrete`) instead of from their prior.
    parallel
        ``True`` or ``None`` (the default): the runs are vectorised (``ops.vmap``) where the
        backend's ``vmap`` gives each key its own draw, else made one after another;
        ``False``: always one after another (less memory). The draws are the same.
    batch_ndims
        Number of leading batch dimensions of ``posterior_samples`` (NumPyro's): ``1`` for
        ``(num_samples, ...)``; ``2`` for ``(num_chains, num_draws, ...)`` as from
        ``mcmc.get_samples(group_by_chain=True)``, the output keeping both dimensions; ``0``
        for one posterior point, one run with ``rng_key`` itself and no leading dimension.
        Prior draws (no ``posterior_samples``) have leading shape ``(1,) * (batch_ndims - 1)
        + (num_samples,)``, as in NumPyro.
    exclude_deterministic
        ``True`` (NumPyro's default): deterministic sites in ``posterior_samples`` are
        recomputed from the other sites (and the model's arguments); ``False``: their values
        are taken from ``posterior_samples``.

    Row ``i`` (in C order over the batch dimensions) is the model run with the ``i``-th key
    of ``ppl.random.split(rng_key, num_samples)``.

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> from ppl.inference import Predictive
    >>> def model(y=None):
    ...     mu = ppl.sample("mu", dist.Normal(0.0, 1.0))
    ...     with ppl.plate("N", 3):
    ...         return ppl.sample("y", dist.Normal(mu, 1.0), obs=y)
    >>> prior = Predictive(model, num_samples=100)(0)
    >>> ppl.ops.shape(prior["y"])
    (100, 3)
    >>> post = Predictive(model, {"mu": ppl.ops.zeros((50,))})(1)
    >>> sorted(post), ppl.ops.shape(post["y"])
    (['y'], (50, 3))
    >>> chains = Predictive(model, {"mu": ppl.ops.zeros((2, 25))}, batch_ndims=2)(1)
    >>> ppl.ops.shape(chains["y"])
    (2, 25, 3)
    >>> point = Predictive(model, {"mu": 0.5}, batch_ndims=0)(1)
    >>> ppl.ops.shape(point["y"])
    (3,)
    """

    def __init__(self, model: Callable, posterior_samples: Mapping | None = None, *,
                 num_samples: int | None = None, return_sites: Sequence[str] | None = None,
                 infer_discrete: bool = False, parallel: bool | None = None,
                 batch_ndims: int | None = 1, exclude_deterministic: bool = True):
        if not callable(model):
            raise TypeError(f"Predictive: model must be callable, got {type(model).__name__}.")
        if num_samples is not None and (not is_int(num_samples) or num_samples < 1):
            raise ValueError(f"Predictive: num_samples must be a positive int, got "
                             f"{num_samples!r}.")
        batch_ndims = 1 if batch_ndims is None else batch_ndims
        if not is_int(batch_ndims) or batch_ndims < 0:
            raise ValueError(
                f"Predictive: batch_ndims must be an int >= 0 (the number of leading batch "
                f"dimensions of posterior_samples), got {batch_ndims!r}.")
        batch_ndims = int(batch_ndims)
        if posterior_samples is not None:
            if not isinstance(posterior_samples, Mapping):
                raise TypeError(
                    f"Predictive: posterior_samples must be a dict of site -> array, got "
                    f"{type(posterior_samples).__name__}."
                )
            if not posterior_samples:
                raise ValueError("Predictive: posterior_samples is empty; pass num_samples= "
                                 "for prior predictive draws instead.")
            batch_shape = _batch_shape_of(posterior_samples, batch_ndims)
            n = math.prod(batch_shape)
            if n < 1:
                raise ValueError("Predictive: posterior_samples hold no draws (their leading "
                                 f"shape is {batch_shape}).")
            if num_samples is not None and int(num_samples) != n:
                warnings.warn(
                    f"Predictive: num_samples={num_samples} differs from the {n} posterior "
                    f"draws given; using {n}.", stacklevel=2)
            num_samples = n
        elif num_samples is None:
            raise ValueError(
                "Predictive: pass posterior_samples= (posterior predictive) or num_samples= "
                "(the number of prior predictive draws)."
            )
        else:
            batch_shape = (1,) * (batch_ndims - 1) + (int(num_samples),)
        if isinstance(return_sites, str):
            return_sites = [return_sites]
        self.model = model
        self.posterior_samples = posterior_samples
        self.num_samples = int(num_samples)
        self.return_sites = None if return_sites is None else list(return_sites)
        self.infer_discrete = bool(infer_discrete)
        self.parallel = parallel
        self.batch_ndims = batch_ndims
        self.batch_shape = tuple(int(d) for d in batch_shape)
        self.exclude_deterministic = bool(exclude_deterministic)

    def _substituted(self, model, sample):
        if not sample:
            return model
        if not self.exclude_deterministic:
            return substitute(model, data=sample)
        return substitute(model, substitute_fn=lambda msg: None if msg["type"] ==
                          "deterministic" else sample.get(msg["name"]))

    def _one(self, rebuild, samples_keys):
        def run(key, sample, data):
            args, kwargs = rebuild(data)
            if self.infer_discrete:  # its enumerated run is hidden: substitute inside it
                model = seed(_infer_discrete(self._substituted(self.model, sample)), key)
            else:
                model = self._substituted(seed(self.model, rng_seed=key), sample)
            model_trace = trace(model).get_trace(*args, **kwargs)
            if self.return_sites is not None:
                missing = [s for s in self.return_sites if s not in model_trace]
                if missing:
                    raise ValueError(
                        f"Predictive: return_sites {missing} are not sites of the model; its "
                        f"sites are {[n for n, s in model_trace.items() if s['type'] != 'plate']}."
                    )
                names = self.return_sites
            else:
                names = [n for n, s in model_trace.items()
                         if (s["type"] == "sample" and n not in samples_keys
                             and not isinstance(s["fn"], Unit))
                         or s["type"] == "deterministic"]
            return {n: model_trace[n]["value"] if ops.is_array(model_trace[n]["value"])
                    else ops.asarray(model_trace[n]["value"]) for n in names}

        return run

    def __call__(self, rng_key, *args, **kwargs) -> dict:
        """Draw; ``rng_key`` is an int seed or a key, then the model's arguments.

        Returns
        -------
        dict
            ``{site: array of shape batch_shape + site shape}``: ``(num_samples, ...)`` by
            default (see ``batch_ndims``).
        """
        rng_key = _random.as_key(rng_key, "Predictive: the first argument (rng_key)")
        nb = self.batch_ndims if self.posterior_samples is not None else 0
        samples = {k: ops.reshape(v if ops.is_array(v) else ops.asarray(v),
                                  (self.num_samples,) + tuple(ops.shape(v))[nb:])
                   for k, v in (self.posterior_samples or {}).items()}
        # NumPy data as the backend's arrays, given to the compiled draws as inputs (captured,
        # TensorFlow's vectorized_map cannot read an eager tensor)
        data, rebuild, _ = split_data(*as_backend_data(args, kwargs))
        run = self._one(rebuild, set(samples))
        if not self.batch_shape:  # batch_ndims=0: one posterior point, one run
            return run(rng_key, tree.map(lambda v: v[0], samples), data)
        keys = _random.split(rng_key, self.num_samples)
        if self.parallel is not False and ops.backend().vmap_random_draws:
            out = ops.jit(ops.vmap(run, in_axes=(0, 0, None)))(keys, samples, data)
        else:
            outs = [run(keys[i], tree.map(lambda v, i=i: v[i], samples), data)
                    for i in range(self.num_samples)]
            out = {name: ops.stack([o[name] for o in outs], axis=0) for name in outs[0]}
        if len(self.batch_shape) == 1:
            return out
        return {name: ops.reshape(v, self.batch_shape + tuple(ops.shape(v))[1:])
                for name, v in out.items()}
