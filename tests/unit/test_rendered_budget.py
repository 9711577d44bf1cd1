"""What a rendered entry costs: its text and its marker (issue 39: a
1,024-token budget injected some 2,000 tokens, half of them markers)."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any, Callable, List, Tuple

import pytest
from agent_fakes import ToolCallingFakeModel, thread
from hypothesis import given
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import SystemMessage
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from strategies import contexts, nows, pools, stores

from poolsplit_adapters import EntryError, MemoryIndex, Pool, select
from poolsplit_adapters.langchain import (
    BaseStoreMemory,
    HashEmbeddings,
    PoolSplitMemoryMiddleware,
    RenderConfig,
    WriteConfig,
)
from poolsplit_adapters.langchain.vector_memory import VectorStoreMemory
from poolsplit_adapters.poolsplit import MAX_COST, default_token_counter
from poolsplit_adapters.relevance import RelevanceScorer
from poolsplit_adapters.render import RenderedCounter, marker_tokens, parse_markers
from poolsplit_adapters.stores import InProcessStore, SQLiteMemoryStore
from poolsplit_adapters.stores.chat_memory import ChatMemoryEntries
from poolsplit_adapters.tokens import load_encoding

NOW = datetime.datetime(2026, 7, 1, tzinfo=datetime.timezone.utc)
ENCODING = load_encoding("o200k_base")


def tokens(text: str) -> int:
    return len(ENCODING.encode_ordinary(text))


def rendered_tokens(system: SystemMessage) -> int:
    """The tokens of the markers in ``system`` (each marker and its text)."""
    blocks = str(system.content).split("\n<memory ")[1:]
    return sum(tokens("<memory " + block.split("</memory>")[0] + "</memory>") for block in blocks)


def test_a_marker_costs_what_its_rendered_text_costs_less_the_sample_text():
    written = (
        '<memory id="instruction-6f5a4803c4a14cc60ebd3f30" source="thread:t1" at="2026-01-01T09:00:00Z"'
        ' pool="notes">\nx\n</memory>'
    )
    assert marker_tokens(tokens, "notes") == tokens(written) - tokens("x")
    summary = written.replace(' pool="notes">', ' pool="notes" layer="summary">')
    assert marker_tokens(tokens, "notes", "summary") == tokens(summary) - tokens("x")


def test_the_rendered_counter_adds_the_marker_to_every_count_one_by_one_or_in_a_batch():
    counter = RenderedCounter(tokens, "notes")
    overhead = marker_tokens(tokens, "notes")
    texts = ["Quote amounts in integer cents.", "Deploys go out on Tuesdays."]
    assert [counter(t) for t in texts] == [tokens(t) + overhead for t in texts]
    assert counter.count_many(texts) == [tokens(t) + overhead for t in texts]
    assert counter.count_many([]) == []


def test_the_block_the_model_reads_keeps_to_the_pools_budget():
    store = InMemoryStore()
    notes = [
        {
            "id": "note-%02d" % n,
            "type": "note",
            "content": "Deploy note %d: the release train leaves on Tuesday morning." % n,
            "source": "thread:t1",
            "created": "2026-06-%02dT09:00:00Z" % (n + 1),
        }
        for n in range(20)
    ]
    BaseStoreMemory(store, ("memories", "ana")).put_many(notes)
    budget = 400
    memory = PoolSplitMemoryMiddleware(
        [Pool("notes", budget, 20, ("note",))],
        namespace=("memories", "ana"),
        now=NOW,
        write=WriteConfig(remember=False),
    )
    model = ToolCallingFakeModel()
    agent = create_agent(model, middleware=[memory], checkpointer=InMemorySaver(), store=store)
    agent.invoke({"messages": [("user", "when does the deploy train leave?")]}, thread("t1"))
    (system,) = [m for m in model.requests[0] if isinstance(m, SystemMessage)]
    shown = parse_markers(str(system.content))
    blocks = str(system.content).split("\n<memory ")[1:]
    rendered = sum(tokens("<memory " + block.split("</memory>")[0] + "</memory>") for block in blocks)
    # Each entry costs its text and a marker, as the model reads it: the
    # markers shown and their texts fit the pool's 400 tokens; counted by
    # text alone, all 20 notes (some 280 tokens of text) would have loaded.
    assert rendered <= budget
    assert 3 <= len(shown) < len(notes)
    assert sum(tokens(n["content"]) for n in notes) <= budget


def test_progressive_loading_over_a_store_that_counts_its_own_entries_still_loads_summaries():
    # A store of the contract (here SQLite) costs its entries' text with its
    # own counter; the summaries must be counted alike. Counted with the
    # marker added, a summary looked dearer than the full text: every note
    # loaded in full, past the budget.
    notes = [
        {
            "id": "note-%02d" % n,
            "type": "note",
            "namespace": "memories.ana",
            "summary": "Deploy note %d." % n,
            "content": "Deploy note %d: the release train leaves on Tuesday after the checks pass in staging." % n,
            "source": "thread:t1",
            "created": "2026-06-%02dT09:00:00Z" % (n + 1),
        }
        for n in range(20)
    ]
    store = SQLiteMemoryStore(":memory:")
    store.add(notes)
    memory = PoolSplitMemoryMiddleware(
        [Pool("notes", 1300, 20, ("note",))],
        namespace=("memories", "ana"),
        store=store,
        now=NOW,
        write=WriteConfig(remember=False),
        render=RenderConfig(progressive=True),
    )
    agent = create_agent(ToolCallingFakeModel(), middleware=[memory], checkpointer=InMemorySaver())
    agent.invoke({"messages": [("user", "when does the deploy train leave?")]}, thread("t1"))
    selection = memory.last_selection
    assert selection is not None
    # Each summary costs its text and a summary's marker, as the full texts
    # cost theirs (the store's count plus the marker): the summaries load.
    marker = marker_tokens(tokens, "notes", "summary")
    assert sorted((c.entry["id"], c.layer, c.cost) for c in selection.chosen) == sorted(
        (n["id"], "summary", tokens(n["summary"]) + marker) for n in notes
    )


def _deploy_notes() -> List[dict]:
    # Twenty notes of one length (so one cost each, whatever the counter).
    return [
        {
            "id": "note-%02d" % n,
            "type": "note",
            "namespace": "memories.ana",
            "content": "Deploy note %02d: the release train leaves on Tuesday morning." % n,
            "source": "thread:t1",
            "created": "2026-06-%02dT09:00:00Z" % (n + 1),
        }
        for n in range(20)
    ]


def _sqlite() -> Tuple[Any, Callable[[str], int]]:
    store = SQLiteMemoryStore(":memory:")
    store.add(_deploy_notes())
    return store, default_token_counter


def _in_process() -> Tuple[Any, Callable[[str], int]]:
    return InProcessStore(_deploy_notes()), default_token_counter


def _vector_store() -> Tuple[Any, Callable[[str], int]]:
    store = VectorStoreMemory(InMemoryVectorStore(HashEmbeddings()))
    store.add(_deploy_notes())
    return store, tokens  # its retriever counts with the adapters' default: tiktoken o200k_base


def _notes_agent(store: Any, budget: int) -> Tuple[PoolSplitMemoryMiddleware, ToolCallingFakeModel, Any]:
    """An agent whose middleware recalls ``store``'s notes into one pool of ``budget`` tokens."""
    memory = PoolSplitMemoryMiddleware(
        [Pool("notes", budget, 20, ("note",))],
        namespace=("memories", "ana"),
        store=store,
        now=NOW,
        write=WriteConfig(remember=False),
    )
    model = ToolCallingFakeModel()
    return memory, model, create_agent(model, middleware=[memory], checkpointer=InMemorySaver())


@pytest.mark.parametrize("make_store", [_sqlite, _in_process, _vector_store], ids=["sqlite", "in-process", "vector"])
def test_the_block_keeps_to_the_budget_over_a_store_of_the_contract(make_store):
    # Such a store costs each entry's text with its own counter; the
    # middleware adds the marker its counter counts (RenderedCounter's
    # overhead) to each of those costs. Counted by text alone, all 20
    # notes (some 300 tokens of text) loaded into the 400-token pool.
    store, text_counter = make_store()
    notes = _deploy_notes()
    budget = 400
    memory, model, agent = _notes_agent(store, budget)
    agent.invoke({"messages": [("user", "when does the deploy train leave?")]}, thread("t1"))
    (system,) = [m for m in model.requests[0] if isinstance(m, SystemMessage)]
    shown = parse_markers(str(system.content))
    honest = {text_counter(n["content"]) + marker_tokens(tokens, "notes") for n in notes}
    assert len(honest) == 1  # one cost for every note
    (cost,) = honest
    assert sum(text_counter(n["content"]) for n in notes) <= budget < cost * len(notes)
    assert len(shown) == budget // cost
    assert rendered_tokens(system) <= budget
    selection = memory.last_selection
    assert selection is not None
    assert [c.cost for c in selection.chosen] == [cost] * (budget // cost)


def test_a_store_given_token_counts_keeps_them_and_the_others_get_their_marker():
    notes = _deploy_notes()
    for note in notes[:10]:
        note["token_count"] = 7  # the host's count: taken as given (the core's rule)
    store = InProcessStore(notes)
    memory = PoolSplitMemoryMiddleware(
        [Pool("notes", 4000, 20, ("note",))],
        namespace=("memories", "ana"),
        store=store,
        now=NOW,
        write=WriteConfig(remember=False),
    )
    agent = create_agent(ToolCallingFakeModel(), middleware=[memory], checkpointer=InMemorySaver())
    agent.invoke({"messages": [("user", "when does the deploy train leave?")]}, thread("t1"))
    selection = memory.last_selection
    assert selection is not None
    counted = default_token_counter(notes[0]["content"]) + marker_tokens(tokens, "notes")
    assert sorted((c.entry["id"], c.cost) for c in selection.chosen) == sorted(
        (n["id"], 7 if n.get("token_count") else counted) for n in notes
    )


def _unique(store: List[dict]) -> List[dict]:
    seen: set = set()
    return [e for e in store if id(e) not in seen and not seen.add(id(e))]  # type: ignore[func-returns-value]


def _chosen(selection: Any) -> Any:
    chosen = [(id(c.entry), c.pool, c.always, c.layer, c.cost) for c in selection.chosen]
    return chosen, dict(selection.counts)


def _by_words(entry: Any, context: Any = None, *, now: Any = None) -> float:
    # A plain scorer function: the index serves it from its generic (best-first) source.
    message = set(((context or {}).get("message") or "").split())
    return float(len(message & set(entry["content"].split()))) + 0.5


MARKERS = st.sampled_from([0, 1, 3, 7, marker_tokens(default_token_counter, "pool0")])


@pytest.mark.filterwarnings("ignore::poolsplit_adapters.UnadmittedCorrectionWarning")
@pytest.mark.parametrize(
    "scorer, use_numpy", [(None, True), (None, False), (_by_words, True)], ids=["columns", "no-numpy", "best-first"]
)
@given(store=stores(), plan=pools(), context=contexts, now=nows, marker=MARKERS)
def test_the_index_with_a_marker_cost_selects_as_the_core_with_a_rendered_counter(
    scorer, use_numpy, store, plan, context, now, marker
):
    # The invariant: each counted cost plus marker_cost, a given token_count
    # as given, is the core's selection with RenderedCounter (same entries,
    # same costs, same counts of what did not load).
    store = _unique(store)
    options = {} if scorer is None else {"scorer": scorer}
    index = MemoryIndex(store, use_numpy=use_numpy)
    counter = RenderedCounter(default_token_counter, overhead=marker)
    expected = select(store, plan, context, now=now, token_counter=counter, **options)
    assert _chosen(index.select(plan, context, now=now, marker_cost=marker, **options)) == _chosen(expected)


@pytest.mark.filterwarnings("ignore::poolsplit_adapters.UnadmittedCorrectionWarning")
@given(store=stores(), plan=pools(), context=contexts, now=nows, marker=MARKERS)
def test_the_index_with_a_marker_cost_ranks_by_words_as_an_index_counting_the_marker(store, plan, context, now, marker):
    # The words columns (the adapters' default scorer): the same selection
    # as an index whose own counter counts the marker.
    store = _unique(store)
    scorer = RelevanceScorer()
    counted = MemoryIndex(store, token_counter=RenderedCounter(default_token_counter, overhead=marker))
    index = MemoryIndex(store)
    given_marker = index.select(plan, context, now=now, scorer=scorer, marker_cost=marker)
    assert _chosen(given_marker) == _chosen(counted.select(plan, context, now=now, scorer=scorer))


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3", None])
def test_a_marker_cost_that_is_not_a_count_is_refused_by_name(bad):
    with pytest.raises(ValueError, match=r"marker_cost must be an int >= 0"):
        MemoryIndex([{"content": "x"}]).select([Pool("p", 10, 1)], marker_cost=bad)


def test_a_marker_that_puts_a_cost_past_the_largest_names_the_entry():
    index = MemoryIndex([{"id": "huge", "content": "x"}], token_counter=lambda _text: MAX_COST - 1)
    with pytest.raises(EntryError, match=r"huge.*above the largest cost"):
        index.select([Pool("p", 10, 1)], marker_cost=5)
    assert index.select([Pool("p", 10, 1)], marker_cost=1).chosen == []  # MAX_COST itself: a cost, too big for 10


def test_the_llama_index_blocks_store_counts_its_marker_once_when_given_a_marker_cost():
    # Its counter counts each marker already (RenderedSettings): a
    # marker_cost from a caller (the agent middleware) is not added again.
    pools = [Pool("notes", 4000, 20, ("note",))]
    store = ChatMemoryEntries(_deploy_notes(), pools, now=NOW)
    plain = [(c.entry["id"], c.cost) for c in store.select(pools).chosen]
    assert [(c.entry["id"], c.cost) for c in store.select(pools, marker_cost=50).chosen] == plain
    assert plain[0][1] > store.settings.text_counter(_deploy_notes()[0]["content"])  # its marker is in


def test_the_async_turn_over_a_store_of_the_contract_counts_the_markers_too():
    store, text_counter = _sqlite()
    memory, model, agent = _notes_agent(store, 400)
    asyncio.run(agent.ainvoke({"messages": [("user", "when does the deploy train leave?")]}, thread("t1")))
    cost = text_counter(_deploy_notes()[0]["content"]) + marker_tokens(tokens, "notes")
    (system,) = [m for m in model.requests[0] if isinstance(m, SystemMessage)]
    assert len(parse_markers(str(system.content))) == 400 // cost
    assert rendered_tokens(system) <= 400
