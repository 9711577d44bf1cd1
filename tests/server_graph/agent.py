"""The agent the LangGraph server test serves (``langgraph.json`` names
``agent.py:graph``): ``create_agent`` with PoolSplitMemoryMiddleware over
the server's own store, and a fake chat model that records what it was given.

The graph runs in the server process, so the test cannot look at the model
object: every model call writes the system message it received into the
server's store, under ``("probe", thread_id)``, where the test reads it back
through the SDK. The middleware reads ``("memories", user_id)`` exactly, so
the probe items are never anyone's memory.

The model's script, read from the last human message: ``remember=<note>``
makes one ``remember`` tool call with that note, then an answer; anything
else is answered at once.
"""

from __future__ import annotations

import re
import uuid
from typing import Any, Iterator, List, Sequence

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.config import get_config, get_store
from pydantic import Field
from typing_extensions import TypedDict

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware

POOLS = [
    Pool("fixes", 0, 0, ("correction",)),
    Pool("standing", 256, 20, ("instruction", "preference")),  # what the user asks for always
    Pool("recent", 4000, 40, ("episode", "note", "fact")),
]
#: Turns kept verbatim in a thread; older ones are demoted to the store.
MAX_TURNS = 2


class UserContext(TypedDict):
    """The run's ``context``: who is asking (their memory namespace)."""

    user_id: str


class RecordingFakeModel(GenericFakeChatModel):
    """LangChain's ``GenericFakeChatModel``, replying from the conversation
    and recording each call's system message in the server's store."""

    messages: Iterator[Any] = Field(default_factory=lambda: iter(()))

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordingFakeModel:  # type: ignore[override]
        return self

    @staticmethod
    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        text = str(messages[start].text)
        note = re.search(r"remember=(.*)$", text)
        answered = any(isinstance(m, ToolMessage) for m in messages[start:])
        if note is not None and not answered:
            call = {"name": "remember", "args": {"note": note.group(1)}, "id": "rem-%s" % uuid.uuid4().hex}
            return AIMessage("", tool_calls=[call])
        return AIMessage("ok: %s" % text)

    async def _agenerate(
        self, messages: List[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Any:
        system = messages[0] if messages and isinstance(messages[0], SystemMessage) else None
        thread = str(get_config()["configurable"]["thread_id"])
        human = next(str(m.text) for m in reversed(messages) if isinstance(m, HumanMessage))
        record = {"system": "" if system is None else str(system.text), "human": human}
        await get_store().aput(("probe", thread), uuid.uuid4().hex, record)
        # No await between setting the reply and the parent reading it: the
        # concurrent runs of one event loop cannot interleave here.
        self.messages = iter([self.reply(messages)])
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def user_namespace(runtime: Any) -> tuple[str, str]:
    """Each user's memory: ``("memories", <context user_id>)``."""
    return ("memories", runtime.context["user_id"])


memory = PoolSplitMemoryMiddleware(POOLS, namespace=user_namespace, max_turns=MAX_TURNS)
graph = create_agent(RecordingFakeModel(), tools=[], middleware=[memory], context_schema=UserContext)
