"""The LlamaIndex adapters inside real llama-index-core objects."""

from __future__ import annotations

import asyncio
import datetime
import re
import warnings
from typing import Any, Dict, Iterable, List, Mapping, Optional

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
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode
from llama_index.core.storage.chat_store.sql import MessageStatus
from pydantic import PrivateAttr

from poolsplit_adapters import EntryError, Pool, Reason, Selection, UnadmittedCorrectionWarning, Visibility, select
from poolsplit_adapters.checks import ArgumentError
from poolsplit_adapters.llama_index import (
    SELECTION_KEY,
    PooledMemoryBlock,
    PoolSplitMemoryStore,
    PoolSplitNodePostprocessor,
    PoolSplitRetriever,
    PoolSplitSelectionEvent,
    UnflushedWarning,
    VectorIndexMemory,
    capture_selections,
    nodes_from,
    poolsplit_memory_blocks,
)
from poolsplit_adapters.memory import WriteGate
from poolsplit_adapters.render import marker_tokens, parse_markers
from poolsplit_adapters.reports import event_payload
from poolsplit_adapters.stores import InProcessStore
from poolsplit_adapters.tokens import llama_index_counter

pytestmark = pytest.mark.filterwarnings("error::poolsplit_adapters.poolsplit.UnadmittedCorrectionWarning")

NOW = datetime.datetime(2026, 7, 7)
CORRECTIONS = [
    "Never force-push to the main branch; open a pull request instead.",
    "Run the linter before proposing any diff.",
    "Quote money amounts in integer cents, never floats.",
]
FIXES = ["fix-0", "fix-1", "fix-2"]
#: What each entry's marker adds to its cost in the memory blocks (their
#: counter counts the marker rendered into the prompt beside the text).
MARK = marker_tokens(llama_index_counter(), "corrections")
POOLS = [
    Pool("corrections", 0, 0, ("correction",)),
    Pool("content", 160 + 4 * MARK, 4, ("fact", "task", "note", "episode")),
    Pool("skills", 60 + MARK, 1, ("skill",)),
    Pool("growth", 60 + MARK, 1, ("growth",)),
]
# Flushed chat gets a pool of its own, so that whether a session recalls it
# does not depend on how it ranks against the facts.
CHAT_POOLS = [*POOLS[:1], Pool("episodes", 400 + 3 * MARK, 3, ("episode",)), *POOLS[1:]]


def memory_entries(facts: int = 40, **extra: Any) -> List[Dict[str, Any]]:
    entries: List[Dict[str, Any]] = [
        {
            "id": "fix-%d" % n,
            "type": "correction",
            "scope": "always",
            "content": text,
            "source": "user-feedback",
            "created": "2026-03-01T00:00:00Z",
            "base_priority": 1,
            **extra,
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
            **extra,
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
            **extra,
        }
    )
    entries.append(
        {
            "id": "grow-done",
            "type": "growth",
            "base_priority": 1,
            "source": "retro",
            "content": "Ask what done looks like before coding.",
            **extra,
        }
    )
    return entries


def _nodes(entries):
    return nodes_from(entries)


class CountingEmbedding(MockEmbedding):
    """MockEmbedding that counts query embeddings, sync and async apart."""

    _sync: int = PrivateAttr(default=0)
    _async: int = PrivateAttr(default=0)

    def _get_query_embedding(self, query: str) -> List[float]:
        self._sync += 1
        return super()._get_query_embedding(query)

    async def _aget_query_embedding(self, query: str) -> List[float]:
        self._async += 1
        return await super()._aget_query_embedding(query)

    @property
    def counts(self):
        return (self._sync, self._async)


def test_retriever_over_nodes_puts_corrections_first_with_numeric_scores():
    nodes = _nodes(memory_entries())
    retriever = PoolSplitRetriever(POOLS, nodes, now=NOW)
    got = retriever.retrieve("how does the checkout deploy to staging work")
    assert [n.node.node_id for n in got[:3]] == FIXES
    assert all(isinstance(n.score, float) for n in got)
    assert got[0].score > max(n.score for n in got[3:])
    pools = [n.node.metadata[SELECTION_KEY]["pool"] for n in got]
    assert pools == ["corrections"] * 3 + ["content"] * 4 + ["skills", "growth"]
    # New objects; the pool key stays out of the embedding and LLM views.
    assert all(n.node is not m for n in got for m in nodes)
    assert all(SELECTION_KEY not in m.metadata for m in nodes)
    first = got[3].node
    assert SELECTION_KEY not in first.get_content(metadata_mode=MetadataMode.EMBED)
    assert SELECTION_KEY not in first.get_content(metadata_mode=MetadataMode.LLM)
    assert "not loaded:" in retriever.explain().splitlines()
    shown = PoolSplitRetriever(POOLS, nodes, now=NOW, show_selection_to_llm=True).retrieve("deploy")
    assert SELECTION_KEY in shown[3].node.get_content(metadata_mode=MetadataMode.LLM)


def test_two_nodes_with_one_id_are_refused_by_name_not_lost_after_selection():
    # LlamaIndex's retrieve() keeps one node per id: the second correction
    # would be reported loaded and never reach the model.
    def node(node_id: str, text: str) -> TextNode:
        return TextNode(text=text, id_=node_id, metadata={"type": "correction", "scope": "always"})

    nodes = [node("fix", "Never force-push to main."), node("other", "x"), node("fix", "Never deploy on Fridays.")]
    with pytest.raises(ArgumentError, match=r"nodes\[0\] and nodes\[2\] share the node id 'fix'"):
        PoolSplitRetriever(POOLS, nodes, now=NOW)
    distinct = [node("fix-1", "Never force-push to main."), node("fix-2", "Never deploy on Fridays.")]
    got = PoolSplitRetriever(POOLS, distinct, now=NOW).retrieve("deploy")
    assert sorted(n.node.node_id for n in got) == ["fix-1", "fix-2"]


def test_k_caps_contextual_nodes_round_robin():
    retriever = PoolSplitRetriever(POOLS, _nodes(memory_entries()), now=NOW, k=2)
    got = retriever.retrieve("checkout deploy")
    assert len(got) == 5
    assert [n.node.metadata[SELECTION_KEY]["pool"] for n in got[3:]] == ["content", "skills"]


async def test_vector_store_index_recall_per_pool_sync_and_async():
    index = VectorStoreIndex(_nodes(memory_entries(200)), embed_model=MockEmbedding(embed_dim=8))
    retriever = PoolSplitRetriever.from_vector_store_index(index, POOLS, fetch_k=6, now=NOW)
    for got in (retriever.retrieve("checkout deploy"), await retriever.aretrieve("checkout deploy")):
        assert [n.node.node_id for n in got[:3]] == FIXES
        kinds = [n.node.metadata["type"] for n in got[3:]]
        assert kinds == ["fact"] * 4 + ["skill", "growth"]


async def test_vector_recall_embeds_the_query_once_sync_and_async():
    embed = CountingEmbedding(embed_dim=8)
    index = VectorStoreIndex(_nodes(memory_entries(50)), embed_model=embed)
    retriever = PoolSplitRetriever.from_vector_store_index(index, POOLS, fetch_k=6, now=NOW)
    sync = retriever.retrieve("checkout deploy")
    assert embed.counts == (1, 0)
    got = await retriever.aretrieve("checkout deploy")
    assert embed.counts == (1, 1)
    assert [n.node.node_id for n in got] == [n.node.node_id for n in sync]


def test_nodes_without_type_reach_a_note_pool_on_every_path():
    typed = [TextNode(text="typed note %d" % n, id_="typed-%02d" % n, metadata={"type": "note"}) for n in range(30)]
    untyped = [TextNode(text="untyped memo %d" % n, id_="untyped-%d" % n) for n in range(2)]
    plan = [Pool("notes", 10_000, 50, ("note",))]
    index = VectorStoreIndex([*typed, *untyped], embed_model=MockEmbedding(embed_dim=8))
    fixed = PoolSplitRetriever.from_vector_store_index(index, plan, fetch_k=5, max_fetch_k=5, now=NOW)
    recalled = fixed.retrieve("memo")
    assert sorted(n.node.node_id for n in recalled if not n.node.metadata.get("type")) == ["untyped-0", "untyped-1"]
    assert len(recalled) == 7  # 5 typed (fetch_k, no growth) + the 2 untyped
    # Growing (the default), the pool's room takes every node the index holds.
    assert len(PoolSplitRetriever.from_vector_store_index(index, plan, fetch_k=5, now=NOW).retrieve("memo")) == 32
    held = PoolSplitRetriever(plan, [*typed, *untyped], now=NOW).retrieve("memo")
    assert len(held) == 32
    post = PoolSplitNodePostprocessor(pools=plan, now=NOW).postprocess_nodes([NodeWithScore(node=untyped[0])])
    assert [n.node.node_id for n in post] == ["untyped-0"]


@pytest.mark.parametrize(
    ("metadata", "problem"),
    [
        ({"type": 3, "namespace": "t"}, "'type' must be a string, got int 3"),
        ({"type": ["fact"], "namespace": "t"}, "'type' must be a string, got list ['fact']"),
        ({"type": "fact", "namespace": 7}, "'namespace' must be a string or None, got int 7"),
        ({"type": 3.5, "scope": "always", "namespace": "t"}, "'type' must be a string, got float 3.5"),
    ],
)
async def test_a_stored_node_no_filter_can_match_is_named_as_the_node_paths_name_it(metadata, problem):
    # Found by an adversarial run: each pool's search filters on the type (and the
    # namespace), so a node whose type is not a string was never recalled and never reported.
    good = TextNode(text="the deploy window is friday", id_="good", metadata={"type": "fact", "namespace": "t"})
    bad = TextNode(text="the deploy window is monday", id_="bad", metadata=metadata)
    pools = [Pool("corrections", 0, 0, ("correction",)), Pool("facts", 300, 5, ("fact", "note"))]
    message = "^node 'bad': metadata field %s$" % re.escape(problem)
    with pytest.raises(EntryError, match=message):
        PoolSplitRetriever(pools, [good, bad], now=NOW)  # the node path
    index = VectorStoreIndex([good, bad], embed_model=MockEmbedding(embed_dim=8))
    retriever = PoolSplitRetriever.from_vector_store_index(index, pools, now=NOW, visibility=Visibility(namespace="t"))
    with pytest.raises(EntryError, match=message):
        retriever.retrieve("deploy window")
    with pytest.raises(EntryError, match=message):
        await retriever.aretrieve("deploy window")
    with pytest.raises(EntryError, match=message):
        VectorIndexMemory(index).select(pools, {"message": "deploy window"}, visibility=Visibility(namespace="t"))
    index.delete_nodes(["bad"])
    assert [n.node.node_id for n in retriever.retrieve("deploy window")] == ["good"]
    # Another tenant's malformed node is that tenant's to fix: this one's recall goes on.
    index.insert_nodes([TextNode(text="other tenant", id_="theirs", metadata={**metadata, "namespace": "other"})])
    assert [n.node.node_id for n in retriever.retrieve("deploy window")] == ["good"]


def test_a_node_with_a_lone_surrogate_is_ranked_by_embeddings_not_a_unicode_error():
    # Found by an adversarial run: the vector cache hashed the text as strict UTF-8, so one
    # node whose text held a lone surrogate failed every embedding-ranked retrieval with a
    # UnicodeEncodeError from deep in the cache.
    from poolsplit_adapters.llama_index import HashEmbedding

    nodes = [
        TextNode(text="deploy window \ud800 friday", id_="odd", metadata={"type": "fact"}),
        TextNode(text="lunch menu", id_="other", metadata={"type": "fact"}),
    ]
    pools = [Pool("facts", 300, 1, ("fact",))]
    retriever = PoolSplitRetriever(pools, nodes, embeddings=HashEmbedding(), now=NOW)
    assert [n.node.node_id for n in retriever.retrieve("deploy window")] == ["odd"]
    assert retriever.last_selection is not None and "scorer_fallback" not in retriever.last_selection.notes


def test_a_custom_type_key_types_the_recalled_nodes_so_corrections_load():
    """With ``type_key="kind"`` the store's filters find nodes by ``kind``,
    and the entries take their type from it too: before, every recalled
    node read as a "note", the correction was warned unadmitted and nothing
    loaded. A node's own ``"type"`` key does not type it then; a node
    without ``kind`` is untyped, as the untyped search found it."""
    nodes = [
        TextNode(text="Never force-push to main.", id_="fix-1", metadata={"kind": "correction", "scope": "always"}),
        TextNode(text="The deploy finished.", id_="ep-1", metadata={"kind": "episode", "type": "correction"}),
        TextNode(text="Deploy notes, untyped.", id_="memo-1", metadata={"type": "episode"}),
        TextNode(text="Deploy skill.", id_="skill-1", metadata={"kind": "skill"}),
    ]
    index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))
    pools = [Pool("corrections", 0, 0, ("correction",)), Pool("content", 400, 6, ("episode", "note"))]
    retriever = PoolSplitRetriever.from_vector_store_index(index, pools, fetch_k=5, type_key="kind", now=NOW)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnadmittedCorrectionWarning)
        got = retriever.retrieve("did the deploy finish?")
    assert sorted(n.node.node_id for n in got) == ["ep-1", "fix-1", "memo-1"]
    chosen = {c.entry["id"]: (c.entry.get("type"), c.pool, c.always) for c in retriever.last_selection.chosen}
    assert chosen == {
        "fix-1": ("correction", "corrections", True),
        "ep-1": ("episode", "content", False),
        "memo-1": (None, "content", False),  # no kind: a note
    }
    assert [n.node.metadata for n in got if n.node.node_id == "ep-1"][0]["type"] == "correction"  # the node as stored
    auto = PoolSplitRetriever.from_vector_store_index(
        index, "auto", type_key="kind", total_tokens=600, total_entries=8, now=NOW
    )
    assert auto._entry_types() == frozenset({"correction", "episode", "skill", "note"})


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
        nodes, selection = PoolSplitRetriever(POOLS, _nodes(memory_entries()), now=NOW).retrieve_with_selection(
            "deploy"
        )
    finally:
        root.event_handlers.remove(handler)
    (event,) = handler.events
    assert event.source == "retriever"
    assert event.summary == event_payload(selection)
    assert [c["id"] for c in event.summary["chosen"][:3]] == FIXES
    assert [n.node.node_id for n in nodes] == [c.entry["id"] for c in selection.chosen]


async def test_concurrent_aretrieve_callers_each_get_their_own_selection():
    retriever = PoolSplitRetriever(POOLS, _nodes(memory_entries()), now=NOW)
    calls = [("deploy fact %d" % n, n % 3) for n in range(24)]
    expected = [[c.entry["id"] for c in retriever.retrieve_with_selection(q, k=k)[1].chosen] for q, k in calls]

    async def one(query: str, k: int) -> Any:
        nodes, selection = await retriever.aretrieve_with_selection(query, k=k)
        await asyncio.sleep(0)
        return nodes, selection

    results = await asyncio.gather(*(one(q, k) for q, k in calls))
    for (_, k), want, (nodes, selection) in zip(calls, expected, results):
        assert [c.entry["id"] for c in selection.chosen] == want
        assert len(nodes) == 3 + k

    # With capture_selections around plain aretrieve calls, the same holds.
    async def captured(query: str) -> List[Selection]:
        with capture_selections() as mine:
            await retriever.aretrieve(query)
        return mine

    unlimited = [[c.entry["id"] for c in retriever.retrieve_with_selection(q)[1].chosen] for q, _ in calls]
    for want, mine in zip(unlimited, await asyncio.gather(*(captured(q) for q, _ in calls))):
        assert [[c.entry["id"] for c in selection.chosen] for selection in mine] == [want]


def test_postprocessor_reinjects_corrections_a_similarity_cutoff_removed():
    nodes = _nodes(memory_entries(10))
    scored = [NodeWithScore(node=n, score=0.2 if n.metadata.get("scope") == "always" else 0.9) for n in nodes]
    survivors = SimilarityPostprocessor(similarity_cutoff=0.5).postprocess_nodes(scored, query_str="deploy")
    assert [n.node.node_id for n in survivors] == [n.node_id for n in nodes[3:]]
    corrections = [n for n in nodes if n.metadata.get("scope") == "always"]
    plain = PoolSplitNodePostprocessor(pools=POOLS, now=NOW).postprocess_nodes(survivors, query_str="deploy")
    assert [n.node.metadata["type"] for n in plain] == ["fact"] * 4 + ["skill", "growth"]
    fixed = PoolSplitNodePostprocessor(pools=POOLS, now=NOW, always_nodes=corrections)
    with capture_selections() as mine:
        got = fixed.postprocess_nodes(survivors, query_str="deploy")
    assert [n.node.node_id for n in got[:3]] == FIXES
    assert fixed.last_selection is mine[0]
    with pytest.raises(ValueError, match=r"always_nodes\[0\] \(node 'fact-02'\) is not scope 'always'"):
        PoolSplitNodePostprocessor(pools=POOLS, always_nodes=nodes[5:6])


def _flood(n: int, tag: str = "") -> List[ChatMessage]:
    out = []
    for i in range(n):
        out.append(
            ChatMessage(
                role="user", content="Status %d%s: did the nightly deploy finish? Any staging errors?" % (i, tag)
            )
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
    # Every flushed (archived) message became a long-term episode, with the
    # session as source.
    episodes = [e for e in store.index if e["type"] == "episode"]
    assert len(episodes) == len(memory.get_all(status=MessageStatus.ARCHIVED))
    assert len(store.index) == before + len(episodes)
    assert {(e["source"], e["session"]) for e in episodes} == {("session:s1", "s1")}
    # The pooled block was truncated entry by entry, and says how many it cut.
    selected = sum(1 for c in store.last_selection.chosen if not c.always)
    shown = len(markers) - 3
    last = _memory_section(memory.get()).split("</long_term_memory>")[0].splitlines()[-1]
    assert re.fullmatch(r"\[(\d+) more entr(y|ies) left out by the context limit: .*\]", last)
    assert int(last[1:].split()[0]) == selected - shown > 0


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
    assert [m.get("pool") for m in markers[3:]] == ["content"] * 4 + ["skills", "growth"]


async def test_pooled_block_truncates_from_the_least_relevant_end_fairly():
    corrections, block = poolsplit_memory_blocks(memory_entries(), POOLS, now=NOW)
    assert isinstance(block, PooledMemoryBlock)
    message = [ChatMessage(role="user", content="deploy")]
    content = await block.aget(message, session_id="x")
    markers = parse_markers(content)
    assert [m["pool"] for m in markers] == ["content"] * 4 + ["skills", "growth"]
    cut = await block.atruncate(content, 1)
    kept = parse_markers(cut)
    assert [m["id"] for m in kept] == [m["id"] for m in markers[:3]] + ["skill-bisect", "grow-done"]
    assert cut.splitlines()[-1] == "[1 more entry left out by the context limit: content 1]"
    # Needing more room than the whole block: the entries go, the line stays.
    assert await block.atruncate(content, 10_000) == (
        "[36 more entries left out by budget: content 36]\n"
        "[6 more entries left out by the context limit: content 4, skills 1, growth 1]"
    )
    # What budgets cut is stated after the entries, and (so that the count
    # survives Memory dropping this block whole) in the corrections block's
    # last line, which is true whether or not the block below survives.
    assert content.splitlines()[-1] == "[36 more entries left out by budget: content 36]"
    assert (await corrections.aget(message, session_id="x")).splitlines()[-1] == (
        "[below, long_term_memory: 6 entries selected for this message (content 4, skills 1, growth 1), as many as "
        "the context limit allows; budgets left out 36 more (content 36); if it is missing, the context limit left "
        "it out]"
    )


def test_what_was_left_out_is_said_after_the_entries_and_nothing_when_nothing_was():
    fix = {"id": "fix-1", "type": "correction", "scope": "always", "content": "Never force-push.", "source": "user"}
    skills = [
        {"id": "s1", "type": "skill", "content": "Bisect with git bisect run.", "source": "notes"},
        {"id": "s2", "type": "skill", "content": "Bisect the build with git bisect.", "source": "notes"},
    ]
    episode = {"id": "e1", "type": "episode", "content": "The build broke on a commit last week.", "source": "notes"}
    plan = [
        Pool("corrections", 0, 0, ("correction",)),
        Pool("episodes", 300, 4, ("episode",)),
        Pool("skills", 100, 1, ("skill",)),
    ]

    def section(entries):
        memory = Memory.from_defaults(
            session_id="u", token_limit=1500, memory_blocks=poolsplit_memory_blocks(entries, plan)
        )
        memory.put(ChatMessage(role="user", content="how do I find the commit that broke the build?"))
        return _memory_section(memory.get())

    assert section([fix, *skills, episode]) == (
        "<memory>\n<corrections>\n"
        '<memory id="fix-1" source="user" pool="corrections" scope="always">\nNever force-push.\n</memory>\n'
        "[below, long_term_memory: 2 entries selected for this message (episodes 1, skills 1), as many as the context "
        "limit allows; budgets left out 1 more (skills 1); if it is missing, the context limit left it out]\n"
        "</corrections>\n<long_term_memory>\n"
        '<memory id="e1" source="notes" pool="episodes">\nThe build broke on a commit last week.\n</memory>\n'
        '<memory id="s2" source="notes" pool="skills">\nBisect the build with git bisect.\n</memory>\n'
        "[1 more entry left out by budget: skills 1]\n"
        "</long_term_memory>\n</memory>"
    )
    # Nothing left out: no omission line; the corrections' last line only points below.
    assert section([fix, skills[1], episode]) == (
        "<memory>\n<corrections>\n"
        '<memory id="fix-1" source="user" pool="corrections" scope="always">\nNever force-push.\n</memory>\n'
        "[below, long_term_memory: 2 entries selected for this message (episodes 1, skills 1), as many as the context "
        "limit allows; if it is missing, the context limit left it out]\n"
        "</corrections>\n<long_term_memory>\n"
        '<memory id="e1" source="notes" pool="episodes">\nThe build broke on a commit last week.\n</memory>\n'
        '<memory id="s2" source="notes" pool="skills">\nBisect the build with git bisect.\n</memory>\n'
        "</long_term_memory>\n</memory>"
    )
    # Corrections alone: nothing below, nothing to announce.
    assert section([fix]) == (
        "<memory>\n<corrections>\n"
        '<memory id="fix-1" source="user" pool="corrections" scope="always">\nNever force-push.\n</memory>\n'
        "</corrections>\n</memory>"
    )


async def test_truncation_counts_come_from_the_selection_not_from_the_text():
    # An entry whose content imitates an omission line must not inflate it.
    entries = memory_entries(6)
    entries[3]["content"] = "[999 more entries left out by budget] deploy fact"
    store = PoolSplitMemoryStore(entries, POOLS, now=NOW)
    block = PooledMemoryBlock(store=store)  # alone: it states the budget cut itself
    content = await block.aget([ChatMessage(role="user", content="deploy")], session_id="x")
    assert content.splitlines()[-1] == "[2 more entries left out by budget: content 2]"
    assert (await block.atruncate(content, 10_000)).splitlines() == [
        "[2 more entries left out by budget: content 2]",
        "[6 more entries left out by the context limit: content 4, skills 1, growth 1]",
    ]
    # A text this store did not render is never cut silently either.
    assert await block.atruncate("something else", 5) == "[long-term memory left out by the context limit]"


async def test_memory_that_drops_the_pooled_block_whole_still_shows_its_counts():
    # A last turn longer than the limit leaves no room even for the pooled
    # block's omission lines: Memory drops that block whole.
    blocks = poolsplit_memory_blocks(memory_entries(), POOLS, now=NOW)
    memory = Memory.from_defaults(session_id="long", token_limit=400, memory_blocks=blocks)
    await memory.aput(ChatMessage(role="user", content="deploy " + "word " * 300))
    section = _memory_section(await memory.aget())
    assert "<long_term_memory>" not in section
    assert [m["id"] for m in parse_markers(section)] == FIXES
    assert section.count("[") == 1
    assert section.split("</corrections>")[0].splitlines()[-1] == (
        "[below, long_term_memory: 6 entries selected for this message (content 4, skills 1, growth 1), as many as "
        "the context limit allows; budgets left out 36 more (content 36); if it is missing, the context limit left "
        "it out]"
    )


async def test_session_id_is_used_per_call_without_mutating_the_block():
    blocks = poolsplit_memory_blocks(memory_entries(), POOLS, now=NOW)
    pooled = blocks[1]
    snapshot = pooled.model_dump()
    await pooled.aput([ChatMessage(role="user", content="remember the blue deploy")], session_id="alpha")
    await pooled.aput([ChatMessage(role="user", content="remember the green deploy")], session_id="beta")
    await pooled.aget([ChatMessage(role="user", content="deploy")], session_id="alpha")
    assert pooled.model_dump() == snapshot
    sources = {e["content"]: (e["source"], e["session"]) for e in pooled.store.index if e["type"] == "episode"}
    assert sources == {
        "user: remember the blue deploy": ("session:alpha", "alpha"),
        "user: remember the green deploy": ("session:beta", "beta"),
    }


def _sessions(share_chat: bool, store: Any = None) -> Dict[str, Memory]:
    blocks = poolsplit_memory_blocks(memory_entries(4), CHAT_POOLS, now=NOW, share_chat=share_chat, store=store)
    return {
        name: Memory.from_defaults(
            session_id=name, token_limit=1500, chat_history_token_ratio=0.2, memory_blocks=blocks
        )
        for name in ("alice", "bob")
    }


def _chat_sources(memory: Memory, message: str) -> List[str]:
    memory.put(ChatMessage(role="user", content=message))
    return sorted(
        {m.get("source", "") for m in parse_markers(_memory_section(memory.get())) if m.get("pool") == "episodes"}
    )


def test_a_session_recalls_only_its_own_flushed_chat_by_default():
    sessions = _sessions(share_chat=False)
    for message in _flood(12, tag=" for alice"):
        sessions["alice"].put(message)
    assert _chat_sources(sessions["bob"], "did the nightly deploy finish for alice?") == []
    assert _chat_sources(sessions["alice"], "did the nightly deploy finish for alice?") == ["session:alice"]
    shared = _sessions(share_chat=True)
    for message in _flood(12, tag=" for alice"):
        shared["alice"].put(message)
    assert _chat_sources(shared["bob"], "did the nightly deploy finish for alice?") == ["session:alice"]


@pytest.mark.parametrize("bad", ["alice\x00", "alice\ud800"])
def test_a_session_id_or_namespace_no_store_can_hold_is_refused_by_name(bad):
    # Written with U+FFFD, "alice\x00"'s chat became "alice\ufffd"'s: recalled
    # by that other session, never by the one that wrote it.
    pools = [Pool("corrections", 0, 0, ("correction",)), Pool("episodes", 300, 3, ("episode",))]
    with pytest.raises(ArgumentError, match="visibility namespace .* cannot hold"):
        poolsplit_memory_blocks([], pools, visibility=Visibility(namespace=bad))
    store = poolsplit_memory_blocks([], pools)[0].store
    with pytest.raises(ArgumentError, match="session_id .* cannot hold"):
        store.flush([ChatMessage(role="user", content="hello", additional_kwargs={"session_id": bad})])
    with pytest.raises(ArgumentError, match="session_id .* cannot hold"):
        store.select_for("hello", bad)
    assert list(store.index.entries) == []  # nothing written under a mangled owner


def test_a_memory_whose_session_id_holds_nul_is_told_so_on_its_first_call():
    # (A lone surrogate fails in LlamaIndex's own chat store first.)
    pools = [Pool("corrections", 0, 0, ("correction",)), Pool("episodes", 300, 3, ("episode",))]
    memory = Memory.from_defaults(
        session_id="alice\x00", token_limit=1500, memory_blocks=poolsplit_memory_blocks([], pools)
    )
    memory.put(ChatMessage(role="user", content="my staging password hint is number 1"))
    with pytest.raises(ArgumentError, match="session_id 'alice.x00' contains NUL"):
        memory.get()


def test_a_flush_whose_write_fails_keeps_its_lines_for_the_next_flush(tmp_path):
    # LlamaIndex archives the lines out of its chat queue before the block's
    # aput: a failed write left them in neither place.
    import sqlite3

    from poolsplit_adapters.stores import SQLiteMemoryStore

    class Flaky(SQLiteMemoryStore):
        failures = 0

        def commit(self, change: Any) -> Any:
            if self.failures:
                self.failures -= 1
                raise sqlite3.OperationalError("disk I/O error (injected)")
            return super().commit(change)

    durable = Flaky(tmp_path / "m.db")
    pools = [Pool("corrections", 0, 0, ("correction",)), Pool("episodes", 300, 3, ("episode",))]
    store = poolsplit_memory_blocks([], pools, store=durable)[1].store

    def line(n: int) -> ChatMessage:
        return ChatMessage(role="user", content="line %d of the ledger" % n, additional_kwargs={"session_id": "s"})

    durable.failures = 2
    for n in (0, 1):
        with pytest.raises(sqlite3.OperationalError):
            store.flush([line(n)])
    assert store.unflushed == 2 and durable.entries() == []
    # A refused line is not kept (it would fail again); the kept lines are written before the error.
    with pytest.raises(ArgumentError, match=r"message 0: session_id .*; the other lines were written \(2\)"):
        store.flush([ChatMessage(role="user", content="x", additional_kwargs={"session_id": "a\x00"})])
    assert store.unflushed == 0 and len(durable.entries()) == 2
    written = store.flush([line(2)])
    assert [e["content"] for e in written] == ["user: line 2 of the ledger"]
    assert sorted(e["content"] for e in durable.entries()) == ["user: line %d of the ledger" % n for n in (0, 1, 2)]
    assert store.gate_report.to_dict()["written"] == 3


async def test_a_store_write_that_fails_during_an_agent_turn_is_warned_and_the_turn_answers(tmp_path):
    # Found by an adversarial run: the block's write raised out of Memory.aput and failed
    # the FunctionAgent's turn (its answer lost), though the lines were kept for the next flush.
    import sqlite3

    from poolsplit_adapters.stores import SQLiteMemoryStore

    class ReadOnly(SQLiteMemoryStore):
        failing = True

        def commit(self, change: Any) -> Any:
            if self.failing:
                raise sqlite3.OperationalError("attempt to write a readonly database")
            return super().commit(change)

    durable = ReadOnly(tmp_path / "m.db")
    pools = [Pool("corrections", 0, 0, ("correction",)), Pool("episodes", 300, 3, ("episode",))]
    blocks = poolsplit_memory_blocks([], pools, store=durable, write_gate=WriteGate(standing=None))
    memory = Memory.from_defaults(
        session_id="s", token_limit=60, chat_history_token_ratio=0.5, token_flush_size=10, memory_blocks=blocks
    )
    llm = MockFunctionCallingLLM(
        response_generator=lambda messages, **kw: ChatMessage(role="assistant", content="noted")
    )
    agent = FunctionAgent(tools=[], llm=llm)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnflushedWarning)
        answers = [
            str(await agent.run(user_msg="turn %d: the deploy window is friday" % n, memory=memory)) for n in range(3)
        ]
    assert answers == ["noted", "noted", "noted"]
    assert [str(w.message) for w in caught if w.category is UnflushedWarning] == [
        "PoolSplitMemoryStore: the write of flushed chat to ReadOnly failed (OperationalError: attempt to write "
        "a readonly database); 2 line(s) kept, written first by the next flush (unflushed)"
    ]
    store = blocks[1].store
    assert store.unflushed == 2 and durable.entries() == []
    assert store.last_selection is not None and store.last_selection.notes["unflushed"] == {
        "lines": 2,
        "store": "ReadOnly",
        "error": "OperationalError: attempt to write a readonly database",
    }
    durable.failing = False
    assert str(await agent.run(user_msg="turn 3: the deploy window is friday", memory=memory)) == "noted"
    assert sorted(e["content"] for e in durable.entries()) == [
        "assistant: noted",  # both answers: the second a repeat of the first, kept once
        "user: turn 0: the deploy window is friday",
        "user: turn 1: the deploy window is friday",
    ]
    assert store.unflushed == 0 and "unflushed" not in store.last_selection.notes


def test_one_line_with_a_session_id_no_store_can_hold_does_not_lose_the_flushs_other_lines(tmp_path):
    # LlamaIndex has archived every line of the flush: refusing the whole
    # batch for one bad session id lost the others.
    from poolsplit_adapters.stores import SQLiteMemoryStore

    durable = SQLiteMemoryStore(tmp_path / "m.db")
    pools = [Pool("corrections", 0, 0, ("correction",)), Pool("episodes", 300, 3, ("episode",))]
    store = poolsplit_memory_blocks([], pools, store=durable)[1].store
    said = [
        ChatMessage(role="user", content="the invoice run is on Mondays", additional_kwargs={"session_id": "s"}),
        ChatMessage(role="user", content="a line of a broken session", additional_kwargs={"session_id": "b\x00"}),
        ChatMessage(role="assistant", content="noted: Mondays", additional_kwargs={"session_id": "s"}),
    ]
    with pytest.raises(ArgumentError, match=r"^flush refused message 1: session_id 'b.x00' contains NUL"):
        store.flush(said)
    assert sorted((e["type"], e["content"]) for e in durable.entries()) == [
        ("episode", "assistant: noted: Mondays"),
        ("episode", "user: the invoice run is on Mondays"),
        ("fact", "the invoice run is on Mondays"),  # the user's statement, kept on its own
    ]
    assert {e["session"] for e in durable.entries()} == {"s"} and store.unflushed == 0


def test_a_flush_filter_that_raises_on_one_message_does_not_lose_the_flushs_other_lines():
    # Found by an adversarial run: a host's filter that reads m.content raised on the
    # model's tool call (content None); the flush raised before writing anything, and
    # LlamaIndex's Memory had archived every line of the batch: all of them were lost.
    from llama_index.core.base.llms.types import ToolCallBlock

    pools = [Pool("corrections", 0, 0, ("correction",)), Pool("episodes", 300, 5, ("episode",))]
    blocks = poolsplit_memory_blocks(
        [], pools, write_gate=WriteGate(standing=None), flush_filter=lambda m: "password" not in m.content
    )
    memory = Memory.from_defaults(
        session_id="s", token_limit=40, chat_history_token_ratio=0.5, token_flush_size=10, memory_blocks=blocks
    )
    said = [
        ChatMessage(role="user", content="when is the deploy window?"),
        ChatMessage(role="assistant", blocks=[ToolCallBlock(tool_call_id="c1", tool_name="lookup", tool_kwargs={})]),
        ChatMessage(role="assistant", content="friday at six"),
        ChatMessage(
            role="user", content="thanks; the code freeze starts on monday morning for the whole platform team"
        ),
    ]
    message = (
        r"^flush refused message 1: flush_filter raised TypeError: argument of type 'NoneType' is not "
        r"iterable; the other lines were written \(2\)$"
    )
    with pytest.raises(ArgumentError, match=message):
        for m in said:
            memory.put(m)
    store = blocks[1].store
    assert sorted(e["content"] for e in store.entries()) == [
        "assistant: friday at six",
        "user: when is the deploy window?",
    ]
    assert store.unflushed == 0


def test_a_failed_write_inside_a_turn_still_names_the_lines_the_flush_refused(tmp_path):
    # Found by an adversarial run: with the store down, the warning named the failed write
    # only; a message the flush refused (not kept, it would fail again) vanished unreported.
    import sqlite3

    from poolsplit_adapters.stores import SQLiteMemoryStore

    class Down(SQLiteMemoryStore):
        def commit(self, change: Any) -> Any:
            raise sqlite3.OperationalError("disk I/O error")

    pools = [Pool("corrections", 0, 0, ("correction",)), Pool("episodes", 300, 5, ("episode",))]
    store = poolsplit_memory_blocks(
        [],
        pools,
        store=Down(tmp_path / "m.db"),
        write_gate=WriteGate(standing=None),
        flush_filter=lambda m: "x" in m.content,
    )[1].store
    said = [ChatMessage(role="user", content="x marks the spot"), ChatMessage(role="assistant", content=None)]
    with pytest.warns(UnflushedWarning) as caught:
        assert store.flush(said, keep_failed=True) == []
    assert [str(w.message) for w in caught] == [
        "PoolSplitMemoryStore: the write of flushed chat to Down failed (OperationalError: disk I/O error); "
        "1 line(s) kept, written first by the next flush (unflushed); refused, not kept: message 1: "
        "flush_filter raised TypeError: argument of type 'NoneType' is not iterable"
    ]
    assert store.unflushed == 1


def test_a_flushed_line_with_a_lone_surrogate_is_written_with_the_flushs_other_lines():
    # Found by an adversarial run: the exchange id hashed the raw text, whose lone surrogate
    # UTF-8 cannot encode; the flush raised before writing, and LlamaIndex had archived every line.
    pools = [Pool("standing", 300, 10, ("instruction", "preference")), Pool("episodes", 300, 3, ("episode",))]
    store = poolsplit_memory_blocks([], pools)[1].store
    store.flush(
        [
            ChatMessage(role="user", content="the invoice run is on Mondays"),
            ChatMessage(role="user", content="Always use \ud800 tabs."),
            ChatMessage(role="assistant", content="noted"),
        ]
    )
    assert sorted((e["type"], e["content"]) for e in store.entries()) == [
        ("episode", "assistant: noted"),
        ("episode", "user: Always use \ufffd tabs."),
        ("episode", "user: the invoice run is on Mondays"),
        ("fact", "the invoice run is on Mondays"),  # the user's statement, kept on its own
        ("instruction", "Always use \ufffd tabs."),
    ]
    assert store.unflushed == 0


def test_a_flushed_line_a_reader_sees_nothing_of_is_refused_as_empty_not_written_as_a_bare_label():
    # Found by an adversarial run: the gate judged "user: \u200b", role label included,
    # so a line of only zero-width characters (or of a lone surrogate, stored as U+FFFD)
    # was written to long-term memory as "user: " and an invisible rest.
    pools = [Pool("corrections", 0, 0, ("correction",)), Pool("episodes", 300, 3, ("episode",))]
    store = poolsplit_memory_blocks([], pools, write_gate=WriteGate(standing=None))[1].store
    said = [
        ChatMessage(role="user", content="\u200b\u200c\u2060"),
        ChatMessage(role="user", content="\ud800"),
        ChatMessage(role="assistant", content="noted"),
    ]
    written = store.flush(said)
    assert [e["content"] for e in written] == ["assistant: noted"]
    assert [e["content"] for e in store.entries()] == ["assistant: noted"]
    assert store.gate_report.to_dict() == {"written": 1, "refused": {"empty": 2}}


def test_flushed_chat_carries_the_store_namespace_and_is_recalled():
    blocks = poolsplit_memory_blocks(
        memory_entries(4, namespace="t"), CHAT_POOLS, now=NOW, visibility=Visibility(namespace="t")
    )
    memory = Memory.from_defaults(session_id="s", token_limit=1500, chat_history_token_ratio=0.2, memory_blocks=blocks)
    for message in _flood(12):
        memory.put(message)
    store = blocks[1].store
    episodes = [e for e in store.index if e["type"] == "episode"]
    assert {e["namespace"] for e in episodes} == {"t"}
    memory.put(ChatMessage(role="user", content="did the nightly deploy finish?"))
    markers = parse_markers(_memory_section(memory.get()))
    assert [m["pool"] for m in markers].count("episodes") == 3
    assert [d.reason for d in store.last_selection.dropped if d.reason == Reason.NAMESPACE] == []


def test_an_edited_correction_is_seen_on_the_next_call():
    blocks = poolsplit_memory_blocks(memory_entries(), POOLS, now=NOW)
    memory = Memory.from_defaults(session_id="s", token_limit=2000, memory_blocks=blocks)
    memory.put(ChatMessage(role="user", content="deploy"))
    assert CORRECTIONS[0] in _memory_section(memory.get())
    store = blocks[0].store
    old = next(e for e in store.index if e["id"] == "fix-0")
    store.index.replace(old, dict(old, content="NEW: squash before merging."))
    section = _memory_section(memory.get())  # same message, same size, same second
    assert "NEW: squash before merging." in section and CORRECTIONS[0] not in section


def test_the_two_blocks_share_one_selection_per_message_and_version():
    store = PoolSplitMemoryStore(memory_entries(), POOLS, now=NOW)
    first = store.select_for("deploy", "s")
    assert store.select_for("deploy", "s") is first
    assert store.select_for("deploy", "other") is not first
    store.index.add({"id": "new", "type": "fact", "content": "a new deploy fact"})
    assert store.select_for("deploy", "s") is not first


class ListStore:
    """The long-term store protocol over a list (a stand-in for the SQLite
    store): ids and times assigned on add, version bumped by every write."""

    def __init__(self, entries: Iterable[Mapping[str, Any]] = ()) -> None:
        self.rows: List[Dict[str, Any]] = []
        self.writes = 0
        self.add(entries)

    def add(self, entries: Iterable[Mapping[str, Any]]) -> List[str]:
        ids = []
        for entry in entries:
            row = dict(entry)
            row.setdefault("id", "row-%d" % len(self.rows))
            row.setdefault("created", "2026-07-07T00:00:00Z")
            self.rows.append(row)
            ids.append(row["id"])
        self.writes += 1
        return ids

    def get(self, entry_id: str) -> Optional[Dict[str, Any]]:
        return next((r for r in self.rows if r["id"] == entry_id), None)

    def supersede(self, entry_id: str, new_entry: Mapping[str, Any]) -> str:
        (new_id,) = self.add([new_entry])
        old = self.get(entry_id)
        assert old is not None
        old["superseded_by"] = new_id
        return new_id

    def delete(self, entry_id: str) -> bool:
        before = len(self.rows)
        self.rows = [r for r in self.rows if r["id"] != entry_id]
        self.writes += 1
        return len(self.rows) < before

    def entries(self, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        return [r for r in self.rows if namespace is None or r.get("namespace") == namespace]

    def select(self, pools: Any, context: Any = None, **options: Any) -> Selection:
        return select(self.rows, pools, context, **options)

    @property
    def version(self) -> int:
        return self.writes


def test_a_long_term_store_receives_flushed_chat_and_is_recalled_per_session():
    store = ListStore()
    sessions = _sessions(share_chat=False, store=store)
    for message in _flood(12, tag=" for alice"):
        sessions["alice"].put(message)
    memory_store = sessions["alice"].memory_blocks[1].store
    assert [e for e in memory_store.index if e["type"] == "episode"] == []  # written to the store instead
    assert {(r["type"], r["session"]) for r in store.rows} == {("episode", "alice")}
    assert _chat_sources(sessions["bob"], "did the nightly deploy finish for alice?") == []
    assert _chat_sources(sessions["alice"], "did the nightly deploy finish for alice?") == ["session:alice"]
    # A write to the store is seen on the next call (the memo keys on its version).
    old = store.rows[0]
    store.supersede(old["id"], dict(old, id="edited", content="EDITED: did the nightly deploy finish for alice?"))
    section = _memory_section(sessions["alice"].get())
    assert "EDITED: did the nightly deploy finish for alice?" in section
    assert {d.entry["id"]: d.reason for d in memory_store.last_selection.dropped}[old["id"]] == Reason.INACTIVE


def test_context_chat_engine_sends_corrections_every_turn():
    blocks = poolsplit_memory_blocks(memory_entries(), POOLS, now=NOW)
    memory = Memory.from_defaults(session_id="chat", token_limit=900, memory_blocks=blocks)
    retriever = PoolSplitRetriever([Pool("facts", 100, 2, ("fact",))], _nodes(memory_entries()), now=NOW)
    engine = ContextChatEngine.from_defaults(retriever=retriever, memory=memory, llm=MockLLM())
    for turn in range(4):
        # The facts-only retriever admits no correction: said every time.
        with pytest.warns(UnadmittedCorrectionWarning) as caught:
            reply = engine.chat("turn %d: is the staging deploy healthy?" % turn)
        unadmitted = [str(w.message) for w in caught if w.category is UnadmittedCorrectionWarning]
        assert [m.split(" is an always-scope")[0] for m in unadmitted] == [
            "entry 'fix-0' (index 0)",
            "entry 'fix-1' (index 1)",
            "entry 'fix-2' (index 2)",
        ]
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
        assert str(result) == "noted"
    assert len(seen) == 3
    for messages in seen:
        text = "\n".join(m.content or "" for m in messages)
        assert all(c in text for c in CORRECTIONS)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"content": None}, "entry at index 1: field 'content' must be a string, got NoneType None"),
        ({"type": "fact"}, "entry at index 1: field 'content' is missing (every entry needs its text)"),
        ({"content": "x", "id": 5}, "entry at index 1: field 'id' must be a string or None, got int 5"),
        ({"content": "x", "type": 3}, "entry at index 1: field 'type' must be a string, got int 3"),
        ("x", "entry at index 1: is not a mapping (got str 'x')"),
    ],
)
def test_nodes_from_names_a_malformed_entry_instead_of_making_a_node_no_filter_finds(entry, message):
    # Found by an adversarial run: a content of None became the text "None", a type of 3 a
    # node no pool's filter ever recalls, and an int id a pydantic error from inside TextNode.
    with pytest.raises(EntryError, match="^%s$" % re.escape(message)):
        nodes_from([{"content": "fine", "type": "fact"}, entry])


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ("deploy", "context must be a mapping or None, got str 'deploy'"),
        ({"message": 5}, "context['message'] must be a string, got int 5"),
    ],
)
def test_vector_index_memory_select_checks_its_context_as_every_store_does(context, message):
    # Found by an adversarial run: a str context failed with "'str' object has no attribute
    # 'get'" and a message of 5 was searched for as "5", where every other store's select raises.
    memory = VectorIndexMemory(VectorStoreIndex([], embed_model=MockEmbedding(embed_dim=8)))
    memory.add([{"content": "deploy friday", "type": "fact"}])
    pools = [Pool("facts", 300, 5, ("fact",))]
    with pytest.raises(TypeError, match="^%s$" % re.escape(message)):
        memory.select(pools, context)
    with pytest.raises(TypeError, match="^%s$" % re.escape(message)):
        InProcessStore().select(pools, context)  # the contract's rule, on another store


def test_the_postprocessor_takes_a_node_given_twice_once_and_refuses_two_nodes_with_one_id():
    # Found by an adversarial run: a node given twice (two retrievers merged by hand) was
    # selected twice, shown twice and counted twice against its pool's budget; two different
    # nodes under one id both went through, where the retriever refuses them.
    fact = TextNode(text="deploys go out on friday", id_="f1", metadata={"type": "fact"})
    other = TextNode(text="the freeze starts monday", id_="f2", metadata={"type": "fact"})
    post = PoolSplitNodePostprocessor(pools=[Pool("facts", 300, 5, ("fact",))], now=NOW)
    given = [
        NodeWithScore(node=fact, score=0.9),
        NodeWithScore(node=other, score=0.5),
        NodeWithScore(node=fact, score=0.4),
    ]
    got = post.postprocess_nodes(given, query_str="deploy")
    assert sorted(n.node.node_id for n in got) == ["f1", "f2"]
    assert post.last_selection is not None and post.last_selection.stats["facts"].entries_used == 2
    assert [n.node.metadata[SELECTION_KEY]["upstream_score"] for n in got if n.node.node_id == "f1"] == [0.9]
    clash = TextNode(text="deploys go out on monday", id_="f1", metadata={"type": "fact"})
    with pytest.raises(ArgumentError, match=r"^nodes\[0\] and nodes\[2\] share the node id 'f1' with other content"):
        post.postprocess_nodes([given[0], given[1], NodeWithScore(node=clash, score=0.4)], query_str="deploy")


def test_node_without_type_is_a_note_and_bad_input_names_the_node():
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
    with pytest.raises(TypeError, match=r"nodes\[1\] must be a llama_index node \(TextNode, Document, ...\) or "):
        PoolSplitRetriever(POOLS, nodes=[untyped, "text"])
    with pytest.raises(TypeError, match="nodes must be a list of nodes, got str"):
        PoolSplitRetriever(POOLS, nodes="text")
    # Found by an adversarial run: "'TextNode' object has no attribute 'node'" from inside the postprocessor.
    post = PoolSplitNodePostprocessor(pools=POOLS)
    with pytest.raises(
        TypeError, match=r"^nodes\[1\] must be a NodeWithScore .*got TextNode: wrap it as NodeWithScore"
    ):
        post.postprocess_nodes([NodeWithScore(node=untyped), bad])
    with pytest.raises(
        TypeError, match=r"^nodes\[0\] must be a NodeWithScore \(what a retriever returns\), got NoneType$"
    ):
        post.postprocess_nodes([None])
    # Found by the same run: "Can't instantiate abstract class BaseNode" from inside pydantic.
    with pytest.raises(TypeError, match=r"^always_nodes\[0\] must be a llama_index node \(TextNode, ...\), got dict$"):
        PoolSplitNodePostprocessor(pools=POOLS, always_nodes=[{"content": "Never force-push.", "scope": "always"}])
    with pytest.raises(TypeError, match=r"^always_nodes must be a list of nodes, got TextNode$"):
        PoolSplitNodePostprocessor(pools=POOLS, always_nodes=untyped)
    # And a single entry for the memory blocks' list: read as its keys, entry 0 "is not a mapping (got str 'id')".
    fix = {"id": "fix-1", "type": "correction", "scope": "always", "content": "Never force-push."}
    with pytest.raises(TypeError, match=r"^entries must be a sequence of entry mappings, got dict \{'id': 'fix-1'"):
        poolsplit_memory_blocks(fix, POOLS)
    with pytest.raises(TypeError, match=r"^entries must be a sequence of entry mappings, got dict \{'id': 'fix-1'"):
        InProcessStore(fix)
    # A node given where entries go: the error names the converter (a newcomer's first mistake).
    with pytest.raises(
        EntryError,
        match=r"is not a mapping \(got TextNode .*\); .* with poolsplit_adapters\.llama_index\.node_to_entry$",
    ):
        poolsplit_memory_blocks([TextNode(text="Never force-push.", metadata={"type": "correction"})], POOLS)


def test_tags_and_other_arguments_are_checked_and_named():
    nodes = _nodes(memory_entries(4))
    with pytest.raises(ValueError, match="tags must be a list of strings, not the bare string 'ops'"):
        PoolSplitRetriever(POOLS, nodes, tags="ops")
    retriever = PoolSplitRetriever(POOLS, nodes, now=NOW)
    with pytest.raises(ValueError, match="tags must be a list of strings, not the bare string 'ops'"):
        retriever.retrieve_with_selection("deploy", tags="ops")
    with pytest.raises(TypeError, match="k must be an int >= 0 or None, got str '3'"):
        retriever.retrieve_with_selection("deploy", k="3")
    with pytest.raises(TypeError, match=r"PoolSplitRetriever got unexpected keyword argument\(s\) 'namespace'"):
        PoolSplitRetriever(POOLS, nodes, namespace="A")
    with pytest.raises(TypeError, match=r"PoolSplitMemoryStore got unexpected keyword argument\(s\) 'sesion'"):
        poolsplit_memory_blocks(memory_entries(), POOLS, sesion="x")
    # a misspelt keyword of the class's own is named, and the list holds its own keywords too
    with pytest.raises(TypeError, match=r"'shared_chat'; did you mean 'share_chat'\? \(known: .*flush_filter, "):
        poolsplit_memory_blocks(memory_entries(), POOLS, shared_chat=True)
    with pytest.raises(TypeError, match=r"'show_selection_to_lm'; did you mean 'show_selection_to_llm'\? \(known: "):
        PoolSplitRetriever(POOLS, nodes, show_selection_to_lm=True)
    nodes_got, selection = retriever.retrieve_with_selection("deploy", tags=["ops"], k=1, namespace="nowhere")
    assert [n.node.node_id for n in nodes_got] == []
    assert {d.reason for d in selection.dropped} == {Reason.NAMESPACE}


def test_the_index_recall_arguments_are_checked_when_the_retriever_is_built():
    # Found by an adversarial run: a non-index failed as if LlamaIndex's
    # internals had changed (FrameworkInternalsError), type_key=None in
    # LlamaIndex's MetadataFilter on the first query, a model that is not
    # one on the first query ('str' object has no attribute ...).
    index = VectorStoreIndex([], embed_model=MockEmbedding(embed_dim=8))
    with pytest.raises(TypeError, match="^index must be a LlamaIndex VectorStoreIndex, got str$"):
        PoolSplitRetriever.from_vector_store_index("index", POOLS)
    for bad in (None, ""):
        with pytest.raises(TypeError, match="^type_key must be a non-empty string, got "):
            PoolSplitRetriever.from_vector_store_index(index, POOLS, type_key=bad)
    with pytest.raises(TypeError, match="^embed_model must be a BaseEmbedding, got str 'x'$"):
        PoolSplitRetriever.from_vector_store_index(index, POOLS, embed_model="x")


def test_the_scope_keyword_removed_in_0_3_is_refused_by_every_llama_index_class():
    nodes = [TextNode(text="a memory", id_="a", metadata={"namespace": "A"}), TextNode(text="b memory", id_="b")]
    with pytest.raises(TypeError, match=r"PoolSplitRetriever: scope= was removed in 0.3; use visibility="):
        PoolSplitRetriever(POOLS, nodes, now=NOW, scope=Visibility(namespace="A"))
    with pytest.raises(TypeError, match=r"PoolSplitNodePostprocessor: scope= was removed in 0.3; use visibility="):
        PoolSplitNodePostprocessor(pools=POOLS, now=NOW, scope=Visibility(namespace="A"))
    with pytest.raises(TypeError, match=r"PoolSplitMemoryStore: scope= was removed in 0.3; use visibility="):
        PoolSplitMemoryStore(
            [{"id": "a", "content": "a memory", "namespace": "A"}], POOLS, scope=Visibility(namespace="A")
        )
    retriever = PoolSplitRetriever(POOLS, nodes, now=NOW, visibility=Visibility(namespace="A"))
    assert [n.node.node_id for n in retriever.retrieve("memory")] == ["a"]
    post = PoolSplitNodePostprocessor(pools=POOLS, now=NOW, visibility=Visibility(namespace="A"))
    assert [n.node.node_id for n in post.postprocess_nodes([NodeWithScore(node=n) for n in nodes])] == ["a"]


def test_the_postprocessor_keeps_the_score_each_node_came_with():
    """The selection's score replaces the earlier stage's, as a reranker's
    does; the one the node came with is kept beside it, so a pipeline can
    still read what the vector store said (restored corrections had none)."""
    nodes = [
        NodeWithScore(node=TextNode(text="deploy ok", id_="n1", metadata={"type": "note"}), score=0.9),
        NodeWithScore(node=TextNode(text="other", id_="n2", metadata={"type": "note"}), score=0.8),
        NodeWithScore(node=TextNode(text="no score", id_="n3", metadata={"type": "note"})),
    ]
    fix = TextNode(text="Use cents.", id_="fix", metadata={"type": "correction", "scope": "always"})
    post = PoolSplitNodePostprocessor(
        pools=[Pool("fixes", 0, 0, ("correction",)), Pool("notes", 100, 3, ("note",))], always_nodes=[fix], now=NOW
    )
    out = post.postprocess_nodes(nodes, query_bundle=QueryBundle("deploy"))
    kept = {n.node.node_id: n.node.metadata["poolsplit"].get("upstream_score", "none") for n in out}
    assert kept == {"fix": "none", "n1": 0.9, "n2": 0.8, "n3": "none"}
    assert [n.score for n in nodes] == [0.9, 0.8, None]  # the caller's nodes unchanged
    assert "upstream_score" not in nodes[0].node.metadata.get("poolsplit", {})
