"""``ppl.compare``: run one model with NUTS on several backends and judge, element by element,
whether the posteriors agree within Monte Carlo error (and with a reference, if given).

(The package is ``ppl.comparison``; ``ppl.compare`` is the function.)

* :mod:`~ppl.comparison._mcse` -- statistics and their MCSEs per element;
* :mod:`~ppl.comparison._verdict` -- the decision rule (z-tests, Holm correction);
* :mod:`~ppl.comparison._runs` / :mod:`~ppl.comparison._reference` -- the result sets;
* :mod:`~ppl.comparison._ahead` -- warm-up runs in background processes (``ppl compare``);
* :mod:`~ppl.comparison._report` -- :class:`ComparisonReport` and its outputs
  (:mod:`~ppl.comparison._table`, :mod:`~ppl.comparison._plots`, :mod:`~ppl.comparison._html`).
"""

from __future__ import annotations

from collections import Counter

from ppl._state import available_backends
from ppl.backends import BACKENDS
from ppl.comparison._ahead import WarmUp
from ppl.comparison._reference import Reference, load_reference
from ppl.comparison._report import STATUSES, ComparisonReport
from ppl.comparison._runs import BackendRun, run_backend

__all__ = ["compare", "ComparisonReport", "BackendRun", "Reference", "load_reference",
           "STATUSES", "check_backends", "WarmUp"]


def check_backends(backends, *, has_reference: bool) -> list[str]:
    """The backend names to run, checked: known, no duplicates, and with the reference at
    least two result sets. Raises ``ValueError`` saying what to pass instead."""
    if isinstance(backends, str):
        raise ValueError(f"backends must be a list of names such as ['jax', 'torch'], got the "
                         f"string {backends!r}.")
    names = list(backends) if backends is not None else available_backends()
    unknown = [n for n in names if n not in BACKENDS]
    if unknown:
        raise ValueError(f"Unknown backend(s) {unknown}; known backends: {sorted(BACKENDS)}.")
    twice = sorted(n for n, c in Counter(names).items() if c > 1)
    if twice:
        raise ValueError(f"backends lists {twice} more than once; name each backend once.")
    if len(names) + bool(has_reference) < 2:
        raise ValueError(
            f"A comparison needs at least two result sets, got backends={names} and "
            f"{'a' if has_reference else 'no'} reference: pass two or more backends"
            f"{'' if has_reference else ', or one backend and reference=...'} (installed: "
            f"{available_backends()}).")
    return names


def compare(model, *args, backends=None, num_warmup: int = 1000, num_samples: int = 1000,
            num_chains: int = 4, seed: int = 0, dtype: str = "float32",
            progress_bar: bool = True, alpha: float = 0.01, kernel_kwargs=None,
            reference=None, max_divergences: int = 0, warm_ups=None,
            **kwargs) -> ComparisonReport:
    """Sample ``model(*args, **kwargs)`` with NUTS on each backend and compare.

    Every scalar element of every site is judged on its mean, sd and 5 % / 95 % quantiles,
    each pairwise difference against its Monte Carlo standard error, with Holm's correction over
    all tests (family-wise error rate ``alpha``); see :mod:`ppl.comparison._verdict`.

    Parameters
    ----------
    model
        A model function over ``ppl.sample`` / ``ppl.plate``.
    *args, **kwargs
        The model's arguments. NumPy arrays are converted to each backend's arrays.
    backends
        Names to run, each once (default: every installed backend). With ``reference``, one
        backend is enough; without, two are needed.
    num_warmup, num_samples, num_chains, seed, dtype
        Passed to :class:`ppl.inference.MCMC` / :func:`ppl.use_backend` for every backend.
    alpha
        Family-wise significance level of the agreement test.
    kernel_kwargs
        Extra keyword arguments for :class:`ppl.inference.NUTS` (e.g. ``dense_mass=True``).
    reference
        A reference posterior judged like one more backend: a path to a posteriordb-style
        ``reference.json`` (means and sds, Stan's 1-based names), posteriordb draws, or
        ``{site: draws (chains, draws, ...)}``; see :func:`load_reference`.
    max_divergences
        Divergent transitions a backend may have and still count as converged (default 0).
    warm_ups
        ``{backend name: WarmUp}``: warm-up runs started elsewhere (``ppl compare`` starts
        them, :mod:`~ppl.comparison._ahead`). Those backends run last, each once its warm-up
        has ended; the warm-up's seconds are in the run's ``timings["ahead"]``. Warm-ups still
        running when this returns or raises are stopped.

    Returns
    -------
    ComparisonReport
        ``print(report)``, ``report.agree()``, ``report.disagreements()``, ``report.status``,
        ``report.to_json(path)``, ``report.to_html(path)``, ``report.plot(path)``.

    Raises
    ------
    ValueError
        On unknown or repeated backends, fewer than two result sets, a bad ``dtype``,
        ``alpha`` or ``reference``.

    Examples
    --------
    >>> import numpy as np, ppl, ppl.distributions as dist
    >>> def model(y):
    ...     mu = ppl.sample("mu", dist.Normal(0.0, 10.0))
    ...     with ppl.plate("N", y.shape[0]):
    ...         ppl.sample("y", dist.Normal(mu, 1.0), obs=y)
    >>> report = ppl.compare(model, np.array([0.3, -0.2, 1.1]), backends=["numpy", "jax"],
    ...                      num_warmup=200, num_samples=200, num_chains=2,
    ...                      progress_bar=False)  # doctest: +SKIP
    >>> report.agree(), report.disagreements()  # doctest: +SKIP
    (True, [])
    """
    names = check_backends(backends, has_reference=reference is not None)
    if dtype not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}.")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
    ref = None
    if reference is not None:
        ref = reference if isinstance(reference, Reference) else load_reference(reference)
    mcmc_kwargs = {"num_warmup": num_warmup, "num_samples": num_samples,
                   "num_chains": num_chains, "progress_bar": progress_bar}
    warm_ups = dict(warm_ups or {})
    runs = []
    try:
        for name in [n for n in names if n not in warm_ups] + \
                [n for n in names if n in warm_ups]:
            ahead = None
            if name in warm_ups:
                if progress_bar:
                    print(f"== {name}: waiting for its warm-up ==", flush=True)
                ahead = warm_ups[name].wait()
            if progress_bar:
                print(f"== {name} ({dtype}) ==", flush=True)
            run = run_backend(name, model, args, kwargs, dtype=dtype, seed=seed,
                              mcmc_kwargs=mcmc_kwargs, kernel_kwargs=dict(kernel_kwargs or {}),
                              max_divergences=max_divergences)
            if ahead is not None:
                run.timings["ahead"] = ahead
                run.warm_up_error = warm_ups[name].error
            runs.append(run)
    finally:
        for warm_up in warm_ups.values():
            warm_up.stop()
    settings = {"num_warmup": num_warmup, "num_samples": num_samples, "num_chains": num_chains,
                "seed": seed, "dtype": dtype, "alpha": alpha, "max_divergences": max_divergences}
    return ComparisonReport(runs, settings, reference=ref)
