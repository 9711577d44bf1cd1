"""An edited message is read again.

Found by an adversarial run: a user who replaced their last message
(resent with the same message id, which LangGraph replaces in place) with
"I prefer dark mode in every editor." never had that preference stored: the
middleware remembered the last message it had read by its id alone."""

from __future__ import annotations

import datetime
from typing import Any, Dict, List

from agent_fakes import UserContext, thread
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from test_hostile_write_config import POOLS, Scripted, quiet_memory

from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware, WriteConfig


def test_an_edited_message_is_read_again_and_its_episode_stored_once_with_the_final_text():
    store = InMemoryStore()
    memory = quiet_memory(1)
    agent = create_agent(
        Scripted(answers=["Sure."]),
        middleware=[memory],
        checkpointer=InMemorySaver(),
        store=store,
        context_schema=UserContext,
    )
    ask = lambda message: agent.invoke({"messages": [message]}, thread("t"), context={"user_id": "u1"})  # noqa: E731
    ask(HumanMessage("start", id="m0"))
    ask(HumanMessage("which editor is best?", id="m1"))
    ask(HumanMessage("I prefer dark mode in every editor.", id="m1"))  # the same id: replaced in place
    ask(HumanMessage("next", id="m2"))
    ask(HumanMessage("and then", id="m3"))  # m1's turn leaves the working set
    entries: List[Dict[str, Any]] = [item.value for item in store.search(("memories", "u1"), limit=100)]
    assert [(e["type"], e["content"]) for e in entries if e["type"] == "preference"] == [
        ("preference", "I prefer dark mode in every editor.")
    ]
    assert sorted(e["content"] for e in entries if e.get("role") == "user") == [
        "user: I prefer dark mode in every editor.",
        "user: next",
        "user: start",  # the goal's words, with its answer
    ]


def test_a_thread_checkpointed_with_the_last_read_id_alone_is_not_read_again():
    """0.3 kept the id of the last human message read (``poolsplit_heard``):
    such a thread's messages up to it were read, so their statements are not
    proposed again (the gate would report the repeat)."""
    store = InMemoryStore()
    memory = PoolSplitMemoryMiddleware(
        POOLS, namespace=("memories", "u1"), now=datetime.datetime(2026, 7, 1), write=WriteConfig(remember=False)
    )
    agent = create_agent(Scripted(answers=["Sure."]), middleware=[memory], checkpointer=InMemorySaver(), store=store)
    agent.invoke({"messages": [HumanMessage("Always cite the source.", id="m0")]}, thread("t"))
    agent.update_state(thread("t"), {"poolsplit_unwritten": None, "poolsplit_heard": "m0"})  # as 0.3 left it
    run = {"messages": [HumanMessage("I prefer tea.", id="m1")]}
    events = [e["poolsplit_selection"] for e in agent.stream(run, thread("t"), stream_mode="custom")]
    assert [e["writes"] for e in events] == [{"written": 1, "refused": {}}]
    contents = sorted(item.value["content"] for item in store.search(("memories", "u1"), limit=100))
    assert contents == ["Always cite the source.", "I prefer tea."]
