"""The memory-search tool's answer, for agents in both frameworks.

A model that searches its memory with a plain top-k search reads k entries
and cannot tell whether they are all there is. This tool runs the pool-split
selection for the model's query instead (each pool fills its own budget, so a
rare type is not crowded out; corrections come first, outside every budget)
and answers with the selection as the agent's context shows it
([render_context][poolsplit_adapters.render.render_context]): cite-able
markers, then one explicit line per cause for what was left out (a pool's
budget, a pool's relevance threshold, a store's capped recall). Repeats
never reach a selection to be cut there: the store's duplicate check keeps a
repeated memory once when it is written.

The framework wrappers only find the caller's memory and call [search][poolsplit_adapters.search_tool.search]:
`create_search_memory_tool` in
[poolsplit_adapters.langchain.search_tool][] (a LangChain tool for
`create_agent`) and in [poolsplit_adapters.llama_index.search_tool][] (a
LlamaIndex `FunctionTool`). Nothing here imports a framework.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Callable

from .checks import argument_error
from .memory.write_gate import blank
from .poolsplit import Selection
from .render import render_context

__all__ = [
    "NOTHING_SELECTED",
    "SEARCH_TOOL_DESCRIPTION",
    "SEARCH_TOOL_NAME",
    "answer",
    "asearch",
    "check_query",
    "search",
]

SEARCH_TOOL_NAME = "search_memory"
SEARCH_TOOL_DESCRIPTION = (
    "Search your long-term memory of this user: past conversations, saved notes, facts and standing "
    "corrections. Argument query: what you need to recall, in a few words or a question. The answer lists "
    "the memories that fit, each as a <memory id=...> marker you can cite, then a line saying how many "
    "more were left out and why (a budget or a relevance threshold): those exist, so search again more "
    "precisely instead of assuming there is nothing more."
)

#: The answer's first line when the selection loaded nothing.
NOTHING_SELECTED = "[no memory entry was selected for this query]"


def check_query(query: Any) -> str:
    """The model's query, refused with an error naming the argument when it
    is not a string with some text: an empty search would select by recency
    alone and look like an answer.

    Raises:
        ArgumentError: ``query`` is not a non-blank string.

    Example:
        >>> check_query("refund rounding")
        'refund rounding'
        >>> check_query("  ")
        Traceback (most recent call last):
        ...
        poolsplit_adapters.errors.ArgumentError: query must be a non-blank string, got str '  '
    """
    if not isinstance(query, str) or blank(query):  # the one rule of "shows nothing" (a zero-width space too)
        raise argument_error("query", "a non-blank string", query)
    return query


def answer(selection: Selection) -> str:
    """What the tool returns to the model for ``selection``: its rendered
    markers and omission lines, after `NOTHING_SELECTED`
    when no entry loaded (an empty answer reads like a failed call).

    Example:
        >>> from poolsplit_adapters import Pool, select
        >>> entries = [{"id": "a", "content": "Refunds round down.", "token_count": 5},
        ...            {"id": "b", "content": "Refunds are in cents.", "token_count": 5}]
        >>> print(answer(select(entries, [Pool("notes", 5, 3)], {"message": "refunds"})))
        <memory id="a" pool="notes">
        Refunds round down.
        </memory>
        [1 more entry left out by budget: notes 1]
    """
    text = render_context(selection).text
    if selection.chosen:
        return text
    return "\n".join(line for line in (NOTHING_SELECTED, text) if line)


def search(select: Callable[[str], Selection], query: Any) -> str:
    """The tool's whole job: check ``query``, ``select(query)`` (the
    caller's memory, scoped by the wrapper), [answer][poolsplit_adapters.search_tool.answer].

    Example:
        >>> from poolsplit_adapters import Pool, select
        >>> notes = [{"id": "a", "content": "Deploys go out on Tuesdays."}]
        >>> print(search(lambda q: select(notes, [Pool("notes", 100, 3)], {"message": q}), "deploy day"))
        <memory id="a" pool="notes">
        Deploys go out on Tuesdays.
        </memory>
    """
    return answer(select(check_query(query)))


async def asearch(select: Callable[[str], Awaitable[Selection]], query: Any) -> str:
    """Async [search][poolsplit_adapters.search_tool.search], for a store with an async selection."""
    return answer(await select(check_query(query)))
