"""The middleware's kept index over LangGraph's PostgresStore (a real
Postgres): the watermark (the change counter's triggers when installed, the
server-side digest otherwise) sees what another connection wrote between
turns, and the kept selection is a fresh recall's."""

from __future__ import annotations

from typing import Any, List

import pytest
from agent_fakes import ToolCallingFakeModel, thread
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import SearchOp
from pg_embeddings import HashedNgramEmbeddings
from prepared_seed import AFTER_OTHERS, NOW, POOLS, U1, assert_a_fresh_recalls, fix, fixes_shown, others_writes, seed

from poolsplit_adapters.langchain import BaseStoreMemory, PoolSplitMemoryMiddleware, RecallConfig, WriteConfig
from poolsplit_adapters.langchain.backends import backend_for
from poolsplit_adapters.stores.langgraph.backends import Plan
from poolsplit_adapters.stores.langgraph.prepared import watermark
from poolsplit_adapters.stores.postgres import install_change_counter

PostgresStore = pytest.importorskip("langgraph.store.postgres").PostgresStore


def _setup(store: Any, counted: bool) -> None:
    store.setup()
    if counted:
        install_change_counter(store)


def _seeded_agent(store: Any, counted: bool) -> Any:
    """(model, agent): the store set up and seeded, an agent with the
    middleware over it, after its first turn."""
    _setup(store, counted)
    BaseStoreMemory(store, U1).put_many(seed())
    model = ToolCallingFakeModel()
    middleware = PoolSplitMemoryMiddleware(POOLS, namespace=U1, now=NOW, write=WriteConfig(remember=False))
    agent = create_agent(model, middleware=[middleware], checkpointer=InMemorySaver(), store=store)
    agent.invoke({"messages": [HumanMessage("deploy?")]}, thread("t1"))
    return model, agent


@pytest.mark.parametrize("counted", [False, True], ids=["digest", "change-counter"])
def test_the_next_turn_sees_what_another_connection_wrote(pg_database: Any, counted: bool) -> None:
    with (
        PostgresStore.from_conn_string(pg_database.conninfo) as mine,
        PostgresStore.from_conn_string(pg_database.conninfo) as other,
    ):
        model, agent = _seeded_agent(mine, counted)
        assert fixes_shown(model) == [("fix-%d" % n, "Correction %d." % n) for n in range(3)]
        mark = watermark(mine, [U1])
        assert mark[0] == ("pgchanges" if counted else "postgres")
        others_writes(other)
        assert watermark(mine, [U1]) != mark
        agent.invoke({"messages": [HumanMessage("and now?")]}, thread("t1"))
        assert fixes_shown(model) == AFTER_OTHERS


@pytest.mark.parametrize("counted", [False, True], ids=["digest", "change-counter"])
def test_the_kept_selection_is_a_fresh_recalls_after_every_write(pg_database: Any, counted: bool) -> None:
    with (
        PostgresStore.from_conn_string(pg_database.conninfo) as mine,
        PostgresStore.from_conn_string(pg_database.conninfo) as other,
    ):
        _setup(mine, counted)
        writer = BaseStoreMemory(other, U1)
        writer.put_many(seed())
        middleware = PoolSplitMemoryMiddleware(POOLS, namespace=U1, now=NOW, write=WriteConfig(remember=False))
        backend = backend_for(mine, middleware.settings)
        plan, context = Plan(list(POOLS)), {"message": "deploy", "tags": [], "project": None}
        writes = [
            lambda: None,
            lambda: writer.put({"id": "note-05", "type": "note", "content": "deploy note five, rewritten"}),
            lambda: backend.write([U1], [{"id": "ep-1", "type": "episode", "content": "deploy episode"}]),
            lambda: other.delete(U1, "note-00"),
            lambda: writer.put(fix(0, "Correction 0, reworded.")),
        ]
        for write in writes:
            write()
            snap = backend.snapshot([U1], context, plan)
            got = backend.select(snap, [U1], context, plan)
            assert_a_fresh_recalls(got, mine, middleware.settings, context)
            reads = snap.prepared.reads
            assert backend.snapshot([U1], context, plan).version == snap.version
            assert snap.prepared.reads == reads  # unchanged: the watermark only


def test_the_change_counter_moves_for_every_writer_and_is_one_lookup(pg_database: Any) -> None:
    """Installed, the watermark is the namespace's counter: another
    connection's insert, rewrite, delete and a TRUNCATE each move it, a
    child namespace's write does not, and the query is a primary-key lookup
    (no scan of the store table), whatever the namespace's size."""
    with (
        PostgresStore.from_conn_string(pg_database.conninfo) as mine,
        PostgresStore.from_conn_string(pg_database.conninfo) as other,
    ):
        mine.setup()
        BaseStoreMemory(mine, U1).put_many(seed())  # written before the counter: counted from install on
        install_change_counter(mine)
        install_change_counter(mine)  # again: harmless
        marks = [watermark(mine, [U1])]
        writer = BaseStoreMemory(other, U1)
        for write in [
            lambda: writer.put({"id": "note-99", "type": "note", "content": "new"}),
            lambda: writer.put({"id": "note-99", "type": "note", "content": "rewritten"}),
            lambda: other.delete(U1, "note-99"),
            lambda: BaseStoreMemory(other, (*U1, "drafts")).put(fix(9)),  # a child namespace: not ours
        ]:
            write()
            marks.append(watermark(mine, [U1]))
        assert [m[0] for m in marks] == ["pgchanges"] * 5
        assert len({m for m in marks[:4]}) == 4 and marks[4] == marks[3]
        with other._cursor() as cur:
            cur.execute("TRUNCATE store CASCADE")
        assert watermark(mine, [U1]) != marks[4]
        with mine._cursor() as cur:
            from poolsplit_adapters.stores.langgraph.prepared import _PG_CHANGES

            cur.execute("EXPLAIN " + _PG_CHANGES, (["x"], "memories.u1"))
            plan = " ".join(row["QUERY PLAN"] for row in cur.fetchall())
        assert "on store " not in plan and "Index Scan using poolsplit_store_changes_pkey" in plan


def test_a_disabled_trigger_falls_back_to_the_digest(pg_database: Any) -> None:
    """The counter is trusted only with all its triggers enabled: with one
    off, a delete would not move it, so the watermark is the digest again."""
    with PostgresStore.from_conn_string(pg_database.conninfo) as store:
        store.setup()
        install_change_counter(store)
        assert watermark(store, [U1])[0] == "pgchanges"
        with store._cursor() as cur:
            cur.execute("ALTER TABLE store DISABLE TRIGGER poolsplit_store_changes_delete")
        assert watermark(store, [U1])[0] == "postgres"


def test_a_write_in_a_replica_session_moves_the_counter_and_the_next_turn_sees_it(pg_database: Any) -> None:
    """session_replication_role = replica (a logical replication apply
    worker, a restore tool) skips triggers enabled for origin sessions only:
    the counter did not move and the middleware kept loading the old
    corrections. The triggers fire ALWAYS; ones that do not are not trusted."""
    with PostgresStore.from_conn_string(pg_database.conninfo) as mine:
        model, agent = _seeded_agent(mine, True)
        mark = watermark(mine, [U1])
        assert mark[0] == "pgchanges"
        replica = PostgresStore(pg_database.connect(options="-c session_replication_role=replica"))
        BaseStoreMemory(replica, U1).put(fix(3, "Correction 3."))
        assert watermark(mine, [U1]) != mark
        agent.invoke({"messages": [HumanMessage("and now?")]}, thread("t1"))
        assert fixes_shown(model)[-1] == ("fix-3", "Correction 3.")
        with mine._cursor() as cur:  # enabled for origin sessions only: not trusted
            cur.execute("ALTER TABLE store ENABLE TRIGGER poolsplit_store_changes_insert")
        assert watermark(mine, [U1])[0] == "postgres"


def test_the_counter_watermark_names_its_database(pg_server: Any) -> None:
    """A database restored from an older copy brings the counters back to
    values a reader may hold: equal counts in another database are another
    watermark, and the middleware's own-write shortcut never bridges them."""
    from poolsplit_adapters.stores.langgraph.prepared import _own_only

    marks = []
    for _ in range(2):
        with PostgresStore.from_conn_string(pg_server.create_database().conninfo) as store:
            _setup(store, True)
            BaseStoreMemory(store, U1).put(fix(0, "Correction 0."))
            marks.append(watermark(store, [U1]))
    assert [m[1][0][0] for m in marks] == [1, 1] and marks[0] != marks[1]
    bumped = ("pgchanges", ((2,) + tuple(marks[1][1][0][1:]),))
    assert _own_only(0, 1, marks[1], bumped) and not _own_only(0, 1, marks[0], bumped)


def test_the_middlewares_own_write_reads_only_its_keys_with_the_counter(pg_database: Any) -> None:
    """A demoting turn's write moves the counter by exactly its rows: the
    next turn reads those keys, not the namespace's digest rows."""
    with PostgresStore.from_conn_string(pg_database.conninfo) as store:
        _setup(store, True)
        BaseStoreMemory(store, U1).put_many(seed())
        middleware = PoolSplitMemoryMiddleware(POOLS, namespace=U1, now=NOW, write=WriteConfig(remember=False))
        backend = backend_for(store, middleware.settings)
        plan, context = Plan(list(POOLS)), {"message": "deploy", "tags": [], "project": None}
        snap = backend.snapshot([U1], context, plan)
        reads = snap.prepared.reads
        backend.write([U1], [{"id": "ep-1", "type": "episode", "content": "deploy episode"}])
        snap = backend.snapshot([U1], context, plan)
        assert snap.prepared.reads == reads + 2  # the written key's row and item, nothing else
        assert "ep-1" in [e["id"] for e in snap.prepared.entries()]


@pytest.mark.parametrize("counted", [False, True], ids=["digest", "change-counter"])
def test_an_indexed_stores_ranked_recall_keeps_its_corrections_with_the_counter(
    pg_database: Any, counted: bool
) -> None:
    """PostgresStore with a vector index (HNSW) and fetch_k: with the change
    counter the corrections come from the kept index (the store is asked
    the ranked searches only), without it they are read by filter (the
    digest would cost as much); either way the selection is a fresh
    recall's, after another connection's writes and the middleware's own."""
    index = {"dims": 256, "embed": HashedNgramEmbeddings(), "fields": ["content"]}
    with (
        PostgresStore.from_conn_string(pg_database.conninfo, index=index) as mine,
        PostgresStore.from_conn_string(pg_database.conninfo, index=index) as other,
    ):
        _setup(mine, counted)
        writer = BaseStoreMemory(other, U1)
        writer.put_many(seed())
        middleware = PoolSplitMemoryMiddleware(
            POOLS, namespace=U1, now=NOW, recall=RecallConfig(fetch_k=3), write=WriteConfig(remember=False)
        )
        backend = backend_for(mine, middleware.settings)
        plan, context = Plan(list(POOLS)), {"message": "deploy", "tags": [], "project": None}
        asked: List[Any] = []
        batch = mine.batch

        def recording(ops: Any) -> Any:
            ops = list(ops)
            asked.extend(ops)
            return batch(ops)

        mine.batch = recording  # type: ignore[method-assign]  # the real store answers; the ops are noted
        writes = [
            lambda: None,
            lambda: writer.put(fix(7)),
            lambda: backend.write([U1], [{"id": "ep-1", "type": "episode", "content": "deploy episode"}]),
            lambda: other.delete(U1, "fix-2"),
            lambda: writer.put(fix(0, "Correction 0, reworded.")),
        ]
        for write in writes:
            write()
            asked.clear()
            got = backend.select(backend.snapshot([U1], context, plan), [U1], context, plan)
            searches = [op for op in asked if isinstance(op, SearchOp)]
            assert [op.query is None for op in searches].count(True) == (0 if counted else 1)
            assert_a_fresh_recalls(got, mine, middleware.settings, context, fetch_k=3)
        fixes = sorted((c.entry["id"], c.entry["content"]) for c in got.chosen if c.entry.get("scope") == "always")
        assert fixes == [("fix-0", "Correction 0, reworded."), ("fix-1", "Correction 1."), ("fix-7", "Correction 7.")]


@pytest.mark.parametrize("reset", ["DROP TABLE poolsplit_store_changes", "TRUNCATE poolsplit_store_changes"])
def test_a_counter_table_reset_and_reinstalled_never_passes_for_nothing_changed(pg_database: Any, reset: str) -> None:
    """The host drops (or empties) the counter table and installs again:
    every counter restarts at 0, and as many writes as a reader's kept
    count brought it back to that count while the items differed; the
    middleware kept loading the corrections it had. The watermark names
    the counter table's storage too (a new one after either)."""
    with (
        PostgresStore.from_conn_string(pg_database.conninfo) as mine,
        PostgresStore.from_conn_string(pg_database.conninfo) as other,
    ):
        model, agent = _seeded_agent(mine, True)
        mark = watermark(mine, [U1])
        kept = mark[1][0][0]
        with other._cursor() as cur:
            cur.execute(reset)
        install_change_counter(other)
        writer = BaseStoreMemory(other, U1)
        for n in range(kept):
            writer.put(fix(0, "Correction 0, version %d." % n))
        assert watermark(mine, [U1])[1][0][0] == kept  # the count alone is the kept one again
        assert watermark(mine, [U1]) != mark
        agent.invoke({"messages": [HumanMessage("and now?")]}, thread("t1"))
        assert fixes_shown(model)[0] == ("fix-0", "Correction 0, version %d." % (kept - 1))
