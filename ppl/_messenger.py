"""The effect-handler machinery: a context-local handler stack, the ``Messenger`` base class and
``apply_stack``, which sends one message (a site) through the stack.

A primitive (``sample``, ``deterministic``, ...) builds a message, a plain dict with NumPyro's
keys, and calls :func:`apply_stack`. Every active handler sees the message in turn, innermost
(most recently entered) first, through ``process_message``; a handler may set ``msg["stop"]``
to hide the message from the handlers further out. If no handler supplied a value, the default
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

__all__ = ["Messenger", "apply_stack", "get_stack", "default_process_message"]

_STACK: contextvars.ContextVar[tuple] = contextvars.ContextVar("ppl_handler_stack", default=())


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


def default_process_message(msg: dict) -> None:
    """What happens to a message no handler gave a value: ``sample`` sites draw."""
    if msg["value"] is not None:
        return
    if msg["type"] == "sample":
        key = msg["kwargs"].get("rng_key")
        if key is None:
            raise ValueError(
                f"ppl.sample({msg['name']!r}, ...) needs a random key to draw a value, and no "
                f"handler provided one. Run the model under a seed handler, e.g. "
                f"ppl.handlers.seed(model, rng_seed=0)(*args), or pass obs= / condition the "
                f"site on data."
            )
        msg["value"] = msg["fn"].sample(key, msg["kwargs"].get("sample_shape", ()))
    elif msg["fn"] is not None:
        msg["value"] = msg["fn"](*msg["args"], **msg["kwargs"])


def apply_stack(msg: dict) -> dict:
    """Send ``msg`` through the active handlers and return it with its value filled in."""
    stack = _STACK.get()
    pointer = 0
    for pointer, handler in enumerate(reversed(stack)):  # noqa: B007 - used below
        handler.process_message(msg)
        if msg.get("stop"):
            break
    default_process_message(msg)
    for handler in stack[len(stack) - pointer - 1:]:
        handler.postprocess_message(msg)
    return msg
