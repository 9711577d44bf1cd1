"""Servers superseding one fact at once over one Postgres database.

LangGraph's ``PostgresStore`` has no transaction a change could check in:
``supersede`` reads the version it closes, then puts both versions. Found
by a hostile run: four store objects (four servers, each its own
connection) superseding one fact at once each closed it with their own
value, and all four stayed active, the old version naming one of them only.
Each change now holds the namespace's advisory lock from its read to its
puts: one supersede wins, every other is refused naming it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, List

import pytest

from poolsplit_adapters.langchain import BaseStoreMemory

postgres = pytest.importorskip("langgraph.store.postgres")
from langgraph.store.base import PutOp  # noqa: E402
from langgraph.store.postgres.aio import AsyncPostgresStore  # noqa: E402
from psycopg.rows import dict_row  # noqa: E402
from psycopg_pool import ConnectionPool  # noqa: E402

ANA = ("memories", "ana")
WRITERS = 4


def slow(cls: Any) -> Any:
    """``cls`` whose puts take a while (a busy server): every writer has
    read the fact before the first one's puts land."""

    class Slow(cls):  # type: ignore[misc, valid-type]
        def batch(self, ops: Any) -> Any:
            ops = list(ops)
            if any(isinstance(op, PutOp) for op in ops):
                time.sleep(0.2)
            return super().batch(ops)

        async def abatch(self, ops: Any) -> Any:
            ops = list(ops)
            if any(isinstance(op, PutOp) for op in ops):
                await asyncio.sleep(0.2)
            return await super().abatch(ops)

    return Slow


def check(memory: Any, outcomes: List[Any]) -> None:
    won = [o for o in outcomes if isinstance(o, str)]
    assert len(won) == 1, outcomes
    refused = [str(o) for o in outcomes if not isinstance(o, str)]
    assert refused == ["entry 'f0' is already superseded by %r; supersede that one" % won[0]] * (WRITERS - 1)
    entries = {e["id"]: e for e in memory.entries()}
    assert sorted(entries) == sorted(["f0", *won])
    assert entries["f0"]["superseded_by"] == won[0] and not entries[won[0]].get("superseded_by")


def new(n: int) -> dict:
    return {"id": "f%d" % (n + 1), "type": "fact", "content": "The launch moved to March %d." % (10 + n)}


def race(memories: List[Any]) -> List[Any]:
    barrier = threading.Barrier(len(memories))
    outcomes: List[Any] = [None] * len(memories)

    def run(n: int) -> None:
        barrier.wait()
        try:
            outcomes[n] = memories[n].supersede("f0", new(n))
        except ValueError as err:
            outcomes[n] = err

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(memories))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


def seeded(store: Any) -> None:
    store.setup()
    BaseStoreMemory(store, ANA).add([{"id": "f0", "type": "fact", "content": "The launch is on March 3."}])


def test_servers_each_with_its_own_connection_supersede_one_fact_once(pg_database):
    connections = [pg_database.connect() for _ in range(WRITERS)]
    try:
        stores = [slow(postgres.PostgresStore)(conn) for conn in connections]
        seeded(stores[0])
        outcomes = race([BaseStoreMemory(store, ANA) for store in stores])
        check(BaseStoreMemory(stores[0], ANA), outcomes)
    finally:
        for conn in connections:
            conn.close()


def test_servers_each_with_a_pool_supersede_one_fact_once(pg_database):
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    pools = [
        ConnectionPool(pg_database.conninfo, min_size=1, max_size=3, kwargs=kwargs, open=True) for _ in range(WRITERS)
    ]
    try:
        stores = [slow(postgres.PostgresStore)(pool) for pool in pools]
        seeded(stores[0])
        outcomes = race([BaseStoreMemory(store, ANA) for store in stores])
        check(BaseStoreMemory(stores[0], ANA), outcomes)
    finally:
        for pool in pools:
            pool.close()


def test_async_servers_supersede_one_fact_once(pg_database):
    async def run() -> None:
        from psycopg import AsyncConnection

        connections = [
            await AsyncConnection.connect(
                pg_database.conninfo, autocommit=True, prepare_threshold=0, row_factory=dict_row
            )
            for _ in range(WRITERS)
        ]
        try:
            stores = [slow(AsyncPostgresStore)(conn) for conn in connections]
            await stores[0].setup()
            first = BaseStoreMemory(stores[0], ANA)
            await first.aadd([{"id": "f0", "type": "fact", "content": "The launch is on March 3."}])
            outcomes = await asyncio.gather(
                *(BaseStoreMemory(s, ANA).asupersede("f0", new(n)) for n, s in enumerate(stores)),
                return_exceptions=True,
            )
            assert not [o for o in outcomes if not isinstance(o, (str, ValueError))], outcomes
            entries = {e["id"]: e for e in await first.aentries()}
            won = [o for o in outcomes if isinstance(o, str)]
            assert len(won) == 1 and sorted(entries) == sorted(["f0", *won])
            assert entries["f0"]["superseded_by"] == won[0]
        finally:
            for conn in connections:
                await conn.close()

    asyncio.run(run())


def test_forget_holds_off_a_write_of_another_server_between_its_read_and_its_delete(pg_database):
    """``forget(namespace=...)`` read the namespace's items, then deleted
    them: a note another server wrote in between was acknowledged before
    "forget me" returned, and survived it. Forget now holds the namespace's
    lock, so that write lands after it (and stays, as written after it)."""
    first, second = pg_database.connect(), pg_database.connect()
    try:
        writer = postgres.PostgresStore(second)
        events: List[str] = []

        class Interleaved(postgres.PostgresStore):
            raced = True  # armed right before forget

            def batch(self, ops: Any) -> Any:
                done = super().batch(ops)
                if not self.raced and any(getattr(op, "limit", 0) > 1000 for op in ops):
                    self.raced = True  # forget's read: another server writes now
                    other = threading.Thread(
                        target=lambda: (
                            BaseStoreMemory(writer, ANA).add([{"id": "late", "content": "Ana moved to Porto."}]),
                            events.append("written"),
                        )
                    )
                    other.start()
                    other.join(timeout=1.0)
                    self.other = other
                return done

        store = Interleaved(first)
        store.setup()
        BaseStoreMemory(store, ANA).add([{"id": "tea", "content": "Ana likes tea."}])
        store.raced = False
        BaseStoreMemory(store, ANA).forget(namespace="memories.ana")
        events.append("forgotten")
        store.other.join(timeout=10)
        left = [e["id"] for e in BaseStoreMemory(store, ANA).entries()]
        assert (events, left) == (["forgotten", "written"], ["late"])
    finally:
        first.close()
        second.close()


def test_sync_calls_on_async_stores_of_four_servers_supersede_one_fact_once(pg_database):
    """A sync ``supersede`` on an ``AsyncPostgresStore`` (from a worker
    thread, as its own sync methods run) took no advisory lock: four such
    servers left all four new values active."""
    from psycopg import AsyncConnection

    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()

    def on_loop(work: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(work, loop).result()

    async def connect() -> Any:
        return await AsyncConnection.connect(
            pg_database.conninfo, autocommit=True, prepare_threshold=0, row_factory=dict_row
        )

    async def make(conn: Any) -> Any:  # the store binds the loop it is made on
        return slow(AsyncPostgresStore)(conn)

    connections = [on_loop(connect()) for _ in range(WRITERS)]
    try:
        stores = [on_loop(make(conn)) for conn in connections]
        on_loop(stores[0].setup())
        BaseStoreMemory(stores[0], ANA).add([{"id": "f0", "type": "fact", "content": "The launch is on March 3."}])
        outcomes = race([BaseStoreMemory(store, ANA) for store in stores])
        check(BaseStoreMemory(stores[0], ANA), outcomes)
    finally:
        for conn in connections:
            on_loop(conn.close())
        loop.call_soon_threadsafe(loop.stop)
        runner.join(timeout=10)


def test_writers_of_two_namespaces_on_a_pool_of_two_never_wait_for_each_others_connection(pg_database):
    """The namespace lock must not take a connection of the store's pool:
    held beside the write's own, two writers on a pool of two each waited
    for the other's connection until the pool's timeout."""
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    with ConnectionPool(pg_database.conninfo, min_size=1, max_size=2, timeout=5, kwargs=kwargs, open=True) as pool:
        store = slow(postgres.PostgresStore)(pool)
        store.setup()
        barrier = threading.Barrier(2)
        errors: List[Any] = []

        def write(n: int) -> None:
            barrier.wait()
            try:
                BaseStoreMemory(store, ("memories", "u%d" % n)).add([{"id": "n", "content": "Note of user %d." % n}])
            except Exception as err:  # a PoolTimeout, before the fix
                errors.append(err)

        threads = [threading.Thread(target=write, args=(n,)) for n in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert [BaseStoreMemory(store, ("memories", "u%d" % n)).get("n")["content"] for n in range(2)] == [
            "Note of user 0.",
            "Note of user 1.",
        ]


def test_async_servers_each_with_a_pool_supersede_one_fact_once(pg_database):
    from psycopg_pool import AsyncConnectionPool

    async def run() -> None:
        kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
        pools = [
            AsyncConnectionPool(pg_database.conninfo, min_size=1, max_size=2, kwargs=kwargs, open=False)
            for _ in range(WRITERS)
        ]
        for pool in pools:
            await pool.open()
        try:
            stores = [slow(AsyncPostgresStore)(pool) for pool in pools]
            await stores[0].setup()
            first = BaseStoreMemory(stores[0], ANA)
            await first.aadd([{"id": "f0", "type": "fact", "content": "The launch is on March 3."}])
            outcomes = await asyncio.gather(
                *(BaseStoreMemory(s, ANA).asupersede("f0", new(n)) for n, s in enumerate(stores)),
                return_exceptions=True,
            )
            won = [o for o in outcomes if isinstance(o, str)]
            assert len(won) == 1 and all(isinstance(o, (str, ValueError)) for o in outcomes), outcomes
            entries = {e["id"]: e for e in await first.aentries()}
            assert sorted(entries) == sorted(["f0", *won]) and entries["f0"]["superseded_by"] == won[0]
        finally:
            for pool in pools:
                await pool.close()

    asyncio.run(run())
