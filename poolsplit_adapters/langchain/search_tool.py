"""`create_search_memory_tool`: a `create_agent` agent searches its user's
memory, pool-split, in the shape LangMem's tool of that name made familiar.
The answer is [poolsplit_adapters.search_tool][]'s; the memory is
found per call as the middleware finds it
([RuntimeMemory][poolsplit_adapters.langchain.runtime_memory.RuntimeMemory]),
so one user's search never reads another's namespace.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any, Optional, Union

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field

from ..agent_config import RecallConfig, removed_keyword_error
from ..checks import ArgumentError, check_instance, check_label, check_string
from ..poolsplit import Pool
from ..search_tool import SEARCH_TOOL_DESCRIPTION, SEARCH_TOOL_NAME, asearch, check_query, search
from ..settings import AgentMemorySettings
from .runtime_memory import NamespaceSpec, RuntimeMemory

__all__ = ["SearchInput", "create_search_memory_tool"]

OWNER = "create_search_memory_tool"


class SearchInput(BaseModel):
    """Arguments of the `search_memory` tool, as the model sees them."""

    query: str = Field(description="What to recall: a few words or a question.")


def _for_the_model(query: Any) -> str:
    """The query, or the refusal as a `ToolException`: the tool answers
    with it and the model can ask again (`handle_tool_error`)."""
    try:
        return check_query(query)
    except ArgumentError as err:
        raise ToolException("%s: %s" % (SEARCH_TOOL_NAME, err)) from None


def create_search_memory_tool(
    pools: Union[Sequence[Pool], str],
    *,
    namespace: NamespaceSpec,
    store: Any = None,
    name: str = SEARCH_TOOL_NAME,
    description: str = SEARCH_TOOL_DESCRIPTION,
    now: Optional[datetime.datetime] = None,
    recall: Optional[RecallConfig] = None,
    **removed: Any,
) -> BaseTool:
    """A LangChain tool `search_memory(query)` for `create_agent(tools=[...])`.

    Each call selects from the caller's memory for the model's query and
    answers with the selected entries as cite-able markers, corrections
    first, then one line per cause for what was left out (a budget, a
    relevance threshold): the model learns that more exists instead of
    reading a cut answer as all there is. A blank query is answered with an
    error the model reads (a `ToolMessage` with `status="error"`) and can
    correct; a failing `namespace(runtime)` or a missing store raises, as
    they are the developer's to fix.

    Args:
        pools: the pool plan (a list of [Pool][poolsplit_adapters.poolsplit.Pool]),
            or `"auto"` with `total_tokens` and `total_entries`.
        namespace: the user's namespace (`("memories", "ana")`), an explicit
            chain (own first), or `runtime -> namespace` called on each call
            with the tool's `ToolRuntime` (e.g. `lambda rt: ("memories",
            rt.context["user_id"])`, the callable the middleware takes).
        store: the memory: a LangGraph `BaseStore`, a LangChain
            `VectorStore`, a store following the store contract (the SQLite
            store), or a list of entries; default `runtime.store` (the one
            given to `create_agent(store=...)`).
        name, description: what the model sees (defaults:
            `search_memory` and a description that explains the why-not line).
        now: fixed reference time for scoring (default: the time of each call).
        recall: how the store is read, entries are counted and ranked and
            `"auto"` shares its budget
            ([RecallConfig][poolsplit_adapters.agent_config.RecallConfig], as for
            [PoolSplitMemoryMiddleware][poolsplit_adapters.langchain.middleware.PoolSplitMemoryMiddleware]).
            The flat keywords of 0.2 (`fetch_k=`, `scorer=`, ...) raise an
            `ArgumentError` naming it.

    Raises:
        ArgumentError: a bad argument, named (checked here, not on the first call).

    Example:
        >>> from langchain.tools import ToolRuntime
        >>> from poolsplit_adapters import Pool
        >>> notes = [{"id": "n1", "type": "note", "namespace": "memories.ana", "content": "Ana deploys on Tuesdays."},
        ...          {"id": "n2", "type": "note", "namespace": "memories.bob", "content": "Bob deploys on Fridays."}]
        >>> tool = create_search_memory_tool([Pool("notes", 200, 5, ("note",))],
        ...                                  namespace=lambda rt: ("memories", rt.context["user_id"]), store=notes)
        >>> runtime = ToolRuntime(state={}, context={"user_id": "ana"}, config={}, stream_writer=print,
        ...                       tool_call_id=None, store=None)
        >>> print(tool.invoke({"query": "when are deploys?", "runtime": runtime}))
        <memory id="n1" pool="notes">
        Ana deploys on Tuesdays.
        </memory>

        In an agent: `create_agent(model, tools=[tool], store=store, context_schema=...)`.
    """
    if removed:
        raise removed_keyword_error(
            OWNER, removed, ("pools", "namespace", "store", "name", "description", "now", "recall")
        )
    recall = check_instance(recall, RecallConfig, "recall") or RecallConfig()
    settings = AgentMemorySettings.held_by(OWNER, pools=pools, now=now, **recall.settings())
    searching = RuntimeMemory(OWNER, namespace, store, settings)

    def search_memory(runtime: ToolRuntime, query: str) -> str:
        return search(lambda q: searching.select(runtime, q), _for_the_model(query))

    async def asearch_memory(runtime: ToolRuntime, query: str) -> str:
        return await asearch(lambda q: searching.aselect(runtime, q), _for_the_model(query))

    return StructuredTool.from_function(
        func=search_memory,
        coroutine=asearch_memory,
        name=check_label(name, "name"),
        description=check_string(description, "description"),
        args_schema=SearchInput,
        infer_schema=False,
        handle_tool_error=True,
    )
