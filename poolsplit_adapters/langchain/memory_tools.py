"""The tools [`PoolSplitMemoryMiddleware`][poolsplit_adapters.langchain.middleware.PoolSplitMemoryMiddleware]
gives the agent's model: ``remember`` (save a note through the write gate)
and ``expand_memory`` (the full text of an entry shown as a summary).

Translation only, as the hooks: the model's arguments in, a tool message or
a state update out; the steps (where a call reads and writes, the note's
proposal, the write, the answer) are the middleware's `AgentMemory`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Callable, Optional, Union

from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.types import Command
from pydantic import BaseModel, Field

from ..agent_memory import REMEMBER_DESCRIPTION, AgentMemory, Where
from ..checks import ArgumentError
from ..memory.expand import UnknownEntryError
from ..memory.expand_tools import EXPAND_TOOL_DESCRIPTION, EXPAND_TOOL_NAME
from ..memory.write_gate import Proposal
from ..poolsplit import EntryError
from ..stores.langgraph.backends import Backend

__all__ = ["ExpandInput", "MemoryTools", "RememberInput"]


class RememberInput(BaseModel):
    """Arguments of the ``remember`` tool, as the model sees them."""

    note: str = Field(description="The note: one self-contained sentence or short paragraph.")
    tags: Optional[list[str]] = Field(default=None, description="Optional topic tags.")
    scope: Optional[str] = Field(
        default=None,
        description='Leave empty. Standing corrections (scope "always") are curated by the user, not saved here.',
    )


class ExpandInput(BaseModel):
    """Arguments of the ``expand_memory`` tool, as the model sees them."""

    entry_id: str = Field(description='The id attribute of a <memory ... layer="summary"> marker.')


@contextlib.contextmanager
def _told_to_the_model() -> Iterator[None]:
    """A value the model passed a tool that the memory refuses (an id with
    NUL, a tag of the wrong kind) as a ``ToolException``: the tool answers
    with the refusal, naming the argument, and the model can correct it
    (``handle_tool_error``), instead of the agent's run ending. Only around
    the reading of the model's arguments: a store's own failure is the
    developer's, and is raised."""
    try:
        yield
    except (ArgumentError, EntryError) as err:
        raise ToolException(str(err)) from None


class MemoryTools:
    """The two tools over one middleware's memory: ``memory`` holds the
    steps, ``where`` names the store and namespaces a tool call's runtime
    reads and writes (the recall's own, so a tool sees no more than the
    model may)."""

    def __init__(self, memory: AgentMemory, where: Callable[[Any], Where[Backend]]) -> None:
        self._memory = memory
        self._where = where

    def remember(self) -> BaseTool:
        """The ``remember`` tool (sync and async)."""
        return StructuredTool.from_function(
            func=self._remember,
            coroutine=self._aremember,
            name="remember",
            description=REMEMBER_DESCRIPTION,
            args_schema=RememberInput,
            infer_schema=False,
            handle_tool_error=True,
        )

    def expand(self) -> BaseTool:
        """The ``expand_memory`` tool (sync and async)."""
        return StructuredTool.from_function(
            func=self._expand,
            coroutine=self._aexpand,
            name=EXPAND_TOOL_NAME,
            description=EXPAND_TOOL_DESCRIPTION,
            args_schema=ExpandInput,
            infer_schema=False,
            handle_tool_error=True,
        )

    def _remember(
        self, runtime: ToolRuntime, note: str, tags: Optional[list[str]] = None, scope: Optional[str] = None
    ) -> Union[Command[Any], str]:
        where, proposal = self._proposed(runtime, note, tags, scope)
        settled = self._memory._write(where, [proposal])
        return self._remembered(runtime, settled)

    async def _aremember(
        self, runtime: ToolRuntime, note: str, tags: Optional[list[str]] = None, scope: Optional[str] = None
    ) -> Union[Command[Any], str]:
        where, proposal = self._proposed(runtime, note, tags, scope)
        settled = await self._memory._awrite(where, [proposal])
        return self._remembered(runtime, settled)

    def _expand(self, runtime: ToolRuntime, entry_id: str) -> str:
        where = self._where(runtime)
        with _told_to_the_model():
            return _full_text(where.source.get(where.chain, entry_id), entry_id)

    async def _aexpand(self, runtime: ToolRuntime, entry_id: str) -> str:
        where = self._where(runtime)
        with _told_to_the_model():
            return _full_text(await where.source.aget(where.chain, entry_id), entry_id)

    def _proposed(
        self, runtime: ToolRuntime, note: str, tags: Optional[list[str]], scope: Optional[str]
    ) -> tuple[Where[Backend], Proposal]:
        """Where the ``remember`` call writes, and its proposal (a refused
        argument told to the model, `_told_to_the_model`)."""
        where = self._where(runtime)
        with _told_to_the_model():
            return where, self._memory._note(note, tags, scope, where)

    def _remembered(self, runtime: ToolRuntime, settled: Sequence[Proposal]) -> Union[Command[Any], str]:
        """The tool's answer, with the gate's report kept in the state for
        the next selection event (the answer alone when the tool runs
        outside an agent, without a tool call to answer)."""
        answer = self._memory._answer(settled[0])
        if runtime.tool_call_id is None:
            return answer
        message = ToolMessage(answer, tool_call_id=runtime.tool_call_id, name="remember")
        return Command(update={**self._memory._written(settled), "messages": [message]})


def _full_text(entry: Optional[Mapping[str, Any]], entry_id: str) -> str:
    if entry is None:
        raise ToolException(str(UnknownEntryError(entry_id)))
    content = entry.get("content")
    if not isinstance(content, str):
        raise ToolException("memory %r has no text content" % entry_id)
    return content
