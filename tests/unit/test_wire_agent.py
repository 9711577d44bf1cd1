"""Issue 13/14 features through the agent middleware, on a real
``create_agent`` with a fake tool-calling model: pools="auto" per model call,
progressive loading with the expand tool called by the model, embeddings=."""

from __future__ import annotations

import datetime
import re
from typing import Any, List, Sequence

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from poolsplit_adapters import Pool, default_scorer
from poolsplit_adapters.langchain import (
    BaseStoreMemory,
    HashEmbeddings,
    PoolSplitMemoryMiddleware,
    RecallConfig,
    RenderConfig,
    WriteConfig,
)
from tests.agent_fakes import ToolCallingFakeModel, markers, thread

NOW = datetime.datetime(2026, 11, 20, 9)
FULL = "The October rounding incident: refunds were rounded down by one cent in the monthly totals report."
ENTRIES = [
    {"id": "fix-cents", "content": "Quote amounts in integer cents.", "type": "correction", "scope": "always",
     "source": "user"},
    {"id": "ep-round", "content": FULL, "type": "episode", "summary": "October refunds rounding incident",
     "created": "2026-11-01T00:00:00Z"},
    {"id": "note-url", "content": "The staging URL moved to staging2 and every preview link changed with it.",
     "type": "note", "summary": "Staging URL change", "created": "2026-11-01T00:00:00Z"},
    {"id": "skill-deploy", "content": "To deploy, run make release, then watch the canary for ten minutes.",
     "type": "skill", "summary": "How to deploy", "created": "2026-11-01T00:00:00Z"},
]  # fmt: skip


def store_with(entries: Sequence[dict], namespace: tuple = ("memories", "ana")) -> InMemoryStore:
    store = InMemoryStore()
    BaseStoreMemory(store, namespace).put_many(entries)
    return store


def events(agent: Any, text: str, context: dict, thread_id: str = "t1") -> List[dict]:
    found = []
    for chunk in agent.stream(
        {"messages": [HumanMessage(text)]}, thread(thread_id), context=context, stream_mode="custom"
    ):
        if "poolsplit_selection" in chunk:
            found.append(chunk["poolsplit_selection"])
    return found


def test_auto_pools_plan_each_call_for_the_phase_in_the_runtime_context():
    memory = PoolSplitMemoryMiddleware(
        "auto",
        namespace=("memories", "ana"),
        now=NOW,
        recall=RecallConfig(total_tokens=400, total_entries=10),
        write=WriteConfig(remember=False),
    )
    agent = create_agent(
        ToolCallingFakeModel(), middleware=[memory], checkpointer=InMemorySaver(), store=store_with(ENTRIES)
    )
    debugging = events(agent, "what happened with the refunds?", {"phase": "debugging"}, "t1")
    review = events(agent, "what happened with the refunds?", {"phase": "review"}, "t2")
    assert [e["notes"]["task_type"] for e in debugging + review] == ["debugging", "review"]
    assert ("phase", "review", 4) in [
        (m["field"], m["signal"], m["weight"]) for m in review[0]["notes"]["task"]["matched_signals"]
    ]
    tokens = [{name: s["max_tokens"] for name, s in e["stats"].items()} for e in debugging + review]
    # The store holds episodes, notes and skills: the preset's weights of
    # those three collections share the 400 tokens (debugging 35/15/20,
    # review 15/30/10); anti_patterns, holding none of its types, gets no pool.
    assert tokens == [
        {"corrections": 0, "episodic": 200, "semantic": 86, "skills": 114},
        {"corrections": 0, "episodic": 109, "semantic": 218, "skills": 73},
    ]
    assert debugging[0]["chosen"][0]["id"] == "fix-cents"


class ExpandingModel(ToolCallingFakeModel):
    """Calls expand_memory once for the first summary marker it sees (or for
    the id after ``expand=`` in the message), then answers with what the
    tool returned."""

    def reply(self, messages: Sequence[BaseMessage]) -> AIMessage:
        start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        results = [m for m in messages[start:] if isinstance(m, ToolMessage)]
        if results:
            return AIMessage("expanded: %s" % results[-1].content)
        asked = re.search(r"expand=(\S+)", str(messages[start].text))
        summaries = [m["id"] for m in markers(messages) if m.get("layer") == "summary"]
        target = asked.group(1) if asked else (summaries[0] if summaries else None)
        if target is None:
            return AIMessage("nothing to expand")
        call = {"name": "expand_memory", "args": {"entry_id": target}, "id": "x-%d" % len(self.requests)}
        return AIMessage("", tool_calls=[call])


def progressive_agent(store: InMemoryStore, model: ExpandingModel) -> Any:
    memory = PoolSplitMemoryMiddleware(
        [Pool("corrections", 0, 0, ("correction",)), Pool("memory", 200, 3, ("episode", "note", "skill"))],
        namespace=lambda rt: ("memories", rt.context["user_id"]),
        now=NOW,
        recall=RecallConfig(token_counter=lambda text: len(text.split())),
        write=WriteConfig(remember=False),
        render=RenderConfig(progressive=True),
    )
    assert [t.name for t in memory.tools] == ["expand_memory"]
    return create_agent(model, middleware=[memory], checkpointer=InMemorySaver(), store=store, context_schema=dict)


def test_progressive_memory_shows_summaries_and_the_model_expands_one_through_the_tool():
    model = ExpandingModel()
    agent = progressive_agent(store_with(ENTRIES), model)
    result = agent.invoke({"messages": [HumanMessage("refund rounding")]}, thread("t1"), context={"user_id": "ana"})
    first = markers(model.requests[0])
    assert [(m["id"], m.get("layer")) for m in first] == [
        ("fix-cents", None),
        ("ep-round", "summary"),
        ("note-url", "summary"),
        ("skill-deploy", "summary"),
    ]
    assert first[1]["content"] == "October refunds rounding incident"
    tool_messages = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert [(m.name, m.content) for m in tool_messages] == [("expand_memory", FULL)]
    assert result["messages"][-1].content == "expanded: " + FULL


def test_progressive_events_carry_the_token_metrics():
    memory = PoolSplitMemoryMiddleware(
        [Pool("corrections", 0, 0, ("correction",)), Pool("memory", 200, 3, ("episode", "note", "skill"))],
        namespace=("memories", "ana"),
        now=NOW,
        recall=RecallConfig(token_counter=lambda text: len(text.split())),
        write=WriteConfig(remember=False),
        render=RenderConfig(progressive=True),
    )
    agent = create_agent(
        ToolCallingFakeModel(), middleware=[memory], checkpointer=InMemorySaver(), store=store_with(ENTRIES)
    )
    (event,) = events(agent, "refund rounding", {})
    # Words: correction 5; summaries 4 + 3 + 3 = 10; those entries in full 16 + 13 + 12 = 41;
    # each entry's marker 7 more ('<memory', id=, source=, at=, pool=, layer=, '</memory>').
    assert event["notes"]["metrics"]["tokens_by_layer"] == {"summary": 10 + 3 * 7, "timeline": 0, "full": 5 + 7}
    assert event["notes"]["metrics"]["baseline_tokens"] == 46 + 4 * 7
    assert [c.get("layer") for c in event["chosen"]] == ["full", "summary", "summary", "summary"]


def test_the_expand_tool_cannot_read_another_users_memory():
    store = store_with(ENTRIES)
    BaseStoreMemory(store, ("memories", "bob")).put(
        {"id": "bob-secret", "content": "Bob's private note.", "type": "note", "summary": "Private"}
    )
    model = ExpandingModel()
    agent = progressive_agent(store, model)
    result = agent.invoke({"messages": [HumanMessage("expand=bob-secret")]}, thread("t1"), context={"user_id": "ana"})
    (answer,) = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert answer.status == "error"
    assert "no memory entry with id 'bob-secret'" in answer.content
    assert "Bob's private note." not in str([m.content for m in result["messages"]])


def test_embeddings_rank_the_paraphrase_into_the_agents_context():
    july = datetime.datetime(2026, 7, 7, 12)
    entries = [
        {"id": "note", "content": "Checkout review: use the preview URL", "created": "2026-07-06T00:00:00Z"},
        {"id": "episode", "content": "Refunded totals were rounded wrong in October",
         "created": "2026-06-25T00:00:00Z"},
    ]  # fmt: skip
    question = "fix the refund rounding bug in the totals report for finance"
    seen = []
    # The spec's words miss the paraphrase; the default's stems and the
    # embedding find it (the case is derived in tests/paraphrase.py).
    for options in ({"scorer": default_scorer}, {}, {"embeddings": HashEmbeddings()}):
        model = ToolCallingFakeModel()
        memory = PoolSplitMemoryMiddleware(
            [Pool("one", 1000, 1)],
            namespace=("memories", "ana"),
            now=july,
            recall=RecallConfig(**options),
            write=WriteConfig(remember=False),
        )
        agent = create_agent(model, middleware=[memory], checkpointer=InMemorySaver(), store=store_with(entries))
        agent.invoke({"messages": [HumanMessage(question)]}, thread("t1"))
        seen.append([m["id"] for m in markers(model.requests[0])])
    assert seen == [["note"], ["episode"], ["episode"]]


def test_an_id_the_memory_refuses_is_the_tools_answer_and_the_run_goes_on():
    model = ExpandingModel()
    agent = progressive_agent(store_with(ENTRIES), model)
    result = agent.invoke({"messages": [HumanMessage("expand=ep\x00round")]}, thread("t9"), context={"user_id": "ana"})
    [answer] = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert answer.status == "error" and "NUL" in str(answer.content)
    assert result["messages"][-1].content.startswith("expanded: ")
