"""The Postgres framework internals the adapters and stores/postgres.py
read, pinned on the real server: LangGraph's ``PostgresStore`` and
``AsyncPostgresStore``, langchain-postgres ``PGVector`` and v2
``PGVectorStore`` (over its ``PGEngine``), LlamaIndex's ``PGVectorStore``.

Each is a private name (no public way to run our statement on the store's
own connection, lock or loop): a release may move it, and the adapters then
fall back to the store's own search (slower, or without the filter index) or
fail inside a call. Each test uses the name as the package does and checks
that the package still takes its own path, failing with the distribution,
its installed version and the versions the reach was tested with
(tests/framework_versions.py). ``make compat`` runs them at the lowest and
the newest versions the extras allow; CI must run them (``CI`` set: a
server that cannot start fails).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Dict, List

import pytest
import sqlalchemy
from framework_versions import changed
from pg_embeddings import DIMS, HashedNgramEmbeddings, hashed_ngrams
from pg_server import Database
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine
from sqlalchemy.orm import Session

from poolsplit_adapters.recall import Search
from poolsplit_adapters.stores.langgraph.postgres_store_search import _loader, serves_postgres_store
from poolsplit_adapters.stores.postgres import (
    alocked_cursor,
    locked_cursor,
    plain_async_postgres_store,
    plain_postgres_store,
    wait_on_store_loop,
)
from poolsplit_adapters.stores.vectorstores.llama_index_search import PGVectorStoreSearch
from poolsplit_adapters.stores.vectorstores.pgvector_v2_search import _takes_our_statement, plan_search

postgres = pytest.importorskip("langgraph.store.postgres")
postgres_aio = pytest.importorskip("langgraph.store.postgres.aio")
langchain_postgres = pytest.importorskip("langchain_postgres")
v2 = pytest.importorskip("langchain_postgres.v2.vectorstores")
llama_postgres = pytest.importorskip("llama_index.vector_stores.postgres")

LANGGRAPH_PG = "langgraph-checkpoint-postgres"
LANGGRAPH = "langgraph-checkpoint"
LANGCHAIN_PG = "langchain-postgres"
LLAMA_PG = "llama-index-vector-stores-postgres"
STORE_SEARCH = "poolsplit_adapters/stores/postgres.py and stores/langgraph/postgres_store_search.py"
PGVECTOR = "poolsplit_adapters/stores/vectorstores/pgvector_search.py, langchain_search.py and stores/postgres.py"
V2 = "poolsplit_adapters/stores/vectorstores/pgvector_v2_search.py"
LLAMA = "poolsplit_adapters/stores/vectorstores/llama_index_search.py and stores/postgres.py"
SEARCH = Search("pool:facts", 2, types=("fact",), pool="facts")


def index_config() -> Dict[str, Any]:
    return {"dims": DIMS, "embed": HashedNgramEmbeddings(), "fields": ["content"]}


def test_postgres_store_cursor_lock_and_ttl_are_what_our_statements_run_under(pg_database: Database):
    """``PostgresStore._cursor()`` (a cursor on the store's connection),
    ``lock`` (what its batches hold) and ``ttl_config``: every statement of
    ours runs through :func:`locked_cursor`, and the ranked search serves
    only a store without a TTL."""
    with postgres.PostgresStore.from_conn_string(pg_database.conninfo, index=index_config()) as store:
        store.setup()
        expected = "a method returning a context manager of a dict-row cursor"
        assert callable(getattr(store, "_cursor", None)), changed(
            LANGGRAPH_PG, "PostgresStore._cursor", expected, STORE_SEARCH
        )
        with store._cursor() as cur:
            cur.execute("SELECT 1 AS one")
            assert cur.fetchone() == {"one": 1}, changed(LANGGRAPH_PG, "PostgresStore._cursor", expected, STORE_SEARCH)
        lock = getattr(store, "lock", None)
        assert isinstance(lock, type(threading.Lock())), changed(
            LANGGRAPH_PG, "PostgresStore.lock", "a threading.Lock its batches hold", STORE_SEARCH
        )
        with locked_cursor(store) as cur:
            assert lock.locked()
            cur.execute("SELECT count(*) AS n FROM store")
            assert cur.fetchone() == {"n": 0}
        assert not lock.locked()
        assert getattr(store, "ttl_config", "missing") is None, changed(
            LANGGRAPH_PG, "PostgresStore.ttl_config", "None for a store opened without ttl=", STORE_SEARCH
        )
        assert plain_postgres_store(store) and serves_postgres_store(store), changed(
            LANGGRAPH_PG, "PostgresStore", "our ranked search to serve it", STORE_SEARCH
        )


def test_postgres_store_keeps_its_deserializer_and_its_json_loader(pg_database: Database):
    """``PostgresStore._deserializer`` (the ``deserializer=`` it was given)
    and ``langgraph.store.postgres.base._json_loads`` (its default): how
    our ranked search decodes a value, as the store itself would. A renamed
    attribute would silently decode with the default instead."""
    loads = getattr(postgres.base, "_json_loads", None)
    assert callable(loads) and loads(b'{"a": [1, "x"]}') == {"a": [1, "x"]}, changed(
        LANGGRAPH_PG, "langgraph.store.postgres.base._json_loads", "a function decoding JSON bytes", STORE_SEARCH
    )

    def custom(raw: Any) -> Dict[str, Any]:
        return {"decoded": raw}

    with pg_database.connect() as conn:
        given = postgres.PostgresStore(conn, deserializer=custom)
        plain = postgres.PostgresStore(conn)
        assert getattr(given, "_deserializer", None) is custom and getattr(plain, "_deserializer", "missing") is None, (
            changed(LANGGRAPH_PG, "PostgresStore._deserializer", "the deserializer= given, else None", STORE_SEARCH)
        )
        assert _loader(given) is custom and _loader(plain) is loads


async def test_async_postgres_store_loop_and_cursor_are_where_our_reads_run(pg_database: Database):
    """``AsyncPostgresStore._loop`` (LangGraph's batched store: the loop the
    store runs on, where a synchronous read of ours is sent,
    :func:`wait_on_store_loop`), its ``_cursor()`` and ``pipe``
    (:func:`alocked_cursor` takes the lock only in pipeline mode)."""
    index = index_config()
    async with postgres_aio.AsyncPostgresStore.from_conn_string(pg_database.conninfo, index=index) as store:
        await store.setup()
        assert getattr(store, "_loop", None) is asyncio.get_running_loop(), changed(
            LANGGRAPH, "AsyncBatchedBaseStore._loop", "the event loop the store was opened on", STORE_SEARCH
        )
        assert callable(getattr(store, "_cursor", None)), changed(
            LANGGRAPH_PG, "AsyncPostgresStore._cursor", "a method returning an async cursor context", STORE_SEARCH
        )
        assert getattr(store, "pipe", "missing") is None, changed(
            LANGGRAPH_PG, "AsyncPostgresStore.pipe", "None for a store opened without pipeline=", STORE_SEARCH
        )

        async def count() -> Any:
            async with alocked_cursor(store) as cur:
                await cur.execute("SELECT count(*) AS n FROM store")
                return await cur.fetchone()

        assert await count() == {"n": 0}
        # From another thread, as a synchronous recall does: run on the store's loop.
        assert await asyncio.to_thread(wait_on_store_loop, store, count()) == {"n": 0}
        assert plain_async_postgres_store(store) and serves_postgres_store(store), changed(
            LANGGRAPH_PG, "AsyncPostgresStore", "our ranked search to serve it", STORE_SEARCH
        )


def test_pgvector_makes_the_sync_sessions_our_statements_run_on(pg_database: Database):
    """``PGVector._make_sync_session()``: the store's own session (its
    engine, its tables created), on which the plan's searches, the
    always-scope fetch and the filter index run; ``EmbeddingStore`` its table."""
    engine = sqlalchemy.create_engine(pg_database.url)
    try:
        store = langchain_postgres.PGVector(
            HashedNgramEmbeddings(), connection=engine, collection_name="internals", embedding_length=DIMS
        )
        expected = "a method returning a context manager of a SQLAlchemy Session"
        assert callable(getattr(store, "_make_sync_session", None)), changed(
            LANGCHAIN_PG, "PGVector._make_sync_session", expected, PGVECTOR
        )
        with store._make_sync_session() as session:
            assert isinstance(session, Session), changed(
                LANGCHAIN_PG, "PGVector._make_sync_session", expected, PGVECTOR
            )
            assert session.execute(sqlalchemy.text("SELECT 1")).scalar() == 1
            assert store.get_collection(session) is not None
        assert store.EmbeddingStore.__tablename__ == "langchain_pg_embedding"
    finally:
        engine.dispose()


async def test_pgvector_makes_the_async_sessions_our_statements_run_on(pg_database: Database):
    """``PGVector._make_async_session()``: the async twin, for a store in async mode."""
    engine = create_async_engine(pg_database.url)
    try:
        store = langchain_postgres.PGVector(
            HashedNgramEmbeddings(), connection=engine, collection_name="internals", embedding_length=DIMS
        )
        expected = "a method returning an async context manager of a SQLAlchemy AsyncSession"
        assert callable(getattr(store, "_make_async_session", None)), changed(
            LANGCHAIN_PG, "PGVector._make_async_session", expected, PGVECTOR
        )
        async with store._make_async_session() as session:
            assert isinstance(session, AsyncSession), changed(
                LANGCHAIN_PG, "PGVector._make_async_session", expected, PGVECTOR
            )
            assert (await session.execute(sqlalchemy.text("SELECT 1"))).scalar() == 1
            assert await store.aget_collection(session) is not None
    finally:
        await engine.dispose()


def _v2_store(engine: Any) -> Any:
    from langchain_postgres import Column

    engine.init_vectorstore_table("internals_v2", DIMS, id_column=Column("langchain_id", "TEXT", nullable=False))
    return v2.PGVectorStore.create_sync(engine, embedding_service=HashedNgramEmbeddings(), table_name="internals_v2")


async def _one(engine: AsyncEngine) -> Any:
    async with engine.connect() as conn:
        return (await conn.execute(sqlalchemy.text("SELECT 1"))).scalar()


def test_pgvectorstore_v2_wraps_an_async_store_and_runs_on_its_engines_loop(pg_database: Database):
    """v2 ``PGVectorStore.__vs`` (``_PGVectorStore__vs``: the async store it
    wraps, with the settings and the SQLAlchemy engine our statement runs
    on) and ``_engine`` (the ``PGEngine``, whose ``_run_as_sync`` /
    ``_run_as_async`` run a coroutine on its own loop)."""
    from langchain_postgres import PGEngine
    from langchain_postgres.v2.async_vectorstore import AsyncPGVectorStore

    engine = PGEngine.from_connection_string(pg_database.url)
    try:
        store = _v2_store(engine)
        inner = getattr(store, "_PGVectorStore__vs", None)
        assert isinstance(inner, AsyncPGVectorStore), changed(
            LANGCHAIN_PG, "PGVectorStore.__vs", "the AsyncPGVectorStore it wraps", V2
        )
        assert getattr(inner, "hybrid_search_config", "missing") is None, changed(
            LANGCHAIN_PG, "AsyncPGVectorStore.hybrid_search_config", "None for a store created without one", V2
        )
        assert isinstance(inner.engine, AsyncEngine), changed(
            LANGCHAIN_PG, "AsyncPGVectorStore.engine", "the SQLAlchemy AsyncEngine", V2
        )
        assert getattr(store, "_engine", None) is engine, changed(
            LANGCHAIN_PG, "PGVectorStore._engine", "the PGEngine it was created on", V2
        )
        run = getattr(engine, "_run_as_sync", None)
        assert callable(run) and run(_one(inner.engine)) == 1, changed(
            LANGCHAIN_PG, "PGEngine._run_as_sync", "a method running a coroutine on the engine's loop", V2
        )
        assert _takes_our_statement(store) and plan_search(store, SEARCH, hashed_ngrams("x"), False) is not None, (
            changed(LANGCHAIN_PG, "PGVectorStore", "our statement to serve its pool searches", V2)
        )
    finally:
        engine._run_as_sync(engine.close())


async def test_pgengine_runs_a_coroutine_on_its_loop_from_async_code(pg_database: Database):
    """``PGEngine._run_as_async``: what the retriever's async path awaits."""
    from langchain_postgres import PGEngine

    engine = PGEngine.from_connection_string(pg_database.url)
    try:
        store = await asyncio.to_thread(_v2_store, engine)
        run = getattr(engine, "_run_as_async", None)
        assert callable(run) and await run(_one(store._PGVectorStore__vs.engine)) == 1, changed(
            LANGCHAIN_PG, "PGEngine._run_as_async", "a coroutine running another on the engine's loop", V2
        )
    finally:
        await engine._run_as_async(engine.close())


def _llama_store(database: Database) -> Any:
    return llama_postgres.PGVectorStore(
        connection_string=database.url, async_connection_string=database.url, table_name="internals", embed_dim=DIMS
    )


def _dispose(store: Any) -> None:
    if store._engine is not None:
        store._engine.dispose()


def test_llama_pgvectorstore_table_sessions_query_and_rows_are_what_our_search_uses(pg_database: Database):
    """LlamaIndex ``PGVectorStore``: ``_initialize()`` (its schema and
    table), ``_table_class`` (the ORM class of its table), ``_session`` (its
    session maker), ``_build_query(embedding, k)`` (its similarity query,
    which our pool searches extend with a bound condition),
    ``DBEmbeddingRow`` and ``_db_rows_to_query_result`` (rows to nodes, as
    its own query does), ``hnsw_kwargs``."""
    store = _llama_store(pg_database)
    try:
        for name in ("_initialize", "_build_query", "_db_rows_to_query_result"):
            assert callable(getattr(store, name, None)), changed(LLAMA_PG, "PGVectorStore." + name, "a method", LLAMA)
        store._initialize()
        table = getattr(store, "_table_class", None)
        columns = set(table.__table__.columns.keys()) if table is not None else set()
        assert {"node_id", "text", "metadata_", "embedding"} <= columns, changed(
            LLAMA_PG, "PGVectorStore._table_class", "the ORM class of data_<table_name>", LLAMA
        )
        with store._session() as session:
            assert isinstance(session, Session), changed(LLAMA_PG, "PGVectorStore._session", "a sessionmaker", LLAMA)
            assert session.execute(sqlalchemy.text("SELECT 1")).scalar() == 1
        assert isinstance(store._build_query(hashed_ngrams("x"), 2), sqlalchemy.Select), changed(
            LLAMA_PG, "PGVectorStore._build_query", "a SQLAlchemy Select of the k nearest rows", LLAMA
        )
        fields = set(getattr(llama_postgres.base.DBEmbeddingRow, "_fields", ()))
        assert {"node_id", "text", "metadata", "similarity", "custom_fields"} <= fields, changed(
            LLAMA_PG, "DBEmbeddingRow", "a named tuple with node_id, text, metadata, similarity, custom_fields", LLAMA
        )
        assert getattr(store, "hnsw_kwargs", "missing") is None, changed(
            LLAMA_PG, "PGVectorStore.hnsw_kwargs", "None for a store created without hnsw_kwargs=", LLAMA
        )
        # All of them together, through our search: the node comes back whole.
        _add_fact(store)
        found = PGVectorStoreSearch(store).search(SEARCH, hashed_ngrams("deploy to staging"))
        assert [(n.node.node_id, n.node.get_content()) for n in found] == [("fact-1", "deploy to staging")], changed(
            LLAMA_PG, "PGVectorStore", "our search to read its rows into nodes", LLAMA
        )
    finally:
        _dispose(store)


async def test_llama_pgvectorstore_async_session_is_what_our_async_search_uses(pg_database: Database):
    """``PGVectorStore._async_session``: the async session maker of our async search."""
    store = _llama_store(pg_database)
    try:
        await asyncio.to_thread(store._initialize)
        await asyncio.to_thread(_add_fact, store)
        async with store._async_session() as session:
            assert isinstance(session, AsyncSession), changed(
                LLAMA_PG, "PGVectorStore._async_session", "an async sessionmaker", LLAMA
            )
        found = await PGVectorStoreSearch(store).asearch(SEARCH, hashed_ngrams("deploy to staging"))
        assert [n.node.node_id for n in found] == ["fact-1"]
    finally:
        _dispose(store)
        if store._async_engine is not None:
            await store._async_engine.dispose()


def _add_fact(store: Any) -> List[str]:
    from llama_index.core.schema import TextNode

    node = TextNode(
        id_="fact-1", text="deploy to staging", metadata={"type": "fact"}, embedding=hashed_ngrams("deploy to staging")
    )
    return list(store.add([node]))


def test_llama_pgvectorstore_makes_a_table_row_of_a_node_as_its_add_does(pg_database: Database):
    """LlamaIndex ``PGVectorStore._node_to_table_row(node)``: the row its
    own ``add`` inserts, which a `VectorIndexMemory` write adds on the
    store's session inside its one transaction
    (``stores/vectorstores/llama_index_writes.py``)."""
    from llama_index.core.schema import TextNode

    where = "poolsplit_adapters/stores/vectorstores/llama_index_writes.py"
    store = _llama_store(pg_database)
    try:
        make_row = getattr(store, "_node_to_table_row", None)
        assert callable(make_row), changed(LLAMA_PG, "PGVectorStore._node_to_table_row", "a method", where)
        store._initialize()
        node = TextNode(
            id_="fact-2", text="rotate keys monthly", metadata={"type": "fact"}, embedding=hashed_ngrams("k")
        )
        row = make_row(node)
        assert isinstance(row, store._table_class) and (row.node_id, row.text) == ("fact-2", "rotate keys monthly"), (
            changed(LLAMA_PG, "PGVectorStore._node_to_table_row", "an instance of _table_class for the node", where)
        )
        with store._session() as session, session.begin():
            session.add(row)
        found = PGVectorStoreSearch(store).search(SEARCH, hashed_ngrams("k"))
        assert [n.node.node_id for n in found] == ["fact-2"], changed(
            LLAMA_PG, "PGVectorStore._node_to_table_row", "a row the store reads back as the node", where
        )
    finally:
        _dispose(store)
