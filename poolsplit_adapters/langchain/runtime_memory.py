"""Whose memory one agent call reads: the store and the namespace chain,
each fixed or taken from the call's runtime.

The agent middleware and the search tool answer the same question on every
call, so they answer it here, once: a tenant's memory must be found the same
way by the hook that injects it and by the tool that searches it, or one of
them could read another user's namespace. The resolution is
``stores.langgraph.runtime.RuntimeBackends``'s; this class adds the stores a
LangChain caller may hand over (a ``VectorStore``).
"""

from __future__ import annotations

from typing import Any

from ..stores.langgraph.backends import Backend
from ..stores.langgraph.runtime import NamespaceSpec as NamespaceSpec
from ..stores.langgraph.runtime import RuntimeBackends
from .backends import backend_for

__all__ = ["NamespaceSpec", "RuntimeMemory"]


class RuntimeMemory(RuntimeBackends):
    """The store and namespace chain of each call, resolved from its runtime.

    Args:
        owner: the class or function the caller built, named in errors.
        namespace: a namespace (``("memories", "ana")``), an explicit chain
            (``[("memories", uid), ("memories", "shared")]``), or a callable
            ``runtime -> namespace`` (``lambda rt: ("memories",
            rt.context["user_id"])``), called on every call with the hook's
            ``Runtime`` or the tool's ``ToolRuntime``. Exact: never widened.
        store: the memory's store (any kind
            [backend_for][poolsplit_adapters.langchain.backends.backend_for]
            takes), or None for ``runtime.store`` (the store given to
            ``create_agent(store=...)``).
        settings: the selection settings the backends read with.

    Example:
        >>> from langchain.tools import ToolRuntime
        >>> from langgraph.store.memory import InMemoryStore
        >>> from poolsplit_adapters import Pool
        >>> from poolsplit_adapters.settings import AgentMemorySettings
        >>> settings = AgentMemorySettings.held_by("my_tool", pools=[Pool("notes", 200, 5)])
        >>> where = RuntimeMemory("my_tool", lambda rt: ("memories", rt.context["user_id"]), None, settings)
        >>> runtime = ToolRuntime(state={}, context={"user_id": "ana"}, config={}, stream_writer=print,
        ...                       tool_call_id=None, store=InMemoryStore())
        >>> where.chain(runtime), type(where.backend(runtime)).__name__
        ((('memories', 'ana'),), '_BaseStoreBackend')
    """

    def _backend_for(self, store: Any, argument: str) -> Backend:
        """A LangChain ``VectorStore`` too (`backend_for`)."""
        return backend_for(store, self.settings, argument=argument)
