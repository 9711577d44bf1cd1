"""PoolSplitRetriever over LlamaIndex's ``PGVectorStore`` on a real Postgres +
pgvector (started by the ``pg_server`` fixture), unchanged: per-pool
``MetadataFilters`` with ``IN`` are pushed down into SQL by the store."""

from __future__ import annotations

from typing import Any, Iterator, List

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import NodeWithScore
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters
from pg_corpus import NOW, POOLS, QUERY, entries
from pg_embeddings import DIMS, HashedNgramLlamaEmbedding
from pg_server import Database

from poolsplit_adapters import Visibility
from poolsplit_adapters.llama_index import PoolSplitRetriever
from poolsplit_adapters.llama_index.nodes import nodes_from

postgres = pytest.importorskip("llama_index.vector_stores.postgres")
PGVectorStore = postgres.PGVectorStore


def pg_store(database: Database, table: str = "memory") -> Any:
    # One URL for both engines: SQLAlchemy picks psycopg's async dialect for
    # the async one, so no second driver is involved.
    return PGVectorStore(
        connection_string=database.url, async_connection_string=database.url, table_name=table, embed_dim=DIMS
    )


@pytest.fixture
def store(pg_database: Database) -> Iterator[Any]:
    store = pg_store(pg_database)
    yield store
    if store._engine is not None:  # the store's own close() is async-only
        store._engine.dispose()


def index_of(store: Any, items: List[dict]) -> VectorStoreIndex:
    """Nodes embedded on their text alone: by default LlamaIndex embeds the
    metadata too ("created: ...", "type: ..."), which would let dates and
    type names move similarity."""
    nodes = nodes_from(items)
    for node in nodes:
        node.excluded_embed_metadata_keys = list(node.metadata)
    index = VectorStoreIndex.from_vector_store(store, embed_model=HashedNgramLlamaEmbedding())
    index.insert_nodes(nodes)
    return index


def ids(nodes: List[NodeWithScore]) -> List[str]:
    return [n.node.node_id for n in nodes]


def test_plain_top_k_over_pgvectorstore_sees_only_the_flood(store):
    index = index_of(store, entries())
    top = index.as_retriever(similarity_top_k=9).retrieve(QUERY)
    assert ids(top) == ["note-%02d" % n for n in range(9)]  # pg_corpus orders notes strictly by similarity


def test_pool_split_over_pgvectorstore_reaches_every_pool_and_loads_corrections_first(store):
    memory = entries()
    retriever = PoolSplitRetriever.from_vector_store_index(index_of(store, memory), POOLS, fetch_k=20, now=NOW)
    got = retriever.retrieve(QUERY)
    # fetch_k covers every pool: the selection over the whole memory in-process.
    oracle = PoolSplitRetriever(POOLS, nodes=nodes_from(memory), now=NOW).retrieve(QUERY)
    assert ids(got) == ids(oracle)
    assert ids(got)[:3] == ["fix-0", "fix-1", "fix-2"]
    assert [n.node.metadata["poolsplit"]["pool"] for n in got[3:]] == ["content"] * 6 + ["skills"] * 2 + ["growth"]
    # Metadata made the round trip through Postgres intact.
    by_id = {e["id"]: e for e in memory}
    for n in got:
        stored = {k: v for k, v in n.node.metadata.items() if k != "poolsplit"}
        assert stored == {k: v for k, v in by_id[n.node.node_id].items() if k not in ("id", "content")}
        assert n.node.get_content() == by_id[n.node.node_id]["content"]


def test_each_pool_recalls_its_own_top_fetch_k_from_pgvectorstore(store):
    index = index_of(store, entries(notes=30))
    retriever = PoolSplitRetriever.from_vector_store_index(index, POOLS, fetch_k=4, max_fetch_k=4, now=NOW)
    got = retriever.retrieve(QUERY)
    content = [n.node.node_id for n in got if n.node.metadata["poolsplit"]["pool"] == "content"]
    assert sorted(content) == ["note-00", "note-01", "note-02", "note-03"]  # no growth: max_fetch_k=fetch_k
    assert ids(got)[:3] == ["fix-0", "fix-1", "fix-2"]
    assert {n.node.metadata["type"] for n in got} == {"correction", "note", "skill", "growth"}
    # Growing (the default), the content pool fills its 6-entry cap from the 30 notes.
    grown, selection = PoolSplitRetriever.from_vector_store_index(
        index, POOLS, fetch_k=4, now=NOW
    ).retrieve_with_selection(QUERY)
    assert len([n for n in grown if n.node.metadata["poolsplit"]["pool"] == "content"]) == 6
    assert ids(grown)[:3] == ["fix-0", "fix-1", "fix-2"]
    assert selection.notes["recall"]["rounds"] == 2


def test_in_filters_are_answered_by_pgvectorstore(store):
    index = index_of(store, entries("ops") + entries("lab", prefix="lab-"))

    def found(*filters: MetadataFilter) -> List[str]:
        flt = MetadataFilters(filters=list(filters))
        return sorted(ids(index.as_retriever(similarity_top_k=100, filters=flt).retrieve(QUERY)))

    types = MetadataFilter(key="type", value=["skill", "growth"], operator=FilterOperator.IN)
    lab = MetadataFilter(key="namespace", value=["lab"], operator=FilterOperator.IN)
    always = MetadataFilter(key="scope", value="always", operator=FilterOperator.EQ)
    assert found(types, lab) == ["lab-growth-0", "lab-growth-1", "lab-skill-0", "lab-skill-1", "lab-skill-2"]
    assert found(always) == ["fix-0", "fix-1", "fix-2", "lab-fix-0", "lab-fix-1", "lab-fix-2"]


def test_namespace_is_pushed_down_to_pgvectorstore(store):
    big = entries("big", prefix="big-", notes=30) + entries("big", prefix="big2-", notes=0)
    for entry in big:
        entry["content"] = "checkout deploy staging finish: " + entry["content"]
    small = entries("small", prefix="small-", notes=3)
    index = index_of(store, big + small)
    view = Visibility(namespace="small")
    got = PoolSplitRetriever.from_vector_store_index(index, POOLS, fetch_k=3, now=NOW, visibility=view).retrieve(QUERY)
    oracle = PoolSplitRetriever(POOLS, nodes=nodes_from(big + small), now=NOW, visibility=view).retrieve(QUERY)
    assert ids(got) == ids(oracle)
    assert {n.node.metadata["namespace"] for n in got} == {"small"}
    assert {n.node.metadata["type"] for n in got} == {"correction", "note", "skill", "growth"}


async def test_async_retrieval_gives_the_sync_result(pg_database):
    store = pg_store(pg_database)
    try:
        retriever = PoolSplitRetriever.from_vector_store_index(index_of(store, entries()), POOLS, now=NOW)
        assert ids(await retriever.aretrieve(QUERY)) == ids(retriever.retrieve(QUERY))
    finally:
        await store.close()


def test_a_quote_in_a_namespace_cannot_widen_recall_into_other_tenants(store):
    """PGVectorStore writes ``IN`` values into its SQL text unescaped; the
    retriever never hands it one (the values are bound parameters), so a
    namespace holding a quote matches nothing but itself: no foreign row is
    even recalled."""
    index = index_of(store, entries("small", prefix="small-", notes=3) + entries("big", prefix="big-"))
    hostile = Visibility(namespace="small') OR ('a'='a")
    retriever = PoolSplitRetriever.from_vector_store_index(index, POOLS, fetch_k=5, now=NOW, visibility=hostile)
    assert retriever.retrieve(QUERY) == []
    assert retriever.last_selection is not None
    assert retriever.last_selection.dropped == []
