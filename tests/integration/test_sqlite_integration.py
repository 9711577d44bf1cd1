"""The embedded SQLite store as the long-term memory of both frameworks:
what an agent or a chat writes there is recalled by a new process on the
same file (seed 002: memory survives process restarts)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap

from agent_fakes import scripted_agent, thread
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware, RecallConfig
from poolsplit_adapters.llama_index import poolsplit_memory_blocks
from poolsplit_adapters.poolsplit import default_token_counter
from poolsplit_adapters.render import parse_markers
from poolsplit_adapters.stores import SQLiteMemoryStore

HERE = pathlib.Path(__file__).resolve().parents[1]  # tests/: the shared helpers
POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("recent", 400, 6, ("episode", "note"))]


def _second_process(code: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_agent_middleware_writes_evicted_turns_to_the_sqlite_store_and_a_new_process_recalls_them(tmp_path):
    path = str(tmp_path / "memory.db")
    store = SQLiteMemoryStore(path)
    # The middleware stores a LangGraph-style namespace tuple as "memories.u1".
    store.add(
        [
            {
                "id": "fix-1",
                "content": "Amounts in cents.",
                "type": "correction",
                "scope": "always",
                "namespace": "memories.u1",
            }
        ]
    )
    mw = PoolSplitMemoryMiddleware(
        POOLS,
        namespace=("memories", "u1"),
        store=store,
        max_turns=2,
        recall=RecallConfig(token_counter=default_token_counter),
    )
    agent = scripted_agent(mw)
    for text in ["goal: ship", "remember=The release checklist lives in the wiki", "deploy calls=2", "status", "done"]:
        agent.invoke({"messages": [("user", text)]}, thread("first"))
    kinds = sorted(e["type"] for e in store.entries())
    assert kinds == ["correction", *["episode"] * 6, "note"]  # three turns, two sides each
    result = _second_process(
        f"""
        import json, sys
        sys.path.insert(0, {str(HERE)!r})
        from agent_fakes import ToolCallingFakeModel, UserContext, lookup, markers, thread
        from langchain.agents import create_agent
        from langgraph.checkpoint.memory import InMemorySaver
        from poolsplit_adapters import Pool
        from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware, RecallConfig
        from poolsplit_adapters.poolsplit import default_token_counter
        from poolsplit_adapters.stores import SQLiteMemoryStore

        pools = [Pool("fixes", 0, 0, ("correction",)), Pool("recent", 400, 8, ("episode", "note"))]
        store = SQLiteMemoryStore({path!r})
        mw = PoolSplitMemoryMiddleware(pools, namespace=("memories", "u1"), store=store,
                                       recall=RecallConfig(token_counter=default_token_counter))
        model = ToolCallingFakeModel()
        agent = create_agent(model, tools=[lookup], middleware=[mw], checkpointer=InMemorySaver(),
                             context_schema=UserContext)
        agent.invoke({{"messages": [("user", "what did we say about the checklist?")]}}, thread("new"))
        print(json.dumps({{"seen": [m["id"] for m in markers(model.requests[0])]}}))
        """
    )
    written = {e["id"] for e in store.entries()}
    assert result["seen"][0] == "fix-1"
    assert set(result["seen"]) == written


def test_llama_index_memory_flushes_chat_into_the_sqlite_store_and_a_new_process_recalls_it(tmp_path):
    path = str(tmp_path / "memory.db")
    store = SQLiteMemoryStore(path)
    curated = [{"id": "fix-1", "content": "Never force-push.", "type": "correction", "scope": "always"}]
    plan = [Pool("fixes", 0, 0, ("correction",)), Pool("episodes", 2000, 50, ("episode",))]
    blocks = poolsplit_memory_blocks(curated, plan, store=store, token_counter=default_token_counter)
    memory = Memory.from_defaults(
        session_id="alice", token_limit=400, chat_history_token_ratio=0.3, token_flush_size=80, memory_blocks=blocks
    )
    for turn in range(12):
        memory.put(ChatMessage(role="user", content="turn %d: the deploy window is Tuesday %d" % (turn, turn)))
        memory.put(ChatMessage(role="assistant", content="noted %d" % turn))
    memory.get()
    flushed = [e for e in store.entries() if e["type"] == "episode"]
    assert flushed and all(e["source"] == "session:alice" for e in flushed)
    result = _second_process(
        f"""
        import json
        from llama_index.core.base.llms.types import ChatMessage
        from llama_index.core.memory import Memory
        from poolsplit_adapters import Pool
        from poolsplit_adapters.llama_index import poolsplit_memory_blocks
        from poolsplit_adapters.poolsplit import default_token_counter
        from poolsplit_adapters.render import parse_markers
        from poolsplit_adapters.stores import SQLiteMemoryStore

        plan = [Pool("fixes", 0, 0, ("correction",)), Pool("episodes", 2000, 50, ("episode",))]
        curated = [{{"id": "fix-1", "content": "Never force-push.", "type": "correction", "scope": "always"}}]
        blocks = poolsplit_memory_blocks(curated, plan, store=SQLiteMemoryStore({path!r}),
                                         token_counter=default_token_counter)
        memory = Memory.from_defaults(session_id="alice", token_limit=4000, memory_blocks=blocks)
        memory.put(ChatMessage(role="user", content="when is the deploy window?"))
        text = memory.get()[0].content
        print(json.dumps({{"ids": [m["id"] for m in parse_markers(text)]}}))
        """
    )
    assert result["ids"][0] == "fix-1"
    assert sorted(result["ids"][1:]) == sorted(e["id"] for e in flushed)
    assert parse_markers(memory.get()[0].content)[0]["id"] == "fix-1"
