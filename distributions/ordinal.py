"""Ordinal families: a Categorical over ordered classes, with NumPyro's names: OrderedLogistic.

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     d = dist.OrderedLogistic(0.0, ppl.ops.asarray([-1.0, 1.0]))
...     [round(float(p), 4) for p in d.probs]
[0.2689, 0.4621, 0.2689]
"""

from __future__ import annotations

from ppl import ops
from ppl.distributions import constraints
from ppl.distributions.categorical import Categorical
from ppl.distributions.distribution import Distribution
from ppl.distributions.parametrization import set_parameters
from ppl.distributions.util import finfo, log1mexp
from ppl.distributions.validation import batch_shape_of, require_ndim

__all__ = ["OrderedLogistic"]


def ordered_logistic_log_probs(predictor, cutpoints):
    """Log-probabilities of the ``K = len(cutpoints) + 1`` classes of an ordered logistic model,
    on the last axis (``predictor`` broadcast against ``cutpoints[..., 0]``).

    Class ``k`` has probability ``sigmoid(b) - sigmoid(a)`` with ``a = c_{k-1} - eta`` and
    ``b = c_k - eta`` (``c_{-1} = -inf``, ``c_{K-1} = +inf``). Its log is taken through the
    identity ``sigmoid(b) - sigmoid(a) = sigmoid(b) * sigmoid(-a) * (1 - exp(a - b))``, a sum
    of terms each accurate in both tails (no cancellation of two probabilities near 1), so
    predictors far beyond the cutpoints keep finite log-probabilities and gradients. Two equal
    cut points (float32 round-off of an ordered transform) leave the class between them a
    probability of ``eps`` times its neighbours' rather than 0, so that no gradient is infinite
    (``0 * inf`` would make NaN of every class's gradient).
    """
    x = cutpoints - ops.expand_dims(predictor, -1)          # c_k - eta, shape (..., K - 1)
    if ops.shape(x)[-1] == 0:                                # K = 1: the one class is certain
        return ops.zeros_like(ops.sum(x, axis=-1, keepdims=True))
    first = ops.log_sigmoid(x[..., :1])                      # P(y = 0) = sigmoid(c_0 - eta)
    last = ops.log_sigmoid(-x[..., -1:])                     # P(y = K-1) = sigmoid(eta - c_K-2)
    a, b = x[..., :-1], x[..., 1:]
    gap = ops.minimum(a - b, -finfo(x).eps)                  # c_{k-1} - c_k, < 0
    middle = ops.log_sigmoid(b) + ops.log_sigmoid(-a) + log1mexp(gap)
    return ops.concat([first, middle, last], axis=-1)


class OrderedLogistic(Categorical):
    """A category ``0..K-1`` with ordered outcomes: ``P(y <= k) = sigmoid(cutpoints[k] -
    predictor)`` for ``k < K - 1``, with ``K = len(cutpoints) + 1`` (the ordinal regression
    of McCullagh 1980; Stan's ``ordered_logistic``). Empty cut points (``K = 1``) are accepted,
    as NumPyro does: the one class 0 has probability 1.

    Parameters
    ----------
    predictor
        The linear predictor ``eta`` (real), batch shape.
    cutpoints
        Increasing cut points, ``batch_shape + (K - 1,)`` with ``K >= 1``; the batch shape is
        the broadcast of ``predictor``'s shape and ``cutpoints.shape[:-1]``.

    Everything else is Categorical's (``probs``, ``logits``, ``sample``, ``enumerate_support``,
    ``entropy``), over the log-probabilities computed stably from the two.

    References
    ----------
    McCullagh, P. (1980). Regression models for ordinal data. JRSS B 42(2), 109-142.
    Stan Development Team. Stan Functions Reference, "Ordered logistic distribution".

    >>> import ppl, ppl.distributions as dist
    >>> with ppl.use_backend("numpy", dtype="float64"):
    ...     d = dist.OrderedLogistic(ppl.ops.zeros(4), ppl.ops.asarray([-1.0, 0.0, 2.0]))
    ...     d.batch_shape, d.support
    ((4,), integer_interval(0, 3))
    """

    arg_constraints = {"predictor": constraints.real, "cutpoints": constraints.ordered_vector}

    def __init__(self, predictor, cutpoints, *, validate_args=None):
        set_parameters(self, predictor=predictor, cutpoints=cutpoints)
        require_ndim(self, "cutpoints", self.cutpoints, 1, "the K - 1 cut points, last axis")
        batch = batch_shape_of(self)
        # Categorical's storage, bypassing its __init__: check predictor and cutpoints (not the
        # logits computed from them, NaN for unordered cut points) first
        Distribution.__init__(self, batch, (), validate_args=validate_args)
        k = ops.shape(self.cutpoints)[-1] + 1
        log_probs = ordered_logistic_log_probs(self.predictor, self.cutpoints)
        self.logits = ops.broadcast_to(log_probs, batch + (k,))
        self._param = "logits"

    def _log_pmf(self):
        return self.__dict__["logits"]      # already normalized: no log_softmax round-off
