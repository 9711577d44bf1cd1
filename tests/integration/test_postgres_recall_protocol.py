"""The recall protocol's Postgres searchers on the real server: the query
set of ``tests/unit/test_recall_protocol.py`` (``recall_fixture``) through
`RecallSearcher` (prepare once, run; and the async twins) gives the same
exact ranking over LangGraph's ``PostgresStore(index=)`` (our statements on
its tables), LangChain's ``PGVector`` (through ``from_vectorstore``) and
LlamaIndex's ``PGVectorStore`` (through ``from_vector_store_index``), each
score the store's: a cosine, or for ``PGVector`` its cosine distance."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Dict, Iterator, List

import pytest
import recall_fixture as fx
import sqlalchemy
from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from pg_server import Database

from poolsplit_adapters import Pool
from poolsplit_adapters.stores.recall_protocol import RecallSearcher

pytest.importorskip("langgraph.store.postgres")
langchain_postgres = pytest.importorskip("langchain_postgres")
llama_postgres = pytest.importorskip("llama_index.vector_stores.postgres")

from langgraph.store.postgres import PostgresStore  # noqa: E402
from llama_index.core import StorageContext, VectorStoreIndex  # noqa: E402
from llama_index.core.schema import QueryBundle  # noqa: E402

from poolsplit_adapters.langchain import PoolSplitRetriever as LangChainRetriever  # noqa: E402
from poolsplit_adapters.llama_index import PoolSplitRetriever as LlamaIndexRetriever  # noqa: E402
from poolsplit_adapters.stores.langgraph.postgres_store_search import PostgresStoreSearch  # noqa: E402
from poolsplit_adapters.stores.langgraph.store import store_searcher  # noqa: E402
from poolsplit_adapters.stores.vectorstores.langchain_search import DocumentQuery  # noqa: E402

POOLS = [Pool("all", 1000, 10)]


@pytest.fixture
def postgres_store(pg_database: Database) -> Iterator[fx.Served]:
    index = {"dims": fx.DIMS, "embed": fx.langchain_embeddings(), "fields": ["content"]}
    with PostgresStore.from_conn_string(pg_database.conninfo, index=index) as store:
        store.setup()
        for namespace, key, value in fx.store_items():
            store.put(namespace, key, value)
        searcher = store_searcher(store)
        assert isinstance(searcher, PostgresStoreSearch)
        yield fx.Served(searcher, lambda text: text, lambda text: text, lambda item: (item.key, item.score))


@pytest.fixture
def pgvector(pg_database: Database) -> Iterator[fx.Served]:
    engine = sqlalchemy.create_engine(pg_database.url)
    store = langchain_postgres.PGVector(fx.langchain_embeddings(), connection=engine, embedding_length=fx.DIMS)
    store.add_documents(fx.documents())
    sync, run = (
        CallbackManagerForRetrieverRun.get_noop_manager(),
        AsyncCallbackManagerForRetrieverRun.get_noop_manager(),
    )
    try:
        yield fx.Served(
            LangChainRetriever.from_vectorstore(store, POOLS, store_metric="cosine_distance")._recall,
            lambda text: DocumentQuery(text, sync),
            lambda text: DocumentQuery(text, run),
            lambda hit: (hit[0].id, None if hit[1] is None else 1.0 - hit[1]),  # its score is the distance
        )
    finally:
        engine.dispose()


@pytest.fixture
def pg_vector_store(pg_database: Database) -> Iterator[fx.Served]:
    store = llama_postgres.PGVectorStore(
        connection_string=pg_database.url,
        async_connection_string=pg_database.url,
        table_name="memory",
        embed_dim=fx.DIMS,
        hnsw_kwargs={"hnsw_ef_search": 40, "hnsw_dist_method": "vector_cosine_ops"},
    )
    context = StorageContext.from_defaults(vector_store=store)
    index = VectorStoreIndex(fx.nodes(), storage_context=context, embed_model=fx.llama_index_embedding())
    try:
        yield fx.Served(
            LlamaIndexRetriever.from_vector_store_index(index, POOLS)._recall,
            QueryBundle,
            QueryBundle,
            lambda n: (n.node.node_id, n.score),
        )
    finally:
        if store._engine is not None:  # the store's own close() is async-only
            store._engine.dispose()


SEARCHERS = ["postgres_store", "pgvector", "pg_vector_store"]


#: Scores through pgvector: float4 vectors, equal to the hand-worked cosines to six places.
DIGITS = 6


@pytest.mark.parametrize("text", sorted(fx.EXPECTED))
@pytest.mark.parametrize("name", SEARCHERS)
def test_one_query_set_gives_each_postgres_searcher_the_same_exact_ranking(
    name: str, text: str, request: pytest.FixtureRequest
):
    served: fx.Served = request.getfixturevalue(name)
    searcher = served.searcher
    assert isinstance(searcher, RecallSearcher) and all(searcher.serves(s) for s in fx.SEARCHES)
    query = searcher.prepare(served.query(text))
    assert fx.ranked(served, searcher.run(fx.SEARCHES, query), DIGITS) == fx.expected(text, DIGITS)
    assert searcher.query_vector(query) == fx.counted(text)


def arun_all(searcher: Any, aquery: Callable[[str], Any]) -> Any:
    """A coroutine: each query text's hits, through the async twins."""

    async def run() -> Dict[str, List[List[Any]]]:
        return {
            t: list(await searcher.arun(fx.SEARCHES, await searcher.aprepare(aquery(t)))) for t in sorted(fx.EXPECTED)
        }

    return run()


@pytest.mark.parametrize("name", ["postgres_store", "pg_vector_store"])
def test_the_async_twins_give_the_same_ranking_on_postgres(name: str, request: pytest.FixtureRequest):
    served: fx.Served = request.getfixturevalue(name)
    found = asyncio.run(arun_all(served.searcher, served.aquery))
    assert {t: fx.ranked(served, hits, DIGITS) for t, hits in found.items()} == {
        t: fx.expected(t, DIGITS) for t in fx.EXPECTED
    }


def test_the_async_twins_give_the_same_ranking_on_an_async_pgvector(pg_database: Database, pgvector: fx.Served):
    """``PGVector`` searches asynchronously only in its async mode (its own
    async engine): the documents ``pgvector`` wrote, searched that way."""
    from sqlalchemy.ext.asyncio import create_async_engine

    async def run() -> Dict[str, List[List[Any]]]:
        engine = create_async_engine(pg_database.url)
        try:
            store = langchain_postgres.PGVector(
                fx.langchain_embeddings(), connection=engine, embedding_length=fx.DIMS, async_mode=True
            )
            searcher = LangChainRetriever.from_vectorstore(store, POOLS, store_metric="cosine_distance")._recall
            return dict(await arun_all(searcher, pgvector.aquery))
        finally:
            await engine.dispose()

    found = asyncio.run(run())
    assert {t: fx.ranked(pgvector, hits, DIGITS) for t, hits in found.items()} == {
        t: fx.expected(t, DIGITS) for t in fx.EXPECTED
    }
