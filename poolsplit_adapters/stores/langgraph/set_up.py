"""Whether a LangGraph store was set up: `require_tables`, the one check,
run where the package first touches a store (`BaseStoreMemory`, which
the agent middleware makes over ``runtime.store``).

A ``SqliteStore`` or ``PostgresStore`` whose ``setup()`` never ran has no
tables. The package reads a ``SqliteStore``'s table directly (the
middleware's kept index) and a ``PostgresStore`` refuses every statement,
so the first read failed deep inside with the database's own words ("no
such table: store", "relation \\"store\\" does not exist"). Refused here
instead, once per store object, with the fix: ``store.setup()``. A store
over a database another handle set up (a second process, a reopened file)
has its tables and passes, whatever its own ``is_setup`` says.

Not checked: an ``AsyncSqliteStore`` (it sets itself up on first use and
the package never reads its connection) and an ``AsyncPostgresStore``
(its statements run on its own loop; its first read raises the
database's error).
"""

from __future__ import annotations

import contextlib
import sqlite3
import weakref
from typing import Any, Optional

from ...errors import ArgumentError
from ..postgres import is_postgres_store, locked_cursor

__all__ = ["require_tables", "sqlite_connection"]

#: The stores found set up in this process: checked once each (weak: a
#: store no longer used is forgotten).
_READY: weakref.WeakSet[Any] = weakref.WeakSet()

_SQLITE_TABLE = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'store'"
_PG_TABLE = "SELECT to_regclass('store') IS NOT NULL AS ready"


def sqlite_connection(store: Any) -> Optional[sqlite3.Connection]:
    """The connection of a sync ``SqliteStore`` (used under its ``lock``),
    else None: the one test of what a SqliteStore is, for every reach into
    one (its tables, its watermark, its file's lock)."""
    try:
        from langgraph.store.sqlite import SqliteStore
    except ImportError:  # pragma: no cover - the langchain extra installs it
        return None
    conn = getattr(store, "conn", None)
    if not isinstance(store, SqliteStore) or not isinstance(conn, sqlite3.Connection):
        return None
    return conn


def _sqlite_ready(store: Any) -> Optional[bool]:
    """Whether a sync ``SqliteStore`` has its table; None for another store."""
    conn = sqlite_connection(store)
    if conn is None:
        return None
    if getattr(store, "is_setup", False):
        return True
    with store.lock:
        return bool(conn.execute(_SQLITE_TABLE).fetchone()[0])


def _postgres_ready(store: Any) -> Optional[bool]:
    """Whether a sync ``PostgresStore`` has its table; None for another store."""
    if not is_postgres_store(store) or not callable(getattr(store, "_cursor", None)):
        return None
    with locked_cursor(store) as cur:
        cur.execute(_PG_TABLE)
        return bool(cur.fetchone()["ready"])


def require_tables(store: Any, argument: str = "store") -> None:
    """Refuse a ``SqliteStore`` or ``PostgresStore`` whose tables were never
    made (its ``setup()`` never ran on this database): an `ArgumentError`
    naming ``argument`` and the fix. Other stores pass unchecked.

    Raises:
        ArgumentError: the store's database has no ``store`` table.
    """
    with contextlib.suppress(TypeError):  # a store without weak references: checked each time
        if store in _READY:
            return
    ready = _sqlite_ready(store)
    if ready is None:
        ready = _postgres_ready(store)
    if ready is False:
        raise ArgumentError(
            "%s: the LangGraph %s has no tables (its database has no 'store' table): "
            "call store.setup() once before giving it to poolsplit_adapters" % (argument, type(store).__name__)
        )
    if ready:
        with contextlib.suppress(TypeError):
            _READY.add(store)
