"""A middleware that rewrites the user's messages in the state, in either
order around the memory middleware, decides what the store holds.

Found by an adversarial run: with LangChain's ``PIIMiddleware``
(``apply_to_input=True``) listed *after* the memory middleware, the memory's
``before_model`` read the user's new message before the redaction ran, and
stored the instruction in it with the e-mail address as said; the redacted
text was read again later and stored beside it. The standing statements of
the run's input are now read when the run ends (or when the message leaves
the working set first), from the text the state holds by then."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List

import pytest
from agent_fakes import UserContext, thread
from langchain.agents import create_agent
from langchain.agents.middleware import PIIMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from test_hostile_write_config import Scripted, quiet_memory

SAID = [
    "Always send the weekly report to bob@example.com please.",
    "I prefer replies to ann@corp.io",
    "ok",
    "fine",
    "bye",
]


def converse(memory_first: bool, max_turns: int, asynchronous: bool) -> List[Dict[str, Any]]:
    store = InMemoryStore()
    memory = quiet_memory(max_turns)
    pii = PIIMiddleware("email", strategy="redact", apply_to_input=True)
    agent = create_agent(
        Scripted(answers=["Sure thing, noted."]),
        middleware=[memory, pii] if memory_first else [pii, memory],
        checkpointer=InMemorySaver(),
        store=store,
        context_schema=UserContext,
    )
    for text in SAID:
        turn = {"messages": [("user", text)]}
        if asynchronous:
            asyncio.run(agent.ainvoke(turn, thread("t"), context={"user_id": "u1"}))
        else:
            agent.invoke(turn, thread("t"), context={"user_id": "u1"})
    return [item.value for item in store.search(("memories", "u1"), limit=200)]


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("max_turns", [1, 12])
@pytest.mark.parametrize("memory_first", [True, False])
def test_the_store_holds_only_the_redacted_words_whatever_the_order(memory_first, max_turns, asynchronous):
    stored = converse(memory_first, max_turns, asynchronous)
    assert not [e["content"] for e in stored if "@" in e["content"]]
    standing = sorted((e["type"], e["content"]) for e in stored if e["type"] in ("instruction", "preference"))
    assert standing == [
        ("instruction", "Always send the weekly report to [REDACTED_EMAIL] please."),
        ("preference", "I prefer replies to [REDACTED_EMAIL]"),
    ]
