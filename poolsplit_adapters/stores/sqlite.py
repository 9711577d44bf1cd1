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

import datetime
import json
import os
import pathlib
import sqlite3
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Optional, Union

from ..defaults import default_adapter_scorer
from ..index import MemoryIndex
from ..memory.expiry import note_expired
from ..memory.write_gate import utc_stamp
from ..poolsplit import IsActive, Pool, Selection, TokenCounter, default_is_active, default_token_counter
from .base import Change, EntryNotFound, StoreVerbs

__all__ = [
    "SQLiteMemoryStore",
    "StoreError",
    "EntryNotFound",
    "SCHEMA_VERSION",
    "MIGRATIONS",
    "identify",
    "memory_target",
]

PathLike = Union[str, "pathlib.Path"]
Clock = Callable[[], datetime.datetime]


class StoreError(RuntimeError):
    """The file cannot serve as a memory store (not SQLite, another
    program's database, a newer schema, a row that does not parse)."""


def _create_v1(conn: sqlite3.Connection) -> None:
    conn.execute(
        """CREATE TABLE memory (
            id TEXT PRIMARY KEY NOT NULL,
            namespace TEXT,
            type TEXT NOT NULL,
            scope TEXT,
            created TEXT,
            status TEXT NOT NULL,
            superseded_by TEXT,
            seq INTEGER NOT NULL UNIQUE,
            entry TEXT NOT NULL
        )"""
    )
    for column in ("namespace", "type", "scope", "created", "status", "superseded_by"):
        conn.execute("CREATE INDEX memory_%s ON memory (%s)" % (column, column))
    conn.execute("CREATE TABLE forgotten (seq INTEGER PRIMARY KEY, id TEXT NOT NULL)")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)")
    # seq: the last change number; floor: changes at or below it may have
    # had their ``forgotten`` record pruned (a reader that far behind reloads).
    conn.executemany("INSERT INTO meta VALUES (?, 0)", [("seq",), ("floor",)])


#: ``MIGRATIONS[n]`` upgrades a file from schema version ``n`` to ``n + 1``
#: inside one write transaction. Version 0 is an empty (new) file.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_create_v1]
SCHEMA_VERSION = len(MIGRATIONS)
#: ``forgotten`` keeps at least this many recent deletions; a process whose
#: index is further behind than that reloads instead of catching up.
KEEP_FORGOTTEN = 10_000
#: Past this many removals/replacements in one catch-up, a full reload is
#: cheaper than editing the index entry by entry.
RELOAD_AFTER = 2_000


#: The first 16 bytes of every SQLite database file.
SQLITE_MAGIC = b"SQLite format 3\x00"
#: The tables (and their columns) of a file at [`SCHEMA_VERSION`][]: a
#: file claiming that version without them is another program's database.
SCHEMA_TABLES: dict[str, frozenset[str]] = {
    "memory": frozenset({"id", "namespace", "type", "scope", "created", "status", "superseded_by", "seq", "entry"}),
    "forgotten": frozenset({"seq", "id"}),
    "meta": frozenset({"key", "value"}),
}


def _read_only_uri(path: pathlib.Path, immutable: bool = False) -> str:
    """A URI that opens ``path`` read-only (``immutable``: without the
    shared-memory file a WAL database needs, for a folder nobody can write)."""
    return "file:%s?mode=ro%s" % (urllib.parse.quote(str(path.resolve())), "&immutable=1" if immutable else "")


def _cannot_open(exc: sqlite3.Error) -> bool:
    """Whether a read-only connection failed for want of the WAL's shared
    memory file (which it may not create in a read-only folder)."""
    return "unable to open" in str(exc) or "readonly database" in str(exc)


#: What SQLite keeps beside a database file: its write-ahead log and shared
#: memory, or its rollback journal.
SIDECARS = ("-wal", "-shm", "-journal")


def _sidecars(path: pathlib.Path) -> set[pathlib.Path]:
    """The files SQLite keeps beside ``path`` (`SIDECARS`) that exist now."""
    return {side for side in (path.with_name(path.name + s) for s in SIDECARS) if side.exists()}


def _remove_created(path: pathlib.Path, before: set[pathlib.Path]) -> None:
    """Remove the files beside ``path`` that an open refused as not a store
    created (those not in ``before``): the refused file is left as it was
    found, alone. Called only once SQLite found the file itself unusable
    (corrupt, not a database), never on a busy one: then nothing of another
    writer can be in a log that did not exist before this open."""
    for side in _sidecars(path) - before:
        with suppress(OSError):
            side.unlink()


def _probe(path: pathlib.Path) -> tuple[int, dict[str, frozenset[str]]]:
    """(``user_version``, table -> columns) of an existing SQLite file, read
    through a read-only connection: identifying a file never writes to it,
    nor beside it. Without a log beside it the file is the whole database,
    read ``immutable`` (a read-only connection to a WAL file makes its
    ``-wal`` and ``-shm``, and would leave both beside a file it refuses)."""
    for immutable in (False, True) if _sidecars(path) else (True,):
        try:
            conn = sqlite3.connect(_read_only_uri(path, immutable), uri=True)
        except sqlite3.Error as exc:
            if immutable or not _cannot_open(exc):
                raise
            continue
        try:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            tables = {
                name: frozenset(r[0] for r in conn.execute("SELECT name FROM pragma_table_info(?)", (name,)))
                for name in names
            }
            return version, tables
        except sqlite3.DatabaseError as exc:
            # A WAL file in a folder we cannot write: no shared memory to read it through.
            if immutable or not _cannot_open(exc):
                raise
        finally:
            conn.close()
    raise AssertionError("unreachable")  # pragma: no cover


def identify(path: pathlib.Path) -> int:
    """The schema version of the memory store at ``path`` (0: a new or empty
    file), or [`StoreError`][] naming the file when it is not one: not a
    SQLite database, another program's database, a newer schema, a corrupt
    file. Nothing is written, so a refused file is left byte-identical."""
    if path.is_dir():
        raise StoreError("%s: is a directory, not a store file" % path)
    try:
        with path.open("rb") as handle:
            header = handle.read(100)
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise StoreError("%s: cannot read (%s)" % (path, exc.strerror or exc)) from None
    if not header:
        return 0  # an empty file is an empty database to SQLite
    if not header.startswith(SQLITE_MAGIC):
        raise StoreError("%s: not a SQLite database (the file does not start with the SQLite header)" % path)
    try:
        version, tables = _probe(path)
    except sqlite3.Error as exc:
        raise StoreError("%s: %s (not a usable SQLite memory store)" % (path, exc)) from None
    if version > SCHEMA_VERSION:
        raise StoreError(
            "%s: schema version %d is newer than this poolsplit-adapters reads (%d); upgrade the package"
            % (path, version, SCHEMA_VERSION)
        )
    if version == 0 and tables:
        raise StoreError(
            "%s: not a poolsplit memory store (it holds other tables: %s)" % (path, ", ".join(sorted(tables)))
        )
    if version == SCHEMA_VERSION:
        for table, columns in SCHEMA_TABLES.items():
            missing = sorted(columns - tables.get(table, frozenset()))
            if missing:
                what = (
                    "no table %r" % table if table not in tables else "table %r lacks %s" % (table, ", ".join(missing))
                )
                raise StoreError("%s: not a poolsplit memory store (user_version %d, but %s)" % (path, version, what))
    return version


#: The name SQLite gives a private in-memory database (no URI).
MEMORY = ":memory:"


def memory_target(path: PathLike) -> Optional[str]:
    """What to open for an in-memory store at ``path``: ``":memory:"`` or a
    private in-memory URI (``file::memory:``, ``file:name?mode=memory``),
    else None (a file path).

    An in-memory database is seen by the one connection that opened it, so
    the store needs no write-ahead log there: WAL is what lets other
    connections read while one writes, and there are none. Every other
    guarantee holds as on a file (each write one transaction, reads see
    every write) except durability: nothing survives [`close`][poolsplit_adapters.stores.SQLiteMemoryStore.close]
    .

    Raises:
        StoreError: a shared-cache in-memory URI (other connections of the
            process would share the database under shared-cache table locks,
            not the WAL the store keeps its connections in step with); an
            empty path (most often an unset setting: a store that silently
            forgot everything at exit would be worse than an error); another
            ``file:`` URI (read only for in-memory databases: pass the path).
    """
    if isinstance(path, pathlib.PurePath):
        return None  # a Path names a file (pathlib.Path("") is ".")
    text = str(path)
    if text == MEMORY:
        return MEMORY
    if text == "":
        raise StoreError(
            "'': an empty path names no store file (an unset setting?); give a file path, or ':memory:' for a "
            "store that lives only as long as the object"
        )
    if not text.startswith("file:"):
        return None
    name, _, query = text[len("file:") :].partition("?")
    options = urllib.parse.parse_qs(query)
    if name != MEMORY and options.get("mode") != ["memory"]:
        raise StoreError("%s: only in-memory URIs are read (file::memory:, mode=memory); pass the file's path" % text)
    if options.get("cache") == ["shared"]:
        raise StoreError(
            "%s: a shared-cache in-memory database is refused: other connections of this process would share it "
            "without the write-ahead log that keeps the store's connections in step; use ':memory:' (one private "
            "connection) or a file path (e.g. in tempfile.mkdtemp())" % text
        )
    return text


def _writable(path: pathlib.Path) -> bool:
    """Whether this process may write the store at ``path``: the file (when
    it exists) and its folder (where SQLite keeps its log) are writable."""
    folder = path.parent if str(path.parent) else pathlib.Path(".")
    return os.access(folder, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _columns(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    superseded = entry.get("superseded_by")
    status = "superseded" if superseded else str(entry.get("status", "active"))
    return (
        entry["id"],
        entry.get("namespace"),
        entry.get("type", "note"),
        entry.get("scope"),
        entry.get("created"),
        status,
        str(superseded) if superseded else None,
    )


_INSERT = (
    "INSERT INTO memory (id, namespace, type, scope, created, status, superseded_by, seq, entry) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)

# One change, in ``seq`` order: (entry id, the entry as stored, or None when forgotten).
_Change = tuple[str, Optional[dict[str, Any]]]


def _with_file(exc: sqlite3.Error, path: str) -> sqlite3.Error:
    """``exc`` (same class, so handlers still match) with a message that
    names the store file: "database disk image is malformed" alone does not
    say which of a host's files is damaged."""
    if str(exc).startswith(path + ": "):
        return exc
    named = type(exc)("%s: %s" % (path, exc))
    for attr in ("sqlite_errorcode", "sqlite_errorname"):
        if hasattr(exc, attr):
            setattr(named, attr, getattr(exc, attr))
    return named


class _FileCursor(sqlite3.Cursor):
    """A cursor whose SQLite errors name the store file (see `_with_file`)."""

    path = ""

    def execute(self, sql: str, parameters: Any = (), /) -> _FileCursor:
        try:
            super().execute(sql, parameters)
        except sqlite3.Error as exc:
            raise _with_file(exc, self.path) from None
        return self

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> _FileCursor:
        try:
            super().executemany(sql, seq_of_parameters)
        except sqlite3.Error as exc:
            raise _with_file(exc, self.path) from None
        return self

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.Error as exc:
            raise _with_file(exc, self.path) from None

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.Error as exc:
            raise _with_file(exc, self.path) from None

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except sqlite3.Error as exc:
            raise _with_file(exc, self.path) from None


class _FileConnection(sqlite3.Connection):
    """A connection whose statements run on `_FileCursor`."""

    path = ""

    def execute(self, sql: str, parameters: Any = (), /) -> _FileCursor:
        cursor = self.cursor(_FileCursor)
        cursor.path = self.path
        return cursor.execute(sql, parameters)

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> _FileCursor:
        cursor = self.cursor(_FileCursor)
        cursor.path = self.path
        return cursor.executemany(sql, seq_of_parameters)


def _named(conn: sqlite3.Connection, path: pathlib.Path) -> sqlite3.Connection:
    assert isinstance(conn, _FileConnection)
    conn.path = str(path)
    return conn


class SQLiteMemoryStore(StoreVerbs):
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

    def __init__(
        self,
        path: PathLike,
        *,
        token_counter: TokenCounter = default_token_counter,
        is_active: IsActive = default_is_active,
        timeout: float = 30.0,
        clock: Clock = _utc_now,
    ) -> None:
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
            self._conn = self._connect(timeout)
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
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            if not self.in_memory and not isinstance(exc, sqlite3.OperationalError):  # unusable, not busy
                _remove_created(self.path, beside)
            problem = str(exc).removeprefix("%s: " % self.path)
            raise StoreError("%s: not a usable SQLite memory store (%s)" % (self.path, problem)) from None
        except BaseException:
            self._conn.close()
            raise

    def _connect(self, timeout: float) -> sqlite3.Connection:
        """The store's connection: read-write, or read-only (through the
        shared-memory file when it can be made, else immutable). Errors
        SQLite raises through it name the file (`_FileConnection`)."""
        options: dict[str, Any] = {"isolation_level": None, "check_same_thread": False, "factory": _FileConnection}
        if self._memory is not None:
            return _named(sqlite3.connect(self._memory, timeout, uri=self._memory != MEMORY, **options), self.path)
        if not self.read_only:
            return _named(sqlite3.connect(str(self.path), timeout, **options), self.path)
        for immutable in (False, True):
            conn = _named(
                sqlite3.connect(_read_only_uri(self.path, immutable), timeout, uri=True, **options), self.path
            )
            try:
                conn.execute("PRAGMA user_version").fetchone()
                return conn
            except sqlite3.OperationalError as exc:
                conn.close()
                if immutable or not _cannot_open(exc):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

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
            yield
            self._conn.execute("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def _read_head(self) -> tuple[int, int]:
        rows = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
        return int(rows["seq"]), int(rows["floor"])

    # -- reads ------------------------------------------------------------------

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
        try:
            entry = json.loads(text)
        except ValueError:
            raise StoreError("%s: entry %r is not valid JSON in the file" % (self.path, entry_id)) from None
        if not isinstance(entry, dict):
            raise StoreError("%s: entry %r is not a JSON object in the file" % (self.path, entry_id))
        return entry

    def select(self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Any) -> Selection:
        """The core's ``select`` over the store's current content, every
        process's committed writes included; ``options`` as
        [`MemoryIndex.select`][] (``now``, ``scorer``, ``visibility``)."""
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
