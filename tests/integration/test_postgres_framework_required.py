"""A release of langchain-postgres or LangGraph that moves a private name a
Postgres call is made of: the call stops before any statement with a
`FrameworkInternalsError` naming the distribution, its installed version,
the name and the tested range (the LlamaIndex cases, which need no server
to build the store, are in tests/unit/test_framework_required.py).

Simulated on the real class or store: the name taken away for the test.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
from typing import Iterator

import pytest
import sqlalchemy
from pg_corpus import NOW, POOLS, QUERY, documents, entries
from pg_embeddings import DIMS, HashedNgramEmbeddings
from pg_server import Database

from poolsplit_adapters.langchain import PoolSplitRetriever
from poolsplit_adapters.stores.internals import TESTED, FrameworkInternalsError
from poolsplit_adapters.stores.postgres import ensure_filter_index, wait_on_store_loop

langchain_postgres = pytest.importorskip("langchain_postgres")
postgres_aio = pytest.importorskip("langgraph.store.postgres.aio")


def _says(error: BaseException, distribution: str, name: str) -> None:
    low, high = TESTED[distribution]
    text = str(error)
    assert text.startswith("%s %s: " % (distribution, importlib.metadata.version(distribution)))
    assert name in text and "tested with %s %s to %s" % (distribution, low, high) in text


@pytest.fixture
def engine(pg_database: Database) -> Iterator[sqlalchemy.Engine]:
    engine = sqlalchemy.create_engine(pg_database.url)
    yield engine
    engine.dispose()


def test_a_pgvector_without_its_session_maker_is_refused_by_name(engine, monkeypatch: pytest.MonkeyPatch):
    store = langchain_postgres.PGVector(HashedNgramEmbeddings(), connection=engine, embedding_length=DIMS)
    store.add_documents(documents(entries("u1")))
    retriever = PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=20, now=NOW)
    assert retriever.invoke(QUERY, namespace="u1")[0].id == "fix-0"  # as released
    monkeypatch.delattr(langchain_postgres.PGVector, "_make_sync_session")
    with pytest.raises(FrameworkInternalsError) as caught:
        retriever.invoke(QUERY, namespace="u1")
    _says(caught.value, "langchain-postgres", "PGVector._make_sync_session")
    with pytest.raises(FrameworkInternalsError) as caught:
        ensure_filter_index(store)
    _says(caught.value, "langchain-postgres", "PGVector._make_sync_session")


async def test_an_async_postgres_store_without_its_loop_is_refused_by_name(
    pg_database: Database, monkeypatch: pytest.MonkeyPatch
):
    from langgraph.store.base.batch import AsyncBatchedBaseStore

    async def one() -> int:
        return 1

    async with postgres_aio.AsyncPostgresStore.from_conn_string(pg_database.conninfo) as store:
        await store.setup()
        assert await asyncio.to_thread(wait_on_store_loop, store, one()) == 1  # as released
        monkeypatch.delattr(AsyncBatchedBaseStore, "_loop")  # the simulated release: no such slot
        work = one()
        try:
            with pytest.raises(FrameworkInternalsError) as caught:
                await asyncio.to_thread(wait_on_store_loop, store, work)
        finally:
            work.close()
            monkeypatch.undo()  # the store's own batches run on it until it closes
    _says(caught.value, "langgraph-checkpoint", "AsyncPostgresStore._loop")
