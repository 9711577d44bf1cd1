"""A task plan's standing room that the user's instructions leave unused
goes to the pools that cut entries (issue 39: at 1,024 tokens the standing
pool holds 640 of them, and five short instructions use some 350)."""

from __future__ import annotations

import datetime
import types
from typing import Any, Callable, Dict, List

import pytest
from agent_fakes import ToolCallingFakeModel, thread
from langchain.agents import create_agent
from langchain_core.messages import SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from poolsplit_adapters import Pool, select
from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware, PoolSplitRetriever, RecallConfig, WriteConfig
from poolsplit_adapters.memory.tasks import STANDING_POOL, plan_for_task, spill_standing
from poolsplit_adapters.render import parse_markers
from poolsplit_adapters.stores import InProcessStore, SQLiteMemoryStore
from poolsplit_adapters.tokens import load_encoding

NOW = datetime.datetime(2026, 7, 1, tzinfo=datetime.timezone.utc)
NS = ("memories", "ana")
ENCODING = load_encoding("o200k_base")


def words(text: str) -> int:
    return len(text.split())


def _entries() -> List[Dict[str, Any]]:
    said = [
        {"id": "i1", "type": "instruction", "content": "Always include version numbers."},
        {"id": "p1", "type": "preference", "content": "I prefer tabs over spaces."},
    ]
    facts = [
        {"id": "f%02d" % n, "type": "fact", "content": "The deploy train number %d leaves from platform %d." % (n, n)}
        for n in range(60)
    ]
    return [dict(e, namespace="memories.ana", created="2026-06-01T00:00:00Z") for e in said + facts]


def test_the_unused_standing_room_goes_to_the_pools_that_cut_entries_exactly():
    plan = plan_for_task("implementation", total_tokens=1024, total_entries=1024, entry_types=["fact", "instruction"])
    first = select(_entries(), plan, {"message": "deploy train"}, token_counter=words, now=NOW)
    standing = first.stats[STANDING_POOL]
    assert (standing.max_tokens, standing.tokens_used) == (640, 9)  # two statements of 4 and 5 words
    again = spill_standing(plan, first)
    assert again is not None
    budgets = {p.name: p.max_tokens for p in again}
    assert budgets[STANDING_POOL] == 9
    assert budgets["semantic"] == {p.name: p.max_tokens for p in plan}["semantic"] + 631
    assert sum(budgets.values()) == sum(p.max_tokens for p in plan)  # the total is kept
    second = select(_entries(), again, {"message": "deploy train"}, token_counter=words, now=NOW)
    kept = [c.entry["id"] for c in first.chosen if c.pool == STANDING_POOL]
    assert [c.entry["id"] for c in second.chosen if c.pool == STANDING_POOL] == kept == ["i1", "p1"]
    assert len(second.pools["semantic"]) > len(first.pools["semantic"])
    assert spill_standing(again, second) is None  # nothing left to move


def test_no_spill_when_the_standing_pool_cut_one_or_nothing_else_was_cut_or_the_plan_has_none():
    entries = _entries()
    plan = plan_for_task("implementation", total_tokens=1000, total_entries=1000, entry_types=["fact", "instruction"])
    few = [e for e in entries if e["type"] != "fact"] + entries[2:4]
    assert spill_standing(plan, select(few, plan, {}, token_counter=words, now=NOW)) is None  # nothing cut
    tight = [Pool("standing", 5, 9, ("instruction", "preference")), Pool("facts", 20, 9, ("fact",))]
    assert spill_standing(tight, select(entries, tight, {}, token_counter=words, now=NOW)) is None
    explicit = [Pool("facts", 20, 9, ("fact",))]
    assert spill_standing(explicit, select(entries, explicit, {}, token_counter=words, now=NOW)) is None


STORES: Dict[str, Callable[[], Any]] = {
    "langgraph": lambda: _langgraph(),
    "sqlite": lambda: _contract(SQLiteMemoryStore(":memory:")),
    "in-process": lambda: _contract(InProcessStore()),
}


def _langgraph() -> Any:
    store = InMemoryStore()
    for entry in _entries():
        store.put(NS, entry["id"], {k: v for k, v in entry.items() if k != "id"})
    return store


def _contract(store: Any) -> Any:
    store.add(_entries())
    return store


@pytest.mark.parametrize("kind", sorted(STORES))
def test_the_agent_loads_more_facts_with_the_room_its_instructions_left_on_every_store(kind):
    def injected(pools: Any, **recall: Any) -> List[Dict[str, str]]:
        memory = PoolSplitMemoryMiddleware(
            pools,
            namespace=NS,
            store=STORES[kind](),
            now=NOW,
            write=WriteConfig(remember=False),
            recall=RecallConfig(**recall),
        )
        model = ToolCallingFakeModel()
        agent = create_agent(model, middleware=[memory], checkpointer=InMemorySaver())
        agent.invoke({"messages": [("user", "which platform does the deploy train leave from?")]}, thread("t1"))
        (system,) = [m for m in model.requests[0] if isinstance(m, SystemMessage)]
        blocks = str(system.content).split("\n<memory ")[1:]
        marked = sum(len(ENCODING.encode_ordinary("<memory " + b.split("</memory>")[0] + "</memory>")) for b in blocks)
        assert marked <= 1024  # the room moved, the budget kept
        notes = memory.last_selection.notes if memory.last_selection is not None else {}
        moved = notes.get("standing_spilled")
        if pools == "auto":  # the report says where the room went: out of the standing pool, into the facts
            assert moved is not None and moved[STANDING_POOL] < 0 and sum(moved.values()) == 0
            assert set(moved) == {STANDING_POOL, "semantic"}
        else:
            assert moved is None
        return parse_markers(str(system.content))

    auto = injected("auto", total_tokens=1024)
    plan = plan_for_task(
        "implementation", total_tokens=1024, total_entries=1024, entry_types=["fact", "instruction", "preference"]
    )
    # the same plan, explicit: its budgets are the host's, so nothing moves
    fixed = injected(plan)
    assert [m["pool"] for m in auto].count(STANDING_POOL) == [m["pool"] for m in fixed].count(STANDING_POOL) == 2
    assert len(auto) > len(fixed), kind
    assert {p.name for p in plan} >= {STANDING_POOL, "semantic"}


def test_a_retriever_with_pools_auto_spills_too():
    from langchain_core.documents import Document

    documents = [
        Document(e["content"], id=e["id"], metadata={k: v for k, v in e.items() if k not in ("id", "content")})
        for e in _entries()
    ]
    auto = PoolSplitRetriever(documents=documents, pools="auto", total_tokens=400, token_counter=words, now=NOW)
    plan = plan_for_task(
        "implementation", total_tokens=400, total_entries=400, entry_types=["fact", "instruction", "preference"]
    )
    fixed = PoolSplitRetriever(documents=documents, pools=plan, token_counter=words, now=NOW)
    assert len(auto.invoke("deploy train")) > len(fixed.invoke("deploy train"))


class CountingScorer:
    """A preparing scorer that counts its preparations (relevance: the
    words shared with the message), keeping its answers by entry as the
    package's scorers do."""

    def __init__(self) -> None:
        self.prepared = 0

    def prepare(self, context: Any, now: Any) -> Any:
        self.prepared += 1
        message = set(str((context or {}).get("message") or "").lower().split())

        answers: Dict[str, float] = {}

        def score(entry: Any) -> float:
            if entry["id"] not in answers:
                answers[entry["id"]] = float(len(message & set(entry["content"].lower().split())))
            return answers[entry["id"]]

        return types.SimpleNamespace(score=score, relevance=score)


def test_a_call_that_fills_twice_scores_each_candidate_once():
    """The spill's second fill reuses the first's prepared scorer over the
    same recalled candidates (a vector-indexed LangGraph store, the agent
    with embeddings): the query is prepared once a call, and a scorer
    that keeps its answers scores each candidate once."""
    from lc_helpers import WordHashEmbedding

    store = InMemoryStore(index={"dims": 256, "embed": WordHashEmbedding(), "fields": ["content"]})
    for entry in _entries():
        store.put(NS, entry["id"], {k: v for k, v in entry.items() if k != "id"})
    scorer = CountingScorer()
    memory = PoolSplitMemoryMiddleware(
        "auto",
        namespace=NS,
        store=store,
        now=NOW,
        write=WriteConfig(remember=False),
        recall=RecallConfig(total_tokens=1024, scorer=scorer),
    )
    agent = create_agent(ToolCallingFakeModel(), middleware=[memory], checkpointer=InMemorySaver())
    agent.invoke({"messages": [("user", "which platform does the deploy train leave from?")]}, thread("t1"))
    selection = memory.last_selection
    assert selection is not None and selection.notes["standing_spilled"][STANDING_POOL] < 0  # filled twice
    assert scorer.prepared == 1
