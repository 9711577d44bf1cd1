"""langchain-postgres v2 (``PGVectorStore`` over a ``PGEngine``) on the real
server: corrections by an exact query with HNSW forced, and no namespace or
type value in SQL text.

``PGVectorStore`` runs its queries on an async SQLAlchemy engine (here
psycopg 3's async driver, unix socket) in a background event loop. Its
filtered similarity search through HNSW looks at the ``ef_search`` nearest
rows and then filters, so with sequential scans off it returns fewer than
the six corrections of 5,000 rows; the retriever fetches them with the
store's exact ``get(where=...)`` instead and holds all six on every call.
The store binds filter values (``:name`` parameters); a hostile tenant name
is stored, recalled exactly, and never appears in a statement.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List

import psycopg
import pytest
import sqlalchemy
import synth
from hnsw_checks import (
    CORRECTIONS,
    FORCE_INDEX,
    ROWS,
    assert_every_call_holds_every_correction,
    assert_store_search_misses_corrections,
    fix_ids,
    queries,
)
from pg_corpus import NOW, POOLS, QUERY, documents, entries
from pg_embeddings import DIMS, HashedNgramEmbeddings, hashed_ngrams
from pg_server import Database

from poolsplit_adapters.settings import ArgumentError

v2 = pytest.importorskip("langchain_postgres.v2.vectorstores")

HOSTILE = [
    "x'); DROP TABLE canary; --",
    "zz'); DELETE FROM memory_v2; --",
    "o'brien",
    "back\\slash\\' OR 1=1 --",
    "100%_off",
    "a:b",
    '"double" quotes $1 $$',
    "ünïcødé 名前 🙂",
]


def engine_for(database: Database, **options: Any) -> Any:
    from langchain_postgres import PGEngine

    return PGEngine.from_connection_string(database.url, **options)


def table(engine: Any, name: str) -> None:
    """A v2 table whose ids are text (the entries' own ids, not UUIDs)."""
    from langchain_postgres import Column

    engine.init_vectorstore_table(name, DIMS, id_column=Column("langchain_id", "TEXT", nullable=False))


def store_on(engine: Any, name: str) -> Any:
    return v2.PGVectorStore.create_sync(engine, embedding_service=HashedNgramEmbeddings(), table_name=name)


def close(engine: Any) -> None:
    engine._run_as_sync(engine.close())


class StatementLog:
    """Every SQL text the store's engine sends (parameters apart)."""

    def __init__(self, engine: Any) -> None:
        self.texts: List[str] = []
        sqlalchemy.event.listen(engine._pool.sync_engine, "before_cursor_execute", self.capture)

    def capture(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        self.texts.append(statement)

    def assert_clean(self, values: List[str]) -> None:
        assert self.texts
        for value in values:
            assert not [t for t in self.texts if value in t], value


# -- corrections through HNSW ------------------------------------------------------


@pytest.fixture(scope="module")
def hnsw_database(pg_server: Any) -> Database:
    """One database for the HNSW tests, loaded once (5,000 rows and an index)."""
    return pg_server.create_database("hnsw_v2")


@pytest.fixture(scope="module")
def hnsw_items(hnsw_database: Database) -> Iterator[List[Dict[str, Any]]]:
    """5,000 rows through PGVectorStore, then its HNSW index and statistics."""
    from langchain_postgres.v2.indexes import HNSWIndex

    pg_database = hnsw_database
    items = synth.make_store(ROWS, corrections=CORRECTIONS)
    engine = engine_for(pg_database)
    try:
        table(engine, "memory_v2")
        store = store_on(engine, "memory_v2")
        store.add_embeddings(
            [e["content"] for e in items],
            [hashed_ngrams(e["content"]) for e in items],
            metadatas=[{k: v for k, v in e.items() if k not in ("content", "id")} for e in items],
            ids=[e["id"] for e in items],
        )
        store.apply_vector_index(HNSWIndex())
        with psycopg.connect(pg_database.conninfo, autocommit=True) as conn:
            conn.execute("ANALYZE")
    finally:
        close(engine)
    yield items


@pytest.fixture
def forced(hnsw_database: Database, hnsw_items: Any) -> Iterator[Any]:
    """The store on an engine whose sessions cannot scan sequentially."""
    engine = engine_for(hnsw_database, connect_args=FORCE_INDEX)
    yield store_on(engine, "memory_v2")
    close(engine)


def test_pgvectorstores_own_filtered_search_through_hnsw_misses_corrections(forced):
    """The premise: the store's own filtered search through the forced index misses corrections."""
    assert_store_search_misses_corrections(forced)


def test_every_call_over_pgvectorstore_v2_with_hnsw_forced_holds_every_correction(forced, hnsw_items):
    assert_every_call_holds_every_correction(forced, hnsw_items)


async def test_every_async_call_over_pgvectorstore_v2_with_hnsw_forced_holds_every_correction(forced, hnsw_items):
    from poolsplit_adapters.langchain import PoolSplitRetriever

    retriever = PoolSplitRetriever.from_vectorstore(forced, synth.POOLS, fetch_k=20, now=synth.NOW)
    wanted = fix_ids(hnsw_items)
    for q in queries()[:5]:
        got = await retriever.ainvoke(q)
        assert sorted(d.id for d in got if d.metadata.get("scope") == "always") == wanted


# -- hostile values ---------------------------------------------------------------


def memory() -> List[dict]:
    out: List[dict] = []
    for n, tenant in enumerate(["plain", *HOSTILE]):
        out += entries(tenant, prefix="t%d-" % n, notes=2)
    return out


def expected(tenant: str) -> List[str]:
    from poolsplit_adapters.langchain import PoolSplitRetriever

    oracle = PoolSplitRetriever(documents=documents(memory()), pools=POOLS, now=NOW)
    return sorted(str(d.id) for d in oracle.invoke(QUERY, namespace=tenant))


@pytest.fixture
def hostile_store(pg_database: Database) -> Iterator[Any]:
    with psycopg.connect(pg_database.conninfo, autocommit=True) as conn:
        conn.execute("CREATE TABLE canary (x int)")
    engine = engine_for(pg_database)
    table(engine, "memory_v2")
    store = store_on(engine, "memory_v2")
    store.add_documents(documents(memory()))
    yield engine, store
    close(engine)


def intact(database: Database) -> int:
    with psycopg.connect(database.conninfo) as conn:
        assert conn.execute("SELECT to_regclass('canary')").fetchone() == ("canary",)
        row = conn.execute("SELECT count(*) FROM memory_v2").fetchone()
        assert row is not None
        return int(row[0])


def test_hostile_namespaces_recall_exactly_their_own_rows_and_reach_no_sql_text(pg_database, hostile_store):
    from poolsplit_adapters.langchain import PoolSplitRetriever

    engine, store = hostile_store
    retriever = PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=20, now=NOW)
    log = StatementLog(engine)
    for n, tenant in enumerate(HOSTILE, 1):
        docs = retriever.invoke(QUERY, namespace=tenant)
        assert sorted(str(d.id) for d in docs) == expected(tenant), tenant
        assert docs[0].id == "t%d-fix-0" % n  # its correction, first
        assert intact(pg_database) == len(memory())
    log.assert_clean(HOSTILE)


async def test_hostile_namespaces_are_bound_on_the_async_path_too(pg_database, hostile_store):
    from poolsplit_adapters.langchain import PoolSplitRetriever

    engine, store = hostile_store
    retriever = PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=20, now=NOW)
    log = StatementLog(engine)
    for tenant in HOSTILE:
        docs = await retriever.ainvoke(QUERY, namespace=tenant)
        assert sorted(str(d.id) for d in docs) == expected(tenant), tenant
    assert intact(pg_database) == len(memory())
    log.assert_clean(HOSTILE)


def test_a_nul_or_lone_surrogate_namespace_is_an_argument_error_before_any_query(hostile_store):
    from poolsplit_adapters.langchain import PoolSplitRetriever

    engine, store = hostile_store
    retriever = PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=20, now=NOW)
    log = StatementLog(engine)
    for bad in ["a\x00b", "lone \ud800"]:
        with pytest.raises(ArgumentError, match="namespace"):
            retriever.invoke(QUERY, namespace=bad)
    assert log.texts == []


def test_hostile_namespaces_in_metadata_columns_recall_exactly_and_reach_no_sql_text(pg_database):
    """The same with the filtered keys in columns of their own (the store's
    ``metadata_columns``): our pool searches read them there, bound."""
    from langchain_postgres import Column

    from poolsplit_adapters.langchain import PoolSplitRetriever

    kept = ["type", "scope", "namespace"]
    engine = engine_for(pg_database)
    try:
        engine.init_vectorstore_table(
            "memory_v2",
            DIMS,
            id_column=Column("langchain_id", "TEXT", nullable=False),
            metadata_columns=[Column(name, "TEXT") for name in kept],
        )
        store = v2.PGVectorStore.create_sync(
            engine, embedding_service=HashedNgramEmbeddings(), table_name="memory_v2", metadata_columns=kept
        )
        store.add_documents(documents(memory()))
        retriever = PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=20, now=NOW)
        log = StatementLog(engine)
        for n, tenant in enumerate(HOSTILE, 1):
            docs = retriever.invoke(QUERY, namespace=tenant)
            assert sorted(str(d.id) for d in docs) == expected(tenant), tenant
            assert docs[0].id == "t%d-fix-0" % n
        log.assert_clean(HOSTILE)
        assert [t for t in log.texts if "memory_v2.namespace IN" in t]  # the column, not the JSON
    finally:
        close(engine)
