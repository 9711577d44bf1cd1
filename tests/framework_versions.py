"""The framework versions the package's private reaches are tested against,
and the message a test fails with when one of those internals changed.

The adapters read a few names the frameworks do not publish (an
``InMemoryStore``'s dicts, ``PostgresStore._cursor()``, the session makers of
the Postgres vector stores, ...): each one saves a copy, a round trip or a
pass over the store, and each can change in any release. The tests in
``tests/unit/test_framework_internals.py`` and
``tests/integration/test_postgres_framework_internals.py`` pin every one of
them, and ``make compat`` runs them at the lowest and the newest versions the
extras allow. Where a check fails, its message says which distribution, at
which installed version, moved which name, what the package uses it for,
and the range it was last seen working in (:data:`TESTED`).
"""

from __future__ import annotations

import importlib.metadata
from typing import Dict, Tuple

#: distribution -> (lowest, newest) version ``make compat`` last passed with
#: (the lowest tier's version of a transitive one, langgraph-checkpoint, is the
#: one the lowest resolution brought). Update it when ``make compat`` moves.
TESTED: Dict[str, Tuple[str, str]] = {
    "langgraph-checkpoint": ("3.0.1", "4.3.2"),
    "langgraph-checkpoint-postgres": ("3.0.0", "3.2.0"),
    "langchain-postgres": ("0.0.17", "0.0.19"),
    "llama-index-core": ("0.14.19", "0.14.25"),
    "llama-index-vector-stores-postgres": ("0.6.7", "0.9.0"),
}


def changed(distribution: str, internal: str, expected: str, used_by: str) -> str:
    """The failure message of a private reach that no longer holds, e.g.
    "langgraph-checkpoint 5.0.0: InMemoryStore._data is not what
    poolsplit_adapters/stores/langgraph/memory_store_search.py reads (expected a
    dict of namespace -> {key: Item}; tested with langgraph-checkpoint 3.0.1
    to 4.3.2)". It names the installed version, not only the tested range:
    a failure below the range means a lower bound to raise, above it a reach
    to update."""
    low, high = TESTED[distribution]
    return "%s %s: %s is not what %s reads (expected %s; tested with %s %s to %s)" % (
        distribution,
        importlib.metadata.version(distribution),
        internal,
        used_by,
        expected,
        distribution,
        low,
        high,
    )
