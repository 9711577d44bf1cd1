"""A write through ``VectorIndexMemory`` over LlamaIndex's ``PGVectorStore``
that fails loses nothing, and two writers of one new id store it once.

A node was replaced by the index's ``delete_nodes``, then ``insert_nodes``
(which embeds): a model that failed, or an insert the database refused,
after the delete left neither version (a ``supersede`` of a correction that
raised had deleted it), and two memory objects adding one new id at once
both inserted it (the store has no unique node id). Now the new versions
are embedded first, and the read, delete and insert are one transaction
holding the ids' locks (`poolsplit_adapters.stores.vectorstores.llama_index_writes`).
Also over a ``SimpleVectorStore``: a failing model deletes nothing.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, List

import pytest
import sqlalchemy
from llama_index.core import VectorStoreIndex
from pg_embeddings import DIMS, HashedNgramLlamaEmbedding
from pg_server import Database

from poolsplit_adapters.llama_index.vector_memory import VectorIndexMemory
from poolsplit_adapters.stores import DuplicateEntry

postgres = pytest.importorskip("llama_index.vector_stores.postgres")

FIX = {"id": "fix", "type": "correction", "scope": "always", "namespace": "t", "content": "Quote in cents."}
NEW = {"id": "fix-2", "type": "correction", "scope": "always", "namespace": "t", "content": "Quote in integer cents."}
CREATED = "2026-07-01T00:00:00Z"


class Flaky(HashedNgramLlamaEmbedding):
    """The tests' embedding, down when ``down`` is set (an API outage), slow by ``delay`` seconds."""

    down: bool = False
    delay: float = 0.0

    def _get_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        if self.down:
            raise RuntimeError("embedding API down")
        time.sleep(self.delay)
        return super()._get_text_embeddings(texts)


def memory(database: Database, model: Flaky, table: str = "writes") -> VectorIndexMemory:
    store = postgres.PGVectorStore(
        connection_string=database.url, async_connection_string=database.url, table_name=table, embed_dim=DIMS
    )
    return VectorIndexMemory(VectorStoreIndex.from_vector_store(store, embed_model=model))


def rows(database: Database, table: str = "writes") -> List[Dict[str, Any]]:
    engine = sqlalchemy.create_engine(database.url)
    try:
        with engine.connect() as conn:
            found = conn.execute(
                sqlalchemy.text("SELECT node_id, text FROM data_%s ORDER BY node_id, text" % table)
            ).all()
    finally:
        engine.dispose()
    return [{"node_id": r.node_id, "text": r.text} for r in found]


def stored_fix() -> Dict[str, Any]:
    return dict(FIX, created=CREATED)


@pytest.mark.parametrize("verb", ["supersede", "put_many"])
def test_a_write_whose_embedding_fails_keeps_what_it_would_replace(pg_database, verb):
    model = Flaky()
    mem = memory(pg_database, model)
    mem.add([stored_fix()])
    model.down = True
    with pytest.raises(RuntimeError, match="embedding API down"):
        if verb == "supersede":
            mem.supersede("fix", NEW)
        else:
            mem.put_many([dict(stored_fix(), content="Quote in euros.")])
    assert mem.get("fix") == stored_fix()
    assert mem.get("fix-2") is None
    assert rows(pg_database) == [{"node_id": "fix", "text": "Quote in cents."}]
    assert mem.version == ("writes", 1)  # the failed write counted nothing


def test_a_supersede_whose_insert_the_database_refuses_keeps_the_old_version(pg_database):
    mem = memory(pg_database, Flaky())
    mem.add([stored_fix()])
    engine = sqlalchemy.create_engine(pg_database.url)
    with engine.begin() as conn:  # the host's own rule on its table: a new row's text is short
        conn.execute(sqlalchemy.text("ALTER TABLE data_writes ADD CONSTRAINT short_text CHECK (length(text) < 16)"))
    engine.dispose()
    with pytest.raises(sqlalchemy.exc.IntegrityError, match="short_text"):
        mem.supersede("fix", NEW)  # the new version's text is 23 characters
    assert mem.get("fix") == stored_fix()
    assert rows(pg_database) == [{"node_id": "fix", "text": "Quote in cents."}]


def test_four_writers_of_one_new_id_store_it_once(pg_database):
    model = Flaky(delay=0.3)  # the window between a writer's read and its insert
    writers = [memory(pg_database, model) for _ in range(4)]
    writers[0].add([{"id": "seed", "type": "note", "namespace": "t", "content": "seed", "created": CREATED}])
    start, outcomes = threading.Barrier(4), []

    def add(n: int) -> None:
        start.wait()
        try:
            writers[n].add([{"id": "same", "type": "fact", "namespace": "t", "content": "fact %d" % n}])
            outcomes.append("stored")
        except DuplicateEntry:
            outcomes.append("refused")

    threads = [threading.Thread(target=add, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["refused", "refused", "refused", "stored"]
    assert [r["node_id"] for r in rows(pg_database)] == ["same", "seed"]


def test_over_a_simple_vector_store_a_failing_model_deletes_nothing():
    model = Flaky()
    mem = VectorIndexMemory(VectorStoreIndex([], embed_model=model))
    mem.add([stored_fix()])
    model.down = True
    with pytest.raises(RuntimeError, match="embedding API down"):
        mem.supersede("fix", NEW)
    assert mem.get("fix") == stored_fix()
    assert mem.get("fix-2") is None


def test_a_scope_too_long_for_the_filter_index_is_an_entry_error_naming_it(pg_database):
    """The filter index of a ``PGVectorStore`` holds ``namespace``, ``type``
    and ``scope``, and a btree row holds 2,704 bytes: a 5,000-character
    scope failed deep in the driver ("index row size 5024 exceeds btree
    version 4 maximum 2704"), naming neither the entry nor the field. Each
    indexed field now has its bound (a scope 500 bytes), so the longest
    entry they allow is stored."""
    from poolsplit_adapters import EntryError
    from poolsplit_adapters.stores.postgres import install_filter_index

    mem = memory(pg_database, Flaky())
    mem.add([{"id": "x0", "content": "warm", "type": "note", "namespace": "a"}])
    install_filter_index(mem.index.vector_store)
    # Text that no compression shortens (the index would compress a repeated letter).
    noise = "".join(chr(0x4E00 + (n * 7919) % 20000) for n in range(2000))
    with pytest.raises(EntryError) as raised:
        mem.add([{"id": "x1", "content": "c", "type": "note", "scope": "s" + noise[:1666], "namespace": "a"}])
    assert str(raised.value) == (
        "entry 'x1' (index 0): field 'scope' is 4999 bytes long; a scope takes at most 500 (UTF-8)"
    )
    longest = {"id": "x2", "content": "c", "type": noise[:333], "namespace": noise[333:666], "scope": noise[666:832]}
    mem.add([longest])
    [stored] = mem.read(["x2"])
    assert {k: stored[k] for k in longest} == longest
    assert [r["node_id"] for r in rows(pg_database)] == ["x0", "x2"]
