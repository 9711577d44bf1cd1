"""Background consolidation: after the turn, debounced per thread, never in its way.

An agent turn writes its evicted turns and notes through the ordinary gate
(they are durable before they leave the working set). Consolidating them
asks the host's model a second question, and the turn must not wait for
it, nor fail because of it. `BackgroundConsolidation` runs that
question later (when and where; what one run does is `consolidation_run`'s):

* **Debounced per key** (the middleware's key: thread and namespace). Each
  `submit` adds the ids the turn wrote to the
  key's pending set and moves its deadline ``delay`` seconds on; when the
  deadline passes with no new turn, one run consolidates every pending id
  against the store *as it is then* (a burst of turns runs once, on the
  latest state). Runs of one key never overlap; ids written while a run is
  in flight wait for the next one.
* **Async-safe.** Called from an async hook (`asubmit`), the run is an
  ``asyncio`` task on the running loop: the model through ``ainvoke``, the
  store's sync verbs in a worker thread (`off_loop`), so the loop
  never blocks. Called from a sync hook (`submit`), it is a daemon
  thread. If the loop closes first (``asyncio.run`` returned), the task hands
  its pending ids to a thread instead of dropping them.
* **Errors are reported, never raised into a turn**: logged on the
  ``poolsplit_adapters.consolidation`` logger, kept in `runs` and
  passed to ``on_run``.
* **Drain** (`drain`, `adrain`): run everything pending now and
  wait, for tests and at shutdown (daemon threads do not outlive the
  process; what was pending then is not consolidated, and nothing of it is
  lost: it is stored already).

What is process-local: the deadlines, the pending ids not yet run and the
reports of finished runs, per `BackgroundConsolidation` (one per
middleware instance). What is not: every run re-reads the store, skips an
entry another run (of this or another instance or process) already closed,
and every operation is verified against the store when it commits
(`apply_consolidation`), so
two instances consolidating one thread at once cannot apply a change to a
version the other closed: the later one is listed as failed, nothing is
applied twice and nothing is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import math
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any, Callable, Deque, Dict, Hashable, List, Optional, Sequence, Tuple

from .consolidation_run import LOGGER, ConsolidationRun, arun_consolidation, log_run, run_consolidation
from .memory.consolidate import Decider
from .stores.base import StoreVerbs

__all__ = ["BackgroundConsolidation", "ConsolidationRun", "LOGGER", "check_delay"]

#: How many keys (threads) keep reports not yet shown in a selection event;
#: the least recently reported go first (their runs stay in ``runs``).
UNSHOWN_KEYS = 1024


@dataclass
class _Slot:
    """One key's pending work and who runs it (guarded by the scheduler's lock)."""

    store: StoreVerbs
    pending: Dict[str, None] = field(default_factory=dict)
    due: float = 0.0
    runner: Optional[str] = None  # "thread" | "task" | None
    loop: Optional[asyncio.AbstractEventLoop] = None
    event: Optional[asyncio.Event] = None
    task: Optional[asyncio.Task[None]] = None


def check_delay(delay: Any) -> float:
    """A consolidation delay: a finite number of seconds >= 0 (not a bool).
    NaN passed a bare ``< 0`` test and infinity is a number, yet with either
    a thread's deadline is never reached: its consolidation never runs, and
    the ids it waits for are never reported.

    Raises:
        ValueError: naming the value.
    """
    if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not math.isfinite(delay) or delay < 0:
        raise ValueError("consolidation delay must be a finite number of seconds >= 0, got %r" % (delay,))
    return float(delay)


class BackgroundConsolidation:
    """Debounced background consolidation of stored entries (module docstring).

    Args:
        model: the host's model: a LangChain chat model with structured
            output, a LlamaIndex LLM, or a
            `Decider`.
        delay: seconds without a new submission before a key runs (>= 0).
        nearest: neighbours shown per candidate (>= 0).
        now: a fixed time for the operations (default: the time of each run).
        on_run: called with each finished `ConsolidationRun` (in the
            runner's thread or task; an exception it raises is logged).
        keep: how many finished runs `runs` keeps (and, per key,
            how many wait to be reported by `take`); >= 1.

    Example:
        ```python
        background = BackgroundConsolidation(chat_model, delay=2.0)
        report = store.write(entries)
        background.submit(("thread-1", "memories.u1"), store, report.written)
        ...
        for run in background.drain():        # tests, shutdown
            print(run.to_dict())
        ```
    """

    def __init__(
        self,
        model: Any,
        *,
        delay: float = 1.0,
        nearest: int = 5,
        now: Optional[datetime.datetime] = None,
        on_run: Optional[Callable[[ConsolidationRun], None]] = None,
        keep: int = 256,
    ) -> None:
        from .memory.consolidate_models import decider_for

        check_delay(delay)
        if isinstance(nearest, bool) or not isinstance(nearest, int) or nearest < 0:
            raise ValueError("consolidation nearest must be an int >= 0, got %r" % (nearest,))
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ValueError("consolidation keep must be an int >= 1, got %r" % (keep,))
        if on_run is not None and not callable(on_run):
            raise TypeError("on_run must be callable, got %r" % (on_run,))
        #: The driver of the host's model (checked once, here).
        self.decider: Decider = decider_for(model)
        self.delay = float(delay)
        self.nearest = nearest
        self.now = now
        self.on_run = on_run
        #: The last ``keep`` finished runs, oldest first.
        self.runs: Deque[ConsolidationRun] = deque(maxlen=keep)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._slots: Dict[Tuple[int, Hashable], _Slot] = {}
        self._flushing = 0
        self._since_drain: List[ConsolidationRun] = []
        # Reports not yet shown, for the keys seen last (a thread that never
        # calls the model again must not keep its reports for ever).
        self._unshown: OrderedDict[Hashable, List[ConsolidationRun]] = OrderedDict()
        self._keep = keep
        # One run at a time per store (whatever the key): a run's view is
        # then never older than the last run's changes to the same entries.
        self._store_locks: Dict[int, threading.Lock] = {}

    def __repr__(self) -> str:
        return "BackgroundConsolidation(%s, delay=%gs, %d pending)" % (
            type(self.decider).__name__,
            self.delay,
            self.pending,
        )

    @property
    def pending(self) -> int:
        """How many ids wait for a run, over every key."""
        with self._lock:
            return sum(len(s.pending) for s in self._slots.values())

    # -- submitting ---------------------------------------------------------------------

    def _merge(self, key: Hashable, store: StoreVerbs, ids: Sequence[str]) -> Tuple[Tuple[int, Hashable], _Slot]:
        """Add ``ids`` to the key's pending set and move its deadline (under the lock)."""
        slot_key = (id(store), key)
        slot = self._slots.get(slot_key)
        if slot is None or slot.store is not store:
            slot = self._slots[slot_key] = _Slot(store)
        slot.pending.update(dict.fromkeys(str(i) for i in ids))
        slot.due = time.monotonic() + self.delay
        return slot_key, slot

    def submit(self, key: Hashable, store: StoreVerbs, ids: Sequence[str]) -> None:
        """Consolidate ``ids`` (stored in ``store``) once ``key`` has been
        quiet for ``delay`` seconds, in a background thread. Returns at once."""
        if not ids:
            return
        with self._lock:
            slot_key, slot = self._merge(key, store, ids)
            if slot.runner is None:
                self._start_thread(slot_key, slot)
            else:
                self._wake(slot)

    def asubmit(self, key: Hashable, store: StoreVerbs, ids: Sequence[str]) -> None:
        """`submit` from async code: the run is a task on the running
        loop (the model awaited, the store's verbs in a worker thread)."""
        if not ids:
            return
        loop = asyncio.get_running_loop()
        with self._lock:
            slot_key, slot = self._merge(key, store, ids)
            if slot.runner is None:
                slot.runner, slot.loop, slot.event = "task", loop, asyncio.Event()
                slot.task = loop.create_task(self._task_runner(slot_key, slot), name="poolsplit-consolidation")
            else:
                self._wake(slot)

    def _start_thread(self, slot_key: Tuple[int, Hashable], slot: _Slot) -> None:
        slot.runner, slot.loop, slot.event, slot.task = "thread", None, None, None
        threading.Thread(
            target=self._thread_runner, args=(slot_key, slot), name="poolsplit-consolidation", daemon=True
        ).start()

    def _wake(self, slot: _Slot) -> None:
        """Make the slot's runner look at its deadline again (under the lock)."""
        if slot.runner == "task" and slot.loop is not None and slot.event is not None:
            # A closed loop raises: its task fell back to a thread already.
            with contextlib.suppress(RuntimeError):
                slot.loop.call_soon_threadsafe(slot.event.set)
        self._changed.notify_all()

    # -- running ------------------------------------------------------------------------

    def _next(self, slot_key: Tuple[int, Hashable], slot: _Slot) -> Tuple[Optional[Tuple[str, ...]], float]:
        """Under the lock: ``(ids to run now, 0)``, ``(None, seconds to
        wait)``, or ``(None, -1)`` when nothing is pending (the slot is done)."""
        if not slot.pending:
            slot.runner = None
            if self._slots.get(slot_key) is slot:
                del self._slots[slot_key]
            self._changed.notify_all()
            return None, -1.0
        wait = 0.0 if self._flushing else slot.due - time.monotonic()
        if wait > 0:
            return None, wait
        ids = tuple(slot.pending)
        slot.pending.clear()
        return ids, 0.0

    def _thread_runner(self, slot_key: Tuple[int, Hashable], slot: _Slot) -> None:
        while True:
            with self._lock:
                ids, wait = self._next(slot_key, slot)
                while ids is None and wait > 0:
                    self._changed.wait(wait)
                    ids, wait = self._next(slot_key, slot)
            if ids is None:
                return
            self.record(self._run(slot_key[1], slot.store, ids))

    async def _task_runner(self, slot_key: Tuple[int, Hashable], slot: _Slot) -> None:
        ids: Optional[Tuple[str, ...]] = None
        try:
            while True:
                with self._lock:
                    ids, wait = self._next(slot_key, slot)
                if ids is None and wait < 0:
                    return
                if ids is None:
                    assert slot.event is not None
                    slot.event.clear()
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(slot.event.wait(), wait)
                    continue
                run = await self._arun(slot_key[1], slot.store, ids)
                ids = None
                self.record(run)
        except asyncio.CancelledError:
            # The loop is going away (asyncio.run returned): the ids taken
            # and not consolidated go back, and a thread runs the rest.
            with self._lock:
                if ids is not None:
                    slot.pending.update(dict.fromkeys(ids))
                if slot.pending:
                    self._start_thread(slot_key, slot)
                else:
                    self._next(slot_key, slot)
            raise

    def _store_lock(self, store: StoreVerbs) -> threading.Lock:
        with self._lock:
            return self._store_locks.setdefault(id(store.holder), threading.Lock())

    def _run(self, key: Hashable, store: StoreVerbs, ids: Tuple[str, ...]) -> ConsolidationRun:
        """One run, in the calling thread: view, decide (sync), apply
        (`run_consolidation`), after the store's earlier run."""
        with self._store_lock(store):
            return run_consolidation(self, key, store, ids)

    async def _arun(self, key: Hashable, store: StoreVerbs, ids: Tuple[str, ...]) -> ConsolidationRun:
        """`_run` on the loop: the store's sync verbs in a worker
        thread, the model awaited (waiting for the store's lock never blocks
        the loop, and a cancelled wait leaves it free)."""
        lock = self._store_lock(store)
        while not lock.acquire(blocking=False):
            await asyncio.sleep(0.005)
        try:
            return await arun_consolidation(self, key, store, ids)
        finally:
            lock.release()

    def record(self, run: ConsolidationRun) -> None:
        """Report a finished run: logged (`log_run`), kept in `runs`, passed to ``on_run``."""
        log_run(run)
        with self._lock:
            self.runs.append(run)
            self._since_drain.append(run)
            shown = self._unshown.setdefault(run.key, [])
            shown.append(run)
            del shown[: -self._keep]
            self._unshown.move_to_end(run.key)
            while len(self._unshown) > UNSHOWN_KEYS:
                self._unshown.popitem(last=False)
            self._changed.notify_all()
        if self.on_run is not None:
            try:
                self.on_run(run)
            except Exception:  # the host's callback must not stop the runner
                LOGGER.exception("consolidation on_run callback failed")

    # -- reports and draining -----------------------------------------------------------

    def take(self, key: Hashable) -> List[ConsolidationRun]:
        """The runs of ``key`` finished since the last ``take`` (what the
        middleware reports in the thread's next selection event)."""
        with self._lock:
            return self._unshown.pop(key, [])

    def _check_no_task_on_this_loop(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if any(s.runner == "task" and s.loop is loop for s in self._slots.values()):
            raise RuntimeError("drain() would block the event loop its runs need; use 'await adrain()'")

    def drain(self, timeout: Optional[float] = None) -> List[ConsolidationRun]:
        """Run everything pending now (no waiting for deadlines), wait until
        it is done (or ``timeout`` seconds), and return the runs finished
        since the last drain, oldest first.

        Raises:
            RuntimeError: called on an event loop whose tasks hold pending
                work (they could not run while this blocks); use `adrain`.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            self._check_no_task_on_this_loop()
            self._flushing += 1
            try:
                for slot in self._slots.values():
                    self._wake(slot)
                while self._slots:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        break
                    self._changed.wait(left)
            finally:
                self._flushing -= 1
            done, self._since_drain = self._since_drain, []
        return done

    async def adrain(self, timeout: Optional[float] = None) -> List[ConsolidationRun]:
        """Async `drain`: awaits (the loop's own runs go on meanwhile)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            self._flushing += 1
            for slot in self._slots.values():
                self._wake(slot)
        try:
            while True:
                with self._lock:
                    if not self._slots or (deadline is not None and time.monotonic() >= deadline):
                        break
                await asyncio.sleep(0.005)
        finally:
            with self._lock:
                self._flushing -= 1
                done, self._since_drain = self._since_drain, []
        return done
