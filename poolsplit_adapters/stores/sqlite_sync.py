"""How the embedded store's index stays in step with its file: a warm
start from the table once, then before each query ``PRAGMA data_version``
says whether another connection committed (no I/O when none did), and only
the rows past the index's watermark and the ids forgotten since are read
and applied; the store's own writes are applied directly. The reads of
rows and of the change counter live here too (the index reads them).
"""

from __future__ import annotations

import json
import pathlib
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional

from ..defaults import default_adapter_scorer
from ..index import MemoryIndex
from ..memory.expiry import note_expired
from ..poolsplit import EntryError, IsActive, Pool, Selection, TokenCounter, check_entry
from .sqlite_file import RELOAD_AFTER, Clock, StoreError, _Change

__all__ = ["IndexInStep"]


def _no_constant(name: str) -> Any:
    raise ValueError("%s is not a JSON number" % name)


class IndexInStep:
    """The index half of [`SQLiteMemoryStore`][poolsplit_adapters.stores.SQLiteMemoryStore]
    (see the module docstring)."""

    path: pathlib.Path
    _conn: sqlite3.Connection
    _lock: threading.RLock
    _clock: Clock
    _token_counter: TokenCounter
    _is_active: IsActive
    _index: Optional[MemoryIndex]
    _live: dict[str, dict[str, Any]]
    _seq: int
    _head: Optional[int]
    _data_version: Optional[int]
    _full_loads: int

    def _read_head(self) -> tuple[int, int]:
        rows = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
        counters = []
        for key in ("seq", "floor"):  # another program may have written them: named, never a traceback
            value = rows.get(key)
            if not isinstance(value, int):
                raise StoreError("%s: its change counter (meta %r) is %r, not a whole number" % (self.path, key, value))
            counters.append(value)
        return counters[0], counters[1]

    @property
    def version(self) -> int:
        """The store's change number: every committed write by any process
        raises it, so equal values mean equal content (a cache key)."""
        with self._lock:
            return self._poll()

    def _poll(self) -> int:
        """The latest change number, reading it only when another connection
        committed since the last look (``PRAGMA data_version``)."""
        data_version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        if data_version != self._data_version or self._head is None:
            self._data_version = data_version
            self._head = self._read_head()[0]
        return self._head

    @property
    def full_loads(self) -> int:
        """How many times the index was built from the whole table: 1 after
        the warm start; it grows only when a process falls too far behind to
        catch up (a test and tuning aid)."""
        return self._full_loads

    def _rows(self, ids: Sequence[str]) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            found += self._conn.execute(
                "SELECT id, entry FROM memory WHERE id IN (%s) ORDER BY seq" % marks, chunk
            ).fetchall()
        return found

    def _parse(self, text: str, entry_id: str) -> dict[str, Any]:
        try:  # no NaN (never written: allow_nan=False), no nesting past the recursion limit (no traceback)
            entry = json.loads(text, parse_constant=_no_constant)
        except (ValueError, RecursionError) as exc:
            why = "nested too deeply" if isinstance(exc, RecursionError) else getattr(exc, "msg", None) or str(exc)
            raise StoreError("%s: entry %r is not valid JSON in the file (%s)" % (self.path, entry_id, why)) from None
        if not isinstance(entry, dict):
            raise StoreError("%s: entry %r is not a JSON object in the file" % (self.path, entry_id))
        # A row another program wrote: read as it was, a get returned it and a
        # select or an unrelated write failed naming neither the file nor the row.
        why = "its row holds the id %r" % (entry.get("id"),) if entry.get("id") != entry_id else None
        try:
            check_entry(entry)
        except EntryError as err:
            why = "field %r %s" % (err.field, err.problem) if err.field else err.problem
        if why is not None:
            raise StoreError("%s: entry %r in the file is no entry (%s)" % (self.path, entry_id, why))
        return entry

    def select(self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Any) -> Selection:
        """The core's ``select`` over the store's current content, every
        process's committed writes included; ``options`` as
        [`MemoryIndex.select`][] (``now``, ``scorer``, ``visibility``,
        ``layering``, ``marker_cost``)."""
        with self._lock:
            options["now"] = options.get("now") or self._clock()
            return note_expired(self._synced().select(pools, context, **options))

    def retrieve_pools(
        self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Any
    ) -> dict[str, list[Any]]:
        """The core's ``retrieve_pools`` over the current content (no report)."""
        with self._lock:
            options["now"] = options.get("now") or self._clock()
            return self._synced().retrieve_pools(pools, context, **options)

    def _synced(self) -> MemoryIndex:
        """The index, brought in step with the file: a warm start the first
        time, then only the changes past its watermark."""
        head = self._poll()
        if self._index is not None and head == self._seq:
            return self._index
        self._conn.execute("BEGIN")  # one snapshot for the watermark and the rows
        try:
            head, floor = self._read_head()
            if self._index is None or floor > self._seq:
                self._reload(head)
            else:
                self._catch_up(head)
        except BaseException:
            self._index = None
            raise
        finally:
            self._conn.execute("COMMIT")
        self._head = head
        assert self._index is not None
        return self._index

    def _reload(self, head: int) -> None:
        rows = self._conn.execute("SELECT id, entry FROM memory ORDER BY seq").fetchall()
        entries = [self._parse(text, entry_id) for entry_id, text in rows]
        self._index = None
        # The adapters' default scorer (relevance first), not the spec's:
        # select(..., scorer=default_scorer) brings the spec's ranking back.
        index = MemoryIndex(
            entries, token_counter=self._token_counter, is_active=self._is_active, scorer=default_adapter_scorer()
        )
        self._live = {e["id"]: e for e in entries}
        self._index, self._seq = index, head
        self._full_loads += 1

    def _catch_up(self, head: int) -> None:
        after = self._seq
        changed = self._conn.execute(
            "SELECT seq, id, entry FROM memory WHERE seq > ? ORDER BY seq", (after,)
        ).fetchall()
        forgotten = self._conn.execute("SELECT seq, id FROM forgotten WHERE seq > ?", (after,)).fetchall()
        merged = sorted(
            [(seq, entry_id, self._parse(text, entry_id)) for seq, entry_id, text in changed]
            + [(seq, entry_id, None) for seq, entry_id in forgotten],
            key=lambda change: change[0],
        )
        edits = sum(1 for _, entry_id, _ in merged if entry_id in self._live)
        if edits > RELOAD_AFTER:
            self._reload(head)
            return
        self._apply([(entry_id, entry) for _, entry_id, entry in merged])
        self._seq = head

    def _apply(self, changes: Iterable[_Change]) -> None:
        """Apply changes in order; new entries are added in batches (one
        token-count call per batch)."""
        index = self._index
        assert index is not None
        fresh: list[dict[str, Any]] = []
        for entry_id, entry in changes:
            old = self._live.get(entry_id)
            if old is not None and fresh:
                index.extend(fresh)
                fresh = []
            if entry is None:
                if old is not None:
                    index.remove(old)
                    del self._live[entry_id]
                continue
            if old is None:
                fresh.append(entry)
            else:
                index.replace(old, entry)
            self._live[entry_id] = entry
        if fresh:
            index.extend(fresh)

    def _after_write(self, head_before: int, changes: list[_Change]) -> None:
        """Bring the index along with our own committed write. When no other
        process wrote since the index's watermark, apply our changes
        directly (no re-read); otherwise the next query catches up from the
        file. The write is durable either way: a failure here only drops the
        index, to be rebuilt (and the error raised) at the next query."""
        self._head = head_before + len(changes)
        if self._index is None or head_before != self._seq:
            return
        try:
            self._apply(changes)
            self._seq = self._head
        except Exception:
            self._index = None
