"""PGVector's ids are one key space per database: the claim that keeps a
write from taking another collection's row.

LangChain's ``PGVector`` keeps every collection in one table,
``langchain_pg_embedding``, whose primary key is the document id alone, and
writes with ``INSERT ... ON CONFLICT (id) DO UPDATE`` of text, vector and
metadata: an id another collection holds is overwritten there (the row stays
in that collection, with the new text). A write through
[`VectorStoreMemory`][poolsplit_adapters.langchain.vector_memory.VectorStoreMemory] therefore first
claims its ids: inside a transaction of its own it takes a transaction-level
advisory lock per id, asks which of the ids another collection holds, and
keeps the locks until the store's own upsert has committed. A second claim
of an id (any collection, any process) waits on the lock until the first
write ended, then finds its row: the check cannot be overtaken by a
concurrent write of the same new id. Writes that do not go through a claim
(``PGVector.add_documents`` called directly) are not held back.

The claim costs one extra connection while the write runs (so a pool must
have room for two per concurrent writer) and one round trip per id. Every
value is a bound parameter; the statements are built from the store's own
ORM model (``EmbeddingStore``) and its own session factory.
"""

from __future__ import annotations

import contextlib
from typing import Any, AsyncIterator, Callable, Collection, Iterator, List, Mapping, Optional, Sequence, Tuple

from langchain_core.vectorstores import VectorStore

from .id_locks import lock_key, lock_statements
from .langchain_search import PGVectorAlwaysFetch

__all__ = ["aclaim_ids", "claim_ids", "lock_key"]

#: Which ids of the given rows another collection (or namespace) holds (the claim's answer).
Held = Callable[[Sequence[Mapping[str, Any]]], List[str]]


def _claims(store: VectorStore) -> bool:
    return PGVectorAlwaysFetch.serves(store)


#: One row about to be written, as the claim checks it: (id, its namespace label or None).
Wanted = Tuple[str, Optional[str]]


def wanted_of(rows: Sequence[Mapping[str, Any]]) -> List[Wanted]:
    """What the claim checks of the rows about to be written: each id with
    its namespace label (None when it has none)."""
    out: List[Wanted] = []
    for row in rows:
        namespace = row.get("namespace")
        out.append((str(row["id"]), namespace if isinstance(namespace, str) else None))
    return out


def _held_statement(store: Any, collection: Any, wanted: Sequence[Wanted]) -> Any:
    """The ids among ``wanted`` whose stored row another collection holds,
    or another namespace of this collection: PGVector keeps one row per id,
    so either write would replace another tenant's memory. Every id and
    namespace is a bound parameter (a ``VALUES`` list)."""
    from sqlalchemy import String, column, or_, select, values

    rows = store.EmbeddingStore
    given = values(column("id", String), column("namespace", String), name="poolsplit_wanted").data(list(wanted))
    return (
        select(rows.id)
        .join(given, rows.id == given.c.id)
        .where(
            or_(
                rows.collection_id.is_distinct_from(collection.uuid),
                rows.cmetadata["namespace"].astext.is_distinct_from(given.c.namespace),
            )
        )
    )


@contextlib.contextmanager
def claim_ids(store: VectorStore, ids: Collection[str]) -> Iterator[Held]:
    """Hold ``ids`` for one write to ``store`` and yield the check: called
    with the rows about to be written, it returns the ids another collection
    holds, or another namespace of this one (in the order given). The write itself goes inside the block; the
    locks are released when it ends. On any store but a sync ``PGVector``
    the check finds nothing (other stores keep ids per collection or per
    table; an async-mode ``PGVector`` refuses sync writes itself).

    Example:
        ```python
        with claim_ids(pgvector, ["pref-1"]) as held:
            if not held([{"id": "pref-1", "namespace": "team-a"}]):
                pgvector.add_documents(docs, ids=["pref-1"])
        ```
    """
    pg: Any = store
    if not _claims(store) or pg.async_mode or not ids:
        yield lambda wanted: []
        return
    # A session of its own: the store's session maker is thread-scoped, and
    # its upsert would commit (and so release) the locks taken on it.
    with pg.session_maker.session_factory() as session:
        for statement in lock_statements(ids):
            session.execute(statement)
        collection = pg.get_collection(session)

        def held(rows: Sequence[Mapping[str, Any]]) -> List[str]:
            wanted = wanted_of(rows)
            if collection is None or not wanted:  # no collection: the store's own write says so
                return []
            found = set(session.execute(_held_statement(pg, collection, wanted)).scalars())
            return [i for i, _ in wanted if i in found]

        try:
            yield held
        finally:
            _release(session.rollback)


def _release(rollback: Callable[[], Any]) -> None:
    """End the claim's transaction, which wrote nothing and only held the
    ids' locks. A session the server ended (terminated, restarted) has
    released them already: its rollback's error is no error of the write,
    which went through the store's own session and committed or raised
    there (raised here, a committed write read as failed, and its retry was
    refused as "already superseded")."""
    import sqlalchemy.exc

    try:
        rollback()
    except sqlalchemy.exc.DBAPIError as err:
        if not err.connection_invalidated:
            raise


async def _arelease(rollback: Callable[[], Any]) -> None:
    """`_release` of an async session."""
    import sqlalchemy.exc

    try:
        await rollback()
    except sqlalchemy.exc.DBAPIError as err:
        if not err.connection_invalidated:
            raise


@contextlib.asynccontextmanager
async def aclaim_ids(
    store: VectorStore, ids: Collection[str]
) -> AsyncIterator[Callable[[Sequence[Mapping[str, Any]]], Any]]:
    """Async `claim_ids`, on an async-mode ``PGVector``: the check is
    a coroutine function."""
    pg: Any = store

    async def nothing(rows: Sequence[Mapping[str, Any]]) -> List[str]:
        return []

    if not _claims(store) or not pg.async_mode or not ids:
        yield nothing
        return
    async with pg.session_maker() as session:
        for statement in lock_statements(ids):
            await session.execute(statement)
        collection = await pg.aget_collection(session)

        async def held(rows: Sequence[Mapping[str, Any]]) -> List[str]:
            wanted = wanted_of(rows)
            if collection is None or not wanted:
                return []
            found = set((await session.execute(_held_statement(pg, collection, wanted))).scalars())
            return [i for i, _ in wanted if i in found]

        try:
            yield held
        finally:
            await _arelease(session.rollback)
