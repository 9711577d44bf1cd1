"""Two writers of the same content race (check, then add): the loser's write
is a ``duplicate``, counted, never an error out of ``agent.invoke``.

The race is forced, not hoped for: both workers' stores wait at a barrier
after the write gate's duplicate check and before the commit, so both see
the content absent and both write. Two workers (two middlewares, each with its own
connection to one SQLite file, as two server processes would have) run two
threads of one user through real ``create_agent`` agents.
"""

from __future__ import annotations

import datetime
import threading
from typing import Any, Dict, List, Optional, Sequence

import pytest
from agent_fakes import ToolCallingFakeModel, scripted_agent, thread
from langchain_core.messages import ToolMessage

from poolsplit_adapters import EntryError, Pool
from poolsplit_adapters.langchain import SELECTION_EVENT, PoolSplitMemoryMiddleware, RecallConfig
from poolsplit_adapters.poolsplit import default_token_counter
from poolsplit_adapters.stores import Change, DuplicateEntry, InProcessStore, SQLiteMemoryStore

NOW = datetime.datetime(2026, 7, 1, 8, 30)
POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("notes", 300, 5, ("note", "episode"))]


class RacingStore(SQLiteMemoryStore):
    """The real SQLite store; while :attr:`barrier` is set, a write waits for
    the other worker's right before it commits, after its duplicate check:
    both checks saw the content absent, and both write."""

    barrier: Optional[threading.Barrier] = None

    def _commit_tracked(self, change: Change) -> None:
        if change.insert and self.barrier is not None:
            self.barrier.wait(timeout=20)
        super()._commit_tracked(change)


def worker(path: Any, **options: Any) -> tuple[RacingStore, Any]:
    store = RacingStore(path)
    middleware = PoolSplitMemoryMiddleware(
        POOLS,
        namespace=("memories", "ana"),
        store=store,
        now=NOW,
        **options,
        recall=RecallConfig(token_counter=default_token_counter),
    )
    return store, scripted_agent(middleware, model=ToolCallingFakeModel())


def turn(agent: Any, text: str, thread_id: str) -> Dict[str, Any]:
    """One turn: the selection events, the remember tool's answers, the messages."""
    events, last = [], None
    for mode, chunk in agent.stream(
        {"messages": [("user", text)]}, thread(thread_id), stream_mode=["custom", "values"]
    ):
        if mode == "custom":
            events.append(chunk[SELECTION_EVENT])
        else:
            last = chunk
    assert last is not None
    answers = [str(m.text) for m in last["messages"] if isinstance(m, ToolMessage) and m.name == "remember"]
    return {"events": events, "answers": answers, "messages": last["messages"]}


def race(stores: Sequence[RacingStore], runs: Sequence[Any]) -> List[Dict[str, Any]]:
    """Run ``runs`` in two threads at once, both duplicate checks done
    before either write; what each returned (an exception fails the test)."""
    barrier = threading.Barrier(len(runs))
    for store in stores:
        store.barrier = barrier
    results: List[Any] = [None] * len(runs)

    def run(n: int) -> None:
        try:
            results[n] = runs[n]()
        except BaseException as err:  # reported below, with its type
            results[n] = err

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(runs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    for store in stores:
        store.barrier = None
    for got in results:
        assert not isinstance(got, BaseException), "escaped agent.invoke: %s: %s" % (type(got).__name__, got)
    return results


def test_two_threads_demoting_the_same_turn_write_it_once_and_count_a_duplicate(tmp_path):
    path = tmp_path / "memory.db"
    (a_store, a), (b_store, b) = worker(path, max_turns=1), worker(path, max_turns=1)
    answers = set()
    for agent, thread_id in ((a, "t-a"), (b, "t-b")):
        # nothing to demote yet; a question states no fact (a fact's tally, written when
        # the run ends, would show in the next turn's event beside the demotion's)
        done = turn(agent, "When does the staging deploy run?", thread_id)
        answers |= {m.text for m in done["messages"] if m.type == "ai"}
    [answer] = answers  # both threads said the same: the same content to demote
    first, second = race(
        [a_store, b_store],
        [lambda: turn(a, "And production?", "t-a"), lambda: turn(b, "And production?", "t-b")],
    )
    writes = sorted([first["events"][0]["writes"], second["events"][0]["writes"]], key=str)
    assert writes == [{"written": 0, "refused": {"duplicate": 2}}, {"written": 2, "refused": {}}]  # two sides
    episodes = sorted(e["content"] for e in a_store.entries() if e["type"] == "episode")
    assert episodes == ["assistant: " + answer, "user: When does the staging deploy run?"]
    for got in (first, second):  # the demoted answer left both working sets: it is stored (recallable)
        assert answer not in [m.text for m in got["messages"]]


def test_two_threads_remembering_the_same_note_save_it_once_and_count_a_duplicate(tmp_path):
    path = tmp_path / "memory.db"
    (a_store, a), (b_store, b) = worker(path), worker(path)
    first, second = race(
        [a_store, b_store],
        [
            lambda: turn(a, "remember=Refunds go through billing", "t-a"),
            lambda: turn(b, "remember=refunds go through  billing", "t-b"),
        ],
    )
    [note] = [e for e in a_store.entries() if e["type"] == "note"]
    answers = sorted([*first["answers"], *second["answers"]])
    assert answers == [
        "Not saved (duplicate): this note is already saved as %s." % note["id"],
        "Saved as %s." % note["id"],
    ]
    writes = sorted([first["events"][-1]["writes"], second["events"][-1]["writes"]], key=str)
    assert writes == [{"written": 0, "refused": {"duplicate": 1}}, {"written": 1, "refused": {}}]


async def test_the_async_path_counts_a_raced_duplicate_too(tmp_path):
    from poolsplit_adapters.langchain.backends import backend_for
    from poolsplit_adapters.settings import AgentMemorySettings

    store = SQLiteMemoryStore(tmp_path / "memory.db")
    other = SQLiteMemoryStore(tmp_path / "memory.db")
    other.add([{"id": "n-1", "content": "Refunds go through billing.", "type": "note"}])
    sink = backend_for(store, AgentMemorySettings.held_by("test", pools=list(POOLS), now=NOW))
    entries = [
        {"id": "n-0", "content": "a", "type": "note"},
        {"id": "n-1", "content": "Refunds go through billing.", "type": "note"},
    ]
    assert await sink.awrite((("memories", "ana"),), entries) == [None, "n-1"]
    assert {e["id"]: e["content"] for e in store.entries()} == {"n-1": "Refunds go through billing.", "n-0": "a"}


@pytest.mark.parametrize("make", [lambda p: SQLiteMemoryStore(p / "m.db"), lambda p: InProcessStore()])
def test_an_add_of_a_stored_id_with_other_text_is_a_typed_duplicate_and_writes_nothing(tmp_path, make):
    """The same id with the same text is a repeat (kept once); with other
    text it is a DuplicateEntry naming the id (use supersede), and nothing
    of the batch is written."""
    store = make(tmp_path)
    store.add([{"id": "a", "content": "x"}, {"id": "b", "content": "y"}])
    version = store.version
    with pytest.raises(DuplicateEntry) as caught:
        store.add([{"id": "c", "content": "z"}, {"id": "b", "content": "y"}, {"id": "a", "content": "q"}])
    err = caught.value
    assert isinstance(err, EntryError) and (err.ids, err.entry_id, err.field) == (("a",), "a", "id")
    assert (
        err.index == 2
        and str(err) == "entry 'a' (index 2): field 'id' is already in the store (use supersede to replace it)"
    )
    assert sorted(e["id"] for e in store.entries()) == ["a", "b"] and store.version == version
    report = store.write([{"id": "c", "content": "z"}, {"id": "b", "content": "y"}])
    assert report.kept == [None, "b"] and sorted(e["id"] for e in store.entries()) == ["a", "b", "c"]


def test_a_sqlite_insert_of_an_id_another_connection_stored_is_refused_by_the_primary_key(tmp_path):
    """Two connections to one file: the second's add is checked inside its
    write transaction, so no writer can slip in between a check and the
    write."""
    one, two = SQLiteMemoryStore(tmp_path / "m.db"), SQLiteMemoryStore(tmp_path / "m.db")
    one.add([{"id": "a", "content": "first"}])
    with pytest.raises(DuplicateEntry) as caught:
        two.add([{"id": "a", "content": "second"}])
    assert caught.value.ids == ("a",)
    assert [e["content"] for e in two.entries()] == ["first"] and two.version == one.version == 1


def test_a_change_whose_version_another_writer_closed_first_is_linked_to_the_newer_one(tmp_path):
    # Writer A derives "March 3 -> March 12"; before its commit, writer B (another
    # connection, as another process) closes March 3 with March 9. A's write is derived
    # again and links to March 9: one current value, one history (it stayed active beside it).
    class Overtaken(SQLiteMemoryStore):
        first: Any = None

        def _commit_tracked(self, change: Change) -> None:
            if self.first is not None:
                other, self.first = self.first, None
                other()
            super()._commit_tracked(change)

    a, b = Overtaken(tmp_path / "m.db"), SQLiteMemoryStore(tmp_path / "m.db")
    fact = {"type": "fact", "namespace": "u1"}
    a.write([{**fact, "id": "f3", "content": "The launch is on March 3."}])
    a.first = lambda: b.write([{**fact, "id": "f9", "content": "The launch is on March 9."}])
    a.write([{**fact, "id": "f12", "content": "The launch is on March 12."}])
    stored = {e["id"]: e.get("superseded_by") for e in SQLiteMemoryStore(tmp_path / "m.db").entries()}
    assert stored == {"f3": "f9", "f9": "f12", "f12": None}
    assert [v.entry["id"] for v in b.history("f12")] == ["f3", "f9", "f12"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_langgraph_store_write_overtaken_the_same_way_links_too_sync_and_async(mode):
    # The async write raised "entry 'f3' is already superseded by 'f9'" out of the agent's
    # run and wrote nothing of March 12; the sync one linked it.
    import asyncio

    from langgraph.store.memory import InMemoryStore

    from poolsplit_adapters.langchain import BaseStoreMemory

    class Overtaken(BaseStoreMemory):
        first: Any = None

        def _overtake(self) -> None:
            if self.first is not None:
                other, self.first = self.first, None
                other()

        async def acommit(self, change: Change) -> None:
            self._overtake()
            await super().acommit(change)

        def _commit_tracked(self, change: Change) -> None:
            self._overtake()
            super()._commit_tracked(change)

    backing = InMemoryStore()
    a, b = Overtaken(backing, ("m", "u1")), BaseStoreMemory(backing, ("m", "u1"))
    a.write([{"type": "fact", "id": "f3", "content": "The launch is on March 3."}])
    a.first = lambda: b.write([{"type": "fact", "id": "f9", "content": "The launch is on March 9."}])
    last = [{"type": "fact", "id": "f12", "content": "The launch is on March 12."}]
    asyncio.run(a.awrite(last)) if mode == "async" else a.write(last)
    assert {e["id"]: e.get("superseded_by") for e in b.entries()} == {"f3": "f9", "f9": "f12", "f12": None}
