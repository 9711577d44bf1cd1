"""The argument error and its one message shape.

Its own module, below the stores and the adapters' checks alike: a store
refuses a bad argument (a namespace Postgres text cannot hold, a key too
long) with the same `ArgumentError` an adapter raises, without
importing the adapters' checks (`checks`, which
exports both names too).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ArgumentError", "argument_error"]


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
