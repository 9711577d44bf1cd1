"""What a rendered entry costs: its text and its marker (issue 39: a
1,024-token budget injected some 2,000 tokens, half of them markers)."""

from __future__ import annotations

import datetime

from agent_fakes import ToolCallingFakeModel, thread
from langchain.agents import create_agent
from langchain_core.messages import SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import BaseStoreMemory, PoolSplitMemoryMiddleware, RenderConfig, WriteConfig
from poolsplit_adapters.render import RenderedCounter, marker_tokens, parse_markers
from poolsplit_adapters.stores import SQLiteMemoryStore
from poolsplit_adapters.tokens import load_encoding

NOW = datetime.datetime(2026, 7, 1, tzinfo=datetime.timezone.utc)
ENCODING = load_encoding("o200k_base")


def tokens(text: str) -> int:
    return len(ENCODING.encode_ordinary(text))


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
        [Pool("notes", 600, 20, ("note",))],
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
    assert sorted((c.entry["id"], c.layer, c.cost) for c in selection.chosen) == sorted(
        (n["id"], "summary", tokens(n["summary"])) for n in notes
    )
