"""Issue 19 item 4 through the adapters: ``pools="auto"`` shares the budget
among the types the source actually holds (read from documents, nodes,
``InMemoryVectorStore`` and ``SimpleVectorStore``, or declared with
``entry_types=``), never 10% for every type the presets do not name."""

from __future__ import annotations

import datetime
from typing import Any, List

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import TextNode

from poolsplit_adapters.checks import ArgumentError
from poolsplit_adapters.langchain import HashEmbeddings, PoolSplitCompressor, capture_selections
from poolsplit_adapters.langchain import PoolSplitRetriever as LangChainRetriever
from poolsplit_adapters.llama_index import PoolSplitRetriever as LlamaRetriever

NOW = datetime.datetime(2026, 11, 20, 9)
TOTALS = {"total_tokens": 1024, "total_entries": 40}


def words(text: str) -> int:
    return max(1, len(text.split()))


def rows() -> List[dict[str, Any]]:
    made: List[dict[str, Any]] = [
        {"id": "fix", "type": "correction", "scope": "always", "content": "Quote amounts in integer cents."}
    ]
    made += [{"id": "turn-%d" % n, "type": "turn", "content": "user asked about refund %d" % n} for n in range(30)]
    made += [{"id": "event-%d" % n, "type": "event", "content": "refund %d was issued" % n} for n in range(30)]
    return made


def documents() -> List[Document]:
    return [Document(page_content=r["content"], id=r["id"], metadata={k: r[k] for k in r if k not in ("id", "content")}) for r in rows()]  # fmt: skip


def budgets(selection: Any) -> dict[str, tuple[float, float]]:
    return {name: (s.max_tokens, s.max_entries) for name, s in selection.stats.items()}


# Implementation (the fallback task): neither type is named, so each weighs the mean collection: half each.
TURNS_AND_EVENTS = {"corrections": (0, 0), "event": (512, 20), "turn": (512, 20)}


def test_langchain_documents_share_the_budget_among_their_own_types():
    retriever = LangChainRetriever(documents=documents(), pools="auto", token_counter=words, now=NOW, **TOTALS)
    with capture_selections() as mine:
        got = retriever.invoke("what refunds were issued")
    assert budgets(mine[0]) == TURNS_AND_EVENTS
    assert got[0].id == "fix"
    # Every one of the 60 (4 tokens each) fits: the whole budget was for them.
    assert sum(1 for d in got if d.metadata["type"] in ("turn", "event")) == 40


def test_langchain_in_memory_vector_store_types_are_read_per_call():
    store = InMemoryVectorStore(HashEmbeddings())
    store.add_documents(documents())
    retriever = LangChainRetriever.from_vectorstore(store, "auto", token_counter=words, now=NOW, **TOTALS)
    with capture_selections() as mine:
        got = retriever.invoke("what refunds were issued")
    assert budgets(mine[0]) == TURNS_AND_EVENTS
    assert [d.id for d in got[:1]] == ["fix"]
    assert len(got) == 41  # the correction and both pools' 20 entries
    store.add_documents([Document(page_content="Refunds settle in two days.", id="f1", metadata={"type": "fact"})])
    with capture_selections() as mine:
        retriever.invoke("what refunds were issued")
    # semantic 35 (implementation), event and turn 22.5 each: 1024 x 35/80, 22.5/80, 22.5/80; 40 entries
    # x the same: 17.5, 11.25, 11.25 -> 17, 11, 11 and the one left to the largest remainder.
    assert budgets(mine[0]) == {"corrections": (0, 0), "semantic": (448, 18), "event": (288, 11), "turn": (288, 11)}


def test_a_declared_vocabulary_wins_and_explicit_pools_refuse_it():
    retriever = LangChainRetriever(
        documents=documents(), pools="auto", token_counter=words, now=NOW, entry_types=["turn"], **TOTALS
    )
    with capture_selections() as mine:
        retriever.invoke("refunds")
    assert budgets(mine[0]) == {"corrections": (0, 0), "turn": (1024, 40)}
    with pytest.raises(ArgumentError, match="entry_types/collections apply only to pools='auto'"):
        LangChainRetriever(documents=documents(), pools=[], entry_types=["turn"])
    with pytest.raises(ArgumentError, match="entry_types must contain only strings"):
        LangChainRetriever.held_by("x", pools="auto", entry_types=[3], **TOTALS)


def test_a_host_mapping_gives_its_types_the_seed_weights():
    collections = {"episodic": ["episode", "turn", "event"], "semantic": ["fact"]}
    retriever = LangChainRetriever(
        documents=documents(), pools="auto", phase="debugging", collections=collections, token_counter=words,
        now=NOW, **TOTALS,
    )  # fmt: skip
    with capture_selections() as mine:
        retriever.invoke("refunds")
    # Only episodic is held (semantic's fact is absent): the whole budget.
    assert budgets(mine[0]) == {"corrections": (0, 0), "episodic": (1024, 40)}


def test_the_compressor_shares_among_the_types_it_is_given():
    compressor = PoolSplitCompressor(pools="auto", token_counter=words, now=NOW, **TOTALS)
    with capture_selections() as mine:
        compressor.compress_documents(documents(), "refunds")
    assert budgets(mine[0]) == TURNS_AND_EVENTS


def nodes() -> List[TextNode]:
    made = []
    for r in rows():
        node = TextNode(text=r["content"], metadata={k: r[k] for k in r if k not in ("id", "content")})
        node.id_ = r["id"]
        made.append(node)
    return made


def test_llama_index_nodes_and_simple_vector_store_share_among_their_types():
    held = LlamaRetriever("auto", nodes(), token_counter=words, now=NOW, **TOTALS)
    _, selection = held.retrieve_with_selection("what refunds were issued")
    assert budgets(selection) == TURNS_AND_EVENTS
    index = VectorStoreIndex(nodes(), embed_model=MockEmbedding(embed_dim=8))
    recalled = LlamaRetriever.from_vector_store_index(index, "auto", token_counter=words, now=NOW, **TOTALS)
    found, selection = recalled.retrieve_with_selection("what refunds were issued")
    assert budgets(selection) == TURNS_AND_EVENTS
    assert found[0].node.node_id == "fix" and len(found) == 41


async def test_llama_index_memory_blocks_share_among_the_types_their_store_holds():
    from llama_index.core.llms import ChatMessage
    from llama_index.core.memory import Memory

    from poolsplit_adapters.llama_index import poolsplit_memory_blocks

    blocks = poolsplit_memory_blocks(rows(), "auto", token_counter=words, now=NOW, **TOTALS)
    memory = Memory.from_defaults(session_id="alice", token_limit=30_000, memory_blocks=blocks)
    memory.put(ChatMessage(role="user", content="what refunds were issued"))
    await memory.aget()
    assert budgets(blocks[0].store.last_selection) == TURNS_AND_EVENTS
