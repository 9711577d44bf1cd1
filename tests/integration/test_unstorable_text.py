"""NUL and lone surrogates through ``BaseStoreMemory`` (and the SQLite store):
the same named error on every engine, raised before any query runs.

Postgres text and JSONB cannot hold NUL, and no wire format holds a lone
surrogate; on LangGraph's ``PostgresStore`` both used to surface as raw
psycopg errors (``UntranslatableCharacter``, ``DataError``) or a
``UnicodeEncodeError`` naming no entry, field or namespace. Now an entry is
an ``EntryError`` naming it and its field, an argument (namespace label, id,
pool type) an ``ArgumentError`` naming it: the one storable rule
(``stores.checks``), so a store on ``InMemoryStore`` behaves as one on
``PostgresStore`` and a SQLite file can move to Postgres unchanged.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Callable, Iterator, List

import pytest
from exact_reads import counting
from langgraph.store.memory import InMemoryStore
from pg_embeddings import DIMS, HashedNgramEmbeddings

from poolsplit_adapters import EntryError, Pool
from poolsplit_adapters.checks import ArgumentError
from poolsplit_adapters.langchain import BaseStoreMemory
from poolsplit_adapters.stores import SQLiteMemoryStore

U1 = ("memories", "u1")
POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("notes", 300, 5, ("note",))]
NUL, LONE = "a\x00b", "lone \ud800"

#: (label, write, the error's exact message) for an entry that holds bad text.
BAD_ENTRIES = [
    ("nul content", [{"id": "e1", "content": NUL}], "entry 'e1' (index 0): field 'content' contains NUL"),
    (
        "lone surrogate content",
        [{"id": "e2", "content": LONE}],
        "entry 'e2' (index 0): field 'content' contains a lone",
    ),
    (
        "nul in a tag, second entry",
        [{"id": "ok", "content": "fine"}, {"id": "e3", "content": "x", "tags": ["t", NUL]}],
        "entry 'e3' (index 1): field 'tags' contains NUL",
    ),
    ("nul in a key", [{"id": "e4", "content": "x", "me\x00ta": 1}], "entry 'e4' (index 0): has a key with NUL"),
    ("nul in the id", [{"id": "e\x005", "content": "x"}], "field 'id' contains NUL"),
    ("nul in a nested value", [{"id": "e6", "content": "x", "meta": {"k": NUL}}], "field 'meta' contains NUL"),
    # Longer than a database index key holds (Postgres raised ProgramLimitExceeded from the driver).
    ("a long id", [{"id": "i" * 1001, "content": "x"}], "field 'id' is 1001 bytes long; an id, type or namespace"),
    ("a long type", [{"id": "e7", "content": "x", "type": "\u6f22" * 400}], "field 'type' is 1200 bytes long"),
]


def _postgres(pg_database: Any) -> Iterator[Any]:
    PostgresStore = pytest.importorskip("langgraph.store.postgres").PostgresStore
    index = {"dims": DIMS, "embed": HashedNgramEmbeddings(), "fields": ["content"]}
    with PostgresStore.from_conn_string(pg_database.conninfo, index=index) as raw:
        raw.setup()
        store = counting(PostgresStore)(raw.conn, index=index)
        yield store


def _sqlite(tmp_path: Any) -> Iterator[Any]:
    from langgraph.store.sqlite import SqliteStore

    conn = sqlite3.connect(str(tmp_path / "lg.db"), check_same_thread=False, isolation_level=None)
    store = counting(SqliteStore)(conn)
    store.setup()
    yield store
    conn.close()


@pytest.fixture(params=["postgres", "sqlite", "in_memory"])
def store(request: Any, tmp_path: Any) -> Iterator[Any]:
    """A real LangGraph store of each engine, recording its ops."""
    if request.param == "postgres":
        yield from _postgres(request.getfixturevalue("pg_database"))
    elif request.param == "sqlite":
        yield from _sqlite(tmp_path)
    else:
        yield counting(InMemoryStore)(index={"dims": DIMS, "embed": HashedNgramEmbeddings(), "fields": ["content"]})


def ops_run(store: Any) -> int:
    return int(getattr(store, "searches", 0)) + len(getattr(store, "keys_read", {}))


def writes(memory: BaseStoreMemory) -> List[Callable[[List[dict]], Any]]:
    return [memory.put_many, memory.add]


@pytest.mark.parametrize("label, entries, message", BAD_ENTRIES, ids=[b[0] for b in BAD_ENTRIES])
def test_an_unstorable_entry_is_an_entry_error_naming_it_and_nothing_is_written(store, label, entries, message):
    memory = BaseStoreMemory(store, U1)
    for write in writes(memory):
        with pytest.raises(EntryError) as caught:
            write(entries)
        assert message in str(caught.value), label
    assert memory.entries() == []
    memory.put_many([{"id": "ok", "content": "fine"}])  # the store still works: nothing was half-sent
    assert [e["id"] for e in memory.entries()] == ["ok"]


@pytest.mark.parametrize(
    "bad, message",
    [
        (("memories", NUL), "namespace label 'a\\x00b' contains NUL"),
        (("memories", LONE), "namespace label 'lone \\ud800' contains a lone surrogate at position 5"),
        ([U1, ("shared", NUL)], "namespace label 'a\\x00b' contains NUL"),
        (("memories", "u" * 1001), "is 1010 bytes long; it takes at most 1000"),
    ],
)
def test_a_namespace_with_nul_or_a_lone_surrogate_is_an_argument_error_before_any_query(store, bad, message):
    with pytest.raises(ArgumentError) as caught:
        BaseStoreMemory(store, bad).select(POOLS, {"message": "deploy"})
    assert message in str(caught.value)
    assert ops_run(store) == 0


async def test_ids_and_pool_types_with_nul_are_argument_errors_before_any_query(store):
    memory = BaseStoreMemory(store, U1, fetch_k=5)
    for call in (
        lambda: memory.get(NUL),
        lambda: memory.read([NUL]),
        lambda: memory.delete(LONE),
        lambda: memory.supersede(NUL, {"content": "new"}),
        lambda: memory.select([Pool("odd", 100, 2, ("no" + NUL,))], {"message": "deploy"}),
    ):
        with pytest.raises(ArgumentError, match="contains (NUL|a lone surrogate)"):
            call()
    for acall in (lambda: memory.aget(NUL), lambda: memory.aread([LONE])):
        with pytest.raises(ArgumentError, match="entry id"):
            await acall()
    assert ops_run(store) == 0


@pytest.mark.parametrize("label, entries, message", BAD_ENTRIES, ids=[b[0] for b in BAD_ENTRIES])
def test_the_sqlite_store_refuses_the_same_entries_with_the_same_words(tmp_path, label, entries, message):
    with SQLiteMemoryStore(tmp_path / "m.db") as store:
        with pytest.raises(EntryError) as caught:
            store.add(entries)
        assert message in str(caught.value), label
        assert len(store) == 0


def test_an_escaped_backslash_u0000_is_text_not_nul_and_stores_everywhere(store, tmp_path):
    entry = {"id": "esc", "content": "the JSON escape \\u0000 written out"}
    memory = BaseStoreMemory(store, U1)
    memory.put_many([entry])
    assert memory.get("esc")["content"] == entry["content"]  # type: ignore[index]
    with SQLiteMemoryStore(tmp_path / "m.db") as sqlite_store:
        sqlite_store.add([entry])
        assert sqlite_store.get("esc")["content"] == entry["content"]  # type: ignore[index]
