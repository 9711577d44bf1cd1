"""Our installs on LangGraph's ``PostgresStore`` run from several servers at once.

Each install is documented as harmless to run again; run at once (servers
starting together on a fresh database, each installing on start) six of
them failed: ``install_change_counter`` with "duplicate key value violates
unique constraint" (``CREATE OR REPLACE FUNCTION`` races itself),
``install_filter_index`` likewise (``CREATE INDEX IF NOT EXISTS``), and
``install_type_indexes`` deadlocked. They now take turns under one session
advisory lock (``STORE_SETUP_LOCK``), and each finds what the one before
made.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Callable, List

import pytest
from pg_embeddings import DIMS, HashedNgramEmbeddings

from poolsplit_adapters.stores.postgres import (
    CHANGE_TRIGGERS,
    ainstall_change_counter,
    filter_index_name,
    install_change_counter,
    install_filter_index,
)
from poolsplit_adapters.stores.type_indexes import install_type_indexes, type_index_name

postgres = pytest.importorskip("langgraph.store.postgres")
from langgraph.store.postgres.aio import AsyncPostgresStore  # noqa: E402

SERVERS = 6
INDEX = {"dims": DIMS, "embed": HashedNgramEmbeddings(), "fields": ["content"]}


def at_once(stores: List[Any], install: Callable[[Any], Any]) -> List[Any]:
    barrier = threading.Barrier(len(stores))
    outcomes: List[Any] = [None] * len(stores)

    def run(n: int) -> None:
        barrier.wait()
        try:
            install(stores[n])
            outcomes[n] = "ok"
        except Exception as err:  # what each server would have seen
            outcomes[n] = repr(err)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


def catalog(conn: Any, sql: str) -> List[Any]:
    return sorted(next(iter(row.values())) for row in conn.execute(sql).fetchall())


@pytest.mark.parametrize("install", ["change counter", "filter index", "type indexes"])
def test_six_servers_installing_at_once_all_succeed_and_make_each_thing_once(pg_database, install):
    connections = [pg_database.connect() for _ in range(SERVERS)]
    try:
        stores = [postgres.PostgresStore(conn, index=INDEX) for conn in connections]
        stores[0].setup()
        run = {
            "change counter": install_change_counter,
            "filter index": install_filter_index,
            "type indexes": lambda store: install_type_indexes(store, ["fact", "note"]),
        }[install]
        assert at_once(stores, run) == ["ok"] * SERVERS
        conn = connections[0]
        if install == "change counter":
            triggers = catalog(conn, "SELECT tgname FROM pg_trigger WHERE tgname LIKE 'poolsplit_store_changes%'")
            assert triggers == sorted(CHANGE_TRIGGERS)
        elif install == "filter index":
            assert catalog(conn, "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'poolsplit%'") == [
                filter_index_name("store")
            ]
        else:
            indexes = catalog(conn, "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'poolsplit_type_hnsw%'")
            assert indexes == [type_index_name(1), type_index_name(2)]
            assert catalog(
                conn, "SELECT indisvalid FROM pg_index WHERE indexrelid::regclass::text LIKE 'poolsplit_type_hnsw%'"
            ) == [True, True]
    finally:
        for conn in connections:
            conn.close()


def test_six_async_servers_installing_the_change_counter_at_once_all_succeed(pg_database):
    async def run() -> List[Any]:
        from psycopg import AsyncConnection
        from psycopg.rows import dict_row

        connections = [
            await AsyncConnection.connect(
                pg_database.conninfo, autocommit=True, prepare_threshold=0, row_factory=dict_row
            )
            for _ in range(SERVERS)
        ]
        try:
            stores = [AsyncPostgresStore(conn) for conn in connections]
            await stores[0].setup()
            return list(await asyncio.gather(*(ainstall_change_counter(s) for s in stores), return_exceptions=True))
        finally:
            for conn in connections:
                await conn.close()

    assert asyncio.run(run()) == [None] * SERVERS
