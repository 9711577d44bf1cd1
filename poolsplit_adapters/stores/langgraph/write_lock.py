"""One LangGraph namespace's writes, one at a time in this process.

A LangGraph store has no transaction: a write reads what it could repeat
or change, then puts its items in one ``batch``, verified against the
items as read just before. Two writers of one namespace at once both read
the same active version of a fact ("The launch is on March 3.") and both
closed it, each with its own newer value: every newer value stayed active,
and recall loaded whichever scored higher (found by an adversarial run:
8 threads of one user over ``SqliteStore`` left 3 values active, 8
coroutines over ``AsyncSqliteStore`` left all 8). The writes of one
namespace of one store object therefore run one at a time: sync writers on
a lock shared by every thread, async writers on a lock of their event loop
(a thread's lock held across an ``await`` would block the loop for the
other tasks, which hold it). Each then reads what the one before it wrote,
and links its statement to that one.

Every change a write commits holds it too, from its read to its puts
(`writing`, `awriting`): ``supersede``, ``delete`` and ``forget`` read
the version they close and then put, and threads superseding one fact at
once each closed it with their own value, every new value active (found by
a hostile run: 8 of 8). An async writer already holding its namespace's
lock (a write committing its change) takes it again without waiting.

Across processes, or between a sync and an async writer of one process,
the in-process locks do not apply: the write path's own check still finds
a version another writer closed first and links to its newest
(``RELINKS``), and on LangGraph's Postgres stores each change also holds a
Postgres advisory lock of the namespace (`namespace_lock`), so two
servers superseding one fact at once take turns there too. The store
objects of one ``SqliteStore`` file share their locks in a process, and
hold the file's ``flock`` across processes (`sqlite_file_lock`).
"""

from __future__ import annotations

import contextlib
from typing import Any, AsyncIterator, Iterator, Tuple

from ..postgres import anamespace_lock, namespace_lock
from ..write_locks import aholding, async_write_lock, holding, write_lock
from .sqlite_file_lock import file_locked, file_owner

__all__ = ["async_write_lock", "awriting", "write_lock", "writing"]

Namespace = Tuple[str, ...]


@contextlib.contextmanager
def writing(store: Any, namespace: Namespace) -> Iterator[None]:
    """A write or change of ``namespace`` from its read to its puts:
    `write_lock` (of the database file's owner for a ``SqliteStore``:
    `file_owner`), and on a LangGraph Postgres store its advisory lock
    (`namespace_lock`), on a ``SqliteStore`` the file's ``flock``
    (`file_locked`), taken once however deep the writes nest."""
    owner = file_owner(store)  # a SqliteStore's file: its store objects share the locks
    with holding(owner, namespace) as took:
        if not took:
            yield
            return
        with namespace_lock(store, namespace), file_locked(owner):
            yield


@contextlib.asynccontextmanager
async def awriting(store: Any, namespace: Namespace) -> AsyncIterator[None]:
    """`writing` of an async writer: `async_write_lock`, unless the
    running task holds it already (a write committing its change), and on
    a LangGraph Postgres store its advisory lock (`anamespace_lock`)."""
    async with aholding(store, namespace) as took:
        if not took:
            yield
            return
        async with anamespace_lock(store, namespace):
            yield
