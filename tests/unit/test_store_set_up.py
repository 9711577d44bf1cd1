"""A LangGraph store whose ``setup()`` never ran is refused where the
package first touches it, with the fix, never with the database's own
"no such table" from deep inside a read."""

from __future__ import annotations

import sqlite3

import pytest
from agent_fakes import ToolCallingFakeModel, markers, thread
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.sqlite import SqliteStore

from poolsplit_adapters import Pool
from poolsplit_adapters.errors import ArgumentError
from poolsplit_adapters.langchain import BaseStoreMemory, PoolSplitMemoryMiddleware, WriteConfig

POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("standing", 256, 20, ("instruction", "preference"))]
U1 = ("memories", "u1")
NOT_SET_UP = (
    "%s: the LangGraph SqliteStore has no tables (its database has no 'store' table): "
    "call store.setup() once before giving it to poolsplit_adapters"
)


def _store(path) -> SqliteStore:
    return SqliteStore(sqlite3.connect(str(path), check_same_thread=False, isolation_level=None))


def _tables(path) -> list:
    with sqlite3.connect(str(path)) as conn:
        return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]


def test_the_agent_over_a_sqlite_store_never_set_up_says_to_call_setup(tmp_path):
    store = _store(tmp_path / "lg.db")
    middleware = PoolSplitMemoryMiddleware(POOLS, namespace=U1, write=WriteConfig(remember=False))
    agent = create_agent(ToolCallingFakeModel(), middleware=[middleware], checkpointer=InMemorySaver(), store=store)
    with pytest.raises(ArgumentError) as err:
        agent.invoke({"messages": [HumanMessage("deploy?")]}, thread("t1"))
    assert str(err.value) == NOT_SET_UP % "runtime.store"
    assert _tables(tmp_path / "lg.db") == []  # nothing made behind the host's back


def test_the_store_memory_over_a_sqlite_store_never_set_up_says_to_call_setup(tmp_path):
    store = _store(tmp_path / "lg.db")
    with pytest.raises(ArgumentError) as err:
        BaseStoreMemory(store, U1)
    assert str(err.value) == NOT_SET_UP % "BaseStoreMemory store"
    store.setup()
    memory = BaseStoreMemory(store, U1)
    [key] = memory.put_many([{"id": "fix-1", "content": "Quote cents.", "type": "correction", "scope": "always"}])
    assert key == "fix-1"


def test_a_second_handle_on_a_database_set_up_elsewhere_is_taken(tmp_path):
    first = _store(tmp_path / "lg.db")
    first.setup()
    BaseStoreMemory(first, U1).put_many(
        [{"id": "fix-1", "content": "Quote cents.", "type": "correction", "scope": "always"}]
    )
    second = _store(tmp_path / "lg.db")  # its own is_setup is False: the tables decide
    assert second.is_setup is False
    assert [e["id"] for e in BaseStoreMemory(second, U1).entries()] == ["fix-1"]
    model = ToolCallingFakeModel()
    middleware = PoolSplitMemoryMiddleware(POOLS, namespace=U1, write=WriteConfig(remember=False))
    agent = create_agent(model, middleware=[middleware], checkpointer=InMemorySaver(), store=_store(tmp_path / "lg.db"))
    agent.invoke({"messages": [HumanMessage("deploy?")]}, thread("t1"))
    assert [(m["id"], m["content"]) for m in markers(model.requests[-1])] == [("fix-1", "Quote cents.")]
