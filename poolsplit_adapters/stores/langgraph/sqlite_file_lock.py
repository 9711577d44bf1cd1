"""One LangGraph ``SqliteStore`` file's writes, one process at a time.

Each server process (or each ``SqliteStore`` object of one process) opens
its own connection to the file; the in-process write locks are per store
object, so two of them changing one fact at once each read the same active
version and each closed it with their own value (found by a hostile run:
six writers, each its own store object on one file, left 2 to 3 values
active). So the writes of every ``SqliteStore`` on one file share:

* in the process, one owner per file (by device and inode,
  `file_owner`): the per-namespace write locks are that owner's, so the
  store objects of one file take turns as the threads of one store do;
* across processes, an exclusive ``flock`` of the database file itself
  (`file_locked`), held from a change's read to its puts. ``flock`` and
  the POSIX record locks SQLite takes are independent on Linux and the
  BSDs, so it never blocks SQLite's own locking, and it needs no file of
  its own beside the database. Its descriptor is opened once per file and
  never closed: closing any descriptor of a file drops every POSIX lock
  the process holds on it, SQLite's included. The threads of a process
  share the ``flock`` (counted: taken by the first, released by the last;
  they take turns per namespace on the owner's locks).

Where ``fcntl`` is missing (Windows) only the in-process part applies.
An ``AsyncSqliteStore`` or an in-memory database keeps its per-object locks.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import weakref
from typing import Any, Dict, Iterator, Optional, Tuple

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: the in-process part only
    fcntl = None  # type: ignore[assignment]

from .set_up import sqlite_connection

__all__ = ["file_locked", "file_owner"]


class _File:
    """One database file of this process: the owner its writers' locks
    hang on, its ``flock`` descriptor and how many writers hold it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd: Optional[int] = None
        self.holders = 0
        self.guard = threading.Lock()


#: Every file a SqliteStore of this process wrote, by (device, inode).
_FILES: Dict[Tuple[int, int], _File] = {}
_MADE = threading.Lock()
#: Each store object's owner (weakly: a dropped store is forgotten).
_OWNERS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
#: What `_OWNERS` holds for a store that is its own owner (a value naming its key would keep it alive).
_ITSELF = object()


def _path(store: Any) -> Optional[str]:
    """The file of a sync ``SqliteStore``'s main database, else None (another
    store, an in-memory or temporary database)."""
    conn = sqlite_connection(store)
    if conn is None:
        return None
    try:
        with store.lock:
            rows = conn.execute("PRAGMA database_list").fetchall()
    except sqlite3.Error:
        return None
    found = next((str(row[2]) for row in rows if row[1] == "main"), "")
    return found or None


def file_owner(store: Any) -> Any:
    """Whose write locks ``store``'s writes take: the one `_File` of its
    database file for a sync ``SqliteStore`` on a file, else ``store``.
    Found once per store object (its connection stays on the file it
    opened), not on every write."""
    with contextlib.suppress(TypeError):  # a store that cannot be weakly held is looked at every time
        known = _OWNERS.get(store)
        if known is not None:
            return store if known is _ITSELF else known
    found = _found_owner(store)
    with contextlib.suppress(TypeError):
        _OWNERS[store] = _ITSELF if found is store else found  # never the store itself: it would never be dropped
    return found


def _found_owner(store: Any) -> Any:
    path = _path(store)
    if path is None:
        return store
    try:
        stat = os.stat(path)
    except OSError:
        return store
    key = (stat.st_dev, stat.st_ino)
    with _MADE:
        found = _FILES.get(key)
        if found is None:
            found = _FILES[key] = _File(path)
        return found


@contextlib.contextmanager
def file_locked(owner: Any) -> Iterator[None]:
    """Hold the ``flock`` of ``owner``'s file (a `file_owner`) for the
    block, shared by the threads of this process; nothing for any other
    owner, or without ``fcntl``."""
    if not isinstance(owner, _File) or fcntl is None:
        yield
        return
    with owner.guard:
        if owner.fd is None:
            # never closed (see the module); a file gone or not ours to open: the in-process locks only
            with contextlib.suppress(OSError):
                owner.fd = os.open(owner.path, os.O_RDONLY)
        fd = owner.fd
        if fd is not None:
            if owner.holders == 0:
                fcntl.flock(fd, fcntl.LOCK_EX)
            owner.holders += 1
    try:
        yield
    finally:
        if fd is not None:
            with owner.guard:
                owner.holders -= 1
                if owner.holders == 0:
                    fcntl.flock(fd, fcntl.LOCK_UN)
