"""Over a Postgres vector store the sync retriever runs its plan's searches
at once (each a round trip on its own pooled connection), so a call costs
its slowest search, not their sum, and returns exactly what it returned
with the searches in turn.

Shown without a clock: every similarity search of the plan waits at a
barrier for all the others, so run in turn the first would wait alone and
break it.
"""

from __future__ import annotations

import threading
from typing import Any, Iterator

import pytest
import sqlalchemy
from pg_corpus import NOW, POOLS, QUERY, documents, entries
from pg_embeddings import DIMS, HashedNgramEmbeddings
from pg_server import Database

from poolsplit_adapters.recall import RecallPlan

PGVector = pytest.importorskip("langchain_postgres").PGVector


class MeetingPGVector(PGVector):  # type: ignore[misc, valid-type]
    """The real PGVector; while :attr:`barrier` is set, each session the
    plan's searches open (each search is our own statement on its own
    session) waits there for the plan's other searches."""

    barrier: Any = None

    def _make_sync_session(self) -> Any:
        if self.barrier is not None:
            self.barrier.wait(timeout=20)
        return super()._make_sync_session()


@pytest.fixture
def engine(pg_database: Database) -> Iterator[sqlalchemy.Engine]:
    engine = sqlalchemy.create_engine(pg_database.url)
    yield engine
    engine.dispose()


def test_the_plans_searches_run_at_once_and_return_what_they_return_in_turn(engine):
    from poolsplit_adapters.langchain import PoolSplitRetriever

    store = MeetingPGVector(HashedNgramEmbeddings(), connection=engine, embedding_length=DIMS)
    store.add_documents(documents(entries("u1") + entries("u2", prefix="u2-")))
    retriever = PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=20, now=NOW)
    in_turn = [d.id for d in retriever.invoke(QUERY, namespace="u1")]  # no barrier yet: one after another
    store.barrier = threading.Barrier(len(RecallPlan(POOLS, fetch_k=20).searches()))
    at_once = [d.id for d in retriever.invoke(QUERY, namespace="u1")]
    assert not store.barrier.broken and store.barrier.n_waiting == 0
    assert at_once == in_turn and at_once[0] == "fix-0"


def test_each_searchs_texts_are_counted_on_its_own_thread_once_and_the_result_is_unchanged(engine):
    """Issue 42 item 9: the selection counted and analysed every new
    candidate after the slowest search; now each search's thread warms
    the call's caches as its rows arrive. Each text is tokenised once, off
    the caller's thread, and the call returns what a counter that is not
    warmed (a plain function, same counts) gives."""
    from poolsplit_adapters.langchain import PoolSplitRetriever
    from poolsplit_adapters.tokens import TokenizerCounter

    threads: list = []

    def words(text: str) -> list:
        threads.append(threading.current_thread().name)
        return text.split()

    store = PGVector(HashedNgramEmbeddings(), connection=engine, embedding_length=DIMS)
    store.add_documents(documents(entries("u1") + entries("u2", prefix="u2-")))
    counter = TokenizerCounter(words)
    warmed = PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=20, now=NOW, token_counter=counter)
    plain = PoolSplitRetriever.from_vectorstore(
        store, POOLS, fetch_k=20, now=NOW, token_counter=lambda text: len(text.split())
    )
    got = [d.id for d in warmed.invoke(QUERY, namespace="u1")]
    assert got == [d.id for d in plain.invoke(QUERY, namespace="u1")] and got[0] == "fix-0"
    assert counter.tokenized == len(threads) == len(set(e["content"] for e in entries("u1")))
    assert all(name.startswith("poolsplit-search") for name in threads)


def test_llama_indexs_pgvectorstore_searches_run_at_once_too(pg_database):
    postgres = pytest.importorskip("llama_index.vector_stores.postgres")
    from llama_index.core import VectorStoreIndex
    from pg_embeddings import HashedNgramLlamaEmbedding

    from poolsplit_adapters.llama_index import PoolSplitRetriever
    from poolsplit_adapters.llama_index.nodes import nodes_from

    class MeetingPGVectorStore(postgres.PGVectorStore):  # type: ignore[misc, name-defined]
        """The real store; while ``barrier`` is set, each similarity query
        the plan builds waits there for the plan's other searches."""

        barrier: Any = None

        def _build_query(self, *args: Any, **kwargs: Any) -> Any:
            if self.barrier is not None:
                self.barrier.wait(timeout=20)
            return super()._build_query(*args, **kwargs)

    store = MeetingPGVectorStore(
        connection_string=pg_database.url, async_connection_string=pg_database.url, table_name="memory", embed_dim=DIMS
    )
    try:
        nodes = nodes_from(entries("u1") + entries("u2", prefix="u2-"))
        for node in nodes:
            node.excluded_embed_metadata_keys = list(node.metadata)
        index = VectorStoreIndex.from_vector_store(store, embed_model=HashedNgramLlamaEmbedding())
        index.insert_nodes(nodes)
        retriever = PoolSplitRetriever.from_vector_store_index(index, POOLS, fetch_k=20, now=NOW)
        in_turn = [n.node.node_id for n in retriever.retrieve(QUERY)]
        similarity = [s for s in RecallPlan(POOLS, fetch_k=20).searches() if not s.always]
        store.barrier = threading.Barrier(len(similarity))
        at_once = [n.node.node_id for n in retriever.retrieve(QUERY)]
        assert not store.barrier.broken
        assert at_once == in_turn and at_once[0] == "fix-0"
    finally:
        store._engine.dispose()
