"""Vector recall over a LangChain vector store for a query that embeds to
the zero vector: an empty message, "ok", a single letter, an image alone
(`HashEmbeddings` counts no word there). ``InMemoryVectorStore``'s cosine of
it is NaN for every row, and LangChain then raised "NaN values found, please
remove the NaN values and try again" from inside the store: the retriever
failed, and so did every agent turn over the store whose user wrote "ok".
Now such a query recalls like any other and the selection ranks without
similarity (as the LlamaIndex twin does, `test_llama_index_degenerate_vectors`)."""

from __future__ import annotations

import datetime
from typing import List

import pytest
from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.checkpoint.memory import InMemorySaver

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import (
    HashEmbeddings,
    PoolSplitMemoryMiddleware,
    PoolSplitRetriever,
    WriteConfig,
)
from poolsplit_adapters.langchain.testing import ToolCallingFakeChatModel
from poolsplit_adapters.memory import WriteGate

NOW = datetime.datetime(2026, 7, 7)
POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("notes", 300, 4, ("note",)), Pool("skills", 100, 1, ("skill",))]
SILENT = ["", "   ", "ok", "a b", "\u200b"]  # no word HashEmbeddings counts: the zero vector


def _docs(**metadata: str) -> List[Document]:
    docs = [
        Document("Never force-push to main.", id="fix-1", metadata={"type": "correction", "scope": "always"}),
        Document("Deploy finished on staging.", id="n1", metadata={"type": "note", "base_priority": 9}),
        Document("Release notes drafted.", id="n2", metadata={"type": "note", "base_priority": 3}),
        Document("Bisect with git bisect run.", id="s1", metadata={"type": "skill", "base_priority": 2}),
    ]
    return [Document(d.page_content, id=d.id, metadata={**d.metadata, **metadata}) for d in docs]


def _store(**metadata: str) -> InMemoryVectorStore:
    store = InMemoryVectorStore(HashEmbeddings())
    store.add_documents(_docs(**metadata))
    return store


@pytest.mark.parametrize("query", SILENT)
@pytest.mark.parametrize("scoring", [{}, {"embeddings": HashEmbeddings()}], ids=["default", "embeddings"])
async def test_a_query_that_embeds_to_the_zero_vector_recalls_from_a_vector_store(query, scoring):
    assert not any(HashEmbeddings().embed_query(query))
    retriever = PoolSplitRetriever.from_vectorstore(_store(), POOLS, now=NOW, **scoring)
    alone = PoolSplitRetriever(documents=_docs(), pools=POOLS, now=NOW, **scoring)
    expected = [d.id for d in alone.invoke(query)]
    assert expected == ["fix-1", "n1", "n2", "s1"]
    assert [d.id for d in retriever.invoke(query)] == expected
    assert [d.id for d in await retriever.ainvoke(query)] == expected
    assert [[d.id for d in found] for found in retriever.batch([query, "deploy"])] == [expected, expected]


@pytest.mark.parametrize("scoring", [{}, {"embeddings": HashEmbeddings()}], ids=["default", "embeddings"])
async def test_a_pool_whose_every_document_embeds_to_the_zero_vector_recalls_them(scoring):
    # The notes pool's search keeps two rows, both "..."-like: their cosine
    # with any query is NaN, and LangChain raised as for a silent query.
    docs = [
        Document("Never force-push to main.", id="fix-1", metadata={"type": "correction", "scope": "always"}),
        Document("ok", id="n1", metadata={"type": "note", "base_priority": 9}),
        Document("...", id="n2", metadata={"type": "note", "base_priority": 3}),
        Document("Bisect with git bisect run.", id="s1", metadata={"type": "skill"}),
    ]
    store = InMemoryVectorStore(HashEmbeddings())
    store.add_documents(docs)
    retriever = PoolSplitRetriever.from_vectorstore(store, POOLS, now=NOW, **scoring)
    expected = [d.id for d in PoolSplitRetriever(documents=docs, pools=POOLS, now=NOW, **scoring).invoke("bisect")]
    assert expected == ["fix-1", "n1", "n2", "s1"]
    assert [d.id for d in retriever.invoke("bisect")] == expected
    assert [d.id for d in await retriever.ainvoke("bisect")] == expected
    assert [d.id for d in retriever.invoke("")] == expected  # both: no cosine anywhere


async def test_an_agent_turn_of_ok_over_a_vector_store_recalls_sync_and_async():
    memory = PoolSplitMemoryMiddleware(
        POOLS,
        namespace=("memories", "ana"),
        store=_store(namespace="memories.ana"),
        now=NOW,
        write=WriteConfig(remember=False, write_gate=WriteGate(standing=None)),
    )
    agent = create_agent(
        ToolCallingFakeChatModel(messages=iter(["Done."] * 4)), middleware=[memory], checkpointer=InMemorySaver()
    )
    agent.invoke({"messages": [HumanMessage("ok")]}, {"configurable": {"thread_id": "t1"}})
    assert [c.entry["id"] for c in memory.last_selection.chosen] == ["fix-1", "n1", "n2", "s1"]
    await agent.ainvoke({"messages": [HumanMessage("")]}, {"configurable": {"thread_id": "t2"}})
    assert [c.entry["id"] for c in memory.last_selection.chosen] == ["fix-1", "n1", "n2", "s1"]
