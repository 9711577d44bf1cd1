"""Durability: with LangGraph's SqliteStore on a file, a second process sees
the episodes and notes the first one's agent wrote, and recalls them."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap

from agent_fakes import scripted_agent, thread
from langgraph.store.sqlite import SqliteStore

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import BaseStoreMemory, PoolSplitMemoryMiddleware, RecallConfig
from poolsplit_adapters.poolsplit import default_token_counter

HERE = pathlib.Path(__file__).resolve().parents[1]  # tests/: the shared helpers
POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("recent", 400, 6, ("episode", "note"))]

SECOND_PROCESS = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, {tests!r})
    from agent_fakes import ToolCallingFakeModel, UserContext, lookup, markers, thread
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.sqlite import SqliteStore
    from poolsplit_adapters import Pool
    from poolsplit_adapters.langchain import BaseStoreMemory, PoolSplitMemoryMiddleware, RecallConfig
    from poolsplit_adapters.poolsplit import default_token_counter

    pools = [Pool("fixes", 0, 0, ("correction",)), Pool("recent", 400, 8, ("episode", "note"))]
    with SqliteStore.from_conn_string({path!r}) as store:
        stored = BaseStoreMemory(store, ("memories", "u1")).entries()
        mw = PoolSplitMemoryMiddleware(pools, namespace=("memories", "u1"),
                                       recall=RecallConfig(token_counter=default_token_counter))
        model = ToolCallingFakeModel()
        agent = create_agent(model, tools=[lookup], middleware=[mw], checkpointer=InMemorySaver(), store=store,
                             context_schema=UserContext)
        agent.invoke({{"messages": [("user", "what did we say about the checklist?")]}}, thread("new"))
        print(json.dumps({{"stored": stored, "seen": [m["id"] for m in markers(model.requests[0])]}}))
    """
)


def test_a_second_process_sees_and_recalls_what_the_first_agent_wrote(tmp_path):
    path = str(tmp_path / "memory.db")
    with SqliteStore.from_conn_string(path) as store:
        store.setup()
        BaseStoreMemory(store, ("memories", "u1")).put(
            {"id": "fix-1", "content": "Amounts in cents.", "type": "correction", "scope": "always"}
        )
        mw = PoolSplitMemoryMiddleware(
            POOLS, namespace=("memories", "u1"), max_turns=2, recall=RecallConfig(token_counter=default_token_counter)
        )
        agent = scripted_agent(mw, store)
        for text in [
            "goal: ship",
            "remember=The release checklist lives in the wiki",
            "deploy calls=2",
            "status",
            "done",
        ]:
            agent.invoke({"messages": [("user", text)]}, thread("first"))
        written = {e["id"]: e for e in BaseStoreMemory(store, ("memories", "u1")).entries()}
    kinds = sorted(e["type"] for e in written.values())
    assert kinds == ["correction", *["episode"] * 6, "note"]  # three turns, two sides each

    out = subprocess.run(
        [sys.executable, "-c", SECOND_PROCESS.format(tests=str(HERE), path=path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert {e["id"]: e for e in result["stored"]} == written
    assert result["seen"][0] == "fix-1"
    assert set(result["seen"]) == set(written)  # the note and the three episodes are recalled
    note = next(e for e in result["stored"] if e["type"] == "note")
    assert note["source"] == "agent:thread:first" and note["content"] == "The release checklist lives in the wiki"
