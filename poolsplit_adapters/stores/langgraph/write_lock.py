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

Across processes (two servers over one ``PostgresStore``), or between a
sync and an async writer of one process, nothing here applies: the write
path's own check still finds a version another writer closed first and
links to its newest (``RELINKS``).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any, Dict, Tuple

__all__ = ["async_write_lock", "write_lock"]

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
