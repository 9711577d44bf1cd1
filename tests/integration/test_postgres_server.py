"""The embedded Postgres the other Postgres tests stand on: unix socket only,
never as root, stopped by pid, and required when CI is set."""

from __future__ import annotations

import os
import pathlib
import pwd
import shutil
import subprocess
import sys
import tempfile

import psycopg
import pytest
from pg_server import EmbeddedPostgres

from poolsplit_adapters.stores.local_postgres import TemporaryPostgres
from poolsplit_adapters.stores.pg_install import SERVER_USER, copy_install, install_root, reachable_by

TESTS = pathlib.Path(__file__).resolve().parents[1]
ROOT = TESTS.parent


def test_the_server_listens_on_its_unix_socket_only(pg_server):
    with psycopg.connect(pg_server.database().conninfo) as conn:
        assert conn.execute("SHOW listen_addresses").fetchone() == ("",)  # no TCP socket at all
        assert conn.execute("SHOW unix_socket_directories").fetchone() == (pg_server.socket_dir,)
        assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone() is None
    with psycopg.connect(pg_server.create_database().conninfo) as conn:  # new databases come with pgvector
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone() == (1,)
    assert (pathlib.Path(pg_server.socket_dir) / ".s.PGSQL.5432").is_socket()


def test_the_server_never_runs_as_root(pg_server):
    uid = int(pathlib.Path("/proc/%d/status" % pg_server.pid).read_text().split("\nUid:")[1].split()[0])
    assert uid != 0
    if os.geteuid() == 0:
        assert uid == pwd.getpwnam(SERVER_USER).pw_uid


def test_stop_ends_the_postmaster_by_pid_and_removes_everything():
    server = EmbeddedPostgres().start()
    pid, root = server.pid, server.root
    assert pid is not None and root is not None and root.is_dir()
    server.stop()
    assert server.pid is None and not root.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    server.stop()  # twice is harmless


@pytest.mark.skipif(os.geteuid() != 0, reason="the copy is the root workaround")
def test_an_install_the_server_user_cannot_reach_is_copied_where_it_can(tmp_path):
    """A virtualenv under a 0700 home (root's, say) hides the wheel's
    binaries from the unprivileged server user: they are copied to a place
    it can reach."""
    account = pwd.getpwnam(SERVER_USER)
    closed = tmp_path / "closed" / "bin"
    closed.mkdir(parents=True)
    shutil.copy2(install_root() / "bin" / "postgres", closed / "postgres")
    (tmp_path / "closed").chmod(0o700)
    assert not reachable_by(closed.parent, account)
    shared = pathlib.Path(tempfile.mkdtemp(prefix="pg-copy-", dir="/tmp"))
    try:
        shared.chmod(0o755)
        assert reachable_by(copy_install(install_root(), shared), account)
    finally:
        shutil.rmtree(shared)


BROKEN = """
import pathlib
from poolsplit_adapters.stores import pg_install

pg_install.install_root = lambda: pathlib.Path("/nonexistent/pginstall")
pytest_plugins = ["pg_server"]
"""


@pytest.mark.parametrize("ci, outcome", [("true", "1 error"), ("", "1 skipped")])
def test_a_server_that_cannot_start_fails_under_ci_and_skips_elsewhere(tmp_path, ci, outcome):
    (tmp_path / "conftest.py").write_text(BROKEN)
    (tmp_path / "test_needs_pg.py").write_text("def test_it(pg_server):\n    pass\n")
    # No third-party plugin autoload: the inner run needs pytest and pg_server only.
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), str(ROOT)]), CI=ci, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1"
    )
    if not ci:
        del env["CI"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert outcome in done.stdout, done.stdout + done.stderr
    assert "embedded Postgres did not start" in done.stdout


@pytest.mark.parametrize("prefix", ['x"y', "a b", "q?r", "p%2F", "o'b"])
def test_a_database_of_any_name_is_created_and_reached_by_that_name(pg_server, prefix):
    """``create_database`` wrote the name into its SQL text (``x"y`` was a
    syntax error: a caller's value in SQL), and ``connection`` into the URL
    unquoted (``a b`` refused, ``q?r`` cut, ``p%2F`` named another database)."""
    name = TemporaryPostgres.create_database(pg_server, prefix)
    assert name.startswith(prefix)
    with psycopg.connect(TemporaryPostgres.connection(pg_server, name).conninfo) as conn:
        assert conn.execute("SELECT current_database()").fetchone() == (name,)
