"""Prior and posterior predictive draws.

``Predictive(model, num_samples=N)`` runs the model ``N`` times with fresh keys (the prior
predictive); ``Predictive(model, posterior_samples)`` runs it once per posterior draw with the
latent sites fixed at that draw (the posterior predictive; Gelman et al., 2013, "Bayesian Data
Analysis", 3rd ed., ch. 6). The runs are batched with ``ops.jit(ops.vmap(...))`` on backends
whose ``vmap`` gives each key its own draw (``backend.vmap_random_draws``: JAX, torch, and
numpy, whose ``vmap`` is itself a loop) and made one after another otherwise. Under ``vmap`` the
model must not branch in Python on sampled values (``if x > 0``), as under ``jit``.
"""

from __future__ import annotations

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


def _leading_size(name, value) -> int:
    shape = ops.shape(value)
    if not shape:
        raise ValueError(
            f"Predictive: posterior_samples[{name!r}] is a scalar; each entry needs a leading "
            f"sample dimension (shape (num_samples, ...)), as returned by mcmc.get_samples()."
        )
    return int(shape[0])


class Predictive:
    """Draw from the prior predictive or the posterior predictive distribution of a model.

    Parameters
    ----------
    model
        The model function.
    posterior_samples
        ``{site: array of shape (num_samples, ...)}``, e.g. ``mcmc.get_samples()``. ``None``
        for prior predictive draws.
    num_samples
        Number of prior draws (required without ``posterior_samples``).
    return_sites
        Names of the sites to return. Default: every sample site not in
        ``posterior_samples`` (observed sites included: they are drawn when their data is
        ``None``) and every deterministic site.
    infer_discrete
        Draw the sites marked for enumeration from their conditional posterior given each
        posterior draw (:func:`ppl.inference.infer_discrete`) instead of from their prior.

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
    """

    def __init__(self, model: Callable, posterior_samples: Mapping | None = None, *,
                 num_samples: int | None = None, return_sites: Sequence[str] | None = None,
                 infer_discrete: bool = False):
        if not callable(model):
            raise TypeError(f"Predictive: model must be callable, got {type(model).__name__}.")
        if num_samples is not None and (not is_int(num_samples) or num_samples < 1):
            raise ValueError(f"Predictive: num_samples must be a positive int, got "
                             f"{num_samples!r}.")
        if posterior_samples is not None:
            if not isinstance(posterior_samples, Mapping):
                raise TypeError(
                    f"Predictive: posterior_samples must be a dict of site -> array, got "
                    f"{type(posterior_samples).__name__}."
                )
            sizes = {name: _leading_size(name, v) for name, v in posterior_samples.items()}
            if len(set(sizes.values())) > 1:
                raise ValueError(
                    f"Predictive: posterior_samples have different numbers of draws "
                    f"(leading sizes {sizes}); they must all share the first dimension."
                )
            n = next(iter(sizes.values()), None)
            if n is None:
                raise ValueError("Predictive: posterior_samples is empty; pass num_samples= "
                                 "for prior predictive draws instead.")
            if n < 1:
                raise ValueError("Predictive: posterior_samples hold no draws (their leading "
                                 "size is 0).")
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
        if isinstance(return_sites, str):
            return_sites = [return_sites]
        self.model = model
        self.posterior_samples = posterior_samples
        self.num_samples = int(num_samples)
        self.return_sites = None if return_sites is None else list(return_sites)
        self.infer_discrete = bool(infer_discrete)

    def _one(self, rebuild, samples_keys):
        def run(key, sample, data):
            args, kwargs = rebuild(data)
            if self.infer_discrete:  # its enumerated run is hidden: substitute inside it
                model = seed(_infer_discrete(
                    substitute(self.model, data=sample) if sample else self.model), key)
            else:
                model = seed(self.model, rng_seed=key)
                if sample:
                    model = substitute(model, data=sample)
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
            ``{site: array of shape (num_samples, ...)}``.
        """
        rng_key = _random.as_key(rng_key, "Predictive: the first argument (rng_key)")
        samples = {k: v if ops.is_array(v) else ops.asarray(v)
                   for k, v in (self.posterior_samples or {}).items()}
        keys = _random.split(rng_key, self.num_samples)
        # NumPy data as the backend's arrays, given to the compiled draws as inputs (captured,
        # TensorFlow's vectorized_map cannot read an eager tensor)
        data, rebuild, _ = split_data(*as_backend_data(args, kwargs))
        run = self._one(rebuild, set(samples))
        if ops.backend().vmap_random_draws:
            return ops.jit(ops.vmap(run, in_axes=(0, 0, None)))(keys, samples, data)
        outs = [run(keys[i], tree.map(lambda v, i=i: v[i], samples), data)
                for i in range(self.num_samples)]
        return {name: ops.stack([o[name] for o in outs], axis=0) for name in outs[0]}
