"""Getting *your own* selection report out of a shared adapter.

An adapter object is usually shared (one retriever serves every request), so
its ``last_selection`` is the selection of whichever call finished last.
[`capture_selections`][] collects the selections made inside a ``with``
block of the current context instead: concurrent requests (threads, asyncio
tasks) each see only their own, however deep in a chain the adapter runs.

The frameworks' own per-call channels carry the same report as JSON
(`event_payload`): the LangChain callback event ``poolsplit_selection``
and the LlamaIndex ``PoolSplitSelectionEvent``. An event is sent on every
call whether or not anyone listens, so its size follows what loaded, not
the store: the chosen entries, the counts of what did not load per pool and
reason, and the first `DROPPED_SAMPLE` rows
of each; the full list is built only when asked
(`EventPayload.all_dropped`, or ``selection.dropped`` of a captured
selection).

A scorer that falls back (an embedding scorer whose embedder failed ranks
lexically) warns once; `select_noted` and `note_fallback` put
the fallback on every selection it affected (``notes["scorer_fallback"]``),
read from that call's own prepared scorer, so concurrent calls never name
each other's fallback.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Dict, Optional

from .notes import note_fallback
from .poolsplit import Pool, Scorer, Selection, default_scorer, prepare_scorer, select
from .relevance.capabilities import capabilities, note_query_cap
from .render import always_outside_namespace, dropped_rows, selection_dict

_SINKS: contextvars.ContextVar[tuple[list[Selection], ...]] = contextvars.ContextVar(
    "poolsplit_capture_sinks", default=()
)


@contextlib.contextmanager
def capture_selections() -> Iterator[list[Selection]]:
    """Collect every selection made in this context while the block runs,
    in the order the calls finished.

    Example:
        ```python
        with capture_selections() as mine:
            docs = await retriever.ainvoke("did the deploy finish?")
        (selection,) = mine           # this call's report, whatever ran concurrently
        ```

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
    """Hand ``selection`` to every [`capture_selections`][] block active in
    this context (called by the adapters once per selection; a selection
    handed over twice in a row, as the two memory blocks of one ``Memory``
    share theirs, is collected once)."""
    for sink in _SINKS.get():
        if not sink or sink[-1] is not selection:
            sink.append(selection)
    return selection


class EventPayload(dict[str, Any]):
    """The body of a selection event: a plain JSON dict
    (`selection_dict`, with its bounded
    sample of what did not load) that can also list every left-out entry
    on request, built then and not before.

    Copied, pickled or serialised, it is the plain dict (the selection it
    reads from stays in this process).

    Example:
        ```python
        def on_custom_event(self, name, data, **kwargs):
            if name == "poolsplit_selection":
                data["dropped_total"], data["dropped_counts"]   # always there
                every = data.all_dropped()                      # rows, built now
        ```
    """

    __slots__ = ("_selection",)

    def __init__(self, selection: Selection) -> None:
        super().__init__(selection_dict(selection))
        # The always-scope entries the namespace kept out, counted
        # (`render.always_outside_namespace`), so a
        # correction stored under the wrong namespace shows at the top of the
        # event, not only as one ``namespace`` reason among the dropped rows.
        self["always_outside_namespace"] = always_outside_namespace(selection)
        self._selection = selection

    def all_dropped(self) -> list[dict[str, Any]]:
        """Every left-out entry as a row of the JSON form, in input order."""
        return dropped_rows(self._selection, None)

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        import copy

        return copy.deepcopy(dict(self), memo)

    def __reduce__(self) -> Any:
        return (dict, (dict(self),))


def event_payload(selection: Selection) -> EventPayload:
    """The JSON form of ``selection`` that both frameworks' selection events
    carry: `selection_dict`, the one JSON
    form plus ``always_outside_namespace``, as an `EventPayload`
    (every left-out row on request)."""
    return EventPayload(selection)


class _Prepared:
    """A scorer already prepared for one call (the core's scorer protocol:
    ``prepare(context, now)`` returns it), so the caller keeps a handle on
    what the call's scorer said."""

    def __init__(self, prepared: Any) -> None:
        self.prepared = prepared

    def prepare(self, context: Optional[Mapping[str, Any]], now: Optional[datetime.datetime]) -> Any:
        return self.prepared

    def __call__(
        self, entry: Mapping[str, Any], context: Optional[Mapping[str, Any]], *, now: Optional[datetime.datetime] = None
    ) -> float:
        return float(self.prepared.score(entry))  # the spec's form of the same scorer


def select_noted(
    entries: Sequence[Mapping[str, Any]],
    pools: Sequence[Pool],
    context: Optional[Mapping[str, Any]] = None,
    *,
    scorer: Scorer = default_scorer,
    now: Optional[datetime.datetime] = None,
    kept: Optional[Dict[str, Any]] = None,
    **options: Any,
) -> Selection:
    """The core's ``select`` (its one fill, with ``layering=``; same arguments), with the scorer's fallback noted;
    a words scorer (`capabilities`' ``words``: a [`RelevanceScorer`][]) without a corpus
    ranks against the statistics of every entry given
    ([`over`][poolsplit_adapters.relevance.RelevanceScorer.over]), as a
    ``MemoryIndex`` of the same entries does.

    ``kept``: where a caller that fills the same ``entries`` again for the
    same context, time and scorer (a task plan's standing room moved,
    `AdapterCall.filled`) keeps the prepared scorer between the fills, so
    each entry is scored once (the caller starts it empty for each call).

    Example:
        ```python
        selection = select_noted(entries, pools, {"message": "refund"}, scorer=EmbeddingScorer(embedder))
        selection.notes.get("scorer_fallback")   # e.g. "query embedding failed: ..."
        ```
    """
    prepared = kept.get("prepared") if kept is not None else None
    if prepared is None:
        words = capabilities(scorer).words
        if words is not None:
            entries = entries if isinstance(entries, (list, tuple)) else list(entries)
            scorer = words.over(entries)
        prepared = prepare_scorer(scorer, context, now)
        if kept is not None:
            kept["prepared"] = prepared
    options.setdefault("_stacklevel", 3)  # warnings name the caller of this function
    selection = select(entries, pools, context, scorer=_Prepared(prepared), now=now, **options)
    return note_query_cap(note_fallback(selection, prepared), scorer, context)
