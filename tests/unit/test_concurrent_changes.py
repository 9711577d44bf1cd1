"""Writers of one namespace at once: a changed fact keeps one active value.

Found by an adversarial run: a LangGraph store has no transaction, so
writers that changed one fact at the same time each read the same active
version, each closed it with their own newer value, and every newer value
stayed active (8 coroutines over ``AsyncSqliteStore``: all 8; 8 threads over
``SqliteStore``: up to 3). Recall then loaded a stale value as readily as
the current one. Each writer now links its statement to the one written
just before it: one value active, every other kept in the history.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from typing import Any, Callable

from agent_fakes import ToolCallingFakeModel, UserContext, lookup, thread
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore
from langgraph.store.sqlite.aio import AsyncSqliteStore

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import BaseStoreMemory, PoolSplitMemoryMiddleware, VectorStoreMemory, WriteConfig
from poolsplit_adapters.stores import InProcessStore, SQLiteMemoryStore

ANA = ("memories", "ana")
OLD = "The launch is on March 3."
WRITERS = 8


def moved(n: int) -> str:
    return "The launch moved to March %d." % (10 + n)


def launch_facts(entries: list[dict[str, Any]]) -> tuple[list[str], int]:
    """The active launch facts, and how many versions were stored."""
    facts = [e for e in entries if e["type"] == "fact" and "launch" in e["content"]]
    return [e["content"] for e in facts if not e.get("superseded_by")], len(facts)


def test_threads_changing_one_fact_over_sqlite_store_leave_one_value_active(tmp_path):
    conn = sqlite3.connect(str(tmp_path / "store.db"), check_same_thread=False, isolation_level=None)
    store = SqliteStore(conn)
    store.setup()
    BaseStoreMemory(store, ANA).write([{"type": "fact", "said_by": "user", "content": OLD}])

    def writer(n: int, barrier: threading.Barrier) -> None:
        memory = BaseStoreMemory(store, ANA)  # each thread its own, as each request's would be
        barrier.wait()
        memory.write([{"type": "fact", "said_by": "user", "content": moved(n)}])

    assert at_once(writer, WRITERS) == []
    active, versions = launch_facts(BaseStoreMemory(store, ANA).entries())
    assert len(active) == 1 and active[0] in {moved(n) for n in range(WRITERS)}
    assert versions == WRITERS + 1  # nothing lost: every value is a version of the history


def test_coroutines_changing_one_fact_over_async_sqlite_store_leave_one_value_active(tmp_path):
    async def run() -> tuple[list[str], int]:
        async with AsyncSqliteStore.from_conn_string(str(tmp_path / "store.db")) as store:
            await store.setup()
            await BaseStoreMemory(store, ANA).awrite([{"type": "fact", "said_by": "user", "content": OLD}])
            await asyncio.gather(
                *(
                    BaseStoreMemory(store, ANA).awrite([{"type": "fact", "said_by": "user", "content": moved(n)}])
                    for n in range(WRITERS)
                )
            )
            return launch_facts(await BaseStoreMemory(store, ANA).aentries())

    active, versions = asyncio.run(run())
    assert active == [moved(WRITERS - 1)]  # the loop runs the writers in order: the last one's value
    assert versions == WRITERS + 1


def test_threads_of_one_user_stating_a_changed_fact_at_once_through_the_agent_leave_one_value(tmp_path):
    """The agent path: six threads of Ana's, each saying the launch moved,
    at once (``ainvoke`` on one loop, over ``AsyncSqliteStore``)."""

    async def run() -> tuple[list[str], int]:
        async with AsyncSqliteStore.from_conn_string(str(tmp_path / "store.db")) as store:
            await store.setup()
            await BaseStoreMemory(store, ANA).awrite([{"type": "fact", "said_by": "user", "content": OLD}])
            memory = PoolSplitMemoryMiddleware(
                [Pool("fixes", 0, 0, ("correction",)), Pool("facts", 300, 10, ("fact", "instruction", "preference"))],
                namespace=lambda rt: ("memories", rt.context["user_id"]),
                write=WriteConfig(remember=False),
            )
            agent = create_agent(
                ToolCallingFakeModel(),
                tools=[lookup],
                middleware=[memory],
                checkpointer=InMemorySaver(),
                store=store,
                context_schema=UserContext,
            )
            await asyncio.gather(
                *(
                    agent.ainvoke({"messages": [("user", moved(n))]}, thread("t%d" % n), context={"user_id": "ana"})
                    for n in range(6)
                )
            )
            return launch_facts(await BaseStoreMemory(store, ANA).aentries())

    active, versions = asyncio.run(run())
    assert len(active) == 1 and active[0] in {moved(n) for n in range(6)}
    assert versions == 7


def at_once(writer: Callable[[int, threading.Barrier], None], count: int) -> list[BaseException]:
    """``count`` threads run ``writer(n, barrier)`` (which waits at the
    barrier, so that they write at once); what any of them raised."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            writer(n, barrier)
        except BaseException as err:  # pragma: no cover - reported by the caller
            errors.append(err)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def _write_at_once(make: Any, writers: int, rounds: int) -> list[BaseException]:
    """``writers`` threads (each with the store ``make()`` gives it) write, at
    once, a changed value of one fact and the same note, ``rounds`` times."""

    def writer(n: int, barrier: threading.Barrier) -> None:
        store = make()
        barrier.wait()
        for r in range(rounds):
            store.write([{"type": "fact", "namespace": "ana", "source": "t%d" % n, "content": moved(n * 10 + r)}])
            store.write([{"type": "note", "namespace": "ana", "source": "t%d" % n, "content": "Ana is on call."}])

    return at_once(writer, writers)


def test_threads_writing_one_fact_and_one_note_to_our_own_stores_leave_one_of_each_active(tmp_path):
    """Found by an adversarial run: the write read the store (repeats, the
    version a statement changes) outside the transaction that wrote it, so
    writers at once on one SQLiteMemoryStore file (a store each, or one
    shared) or one InProcessStore each wrote the note and each left its fact
    active: 4 writers, 20 rounds left 4 to 25 active values of one fact."""
    path = tmp_path / "memory.db"
    shared_file, shared_index = SQLiteMemoryStore(path), InProcessStore()
    for make in (lambda: SQLiteMemoryStore(path), lambda: shared_file, lambda: shared_index):
        store = make()
        store.forget(namespace="ana")
        assert _write_at_once(make, 4, 10) == []
        entries = store.entries("ana")
        active = [e for e in entries if not e.get("superseded_by")]
        assert sorted(e["type"] for e in active) == ["fact", "note"], [e["content"] for e in active]
        # nothing lost: every value is a version, every repeat a sighting of the one note
        assert sum(e["type"] == "fact" for e in entries) == 40
        [note] = [e for e in entries if e["type"] == "note"]
        assert {note["source"]} | {s["source"] for s in note.get("seen", [])} == {"t0", "t1", "t2", "t3"}


def test_forget_takes_what_another_writer_added_between_its_read_and_its_commit(tmp_path):
    """``forget(namespace=...)`` read the namespace, then deleted what it
    read: an entry another process wrote in between survived "forget me".
    Its change is now checked against the version it read (``Overtaken``:
    read again), as a write's is."""
    path = tmp_path / "memory.db"
    other = SQLiteMemoryStore(path)  # another process's store, in effect
    other.add([{"type": "note", "namespace": "ana", "content": "Ana likes tea."}])

    class Interleaved(SQLiteMemoryStore):
        raced = False

        def read(self, ids=None, namespace=None):
            found = super().read(ids, namespace)
            if namespace == "ana" and not self.raced:
                self.raced = True
                other.add([{"type": "note", "namespace": "ana", "content": "Ana lives in Lisbon."}])
            return found

    store = Interleaved(path)
    assert store.forget(namespace="ana") == 2
    assert store.entries("ana") == [] and other.entries("ana") == []


class SlowPuts(InMemoryStore):
    """LangGraph's own in-memory store whose writes take a while (as a
    server's round trip does): every reader of a fact has read it before
    the first writer's puts land."""

    delay = 0.05

    def batch(self, ops: Any) -> Any:
        ops = list(ops)
        if any(isinstance(op, PutOp) for op in ops):
            time.sleep(self.delay)
        return super().batch(ops)

    async def abatch(self, ops: Any) -> Any:
        ops = list(ops)
        if any(isinstance(op, PutOp) for op in ops):
            await asyncio.sleep(self.delay)
        return await super().abatch(ops)


def superseded_once(memory: Any, outcomes: list[Any]) -> None:
    """One supersede of ``f0`` won; each other one was refused naming the
    winner (its caller supersedes that one); one version active."""
    won = [o for o in outcomes if isinstance(o, str)]
    assert len(won) == 1, outcomes
    refused = [str(o) for o in outcomes if not isinstance(o, str)]
    assert refused == ["entry 'f0' is already superseded by %r; supersede that one" % won[0]] * (WRITERS - 1)
    entries = {e["id"]: e for e in memory.entries()}
    assert [i for i, e in entries.items() if not e.get("superseded_by")] == won
    assert entries["f0"]["superseded_by"] == won[0] and entries[won[0]]["supersedes"] == "f0"
    assert sorted(entries) == sorted(["f0", *won])  # no version of a loser was written


def test_threads_superseding_one_entry_at_once_leave_one_version_active():
    """``supersede`` read the old version, then put both versions: threads
    superseding one fact at once each closed it with their own value, and
    every new value stayed active (found by a hostile run: 8 of 8, with a
    fact saying it was superseded by one of them only)."""
    store = SlowPuts()
    BaseStoreMemory(store, ANA).add([{"id": "f0", "type": "fact", "content": OLD}])
    outcomes: list[Any] = [None] * WRITERS

    def writer(n: int, barrier: threading.Barrier) -> None:
        barrier.wait()
        try:
            outcomes[n] = BaseStoreMemory(store, ANA).supersede("f0", {"id": "f%d" % (n + 1), "content": moved(n)})
        except ValueError as err:
            outcomes[n] = err

    assert at_once(writer, WRITERS) == []
    superseded_once(BaseStoreMemory(store, ANA), outcomes)


def test_coroutines_superseding_one_entry_at_once_leave_one_version_active():
    store = SlowPuts()
    BaseStoreMemory(store, ANA).add([{"id": "f0", "type": "fact", "content": OLD}])

    async def run() -> list[Any]:
        async def one(n: int) -> Any:
            new = {"id": "f%d" % (n + 1), "content": moved(n)}
            return await BaseStoreMemory(store, ANA).asupersede("f0", new)

        return list(await asyncio.gather(*(one(n) for n in range(WRITERS)), return_exceptions=True))

    superseded_once(BaseStoreMemory(store, ANA), asyncio.run(run()))


def active_chain_ends(entries: list[dict[str, Any]]) -> tuple[list[str], bool]:
    """The launch fact's active versions, and whether following
    ``superseded_by`` from every version ends (no cycle)."""
    by_id = {e["id"]: e for e in entries}
    ends = True
    for start in by_id:
        seen, at = set(), start
        while at in by_id and by_id[at].get("superseded_by"):
            if at in seen:
                ends = False
                break
            seen.add(at)
            at = by_id[at]["superseded_by"]
    active = [e["id"] for e in entries if e["type"] == "fact" and not e.get("superseded_by")]
    return active, ends


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["supersede", "write", "delete"]), min_size=2, max_size=6))
def test_any_mix_of_concurrent_changes_of_one_fact_keeps_at_most_one_version_active_and_no_cycle(kinds):
    """Threads superseding, restating (the write path's change) and deleting
    one fact at once: whatever the mix, at most one version is active,
    every ``superseded_by`` chain ends, and no supersede that returned
    lost its version (unless a delete took it)."""
    store = SlowPuts()
    store.delay = 0.005
    BaseStoreMemory(store, ANA).add([{"id": "v0", "type": "fact", "content": OLD}])
    returned: list[str] = []

    def newest(memory: BaseStoreMemory) -> str:
        active, _ = active_chain_ends(memory.entries())
        return active[0] if active else "v0"

    def writer(n: int, barrier: threading.Barrier) -> None:
        memory = BaseStoreMemory(store, ANA)
        barrier.wait()
        try:
            if kinds[n] == "supersede":
                new = {"id": "v%d" % (n + 1), "type": "fact", "content": moved(n)}
                returned.append(memory.supersede(newest(memory), new))
            elif kinds[n] == "write":
                memory.write([{"type": "fact", "said_by": "user", "content": moved(n)}])
            else:
                memory.delete(newest(memory))
        except (KeyError, ValueError):
            pass  # refused: superseded or deleted meanwhile (the caller reads again)

    assert at_once(writer, len(kinds)) == []
    entries = BaseStoreMemory(store, ANA).entries()
    active, ends = active_chain_ends(entries)
    assert len(active) <= 1 and ends, entries
    if "delete" not in kinds:
        assert set(returned) <= {e["id"] for e in entries}


class SlowVectorStore(InMemoryVectorStore):
    """LangChain's in-memory vector store whose writes take a while."""

    def add_documents(self, documents: Any, **kwargs: Any) -> Any:
        time.sleep(0.05)
        return super().add_documents(documents, **kwargs)

    async def aadd_documents(self, documents: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0.05)
        return await super().aadd_documents(documents, **kwargs)


def test_threads_superseding_one_entry_of_a_vector_store_at_once_leave_one_version_active():
    """``VectorStoreMemory`` read the version it closed, then wrote: four
    memories over one ``InMemoryVectorStore`` superseding one fact at once
    left all four new values active (``PGVector`` alone held, by its id
    claims)."""
    store = SlowVectorStore(DeterministicFakeEmbedding(size=16))
    VectorStoreMemory(store).add([{"id": "f0", "type": "fact", "content": OLD}])
    outcomes: list[Any] = [None] * WRITERS

    def writer(n: int, barrier: threading.Barrier) -> None:
        barrier.wait()
        try:
            outcomes[n] = VectorStoreMemory(store).supersede("f0", {"id": "f%d" % (n + 1), "content": moved(n)})
        except ValueError as err:
            outcomes[n] = err

    assert at_once(writer, WRITERS) == []
    superseded_once(VectorStoreMemory(store), outcomes)


def test_coroutines_superseding_one_entry_of_a_vector_store_at_once_leave_one_version_active():
    store = SlowVectorStore(DeterministicFakeEmbedding(size=16))
    VectorStoreMemory(store).add([{"id": "f0", "type": "fact", "content": OLD}])

    async def run() -> list[Any]:
        async def one(n: int) -> Any:
            return await VectorStoreMemory(store).asupersede("f0", {"id": "f%d" % (n + 1), "content": moved(n)})

        return list(await asyncio.gather(*(one(n) for n in range(WRITERS)), return_exceptions=True))

    superseded_once(VectorStoreMemory(store), asyncio.run(run()))


_EMBED_DELAY = [0.0]


def test_threads_superseding_one_entry_of_a_llama_index_at_once_leave_one_version_active():
    """``VectorIndexMemory`` held a lock per memory object only: four
    memories over one in-process index superseding one fact at once left
    all four new values active (over ``PGVectorStore`` the ids' locks held)."""
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    from poolsplit_adapters.llama_index.vector_memory import VectorIndexMemory

    class SlowEmbedding(MockEmbedding):
        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            time.sleep(_EMBED_DELAY[0])
            return super()._get_text_embeddings(texts)

    index = VectorStoreIndex([], embed_model=SlowEmbedding(embed_dim=8))
    VectorIndexMemory(index).add([{"id": "f0", "type": "fact", "content": OLD}])
    _EMBED_DELAY[0] = 0.05
    outcomes: list[Any] = [None] * WRITERS

    def writer(n: int, barrier: threading.Barrier) -> None:
        barrier.wait()
        try:
            outcomes[n] = VectorIndexMemory(index).supersede("f0", {"id": "f%d" % (n + 1), "content": moved(n)})
        except ValueError as err:
            outcomes[n] = err

    try:
        assert at_once(writer, WRITERS) == []
    finally:
        _EMBED_DELAY[0] = 0.0
    superseded_once(VectorIndexMemory(index), outcomes)


def _sqlite_store(path: Any) -> SqliteStore:
    """A ``SqliteStore`` of its own on the file at ``path`` (as each process
    of a server would open one)."""
    store = SqliteStore(sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30))
    store.setup()
    return store


def test_threads_each_with_its_own_sqlite_store_on_one_file_leave_one_value_active(tmp_path):
    """Separate ``SqliteStore`` objects on one file (found by a hostile run:
    six threads, each its own store object, left 2 to 3 values active)."""
    path = tmp_path / "store.db"
    BaseStoreMemory(_sqlite_store(path), ANA).write([{"type": "fact", "said_by": "user", "content": OLD}])

    def writer(n: int, barrier: threading.Barrier) -> None:
        memory = BaseStoreMemory(_sqlite_store(path), ANA)
        barrier.wait()
        memory.write([{"type": "fact", "said_by": "user", "content": moved(n)}])

    assert at_once(writer, 6) == []
    active, versions = launch_facts(BaseStoreMemory(_sqlite_store(path), ANA).entries())
    assert len(active) == 1 and active[0] in {moved(n) for n in range(6)}
    assert versions == 7


_PROCESS_WRITER = """
import sqlite3, sys, time
from langgraph.store.sqlite import SqliteStore
from poolsplit_adapters.langchain import BaseStoreMemory
store = SqliteStore(sqlite3.connect(sys.argv[1], check_same_thread=False, isolation_level=None, timeout=30))
store.setup()
memory = BaseStoreMemory(store, ("memories", "ana"))
while time.time() < float(sys.argv[3]):
    time.sleep(0.001)
memory.write([{"type": "fact", "said_by": "user", "content": sys.argv[2]}])
"""


def test_processes_each_with_its_own_sqlite_store_on_one_file_leave_one_value_active(tmp_path):
    """Server processes sharing one ``SqliteStore`` file: a file lock
    beside SQLite's own (no file of its own) makes their changes take turns."""
    import subprocess
    import sys

    path = tmp_path / "store.db"
    BaseStoreMemory(_sqlite_store(path), ANA).write([{"type": "fact", "said_by": "user", "content": OLD}])
    start = str(time.time() + 4.0)  # every process imported and waiting by then, then all write at once
    procs = [
        subprocess.Popen([sys.executable, "-c", _PROCESS_WRITER, str(path), moved(n), start], stderr=subprocess.PIPE)
        for n in range(4)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errors
    active, versions = launch_facts(BaseStoreMemory(_sqlite_store(path), ANA).entries())
    assert len(active) == 1 and active[0] in {moved(n) for n in range(4)}
    assert versions == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.db"]  # no lock file beside it
