"""``at_once``: a plan's store searches at once, each on a thread of its own.

Shown without a clock: calls that meet at a barrier can only pass it when
they run at the same time.
"""

from __future__ import annotations

import contextvars
import threading
import time
from typing import Callable, List

import pytest

from poolsplit_adapters.threads import at_once

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


def test_the_first_error_in_call_order_is_raised_after_every_call_has_finished():
    finished: List[int] = []
    gate = threading.Event()

    def fails(message: str) -> Callable[[], int]:
        def run() -> int:
            raise ValueError(message)

        return run

    def slow() -> int:
        gate.wait(timeout=10)
        time.sleep(0.2)  # an error raised before this call finished would find the list empty
        finished.append(1)
        return 1

    def opens() -> int:
        gate.set()
        return 2

    with pytest.raises(ValueError, match="first"):
        at_once([slow, fails("first"), fails("second"), opens])
    assert finished == [1]


def test_calls_made_from_a_search_run_at_once_too():
    """A search that itself runs searches at once gets threads of its own
    (no pool shared across calls that its own calls could wait behind)."""
    assert at_once([lambda: at_once(meeting(3)), lambda: at_once(meeting(2))]) == [
        ["0:none", "1:none", "2:none"],
        ["0:none", "1:none"],
    ]


def test_one_call_runs_on_the_callers_thread():
    assert at_once([threading.current_thread]) == [threading.current_thread()]
    assert at_once([]) == []


def test_a_blocked_caller_does_not_hold_back_another():
    """Each call's threads are its own: two instant calls finish while
    other callers' searches are still blocked."""
    release = threading.Event()
    blocked = [threading.Thread(target=at_once, args=([release.wait, release.wait],)) for _ in range(20)]
    for thread in blocked:
        thread.start()
    try:
        done = threading.Event()
        quick = threading.Thread(target=lambda: (at_once([lambda: 1, lambda: 2]), done.set()))
        quick.start()
        assert done.wait(timeout=5)
    finally:
        release.set()
        for thread in blocked:
            thread.join(timeout=10)
