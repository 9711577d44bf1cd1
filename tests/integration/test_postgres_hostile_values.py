"""No namespace or type value reaches SQL text, on a real Postgres.

Hostile tenant names (quotes, ``;``, ``--``, backslashes, ``%``, ``_``, a
SQLAlchemy bind-parameter look-alike, unicode) are stored and recalled by
both frameworks' Postgres stores, sync and async. Each must match exactly its
own rows, a canary table must survive, and every other tenant's rows stay
in place. A NUL (which Postgres text cannot hold) is a clear ``ArgumentError``
naming the field, not a driver traceback.
"""

from __future__ import annotations

from typing import Any, Iterator, List, Sequence

import psycopg
import pytest
import sqlalchemy
from pg_corpus import NOW, POOLS, QUERY, documents, entries
from pg_embeddings import DIMS, HashedNgramEmbeddings, HashedNgramLlamaEmbedding
from pg_server import Database

from poolsplit_adapters import Pool
from poolsplit_adapters.settings import ArgumentError

HOSTILE = [
    "x'); DROP TABLE canary; --",
    "zz'); DELETE FROM data_memory; --",
    "zz'); DELETE FROM langchain_pg_embedding; --",
    "o'brien",
    "back\\slash\\' OR 1=1 --",
    "100%_off",
    "a:b",  # SQLAlchemy text() reads ":b" as a bind parameter
    '"double" quotes $1 $$',
    "ünïcødé 名前 🙂",
]
TENANTS = ["plain", *HOSTILE]
HOSTILE_TYPE = "ty'pe'); DROP TABLE canary; --"
POOLS_WITH_HOSTILE_TYPE = [*POOLS, Pool("odd", 100, 2, (HOSTILE_TYPE,))]


def memory() -> List[dict]:
    """Ten entries per tenant (three corrections), ids unique per tenant,
    plus one entry of a hostile type in each."""
    out: List[dict] = []
    for n, tenant in enumerate(TENANTS):
        out += entries(tenant, prefix="t%d-" % n, notes=2)
        out.append({"id": "t%d-odd" % n, "content": "an odd one", "type": HOSTILE_TYPE, "namespace": tenant})
    return out


def own_ids(tenant: str) -> List[str]:
    return sorted(e["id"] for e in memory() if e["namespace"] == tenant)


def expected(tenant: str) -> List[str]:
    """What the selection over the whole memory held in-process loads for
    ``tenant`` (fetch_k covers every pool, so recall loses nothing)."""
    from poolsplit_adapters.langchain import PoolSplitRetriever

    oracle = PoolSplitRetriever(documents=documents(memory()), pools=POOLS_WITH_HOSTILE_TYPE, now=NOW)
    got = sorted(str(d.id) for d in oracle.invoke(QUERY, namespace=tenant))
    assert got and set(got) <= set(own_ids(tenant))
    return got


def recalled(selection: Any) -> List[str]:
    """Every id the selection saw: what was recalled from the store."""
    return sorted([c.entry["id"] for c in selection.chosen] + [d.entry["id"] for d in selection.dropped])


def canary(database: Database) -> None:
    with psycopg.connect(database.conninfo, autocommit=True) as conn:
        conn.execute("CREATE TABLE canary (x int)")


class StatementLog:
    """Every SQL text an engine sends (parameters apart), to show that no
    value is in it."""

    def __init__(self, engine: Any) -> None:
        self.texts: List[str] = []
        sqlalchemy.event.listen(engine, "before_cursor_execute", self.capture)

    def capture(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        self.texts.append(statement)

    def assert_clean(self, values: Sequence[str]) -> None:
        assert self.texts
        for value in values:
            assert not [t for t in self.texts if value in t], value


def intact(database: Database, table: str) -> int:
    """The canary is still there; the store's row count."""
    with psycopg.connect(database.conninfo) as conn:
        assert conn.execute("SELECT to_regclass('canary')").fetchone() == ("canary",)
        row = conn.execute("SELECT count(*) FROM %s" % table).fetchone()
        assert row is not None
        return int(row[0])


# -- LlamaIndex: PGVectorStore --------------------------------------------------------


@pytest.fixture
def llama_store(pg_database: Database) -> Iterator[Any]:
    postgres = pytest.importorskip("llama_index.vector_stores.postgres")
    store = postgres.PGVectorStore(
        connection_string=pg_database.url, async_connection_string=pg_database.url, table_name="memory", embed_dim=DIMS
    )
    yield store
    if store._engine is not None:
        store._engine.dispose()


def llama_retriever(store: Any, **options: Any) -> Any:
    from llama_index.core import VectorStoreIndex

    from poolsplit_adapters.llama_index import PoolSplitRetriever
    from poolsplit_adapters.llama_index.nodes import nodes_from

    nodes = nodes_from(memory())
    for node in nodes:
        node.excluded_embed_metadata_keys = list(node.metadata)
    index = VectorStoreIndex.from_vector_store(store, embed_model=HashedNgramLlamaEmbedding())
    index.insert_nodes(nodes)
    return PoolSplitRetriever.from_vector_store_index(index, POOLS_WITH_HOSTILE_TYPE, fetch_k=20, now=NOW, **options)


def node_ids(nodes: Sequence[Any]) -> List[str]:
    return sorted(n.node.node_id for n in nodes)


def test_hostile_namespaces_recall_exactly_their_own_rows_from_pgvectorstore(pg_database, llama_store):
    canary(pg_database)
    retriever = llama_retriever(llama_store)
    log = StatementLog(llama_store._engine)
    rows = intact(pg_database, "data_memory")
    assert rows == len(memory())
    for tenant in TENANTS:
        nodes, selection = retriever.retrieve_with_selection(QUERY, namespace=tenant)
        assert node_ids(nodes) == expected(tenant), tenant
        assert [n.node.node_id for n in nodes][:3] == ["t%d-fix-%d" % (TENANTS.index(tenant), k) for k in range(3)]
        assert recalled(selection) == own_ids(tenant), tenant  # all its rows, no foreign one
        assert intact(pg_database, "data_memory") == rows
    log.assert_clean([*HOSTILE, HOSTILE_TYPE])


async def test_hostile_namespaces_are_bound_on_the_async_path_of_pgvectorstore(pg_database, llama_store):
    canary(pg_database)
    retriever = llama_retriever(llama_store)
    log = StatementLog(llama_store._async_engine.sync_engine)
    try:
        for tenant in HOSTILE:
            nodes, selection = await retriever.aretrieve_with_selection(QUERY, namespace=tenant)
            assert node_ids(nodes) == expected(tenant), tenant
            assert recalled(selection) == own_ids(tenant), tenant
    finally:
        await llama_store.close()
    assert intact(pg_database, "data_memory") == len(memory())
    log.assert_clean([*HOSTILE, HOSTILE_TYPE])


def test_a_nul_namespace_is_a_clear_error_from_pgvectorstore(llama_store):
    retriever = llama_retriever(llama_store)
    for bad, field in [("a\x00b", "namespace"), ("lone \ud800", "namespace")]:
        with pytest.raises(ArgumentError, match=field):
            retriever.retrieve_with_selection(QUERY, namespace=bad)


# -- LangChain: PGVector -----------------------------------------------------------


@pytest.fixture
def engine(pg_database: Database) -> Iterator[sqlalchemy.Engine]:
    engine = sqlalchemy.create_engine(pg_database.url)
    yield engine
    engine.dispose()


def lc_retriever(store: Any) -> Any:
    from poolsplit_adapters.langchain import PoolSplitRetriever

    store.add_documents(documents(memory()))
    return PoolSplitRetriever.from_vectorstore(store, POOLS_WITH_HOSTILE_TYPE, fetch_k=20, now=NOW)


def test_hostile_namespaces_recall_exactly_their_own_rows_from_pgvector(pg_database, engine):
    from langchain_postgres import PGVector

    canary(pg_database)
    retriever = lc_retriever(PGVector(HashedNgramEmbeddings(), connection=engine, embedding_length=DIMS))
    log = StatementLog(engine)
    rows = intact(pg_database, "langchain_pg_embedding")
    assert rows == len(memory())
    for tenant in TENANTS:
        docs = retriever.invoke(QUERY, namespace=tenant)
        assert sorted(str(d.id) for d in docs) == expected(tenant), tenant
        assert docs[0].id == "t%d-fix-0" % TENANTS.index(tenant)
        assert recalled(retriever.last_selection) == own_ids(tenant), tenant
        assert intact(pg_database, "langchain_pg_embedding") == rows
    log.assert_clean([*HOSTILE, HOSTILE_TYPE])  # langchain-postgres binds its filter values


async def test_hostile_namespaces_are_bound_on_the_async_path_of_pgvector(pg_database):
    from langchain_postgres import PGVector
    from sqlalchemy.ext.asyncio import create_async_engine

    canary(pg_database)
    engine = create_async_engine(pg_database.url)
    try:
        store = PGVector(HashedNgramEmbeddings(), connection=engine, embedding_length=DIMS)
        from poolsplit_adapters.langchain import PoolSplitRetriever

        await store.aadd_documents(documents(memory()))
        retriever = PoolSplitRetriever.from_vectorstore(store, POOLS_WITH_HOSTILE_TYPE, fetch_k=20, now=NOW)
        for tenant in HOSTILE:
            docs = await retriever.ainvoke(QUERY, namespace=tenant)
            assert sorted(str(d.id) for d in docs) == expected(tenant), tenant
            assert recalled(retriever.last_selection) == own_ids(tenant), tenant
    finally:
        await engine.dispose()
    assert intact(pg_database, "langchain_pg_embedding") == len(memory())


def test_a_nul_namespace_is_a_clear_error_from_pgvector(engine):
    from langchain_postgres import PGVector

    retriever = lc_retriever(PGVector(HashedNgramEmbeddings(), connection=engine, embedding_length=DIMS))
    for bad in ["a\x00b", "lone \ud800"]:
        with pytest.raises(ArgumentError, match="namespace"):
            retriever.invoke(QUERY, namespace=bad)


def test_the_middleware_sink_stores_a_quoted_tenant_and_names_a_nul_field(engine):
    """What the agent writes into PGVector (the middleware's vector-store
    sink): a tenant named with quotes stores and recalls its memory; a NUL
    (Postgres text cannot hold it) is an EntryError naming entry and field,
    and nothing of that batch is written."""
    from langchain_postgres import PGVector

    from poolsplit_adapters import EntryError
    from poolsplit_adapters.langchain import PoolSplitRetriever
    from poolsplit_adapters.langchain.backends import backend_for
    from poolsplit_adapters.settings import AgentMemorySettings

    store = PGVector(HashedNgramEmbeddings(), connection=engine, embedding_length=DIMS)
    sink = backend_for(store, AgentMemorySettings.held_by("test", pools=list(POOLS), now=NOW))
    tenant = HOSTILE[0]
    fix = {"id": "q-fix", "content": "Quote in cents.", "type": "correction", "scope": "always", "namespace": tenant}
    sink.write((), [fix])
    with pytest.raises(EntryError, match="entry 'bad' \\(index 1\\): field 'tags' contains NUL"):
        sink.write(
            (), [{"id": "ok2", "content": "fine", "type": "note"}, {"id": "bad", "content": "x", "tags": ["a\x00"]}]
        )
    assert store.get_by_ids(["ok2", "bad"]) == []
    got = PoolSplitRetriever.from_vectorstore(store, POOLS, now=NOW).invoke(QUERY, namespace=tenant)
    assert [d.id for d in got] == ["q-fix"]
