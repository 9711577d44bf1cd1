"""PGVector's ids are one key space per database, not per collection: its
upsert by id overwrites a row of another collection (keeping that row's
collection). VectorStoreMemory refuses every write of an id another
collection holds, on each write path and on the async store, and leaves that
row untouched; an update of the collection's own id still works. Real
PGVector on the embedded Postgres."""

from __future__ import annotations

import threading
from typing import Any, Iterator, List

import pytest
import sqlalchemy
from agent_fakes import ToolCallingFakeModel, scripted_agent, thread
from langchain_core.messages import ToolMessage
from pg_embeddings import DIMS, HashedNgramEmbeddings
from pg_server import Database
from sqlalchemy.ext.asyncio import create_async_engine

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware, VectorStoreMemory
from poolsplit_adapters.stores import DuplicateEntry, IdHeldElsewhere

PGVector = pytest.importorskip("langchain_postgres").PGVector

BOB_FIX = {"id": "pref-1", "type": "correction", "scope": "always", "content": "Bob: never deploy on Fridays."}
ANA_NOTE = {"id": "pref-1", "type": "note", "content": "Ana: likes dark mode."}
HELD = (
    "entry 'pref-1' (index 0): field 'id' is held by another collection of this database, or another "
    "namespace of this one (PGVector ids are unique per database, not per collection or namespace): give "
    "the entry an id of its own"
)


@pytest.fixture
def engine(pg_database: Database) -> Iterator[sqlalchemy.Engine]:
    engine = sqlalchemy.create_engine(pg_database.url)
    yield engine
    engine.dispose()


def memory(engine: Any, collection: str, embeddings: Any = None) -> VectorStoreMemory:
    store = PGVector(
        embeddings or HashedNgramEmbeddings(), connection=engine, collection_name=collection, embedding_length=DIMS
    )
    return VectorStoreMemory(store)


def text_of(memory: VectorStoreMemory, entry_id: str) -> Any:
    found = memory.get(entry_id)
    return None if found is None else found["content"]


def test_an_id_held_by_another_collection_is_refused_and_its_row_kept(engine):
    bob, ana = memory(engine, "bob"), memory(engine, "ana")
    bob.add([BOB_FIX])
    with pytest.raises(IdHeldElsewhere) as refused:
        ana.add([ANA_NOTE])
    assert str(refused.value) == HELD
    assert isinstance(refused.value, DuplicateEntry) and refused.value.ids == ("pref-1",)
    assert "Bob" not in str(refused.value)  # nothing of the other collection's row is told
    assert bob.get("pref-1") == {**BOB_FIX, "created": bob.get("pref-1")["created"]}  # type: ignore[index]
    assert ana.get("pref-1") is None and ana.version == ("writes", 0)


def test_a_batch_with_one_held_id_writes_nothing(engine):
    bob, ana = memory(engine, "bob"), memory(engine, "ana")
    bob.add([BOB_FIX])
    with pytest.raises(IdHeldElsewhere) as refused:
        ana.add([{"id": "ana-1", "type": "note", "content": "Ana: tabs."}, ANA_NOTE])
    assert str(refused.value) == HELD.replace("(index 0)", "(index 1)")
    assert ana.get("ana-1") is None and text_of(bob, "pref-1") == BOB_FIX["content"]


def test_put_overwrites_the_collections_own_id_but_not_anothers(engine):
    bob, ana = memory(engine, "bob"), memory(engine, "ana")
    bob.add([BOB_FIX])
    bob.put_many([{**BOB_FIX, "content": "Bob: never deploy on Fridays or holidays."}])
    assert text_of(bob, "pref-1") == "Bob: never deploy on Fridays or holidays."
    with pytest.raises(IdHeldElsewhere, match="^entry 'pref-1' \\(index 0\\): field 'id' is held by another"):
        ana.put_many([ANA_NOTE])
    assert text_of(bob, "pref-1") == "Bob: never deploy on Fridays or holidays." and ana.get("pref-1") is None


def test_supersede_to_an_id_held_elsewhere_is_refused_and_retires_nothing(engine):
    bob, ana = memory(engine, "bob"), memory(engine, "ana")
    bob.add([BOB_FIX])
    ana.add([{"id": "ana-1", "type": "note", "content": "Ana: likes light mode."}])
    with pytest.raises(IdHeldElsewhere):
        ana.supersede("ana-1", ANA_NOTE)
    assert "superseded_by" not in ana.get("ana-1")  # type: ignore[operator]
    assert text_of(bob, "pref-1") == BOB_FIX["content"]
    # the collection's own chain still works
    assert bob.supersede("pref-1", {"id": "pref-2", "type": "correction", "scope": "always", "content": "No."}) == (
        "pref-2"
    )
    assert bob.get("pref-1")["superseded_by"] == "pref-2"  # type: ignore[index]


def test_the_same_text_in_two_collections_is_not_taken_as_a_repeat(engine):
    """The write gate's content keys carry no collection: two tenants on one
    namespace label saving the same note get the same id. The second write
    is refused, not folded into (or moved out of) the first tenant's row."""
    bob, ana = memory(engine, "bob"), memory(engine, "ana")
    note = {"id": "note-abc", "type": "note", "content": "Staging runs on Fridays."}
    bob.add([note])
    with pytest.raises(IdHeldElsewhere, match="'note-abc'"):
        ana.write([note])
    assert [e["id"] for e in bob.read(["note-abc"])] == ["note-abc"] and "seen" not in bob.get("note-abc")  # type: ignore[operator]
    assert ana.get("note-abc") is None


def test_the_remember_tool_answers_when_another_collection_holds_the_notes_key(engine):
    """Two agents over two collections of one database, on the same
    namespace: the second ``remember`` of the same note is answered, not
    raised, and counted; the first agent's note stays in its collection."""
    pools = [Pool("notes", 300, 5, ("note",))]

    def agent(collection: str) -> Any:
        store = PGVector(HashedNgramEmbeddings(), connection=engine, collection_name=collection, embedding_length=DIMS)
        middleware = PoolSplitMemoryMiddleware(pools, namespace=("memories",), store=store)
        return scripted_agent(middleware, model=ToolCallingFakeModel())

    def remember(graph: Any, note: str) -> List[str]:
        result = graph.invoke({"messages": [("user", "remember=" + note)]}, thread("t1"))
        return [str(m.text) for m in result["messages"] if isinstance(m, ToolMessage) and m.name == "remember"]

    [saved] = remember(agent("bob"), "Staging runs on Fridays")
    [refused] = remember(agent("ana"), "Staging runs on Fridays")
    assert saved.startswith("Saved as note-")
    key = saved.removeprefix("Saved as ").rstrip(".")
    assert refused == (
        "Not saved (held_elsewhere): another memory collection of this database holds the id %s; "
        "nothing was changed (each collection needs its own namespace)." % key
    )
    assert text_of(memory(engine, "bob"), key) == "Staging runs on Fridays"
    assert memory(engine, "ana").get(key) is None


def test_two_collections_writing_one_new_id_at_once_keep_the_first_only(engine):
    """The check and the upsert are two statements on two sessions; each
    write holds a transaction lock on its ids from before its check until
    after its upsert committed, so a concurrent write of the same id from
    another collection waits, then sees the row and is refused. Bob's
    embedding call is held open so Ana's write comes in between."""
    inside, release = threading.Event(), threading.Event()

    class Held(HashedNgramEmbeddings):  # type: ignore[misc, valid-type]
        def embed_documents(self, texts: List[str]) -> List[List[float]]:
            inside.set()
            assert release.wait(10)
            return super().embed_documents(texts)

    bob, ana = memory(engine, "bob", Held()), memory(engine, "ana")
    errors: List[BaseException] = []

    def run(target: Any, entry: Any) -> threading.Thread:
        def body() -> None:
            try:
                target.add([entry])
            except BaseException as err:  # noqa: BLE001 - collected for the assertions
                errors.append(err)

        worker = threading.Thread(target=body)
        worker.start()
        return worker

    bobs = run(bob, BOB_FIX)
    assert inside.wait(10)
    anas = run(ana, ANA_NOTE)
    anas.join(1.0)
    assert anas.is_alive()  # waiting for Bob's write to end
    release.set()
    bobs.join(10)
    anas.join(10)
    assert [type(e) for e in errors] == [IdHeldElsewhere]
    assert text_of(bob, "pref-1") == BOB_FIX["content"] and ana.get("pref-1") is None


async def test_the_async_store_refuses_a_held_id_on_every_write(pg_database):
    sync_engine = sqlalchemy.create_engine(pg_database.url)
    async_engine = create_async_engine(pg_database.url)
    try:
        memory(sync_engine, "bob").add([BOB_FIX])
        store = PGVector(HashedNgramEmbeddings(), connection=async_engine, collection_name="ana", embedding_length=DIMS)
        ana = VectorStoreMemory(store)
        with pytest.raises(IdHeldElsewhere) as refused:
            await ana.aadd([ANA_NOTE])
        assert str(refused.value) == HELD
        with pytest.raises(IdHeldElsewhere):
            await ana.aput_many([ANA_NOTE])
        assert await ana.aadd([{"id": "ana-1", "type": "note", "content": "Ana: tabs."}]) == ["ana-1"]
        await ana.aput_many([{"id": "ana-1", "type": "note", "content": "Ana: spaces."}])  # her own id
        assert [e["content"] for e in await ana.aread(["ana-1", "pref-1"])] == ["Ana: spaces."]
        assert text_of(memory(sync_engine, "bob"), "pref-1") == BOB_FIX["content"]
    finally:
        sync_engine.dispose()
        await async_engine.dispose()


def test_an_id_held_by_another_namespace_of_the_collection_is_refused_and_its_correction_kept(engine):
    shared = memory(engine, "tenants")
    shared.put_many([{**BOB_FIX, "namespace": "bob"}])
    with pytest.raises(IdHeldElsewhere) as refused:
        shared.put_many([{**ANA_NOTE, "namespace": "ana"}])
    assert str(refused.value) == HELD
    with pytest.raises(IdHeldElsewhere):  # not "already stored: supersede it", which would retire Bob's
        shared.add([{**ANA_NOTE, "namespace": "ana"}])
    assert text_of(shared, "pref-1") == BOB_FIX["content"]
    shared.put_many([{**BOB_FIX, "namespace": "bob", "content": "Bob: never deploy on Fridays or Mondays."}])
    assert text_of(shared, "pref-1") == "Bob: never deploy on Fridays or Mondays."  # its own namespace: updated
    with pytest.raises(IdHeldElsewhere):
        shared.put_many([{**ANA_NOTE}])  # no namespace at all is another namespace too
