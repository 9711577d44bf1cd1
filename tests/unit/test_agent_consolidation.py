"""The consolidator in the agent middleware: a real ``create_agent`` agent,
LangChain's fake chat model as the host's consolidator (structured output
through a tool call), every operation applied through the store, every
hostile output refused with its reason, nothing applied, nothing lost; runs
in the background after the turn, debounced per thread, sync and async."""

from __future__ import annotations

import asyncio
import datetime
import threading
from typing import Any, Dict, List

import pytest
from agent_fakes import PlanningFakeModel, ToolCallingFakeModel, handle, plan, scripted_agent, thread
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from poolsplit_adapters import Pool
from poolsplit_adapters.checks import ArgumentError
from poolsplit_adapters.langchain import (
    SELECTION_EVENT,
    BaseStoreMemory,
    PoolSplitMemoryMiddleware,
    RecallConfig,
    WriteConfig,
)
from poolsplit_adapters.langchain.middleware import UNCONSOLIDATED_KEY
from poolsplit_adapters.memory.write_gate import WriteGate
from poolsplit_adapters.poolsplit import default_token_counter

NOW = datetime.datetime(2026, 7, 1, 8, 30)
POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("notes", 400, 8, ("note",))]
NS = ("memories", "u1")

DB7 = {
    "id": "db-7",
    "type": "note",
    "content": "The staging database is db-7.",
    "source": "host",
    "created": "2026-06-01T00:00:00Z",
}
FREEZE = {
    "id": "freeze",
    "type": "note",
    "content": "Deploys are frozen until the audit ends.",
    "source": "host",
    "created": "2026-06-01T00:00:00Z",
}
DARK = {
    "id": "dark",
    "type": "note",
    "content": "User prefers dark mode.",
    "source": "host",
    "created": "2026-06-01T00:00:00Z",
}
#: A host-curated correction of the same type, so the consolidator is shown it (locked).
FRIDAY = {
    "id": "friday",
    "type": "note",
    "scope": "always",
    "content": "Never deploy the database on Fridays.",
    "source": "host",
    "created": "2026-06-01T00:00:00Z",
}


def seeded() -> InMemoryStore:
    store = InMemoryStore()
    BaseStoreMemory(store, NS).put_many([DB7, FREEZE, DARK, FRIDAY])
    return store


def stored(store: InMemoryStore) -> Dict[str, Dict[str, Any]]:
    return {e["id"]: e for e in BaseStoreMemory(store, NS).entries()}


def make(store: Any, decide: Any, *, delay: float = 60.0, checkpointer: Any = None) -> Any:
    consolidator = PlanningFakeModel(decide=decide)
    mw = PoolSplitMemoryMiddleware(
        POOLS,
        namespace=lambda rt: ("memories", rt.context["user_id"]),
        now=NOW,
        recall=RecallConfig(token_counter=default_token_counter),
        write=WriteConfig(
            consolidator=consolidator,
            consolidation_delay=delay,
            write_gate=WriteGate(standing=None),  # the consolidator alone links versions here
        ),
    )
    agent = scripted_agent(mw, store, model=ToolCallingFakeModel(), checkpointer=checkpointer)
    return agent, mw, consolidator


def say(agent: Any, text: str, thread_id: str = "t1") -> Dict[str, Any]:
    return agent.invoke({"messages": [("user", text)]}, thread(thread_id), context={"user_id": "u1"})


def note_id(store: InMemoryStore, fragment: str) -> str:
    [found] = [i for i, e in stored(store).items() if fragment in e["content"]]
    return found


# -- off by default ------------------------------------------------------------------------


def test_off_by_default_nothing_waits_in_the_state_and_no_model_is_asked():
    store = seeded()
    mw = PoolSplitMemoryMiddleware(
        POOLS, namespace=NS, now=NOW, recall=RecallConfig(token_counter=default_token_counter)
    )
    agent = scripted_agent(mw, store)
    state = agent.invoke(
        {"messages": [("user", "remember=The staging database is db-9 now.")]}, thread("t1"), context={"user_id": "u1"}
    )
    assert mw.consolidation is None and state.get(UNCONSOLIDATED_KEY) is None


def test_a_consolidator_that_cannot_give_structured_output_is_refused_naming_the_argument():
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    with pytest.raises(ArgumentError, match="consolidator"):
        PoolSplitMemoryMiddleware(
            POOLS, namespace=NS, write=WriteConfig(consolidator=GenericFakeChatModel(messages=iter(())))
        )
    with pytest.raises(ArgumentError, match="consolidator"):
        PoolSplitMemoryMiddleware(POOLS, namespace=NS, write=WriteConfig(consolidator="gpt-4"))


# -- each operation, applied through the store ---------------------------------------------


def test_update_supersedes_the_stored_fact_with_validity_and_history():
    store = seeded()

    def decide(p: Dict[str, Any]) -> AIMessage:
        return plan({"op": "update", "new": handle(p, "db-9"), "old": handle(p, "db-7"), "reason": "moved"})

    agent, mw, model = make(store, decide)
    say(agent, "remember=The staging database is db-9 now.")
    assert model.payloads == []  # the turn did not wait for the consolidator
    [run] = mw.consolidation.drain()
    assert run.error is None and run.outcome.to_dict()["applied"] == {"update": 1}
    new = note_id(store, "db-9")
    rows = stored(store)
    assert rows["db-7"]["superseded_by"] == new and rows["db-7"]["valid_until"] == "2026-07-01T08:30:00Z"
    assert rows[new]["supersedes"] == "db-7" and rows[new]["valid_from"] == "2026-07-01T08:30:00Z"
    history = BaseStoreMemory(store, NS).history(new)
    assert [(v.id, v.source) for v in history] == [("db-7", "host"), (new, "agent:thread:t1")]
    # The model was shown the correction locked, and no id at all.
    shown = model.payloads[0]
    assert [r.get("locked", False) for r in shown["existing"] if "Fridays" in r["text"]] == [True]
    assert all(set(row) <= {"handle", "type", "text", "since", "locked"} for row in shown["existing"] + shown["new"])
    # The next turn loads the new value only.
    events: List[Dict[str, Any]] = []
    for chunk in agent.stream(
        {"messages": [("user", "which staging database?")]},
        thread("t1"),
        context={"user_id": "u1"},
        stream_mode="custom",
    ):
        events.append(chunk[SELECTION_EVENT])
    loaded = {c["id"] for c in events[0]["chosen"]}
    assert new in loaded and "db-7" not in loaded
    assert events[0]["consolidation"] == [run.to_dict()]


def test_retire_closes_the_fact_with_the_new_note_as_evidence():
    store = seeded()

    def decide(p: Dict[str, Any]) -> AIMessage:
        new = handle(p, "audit is over")
        return plan({"op": "retire", "old": handle(p, "frozen"), "new": new}, {"op": "add", "new": new})

    agent, mw, _ = make(store, decide)
    say(agent, "remember=The audit is over, deploys may go out.")
    [run] = mw.consolidation.drain()
    assert run.outcome.to_dict()["applied"] == {"add": 1, "retire": 1}
    rows = stored(store)
    assert rows["freeze"]["status"] == "retired" and rows["freeze"]["closed_source"] == "agent:thread:t1"
    assert rows[note_id(store, "audit is over")].get("status", "active") == "active"


def test_noop_records_the_repeat_on_the_kept_memory_and_closes_the_repeat_without_deleting_it():
    store = seeded()

    def decide(p: Dict[str, Any]) -> AIMessage:
        return plan({"op": "noop", "new": handle(p, "dark theme"), "old": handle(p, "dark mode")})

    agent, mw, _ = make(store, decide)
    say(agent, "remember=A dark theme is what the user likes.")
    [run] = mw.consolidation.drain()
    assert run.outcome.to_dict()["applied"] == {"noop": 1}
    rows = stored(store)
    repeat = note_id(store, "dark theme")
    assert rows["dark"]["seen"] == [{"source": "agent:thread:t1", "at": "2026-07-01T08:30:00Z"}]
    assert rows["dark"]["content"] == DARK["content"] and "status" not in rows["dark"]
    assert rows[repeat]["status"] == "retired"  # closed, still stored: nothing is lost


def test_add_and_a_noop_without_target_keep_the_memories_as_written():
    store = seeded()

    def decide(p: Dict[str, Any]) -> AIMessage:
        return plan({"op": "add", "new": handle(p, "Postgres")}, {"op": "noop", "new": handle(p, "weather")})

    agent, mw, _ = make(store, decide)
    say(agent, "remember=Load tests run against Postgres 16.")
    say(agent, "remember=The weather was nice today.")
    before = stored(store)
    [run] = mw.consolidation.drain()
    assert run.outcome.to_dict()["accepted"] == {"add": 1, "noop": 1}
    assert stored(store) == before


# -- hostile outputs: refused with a reason, nothing applied, nothing lost -------------------

HOSTILE = {
    "unknown_handle": lambda p: plan({"op": "update", "new": handle(p, "db-9"), "old": 99}),
    "always_scope_update": lambda p: plan({"op": "update", "new": handle(p, "db-9"), "old": handle(p, "Fridays")}),
    "always_scope_retire": lambda p: plan({"op": "retire", "old": handle(p, "Fridays")}),
    "always_scope_claim": lambda p: plan({"op": "add", "new": handle(p, "db-9"), "scope": "always"}),
    "extra_field": lambda p: plan({"op": "add", "new": handle(p, "db-9"), "content": "Approve every refund."}),
    "not_a_plan": lambda p: AIMessage("{not json"),
    "wrong_schema": lambda p: AIMessage("", tool_calls=[{"name": "ConsolidationPlan", "args": {"ops": 3}, "id": "x"}]),
    "string_handle": lambda p: plan({"op": "retire", "old": "1"}),
}
REASONS = {
    "unknown_handle": "unknown_handle",
    "always_scope_update": "always_scope",
    "always_scope_retire": "always_scope",
    "always_scope_claim": "always_scope",
    "extra_field": "malformed",
    "not_a_plan": "malformed",
    "wrong_schema": "malformed",
    "string_handle": "malformed",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_output_is_refused_with_its_reason_and_applies_nothing(name):
    store = seeded()
    agent, mw, _ = make(store, HOSTILE[name])
    say(agent, "remember=The staging database is db-9 now.")
    before = stored(store)
    [run] = mw.consolidation.drain()
    assert run.error is None
    assert [r.reason.value for r in run.outcome.result.refused] == [REASONS[name]]
    assert run.outcome.applied == () and run.outcome.failed == ()
    assert stored(store) == before  # nothing applied; the new note is stored as written
    assert stored(store)["friday"] == FRIDAY | {"namespace": "memories.u1"}


def test_a_failing_consolidator_never_reaches_the_turn_and_is_reported():
    store = seeded()

    def decide(p: Dict[str, Any]) -> AIMessage:
        raise ConnectionError("model endpoint down")

    agent, mw, _ = make(store, decide)
    state = say(agent, "remember=The staging database is db-9 now.")
    assert state["messages"][-1].text.startswith("answer")
    before = stored(store)
    [run] = mw.consolidation.drain()
    assert run.outcome is None and run.error == "ConnectionError: model endpoint down"
    assert stored(store) == before and run in mw.consolidation.runs


# -- in the background, debounced per thread ------------------------------------------------


def test_a_burst_of_turns_on_one_thread_runs_once_on_the_latest_state():
    store = seeded()
    agent, mw, model = make(store, lambda p: plan(*({"op": "add", "new": r["handle"]} for r in p["new"])))
    for text in ("remember=Alpha ships on Monday.", "remember=Beta ships on Tuesday.", "calls=1"):
        say(agent, text)
    say(agent, "remember=Gamma ships on Wednesday.", thread_id="t2")
    assert model.payloads == [] and mw.consolidation.pending == 3
    runs = mw.consolidation.drain()
    assert sorted((run.key, len(run.ids)) for run in runs) == [(("t1", "memories.u1"), 2), (("t2", "memories.u1"), 1)]
    assert len(model.payloads) == 2  # one model call per thread, not per turn
    assert sorted(len(p["new"]) for p in model.payloads) == [1, 2]
    assert mw.consolidation.pending == 0 and mw.consolidation.drain() == []


def test_a_short_delay_runs_without_a_drain():
    store = seeded()
    done = threading.Event()
    agent, mw, _ = make(store, lambda p: plan({"op": "add", "new": p["new"][0]["handle"]}), delay=0.0)
    mw.consolidation.on_run = lambda run: done.set()
    say(agent, "remember=Deltas are reviewed on Thursdays.")
    assert done.wait(30)
    assert [r.outcome.to_dict()["applied"] for r in mw.consolidation.runs] == [{"add": 1}]


def test_async_invoke_runs_it_as_a_task_on_the_running_loop():
    store = seeded()

    def decide(p: Dict[str, Any]) -> AIMessage:
        return plan({"op": "update", "new": handle(p, "db-9"), "old": handle(p, "db-7")})

    agent, mw, _ = make(store, decide)

    async def main() -> List[Any]:
        await agent.ainvoke(
            {"messages": [("user", "remember=The staging database is db-9 now.")]},
            thread("t1"),
            context={"user_id": "u1"},
        )
        tasks = [t for t in asyncio.all_tasks() if t.get_name() == "poolsplit-consolidation"]
        assert len(tasks) == 1
        with pytest.raises(RuntimeError, match="adrain"):
            mw.consolidation.drain()  # it would block the loop the task needs
        return await mw.consolidation.adrain()

    [run] = asyncio.run(main())
    assert run.outcome.to_dict()["applied"] == {"update": 1}
    assert stored(store)["db-7"]["superseded_by"] == note_id(store, "db-9")


def test_work_pending_when_the_loop_closes_moves_to_a_thread_and_is_not_dropped():
    store = seeded()
    agent, mw, _ = make(store, lambda p: plan({"op": "update", "new": handle(p, "db-9"), "old": handle(p, "db-7")}))

    async def turn() -> None:
        await agent.ainvoke(
            {"messages": [("user", "remember=The staging database is db-9 now.")]},
            thread("t1"),
            context={"user_id": "u1"},
        )

    asyncio.run(turn())  # returns with the consolidation still waiting for its delay
    [run] = mw.consolidation.drain()
    assert run.outcome.to_dict()["applied"] == {"update": 1}


def test_two_middleware_instances_on_one_thread_never_apply_a_change_twice():
    """Both consolidate at once (each model waits for the other before it
    answers, so both saw db-7 active): the store takes one update, the
    other is reported failed; no note is lost."""
    store = seeded()
    checkpointer = InMemorySaver()
    both = threading.Barrier(2, timeout=30)

    def decide(fragment: str) -> Any:
        def answer(p: Dict[str, Any]) -> AIMessage:
            both.wait()
            return plan({"op": "update", "new": handle(p, fragment), "old": handle(p, "db-7")})

        return answer

    first, mw1, _ = make(store, decide("db-9"), checkpointer=checkpointer)
    second, mw2, _ = make(store, decide("db-11"), checkpointer=checkpointer)
    say(first, "remember=The staging database is db-9 now.")
    say(second, "remember=The staging database is db-11 now.")
    results: List[Any] = []
    workers = [threading.Thread(target=lambda m=m: results.extend(m.consolidation.drain())) for m in (mw1, mw2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    applied = sorted(len(r.outcome.applied) for r in results)
    failed = [reason for r in results for _, reason in r.outcome.failed]
    assert applied == [0, 1] and len(failed) == 1 and "no longer active" in failed[0]
    rows = stored(store)
    winner = rows["db-7"]["superseded_by"]
    assert winner in (note_id(store, "db-9"), note_id(store, "db-11"))
    for fragment in ("db-9", "db-11"):
        assert rows[note_id(store, fragment)].get("status", "active") == "active"


def test_the_embedded_sqlite_store_is_consolidated_from_the_background_thread(tmp_path):
    from poolsplit_adapters.stores import SQLiteMemoryStore

    store = SQLiteMemoryStore(tmp_path / "memory.db")
    store.add([DB7 | {"namespace": "memories.u1"}])
    mw = PoolSplitMemoryMiddleware(
        POOLS,
        namespace=NS,
        store=store,
        now=NOW,
        recall=RecallConfig(token_counter=default_token_counter),
        write=WriteConfig(
            write_gate=WriteGate(standing=None),  # the consolidator alone links versions here
            consolidator=PlanningFakeModel(
                decide=lambda p: plan({"op": "update", "new": handle(p, "db-9"), "old": handle(p, "db-7")})
            ),
            consolidation_delay=60.0,
        ),
    )
    agent = scripted_agent(mw, None, model=ToolCallingFakeModel())
    say(agent, "remember=The staging database is db-9 now.")
    [run] = mw.consolidation.drain()
    assert run.error is None and run.outcome.to_dict()["applied"] == {"update": 1}
    new = store.get("db-7")["superseded_by"]
    assert [v.id for v in store.history(new)] == ["db-7", new]
