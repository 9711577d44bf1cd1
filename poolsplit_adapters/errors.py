"""The argument error and its one message shape.

Its own module, below the stores and the adapters' checks alike: a store
refuses a bad argument (a namespace Postgres text cannot hold, a key too
long) with the same `ArgumentError` an adapter raises, without
importing the adapters' checks (`checks`, which
exports both names too).
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["ArgumentError", "argument_error", "check_call_form"]


class ArgumentError(ValueError, TypeError):
    """A bad argument to an adapter or the middleware (constructor or per
    call); the message names the argument. Both a ``ValueError`` and a
    ``TypeError``, so either ``except`` catches it.

    Example:
        ```python
        try:
            retriever.invoke("deploy", tags="ops")
        except ArgumentError as err:
            print(err)   # tags must be a list of strings, not the bare string 'ops' (...)
        ```
    """


def argument_error(name: str, expected: str, value: Any = None, *, got: bool = True) -> ArgumentError:
    """The one error shape: ``<name> must be <expected>, got <type> <value>``
    (``got=False``: the message ends after ``expected``)."""
    if not got:
        return ArgumentError("%s must be %s" % (name, expected))
    return ArgumentError("%s must be %s, got %s %r" % (name, expected, type(value).__name__, value))


def check_call_form(value: Any, name: str, form: str, *args: Any, **kwargs: Any) -> Any:
    """A callable whose signature takes ``args`` and ``kwargs``, the call
    ``form`` shows (``namespace(runtime)``), or None. Checked when an adapter
    is built: a wrong arity otherwise fails on the first call that uses it,
    inside a framework's run, without naming the argument. An async
    function is refused (the adapters call these, they never await them);
    a callable whose signature Python cannot read (some builtins) passes."""
    if value is None:
        return None
    if not callable(value):
        raise argument_error(name, "callable", value)
    if inspect.iscoroutinefunction(value) or inspect.iscoroutinefunction(type(value).__call__):
        raise ArgumentError(
            "%s must be a plain function, not an async one: it is called, never awaited, in sync and async runs alike"
            % name
        )
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return value
    try:
        signature.bind(*args, **kwargs)
    except TypeError as err:
        raise ArgumentError("%s must be callable as %s: %s" % (name, form, err)) from None
    return value
