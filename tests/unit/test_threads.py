"""``at_once``: a plan's store searches at once, on threads kept between calls.

Shown without a clock: calls that meet at a barrier can only pass it when
they run at the same time.
"""

from __future__ import annotations

import contextvars
import multiprocessing
import threading
from typing import Callable, List

import pytest

from poolsplit_adapters import threads
from poolsplit_adapters.threads import MAX_SEARCH_THREADS, at_once

CALLER = contextvars.ContextVar("caller", default="none")


def meeting(n: int) -> List[Callable[[], str]]:
    barrier = threading.Barrier(n)

    def call(i: int) -> Callable[[], str]:
        def run() -> str:
            barrier.wait(timeout=10)
            return "%d:%s" % (i, CALLER.get())

        return run

    return [call(i) for i in range(n)]


def test_the_calls_run_at_once_in_order_in_the_callers_context():
    token = CALLER.set("me")
    try:
        assert at_once(meeting(5)) == ["0:me", "1:me", "2:me", "3:me", "4:me"]
    finally:
        CALLER.reset(token)


def test_the_threads_are_kept_between_calls():
    at_once(meeting(4))
    first = set(threads._pool()._threads)
    at_once(meeting(4))
    assert set(threads._pool()._threads) == first and 4 <= len(first) <= MAX_SEARCH_THREADS


def test_the_first_error_in_call_order_is_raised_after_every_call_has_finished():
    finished: List[int] = []
    gate = threading.Event()

    def fails(message: str) -> Callable[[], int]:
        def run() -> int:
            raise ValueError(message)

        return run

    def slow() -> int:
        gate.wait(timeout=10)
        finished.append(1)
        return 1

    def opens() -> int:
        gate.set()
        return 2

    with pytest.raises(ValueError, match="first"):
        at_once([slow, fails("first"), fails("second"), opens])
    assert finished == [1]


def test_a_call_on_a_pool_thread_runs_its_own_calls_in_turn():
    """Nested at once on a bounded pool could wait for ever; in turn it
    returns, on the same thread."""

    def outer() -> List[str]:
        me = threading.current_thread().name
        return at_once([lambda: threading.current_thread().name == me and "same" or "other"] * 3)

    assert at_once([outer, outer]) == [["same"] * 3, ["same"] * 3]


def test_one_call_runs_on_the_callers_thread():
    assert at_once([threading.current_thread]) == [threading.current_thread()]
    assert at_once([]) == []


def _in_child(queue: multiprocessing.Queue[List[str]]) -> None:
    queue.put(at_once(meeting(3)))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_a_forked_child_gets_threads_of_its_own():
    at_once(meeting(3))  # the parent's threads exist before the fork
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_in_child, args=(queue,), daemon=True)
    child.start()
    got = queue.get(timeout=30)
    child.join(timeout=30)
    assert got == ["0:none", "1:none", "2:none"] and child.exitcode == 0
