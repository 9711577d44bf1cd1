"""Deterministic pieces for agent tests: a tool-calling fake chat model that
records every request, a lookup tool, helpers to read what the model saw.

The model is LangChain's own ``GenericFakeChatModel``: each reply is decided
from the conversation (so a script needs no fixed length) and then handed to
the parent class through its ``messages`` iterator.

Script language, in the human message text:

* ``calls=2,3``: two tool-call rounds, the first with 2 parallel ``lookup``
  calls, the second with 3; then a final answer.
* ``remember=<note>``: one ``remember`` call with that note (optionally
  ``scope=always``, ``tags=a,b`` and ``source=<x>`` as extra arguments).
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterator, List, Optional, Sequence

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field
from typing_extensions import TypedDict

from poolsplit_adapters.langchain.testing import ToolCallingFakeChatModel
from poolsplit_adapters.render import parse_markers


class UserContext(TypedDict, total=False):
    user_id: str
    goal: str
    tags: List[str]
    project: str


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return "result for %s" % q


def _rounds(text: str) -> List[int]:
    found = re.search(r"calls=([\d,]+)", text)
    return [int(n) for n in found.group(1).split(",") if n] if found else []


def _remember_args(text: str) -> Optional[Dict[str, Any]]:
    found = re.search(r"remember=(.*?)(?: scope=(\S+))?(?: tags=(\S+))?(?: source=(\S+))?$", text)
    if not found:
        return None
    args: Dict[str, Any] = {"note": found.group(1)}
    if found.group(2):
        args["scope"] = found.group(2)
    if found.group(3):
        args["tags"] = found.group(3).split(",")
    if found.group(4):
        args["source"] = found.group(4)
    return args


class ToolCallingFakeModel(ToolCallingFakeChatModel):
    """The package's fake tool-calling chat model (``bind_tools`` returns
    itself), scripted from the conversation; every request (the full
    message list, system message included) is recorded."""

    messages: Iterator[Any] = Field(default_factory=lambda: iter(()))
    requests: List[List[BaseMessage]] = Field(default_factory=list)

    def reply(self, messages: Sequence[BaseMessage]) -> AIMessage:
        start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        text = str(messages[start].text)
        done = sum(1 for m in messages[start:] if isinstance(m, AIMessage) and m.tool_calls)
        n = len(self.requests)
        note = _remember_args(text)
        if note is not None and done == 0:
            return AIMessage("", tool_calls=[{"name": "remember", "args": note, "id": "rem-%d" % n}])
        rounds = _rounds(text)
        if done < len(rounds):
            calls = [
                {"name": "lookup", "args": {"q": "%d.%d" % (n, k)}, "id": "call-%d-%d" % (n, k)}
                for k in range(rounds[done])
            ]
            return AIMessage("", tool_calls=calls)
        results = [m for m in messages[start:] if isinstance(m, ToolMessage)]
        return AIMessage("answer %d (%d tool results)" % (n, len(results)))

    def _generate(self, messages: List[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.requests.append(list(messages))
        self.messages = iter([self.reply(messages)])
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def system_text(request: Sequence[BaseMessage]) -> str:
    """The text of a recorded request's system message ('' when none)."""
    first = request[0] if request else None
    return str(first.text) if isinstance(first, SystemMessage) else ""


def markers(request: Sequence[BaseMessage]) -> List[Dict[str, str]]:
    """The memory markers in a recorded request's system message."""
    return parse_markers(system_text(request))


def thread(thread_id: str) -> Dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def scripted_agent(
    middleware: Any, store: Any = None, *, model: Optional[ToolCallingFakeModel] = None, checkpointer: Any = None
) -> Any:
    """A real ``create_agent`` agent: the scripted fake model (a fresh one
    unless ``model``), the ``lookup`` tool, ``middleware``, a checkpointer
    (``InMemorySaver`` unless given), ``store`` and :class:`UserContext`."""
    return create_agent(
        model if model is not None else ToolCallingFakeModel(),
        tools=[lookup],
        middleware=[middleware],
        checkpointer=checkpointer if checkpointer is not None else InMemorySaver(),
        store=store,
        context_schema=UserContext,
    )


# -- a consolidator: the host's chat model asked for a plan -----------------------------


def plan(*ops: Dict[str, Any]) -> AIMessage:
    """A reply that calls the consolidation plan tool with these operations
    (what ``with_structured_output`` asks a tool-calling model for)."""
    return AIMessage("", tool_calls=[{"name": "ConsolidationPlan", "args": {"operations": list(ops)}, "id": "plan-1"}])


def handle(payload: Dict[str, Any], fragment: str) -> Optional[int]:
    """The handle of the shown memory (existing or new) whose text holds ``fragment``."""
    for row in [*payload["existing"], *payload["new"]]:
        if fragment in row["text"]:
            return int(row["handle"])
    return None


class PlanningFakeModel(ToolCallingFakeChatModel):
    """LangChain's fake chat model as a consolidator: ``bind_tools`` returns
    itself (so ``with_structured_output`` goes through a tool call, as with a
    real tool-calling model) and each reply is ``decide(payload)``, decided
    from the numbered memories it is shown. Every payload is recorded."""

    messages: Iterator[Any] = Field(default_factory=lambda: iter(()))
    decide: Any = None
    payloads: List[Dict[str, Any]] = Field(default_factory=list)

    def _generate(self, messages: List[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        import json

        payload = json.loads(str(messages[-1].text))
        self.payloads.append(payload)
        self.messages = iter([self.decide(payload)])
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
