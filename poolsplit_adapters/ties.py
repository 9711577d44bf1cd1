"""The strings the core's total order reads after the score, kept by position.

Why: the core ranks by ``(-score, created or "", id or "", input index)``.
Entries written from one template (tool logs, turns of one shape) share a
score exactly, so a pool's top slice, or the best matches a query is
expanded from, can tie across a large part of the store. Reading those two
strings from each tied entry's dict, one Python call per entry, made such a
call O(store) in Python (30 ms of a 47 ms agent turn at 100k memories). Kept
as numpy object columns (references to the entries' own strings, 8 bytes a
position each), a tie is broken by gathers and comparisons in C.

The index fills them as it reads entries (`TieKeys.extend`), re-reads
one on ``refresh`` (`TieKeys.put`) and keeps the survivors of a
compaction (`TieKeys.keep`); a removed position's strings stay until
then (it is never ranked).

Example:
    >>> keys = TieKeys()
    >>> keys.extend([{"id": "b", "created": "2026-01-02"}, {"id": "a"}, {"id": "c", "created": "2026-01-02"}])
    >>> import numpy as np
    >>> keys.smallest(np.array([0, 1, 2]), 2)   # "" (no created) sorts first, then id "b" before "c"
    [1, 0]
    >>> keys.ordered(np.array([0.5, 0.5, 0.7]), np.array([0, 1, 2]))
    [(-0.7, '2026-01-02', 'c', 2), (-0.5, '', 'a', 1), (-0.5, '2026-01-02', 'b', 0)]
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["TieKeys"]


def _strings(chunk: Sequence[Mapping[str, Any]], key: str) -> list[str]:
    """``entry.get(key) or ""`` of each entry (the checked entries hold a
    string or None there), with one C call per key for plain dicts (what a
    big batch holds)."""
    values: list[Any]
    if all(type(entry) is dict for entry in chunk):
        values = list(map(dict.get, chunk, itertools.repeat(key)))  # type: ignore[arg-type]
    else:
        values = [entry.get(key) for entry in chunk]
    if None in values:
        values = [value or "" for value in values]
    return values


class TieKeys:
    """Per position, ``created or ""`` and ``id or ""``: the core's order
    after the score (see the module docstring)."""

    def __init__(self) -> None:
        self.created: Any = np.empty(0, dtype=object)
        self.ids: Any = np.empty(0, dtype=object)
        self.size = 0

    def reserve(self, size: int) -> None:
        """Room for ``size`` positions (a batch of known length asks once)."""
        if size <= len(self.created):
            return
        grown = max(size, len(self.created) + len(self.created) // 4 + 64)
        for name in ("created", "ids"):
            old = getattr(self, name)
            column = np.empty(grown, dtype=object)
            column[: self.size] = old[: self.size]
            setattr(self, name, column)

    def extend(self, chunk: Sequence[Mapping[str, Any]]) -> None:
        """Append the strings of ``chunk``'s entries."""
        end = self.size + len(chunk)
        self.reserve(end)
        self.created[self.size : end] = _strings(chunk, "created")
        self.ids[self.size : end] = _strings(chunk, "id")
        self.size = end

    def put(self, position: int, entry: Mapping[str, Any]) -> None:
        """Re-read the entry at ``position`` (changed in place)."""
        self.created[position] = entry.get("created") or ""
        self.ids[position] = entry.get("id") or ""

    def keep(self, positions: Sequence[int]) -> None:
        """Keep only ``positions``, in their order (after a compaction)."""
        kept = list(positions)
        self.created, self.ids = self.created[kept], self.ids[kept]
        self.size = len(kept)

    def smallest(self, positions: Any, count: int) -> list[int]:
        """The ``count`` first of ``positions`` (ascending int array) in the
        order ``(created, id, position)``: each round takes every position
        holding the least (created, id) left, in position order, by one
        comparison over what is left (``count`` is small: a few rounds)."""
        found: list[int] = []
        left = positions
        while len(found) < count and len(left):
            created = self.created[left]
            first = left[created == created.min()]
            ids = self.ids[first]
            first = first[ids == ids.min()]
            taken = first[: count - len(found)]
            found += taken.tolist()
            left = left[~np.isin(left, taken)]
        return found

    def ordered(self, scores: Any, positions: Any) -> list[tuple[float, str, str, int]]:
        """``(-score, created, id, position)`` of each of ``positions`` (an
        int array; ``scores`` theirs, float64), sorted: the core's order,
        the tuples built and compared in C."""
        return sorted(
            zip((-scores).tolist(), self.created[positions].tolist(), self.ids[positions].tolist(), positions.tolist())
        )
