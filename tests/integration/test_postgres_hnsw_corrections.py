"""Corrections never depend on similarity, even through an HNSW index.

A filtered similarity search through HNSW looks at the ``hnsw.ef_search``
(40) nearest rows and then filters: among 5,000 rows, six corrections that
share no word with the query are not among them. With sequential scans off
(the planner must use the index) a plain filtered search for them finds
fewer than six, while every retriever call, sync and async, over both
frameworks' Postgres stores holds all six: the always-scope fetch is an exact
query by metadata.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List

import pytest
import sqlalchemy
import synth
from hnsw_checks import (
    CORRECTIONS,
    FORCE_INDEX,
    QUERIES,
    assert_every_call_holds_every_correction,
    assert_store_search_misses_corrections,
    fix_ids,
    memory,
    queries,
)
from pg_embeddings import DIMS, HashedNgramEmbeddings, HashedNgramLlamaEmbedding, hashed_ngrams
from pg_server import Database

# -- LangChain: PGVector --------------------------------------------------------------


@pytest.fixture
def loaded(pg_database: Database) -> List[Dict[str, Any]]:
    """5,000 rows through PGVector, then an HNSW index and planner statistics."""
    from langchain_postgres import PGVector

    items = memory()
    engine = sqlalchemy.create_engine(pg_database.url)
    try:
        store = PGVector(HashedNgramEmbeddings(), connection=engine, embedding_length=DIMS)
        store.add_embeddings(
            [e["content"] for e in items],
            [hashed_ngrams(e["content"]) for e in items],
            metadatas=[{k: v for k, v in e.items() if k not in ("content", "id")} for e in items],
            ids=[e["id"] for e in items],
        )
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE INDEX hnsw ON langchain_pg_embedding USING hnsw (embedding vector_cosine_ops)")
            conn.exec_driver_sql("ANALYZE")
    finally:
        engine.dispose()
    return items


@pytest.fixture
def forced(pg_database: Database, loaded: List[Dict[str, Any]]) -> Iterator[Any]:
    """The store on an engine whose sessions cannot scan sequentially."""
    from langchain_postgres import PGVector

    engine = sqlalchemy.create_engine(pg_database.url, connect_args=FORCE_INDEX)
    yield PGVector(HashedNgramEmbeddings(), connection=engine, embedding_length=DIMS)
    engine.dispose()


def test_a_filtered_similarity_search_through_hnsw_misses_corrections(forced, loaded):
    """The premise: the store's own filtered search through the forced index misses corrections."""
    assert_store_search_misses_corrections(forced)


def test_every_call_over_pgvector_with_hnsw_forced_holds_every_correction(forced, loaded):
    assert_every_call_holds_every_correction(forced, loaded)


async def test_every_async_call_over_pgvector_with_hnsw_forced_holds_every_correction(pg_database, loaded):
    from langchain_postgres import PGVector
    from sqlalchemy.ext.asyncio import create_async_engine

    from poolsplit_adapters.langchain import PoolSplitRetriever

    engine = create_async_engine(pg_database.url, connect_args=FORCE_INDEX)
    try:
        store = PGVector(HashedNgramEmbeddings(), connection=engine, embedding_length=DIMS)
        retriever = PoolSplitRetriever.from_vectorstore(store, synth.POOLS, fetch_k=20, now=synth.NOW)
        wanted = fix_ids(loaded)
        for q in queries()[:5]:
            got = await retriever.ainvoke(q)
            assert sorted(d.id for d in got if d.metadata.get("scope") == "always") == wanted
    finally:
        await engine.dispose()


# -- LlamaIndex: PGVectorStore -------------------------------------------------------


async def test_every_call_over_pgvectorstore_with_hnsw_forced_holds_every_correction(pg_database):
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode
    from llama_index.vector_stores.postgres import PGVectorStore

    from poolsplit_adapters.llama_index import PoolSplitRetriever

    items = memory()
    hnsw = {"hnsw_m": 16, "hnsw_ef_construction": 64, "hnsw_ef_search": 40, "hnsw_dist_method": "vector_cosine_ops"}
    store = PGVectorStore(
        connection_string=pg_database.url,
        async_connection_string=pg_database.url,
        table_name="memory",
        embed_dim=DIMS,
        hnsw_kwargs=hnsw,
        create_engine_kwargs={"connect_args": FORCE_INDEX},
    )
    try:
        nodes = [
            TextNode(
                id_=e["id"],
                text=e["content"],
                metadata={k: v for k, v in e.items() if k not in ("content", "id")},
                embedding=hashed_ngrams(e["content"]),
            )
            for e in items
        ]
        store.add(nodes)
        with store._engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE")
        index = VectorStoreIndex.from_vector_store(store, embed_model=HashedNgramLlamaEmbedding())
        # The premise: the store's own filtered similarity search loses
        # corrections (async: its sync path cannot even set hnsw.ef_search
        # under psycopg 3).
        from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

        always = MetadataFilters(filters=[MetadataFilter(key="scope", value="always")])
        plain = index.as_retriever(similarity_top_k=1000, filters=always)
        assert max([len(await plain.aretrieve(q)) for q in queries()]) < CORRECTIONS
        retriever = PoolSplitRetriever.from_vector_store_index(index, synth.POOLS, fetch_k=20, now=synth.NOW)
        wanted = fix_ids(items)
        present = [
            sorted(n.node.node_id for n in retriever.retrieve(q) if n.node.metadata.get("scope") == "always")
            for q in queries()
        ]
        assert present == [wanted] * QUERIES
        for q in queries()[:5]:
            got = await retriever.aretrieve(q)
            assert sorted(n.node.node_id for n in got if n.node.metadata.get("scope") == "always") == wanted
    finally:
        await store.close()
