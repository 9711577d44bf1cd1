"""Postgres through the frameworks' own stores, with no value in SQL text.

The adapters keep long-term memory in the frameworks' Postgres stores
(LangChain's ``PGVector``, LlamaIndex's ``PGVectorStore``) and add no table
of their own. But LlamaIndex's store writes metadata filter *values* into
its SQL text: a namespace ``x'); DROP TABLE t; --`` ran as SQL through
``get_nodes(filters=...)``. Quoting values ourselves would only be a second
SQL dialect to get right. So every condition the recall plan pushes down to
Postgres is built here, once, as a SQLAlchemy expression on the store's own
metadata column: keys and values (type, scope, namespace) travel as bound
parameters, and the adapters run it through the store's own engine.

The always-scope fetch uses the same condition with no similarity ordering:
through an approximate index (HNSW), a filtered similarity search looks at
the nearest few dozen rows before filtering, so a correction far from the
query would silently never load.

Postgres text cannot hold NUL, nor a lone surrogate (not UTF-8): such a
value is refused up front with an :class:`~poolsplit_adapters.settings.ArgumentError`
naming the field (an argument) or an :class:`~poolsplit_adapters.EntryError`
naming the entry and field (a write), instead of a driver traceback from
inside the store; the rule is :mod:`.checks`', so every store refuses the same.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional

from ..recall import Search
from .checks import check_storable, storable_text

__all__ = ["check_entry_text", "check_search", "check_postgres_text", "metadata_condition"]


def check_postgres_text(field: str, value: str) -> str:
    """``value`` when Postgres text can hold it, else :class:`ArgumentError`
    naming ``field`` (NUL, or a lone surrogate, which is not UTF-8): the one
    rule every store applies, :func:`~poolsplit_adapters.stores.checks.storable_text`."""
    return storable_text(value, field)


def check_entry_text(entry: Mapping[str, Any], index: Optional[int] = None) -> None:
    """Raise :class:`~poolsplit_adapters.EntryError` naming the entry and
    field when a value of ``entry`` holds NUL or a lone surrogate: Postgres
    text and JSONB cannot store it (the driver's own error names neither).
    The storable rule every write path applies
    (:func:`~poolsplit_adapters.stores.checks.check_storable`)."""
    check_storable(entry, index)


def check_search(search: Search, type_key: str = "type") -> None:
    """Refuse, before any query runs, a value of ``search`` that Postgres
    text cannot hold (see :func:`check_postgres_text`)."""
    check_postgres_text("type_key", type_key)
    for value in search.types or ():
        check_postgres_text("type", value)
    for value in search.namespaces:
        check_postgres_text("namespace", value)


def metadata_condition(metadata: Any, search: Search, type_key: str = "type") -> Any:
    """``search``'s filter as a SQLAlchemy condition on ``metadata`` (a JSON
    or JSONB column of the store's table): every key and value is a bound
    parameter, never SQL text.

    Example::

        stmt = select(table).where(metadata_condition(table.cmetadata, Search("always", 1000, always=True)))
    """
    import sqlalchemy  # the Postgres stores' own dependency, not the core's

    check_search(search, type_key)
    clauses: List[Any] = []
    if search.types is not None:
        clauses.append(metadata[type_key].astext.in_(list(search.types)))
    if search.untyped:
        clauses.append(metadata[type_key].astext.is_(None))
    if search.always:
        clauses.append(metadata["scope"].astext == "always")
    if search.namespaces:
        clauses.append(metadata["namespace"].astext.in_(list(search.namespaces)))
    return sqlalchemy.and_(sqlalchemy.true(), *clauses)
