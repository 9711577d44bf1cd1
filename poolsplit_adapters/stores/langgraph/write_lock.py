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
servers superseding one fact at once take turns there too.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import weakref
from typing import Any, AsyncIterator, Dict, FrozenSet, Iterator, Tuple

from ..postgres import anamespace_lock, namespace_lock

__all__ = ["async_write_lock", "awriting", "write_lock", "writing"]

Namespace = Tuple[str, ...]

#: Guards the creation of the locks below (never held across a write).
_MADE = threading.Lock()
#: Per store object (weakly: a dropped store drops its locks), per namespace.
_SYNC: weakref.WeakKeyDictionary[Any, Dict[Namespace, threading.RLock]] = weakref.WeakKeyDictionary()
#: Per event loop, per store object, per namespace.
_ASYNC: weakref.WeakKeyDictionary[Any, weakref.WeakKeyDictionary[Any, Dict[Namespace, asyncio.Lock]]] = (
    weakref.WeakKeyDictionary()
)


def write_lock(store: Any, namespace: Namespace) -> Any:
    """The lock every sync write of ``namespace`` in ``store`` holds
    (reentrant: a write that writes again from inside keeps it)."""
    with _MADE:
        return _SYNC.setdefault(store, {}).setdefault(namespace, threading.RLock())


def async_write_lock(store: Any, namespace: Namespace) -> asyncio.Lock:
    """The lock every async write of ``namespace`` in ``store`` holds on the
    running event loop."""
    loop = asyncio.get_running_loop()
    with _MADE:
        stores = _ASYNC.setdefault(loop, weakref.WeakKeyDictionary())
        return stores.setdefault(store, {}).setdefault(namespace, asyncio.Lock())


#: The (store, namespace) write locks the running thread or task holds (by
#: id: `writing` and `awriting` take a lock held already without waiting).
_HELD: contextvars.ContextVar[FrozenSet[Tuple[int, Namespace]]] = contextvars.ContextVar(
    "poolsplit_held_write_locks", default=frozenset()
)


@contextlib.contextmanager
def writing(store: Any, namespace: Namespace) -> Iterator[None]:
    """A write or change of ``namespace`` from its read to its puts:
    `write_lock`, and on a LangGraph Postgres store its advisory lock
    (`namespace_lock`), taken once however deep the writes nest."""
    key = (id(store), namespace)
    if key in _HELD.get():
        yield
        return
    with write_lock(store, namespace):
        token = _HELD.set(_HELD.get() | {key})
        try:
            with namespace_lock(store, namespace):
                yield
        finally:
            _HELD.reset(token)


@contextlib.asynccontextmanager
async def awriting(store: Any, namespace: Namespace) -> AsyncIterator[None]:
    """`writing` of an async writer: `async_write_lock`, unless the
    running task holds it already (a write committing its change), and on
    a LangGraph Postgres store its advisory lock (`anamespace_lock`)."""
    key = (id(store), namespace)
    if key in _HELD.get():
        yield
        return
    async with async_write_lock(store, namespace):
        token = _HELD.set(_HELD.get() | {key})
        try:
            async with anamespace_lock(store, namespace):
                yield
        finally:
            _HELD.reset(token)
