"""`create_search_memory_tool`: a LlamaIndex agent searches its memory,
pool-split, with a `FunctionTool`.

The tool reads exactly what the memory blocks of the same `Memory` read
(`PoolSplitMemoryStore.select_for`): the store's visibility (its
namespace, exact), the curated entries, and the session's own flushed chat
(another session's only with `share_chat=True`). The answer and its
why-not line come from [poolsplit_adapters.search_tool][].
"""

from __future__ import annotations

from typing import Any, Optional

from llama_index.core.memory import Memory
from llama_index.core.tools import FunctionTool

from ..checks import ArgumentError, argument_error, check_label, check_string
from ..search_tool import SEARCH_TOOL_DESCRIPTION, SEARCH_TOOL_NAME, search
from ..stores.chat_flush import session_text
from .memory import StoreMemoryBlock
from .memory_store import PoolSplitMemoryStore

__all__ = ["create_search_memory_tool"]


def _store_of(memory: Memory) -> PoolSplitMemoryStore:
    """The one store behind a `Memory`'s pool-split blocks."""
    stores = {id(b.store): b.store for b in memory.memory_blocks if isinstance(b, StoreMemoryBlock)}
    if len(stores) != 1:
        raise ArgumentError(
            "memory must hold the blocks of one PoolSplitMemoryStore (poolsplit_memory_blocks), found %d" % len(stores)
        )
    return next(iter(stores.values()))


def create_search_memory_tool(
    memory: Any,
    *,
    session_id: Optional[str] = None,
    name: str = SEARCH_TOOL_NAME,
    description: str = SEARCH_TOOL_DESCRIPTION,
) -> FunctionTool:
    """A LlamaIndex `FunctionTool` `search_memory(query)` for a `FunctionAgent`
    or an `AgentWorkflow`.

    Each call selects from the memory for the model's query with the
    store's pools and answers with the selected entries as cite-able
    markers, corrections first, then one line per cause for what was left
    out (a budget, a relevance threshold). A blank query raises an
    `ArgumentError` naming `query`, which the agent hands back to the model
    as an error tool output.

    Args:
        memory: a `Memory` built with
            [poolsplit_memory_blocks][poolsplit_adapters.llama_index.memory.poolsplit_memory_blocks]
            (its store, and its `session_id`), or a
            [PoolSplitMemoryStore][poolsplit_adapters.llama_index.memory_store.PoolSplitMemoryStore].
        session_id: with a store only: whose flushed chat the search may
            read (None: the shared entries only). A `Memory` searches its own
            session, never another.
        name, description: what the model sees.

    Raises:
        ArgumentError: a bad argument, named.

    Example:
        >>> from llama_index.core.memory import Memory
        >>> from poolsplit_adapters import Pool
        >>> from poolsplit_adapters.llama_index import poolsplit_memory_blocks
        >>> notes = [{"id": "n1", "type": "note", "content": "Deploys go out on Tuesdays.", "source": "wiki"}]
        >>> blocks = poolsplit_memory_blocks(notes, [Pool("notes", 200, 5, ("note",))])
        >>> tool = create_search_memory_tool(Memory.from_defaults(session_id="ana", memory_blocks=blocks))
        >>> print(tool.call(query="deploy day").content)
        <memory id="n1" source="wiki" pool="notes">
        Deploys go out on Tuesdays.
        </memory>

        In an agent: `FunctionAgent(tools=[tool], llm=llm)`, run with `memory=` the same `Memory`.
    """
    session: Optional[str]
    if isinstance(memory, Memory):
        if session_id is not None:
            raise ArgumentError("session_id: give it with a PoolSplitMemoryStore only; a Memory searches its own")
        store, session = _store_of(memory), memory.session_id
    elif isinstance(memory, PoolSplitMemoryStore):
        store, session = memory, None if session_id is None else session_text(session_id)  # as the blocks read it
    else:
        raise argument_error("memory", "a Memory with poolsplit_memory_blocks or a PoolSplitMemoryStore", memory)

    def search_memory(query: str) -> str:
        return search(lambda q: store.select_for(q, session), query)

    return FunctionTool.from_defaults(
        fn=search_memory, name=check_label(name, "name"), description=check_string(description, "description")
    )
