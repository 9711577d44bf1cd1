"""Quote-like values in every entry field, on every Postgres path.

The namespace was the value tried first (``test_postgres_hostile_values.py``);
here each other field an entry carries into a Postgres store, one at a time:
``tags``, ``type``, ``source``, ``project`` and the id, holding quotes, ``;``,
``--``, a backslash, ``%``, ``_``, ``$$``, a statement and unicode. On each
path (LangChain ``PGVector``, langchain-postgres v2 ``PGVectorStore``,
LlamaIndex ``PGVectorStore``, LangGraph ``PostgresStore`` through
``BaseStoreMemory`` and through the agent middleware) the values are written
through the framework's own write, recalled through ours, and must come back
exactly (each entry's field equal to what was written, every entry of the
tenant recalled), a canary table must stay, the row count must not move, and
no value may appear in any SQL text the path sends (a statement hook on the
engine, or a recording cursor on the psycopg connection): a value travels
only as a bound parameter.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Sequence

import psycopg
import pytest
import sqlalchemy
from pg_corpus import NOW, documents
from pg_embeddings import DIMS, HashedNgramEmbeddings, HashedNgramLlamaEmbedding
from pg_server import Database

from poolsplit_adapters import Pool

VALUES = [
    "o'brien",
    'say "hi"',
    "a;b",
    "x -- y",
    "back\\slash\\'",
    "100%",
    "snake_case_",
    "$$dollar$$",
    "ünïcødé 名前 🙂",
    "x'); DROP TABLE canary; --",
]
FIELDS = ["tags", "type", "source", "project", "id"]
QUERY = "deploy the checkout service"
TENANT = "t"


def memory(field: str) -> List[Dict[str, Any]]:
    """One correction and one note per value, the value in ``field`` (ids
    are the values themselves for ``id``)."""
    out: List[Dict[str, Any]] = [
        {"id": "fix", "content": "Quote amounts in cents.", "type": "correction", "scope": "always"}
    ]
    for n, value in enumerate(VALUES):
        entry: Dict[str, Any] = {"id": "e%d" % n, "content": "deploy checkout note %d" % n, "type": "note"}
        entry["source"], entry["project"] = "ci", None
        entry[field] = [value] if field == "tags" else value
        out.append(entry)
    for entry in out:
        entry["namespace"] = TENANT
        entry.setdefault("tags", [])
    return out


def pools(field: str) -> List[Pool]:
    """Every note loads (room for all): the type pool names the hostile types when they are the field."""
    types = tuple(VALUES) if field == "type" else ("note",)
    return [Pool("corrections", 0, 0, ("correction",)), Pool("notes", 100_000, 1_000, types)]


def context(field: str) -> Dict[str, Any]:
    """The call's context carries the values too (the scorer's tags and project)."""
    return {"tags": list(VALUES), "project": VALUES[0]}


def assert_round_trip(field: str, seen: Sequence[Dict[str, Any]]) -> None:
    """Every entry recalled, its field exactly as written."""
    written = {e["id"]: e.get(field) for e in memory(field)}
    got = {e["id"]: e.get(field) for e in seen}
    assert got == written


def seen_entries(selection: Any) -> List[Dict[str, Any]]:
    return [dict(c.entry) for c in selection.chosen] + [dict(d.entry) for d in selection.dropped]


def canary(database: Database) -> None:
    with psycopg.connect(database.conninfo, autocommit=True) as conn:
        conn.execute("CREATE TABLE canary (x int)")


def rows(database: Database, table: str) -> int:
    """The canary is still there; the store's row count."""
    with psycopg.connect(database.conninfo) as conn:
        assert conn.execute("SELECT to_regclass('canary')").fetchone() == ("canary",)
        found = conn.execute("SELECT count(*) FROM %s" % table).fetchone()
        assert found is not None
        return int(found[0])


class SqlTexts:
    """Every SQL text sent (parameters apart), to show no value is in it."""

    def __init__(self) -> None:
        self.texts: List[str] = []

    def on(self, engine: Any) -> SqlTexts:
        sqlalchemy.event.listen(engine, "before_cursor_execute", self.capture)
        return self

    def capture(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        self.texts.append(statement)

    def assert_clean(self) -> None:
        assert self.texts
        for value in VALUES:
            assert not [t for t in self.texts if value in t], value


def recording_cursor(log: SqlTexts) -> Any:
    """A psycopg cursor class that records each query text it executes."""

    class Recording(psycopg.Cursor):  # type: ignore[type-arg]
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            log.texts.append(query.as_string(self) if hasattr(query, "as_string") else str(query))
            return super().execute(query, params, **kwargs)

        def executemany(self, query: Any, params_seq: Any, **kwargs: Any) -> Any:
            log.texts.append(query.as_string(self) if hasattr(query, "as_string") else str(query))
            return super().executemany(query, params_seq, **kwargs)

    return Recording


# -- LangChain PGVector -----------------------------------------------------------------


@pytest.mark.parametrize("filter_index", [False, True], ids=["hnsw", "filter-first"])
@pytest.mark.parametrize("field", FIELDS)
def test_pgvector_round_trips_each_hostile_field_and_binds_it(pg_database, field, filter_index):
    from langchain_postgres import PGVector

    from poolsplit_adapters.langchain import PoolSplitRetriever
    from poolsplit_adapters.stores.postgres import install_filter_index

    canary(pg_database)
    engine = sqlalchemy.create_engine(pg_database.url)
    try:
        log = SqlTexts().on(engine)
        store = PGVector(HashedNgramEmbeddings(), connection=engine, embedding_length=DIMS)
        store.add_documents(documents(memory(field)))
        if filter_index:  # the pool searches then take the filter-first statement
            install_filter_index(store)
        before = rows(pg_database, "langchain_pg_embedding")
        retriever = PoolSplitRetriever.from_vectorstore(store, pools(field), fetch_k=20, now=NOW)
        retriever.invoke(QUERY, namespace=TENANT, **context(field))
        assert_round_trip(field, seen_entries(retriever.last_selection))
        assert rows(pg_database, "langchain_pg_embedding") == before == len(memory(field))
        log.assert_clean()
    finally:
        engine.dispose()


# -- langchain-postgres v2 PGVectorStore ----------------------------------------------------


@pytest.mark.parametrize("field", FIELDS)
def test_pgvectorstore_v2_round_trips_each_hostile_field_and_binds_it(pg_database, field):
    pytest.importorskip("langchain_postgres.v2.vectorstores")
    from langchain_postgres import Column, PGEngine
    from langchain_postgres.v2.vectorstores import PGVectorStore

    from poolsplit_adapters.langchain import PoolSplitRetriever

    canary(pg_database)
    engine = PGEngine.from_connection_string(pg_database.url)
    try:
        log = SqlTexts().on(engine._pool.sync_engine)
        engine.init_vectorstore_table("memory_v2", DIMS, id_column=Column("langchain_id", "TEXT", nullable=False))
        store = PGVectorStore.create_sync(engine, embedding_service=HashedNgramEmbeddings(), table_name="memory_v2")
        docs = documents(memory(field))
        store.add_documents(docs, ids=[d.id for d in docs])
        before = rows(pg_database, "memory_v2")
        retriever = PoolSplitRetriever.from_vectorstore(store, pools(field), fetch_k=20, now=NOW)
        retriever.invoke(QUERY, namespace=TENANT, **context(field))
        assert_round_trip(field, seen_entries(retriever.last_selection))
        assert rows(pg_database, "memory_v2") == before == len(memory(field))
        log.assert_clean()
    finally:
        engine._run_as_sync(engine.close())


# -- LlamaIndex PGVectorStore -------------------------------------------------------------


@pytest.mark.parametrize("filter_index", [False, True], ids=["hnsw", "filter-first"])
@pytest.mark.parametrize("field", FIELDS)
def test_llama_index_pgvectorstore_round_trips_each_hostile_field_and_binds_it(pg_database, field, filter_index):
    postgres = pytest.importorskip("llama_index.vector_stores.postgres")
    from llama_index.core import VectorStoreIndex

    from poolsplit_adapters.llama_index import PoolSplitRetriever
    from poolsplit_adapters.llama_index.nodes import nodes_from
    from poolsplit_adapters.stores.postgres import install_filter_index

    canary(pg_database)
    store = postgres.PGVectorStore(
        connection_string=pg_database.url, async_connection_string=pg_database.url, table_name="memory", embed_dim=DIMS
    )
    try:
        nodes = nodes_from(memory(field))
        for node in nodes:
            node.excluded_embed_metadata_keys = list(node.metadata)
        index = VectorStoreIndex.from_vector_store(store, embed_model=HashedNgramLlamaEmbedding())
        index.insert_nodes(nodes)
        if filter_index:  # the pool searches then take the filter-first statement
            install_filter_index(store)
        log = SqlTexts().on(store._engine)
        before = rows(pg_database, "data_memory")
        retriever = PoolSplitRetriever.from_vector_store_index(index, pools(field), fetch_k=20, now=NOW)
        _, selection = retriever.retrieve_with_selection(QUERY, namespace=TENANT, **context(field))
        assert_round_trip(field, seen_entries(selection))
        assert rows(pg_database, "data_memory") == before == len(memory(field))
        log.assert_clean()
    finally:
        if store._engine is not None:
            store._engine.dispose()


# -- LangGraph PostgresStore: BaseStoreMemory and the agent middleware -------------------------


@pytest.fixture
def recorded_store(pg_database: Database) -> Iterator[Any]:
    """A PostgresStore on a connection whose cursors record their SQL texts."""
    from langgraph.store.postgres import PostgresStore
    from psycopg.rows import dict_row

    log = SqlTexts()
    conn = psycopg.connect(
        pg_database.conninfo,
        autocommit=True,
        prepare_threshold=0,
        row_factory=dict_row,
        cursor_factory=recording_cursor(log),
    )
    try:
        store = PostgresStore(conn)
        store.setup()
        store.log = log  # type: ignore[attr-defined]
        yield store
    finally:
        conn.close()


def postgres_entries(field: str) -> List[Dict[str, Any]]:
    """The memory without its namespace key (a LangGraph namespace is the item's place, not a field)."""
    return [{k: v for k, v in e.items() if k != "namespace"} for e in memory(field)]


@pytest.mark.parametrize("field", FIELDS)
def test_postgres_store_memory_round_trips_each_hostile_field_and_binds_it(pg_database, recorded_store, field):
    from poolsplit_adapters.langchain import BaseStoreMemory

    canary(pg_database)
    memory_ = BaseStoreMemory(recorded_store, ("memories", TENANT))
    memory_.put_many(postgres_entries(field))
    before = rows(pg_database, "store")
    selection = memory_.select(pools(field), {"message": QUERY, **context(field)}, now=NOW)
    seen = seen_entries(selection)
    for entry in seen:
        entry["namespace"] = TENANT  # compared with the memory as written, namespace included
    assert_round_trip(field, seen)
    assert rows(pg_database, "store") == before == len(memory(field))
    recorded_store.log.assert_clean()


@pytest.mark.parametrize("counted", [False, True], ids=["digest", "change-counter"])
@pytest.mark.parametrize("field", FIELDS)
def test_the_middleware_over_postgres_store_loads_each_hostile_field_and_binds_it(
    pg_database, recorded_store, field, counted
):
    """An agent turn with the middleware over the PostgresStore (its
    prepared recall and watermark queries included, the digest's and the
    change counter's): every note's marker reaches the model, and no value
    is in any SQL text."""
    from poolsplit_adapters.stores.postgres import install_change_counter

    if counted:
        install_change_counter(recorded_store)
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from poolsplit_adapters.langchain import BaseStoreMemory, PoolSplitMemoryMiddleware, WriteConfig
    from poolsplit_adapters.render import parse_markers

    canary(pg_database)
    BaseStoreMemory(recorded_store, ("memories", TENANT)).put_many(postgres_entries(field))
    seen: List[str] = []

    class Model(GenericFakeChatModel):
        def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            seen.append(str(messages[0].content))
            return super()._generate(messages, *args, **kwargs)

    middleware = PoolSplitMemoryMiddleware(
        pools(field), namespace=("memories", TENANT), now=NOW, write=WriteConfig(remember=False)
    )
    agent = create_agent(
        Model(messages=iter([AIMessage("ok"), AIMessage("ok")])),
        tools=[],
        middleware=[middleware],
        checkpointer=InMemorySaver(),
        store=recorded_store,
    )
    for _ in range(2):  # the second turn reads the watermark and reuses the kept index
        agent.invoke({"messages": [("user", QUERY)]}, {"configurable": {"thread_id": "t1"}})
    wanted = sorted(e["id"] for e in memory(field))
    for text in seen:
        assert sorted(m["id"] for m in parse_markers(text)) == wanted
    assert rows(pg_database, "store") == len(memory(field))
    recorded_store.log.assert_clean()
