"""One recall protocol for every in-process store searcher: the same
searches and query through `RecallSearcher` (prepare once, run, and their
async twins) give the same exact ranking and cosines over LangGraph's
``InMemoryStore(index=)``, LangChain's ``InMemoryVectorStore`` (through
``from_vectorstore``) and LlamaIndex's in-memory ``VectorStoreIndex``
(through ``from_vector_store_index``). LangGraph's ``SqliteStore`` has no
searcher of ours (its own search answers). The Postgres searchers take the
same set in ``tests/integration/test_postgres_recall_protocol.py``."""

from __future__ import annotations

import asyncio
from typing import Any, List

import pytest
from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import QueryBundle
from recall_fixture import (
    DIMS,
    EXPECTED,
    LABEL,
    SEARCHES,
    Served,
    counted,
    documents,
    expected,
    langchain_embeddings,
    llama_index_embedding,
    nodes,
    ranked,
    store_items,
)

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import PoolSplitRetriever as LangChainRetriever
from poolsplit_adapters.llama_index import PoolSplitRetriever as LlamaIndexRetriever
from poolsplit_adapters.recall import Search
from poolsplit_adapters.stores.langgraph.memory_store_search import InMemoryStoreSearch
from poolsplit_adapters.stores.langgraph.store import store_searcher
from poolsplit_adapters.stores.recall_protocol import RecallSearcher
from poolsplit_adapters.stores.vectorstores.langchain_search import DocumentQuery

POOLS = [Pool("all", 1000, 10)]


def in_memory_store() -> Served:
    store = InMemoryStore(index={"dims": DIMS, "embed": langchain_embeddings(), "fields": ["content"]})
    for namespace, key, value in store_items():
        store.put(namespace, key, value)
    searcher = store_searcher(store)
    assert isinstance(searcher, InMemoryStoreSearch)
    return Served(searcher, lambda text: text, lambda text: text, lambda item: (item.key, item.score))


def langchain_vector_store() -> Served:
    store = InMemoryVectorStore(langchain_embeddings())
    store.add_documents(documents())
    searcher = LangChainRetriever.from_vectorstore(store, POOLS)._recall
    sync, run = (
        CallbackManagerForRetrieverRun.get_noop_manager(),
        AsyncCallbackManagerForRetrieverRun.get_noop_manager(),
    )
    return Served(
        searcher,
        lambda text: DocumentQuery(text, sync),
        lambda text: DocumentQuery(text, run),
        lambda hit: (hit[0].id, hit[1]),
        frozenset({"fact", "skill", "note"}),
    )


def llama_index_vector_index() -> Served:
    index = VectorStoreIndex(nodes(), embed_model=llama_index_embedding())
    searcher = LlamaIndexRetriever.from_vector_store_index(index, POOLS)._recall
    return Served(
        searcher, QueryBundle, QueryBundle, lambda n: (n.node.node_id, n.score), frozenset({"fact", "skill", "note"})
    )


SEARCHERS = {
    "InMemoryStore": in_memory_store,
    "InMemoryVectorStore": langchain_vector_store,
    "VectorStoreIndex": llama_index_vector_index,
}


#: Scores in memory: float64 cosines, equal to the hand-worked ones to rounding.
DIGITS = 9


@pytest.mark.parametrize("name", sorted(SEARCHERS))
def test_every_in_process_searcher_is_a_recall_searcher(name: str):
    served = SEARCHERS[name]()
    assert isinstance(served.searcher, RecallSearcher)
    assert all(served.searcher.serves(search) for search in SEARCHES)
    assert served.searcher.entry_types() == served.types


@pytest.mark.parametrize("text", sorted(EXPECTED))
@pytest.mark.parametrize("name", sorted(SEARCHERS))
def test_one_query_set_gives_each_searcher_the_same_exact_ranking(name: str, text: str):
    served = SEARCHERS[name]()
    searcher = served.searcher
    query = searcher.prepare(served.query(text))
    assert ranked(served, searcher.run(SEARCHES, query), DIGITS) == expected(text, DIGITS)
    assert searcher.query_vector(query) == counted(text)  # the one vector a scorer may reuse


@pytest.mark.parametrize("text", sorted(EXPECTED))
@pytest.mark.parametrize("name", sorted(SEARCHERS))
def test_the_async_twins_give_the_same_ranking(name: str, text: str):
    served = SEARCHERS[name]()
    searcher = served.searcher

    async def run() -> List[List[Any]]:
        query = await searcher.aprepare(served.aquery(text))
        return list(await searcher.arun(SEARCHES, query))

    assert ranked(served, asyncio.run(run()), DIGITS) == expected(text, DIGITS)


def test_a_searcher_refuses_a_search_it_does_not_serve_before_searching():
    """The LangGraph searcher cannot say the always-scope fetch (corrections
    are read by filter); the vector stores' searchers embed one query a
    call, so a search with its own text is not theirs. Each refuses it,
    naming it, instead of answering it wrongly."""
    always = Search("always", 10, always=True, namespaces=(LABEL,))
    own_text = Search("near", 2, types=("fact",), namespaces=(LABEL,), query="refund cents")
    for name, refused in (("InMemoryStore", always), ("InMemoryVectorStore", own_text), ("VectorStoreIndex", own_text)):
        served = SEARCHERS[name]()
        assert not served.searcher.serves(refused)
        with pytest.raises(ValueError, match="does not serve the search"):
            served.searcher.run([SEARCHES[0], refused], served.searcher.prepare(served.query("deploy staging")))


def test_the_langgraph_searcher_serves_a_search_with_its_own_text():
    """A write batch's near-duplicate searches carry their own texts: one
    run answers each for its own."""
    served = in_memory_store()
    own = Search("near", 3, types=("fact",), namespaces=(LABEL,), query="refund cents")
    [deploy, refund] = served.searcher.run([SEARCHES[0], own], "deploy staging")
    assert [served.hit(i)[0] for i in deploy] == ["f1", "f2", "f3"]
    assert [served.hit(i)[0] for i in refund] == ["f3", "f2", "f1"]


def test_sqlite_store_has_no_searcher_of_ours():
    """Its ranked searches are its own (sqlite-vec's), as before the protocol."""
    with SqliteStore.from_conn_string(":memory:", index={"dims": DIMS, "embed": langchain_embeddings()}) as store:
        assert store_searcher(store) is None
