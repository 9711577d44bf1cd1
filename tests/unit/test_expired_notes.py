"""Every adapter's selection names the entries it dropped as expired in
``notes["expired"]`` (sorted ids), as every store's ``select`` does
(docs/lifecycle.md): written once, in the adapter call's annotate step,
whichever path made the selection."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any, Callable, Dict, List

import pytest
from agent_fakes import ToolCallingFakeModel, scripted_agent, thread
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.memory import InMemoryStore
from llama_index.core import VectorStoreIndex
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.schema import NodeWithScore

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import (
    BaseStoreMemory,
    HashEmbeddings,
    PoolSplitCompressor,
    PoolSplitMemoryMiddleware,
    PoolSplitRetriever,
    WriteConfig,
)
from poolsplit_adapters.langchain.vector_memory import entry_to_document
from poolsplit_adapters.llama_index import PoolSplitNodePostprocessor, poolsplit_memory_blocks
from poolsplit_adapters.llama_index import PoolSplitRetriever as LlamaRetriever
from poolsplit_adapters.llama_index.embeddings import HashEmbedding
from poolsplit_adapters.llama_index.nodes import nodes_from

NOW = datetime.datetime(2026, 7, 7, tzinfo=datetime.timezone.utc)
POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("facts", 200, 5, ("fact",))]
QUERY = "refund freeze"
ENTRIES = [
    {"id": "fix", "type": "correction", "scope": "always", "content": "Amounts in cents."},
    {"id": "e2", "type": "fact", "content": "Refund freeze until Friday.", "expires": "2026-07-03T00:00:00Z"},
    {"id": "k", "type": "fact", "content": "Refunds need two approvals."},
    {
        "id": "e1",
        "type": "correction",
        "scope": "always",
        "content": "Freeze refunds.",
        "expires": "2026-07-01T00:00:00Z",
    },
    {"id": "later", "type": "fact", "content": "Refund freeze next month.", "expires": "2026-08-01T00:00:00Z"},
]


def _documents() -> List[Any]:
    return [entry_to_document(e) for e in ENTRIES]


def _vectorstore() -> Any:
    store = InMemoryVectorStore(HashEmbeddings())
    store.add_documents(_documents())
    return store


def _langchain_retriever() -> Any:
    retriever = PoolSplitRetriever(documents=_documents(), pools=POOLS, now=NOW)
    retriever.invoke(QUERY)
    return retriever.last_selection


def _langchain_store_retriever() -> Any:
    retriever = PoolSplitRetriever.from_vectorstore(_vectorstore(), POOLS, now=NOW)
    retriever.invoke(QUERY)
    return retriever.last_selection


def _langchain_async_store_retriever() -> Any:
    retriever = PoolSplitRetriever.from_vectorstore(_vectorstore(), POOLS, now=NOW)
    asyncio.run(retriever.ainvoke(QUERY))
    return retriever.last_selection


def _langchain_compressor() -> Any:
    compressor = PoolSplitCompressor(pools=POOLS, now=NOW)
    compressor.compress_documents(_documents(), QUERY)
    return compressor.last_selection


def _middleware() -> Any:
    store = InMemoryStore()
    BaseStoreMemory(store, ("memories", "u1")).put_many(ENTRIES)
    middleware = PoolSplitMemoryMiddleware(
        POOLS, namespace=("memories", "u1"), now=NOW, write=WriteConfig(remember=False)
    )
    scripted_agent(middleware, store, model=ToolCallingFakeModel()).invoke(
        {"messages": [("user", QUERY)]}, thread("t1")
    )
    return middleware.settings.last_selection


def _llama_retriever() -> Any:
    retriever = LlamaRetriever(POOLS, nodes_from(ENTRIES), now=NOW)
    retriever.retrieve(QUERY)
    return retriever.last_selection


def _llama_index_retriever() -> Any:
    index = VectorStoreIndex(nodes_from(ENTRIES), embed_model=HashEmbedding())
    retriever = LlamaRetriever.from_vector_store_index(index, POOLS, now=NOW)
    retriever.retrieve(QUERY)
    return retriever.last_selection


def _llama_async_index_retriever() -> Any:
    index = VectorStoreIndex(nodes_from(ENTRIES), embed_model=HashEmbedding())
    retriever = LlamaRetriever.from_vector_store_index(index, POOLS, now=NOW)
    asyncio.run(retriever.aretrieve(QUERY))
    return retriever.last_selection


def _llama_postprocessor() -> Any:
    postprocessor = PoolSplitNodePostprocessor(pools=POOLS, now=NOW)
    postprocessor.postprocess_nodes([NodeWithScore(node=n, score=None) for n in nodes_from(ENTRIES)], query_str=QUERY)
    return postprocessor.last_selection


def _memory_blocks() -> Any:
    corrections, pooled = poolsplit_memory_blocks(ENTRIES, POOLS, now=NOW)
    messages = [ChatMessage(role=MessageRole.USER, content=QUERY)]
    asyncio.run(corrections.aget(messages))
    asyncio.run(pooled.aget(messages))
    return pooled.store.last_selection


ADAPTERS: Dict[str, Callable[[], Any]] = {
    "langchain retriever": _langchain_retriever,
    "langchain retriever over a vector store": _langchain_store_retriever,
    "langchain retriever over a vector store, async": _langchain_async_store_retriever,
    "langchain compressor": _langchain_compressor,
    "middleware": _middleware,
    "llama_index retriever": _llama_retriever,
    "llama_index retriever over an index": _llama_index_retriever,
    "llama_index retriever over an index, async": _llama_async_index_retriever,
    "llama_index postprocessor": _llama_postprocessor,
    "memory blocks": _memory_blocks,
}


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_every_adapter_names_the_expired_ids_in_its_notes(adapter: str) -> None:
    selection = ADAPTERS[adapter]()
    assert sorted(c.entry["id"] for c in selection.chosen) == ["fix", "k", "later"]
    assert sorted(d.entry["id"] for d in selection.dropped if d.reason.value == "expired") == ["e1", "e2"]
    assert selection.notes["expired"] == ["e1", "e2"]
