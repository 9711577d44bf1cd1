"""The middleware keeps its per-thread state in the agent's graph state:
two middleware objects serving one thread (as two processes would, through
one checkpointer and one store) agree on the gate report and on the reuse of
a step's selection, and a restart (new agent, same checkpointer) loses
neither."""

from __future__ import annotations

import datetime
import sqlite3
from typing import Any

from agent_fakes import ToolCallingFakeModel, UserContext, lookup, thread
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import SELECTION_EVENT, BaseStoreMemory, PoolSplitMemoryMiddleware, RecallConfig
from poolsplit_adapters.poolsplit import default_token_counter
from poolsplit_adapters.reports import capture_selections

NOW = datetime.datetime(2026, 7, 1)
POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("recent", 300, 3, ("episode", "note"))]
USER = {"user_id": "u1"}


def middleware() -> PoolSplitMemoryMiddleware:
    return PoolSplitMemoryMiddleware(
        POOLS,
        namespace=lambda rt: ("memories", rt.context["user_id"]),
        max_turns=2,
        now=NOW,
        recall=RecallConfig(token_counter=default_token_counter),
    )


def agent(checkpointer: Any, store: Any) -> Any:
    """One "process": its own middleware object and model over the shared
    checkpointer and store."""
    return create_agent(
        ToolCallingFakeModel(),
        tools=[lookup],
        middleware=[middleware()],
        checkpointer=checkpointer,
        store=store,
        context_schema=UserContext,
    )


def events(runner: Any, message: Any, **options: Any) -> list[dict[str, Any]]:
    chunks = runner.stream(message, thread("t"), context=USER, stream_mode="custom", **options)
    return [chunk[SELECTION_EVENT] for chunk in chunks]


def turn(text: str) -> dict[str, Any]:
    return {"messages": [("user", text)]}


def seed(store: Any) -> None:
    BaseStoreMemory(store, ("memories", "u1")).put(
        {"id": "fix-1", "content": "always run the checklist", "type": "correction", "scope": "always"}
    )


def test_two_middleware_objects_serving_one_thread_agree_on_the_gate_report():
    saver, store = InMemorySaver(), InMemoryStore()
    seed(store)
    a, b = agent(saver, store), agent(saver, store)
    for i in range(3):
        events(a, turn("[u1] turn %d" % i))
    # A demotes (writes through the gate) and stops before its model call ...
    assert events(a, turn("[u1] turn 3"), interrupt_before=["model"]) == []
    # ... B makes that model call: the report of A's write is B's to show, once.
    (shown,) = events(b, None)
    assert shown["writes"] == {"written": 2, "refused": {}}  # the user's side and the answer
    (after,) = events(a, turn("[u1] turn 4"))
    assert after["writes"] == {"written": 2, "refused": {}}  # turn 4's own demotion, not turn 3's again


def test_two_middleware_objects_serving_one_thread_agree_on_the_reuse_of_a_step():
    saver, store = InMemorySaver(), InMemoryStore()
    seed(store)
    a, b = agent(saver, store), agent(saver, store)
    (first,) = events(a, turn("[u1] check calls=1"), interrupt_before=["tools"])
    (second,) = events(b, None)  # B runs the tool, then the step's second model call
    assert (first["reused"], second["reused"]) == (False, True)
    assert [c["id"] for c in second["chosen"]] == [c["id"] for c in first["chosen"]] == ["fix-1"]
    with capture_selections() as made:
        events(b, turn("[u1] next step"))
    assert [[c.entry["id"] for c in s.chosen] for s in made] == [["fix-1"]]  # a new step selects again


def test_a_restart_loses_neither_the_gate_report_nor_the_steps_selection(tmp_path):
    files = (str(tmp_path / "checkpoints.db"), str(tmp_path / "memories.db"))
    opened: list[sqlite3.Connection] = []

    def restart() -> Any:
        """A new process: new connections to the same files, a new agent."""
        for connection in opened:
            connection.close()
        opened[:] = [sqlite3.connect(path, check_same_thread=False, isolation_level=None) for path in files]
        store = SqliteStore(opened[1])
        store.setup()
        return agent(SqliteSaver(opened[0]), store)

    first = restart()
    seed(first.store)
    for i in range(3):
        events(first, turn("[u1] turn %d" % i))
    assert events(first, turn("[u1] turn 3 calls=1"), interrupt_before=["model"]) == []  # demoted, then down
    (shown,) = events(restart(), None, interrupt_before=["tools"])  # the model call, then down again
    assert (shown["writes"], shown["reused"]) == ({"written": 2, "refused": {}}, False)
    (reused,) = events(restart(), None)  # the tool, then the step's second model call
    assert (reused["writes"], reused["reused"]) == ({"written": 0, "refused": {}}, True)
    assert [c["id"] for c in reused["chosen"]] == [c["id"] for c in shown["chosen"]]
    assert "fix-1" in [c["id"] for c in shown["chosen"]]
    for connection in opened:
        connection.close()
