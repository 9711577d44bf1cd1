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
moves one fails there first.

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
from typing import Dict, Set, Tuple

__all__ = ["TESTED", "FrameworkInternalsWarning", "changed", "moved"]

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
