"""A connection terminated mid-write (``pg_terminate_backend`` from a second
connection), on the real server: a write that fails raises the failure's
own error and leaves nothing half-written; a write that committed returns;
the next call on a fresh connection works and no lock is left behind."""

from __future__ import annotations

import threading
import time
from typing import Any, List

import psycopg
import pytest
import sqlalchemy
from pg_embeddings import DIMS, HashedNgramEmbeddings

from poolsplit_adapters.langchain import BaseStoreMemory

OLD = {"id": "f0", "type": "fact", "content": "The launch is on March 3."}
NEW = {"id": "f1", "type": "fact", "content": "The launch moved to March 9."}


def terminate_others(admin: Any, dbname: str) -> int:
    """End every session of ``dbname`` but ``admin``'s; how many."""
    row = admin.execute(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
        (dbname,),
    ).fetchone()
    return int(row[0])


def advisory_locks(admin: Any) -> int:
    return int(admin.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").fetchone()[0])


def later(seconds: float, work: Any) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(seconds), work()))
    thread.start()
    return thread


def test_a_postgres_store_supersede_killed_mid_write_writes_nothing_and_raises_the_drop(pg_database):
    """Its error is the drop ("server closed the connection"), not the
    namespace lock's release on the dead session ("the connection is
    closed"), which said nothing of what happened."""
    postgres = pytest.importorskip("langgraph.store.postgres")
    from langgraph.store.base import PutOp

    class SlowPuts(postgres.PostgresStore):
        def batch(self, ops: Any) -> Any:
            ops = list(ops)
            if any(isinstance(op, PutOp) for op in ops):
                time.sleep(0.5)
            return super().batch(ops)

    conn = pg_database.connect()
    store = SlowPuts(conn)
    store.setup()
    BaseStoreMemory(store, ("memories", "ana")).add([OLD])
    with psycopg.connect(pg_database.conninfo, autocommit=True) as admin:
        killer = later(0.2, lambda: terminate_others(admin, pg_database.name))
        with pytest.raises(psycopg.OperationalError) as raised:
            BaseStoreMemory(store, ("memories", "ana")).supersede("f0", NEW)
        killer.join()
        assert "the connection is closed" not in str(raised.value)
        assert admin.execute("SELECT key, value->>'superseded_by' FROM store").fetchall() == [("f0", None)]
        assert advisory_locks(admin) == 0
        with pg_database.connect() as fresh:
            again = BaseStoreMemory(postgres.PostgresStore(fresh), ("memories", "ana"))
            assert again.supersede("f0", NEW) == "f1"
            assert [(e["id"], e.get("superseded_by")) for e in again.entries()] == [("f0", "f1"), ("f1", None)]


def pgvector_memory(pg_database: Any, cls: Any) -> Any:
    from poolsplit_adapters.langchain import VectorStoreMemory

    engine = sqlalchemy.create_engine(pg_database.url)
    store = cls(HashedNgramEmbeddings(), connection=engine, collection_name="c", embedding_length=DIMS)
    return VectorStoreMemory(store), engine


def rows(admin: Any) -> List[Any]:
    return admin.execute("SELECT id, cmetadata->>'superseded_by' FROM langchain_pg_embedding ORDER BY id").fetchall()


def test_a_pgvector_supersede_killed_before_its_write_writes_nothing_and_the_next_call_works(pg_database):
    PGVector = pytest.importorskip("langchain_postgres").PGVector

    class SlowEmbeddings(HashedNgramEmbeddings):
        slow = False

        def embed_documents(self, texts: List[str]) -> List[List[float]]:
            if self.slow:
                time.sleep(0.5)
            return super().embed_documents(texts)

    embeddings = SlowEmbeddings()

    class Store(PGVector):  # type: ignore[misc]
        def __init__(self, _: Any, **kwargs: Any) -> None:
            super().__init__(embeddings, **kwargs)

    memory, engine = pgvector_memory(pg_database, Store)
    memory.add([OLD])
    with psycopg.connect(pg_database.conninfo, autocommit=True) as admin:
        embeddings.slow = True
        killer = later(0.2, lambda: terminate_others(admin, pg_database.name))
        with pytest.raises(sqlalchemy.exc.OperationalError, match="terminating connection"):
            memory.supersede("f0", NEW)
        killer.join()
        embeddings.slow = False
        assert rows(admin) == [("f0", None)]
        assert advisory_locks(admin) == 0
        assert memory.supersede("f0", NEW) == "f1"
        assert rows(admin) == [("f0", "f1"), ("f1", None)]
    engine.dispose()


def test_a_pgvector_supersede_that_committed_returns_though_its_id_claims_session_then_died(pg_database):
    """The write committed, then the session holding its ids' locks was
    terminated: ``supersede`` raised the rollback's error (that session only
    held locks, which the server released with it), so the caller was told
    a durable write had failed, and its retry was refused as "already
    superseded"."""
    PGVector = pytest.importorskip("langchain_postgres").PGVector
    admin = psycopg.connect(pg_database.conninfo, autocommit=True)

    class KilledAfterItsWrite(PGVector):  # type: ignore[misc]
        armed = False

        def add_documents(self, documents: Any, **kwargs: Any) -> Any:
            done = super().add_documents(documents, **kwargs)
            if self.armed:
                assert terminate_others(admin, pg_database.name) >= 1
            return done

    memory, engine = pgvector_memory(pg_database, KilledAfterItsWrite)
    memory.add([OLD])
    memory.store.armed = True
    try:
        assert memory.supersede("f0", NEW) == "f1"
        assert rows(admin) == [("f0", "f1"), ("f1", None)]
        assert advisory_locks(admin) == 0
    finally:
        admin.close()
        engine.dispose()
