"""Faults and load on a real Postgres through the frameworks' own stores
(LangChain ``PGVector``, LlamaIndex ``PGVectorStore``): concurrent writer and
reader processes, and ``kill -9`` of a writer in the middle of a batch.

What "acknowledged" means, for both integrations: the framework's add call
for a batch (``PGVector.add_documents``; ``VectorStoreIndex.insert_nodes``,
i.e. ``PGVectorStore.add``) has returned. Each such call runs one
transaction and commits before returning, so an acknowledged batch is
durable, and a batch whose writer dies before the commit leaves nothing.

Everything is bounded: a fixed number of batches, and every wait has a
timeout after which the processes are killed and the test fails.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import os
import signal
import threading
import time
from collections import Counter
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pg_workers
import pytest
from pg_server import Database
from pg_workers import (
    batch_ids,
    entry,
    langchain_add,
    langchain_store,
    llama_add,
    llama_index,
    llama_store,
    whole,
)

pytest.importorskip("langchain_postgres")
pytest.importorskip("llama_index.vector_stores.postgres")

KINDS = ["langchain", "llama"]
TIMEOUT = 90.0  # per wait; the whole test takes seconds


@pytest.fixture(scope="module")
def context() -> multiprocessing.context.BaseContext:
    """Workers fork from a fork server that has imported the frameworks once
    (a clean process: no connection or thread of the test's is inherited)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(pg_workers.PRELOAD)
    return ctx


class Worker:
    """One worker process and what it has sent so far, collected as it comes."""

    def __init__(self, ctx: Any, target: Any, *args: object) -> None:
        receive, send = ctx.Pipe(duplex=False)
        self.process = ctx.Process(target=target, args=(*args, send), daemon=True)
        self.process.start()
        send.close()  # only the child holds the write end: its death ends the stream
        self.messages: List[Tuple[str, Any]] = []
        self._pump = threading.Thread(target=self._read, args=(receive,), daemon=True)
        self._pump.start()

    def _read(self, receive: Any) -> None:
        try:
            while True:
                self.messages.append(receive.recv())
        except (EOFError, OSError):
            receive.close()

    def sent(self, kind: str) -> List[Any]:
        return [value for what, value in list(self.messages) if what == kind]

    def finish(self, timeout: float = TIMEOUT) -> Optional[int]:
        self.process.join(timeout)
        if self.process.exitcode is None:
            self.kill()
            raise TimeoutError("worker still running after %.0fs" % timeout)
        self._pump.join(timeout=10)
        return self.process.exitcode

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


@pytest.fixture
def workers() -> Iterator[List[Worker]]:
    started: List[Worker] = []
    yield started
    for worker in started:  # whatever happened, no process outlives its test
        worker.kill()


def prepare(kind: str, url: str) -> Any:
    """Create the store's tables from one process first (the frameworks'
    create-if-missing is not safe to race), with a seed batch from writer 0."""
    if kind == "langchain":
        store = langchain_store(url)
        langchain_add(store, batch_ids(0, 0, 10))
    else:
        store = llama_store(url)
        llama_add(llama_index(store), batch_ids(0, 0, 10))
    return store


def rows(database: Database, kind: str) -> List[Tuple[str, str, Dict[str, Any]]]:
    """Every stored entry, read straight from the table (independent of the
    integration): (id, content, metadata)."""
    import psycopg

    sql = (
        "SELECT id, document, cmetadata FROM langchain_pg_embedding"
        if kind == "langchain"
        else "SELECT node_id, text, metadata_ FROM data_memory"
    )
    with psycopg.connect(database.conninfo) as conn:
        return [(r[0], r[1], r[2]) for r in conn.execute(sql).fetchall()]


def fetch(store: Any, kind: str, ids: List[str]) -> List[Tuple[str, str, Dict[str, Any]]]:
    """The entries with these ids, read back through the framework."""
    if kind == "langchain":
        return [(d.id, d.page_content, d.metadata) for d in store.get_by_ids(ids)]
    return [(n.node_id, n.get_content(), n.metadata) for n in store.get_nodes(node_ids=ids)]


def dispose(store: Any) -> None:
    engine = getattr(store, "_engine", None)
    if engine is not None:
        engine.dispose()


@pytest.mark.parametrize("kind", KINDS)
def test_concurrent_writers_lose_nothing_and_readers_never_see_a_partial_entry(kind, pg_database, workers, context):
    writers, batches, size = 4, 5, 40
    store = prepare(kind, pg_database.url)
    stop = context.Event()
    readers = [Worker(context, pg_workers.read, kind, pg_database.url, TIMEOUT, stop) for _ in range(2)]
    workers.extend(readers)
    deadline = time.monotonic() + TIMEOUT
    while not all(r.sent("ready") for r in readers) and time.monotonic() < deadline:
        time.sleep(0.01)  # readers are querying before the first write
    assert all(r.sent("ready") for r in readers)
    writing = [
        Worker(context, pg_workers.write, kind, pg_database.url, w, 0, batches, size) for w in range(1, writers + 1)
    ]
    workers.extend(writing)
    for w in writing:
        assert w.finish() == 0
    stop.set()
    for r in readers:
        assert r.finish() == 0

    acked = batch_ids(0, 0, 10) + [
        i for n, w in enumerate(writing, start=1) for b in w.sent("ack") for i in batch_ids(n, b, size)
    ]
    assert len(acked) == 10 + writers * batches * size  # every writer finished every batch
    stored = rows(pg_database, kind)
    counts = Counter(r[0] for r in stored)
    assert [i for i, c in counts.items() if c > 1] == []  # no duplicate ids
    assert sorted(counts) == sorted(acked)
    assert all(whole(*r) for r in stored)
    # After reconnecting, the framework itself returns every acknowledged entry.
    dispose(store)
    fresh = langchain_store(pg_database.url) if kind == "langchain" else llama_store(pg_database.url)
    back = fetch(fresh, kind, acked)
    assert sorted(r[0] for r in back) == sorted(acked) and all(whole(*r) for r in back)
    dispose(fresh)
    # The readers ran during the writes and checked what they saw.
    for r in readers:
        assert r.sent("partial") == []
        assert len(r.sent("read")) == 1 and r.sent("read")[0] > 0


def _in_flight_insert(database: Database, name: str) -> bool:
    import psycopg

    sql = (
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
        "AND state = 'active' AND query ILIKE 'INSERT%%'"
    )
    with psycopg.connect(database.conninfo, autocommit=True) as conn:
        row = conn.execute(sql, (name,)).fetchone()
        return bool(row and row[0])


def _session_gone(database: Database, name: str, timeout: float = 20.0) -> bool:
    import psycopg

    deadline = time.monotonic() + timeout
    with psycopg.connect(database.conninfo, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)).fetchone()
            if row is not None and row[0] == 0:
                return True
            time.sleep(0.05)
    return False


@pytest.mark.parametrize("kind", KINDS)
def test_kill_9_mid_batch_keeps_every_acknowledged_batch_and_no_half_batch(kind, pg_database, workers, context):
    size, batches = 300, 40  # large batches: each INSERT runs long enough to be caught in flight
    store = prepare(kind, pg_database.url)
    writer = Worker(context, pg_workers.write, kind, pg_database.url, 1, 0, batches, size)
    workers.append(writer)

    # Let two batches land, then kill -9 while the next INSERT is running.
    deadline = time.monotonic() + TIMEOUT
    while len(writer.sent("ack")) < 2 and writer.process.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(writer.sent("ack")) >= 2
    caught = False
    while not caught and writer.process.is_alive() and time.monotonic() < deadline:
        caught = _in_flight_insert(pg_database, "writer-1")
    assert caught, "the writer finished before an INSERT was seen in flight"
    assert writer.process.pid is not None
    os.kill(writer.process.pid, signal.SIGKILL)
    assert writer.finish() == -signal.SIGKILL
    acked = writer.sent("ack")
    assert acked == list(range(len(acked))) and len(acked) < batches

    # Reconnect once the server has noticed the dead session (and rolled it back).
    assert _session_gone(pg_database, "writer-1")
    present = Counter(entry(r[0])["batch"] for r in rows(pg_database, kind) if r[0].startswith("w1-"))
    assert all(count == size for count in present.values())  # nothing half-written
    landed = sorted(int(b.split("-b")[1]) for b in present)
    assert landed in (acked, acked + [len(acked)])  # the in-flight batch: all or nothing
    dispose(store)
    fresh = langchain_store(pg_database.url) if kind == "langchain" else llama_store(pg_database.url)
    want = [i for b in acked for i in batch_ids(1, b, size)]
    back = fetch(fresh, kind, want)
    assert sorted(r[0] for r in back) == sorted(want) and all(whole(*r) for r in back)

    # A restarted writer re-sends from the first unacknowledged batch. PGVector
    # upserts by id; PGVectorStore has no unique node id, so its retry deletes
    # the batch's ids first (a batch that landed unacknowledged is not doubled).
    resend = [len(acked), len(acked) + 1]
    for b in resend:
        ids = batch_ids(1, b, size)
        if kind == "langchain":
            langchain_add(fresh, ids)
        else:
            fresh.delete_nodes(node_ids=ids)
            llama_add(llama_index(fresh), ids)
    counts = Counter(r[0] for r in rows(pg_database, kind))
    assert [i for i, c in counts.items() if c > 1] == []
    assert all(counts[i] == 1 for b in acked + resend for i in batch_ids(1, b, size))
    dispose(fresh)
