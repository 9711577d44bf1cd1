"""The expand tool for agents, in both frameworks.

A model that sees ``<memory id="ep-7" layer="summary">`` knows there is more;
this tool is how it asks. Both wrappers call
[`expand`][] and nothing else. The
frameworks are imported when a tool is built, so importing this module pulls
in neither.

The tool answers from the ``source`` it was built with (entries, a mapping of
id -> entry, a [`MemoryIndex`][poolsplit_adapters.index.MemoryIndex] or a store with
``get(id)``): give it the memory the agent may read, and no more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .expand import Source, UnknownEntryError, expand

if TYPE_CHECKING:  # pragma: no cover - typing only
    from langchain_core.tools import BaseTool
    from llama_index.core.tools import FunctionTool

__all__ = ["EXPAND_TOOL_DESCRIPTION", "EXPAND_TOOL_NAME", "langchain_expand_tool", "llama_index_expand_tool"]

EXPAND_TOOL_NAME = "expand_memory"
EXPAND_TOOL_DESCRIPTION = (
    "Load the full text of a memory that the context shows only as a summary "
    '(a <memory ... layer="summary"> or layer="timeline" marker). '
    "Argument entry_id: the id attribute of that marker."
)


def langchain_expand_tool(
    source: Source, *, name: str = EXPAND_TOOL_NAME, description: str = EXPAND_TOOL_DESCRIPTION
) -> BaseTool:
    """A LangChain tool ``expand_memory(entry_id) -> full text``.

    An unknown id comes back to the model as the tool's error message (a
    ``ToolMessage`` with ``status="error"``), not as an exception that ends
    the agent run: the model can correct the id.

    Example:
        ```python
        tool = langchain_expand_tool(entries)
        tool.invoke({"entry_id": "ep-007"})
        ```
    """
    from langchain_core.tools import StructuredTool, ToolException

    def expand_memory(entry_id: str) -> str:
        try:
            return expand(source, entry_id)
        except (UnknownEntryError, TypeError) as err:
            raise ToolException(str(err)) from None

    return StructuredTool.from_function(func=expand_memory, name=name, description=description, handle_tool_error=True)


def llama_index_expand_tool(
    source: Source, *, name: str = EXPAND_TOOL_NAME, description: str = EXPAND_TOOL_DESCRIPTION
) -> FunctionTool:
    """A LlamaIndex ``FunctionTool`` ``expand_memory(entry_id) -> full text``.

    An unknown id raises [`UnknownEntryError`][],
    which LlamaIndex agents turn into an error tool output the model reads.

    Example:
        ```python
        agent = FunctionAgent(tools=[llama_index_expand_tool(entries)], llm=llm)
        ```
    """
    from llama_index.core.tools import FunctionTool

    def expand_memory(entry_id: str) -> str:
        """Full text of the memory entry with this id."""
        return expand(source, entry_id)

    return FunctionTool.from_defaults(fn=expand_memory, name=name, description=description)
