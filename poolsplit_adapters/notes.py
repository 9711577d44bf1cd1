"""Notes a selector leaves on a selection beyond the core's report
(``selection.notes``), named in one place: the scorer's fallback and the
count of always-scope entries the namespace kept out.

Its own module because the selectors that write these notes
(`MemoryIndex`, the adapters' ``select_noted`` in
`reports`) sit below what reads them (rendering,
the reports): kept here, the engine writes them without importing the
adapters' glue.
"""

from __future__ import annotations

from typing import Optional

from .poolsplit import ScorerCall, Selection

__all__ = ["OUTSIDE_NOTE", "note_fallback"]

#: A selector that counts
#: `always_outside_namespace` itself (with
#: its columns, no row per entry) leaves the number in ``selection.notes``
#: here.
OUTSIDE_NOTE = "always_outside_namespace"


def note_fallback(selection: Selection, prepared: Optional[ScorerCall]) -> Selection:
    """Record on ``selection`` that ``prepared`` (the call's
    [`ScorerCall`][poolsplit_adapters.poolsplit.ScorerCall], which always
    answers ``fallback_reason``; None: no call's scorer to ask) fell back.

    Example:
        >>> from poolsplit_adapters import Pool, select
        >>> from poolsplit_adapters.poolsplit import ScorerCall
        >>> class Fell:
        ...     fallback_reason = "query embedding failed: timeout"
        ...     def score(self, entry):
        ...         return 1.0
        >>> note_fallback(select([], [Pool("p", 100, 3)]), ScorerCall(Fell())).notes["scorer_fallback"]
        'query embedding failed: timeout'
    """
    reason = prepared.fallback_reason if prepared is not None else None
    if reason:
        selection.notes["scorer_fallback"] = reason
    return selection
