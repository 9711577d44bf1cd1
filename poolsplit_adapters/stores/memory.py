"""InProcessStore: the store contract over a MemoryIndex, in this process.

For what needs a [`MemoryStore`][] but no file:
the agent middleware given a list of entries, tests, notebooks. Nothing
survives the process (use [`SQLiteMemoryStore`][]
for that); otherwise the verbs mean what they mean on every store.
"""

from __future__ import annotations

import datetime
import threading
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence

from ..defaults import default_adapter_scorer
from ..index import MemoryIndex
from ..memory.expiry import note_expired
from ..memory.write_gate import utc_stamp
from ..poolsplit import (
    IsActive,
    Pool,
    Selection,
    TokenCounter,
    check_entry,
    default_is_active,
    default_token_counter,
    entry_list,
)
from .base import Change, StoreVerbs, prepare_entries
from .checks import fresh_copy
from .store_errors import Overtaken


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


__all__ = ["IdLookup", "InProcessStore", "commit_to_index"]


class IdLookup:
    """The entries of a [`MemoryIndex`][] by id, kept
    in step with the index's version: rebuilt (one pass) only after a
    change made around it, updated in place by `commit_to_index`. So
    reading a write's few ids costs a dictionary lookup, not a scan.

    Example:
        ```python
        lookup = IdLookup(index)
        lookup.get_many(["fix-1", "missing"])    # [the entry fix-1]
        ```
    """

    def __init__(self, index: MemoryIndex) -> None:
        self.index = index
        self._version: Optional[int] = None
        self._by_id: Dict[Any, Mapping[str, Any]] = {}

    def current(self) -> Dict[Any, Mapping[str, Any]]:
        """id -> the index's entry (the last one, if ids repeat)."""
        if self._version != self.index.version:
            self._by_id = {e.get("id"): e for e in self.index.entries}
            self._version = self.index.version
        return self._by_id

    def get_many(self, ids: Iterable[Any]) -> List[Mapping[str, Any]]:
        """The entries with these ids (those found), each once, in the ids' order."""
        found = self.current()
        return [found[i] for i in dict.fromkeys(ids) if i in found]

    def settled(self, rows: Iterable[Mapping[str, Any]], gone: Iterable[Any]) -> None:
        """Record an edit made through this lookup (rows written, ids removed)."""
        for row in rows:
            self._by_id[row.get("id")] = row
        for entry_id in gone:
            self._by_id.pop(entry_id, None)
        self._version = self.index.version


def commit_to_index(index: MemoryIndex, change: Change, lock: Any, lookup: Optional[IdLookup] = None) -> None:
    """Apply ``change`` to ``index`` under ``lock``: verified against the
    indexed entries, then one index edit per entry (a replaced entry is
    swapped atomically, new ones added in one batch). With ``lookup`` (over
    the same index) the touched entries are found by id, not by a scan."""
    with lock:
        if change.derived_at is not None and change.derived_at != index.version:
            raise Overtaken(
                "the index changed since this write read it (at %r, now %r)" % (change.derived_at, index.version)
            )
        ids = IdLookup(index) if lookup is None else lookup
        live = ids.current()
        current = change.verify(dict(e) for e in ids.get_many(change.touched))
        rows = change.rows(current)
        fresh = []
        for row in rows:
            if row["id"] in live:
                index.replace(live[row["id"]], row)
            else:
                fresh.append(row)
        if fresh:
            index.extend(fresh)
        for gone in change.forget:
            index.remove_id(gone)
        ids.settled(rows, change.forget)


class InProcessStore(StoreVerbs):
    """Entries in a [`MemoryIndex`][], under the store contract.

    Args:
        entries: initial entries (copied: the caller's dicts are never
            changed; checked with the core's ``check_entry``).
        token_counter: cost of an entry without ``token_count``.
        is_active: activeness predicate for selection; an entry whose
            ``expires`` has passed is inactive as well (reported in
            ``selection.notes["expired"]``).
        clock: the current time (default: now, UTC), for expiry and the
            ``created`` of entries without one; injectable for tests.

    Example:
        ```python
        from poolsplit_adapters import Pool
        from poolsplit_adapters.stores import InProcessStore

        store = InProcessStore([{"id": "fix", "type": "correction", "scope": "always", "content": "Use cents."}])
        store.add([{"type": "fact", "content": "Refunds round half-even."}])
        selection = store.select([Pool("facts", 200, 5, ("fact",))], {"message": "refunds"})
        ```
    """

    commits_at_version = True  # its commit refuses a change derived at another index version

    def __init__(
        self,
        entries: Iterable[Mapping[str, Any]] = (),
        *,
        token_counter: TokenCounter = default_token_counter,
        is_active: IsActive = default_is_active,
        clock: Callable[[], datetime.datetime] = _utc_now,
    ) -> None:
        copies = []
        for position, entry in enumerate(entry_list(entries)):
            check_entry(entry, position)
            copies.append(fresh_copy(entry))  # nothing shared: a later edit of the caller's is not a write
        self._clock = clock
        # The adapters' default scorer (relevance first), not the spec's:
        # select(..., scorer=default_scorer) brings the spec's ranking back.
        self.index = MemoryIndex(
            copies, token_counter=token_counter, is_active=is_active, scorer=default_adapter_scorer()
        )
        self._ids = IdLookup(self.index)
        self._lock = threading.RLock()

    def stamp(self) -> str:
        return utc_stamp(self._clock())

    def __len__(self) -> int:
        return len(self.index)

    @property
    def version(self) -> int:
        """The index's mutation counter."""
        return self.index.version

    def read(self, ids: Optional[Sequence[str]] = None, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """Copies of the entries with these ids (in the ids' order, found by
        id), or of every entry (of ``namespace`` when given), in index order."""
        if ids is not None:
            with self._lock:
                found = self._ids.get_many(ids)
            return [fresh_copy(e) for e in found if namespace is None or e.get("namespace") == namespace]
        return [fresh_copy(e) for e in self.index.entries if namespace is None or e.get("namespace") == namespace]

    def commit(self, change: Change) -> None:
        """Apply ``change`` to the index (`commit_to_index`)."""
        commit_to_index(self.index, change, self._lock, self._ids)

    def put_many(self, entries: Sequence[Mapping[str, Any]]) -> List[str]:
        """Write ``entries``, replacing entries with the same id; checked
        first as every write is. Returns their ids."""
        prepared = prepare_entries(entries, self.stamp())
        with self._lock:
            live = self._ids.current()
            fresh = []
            for entry in prepared:
                if entry["id"] in live:
                    self.index.replace(live[entry["id"]], entry)
                else:
                    fresh.append(entry)
            if fresh:
                self.index.extend(fresh)
            self._ids.settled(prepared, ())
        return [e["id"] for e in prepared]

    def select(self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Any) -> Selection:
        """The core's ``select`` over the current content
        ([`MemoryIndex.select`][]'s options: ``now``, ``scorer``,
        ``visibility``, ``layering``, ``marker_cost``); what expired by ``now`` (default: the
        clock) is reported ``expired`` and named in ``notes["expired"]``."""
        options["now"] = options.get("now") or self._clock()
        with self._lock:
            return note_expired(self.index.select(pools, context, **options))
