"""Running a recall plan's store searches at once, on threads kept between calls.

Over a Postgres store each search of a plan is a round trip on its own
pooled connection, so a sync call costs its slowest search rather than the
sum of them when they run at once. The threads that run them are kept
between calls: a pool made per call started a thread per search, and
``Thread.start`` waits until the new thread has run, which with the
server's backends busy on the searches already sent waits for a core. (On
the PGVector benchmark the difference was within this machine's noise; the
rule is kept for what it avoids, and so that both adapters share one.)

Why not LangChain's ``get_executor_for_config``: it makes a pool per call
(the cost above), and the LlamaIndex adapter needs the same rule without
LangChain. Each call runs in a copy of the caller's context, so callbacks,
tracing and :func:`~poolsplit_adapters.reports.capture_selections` follow it
onto the thread.

A search running on one of these threads that itself asks for searches at
once runs them in turn on its own thread: the pool is bounded, and a task
that waits on tasks queued behind it could wait for ever.
"""

from __future__ import annotations

import contextvars
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, List, Optional, Sequence, TypeVar

__all__ = ["MAX_SEARCH_THREADS", "at_once"]

_T = TypeVar("_T")

#: The most searches that run at once across every caller in the process
#: (more wait their turn in the queue); threads are started as needed, up to
#: this many, and then kept. Above SQLAlchemy's default pool (5 connections
#: and 10 more on overflow), so the connection pool, not this one, is what
#: bounds a store's concurrency.
MAX_SEARCH_THREADS = 32

_lock = threading.Lock()
_executor: Optional[ThreadPoolExecutor] = None
_on_pool_thread = threading.local()


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(
                max_workers=MAX_SEARCH_THREADS, thread_name_prefix="poolsplit-search", initializer=_mark_pool_thread
            )
        return _executor


def _mark_pool_thread() -> None:
    _on_pool_thread.active = True


def _forget_pool_after_fork() -> None:
    """In a forked child the parent's threads do not exist: a pool that
    believed it had idle threads would queue every task for ever."""
    global _executor, _lock
    _executor = None
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def at_once(calls: Sequence[Callable[[], _T]]) -> List[_T]:
    """Every call's result, in the order of ``calls``; the calls run at once
    on the kept threads, each in a copy of the caller's context. One call,
    or a call made from one of those threads, runs in turn here. The first
    exception (in call order) is raised after every call has finished, so
    no search is left running on a connection the caller is about to drop.

    Example::

        >>> at_once([lambda: 1, lambda: 2])
        [1, 2]
    """
    if len(calls) < 2 or getattr(_on_pool_thread, "active", False):
        return [call() for call in calls]
    pool = _pool()
    futures = [pool.submit(contextvars.copy_context().run, call) for call in calls]
    errors = [future.exception() for future in futures]  # waits for each
    for error in errors:
        if error is not None:
            raise error
    return [future.result() for future in futures]
