"""Getting *your own* selection report out of a shared adapter.

An adapter object is usually shared (one retriever serves every request), so
its ``last_selection`` is the selection of whichever call finished last.
:func:`capture_selections` collects the selections made inside a ``with``
block of the current context instead: concurrent requests (threads, asyncio
tasks) each see only their own, however deep in a chain the adapter runs.

The frameworks' own per-call channels carry the same report as JSON
(:func:`event_payload`): the LangChain callback event ``poolsplit_selection``
and the LlamaIndex ``PoolSplitSelectionEvent``.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

from .poolsplit import Selection

_SINKS: contextvars.ContextVar[tuple[list[Selection], ...]] = contextvars.ContextVar(
    "poolsplit_capture_sinks", default=()
)


@contextlib.contextmanager
def capture_selections() -> Iterator[list[Selection]]:
    """Collect every selection made in this context while the block runs,
    in the order the calls finished.

    Example::

        with capture_selections() as mine:
            docs = await retriever.ainvoke("did the deploy finish?")
        (selection,) = mine           # this call's report, whatever ran concurrently

    Works through LCEL chains, LangChain's thread pools, LlamaIndex query
    engines and ``asyncio`` tasks started inside the block: each copies the
    context it was started in. Blocks nest; an outer block sees the inner
    block's selections too.
    """
    captured: list[Selection] = []
    token = _SINKS.set(_SINKS.get() + (captured,))
    try:
        yield captured
    finally:
        _SINKS.reset(token)


def record(selection: Selection) -> Selection:
    """Hand ``selection`` to every :func:`capture_selections` block active in
    this context (called by the adapters once per selection; a selection
    handed over twice in a row, as the two memory blocks of one ``Memory``
    share theirs, is collected once)."""
    for sink in _SINKS.get():
        if not sink or sink[-1] is not selection:
            sink.append(selection)
    return selection


def event_payload(selection: Selection) -> dict[str, Any]:
    """The JSON form of ``selection`` that both frameworks' selection events
    carry: ``Selection.to_dict()``, the core's one JSON form."""
    return selection.to_dict()
