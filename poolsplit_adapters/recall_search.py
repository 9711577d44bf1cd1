"""One search of a recall plan, in no filter dialect: what the plan
(`recall`) asks and each store translates.

Its own module, below the stores: the Postgres filter values
(`postgres`, where every SQL statement
lives) translate a `Search` without importing the recall plan
above them. `recall` hands it out too, beside the
plan that makes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional, Tuple

__all__ = ["Search"]


@dataclass(frozen=True)
class Search:
    """One similarity search of the plan, in no particular filter dialect.

    Attributes:
        label: names the search in traces: ``"pool:<name>"``,
            ``"pool:<name>:untyped"`` or ``"always"``.
        k: how many results to ask for.
        types: the ``type`` metadata must be one of these; None: any type
            (or, with ``untyped``, none).
        untyped: only entries *without* ``type`` metadata (they count as
            `UNTYPED_DEFAULT`). A dialect that cannot say "missing"
            searches without a type condition instead and lets the selector
            sort the candidates out.
        always: only entries with ``scope == "always"``.
        namespaces: the ``namespace`` metadata must be one of these; empty:
            no namespace condition (also when the visibility chain has a
            ``None`` link).
        pool: the pool whose candidates it recalls (None: the always-scope
            fetch), so a search can grow until that pool's budget is full.
        query: its own query text; None (every search of a plan): the
            text the whole run searches for. A LangGraph store's batch of
            near-duplicate searches has one per written entry (a searcher
            that embeds one query a call serves none of these, see
            `RecallSearcher.serves`).

    Example:
        ```python
        Search("pool:skills", 20, types=("skill",), namespaces=("team-a",), pool="skills")
        ```
    """

    label: str
    k: int
    types: Optional[Tuple[str, ...]] = None
    untyped: bool = False
    always: bool = False
    namespaces: Tuple[str, ...] = ()
    pool: Optional[str] = None
    query: Optional[str] = None

    def admits(self, entry: Mapping[str, Any]) -> bool:
        """Whether this search's filter matches ``entry``, as a store filter
        would (``type`` as written, not its default): for a store that reads
        a namespace whole and keeps what the plan's searches would find."""
        if self.namespaces and entry.get("namespace") not in self.namespaces:
            return False
        if self.always:
            return entry.get("scope") == "always"
        if self.untyped:
            return entry.get("type") is None
        return self.types is None or entry.get("type") in self.types
