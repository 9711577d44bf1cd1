"""SQLite store files as a person meets them: someone else's database, a
newer schema, a read-only copy, a damaged file, a text file named ``.db``,
text that is not UTF-8. Each is named in one clear error, refused before
anything is written (the file stays byte-identical), or, read-only, read."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shutil
import sqlite3
import subprocess
import sys
from typing import List, Tuple

import pytest
from langgraph.store.memory import InMemoryStore

from poolsplit_adapters import EntryError, Pool
from poolsplit_adapters.cli import main
from poolsplit_adapters.langchain import BaseStoreMemory
from poolsplit_adapters.stores import SQLiteMemoryStore, StoreError

ROOT = pathlib.Path(__file__).resolve().parents[2]
POOLS_TOML = '[[pool]]\nname = "all"\nmax_tokens = 500\nmax_entries = 10\n'
ENTRIES = [
    {"id": "fix-1", "type": "correction", "scope": "always", "content": "Quote amounts in cents."},
    {"id": "fact-1", "type": "fact", "content": "Refunds round half-even."},
]


def digest(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cli(*args: str, read_only: bool = False) -> Tuple[int, str, str]:
    """The command in a fresh process. ``read_only``: without the
    capabilities that let root ignore file permissions, so a 0444 file in a
    0555 folder is as read-only as for anyone else."""
    prefix: List[str] = []
    if read_only and os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot make a file read-only")
        caps = "-dac_override,-dac_read_search,-fowner"
        prefix = [setpriv, "--bounding-set=" + caps, "--inh-caps=" + caps, "--"]
    code = "import sys; from poolsplit_adapters.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [*prefix, sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    return done.returncode, done.stdout, done.stderr


def one_line_error(code: int, err: str, *parts: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for part in parts:
        assert part in err, err


# -- 4. identified and refused before anything is written --------------------------


def foreign(path: pathlib.Path, user_version: int, tables: bool = True) -> pathlib.Path:
    conn = sqlite3.connect(path)
    if tables:
        conn.execute("CREATE TABLE invoices (number INTEGER PRIMARY KEY, cents INTEGER)")
        conn.execute("INSERT INTO invoices VALUES (1, 1250)")
    conn.execute("PRAGMA user_version = %d" % user_version)
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize(
    "user_version, tables, message",
    [
        (0, True, "not a poolsplit memory store (it holds other tables: invoices)"),
        (1, True, "not a poolsplit memory store (user_version 1, but no table 'memory')"),
        (99, False, "schema version 99 is newer"),
        (99, True, "schema version 99 is newer"),
    ],
)
def test_a_file_that_is_not_ours_is_refused_byte_identical(tmp_path, user_version, tables, message):
    path = foreign(tmp_path / "other.db", user_version, tables)
    before = digest(path)
    assert path.read_bytes()[18:20] == b"\x01\x01"  # rollback journal, not WAL
    with pytest.raises(StoreError, match="other.db: ") as caught:
        SQLiteMemoryStore(path)
    assert message in str(caught.value)
    for args in (["select", "q", "--store", str(path), "--pools", str(tmp_path / "p.toml")], ["add"]):
        if args == ["add"]:
            args = ["add", "--store", str(path), "--content", "x"]
        (tmp_path / "p.toml").write_text(POOLS_TOML)
        one_line_error(*cli(*args)[::2], str(path), message)
    assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db", "p.toml"]  # no -wal, no -shm left


def test_a_user_version_1_file_with_our_tables_but_not_our_columns_is_refused(tmp_path):
    path = tmp_path / "near.db"
    conn = sqlite3.connect(path)
    for table in ("memory", "forgotten", "meta"):
        conn.execute("CREATE TABLE %s (x)" % table)
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    before = digest(path)
    with pytest.raises(
        StoreError, match="near.db: not a poolsplit memory store .*table 'memory' lacks created, entry, id"
    ):
        SQLiteMemoryStore(path)
    assert digest(path) == before


# -- 5. read-only files; errors that name the file ----------------------------------------


def read_only_store(tmp_path: pathlib.Path) -> pathlib.Path:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "memory.db"
    with SQLiteMemoryStore(path) as store:
        store.add(ENTRIES)
    assert sorted(p.name for p in folder.iterdir()) == ["memory.db"]  # the log was checkpointed away
    path.chmod(0o444)
    folder.chmod(0o555)
    return path


def test_a_read_only_file_in_a_read_only_folder_is_read_and_never_written(tmp_path):
    path = read_only_store(tmp_path)
    pools = tmp_path / "pools.toml"
    pools.write_text(POOLS_TOML)
    before = digest(path)
    try:
        code, out, err = cli("select", "refund", "--store", str(path), "--pools", str(pools), "--json", read_only=True)
        assert code == 0, err
        assert [c["id"] for c in json.loads(out)["chosen"]] == ["fix-1", "fact-1"]
        code, out, err = cli("export", "--store", str(path), read_only=True)
        assert code == 0, err
        assert [json.loads(line)["id"] for line in out.splitlines()] == ["fix-1", "fact-1"]
        code, out, err = cli("search", "refunds", "--all-namespaces", "--store", str(path), read_only=True)
        assert code == 0 and "fact-1" in out, err
        for args in (["add", "--store", str(path), "--content", "new"], ["forget", "fact-1", "--store", str(path)]):
            one_line_error(*cli(*args, read_only=True)[::2], str(path), "read-only")
        code, _, err = cli("import", str(pools), "--into", str(path), read_only=True)
        assert code == 2
        assert digest(path) == before
        assert sorted(p.name for p in path.parent.iterdir()) == ["memory.db"]
    finally:
        path.parent.chmod(0o755)


def test_a_read_only_store_says_so_on_a_write_naming_the_file(tmp_path):
    path = read_only_store(tmp_path)
    script = (
        "import sys; from poolsplit_adapters.stores import SQLiteMemoryStore, StoreError\n"
        "store = SQLiteMemoryStore(sys.argv[1]); assert store.read_only; print(len(store.entries()))\n"
        "try:\n    store.add([{'content': 'x'}])\nexcept StoreError as e:\n    print(e)\n"
    )
    prefix: List[str] = []
    if os.geteuid() == 0:
        caps = "-dac_override,-dac_read_search,-fowner"
        prefix = ["setpriv", "--bounding-set=" + caps, "--inh-caps=" + caps, "--"]
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", script, str(path)],
            capture_output=True,
            text=True,
            check=False,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        )
    finally:
        path.parent.chmod(0o755)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "2",
        "%s: opened read-only (the file or its folder is not writable); cannot write" % path,
    ]


def test_a_damaged_file_is_named_in_the_error(tmp_path):
    path = tmp_path / "memory.db"
    with SQLiteMemoryStore(path) as store:
        store.add([{"type": "fact", "content": "fact %d %s" % (n, "x" * 200)} for n in range(300)])
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 6 * page
    data[3 * page : 6 * page] = b"\xa5" * (3 * page)  # pages of the memory table, not the header
    path.write_bytes(bytes(data))
    pools = tmp_path / "p.toml"
    pools.write_text(POOLS_TOML)
    for args in (["select", "fact", "--store", str(path), "--pools", str(pools)], ["export", "--store", str(path)]):
        code, _, err = cli(*args)
        one_line_error(code, err, "poolsplit: %s: " % path, "malformed")
        assert err.count(str(path)) == 1, err
    # Through the library too, whether the damage shows at open or mid-query.
    with pytest.raises((StoreError, sqlite3.DatabaseError), match="^%s: .*malformed" % path):
        SQLiteMemoryStore(path).entries()


def damaged(path: pathlib.Path, damage: str) -> bytes:
    """A store of 300 entries at ``path``, then damaged: ``half`` cut at half
    its length (its header still counts every page), ``page`` cut to its
    first page, ``meta`` its change counter's page overwritten (the header
    and schema read well: the damage shows only once the store reads it)."""
    with SQLiteMemoryStore(path) as store:
        store.add([{"type": "fact", "content": "fact %d %s" % (n, "x" * 200)} for n in range(300)])
    data = bytearray(path.read_bytes())
    if damage == "half":
        data = data[: len(data) // 2]
    elif damage == "page":
        data = data[:4096]
    else:
        with sqlite3.connect(path) as conn:
            [(root,)] = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'meta'")
        data[(root - 1) * 4096 : root * 4096] = b"\xa5" * 4096
    path.write_bytes(bytes(data))
    return bytes(data)


@pytest.mark.parametrize("damage", ["half", "page", "meta"])
def test_a_refused_damaged_file_is_left_alone_with_nothing_beside_it(tmp_path, damage):
    # The read-only probe (and the store's own connection) made memory.db-wal
    # and memory.db-shm beside a file it then refused, and left them there.
    folder = tmp_path / "store"
    folder.mkdir()
    path = folder / "memory.db"
    data = damaged(path, damage)
    pools = tmp_path / "p.toml"
    pools.write_text(POOLS_TOML)
    for args in (
        ["select", "fact", "--store", str(path), "--pools", str(pools)],
        ["export", "--store", str(path)],
        ["add", "--store", str(path), "--content", "x"],
    ):
        code, _, err = cli(*args)
        one_line_error(code, err, "poolsplit: %s: " % path, "database disk image is malformed", "not a usable SQLite")
        assert sorted(p.name for p in folder.iterdir()) == ["memory.db"], args
        assert path.read_bytes() == data
    with pytest.raises(StoreError, match="^%s: .*malformed" % path):
        SQLiteMemoryStore(path)
    assert sorted(p.name for p in folder.iterdir()) == ["memory.db"] and path.read_bytes() == data


@pytest.mark.parametrize("content", [b"just some notes\nnot a database\n", bytes(range(256)) * 8, b"{}\n"])
def test_a_text_or_random_file_named_db_is_not_a_sqlite_database(tmp_path, content):
    path = tmp_path / "memory.db"
    path.write_bytes(content)
    pools = tmp_path / "p.toml"
    pools.write_text(POOLS_TOML)
    for args in (
        ["select", "q", "--store", str(path), "--pools", str(pools)],
        ["export", "--store", str(path)],
        ["add", "--store", str(path), "--content", "x"],
    ):
        one_line_error(*cli(*args)[::2], "%s: not a SQLite database" % path)
    assert path.read_bytes() == content


# -- 6. text that is not UTF-8 ------------------------------------------------------------


LONE = "lone \ud800"


def test_a_lone_surrogate_is_an_entry_error_on_every_write_path(tmp_path):
    with SQLiteMemoryStore(tmp_path / "memory.db") as store:
        with pytest.raises(EntryError, match="entry 'bad' \\(index 0\\): field 'content' contains a lone surrogate"):
            store.add([{"id": "bad", "content": LONE}])
        [old] = store.add([{"id": "ok", "content": "fine"}])
        with pytest.raises(EntryError, match="field 'tags' contains a lone surrogate") as caught:
            store.supersede(old, {"id": "new", "content": "fine", "tags": [LONE]})
        assert caught.value.field == "tags" and caught.value.entry_id == "new"
        assert [e["id"] for e in store.entries()] == ["ok"]
    memory = BaseStoreMemory(InMemoryStore(), ("memories", "u1"))
    with pytest.raises(EntryError, match="field 'content' contains a lone surrogate"):
        memory.put({"id": "bad", "content": LONE})
    assert memory.entries() == []
    entry = {"id": "bad", "content": LONE}
    with pytest.raises(EntryError):
        SQLiteMemoryStore(tmp_path / "memory.db").add([entry])
    assert entry == {"id": "bad", "content": LONE}  # the caller's entry is untouched
    assert Pool  # the pools are not involved: the write is refused first


def test_cli_import_names_file_line_entry_and_field_for_a_lone_surrogate(tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": "a", "content": "fine"}) + "\n" + '{"id": "b", "content": "lone \\ud800"}\n')
    into = tmp_path / "memory.db"
    assert main(["import", str(source), "--into", str(into)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("poolsplit: %s:2: entry 'b' (index 1): field 'content' contains a lone surrogate" % source)
    assert main(["add", "--store", str(into), "--content", LONE]) == 2
    assert "field 'content' contains a lone surrogate (\\ud800)" in capsys.readouterr().err
