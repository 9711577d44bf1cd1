"""Properties of the working set inside a real agent, over random
conversations with tool calls: no tool result ever loses its call, the state
stays bounded, and every message leaves the state only after the store held
it (checked by a store that looks at the checkpoint while it is written)."""

from __future__ import annotations

import threading
from typing import Dict, List, Set

from agent_fakes import scripted_agent, thread
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware, RecallConfig
from poolsplit_adapters.memory import View, split_turns
from poolsplit_adapters.poolsplit import default_token_counter

POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("recent", 200, 2, ("episode", "note"))]


class SerialSaver(InMemorySaver):
    """A real InMemorySaver whose reads and writes take one lock. The witness
    below reads the checkpoint from inside a node while LangGraph may be
    saving another task's writes from a background thread; InMemorySaver is
    not made for that (langgraph-checkpoint 3.0 iterates its writes dict
    unguarded: "dictionary changed size during iteration"), so the test
    harness, not the code under test, serializes the two."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.RLock()

    def get_tuple(self, config):
        with self.lock:
            return super().get_tuple(config)

    def put(self, config, checkpoint, metadata, new_versions):
        with self.lock:
            return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config, writes, task_id, task_path=""):
        with self.lock:
            return super().put_writes(config, writes, task_id, task_path)

    def list(self, config, *, filter=None, before=None, limit=None):
        with self.lock:
            return iter(list(super().list(config, filter=filter, before=before, limit=limit)))


class WitnessStore(InMemoryStore):
    """A real InMemoryStore that, while an episode is being written, records
    which messages the thread's checkpoint still holds."""

    def __init__(self, saver: SerialSaver):
        super().__init__()
        self.saver = saver
        self.witness: List[Set[str]] = []  # per episode write: ids still in the state
        self.contents: List[str] = []

    def batch(self, ops):
        ops = list(ops)
        for op in ops:
            if isinstance(op, PutOp) and op.value and op.value.get("type") == "episode":
                thread_id = op.value["source"].split(":", 1)[1]
                saved = self.saver.get_tuple(thread(thread_id))
                messages = saved.checkpoint["channel_values"]["messages"] if saved else []
                self.witness.append({m.id for m in messages})
                self.contents.append(op.value["content"])
        return super().batch(ops)


def view(m) -> View:
    if isinstance(m, HumanMessage):
        return View("human", m.id)
    if isinstance(m, AIMessage):
        return View("ai", m.id, calls=tuple(c["id"] for c in m.tool_calls))
    if isinstance(m, ToolMessage):
        return View("tool", m.id, answers=m.tool_call_id)
    return View("other", m.id)


SCRIPT = st.lists(st.lists(st.integers(1, 3), max_size=2), min_size=1, max_size=12)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SCRIPT, st.integers(1, 4), st.booleans())
def test_random_conversations_keep_calls_whole_bound_the_state_and_write_before_removing(script, max_turns, goal):
    saver = SerialSaver()
    store = WitnessStore(saver)
    mw = PoolSplitMemoryMiddleware(
        POOLS,
        namespace=("memories", "u1"),
        max_turns=max_turns,
        recall=RecallConfig(token_counter=default_token_counter),
    )
    agent = scripted_agent(mw, store, checkpointer=saver)
    context: Dict[str, str] = {"user_id": "u1", **({"goal": "finish the release"} if goal else {})}
    for n, rounds in enumerate(script):
        text = "turn %d calls=%s" % (n, ",".join(map(str, rounds)))
        agent.invoke({"messages": [("user", text)]}, thread("p"), context=context)

    history = list(agent.get_state_history(thread("p")))[::-1]  # oldest first
    seen: Dict[str, object] = {}
    for snapshot in history:
        messages = snapshot.values.get("messages", [])
        calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
        results = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
        assert results <= calls  # no tool result without its call
        for m in messages:
            seen[m.id] = m

    final = history[-1].values["messages"]
    _, turns = split_turns([view(m) for m in final], pin_goal=not goal)
    assert len(turns) <= max_turns  # no open loop outlives a finished run
    left = set(seen) - {m.id for m in final}
    for message_id in left:
        text = str(seen[message_id].text)
        written = [c for c, w in zip(store.contents, store.witness) if message_id in w and (not text or text in c)]
        assert written, "message %r left the state without a write" % text
    # the tool results that left, left with their calls
    left_results = {seen[i].tool_call_id for i in left if isinstance(seen[i], ToolMessage)}
    left_calls = {c["id"] for i in left if isinstance(seen[i], AIMessage) for c in seen[i].tool_calls}
    assert left_results == left_calls
