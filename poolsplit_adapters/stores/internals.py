"""The frameworks' private names the stores read: the versions each is
tested against, and the one warning when one is missing at run time.

A few reaches into the frameworks' unpublished names (an ``InMemoryStore``'s
dicts, ``PostgresStore._cursor()``, the wrapped store of langchain-postgres
v2's ``PGVectorStore``) each save a copy, a round trip or a pass over the
store. A release may rename any of them. Where the store's own public path
can serve the call instead, the stores take it, which is slower but never
wrong, and say so once per process and name: a [`FrameworkInternalsWarning`][]
naming the distribution, its installed version, the name that moved, what
it was for and the range `make compat` last passed with (`TESTED`). The
tests pin every reach with the same message (`changed`), so a release that
moves one fails there first. Where no public path can stand in (the reach
is the call: our statement on a ``PGVector``'s session, a LlamaIndex
``PGVectorStore``'s query and rows), a missing name stops the call before
it starts with a [`FrameworkInternalsError`][] carrying the same message
(`require`), never an ``AttributeError`` from deep inside a search.

Example:
    ```python
    import warnings
    from poolsplit_adapters.stores.internals import FrameworkInternalsWarning

    # a host that would rather stop than run slower on an untested release:
    warnings.simplefilter("error", FrameworkInternalsWarning)
    ```
"""

from __future__ import annotations

import importlib.metadata
import threading
import warnings
from typing import Dict, Sequence, Set, Tuple

__all__ = ["TESTED", "FrameworkInternalsError", "FrameworkInternalsWarning", "changed", "moved", "require"]

#: distribution -> (lowest, newest) version ``make compat`` last passed with
#: (the lowest tier's version of a transitive one is the one its resolution
#: brought). Update it when ``make compat`` moves.
TESTED: Dict[str, Tuple[str, str]] = {
    "langgraph-checkpoint": ("3.0.1", "4.3.2"),
    "langgraph-checkpoint-postgres": ("3.0.0", "3.2.0"),
    "langchain-postgres": ("0.0.17", "0.0.19"),
    "llama-index-core": ("0.14.19", "0.14.25"),
    "llama-index-vector-stores-postgres": ("0.6.7", "0.9.0"),
}


class FrameworkInternalsWarning(RuntimeWarning):
    """A framework's private name the package reads is not what it reads:
    the call was served by the store's own public path (slower, same
    answer). Upgrade or pin the framework within the tested range the
    message names, or report it.

    Example:
        ```python
        import warnings
        warnings.simplefilter("error", FrameworkInternalsWarning)  # stop instead
        ```
    """


class FrameworkInternalsError(RuntimeError):
    """A framework's private name that a call cannot do without is missing
    (no public path can serve the call in its place): the message names the
    distribution, its installed version, the name, what it was for and the
    range the package is tested with. Pin the framework within that range,
    or report it.

    Example:
        ```python
        try:
            retriever.invoke("deploy")
        except FrameworkInternalsError as error:
            print(error)  # "langchain-postgres 0.1.0: PGVector._make_sync_session is not what ..."
        ```
    """


def _installed(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


def changed(distribution: str, internal: str, expected: str, used_by: str) -> str:
    """The message of a private reach that no longer holds, e.g.
    "langgraph-checkpoint 5.0.0: InMemoryStore._data is not what
    poolsplit_adapters/stores/langgraph/memory_store_search.py reads
    (expected a dict of namespace -> {key: Item}; tested with
    langgraph-checkpoint 3.0.1 to 4.3.2)". It names the installed version,
    not only the tested range: below the range a lower bound is to be raised,
    above it a reach to be updated."""
    low, high = TESTED[distribution]
    return "%s %s: %s is not what %s reads (expected %s; tested with %s %s to %s)" % (
        distribution,
        _installed(distribution),
        internal,
        used_by,
        expected,
        distribution,
        low,
        high,
    )


_warned: Set[Tuple[str, str]] = set()
_lock = threading.Lock()


def moved(distribution: str, internal: str, expected: str, used_by: str, instead: str) -> None:
    """Warn, once per process for each ``(distribution, internal)``, that a
    reach is missing and the call runs ``instead`` (the store's own path)."""
    with _lock:
        if (distribution, internal) in _warned:
            return
        _warned.add((distribution, internal))
    warnings.warn(
        "%s; %s instead" % (changed(distribution, internal, expected, used_by), instead),
        FrameworkInternalsWarning,
        stacklevel=3,
    )


def declares(obj: object, name: str) -> bool:
    """Whether ``obj`` has ``name``: on its class (a method, a property, a
    pydantic private attribute, which raises until it is set) or on itself
    (an attribute its ``__init__`` sets). Reads no property."""
    cls = type(obj)
    if hasattr(cls, name) or name in (getattr(cls, "__private_attributes__", None) or {}):
        return True
    return name in (getattr(obj, "__dict__", None) or {})


def require(obj: object, names: Sequence[str], distribution: str, expected: str, used_by: str) -> None:
    """Refuse, with a `FrameworkInternalsError` naming every missing one,
    an object without all of ``names``: the private names a call is made
    of. Checked where a search is set up, before any statement runs."""
    missing = [name for name in names if not declares(obj, name)]
    if missing:
        internal = " and ".join("%s.%s" % (type(obj).__name__, name) for name in missing)
        raise FrameworkInternalsError(changed(distribution, internal, expected, used_by))
