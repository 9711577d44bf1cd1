"""The LlamaIndex adapters inside real llama-index-core objects."""

from __future__ import annotations

import datetime
from typing import Any, Dict, List

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.chat_engine import ContextChatEngine
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.llms import MockLLM
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import Memory
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode

from poolsplit_adapters import EntryError, Pool
from poolsplit_adapters.llama_index import (
    SELECTION_KEY,
    PooledMemoryBlock,
    PoolSplitNodePostprocessor,
    PoolSplitRetriever,
    PoolSplitSelectionEvent,
    nodes_from,
    poolsplit_memory_blocks,
)
from poolsplit_adapters.render import parse_markers

NOW = datetime.datetime(2026, 7, 7)
CORRECTIONS = [
    "Never force-push to the main branch; open a pull request instead.",
    "Run the linter before proposing any diff.",
    "Quote money amounts in integer cents, never floats.",
]
POOLS = [
    Pool("corrections", 0, 0, ("correction",)),
    Pool("content", 160, 4, ("fact", "task", "note", "episode")),
    Pool("skills", 60, 1, ("skill",)),
    Pool("growth", 60, 1, ("growth",)),
]


def memory_entries(facts: int = 40) -> List[Dict[str, Any]]:
    entries: List[Dict[str, Any]] = [
        {
            "id": "fix-%d" % n,
            "type": "correction",
            "scope": "always",
            "content": text,
            "source": "user-feedback",
            "created": "2026-03-01T00:00:00Z",
            "base_priority": 1,
        }
        for n, text in enumerate(CORRECTIONS)
    ]
    entries += [
        {
            "id": "fact-%02d" % n,
            "type": "fact",
            "base_priority": 9,
            "source": "ci",
            "created": "2026-07-06T00:00:00Z",
            "content": "Deploy fact %d: the checkout service deploy to staging runs migrations first." % n,
        }
        for n in range(facts)
    ]
    entries.append(
        {
            "id": "skill-bisect",
            "type": "skill",
            "base_priority": 2,
            "source": "notes",
            "content": "Bisect a regression with git bisect run.",
        }
    )
    entries.append(
        {
            "id": "grow-done",
            "type": "growth",
            "base_priority": 1,
            "source": "retro",
            "content": "Ask what done looks like before coding.",
        }
    )
    return entries


def _nodes(entries):
    return nodes_from(entries)


def test_retriever_over_nodes_puts_corrections_first_with_numeric_scores():
    nodes = _nodes(memory_entries())
    retriever = PoolSplitRetriever(POOLS, nodes, now=NOW)
    got = retriever.retrieve("how does the checkout deploy to staging work")
    assert [n.node.node_id for n in got[:3]] == ["fix-0", "fix-1", "fix-2"]
    assert all(isinstance(n.score, float) for n in got)
    assert got[0].score > max(n.score for n in got[3:])
    pools = [n.node.metadata[SELECTION_KEY]["pool"] for n in got]
    assert pools.count("content") == 4 and "skills" in pools and "growth" in pools
    # New objects; the pool key stays out of the embedding and LLM views.
    assert all(n.node is not m for n in got for m in nodes)
    assert all(SELECTION_KEY not in m.metadata for m in nodes)
    first = got[3].node
    assert SELECTION_KEY not in first.get_content(metadata_mode=MetadataMode.EMBED)
    assert SELECTION_KEY not in first.get_content(metadata_mode=MetadataMode.LLM)
    assert retriever.last_selection is not None and "not loaded" in retriever.explain()
    shown = PoolSplitRetriever(POOLS, nodes, now=NOW, show_selection_to_llm=True).retrieve("deploy")
    assert SELECTION_KEY in shown[3].node.get_content(metadata_mode=MetadataMode.LLM)


def test_k_caps_contextual_nodes_round_robin():
    retriever = PoolSplitRetriever(POOLS, _nodes(memory_entries()), now=NOW, k=2)
    got = retriever.retrieve("checkout deploy")
    assert len(got) == 5
    assert [n.node.metadata[SELECTION_KEY]["pool"] for n in got[3:]] == ["content", "skills"]


async def test_vector_store_index_recall_per_pool_sync_and_async():
    index = VectorStoreIndex(_nodes(memory_entries(200)), embed_model=MockEmbedding(embed_dim=8))
    retriever = PoolSplitRetriever.from_vector_store_index(index, POOLS, fetch_k=6, now=NOW)
    for got in (retriever.retrieve("checkout deploy"), await retriever.aretrieve("checkout deploy")):
        assert [n.node.node_id for n in got[:3]] == ["fix-0", "fix-1", "fix-2"]
        kinds = [n.node.metadata["type"] for n in got[3:]]
        assert kinds.count("fact") == 4 and kinds.count("skill") == 1 and kinds.count("growth") == 1


def test_retriever_query_engine_prompt_holds_the_corrections():
    retriever = PoolSplitRetriever(POOLS, _nodes(memory_entries()), now=NOW)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    for question in ("how do we deploy checkout", "what about migrations on staging"):
        response = engine.query(question)
        prompt = str(response)  # MockLLM answers with the prompt it received
        assert all(text in prompt for text in CORRECTIONS)
        assert prompt.index(CORRECTIONS[0]) < prompt.index("Deploy fact")
        assert len(response.source_nodes) == 3 + 4 + 1 + 1


class Captured(BaseEventHandler):
    events: List[Any] = []

    @classmethod
    def class_name(cls) -> str:
        return "Captured"

    def handle(self, event, **kwargs):  # noqa: ANN001
        if isinstance(event, PoolSplitSelectionEvent):
            self.events.append(event)


def test_selection_is_emitted_as_an_instrumentation_event():
    handler = Captured()
    root = get_dispatcher()
    root.add_event_handler(handler)
    try:
        PoolSplitRetriever(POOLS, _nodes(memory_entries()), now=NOW).retrieve("deploy")
    finally:
        root.event_handlers.remove(handler)
    (event,) = handler.events
    assert event.source == "retriever"
    assert [c["id"] for c in event.summary["chosen"][:3]] == ["fix-0", "fix-1", "fix-2"]


def test_postprocessor_reinjects_corrections_a_similarity_cutoff_removed():
    nodes = _nodes(memory_entries(10))
    scored = [NodeWithScore(node=n, score=0.2 if n.metadata.get("scope") == "always" else 0.9) for n in nodes]
    survivors = SimilarityPostprocessor(similarity_cutoff=0.5).postprocess_nodes(scored, query_str="deploy")
    assert not any(n.node.metadata.get("scope") == "always" for n in survivors)
    corrections = [n for n in nodes if n.metadata.get("scope") == "always"]
    plain = PoolSplitNodePostprocessor(pools=POOLS, now=NOW).postprocess_nodes(survivors, query_str="deploy")
    assert not any(n.node.metadata.get("scope") == "always" for n in plain)
    fixed = PoolSplitNodePostprocessor(pools=POOLS, now=NOW, always_nodes=corrections)
    got = fixed.postprocess_nodes(survivors, query_str="deploy")
    assert [n.node.node_id for n in got[:3]] == ["fix-0", "fix-1", "fix-2"]
    assert fixed.last_selection is not None
    with pytest.raises(ValueError, match="not scope 'always'"):
        PoolSplitNodePostprocessor(pools=POOLS, always_nodes=nodes[5:6])


def _flood(n: int) -> List[ChatMessage]:
    out = []
    for i in range(n):
        out.append(
            ChatMessage(role="user", content="Status %d: did the nightly deploy finish? Any staging errors?" % i)
        )
        out.append(ChatMessage(role="assistant", content="Deploy %d finished on staging; two warnings, no errors." % i))
    return out


def _memory_section(messages: List[ChatMessage]) -> str:
    system = [m for m in messages if m.role == "system"]
    assert system, "no system message: memory blocks were not injected"
    return system[0].content or ""


def _check_turn(messages: List[ChatMessage]) -> List[Dict[str, str]]:
    markers = parse_markers(_memory_section(messages))
    assert [m["content"] for m in markers[:3]] == CORRECTIONS
    assert [m.get("scope") for m in markers[:3]] == ["always"] * 3
    return markers


def test_corrections_survive_memory_truncation_after_a_flood_sync():
    blocks = poolsplit_memory_blocks(memory_entries(), POOLS, now=NOW)
    memory = Memory.from_defaults(session_id="s1", token_limit=700, memory_blocks=blocks)
    store = blocks[1].store
    before = len(store.index)
    for number, message in enumerate(_flood(160)):
        memory.put(message)
        if number % 40 == 0:
            _check_turn(memory.get())
    markers = _check_turn(memory.get())
    # Flushed chat became long-term episodes, with the session as source.
    episodes = [e for e in store.index if e["type"] == "episode"]
    assert len(store.index) > before and episodes and all(e["source"] == "session:s1" for e in episodes)
    # The pooled block was truncated entry by entry, and says so.
    assert "by the context limit" in _memory_section(memory.get())
    assert len(markers) >= 3


async def test_corrections_survive_memory_truncation_after_a_flood_async():
    blocks = poolsplit_memory_blocks(memory_entries(), POOLS, now=NOW)
    memory = Memory.from_defaults(session_id="s2", token_limit=700, memory_blocks=blocks)
    for number, message in enumerate(_flood(160)):
        await memory.aput(message)
        if number % 50 == 0:
            _check_turn(await memory.aget())
    _check_turn(await memory.aget())


async def test_low_priority_pool_present_when_it_has_room():
    blocks = poolsplit_memory_blocks(memory_entries(), POOLS, now=NOW)
    memory = Memory.from_defaults(session_id="s3", token_limit=4000, memory_blocks=blocks)
    await memory.aput(ChatMessage(role="user", content="how do I find the commit that broke the deploy"))
    markers = _check_turn(await memory.aget())
    assert {"skills", "growth", "content"} <= {m.get("pool") for m in markers}


async def test_pooled_block_truncates_from_the_least_relevant_end_fairly():
    block = poolsplit_memory_blocks(memory_entries(), POOLS, now=NOW)[1]
    assert isinstance(block, PooledMemoryBlock)
    content = await block.aget([ChatMessage(role="user", content="deploy")], session_id="x")
    markers = parse_markers(content)
    assert [m["pool"] for m in markers] == ["content"] * 4 + ["skills", "growth"]
    cut = await block.atruncate(content, 1)
    kept = parse_markers(cut)
    assert [m["id"] for m in kept] == [m["id"] for m in markers[:3]] + ["skill-bisect", "grow-done"]
    assert "1 by the context limit" in cut
    assert await block.atruncate(content, 10_000) is None


async def test_session_id_is_used_per_call_without_mutating_the_block():
    blocks = poolsplit_memory_blocks(memory_entries(), POOLS, now=NOW)
    pooled = blocks[1]
    snapshot = pooled.model_dump()
    await pooled.aput([ChatMessage(role="user", content="remember the blue deploy")], session_id="alpha")
    await pooled.aput([ChatMessage(role="user", content="remember the green deploy")], session_id="beta")
    await pooled.aget([ChatMessage(role="user", content="deploy")], session_id="alpha")
    assert pooled.model_dump() == snapshot
    sources = {e["content"]: e["source"] for e in pooled.store.index if e["type"] == "episode"}
    assert sources == {
        "user: remember the blue deploy": "session:alpha",
        "user: remember the green deploy": "session:beta",
    }


def test_context_chat_engine_sends_corrections_every_turn():
    blocks = poolsplit_memory_blocks(memory_entries(), POOLS, now=NOW)
    memory = Memory.from_defaults(session_id="chat", token_limit=900, memory_blocks=blocks)
    facts = [x for x in memory_entries() if x.get("type") == "fact"]
    retriever = PoolSplitRetriever([Pool("facts", 100, 2, ("fact",))], _nodes(facts), now=NOW)
    engine = ContextChatEngine.from_defaults(retriever=retriever, memory=memory, llm=MockLLM())
    for turn in range(4):
        reply = engine.chat("turn %d: is the staging deploy healthy?" % turn)
        assert all(text in reply.response for text in CORRECTIONS)  # MockLLM echoes its input


async def test_function_agent_llm_input_holds_corrections_every_turn():
    seen: List[List[ChatMessage]] = []

    def respond(messages, **kwargs):  # noqa: ANN001
        seen.append(list(messages))
        return ChatMessage(role="assistant", content="noted")

    llm = MockFunctionCallingLLM(response_generator=respond)
    agent = FunctionAgent(tools=[], llm=llm, system_prompt="You are a careful coding agent.")
    blocks = poolsplit_memory_blocks(memory_entries(), POOLS, now=NOW)
    memory = Memory.from_defaults(session_id="agent", token_limit=900, memory_blocks=blocks)
    for turn in range(3):
        result = await agent.run(user_msg="turn %d: deploy checkout to staging" % turn, memory=memory)
        assert "noted" in str(result)
    assert len(seen) == 3
    for messages in seen:
        text = "\n".join(m.content or "" for m in messages)
        assert all(c in text for c in CORRECTIONS)


def test_node_without_type_is_a_note_and_bad_metadata_names_the_node():
    untyped = TextNode(text="untyped memory", id_="u1")
    got = PoolSplitRetriever([Pool("notes", 100, 5, ("note",))], [untyped], now=NOW).retrieve("memory")
    assert [n.node.node_id for n in got] == ["u1"]
    bad = TextNode(text="x", id_="bad-node", metadata={"tags": "ops"})
    with pytest.raises(EntryError, match="node 'bad-node': metadata field 'tags' must be a list or tuple"):
        PoolSplitRetriever(POOLS, [untyped, bad])
    negative = TextNode(text="x", id_="neg", metadata={"token_count": -1})
    with pytest.raises(EntryError, match="node 'neg': metadata field 'token_count' must be a positive integer"):
        PoolSplitNodePostprocessor(pools=POOLS).postprocess_nodes([NodeWithScore(node=negative, score=1.0)])
    with pytest.raises(ValueError, match="needs nodes="):
        PoolSplitRetriever(POOLS)
