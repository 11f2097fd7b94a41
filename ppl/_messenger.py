"""The effect-handler machinery: a context-local handler stack, the ``Messenger`` base class and
``apply_stack``, which sends one message (a site) through the stack.

A primitive (``sample``, ``deterministic``, ...) builds a message, a plain dict with NumPyro's
keys, and calls :func:`apply_stack`. Every active handler sees the message in turn, innermost
(most recently entered) first, through ``process_message``; a handler may set ``msg["stop"]``
to hide the message from the handlers further out; the ones further out whose
``sees_hidden`` is true (``seed``) still get ``process_message`` for it, so a hidden site is
hidden from traces, conditioning and substitution but not starved of randomness, as in NumPyro.
If no handler supplied a value, the default
behaviour runs (a ``sample`` site draws from its distribution with the key a ``seed`` handler
put in ``msg["kwargs"]["rng_key"]``). Then the same handlers see the finished message through
``postprocess_message``, outermost first.

The stack lives in a :class:`contextvars.ContextVar` holding an immutable tuple, so each thread
and each asyncio task has its own stack: two threads can run models at once.

This design follows Pyro's and NumPyro's Poutine handlers (Bingham et al., 2019, "Pyro: Deep
Universal Probabilistic Programming", JMLR 20(28); Phan et al., 2019, "Composable Effects for
Flexible and Accelerated Probabilistic Programming in NumPyro", arXiv:1912.11554).
"""

from __future__ import annotations

import contextvars
import functools

from ppl._data import as_backend_data

__all__ = ["Messenger", "apply_stack", "get_stack", "default_process_message", "new_message",
           "check_name"]

_STACK: contextvars.ContextVar[tuple] = contextvars.ContextVar("ppl_handler_stack", default=())


def check_name(name, primitive):
    """A site name must be a non-empty string."""
    if not isinstance(name, str) or not name:
        raise TypeError(
            f"ppl.{primitive}: the site name must be a non-empty string, got {name!r}."
        )


def new_message(type_: str, name, *, fn=None, value=None, args=(), kwargs=None, infer=None,
                is_observed=False) -> dict:
    """A message with NumPyro's keys (``type, name, fn, args, kwargs, value, is_observed,
    scale, mask, cond_indep_stack, infer, intermediates``)."""
    return {"type": type_, "name": name, "fn": fn, "args": args,
            "kwargs": {} if kwargs is None else kwargs, "value": value,
            "is_observed": is_observed, "scale": None, "mask": None, "cond_indep_stack": [],
            "infer": dict(infer) if infer else {}, "intermediates": []}


def get_stack() -> tuple:
    """The active handlers of this thread/task, outermost first."""
    return _STACK.get()


class Messenger:
    """Base class of every effect handler.

    A handler is usable in two ways:

    * as a function wrapper: ``handler(fn, ...)(*args)`` runs ``fn(*args)`` with the handler
      active;
    * as a context manager: ``with handler(...): fn(*args)``.

    Subclasses override :meth:`process_message` (before the site's value is computed) and/or
    :meth:`postprocess_message` (after), each usually a few lines.

    Parameters
    ----------
    fn
        The callable (usually a model) to wrap; ``None`` to use the handler as a context manager
        or as a decorator.
    """

    #: whether ``process_message`` also runs for messages a handler further in hid (``block``)
    sees_hidden = False

    def __init__(self, fn=None):
        if fn is not None and not callable(fn):
            raise TypeError(
                f"{type(self).__name__}: fn must be a callable (a model function) or None, "
                f"got {type(fn).__name__}."
            )
        self.fn = fn
        self._tokens: list = []
        if fn is not None:
            functools.update_wrapper(self, fn, updated=())

    # -- stack management -----------------------------------------------------------------
    def _entered(self) -> Messenger:
        """The object pushed on the stack for one entry; stateful handlers return a copy."""
        return self

    def __enter__(self):
        self._tokens.append(_STACK.set(_STACK.get() + (self,)))
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        _STACK.reset(self._tokens.pop())
        return None

    def __call__(self, *args, **kwargs):
        if self.fn is None:
            # decorator use: ``@handler(...)`` with no fn, or ``handler(...)(model)``
            if len(args) == 1 and not kwargs and callable(args[0]):
                new = self._copy()
                new.fn = args[0]
                functools.update_wrapper(new, args[0], updated=())
                return new
            raise TypeError(
                f"{type(self).__name__} has no function to run: wrap a model first, "
                f"e.g. ppl.handlers.{type(self).__name__}(model, ...)(*args)."
            )
        # a model's NumPy data become the backend's arrays where those take no NumPy operands
        # (torch), as MCMC's do: ``trace(seed(model, 0)).get_trace(X, y)`` runs on every backend
        args, kwargs = as_backend_data(args, kwargs)
        handler = self._entered()
        token = _STACK.set(_STACK.get() + (handler,))
        try:
            return self.fn(*args, **kwargs)
        finally:
            _STACK.reset(token)

    def _copy(self):
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._tokens = []
        return new

    # -- hooks ----------------------------------------------------------------------------
    def process_message(self, msg: dict) -> None:
        """Inspect or change ``msg`` before its value is computed."""

    def postprocess_message(self, msg: dict) -> None:
        """Inspect or change ``msg`` after its value is computed."""


def _key_for(msg):
    key = msg["kwargs"].get("rng_key")
    if key is None:
        what = {"sample": f"ppl.sample({msg['name']!r}, ...) needs a random key to draw a value",
                "plate": f"ppl.plate({msg['name']!r}, ...) needs a random key to draw its "
                         f"subsample",
                "param": f"ppl.param({msg['name']!r}, init_fn) needs a random key to call "
                         f"init_fn",
                "prng_key": "ppl.prng_key() needs a random key"}[msg["type"]]
        raise ValueError(
            f"{what}, and no handler provided one. Run the model under a seed handler, e.g. "
            f"ppl.handlers.seed(model, rng_seed=0)(*args), or pass obs= / condition the "
            f"site on data."
        )
    return key


def default_process_message(msg: dict) -> None:
    """What happens to a message no handler gave a value: ``sample`` sites draw, ``param``
    sites take their initial value, a subsampled ``plate`` draws its indices."""
    if msg["value"] is not None:
        return
    kind = msg["type"]
    if kind == "sample":
        msg["value"] = msg["fn"].sample(_key_for(msg), msg["kwargs"].get("sample_shape", ()))
    elif kind == "param":
        init = msg["args"][0]
        msg["value"] = init(_key_for(msg)) if callable(init) else init
    elif kind == "plate":
        msg["value"] = msg["fn"](_key_for(msg))
    elif kind == "prng_key":
        msg["value"] = _key_for(msg)
    elif msg["fn"] is not None:
        msg["value"] = msg["fn"](*msg["args"], **msg["kwargs"])


def apply_stack(msg: dict) -> dict:
    """Send ``msg`` through the active handlers and return it with its value filled in."""
    stack = _STACK.get()
    stopped_at = 0  # handlers stack[:stopped_at] do not see the message (it was hidden)
    for i in range(len(stack) - 1, -1, -1):
        if msg.get("stop"):
            if stack[i].sees_hidden:
                stack[i].process_message(msg)
            continue
        stack[i].process_message(msg)
        if msg.get("stop"):
            stopped_at = i
    default_process_message(msg)
    for handler in stack[stopped_at:]:
        handler.postprocess_message(msg)
    return msg
