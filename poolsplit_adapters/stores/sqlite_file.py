"""The SQLite file under the embedded store: what a store file is (the
schema and its migrations, the header and tables that identify one,
`identify` refusing anything else byte-identical), what an in-memory
target is (`memory_target`), and a connection whose errors name the file.
The store itself is [`SQLiteMemoryStore`][poolsplit_adapters.stores.SQLiteMemoryStore]
(`sqlite`, whose module docstring gives the layout and the guarantees).
"""

from __future__ import annotations

import datetime
import os
import pathlib
import sqlite3
import urllib.parse
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any, Optional, Union

__all__ = [
    "connect",
    "file_identity",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "SQLITE_MAGIC",
    "StoreError",
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


def file_identity(path: pathlib.Path) -> Optional[tuple[int, int]]:
    """(device, inode) of the file at ``path``, or None when there is none
    (or the file system gives no inode numbers). A store compares it before
    each write: a connection to a file deleted or replaced under it writes on
    to the unlinked file, and every write it acknowledged is gone at close."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_dev, found.st_ino) if found.st_ino else None


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


def connect(path: pathlib.Path, memory: Optional[str], read_only: bool, timeout: float) -> sqlite3.Connection:
    """The store's connection to ``path`` (``memory``: an in-memory target, `memory_target`): read-write, or read-only (through the
    shared-memory file when it can be made, else immutable). Errors
    SQLite raises through it name the file (`_FileConnection`)."""
    options: dict[str, Any] = {"isolation_level": None, "check_same_thread": False, "factory": _FileConnection}
    if memory is not None:
        return _named(sqlite3.connect(memory, timeout, uri=memory != MEMORY, **options), path)
    if not read_only:
        return _named(sqlite3.connect(str(path), timeout, **options), path)
    for immutable in (False, True):
        conn = _named(sqlite3.connect(_read_only_uri(path, immutable), timeout, uri=True, **options), path)
        try:
            conn.execute("PRAGMA user_version").fetchone()
            return conn
        except sqlite3.OperationalError as exc:
            conn.close()
            if immutable or not _cannot_open(exc):
                raise
    raise AssertionError("unreachable")  # pragma: no cover
