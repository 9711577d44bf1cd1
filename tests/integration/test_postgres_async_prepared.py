"""The middleware's kept index over LangGraph's ``AsyncPostgresStore`` (a
real Postgres), as over the sync store: the watermark (the change counter
when installed, the server-side digest otherwise) is read on the store's own
loop from a worker thread, sees what another connection wrote between
turns, and the kept selection is a fresh recall's."""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import time
from typing import Any, Awaitable, Callable, Iterator, List, Tuple

import pytest
from agent_fakes import ToolCallingFakeModel, thread
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import SearchOp
from pg_embeddings import HashedNgramEmbeddings
from prepared_seed import (
    AFTER_OTHERS,
    NOW,
    POOLS,
    U1,
    assert_a_fresh_recalls,
    fix,
    fixes_shown,
    others_writes,
    record_abatch,
    seed,
)

from poolsplit_adapters.index import MemoryIndex
from poolsplit_adapters.langchain import BaseStoreMemory, PoolSplitMemoryMiddleware, RecallConfig, WriteConfig
from poolsplit_adapters.langchain.backends import backend_for
from poolsplit_adapters.settings import ArgumentError
from poolsplit_adapters.stores.langgraph.backends import Plan
from poolsplit_adapters.stores.langgraph.prepared import watermark
from poolsplit_adapters.stores.postgres import (
    ainstall_change_counter,
    ainstall_filter_index,
    install_change_counter,
    install_filter_index,
)

PostgresStore = pytest.importorskip("langgraph.store.postgres").PostgresStore
AsyncPostgresStore = pytest.importorskip("langgraph.store.postgres.aio").AsyncPostgresStore

CONTEXT = {"message": "deploy", "tags": [], "project": None}


async def _seeded(store: Any, **options: Any) -> Tuple[PoolSplitMemoryMiddleware, Any, Plan]:
    """The store set up with the counter and the seed memories, and a
    middleware's backend over it (``options``: the middleware's)."""
    await _setup(store, True)
    await BaseStoreMemory(store, U1).aput_many(seed())
    middleware = PoolSplitMemoryMiddleware(POOLS, namespace=U1, now=NOW, write=WriteConfig(remember=False), **options)
    return middleware, backend_for(store, middleware.settings), Plan(list(POOLS))


async def _setup(store: Any, counted: bool) -> None:
    await store.setup()
    if counted:
        await ainstall_change_counter(store)


@pytest.mark.parametrize("counted", [False, True], ids=["digest", "change-counter"])
async def test_the_next_async_turn_sees_what_another_connection_wrote(pg_database: Any, counted: bool) -> None:
    with PostgresStore.from_conn_string(pg_database.conninfo) as other:
        async with AsyncPostgresStore.from_conn_string(pg_database.conninfo) as mine:
            await _setup(mine, counted)
            await BaseStoreMemory(mine, U1).aput_many(seed())
            model = ToolCallingFakeModel()
            middleware = PoolSplitMemoryMiddleware(POOLS, namespace=U1, now=NOW, write=WriteConfig(remember=False))
            agent = create_agent(model, middleware=[middleware], checkpointer=InMemorySaver(), store=mine)
            await agent.ainvoke({"messages": [HumanMessage("deploy?")]}, thread("t1"))
            assert fixes_shown(model) == [("fix-%d" % n, "Correction %d." % n) for n in range(3)]
            mark = await asyncio.to_thread(watermark, mine, [U1])
            assert mark[0] == ("pgchanges" if counted else "postgres")
            others_writes(other)
            assert await asyncio.to_thread(watermark, mine, [U1]) != mark
            await agent.ainvoke({"messages": [HumanMessage("and now?")]}, thread("t1"))
            assert fixes_shown(model) == AFTER_OTHERS


@pytest.mark.parametrize("counted", [False, True], ids=["digest", "change-counter"])
async def test_the_kept_async_selection_is_a_fresh_recalls_after_every_write(pg_database: Any, counted: bool) -> None:
    with PostgresStore.from_conn_string(pg_database.conninfo) as other:
        async with AsyncPostgresStore.from_conn_string(pg_database.conninfo) as mine:
            await _setup(mine, counted)
            writer = BaseStoreMemory(other, U1)
            writer.put_many(seed())
            middleware = PoolSplitMemoryMiddleware(POOLS, namespace=U1, now=NOW, write=WriteConfig(remember=False))
            backend = backend_for(mine, middleware.settings)
            plan = Plan(list(POOLS))
            episode = {"id": "ep-1", "type": "episode", "content": "deploy episode"}
            writes: List[Callable[[], Awaitable[Any]]] = [
                lambda: asyncio.sleep(0),
                lambda: asyncio.to_thread(
                    writer.put, {"id": "note-05", "type": "note", "content": "deploy note five, rewritten"}
                ),
                lambda: backend.awrite([U1], [episode]),
                lambda: asyncio.to_thread(other.delete, U1, "note-00"),
                lambda: asyncio.to_thread(writer.put, fix(0, "Correction 0, reworded.")),
            ]
            for write in writes:
                await write()
                snap = await backend.asnapshot([U1], CONTEXT, plan)
                assert snap.prepared is not None  # the kept index, not a read of the namespace
                got = backend.select(snap, [U1], CONTEXT, plan)
                assert_a_fresh_recalls(got, other, middleware.settings, CONTEXT)
                reads = snap.prepared.reads
                assert (await backend.asnapshot([U1], CONTEXT, plan)).version == snap.version
                assert snap.prepared.reads == reads  # unchanged: the watermark only


async def test_the_middlewares_own_async_write_reads_only_its_keys_with_the_counter(pg_database: Any) -> None:
    async with AsyncPostgresStore.from_conn_string(pg_database.conninfo) as store:
        middleware, backend, plan = await _seeded(store)
        snap = await backend.asnapshot([U1], CONTEXT, plan)
        reads = snap.prepared.reads
        await backend.awrite([U1], [{"id": "ep-1", "type": "episode", "content": "deploy episode"}])
        snap = await backend.asnapshot([U1], CONTEXT, plan)
        assert snap.prepared.reads == reads + 2  # the written key's row and item, nothing else
        assert "ep-1" in [e["id"] for e in snap.prepared.entries()]


async def test_an_indexed_async_stores_ranked_recall_keeps_its_corrections_with_the_counter(
    pg_database: Any,
) -> None:
    """With the counter, the corrections of a ranked recall come from the
    kept index: the async store is asked its ranked searches only (ours,
    not through its ``abatch``), and the selection is a fresh recall's."""
    index = {"dims": 256, "embed": HashedNgramEmbeddings(), "fields": ["content"]}
    with PostgresStore.from_conn_string(pg_database.conninfo, index=index) as other:
        async with AsyncPostgresStore.from_conn_string(pg_database.conninfo, index=index) as mine:
            await _setup(mine, True)
            await ainstall_filter_index(mine)
            writer = BaseStoreMemory(other, U1)
            writer.put_many(seed())
            middleware = PoolSplitMemoryMiddleware(
                POOLS, namespace=U1, now=NOW, recall=RecallConfig(fetch_k=3), write=WriteConfig(remember=False)
            )
            backend = backend_for(mine, middleware.settings)
            plan = Plan(list(POOLS))
            asked = record_abatch(mine)
            for write in (lambda: None, lambda: writer.put(fix(7)), lambda: other.delete(U1, "fix-2")):
                write()
                asked.clear()
                got = backend.select(await backend.asnapshot([U1], CONTEXT, plan), [U1], CONTEXT, plan)
                assert [op for op in asked if isinstance(op, SearchOp)] == []
                assert_a_fresh_recalls(got, other, middleware.settings, CONTEXT, fetch_k=3)
            fixes = sorted(c.entry["id"] for c in got.chosen if c.entry.get("scope") == "always")
            assert fixes == ["fix-0", "fix-1", "fix-7"]


async def test_each_installer_names_its_twin_for_the_other_kind_of_store(pg_database: Any) -> None:
    with PostgresStore.from_conn_string(pg_database.conninfo) as sync_store:
        sync_store.setup()
        with pytest.raises(ArgumentError, match="a sync store: install_change_counter"):
            await ainstall_change_counter(sync_store)
        with pytest.raises(ArgumentError, match="a sync store: install_filter_index"):
            await ainstall_filter_index(sync_store)
    async with AsyncPostgresStore.from_conn_string(pg_database.conninfo) as async_store:
        with pytest.raises(ArgumentError, match="await ainstall_change_counter"):
            install_change_counter(async_store)
        with pytest.raises(ArgumentError, match="await ainstall_filter_index"):
            install_filter_index(async_store)


async def test_a_sync_watermark_read_on_the_async_stores_own_loop_is_refused(pg_database: Any) -> None:
    async with AsyncPostgresStore.from_conn_string(pg_database.conninfo) as store:
        await store.setup()
        with pytest.raises(asyncio.InvalidStateError, match="use the async interface"):
            watermark(store, [U1])


async def test_an_async_writes_duplicate_check_reads_the_kept_index_not_the_store(pg_database: Any) -> None:
    """Over the async store too, a write's repeats are looked up in the kept
    index (refreshed from a worker thread): the store is asked no search of
    the written type, and the repeat is still found."""
    async with AsyncPostgresStore.from_conn_string(pg_database.conninfo) as store:
        await _setup(store, True)
        await BaseStoreMemory(store, U1).aput_many(seed())
        middleware = PoolSplitMemoryMiddleware(POOLS, namespace=U1, now=NOW, write=WriteConfig(remember=False))
        backend = backend_for(store, middleware.settings)
        await backend.asnapshot([U1], CONTEXT, plan := Plan(list(POOLS)))
        asked = record_abatch(store)
        kept = await backend.awrite([U1], [{"id": "again", "type": "note", "content": "deploy note 4"}])
        assert kept == ["note-04"]  # the repeat of a stored note, kept once
        assert [op for op in asked if isinstance(op, SearchOp)] == []
        snap = await backend.asnapshot([U1], CONTEXT, plan)
        assert "again" not in [e["id"] for e in snap.prepared.entries()]


@contextlib.contextmanager
def _fails_instead_of_hanging(seconds: float) -> Iterator[None]:
    """A deadlock blocks the loop (no timeout of its own can fire): the
    process dumps its threads and exits, so the test fails."""
    faulthandler.dump_traceback_later(seconds, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


async def test_concurrent_ranked_async_turns_never_wait_for_the_kept_corrections_on_the_loop(pg_database: Any) -> None:
    """Many turns at once over an indexed async store: one turn's refresh
    holds the kept corrections' lock in a worker while it waits for the
    loop; another turn must not take that lock on the loop (it did: the
    corrections' items were read there, and both waited forever)."""
    index = {"dims": 256, "embed": HashedNgramEmbeddings(), "fields": ["content"]}
    async with AsyncPostgresStore.from_conn_string(pg_database.conninfo, index=index) as store:
        middleware, backend, plan = await _seeded(store, recall=RecallConfig(fetch_k=3))
        with _fails_instead_of_hanging(90):
            for _ in range(10):
                snaps = await asyncio.gather(*(backend.asnapshot([U1], CONTEXT, plan) for _ in range(12)))
                for snap in snaps:
                    got = await backend.aselect(snap, [U1], CONTEXT, plan)
                    assert sorted(c.entry["id"] for c in got.chosen if c.entry.get("scope") == "always") == [
                        "fix-0",
                        "fix-1",
                        "fix-2",
                    ]


async def test_more_concurrent_demoting_runs_than_default_executor_threads_all_finish(pg_database: Any) -> None:
    """Our blocking waits on the store's loop ran on the loop's default
    executor; LangGraph embeds through that executor too (an Embeddings
    without native async), while it holds the store's one connection. With
    more demoting runs at once than the executor has threads, every thread
    waited on the connection and the embedding that would free it never ran."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    users = 12  # the default executor has min(32, cores + 4) threads: 6 on this machine's 2 cores
    index = {"dims": 64, "embed": DeterministicFakeEmbedding(size=64), "fields": ["content"]}
    async with AsyncPostgresStore.from_conn_string(pg_database.conninfo, index=index) as store:
        await _setup(store, True)
        for u in range(users):
            await BaseStoreMemory(store, ("memories", "u%d" % u)).aput(fix(0, "Correction of user %d." % u))
        middleware = PoolSplitMemoryMiddleware(
            POOLS,
            namespace=lambda runtime: ("memories", runtime.context["user_id"]),
            max_turns=1,
            write=WriteConfig(remember=False),
        )

        async def user(u: int) -> None:
            agent = create_agent(
                ToolCallingFakeModel(), middleware=[middleware], checkpointer=InMemorySaver(), store=store
            )
            for n in range(3):
                await agent.ainvoke(
                    {"messages": [HumanMessage("refund order %d of user %d" % (n, u))]},
                    thread("t%d" % u),
                    context={"user_id": "u%d" % u},
                )

        with _fails_instead_of_hanging(120):
            await asyncio.gather(*(user(u) for u in range(users)))
        for u in range(users):
            stored = await BaseStoreMemory(store, ("memories", "u%d" % u)).aentries()
            assert sum(1 for e in stored if e["type"] == "episode") == 4  # the two older turns, demoted: two sides each


async def test_an_async_select_never_sees_another_turns_refresh_half_applied(pg_database: Any, monkeypatch) -> None:
    """A refresh runs in a worker and updates the kept index in place
    (remove, then extend); a select meanwhile waits for it to finish
    (slowed here between the two steps, where a thread switch may fall)."""
    with PostgresStore.from_conn_string(pg_database.conninfo) as other:
        async with AsyncPostgresStore.from_conn_string(pg_database.conninfo) as store:
            middleware, backend, plan = await _seeded(store)
            snap = await backend.asnapshot([U1], CONTEXT, plan)
            BaseStoreMemory(other, U1).put(fix(0, "Correction 0, reworded."))
            original = MemoryIndex.remove

            def slow_remove(self: MemoryIndex, entry: Any) -> None:
                original(self, entry)
                time.sleep(0.5)

            monkeypatch.setattr(MemoryIndex, "remove", slow_remove)
            with _fails_instead_of_hanging(60):
                refreshing = asyncio.create_task(backend.asnapshot([U1], CONTEXT, plan))
                await asyncio.sleep(0.3)  # the refresh is between its remove and its extend
                got = await backend.aselect(snap, [U1], CONTEXT, plan)
                await refreshing
            assert sorted(c.entry["id"] for c in got.chosen if c.entry.get("scope") == "always") == [
                "fix-0",
                "fix-1",
                "fix-2",
            ]


async def test_an_async_agent_with_pools_auto_reads_the_stores_types_off_the_loop(pg_database: Any) -> None:
    """``pools="auto"`` asks the store which types it holds (a sync read):
    over the async store it was made on the loop, which LangGraph refuses."""
    async with AsyncPostgresStore.from_conn_string(pg_database.conninfo) as store:
        await _setup(store, True)
        await BaseStoreMemory(store, U1).aput_many(seed())
        middleware = PoolSplitMemoryMiddleware(
            "auto",
            namespace=U1,
            now=NOW,
            recall=RecallConfig(total_tokens=500, total_entries=10),
            write=WriteConfig(remember=False),
        )
        model = ToolCallingFakeModel()
        agent = create_agent(model, middleware=[middleware], checkpointer=InMemorySaver(), store=store)
        with _fails_instead_of_hanging(60):
            await agent.ainvoke({"messages": [HumanMessage("deploy?")]}, thread("t1"))
        assert fixes_shown(model) == [("fix-%d" % n, "Correction %d." % n) for n in range(3)]
