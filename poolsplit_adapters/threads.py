"""Running a recall plan's store searches at once, on threads of their own.

Over a Postgres store each search of a plan is a round trip on its own
pooled connection, so a sync call costs its slowest search rather than the
sum of them when they run at once. This is the one rule both adapters'
sync recall runs its searches by: each call in a copy of the caller's
context (so callbacks, tracing and
[`capture_selections`][poolsplit_adapters.langchain.capture_selections] follow it onto the
thread), the results in call order, the first error raised only once every
call has finished (no search is left running on a connection the caller is
about to drop).

Why a pool per call and not one kept for the process: a kept pool is shared
by every caller and every store, so searches waiting on one busy store's
connections held its threads while a plan over another store queued
behind them (measured: two instant calls waited 2.8 s behind sixteen
callers blocked for 3 s). A kept pool also gained nothing measurable on the
PGVector benchmark (within this machine's noise), and a pool per call has
no state to carry across a fork or a nested call.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, List, Optional, Sequence, TypeVar

__all__ = ["at_once", "off_loop", "OFF_LOOP_WORKERS"]

_T = TypeVar("_T")


def at_once(calls: Sequence[Callable[[], _T]]) -> List[_T]:
    """Every call's result, in the order of ``calls``; the calls run at once,
    one thread each, each in a copy of the caller's context. One call runs
    on the caller's thread. The first exception (in call order) is raised
    after every call has finished.

    Example:
        >>> at_once([lambda: 1, lambda: 2])
        [1, 2]
    """
    if len(calls) < 2:
        return [call() for call in calls]
    with ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="poolsplit-search") as pool:
        futures = [pool.submit(contextvars.copy_context().run, call) for call in calls]
        errors = [future.exception() for future in futures]  # waits for each
    for error in errors:
        if error is not None:
            raise error
    return [future.result() for future in futures]


#: Threads of the pool `off_loop` runs blocking work on.
OFF_LOOP_WORKERS = 32

_pool: Optional[ThreadPoolExecutor] = None
_pool_lock = threading.Lock()


def _off_loop_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=OFF_LOOP_WORKERS, thread_name_prefix="poolsplit-off-loop")
        return _pool


def _forget_pool_in_child() -> None:  # a forked child has none of the parent's threads
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


async def off_loop(fn: Callable[..., _T], *args: Any) -> _T:
    """``fn(*args)`` on a thread of this package's own pool, awaited, in a
    copy of the caller's context (what ``asyncio.to_thread`` does, on
    another pool).

    Why not the loop's default executor: the blocking work sent here waits
    on a store (an ``AsyncPostgresStore``'s one connection, through its
    loop), and the store's holder of that connection may itself wait on the
    default executor (LangGraph embeds through it with an ``Embeddings``
    that has no native async). With both on one pool, as many concurrent
    agent runs as it has threads filled it with waiters and no run ever
    finished (measured: 8 runs at once on 2 cores, with the change counter).

    Example:
        >>> asyncio.run(off_loop(sum, [1, 2]))
        3
    """
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, fn, *args)
    return await loop.run_in_executor(_off_loop_pool(), call)
