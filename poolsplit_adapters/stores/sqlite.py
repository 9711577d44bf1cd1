"""The embedded long-term store: one SQLite file, several processes.

Why SQLite: it is in the standard library, a store is one file a person can
copy, and its write-ahead log lets several processes (an agent, the CLI, a
notebook) read and write the same memory safely.

**Layout.** One table, ``memory``: the entry as JSON plus indexed columns
(``id``, ``namespace``, ``type``, ``scope``, ``created``, ``status``,
``superseded_by``) and ``seq``, the store-wide change number of the row's last
write. ``forgotten`` keeps only the ids (never the content) of deleted entries
with their change number, so other processes can drop them from their
indexes. ``meta`` holds the change counter. ``PRAGMA user_version`` is the
schema version; `MIGRATIONS` upgrades older files step by step.

**Identified before written.** Opening a file first reads its header and
schema through a read-only connection (`identify`): a file that is not
SQLite, another program's database (also one that claims ``user_version``
1 without these tables) or a newer schema is refused with a
[`StoreError`][] naming it, byte-identical, before WAL mode or a
migration could touch it, and with nothing beside it: a file with no log
beside it is read ``immutable`` (a read-only connection to a WAL file makes
its ``-wal`` and ``-shm``), and a file SQLite finds damaged only once the
store's own connection reads it is refused with the files that connection
made removed. A file (or folder) this process cannot write is
opened read-only: reads work, a write raises [`StoreError`][]. Every
SQLite error the store raises names the file.

**Durability.** WAL mode with ``synchronous=FULL``: every commit fsyncs the
log before the write returns, so an acknowledged write survives ``kill -9``
of the writer, an OS crash and a power cut (on a disk that honours fsync).
Each call is one transaction: a batch is stored whole or not at all.
``":memory:"`` is the exception, by request: a store in one object, with no
file and no log (one connection, which no other can see), gone at ``close``
(`memory_target`).

**In step across processes.** Queries are answered by a
[`MemoryIndex`][] built from the table once (warm
start) and then kept in step incrementally: before each query, ``PRAGMA
data_version`` tells whether any other connection committed since the last
look (no I/O when nothing did); if one did, only the rows whose ``seq`` is
past the index's watermark, and the ids forgotten since, are read and applied.
"""

from __future__ import annotations

import json
import os
import pathlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Optional

from ..errors import ArgumentError
from ..index import MemoryIndex
from ..memory.write_gate import utc_stamp
from ..poolsplit import IsActive, TokenCounter, default_is_active, default_token_counter
from .base import Change, EntryNotFound, StoreVerbs
from .sqlite_file import (
    _INSERT,
    KEEP_FORGOTTEN,
    MIGRATIONS,
    SCHEMA_VERSION,
    SQLITE_MAGIC,
    Clock,
    PathLike,
    StoreError,
    _Change,
    _columns,
    _remove_created,
    _sidecars,
    _utc_now,
    _writable,
    connect,
    file_identity,
    identify,
    memory_target,
)
from .sqlite_sync import IndexInStep
from .store_errors import Overtaken

__all__ = [
    "SQLiteMemoryStore",
    "StoreError",
    "EntryNotFound",
    "SCHEMA_VERSION",
    "MIGRATIONS",
    "SQLITE_MAGIC",
    "identify",
    "memory_target",
]


class SQLiteMemoryStore(IndexInStep, StoreVerbs):
    """Durable long-term memory in one SQLite file, shared by processes.

    Args:
        path: the database file; created (with the schema) when missing.
            ``":memory:"`` (or a private in-memory URI such as
            ``"file::memory:"``) is a store in this object only: one
            connection, so no write-ahead log is needed, every verb as on a
            file, and nothing left after [`close`][] (for memory that must
            outlive the process, a file; for a throwaway one on disk, a file
            in ``tempfile.mkdtemp()``). A shared-cache URI or an empty path
            is a [`StoreError`][] (`memory_target` says why).
        token_counter: cost of an entry without ``token_count`` (passed to
            the index; default: the core's ``len // 4`` estimate; the adapters
            pass `default_counter`).
        is_active: activeness predicate for selection (default: the core's).
        timeout: seconds to wait for another process's write lock.
        clock: the time stamped into ``created`` when an entry has none, and
            the time expiry is judged at when a query gives no ``now``
            (default: now, UTC); injectable for reproducible tests.

    The verbs and their rules are the store contract's
    ([`StoreVerbs`][]); this class
    provides the primitives. Writes ([`add`][poolsplit_adapters.stores.StoreVerbs.add], [`supersede`][poolsplit_adapters.stores.StoreVerbs.supersede],
    [`delete`][]) are each one transaction ([`commit`][]), committed durably (WAL, ``synchronous=FULL``) before they
    return; one that raises wrote nothing. Reads see every write committed
    before them, by any process. One object is safe to share between threads
    of one process; do not share it across ``fork``.

    The entries inside a returned [`Selection`][] are the index's own
    dicts: read them, do not change them (use [`supersede`][poolsplit_adapters.stores.StoreVerbs.supersede]). [`get`][poolsplit_adapters.stores.StoreVerbs.get]
    and [`entries`][poolsplit_adapters.stores.StoreVerbs.entries] return fresh copies.

    Example:
        ```python
        from poolsplit_adapters import Pool
        from poolsplit_adapters.stores import SQLiteMemoryStore

        with SQLiteMemoryStore("memory.db") as store:
            [fix] = store.add([{"type": "correction", "scope": "always",
                                "content": "Never force-push to main."}])
            store.add([{"type": "fact", "content": "Refunds round half-even."}])
            pools = [Pool("corrections", 0, 0, ("correction",)),
                     Pool("facts", 200, 5, ("fact",))]
            selection = store.select(pools, {"message": "refund rounding"})
            store.supersede(fix, {"type": "correction", "scope": "always",
                                  "content": "Never force-push to a shared branch."})
        # Another process (or a restart) opening memory.db sees all of it.
        ```
    """

    commits_at_version = True  # its commit refuses a change derived at another change number

    def __init__(
        self,
        path: PathLike,
        *,
        token_counter: TokenCounter = default_token_counter,
        is_active: IsActive = default_is_active,
        timeout: float = 30.0,
        clock: Clock = _utc_now,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)):  # pathlib's own error names no argument
            raise ArgumentError(
                "SQLiteMemoryStore path must be a file name (str or os.PathLike) or ':memory:', got %s %r"
                % (type(path).__name__, path)
            )
        self.path = pathlib.Path(path)
        self._token_counter = token_counter
        self._clock = clock
        # Expiry is the core's, judged at each query's ``now`` (default: the clock).
        self._is_active = is_active
        self._lock = threading.RLock()
        self._index: Optional[MemoryIndex] = None
        self._live: dict[str, dict[str, Any]] = {}  # id -> the dict object inside the index
        self._seq = 0  # change number the index reflects
        self._head: Optional[int] = None  # latest change number seen in the file
        self._data_version: Optional[int] = None
        self._full_loads = 0
        self._file: Optional[tuple[int, int]] = None  # set once the file is open (`file_identity`)
        self._memory = memory_target(path)
        #: A store in this object only (``":memory:"``): no file, no log.
        self.in_memory = self._memory is not None
        # An in-memory target names no file: nothing of the folder is looked at.
        version = 0 if self.in_memory else identify(self.path)  # before anything touches the file
        if not self.in_memory and not self.path.parent.is_dir():
            raise StoreError("%s: cannot create the store: no folder %s" % (self.path, self.path.parent))
        #: Opened read-only: the file or its folder is not writable (reads
        #: work; a write raises StoreError naming the file).
        self.read_only = not self.in_memory and not _writable(self.path)
        beside = set() if self.in_memory else _sidecars(self.path)
        if self.read_only and version < SCHEMA_VERSION:
            raise StoreError(
                "%s: cannot create or upgrade a memory store here: the file or its folder is read-only" % self.path
            )
        try:
            self._conn = connect(self.path, self._memory, self.read_only, timeout)
        except sqlite3.Error as exc:
            raise StoreError("%s: cannot open (%s)" % (self.path, exc)) from None
        try:
            # No other connection can see an in-memory database: its own journal will do.
            if not self.read_only and not self.in_memory:
                mode = self._conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise StoreError("%s: cannot use write-ahead logging (journal_mode=%s)" % (self.path, mode))
            if not self.read_only:
                self._conn.execute("PRAGMA synchronous=FULL")
                # Deleted content is overwritten in the file, not just unlinked.
                self._conn.execute("PRAGMA secure_delete=ON")
                self._migrate()
            self._read_head()  # a read-only file is read once here, so a bad one fails now
            self._file = None if self.in_memory or self.read_only else file_identity(self.path)
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            if not self.in_memory and not isinstance(exc, sqlite3.OperationalError):  # unusable, not busy
                _remove_created(self.path, beside)
            problem = str(exc).removeprefix("%s: " % self.path)
            raise StoreError("%s: not a usable SQLite memory store (%s)" % (self.path, problem)) from None
        except BaseException:
            self._conn.close()
            raise

    # -- lifecycle --------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (the file stays; nothing is lost)."""
        with self._lock:
            self._conn.close()
            self._index = None

    def __enter__(self) -> SQLiteMemoryStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "SQLiteMemoryStore(%r)" % str(self.path)

    def _migrate(self) -> None:
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        with self._writing():
            # Another process may have migrated while we waited for the lock.
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                tables = {row[0] for row in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                if tables:
                    raise StoreError(
                        "%s: not a poolsplit memory store (it holds other tables: %s)"
                        % (self.path, ", ".join(sorted(tables)))
                    )
            for step in range(version, SCHEMA_VERSION):
                MIGRATIONS[step](self._conn)
            self._conn.execute("PRAGMA user_version = %d" % SCHEMA_VERSION)

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One write transaction: BEGIN IMMEDIATE takes the write lock up
        front (no deadlock on upgrade); any failure rolls back everything."""
        if self.read_only:
            raise StoreError("%s: opened read-only (the file or its folder is not writable); cannot write" % self.path)
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            if self._file is not None and file_identity(self.path) != self._file:
                raise StoreError(
                    "%s: the file was deleted or replaced since this store opened it; the write was not made "
                    "(open the store again)" % self.path
                )
            yield
            self._conn.execute("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM memory").fetchone()[0])

    def read(self, ids: Optional[Sequence[str]] = None, namespace: Optional[str] = None) -> list[dict[str, Any]]:
        """Fresh copies of the entries with ``ids`` (those stored), or of
        every entry (of ``namespace`` when given), superseded ones included,
        in store order (oldest change first)."""
        with self._lock:
            if ids is not None:
                rows = self._rows(ids)
            elif namespace is None:
                rows = self._conn.execute("SELECT id, entry FROM memory ORDER BY seq").fetchall()
            else:
                rows = self._conn.execute(
                    "SELECT id, entry FROM memory WHERE namespace = ? ORDER BY seq", (namespace,)
                ).fetchall()
        return [self._parse(text, entry_id) for entry_id, text in rows]

    # -- writes -----------------------------------------------------------------

    def stamp(self) -> str:
        return utc_stamp(self._clock())

    def commit(self, change: Change) -> None:
        """Apply ``change`` in one durable transaction: verified against the
        rows as they are inside it (so a concurrent process cannot slip in
        between check and write), then written; a failure rolls back all."""
        with self._lock:
            with self._writing():
                head, _ = self._read_head()
                if change.derived_at is not None and change.derived_at != head:
                    raise Overtaken(
                        "%s: changed since this write read it (at %r, now %r)" % (self.path, change.derived_at, head)
                    )
                # Read inside the write transaction: another connection's
                # write of the same id is either seen here (the same text: a
                # repeat; other text: DuplicateEntry) or waits for this one.
                current = change.verify(self._parse(text, i) for i, text in self._rows(change.touched))
                rows = change.rows(current)
                changes: list[_Change] = []
                for entry in rows:
                    seq = head + len(changes) + 1
                    text = json.dumps(entry, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
                    if entry["id"] in current:
                        self._conn.execute(
                            "UPDATE memory SET namespace = ?, type = ?, scope = ?, created = ?, status = ?, "
                            "superseded_by = ?, seq = ?, entry = ? WHERE id = ?",
                            _columns(entry)[1:] + (seq, text, entry["id"]),
                        )
                    else:
                        self._conn.execute(_INSERT, _columns(entry) + (seq, text))
                    changes.append((entry["id"], entry))
                for gone, _ in self._rows(change.forget):
                    self._conn.execute("DELETE FROM memory WHERE id = ?", (gone,))
                    self._conn.execute("INSERT INTO forgotten (seq, id) VALUES (?, ?)", (head + len(changes) + 1, gone))
                    changes.append((gone, None))
                if not changes:
                    return
                self._set_head(head + len(changes))
                if change.forget:
                    self._prune_forgotten()
            self._after_write(head, changes)
            if change.forget:
                # Drop the log frames that still hold the old bytes; a busy log
                # (another reader) is left to the next checkpoint.
                with suppress(sqlite3.OperationalError):
                    self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _set_head(self, head: int) -> None:
        self._conn.execute("UPDATE meta SET value = ? WHERE key = 'seq'", (head,))

    def delete(self, entry_id: str, *, history: bool = True) -> bool:
        """Forget ``entry_id`` for good; False when there was no such entry.

        With ``history`` (the default) the older versions it superseded go
        too, since they hold earlier wordings of the same memory. The rows
        are deleted with ``secure_delete`` on (their bytes are overwritten in
        the file) and the log is checkpointed when no reader holds it; only
        the ids are kept, in ``forgotten``, so other processes drop them.
        """
        return super().delete(entry_id, history=history)

    def forget(self, *, namespace: str) -> int:
        """Delete every entry of ``namespace`` for good (the contract's
        ``forget``), then make sure no byte of it stays in the file: the rows
        go with ``secure_delete`` on, their ids are not kept in
        ``forgotten`` (the other processes reload instead: the change floor
        is raised past them), the log is checkpointed and truncated, and the
        file is rebuilt (``VACUUM``), so neither free pages nor old log
        frames hold the text.

        Raises:
            StoreError: the file could not be compacted (another connection
                held it for the whole timeout); the entries are deleted, run
                it again to compact.
        """
        count = super().forget(namespace=namespace)
        if count:
            self.compact()
        return count

    def compact(self) -> None:
        """Rebuild the file so that nothing deleted survives in it: forget
        the ids kept for other processes (they reload), checkpoint the log,
        ``VACUUM``, and truncate the log again."""
        with self._lock:
            with self._writing():
                head, _ = self._read_head()
                self._conn.execute("DELETE FROM forgotten")
                self._conn.execute("UPDATE meta SET value = ? WHERE key = 'floor'", (head,))
            try:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                self._conn.execute("VACUUM")
                busy = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.OperationalError as exc:
                raise StoreError(
                    "%s: deleted, but could not compact the file (%s); run it again" % (self.path, exc)
                ) from None
            if busy and busy[0]:
                raise StoreError("%s: deleted, but a reader held the log; run it again to compact" % self.path)

    def _prune_forgotten(self) -> None:
        count = self._conn.execute("SELECT count(*) FROM forgotten").fetchone()[0]
        if count <= 2 * KEEP_FORGOTTEN:
            return
        cut = self._conn.execute(
            "SELECT seq FROM forgotten ORDER BY seq DESC LIMIT 1 OFFSET ?", (KEEP_FORGOTTEN,)
        ).fetchone()[0]
        self._conn.execute("DELETE FROM forgotten WHERE seq <= ?", (cut,))
        self._conn.execute("UPDATE meta SET value = max(value, ?) WHERE key = 'floor'", (cut,))
