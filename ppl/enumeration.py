"""Parallel enumeration of discrete latent sites.

Under :class:`enum`, a latent sample site marked ``infer={"enumerate": "parallel"}`` takes as
its value *all* the values of its support at once, laid along a batch dimension of its own,
to the left of every plate (``first_available_dim`` and further left). Every site downstream
then computes its log-density for every value by broadcasting; :mod:`ppl.sum_product` sums
the enumerated dimensions out again. Inside ``ppl.markov`` loops a site of step ``t`` can only
depend on the ``history`` previous steps, so the dimensions of older steps are reused and the
tensors stay small however long the chain (the enumeration strategy of Pyro and NumPyro;
Obermeyer et al., 2019, "Tensor variable elimination for plated factor graphs", ICML).

Each sample site records in ``site["infer"]["_dim_to_var"]`` which enumerated site owns each
enumerated dimension at the time it ran; the sum-product uses it to tell apart two sites that
shared a dimension at different steps.
"""

from __future__ import annotations

from ppl import ops
from ppl._messenger import Messenger
from ppl.distributions.util import INT_DTYPE

__all__ = ["enum", "is_enumerated", "support_values", "max_plate_nesting",
           "first_enumerated_dim", "placeholder_enumerated"]


def is_enumerated(msg) -> bool:
    """A latent sample site marked for parallel enumeration."""
    return (msg["type"] == "sample" and not msg["is_observed"]
            and (msg.get("infer") or {}).get("enumerate") == "parallel")


def support_values(fn):
    """The values of a discrete distribution's support, shape ``(K,)`` (the same for every
    element of the batch)."""
    support = fn.support
    name = type(fn).__name__
    if not getattr(support, "is_discrete", False) or fn.event_shape:
        raise ValueError(
            f"Enumeration needs a discrete distribution with scalar events (Bernoulli, "
            f"Categorical, Binomial, ...), got {name} with support {support!r} and event shape "
            f"{fn.event_shape}; remove infer={{'enumerate': 'parallel'}} from this site.")
    if getattr(fn, "has_enumerate_support", False):
        # the family's own support: it reads its concrete total count where the support's
        # bounds hold a traced copy of it (a Binomial inside a compiled program)
        return ops.reshape(fn.enumerate_support(expand=False), (-1,))
    lo, hi = (0, 1) if not hasattr(support, "lower_bound") else (
        support.lower_bound, getattr(support, "upper_bound", None))
    if hi is None:
        raise ValueError(
            f"Cannot enumerate {name}: its support {support!r} is unbounded. Only finite "
            f"supports (Bernoulli, Categorical, Binomial) can be summed out.")
    bounds = []
    for b in (lo, hi):
        b = ops.to_numpy(b)
        if b.size and (b.min() != b.max()):
            raise ValueError(
                f"Cannot enumerate {name}: its support bounds differ across the batch; "
                f"enumeration needs one support for the whole batch.")
        bounds.append(int(b.reshape(-1)[0]) if b.size else 0)
    return ops.arange(bounds[0], bounds[1] + 1, dtype=INT_DTYPE)


def max_plate_nesting(model_trace) -> int:
    """How many batch dimensions the plates of a trace use (``-min(dim)``)."""
    dims = [frame.dim for site in model_trace.values()
            for frame in site.get("cond_indep_stack", ())]
    return -min(dims) if dims else 0


def first_enumerated_dim(model_trace) -> int:
    """The first dimension free for enumeration: left of every plate of the trace."""
    return -max_plate_nesting(model_trace) - 1


class placeholder_enumerated(Messenger):
    """Give enumerated sites a placeholder value (zeros of their batch shape) for a quick run
    that finds the plate nesting; ``found`` tells whether the model has any."""

    def __init__(self, fn=None):
        super().__init__(fn)
        self.found = False

    def process_message(self, msg):
        if is_enumerated(msg) and msg["value"] is None:
            self.found = True
            msg["value"] = ops.zeros(tuple(msg["fn"].batch_shape), dtype=INT_DTYPE)


class enum(Messenger):
    """Enumerate the sites marked ``infer={"enumerate": "parallel"}`` in parallel.

    Parameters
    ----------
    fn
        The model.
    first_available_dim
        The rightmost dimension enumeration may use, left of all plates:
        ``-(max plate nesting) - 1``. Enumerated sites take ``first_available_dim``,
        ``first_available_dim - 1``, ... (reusing the dims of sites more than ``history`` steps
        back in a ``ppl.markov`` loop).

    Examples
    --------
    >>> import ppl, ppl.distributions as dist
    >>> from ppl.enumeration import enum
    >>> def model():
    ...     z = ppl.sample("z", dist.Bernoulli(0.3), infer={"enumerate": "parallel"})
    ...     with ppl.plate("N", 2):
    ...         ppl.sample("x", dist.Normal(z * 1.0, 1.0), obs=ppl.ops.zeros(2))
    >>> tr = ppl.handlers.trace(enum(model, first_available_dim=-2)).get_trace()
    >>> ppl.ops.shape(tr["z"]["value"]), ppl.ops.shape(tr["x"]["fn"].log_prob(tr["x"]["value"]))
    ((2, 1), (2, 2))
    """

    def __init__(self, fn=None, first_available_dim: int = -1):
        if isinstance(first_available_dim, bool) or not isinstance(first_available_dim, int) \
                or first_available_dim >= 0:
            raise ValueError(
                f"enum: first_available_dim must be a negative int (left of all plates: "
                f"-(max plate nesting) - 1), got {first_available_dim!r}.")
        super().__init__(fn)
        self.first_available_dim = first_available_dim
        self._reset()

    def _reset(self):
        self._live: dict = {}     # enumerated site -> its dim, while it may still be used
        self._steps: dict = {}    # enumerated site -> {markov loop: step} when it was drawn
        self._loops: dict = {}    # markov loop -> current step

    def _entered(self):
        new = self._copy()
        new._reset()
        return new

    def __enter__(self):
        self._reset()
        return super().__enter__()

    def _markov_step(self, loop_id, step, history):
        self._loops[loop_id] = step
        for name, steps in list(self._steps.items()):
            if loop_id in steps and steps[loop_id] < step - history and name in self._live:
                del self._live[name]

    def process_message(self, msg):
        if msg["type"] == "markov":
            self._markov_step(*msg["args"])
            return
        if msg["type"] != "sample":
            return
        if is_enumerated(msg) and msg["value"] is None:
            values = support_values(msg["fn"])
            used = set(self._live.values())
            dim = self.first_available_dim
            while dim in used:
                dim -= 1
            msg["value"] = ops.reshape(values, (-1,) + (1,) * (-dim - 1))
            msg["infer"]["_enumerate_dim"] = dim
            msg["infer"]["_support"] = values
            self._live[msg["name"]] = dim
            self._steps[msg["name"]] = dict(self._loops)
        msg["infer"]["_dim_to_var"] = {d: v for v, d in self._live.items()}
