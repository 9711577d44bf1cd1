"""The two seams of the seamed fill (`poolsplit_adapters.seamed`), as types: what holds a call's entries,
and another step 3c.

The core's [`select`][poolsplit_adapters.poolsplit.select] is the plain fill and has no seams; only implementations
need these: `ListCandidates` (a list), ``index._ColumnSource`` (the index's columns)
and ``fastpath.BestFirstCandidates`` satisfy `Candidates`; ``memory.progressive.ProgressiveLayers``
satisfies `Layering`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Callable, Optional, Protocol, runtime_checkable

from .poolsplit import Counts, Entry, Pool, Reason

__all__ = ["Candidates", "Counting", "Layering", "Pick", "Filled", "Left"]

Pick = tuple[int, float, int, str]  #: position, score, cost, layer ("full" unless a layering says otherwise)
Filled = tuple[Pool, list[int], Any, Any, list[Pick]]  #: pool, always, contextual, below, picks
Left = tuple[int, Reason, Optional[str]]  #: position, reason, pool (None: no pool considered it)


class Candidates(Protocol):
    """The entries of one call as `fill_pools` asks about them (steps 1 and 2
    happen behind it), by the implementation's positions; a *group* is any sized iterable of them.

    ``members``: (always-scope positions in input order, contextual group) of the pool's types, admitted and
    unclaimed; ``ranked``: ``(position, score, cost)`` in the total order, possibly without what costs more than
    ``left()``, the room the pool has left; ``verdicts``: every position in input order, with why it was not
    admitted (None: it was); ``index``: its index in the caller's order. A source may also be `Counting`.

    Example:
        ```python
        fill_pools(pools, ListCandidates(entries, prepare_scorer(default_scorer, context, now)))
        ```
    """

    def members(self, pool: Pool) -> tuple[list[int], Any]: ...
    def split_below(self, group: Any, threshold: float) -> tuple[Any, Any]: ...
    def ranked(self, group: Any, left: Callable[[], float]) -> Iterator[tuple[int, float, int]]: ...
    def claim(self, positions: Iterable[int]) -> None: ...
    def entry(self, position: int) -> Entry: ...
    def index(self, position: int) -> int: ...
    def cost(self, position: int) -> int: ...
    def score(self, position: int) -> float: ...
    def verdicts(self) -> Iterable[tuple[int, Optional[Reason]]]: ...


@runtime_checkable
class Counting(Protocol):
    """An optional capability of a `Candidates` that holds columns (``index._ColumnSource``): the report's
    counts and sample without a row per entry left out. Without it the seamed fill counts and samples the
    ``(position, reason, pool)`` triples of its ``_left_out`` rule (the rule these twin), building only the sample's rows.

    ``tally``: ``(pool or None, reason) -> (entries, tokens)``; ``sample``: ``(position, reason, pool or None)``
    of the first ``per_key`` left out per pool and reason, in input order.

    Example:
        ```python
        isinstance(source, Counting)  # fill_pools hands the selection source.tally and source.sample
        ```
    """

    def tally(self, filled: list[Filled], lost: set[int]) -> Counts: ...
    def sample(self, filled: list[Filled], lost: set[int], per_key: int) -> list[Left]: ...


class Layering(Protocol):
    """Step 3c done another way (progressive loading: ``memory.progressive.ProgressiveLayers``): ``pick`` a
    pool's contextual group, as the greedy fill does; once every pool is filled, ``settle`` sees every pool's
    picks and may change their layers and costs, never which entries loaded (those are claimed).

    Example:
        ```python
        select(entries, pools, context, layering=ProgressiveLayers(detail=False))
        ```
    """

    def pick(self, pool: Pool, candidates: Candidates, group: Any) -> list[Pick]: ...
    def settle(self, pools: list[Pool], picks: list[list[Pick]]) -> list[list[Pick]]: ...
