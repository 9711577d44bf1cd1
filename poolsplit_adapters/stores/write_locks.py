"""The in-process locks a store's writes hold, per store object and key.

A store without transactions of its own (a LangGraph store, a LangChain
vector store other than ``PGVector``, LlamaIndex's in-process stores) reads
what a change closes, then writes: two writers at once both read the same
active version and both closed it, each with its own value, every new
value active (found by hostile runs: 8 threads of one user over
``SqliteStore`` left 3 values active, 4 supersedes of one entry over
``InMemoryVectorStore`` all 4). The writes of one key (a LangGraph
namespace; a vector store's entries) of one store object therefore run
one at a time: sync writers on a lock shared by every thread, async
writers on a lock of their event loop (a thread's lock held across an
``await`` would block the loop for the other tasks, which hold it).

Both are reentrant for their holder (`holding`, `aholding`): a write
that commits its change takes the lock it holds already without waiting.
Across processes they do not apply (each store says what does: the
advisory locks of the Postgres stores, the ``flock`` of a LangGraph
``SqliteStore``'s file, `sqlite_file_lock`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import weakref
from typing import Any, AsyncIterator, Dict, FrozenSet, Hashable, Iterator, Tuple

__all__ = ["aholding", "async_write_lock", "holding", "write_lock"]

#: Guards the creation of the locks below (never held across a write).
_MADE = threading.Lock()
#: Per store object (weakly: a dropped store drops its locks), per key.
_SYNC: weakref.WeakKeyDictionary[Any, Dict[Hashable, threading.RLock]] = weakref.WeakKeyDictionary()
#: Per event loop, per store object, per key.
_ASYNC: weakref.WeakKeyDictionary[Any, weakref.WeakKeyDictionary[Any, Dict[Hashable, asyncio.Lock]]] = (
    weakref.WeakKeyDictionary()
)
#: The (store, key) write locks the running thread or task holds (by id:
#: `holding` and `aholding` take a lock held already without waiting).
_HELD: contextvars.ContextVar[FrozenSet[Tuple[int, Hashable]]] = contextvars.ContextVar(
    "poolsplit_held_write_locks", default=frozenset()
)


def write_lock(store: Any, key: Hashable) -> Any:
    """The lock every sync write of ``key`` in ``store`` holds (reentrant:
    a write that writes again from inside keeps it)."""
    with _MADE:
        return _SYNC.setdefault(store, {}).setdefault(key, threading.RLock())


def async_write_lock(store: Any, key: Hashable) -> asyncio.Lock:
    """The lock every async write of ``key`` in ``store`` holds on the
    running event loop."""
    loop = asyncio.get_running_loop()
    with _MADE:
        stores = _ASYNC.setdefault(loop, weakref.WeakKeyDictionary())
        return stores.setdefault(store, {}).setdefault(key, asyncio.Lock())


@contextlib.contextmanager
def holding(store: Any, key: Hashable) -> Iterator[bool]:
    """Hold `write_lock` of ``key`` in ``store`` for the block; yields
    whether this block took it (False: its holder's, taken before)."""
    held = (id(store), key)
    if held in _HELD.get():
        yield False
        return
    with write_lock(store, key):
        token = _HELD.set(_HELD.get() | {held})
        try:
            yield True
        finally:
            _HELD.reset(token)


@contextlib.asynccontextmanager
async def aholding(store: Any, key: Hashable) -> AsyncIterator[bool]:
    """`holding` of an async writer: `async_write_lock`, unless the
    running task holds it already."""
    held = (id(store), key)
    if held in _HELD.get():
        yield False
        return
    async with async_write_lock(store, key):
        token = _HELD.set(_HELD.get() | {held})
        try:
            yield True
        finally:
            _HELD.reset(token)
