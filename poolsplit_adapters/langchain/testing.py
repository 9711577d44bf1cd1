"""A fake chat model that an agent with memory tools can run, for examples
and tests without a model provider or a network.

LangChain's own ``GenericFakeChatModel`` answers from a list of replies,
but it cannot bind tools: its ``bind_tools`` is
``BaseChatModel.bind_tools``, which raises ``NotImplementedError``. Every
agent built with
[`PoolSplitMemoryMiddleware`][poolsplit_adapters.langchain.middleware.PoolSplitMemoryMiddleware]
binds at least the ``remember`` tool (``remember=True``, the default), so
with the plain fake model an example had to turn ``remember`` off, and
then it no longer showed the agent a reader would build.
[`ToolCallingFakeChatModel`][poolsplit_adapters.langchain.testing.ToolCallingFakeChatModel]
accepts the tools and keeps answering from its replies: a reply may itself
be an ``AIMessage`` with ``tool_calls``, so an example can script a tool
call too.
"""

from __future__ import annotations

from typing import Any, Sequence

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

__all__ = ["ToolCallingFakeChatModel"]


class ToolCallingFakeChatModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` whose ``bind_tools`` returns the model itself.

    The replies come from ``messages`` (an iterator of strings or
    ``AIMessage``), one per model call, exactly as in the parent class; the
    tools are accepted and never called unless a reply asks for one.

    Example:
        >>> from langchain.agents import create_agent
        >>> from langgraph.store.memory import InMemoryStore
        >>> from poolsplit_adapters import Pool
        >>> from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware
        >>> memory = PoolSplitMemoryMiddleware([Pool("notes", 200, 4)], namespace=("memories", "ana"))
        >>> [tool.name for tool in memory.tools]  # remember=True, the default
        ['remember']
        >>> model = ToolCallingFakeChatModel(messages=iter(["Done."]))
        >>> agent = create_agent(model, middleware=[memory], store=InMemoryStore())
        >>> agent.invoke({"messages": [("user", "refund order 7")]})["messages"][-1].content
        'Done.'
    """

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolCallingFakeChatModel:  # type: ignore[override]
        """The model itself: the tools are accepted, and a reply that calls
        one must name it (as a real model's would)."""
        return self
