"""SQLiteMemoryStore semantics: add/get/supersede/delete, selection in step
with the file, bad input, schema migration, threads."""

from __future__ import annotations

import copy
import datetime
import sqlite3
import tempfile
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import entries as entry_strategy

from poolsplit_adapters import EntryError, Pool, Visibility, default_scorer, select
from poolsplit_adapters.defaults import default_adapter_scorer
from poolsplit_adapters.errors import ArgumentError
from poolsplit_adapters.poolsplit import given_token_count
from poolsplit_adapters.stores import (
    SCHEMA_VERSION,
    EntryNotFound,
    MemoryStore,
    SQLiteMemoryStore,
    StoreError,
)

NOW = datetime.datetime(2026, 7, 7, 12, 0, 0)
CLOCK = lambda: datetime.datetime(2026, 7, 1, 8, 30, tzinfo=datetime.timezone.utc)  # noqa: E731
POOLS = [
    Pool("corrections", 0, 0, ("correction",)),
    Pool("facts", 40, 2, ("fact",)),
    Pool("rest", 30, 3),
]


def nested(depth):
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def fresh(tmp_path, name="memory.db", **options):
    return SQLiteMemoryStore(tmp_path / name, clock=CLOCK, **options)


def test_add_assigns_id_and_created_and_never_touches_the_callers_dict(tmp_path):
    store = fresh(tmp_path)
    given_entries = [
        {"type": "fact", "content": "Refunds round half-even.", "tags": ["money"]},
        {
            "id": "fix-1",
            "type": "correction",
            "scope": "always",
            "content": "Never force-push.",
            "created": "2026-01-02",
        },
    ]
    before = copy.deepcopy(given_entries)
    ids = store.add(given_entries)
    assert given_entries == before
    assert len(ids) == 2 and ids[1] == "fix-1" and len(ids[0]) == 32
    first = store.get(ids[0])
    assert first == {
        "type": "fact",
        "content": "Refunds round half-even.",
        "tags": ["money"],
        "id": ids[0],
        "created": "2026-07-01T08:30:00Z",
    }
    assert store.get("fix-1")["created"] == "2026-01-02"  # a given created is kept
    # The store shares nothing with the caller: changing their list later
    # changes nothing stored, and a returned copy is the caller's to change.
    given_entries[0]["tags"].append("later")
    first["content"] = "scribbled"
    assert store.get(ids[0])["tags"] == ["money"]
    assert store.get(ids[0])["content"] == "Refunds round half-even."
    assert store.get("nope") is None
    assert isinstance(store, MemoryStore)


def test_select_is_the_core_selection_over_the_stored_entries(tmp_path):
    store = fresh(tmp_path)
    store.add(
        [
            {"id": "fix-1", "type": "correction", "scope": "always", "content": "Never force-push to main."},
            {"id": "f1", "type": "fact", "content": "refund totals round half even", "token_count": 10},
            {"id": "f2", "type": "fact", "content": "deploys happen on tuesdays", "token_count": 10},
            {"id": "f3", "type": "fact", "content": "refund api needs a key", "token_count": 10, "base_priority": 9},
            {"id": "n1", "type": "note", "content": "refund rounding bug seen twice", "token_count": 25},
            {"id": "n2", "type": "note", "content": "lunch is at noon", "token_count": 8, "status": "archived"},
        ]
    )
    context = {"message": "refund rounding"}
    selection = store.select(POOLS, context, now=NOW)
    # The adapters' default scorer, relevance first: f1 matches both words
    # ("rounding" stems to "round"), f3 one, whatever its priority 9.
    assert [(c.entry["id"], c.pool) for c in selection.chosen] == [
        ("fix-1", "corrections"),
        ("f1", "facts"),
        ("f3", "facts"),
        ("n1", "rest"),
    ]
    # The spec's scorer is one argument away: priority 9 first.
    spec = store.select(POOLS, context, now=NOW, scorer=default_scorer)
    assert [c.entry["id"] for c in spec.chosen] == ["fix-1", "f3", "f1", "n1"]
    # f2 lost the facts pool to its cap, then the catch-all pool's budget (25 of 30 used).
    assert [(d.entry["id"], d.reason, d.pool) for d in selection.dropped] == [
        ("f2", "token_budget", "rest"),
        ("n2", "inactive", None),
    ]
    core = select(store.entries(), POOLS, context, now=NOW, scorer=default_adapter_scorer())
    assert [c.entry["id"] for c in core.chosen] == [c.entry["id"] for c in selection.chosen]
    assert {k: [e["id"] for e in v] for k, v in store.retrieve_pools(POOLS, context, now=NOW).items()} == {
        "corrections": ["fix-1"],
        "facts": ["f1", "f3"],
        "rest": ["n1"],
    }
    scoped = store.select(POOLS, context, now=NOW, visibility=Visibility(require_tags=("x",)))
    assert scoped.chosen == [] and {d.reason for d in scoped.dropped} == {"tags", "inactive"}


def test_supersede_hides_the_old_entry_from_selection_but_keeps_it_for_audit(tmp_path):
    store = fresh(tmp_path)
    store.add([{"id": "fix-1", "type": "correction", "scope": "always", "content": "Never force-push."}])
    new_id = store.supersede(
        "fix-1",
        {"id": "fix-1b", "type": "correction", "scope": "always", "content": "Never force-push to shared branches."},
    )
    assert new_id == "fix-1b"
    assert store.get("fix-1")["superseded_by"] == "fix-1b"
    assert store.get("fix-1b")["supersedes"] == "fix-1"
    assert [e["id"] for e in store.entries()] == ["fix-1", "fix-1b"]
    selection = store.select(POOLS, now=NOW)
    assert [c.entry["id"] for c in selection.chosen] == ["fix-1b"]
    assert [(d.entry["id"], d.reason) for d in selection.dropped] == [("fix-1", "inactive")]
    with pytest.raises(ValueError, match="'fix-1' is already superseded by 'fix-1b'"):
        store.supersede("fix-1", {"content": "a fork of history"})
    with pytest.raises(EntryNotFound, match="no entry with id 'ghost'"):
        store.supersede("ghost", {"content": "x"})
    with pytest.raises(EntryError, match="field 'id' must differ"):
        store.supersede("fix-1b", {"id": "fix-1b", "content": "x"})
    assert len(store) == 2


def test_delete_forgets_the_entry_its_history_and_its_bytes(tmp_path):
    store = fresh(tmp_path)
    store.add([{"id": "addr", "content": "home address: 12 Secretive Lane"}, {"id": "keep", "content": "kept"}])
    store.supersede("addr", {"id": "addr2", "content": "home address: 99 Hidden Road"})
    store.select(POOLS, now=NOW)  # the index holds them too
    assert store.delete("addr2") is True
    assert store.get("addr2") is None and store.get("addr") is None  # the version it superseded went too
    assert [e["id"] for e in store.entries()] == ["keep"]
    assert [c.entry["id"] for c in store.select(POOLS, now=NOW).chosen] == ["keep"]
    assert store.delete("addr2") is False
    store.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("memory.db"))
    assert b"Secretive" not in raw and b"Hidden Road" not in raw


def test_delete_can_keep_the_history(tmp_path):
    store = fresh(tmp_path)
    store.add([{"id": "v1", "content": "one"}])
    store.supersede("v1", {"id": "v2", "content": "two"})
    assert store.delete("v2", history=False) is True
    assert [e["id"] for e in store.entries()] == ["v1"]
    assert store.get("v1")["superseded_by"] == "v2"


@pytest.mark.parametrize(
    ("bad", "message", "field"),
    [
        ({"id": "t", "content": "x", "tags": "ops"}, "entry 't' (index 1): field 'tags' must be a list", "tags"),
        (
            {"id": "p", "content": "x", "base_priority": 10**400},
            "entry 'p' (index 1): field 'base_priority'",
            "base_priority",
        ),
        (
            {"id": "n", "content": "x", "base_priority": float("nan")},
            "field 'base_priority' must be a finite",
            "base_priority",
        ),
        (
            {"id": "s", "content": "x", "extra": {1, 2}},
            "entry 's' (index 1): field 'extra' cannot be stored as JSON",
            "extra",
        ),
        ({"id": "f", "content": "x", "extra": float("inf")}, "field 'extra' cannot be stored as JSON", "extra"),
        (
            {"id": "d", "content": "x", "deep": nested(100_000)},
            "entry 'd' (index 1): field 'deep' cannot be stored",
            "deep",
        ),
        ({"id": "", "content": "x"}, "field 'id' must be a non-empty string", "id"),
        ({"id": "ok", "content": "x"}, "entry 'ok' (index 1): field 'id' repeats an earlier entry", "id"),
        ({"id": "k", "content": 5}, "entry 'k' (index 1): field 'content' must be a string", "content"),
        ({"content": "x", 7: "int key"}, "non-string key 7", None),
    ],
)
def test_bad_entry_raises_entry_error_naming_entry_and_field_and_writes_nothing(tmp_path, bad, message, field):
    store = fresh(tmp_path)
    version = store.version
    with pytest.raises(EntryError, match=message.replace("(", r"\(").replace(")", r"\)")) as caught:
        store.add([{"id": "ok", "content": "fine"}, bad])
    assert caught.value.field == field
    assert len(store) == 0 and store.version == version


def test_an_id_already_stored_is_refused_and_the_batch_is_not_written(tmp_path):
    store = fresh(tmp_path)
    store.add([{"id": "a", "content": "first"}])
    with pytest.raises(EntryError, match=r"entry 'a' \(index 1\): field 'id' is already in the store") as caught:
        store.add([{"id": "b", "content": "new"}, {"id": "a", "content": "again"}])
    assert caught.value.field == "id"
    assert [e["id"] for e in store.entries()] == ["a"]
    with pytest.raises(TypeError, match="wrap a single entry in a list"):
        store.add({"content": "one"})  # type: ignore[arg-type]
    with pytest.raises(EntryError, match="is not a mapping"):
        store.add(["just text"])  # type: ignore[list-item]


def test_version_changes_with_content_and_agrees_across_store_objects(tmp_path):
    one = fresh(tmp_path)
    two = fresh(tmp_path)
    assert one.version == two.version == 0
    one.add([{"id": "a", "content": "x"}, {"id": "b", "content": "y"}])
    assert one.version == two.version == 2
    assert one.version == 2  # stable while nothing changes
    two.delete("a")
    assert one.version == two.version == 3
    two.supersede("b", {"id": "c", "content": "z"})
    assert one.version == two.version == 5


def test_entries_filter_by_namespace(tmp_path):
    store = fresh(tmp_path)
    store.add(
        [
            {"id": "a", "content": "x", "namespace": "t1"},
            {"id": "b", "content": "y"},
            {"id": "c", "content": "z", "namespace": "t1"},
        ]
    )
    assert [e["id"] for e in store.entries("t1")] == ["a", "c"]
    assert [e["id"] for e in store.entries()] == ["a", "b", "c"]


def test_empty_and_v0_files_migrate_to_the_current_schema(tmp_path):
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    with SQLiteMemoryStore(empty) as store:
        assert store.add([{"id": "a", "content": "x"}]) == ["a"]
    conn = sqlite3.connect(empty)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 1
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    v0 = tmp_path / "v0.db"
    conn = sqlite3.connect(v0)
    conn.execute("PRAGMA user_version = 0")
    conn.execute("VACUUM")  # a real SQLite file with no tables
    conn.close()
    with SQLiteMemoryStore(v0) as store:
        assert len(store) == 0 and store.version == 0


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("CREATE TABLE invoices (n INTEGER)", "not a poolsplit memory store \\(it holds other tables: invoices\\)"),
        ("PRAGMA user_version = 99", "schema version 99 is newer than this poolsplit-adapters reads \\(1\\)"),
    ],
)
def test_foreign_or_newer_files_are_refused_untouched(tmp_path, setup, message):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute(setup)
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=message):
        SQLiteMemoryStore(path)
    conn = sqlite3.connect(path)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == (
        ["invoices"] if "invoices" in setup else []
    )
    conn.close()


def test_a_file_that_is_not_sqlite_is_a_store_error(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("just some notes, not a database at all" * 10)
    with pytest.raises(StoreError, match="notes.db: not a SQLite database"):
        SQLiteMemoryStore(path)


def test_threads_share_one_store(tmp_path):
    store = fresh(tmp_path)
    errors = []

    def work(n):
        try:
            for k in range(10):
                store.add([{"id": "t%d-%d" % (n, k), "type": "fact", "content": "thread %d item %d" % (n, k)}])
                store.select(POOLS, {"message": "thread"}, now=NOW)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert sorted(e["id"] for e in store.entries()) == sorted("t%d-%d" % (n, k) for n in range(4) for k in range(10))
    assert store.full_loads == 1


def _writable(entry):
    """A generated entry as a write path accepts it (check_write): the core
    selects blank content, unparseable dates and a token_count that is not a
    positive int (counting the content instead), but no store writes them."""
    entry = dict(entry)
    if not entry["content"].strip():
        entry["content"] = "note"
    if entry.get("created") == "garbage":
        del entry["created"]
    if entry.get("token_count") is not None and given_token_count(entry) is None:
        del entry["token_count"]
    return entry


WRITABLE = entry_strategy().map(_writable)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(WRITABLE, min_size=1, max_size=3)),
        st.tuples(st.just("supersede"), st.integers(0, 50), WRITABLE),
        st.tuples(st.just("delete"), st.integers(0, 50), st.booleans()),
    ),
    min_size=1,
    max_size=8,
)
CONTEXTS = st.fixed_dictionaries(
    {"message": st.sampled_from(["deploy staging", "review tests", ""]), "tags": st.sampled_from([[], ["ops"]])}
)


@settings(max_examples=60)
@given(ops=OPS, context=CONTEXTS)
def test_a_long_lived_store_stays_identical_to_the_core_over_the_file(ops, context):
    # A reader kept in step incrementally must select exactly what the core
    # selects over the file's entries (in store order), after every write
    # another store object makes.
    with tempfile.TemporaryDirectory() as folder:
        writer = SQLiteMemoryStore(folder + "/m.db", clock=CLOCK)
        reader = SQLiteMemoryStore(folder + "/m.db", clock=CLOCK)
        reader.select(POOLS, context, now=NOW)
        for op in ops:
            live = [e["id"] for e in writer.entries() if not e.get("superseded_by")]
            if op[0] == "add":
                writer.add([{k: v for k, v in e.items() if k != "id"} for e in op[1]])
            elif op[0] == "supersede" and live:
                # the new version takes its entry's namespace (a version stays in its
                # namespace) and is open (supersede refuses one given closed)
                given = {k: v for k, v in op[2].items() if k not in ("id", "namespace", "superseded_by", "valid_until")}
                writer.supersede(live[op[1] % len(live)], dict(given, status="active"))
            elif op[0] == "delete" and live:
                writer.delete(live[op[1] % len(live)], history=op[2])
            got = reader.select(POOLS, context, now=NOW)
            stored = reader.entries()
            want = select(stored, POOLS, context, now=NOW, scorer=default_adapter_scorer().over(stored))
            assert [(c.entry["id"], c.pool) for c in got.chosen] == [(c.entry["id"], c.pool) for c in want.chosen]
            assert [(d.entry["id"], d.reason) for d in got.dropped] == [(d.entry["id"], d.reason) for d in want.dropped]
        assert reader.full_loads == 1
        writer.close()
        reader.close()


def test_a_lone_surrogate_is_an_entry_error_naming_entry_and_field(tmp_path):
    store = SQLiteMemoryStore(tmp_path / "memory.db")
    with pytest.raises(EntryError) as caught:
        store.add([{"id": "ok", "content": "fine"}, {"id": "bad", "content": "x", "tags": ["lone \ud800"]}])
    assert (caught.value.entry_id, caught.value.field, caught.value.index) == ("bad", "tags", 1)
    assert store.entries() == []


def _entry_x_written_as(tmp_path: Any, stored: str) -> Any:
    """A store file whose entry 'x' another program rewrote as ``stored``."""
    path = tmp_path / "memory.db"
    with SQLiteMemoryStore(path) as store:
        store.add([{"id": "x", "content": "deploy"}])
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE memory SET entry = ? WHERE id = 'x'", (stored,))
    raw.close()
    return path


@pytest.mark.parametrize(
    ("stored", "why"),
    [
        ('{"id": "x", "tags": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ('{"id": "x", "content": "a", "base_priority": NaN}', "NaN is not a JSON number"),
        ('{"id": "x", "content": 5', "Expecting ',' delimiter"),
    ],
)
def test_a_row_another_program_wrote_is_refused_naming_the_file_and_entry(tmp_path, stored, why):
    """Nesting past Python's recursion limit raised RecursionError (a
    traceback from the CLI); NaN, which the store never writes, was read."""
    path = _entry_x_written_as(tmp_path, stored)
    with SQLiteMemoryStore(path) as store, pytest.raises(StoreError) as info:
        store.entries()
    assert str(info.value) == "%s: entry 'x' is not valid JSON in the file (%s)" % (path, why)


@pytest.mark.parametrize("value", ["abc", "", "missing"])
def test_a_change_counter_another_program_wrote_is_refused_naming_the_file(tmp_path, value):
    """The ``meta`` table's counter read as an int: "invalid literal for
    int() with base 10: 'abc'" named neither the file nor what it read, and
    a deleted counter was a KeyError traceback from the CLI."""
    path = tmp_path / "memory.db"
    with SQLiteMemoryStore(path) as store:
        store.add([{"id": "x", "content": "deploy"}])
    with sqlite3.connect(path) as raw:
        if value == "missing":
            raw.execute("DELETE FROM meta WHERE key = 'seq'")
            value = None
        else:
            raw.execute("UPDATE meta SET value = ? WHERE key = 'seq'", (value,))
    raw.close()
    with pytest.raises(StoreError) as info, SQLiteMemoryStore(path) as store:
        store.entries()
    assert str(info.value) == "%s: its change counter (meta 'seq') is %r, not a whole number" % (path, value)


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_write_to_a_store_file_deleted_or_replaced_since_it_opened_is_refused(tmp_path, how):
    """Found by an adversarial run: the open connection went on writing to the
    unlinked file, each write acknowledged, and all of it was gone at close
    (the path held nothing, or another program's database)."""
    import os

    path = tmp_path / "memory.db"
    store = fresh(tmp_path)
    store.add([{"id": "a", "content": "alpha"}])
    if how == "deleted":
        os.remove(path)
    else:
        with SQLiteMemoryStore(tmp_path / "other.db") as other:
            other.add([{"id": "o", "content": "other"}])
        os.replace(tmp_path / "other.db", path)
    with pytest.raises(StoreError) as info:
        store.add([{"id": "b", "content": "beta"}])
    assert str(info.value) == (
        "%s: the file was %s since this store opened it; the write was not made (open the store again)"
        % (path, "deleted or replaced")
    )
    store.close()


@pytest.mark.parametrize(
    ("stored", "why"),
    [
        ('{"id": "x", "content": 5}', "field 'content' must be a string, got int 5"),
        ('{"id": "x"}', "field 'content' is missing (every entry needs its text)"),
        ('{"id": "y", "content": "deploy"}', "its row holds the id 'y'"),
    ],
)
def test_a_row_another_program_wrote_that_is_no_entry_is_refused_naming_the_file_and_entry(tmp_path, stored, why):
    """Found by an adversarial run: such a row was read as it was: ``get``
    returned it, a select raised an EntryError naming neither the file nor
    the row, and a write of an unrelated entry failed as "entry 'x' (index 0)"
    (the row's id under ``y`` was listed by ``entries`` and found by no ``get``)."""
    path = _entry_x_written_as(tmp_path, stored)
    with SQLiteMemoryStore(path) as store, pytest.raises(StoreError) as info:
        store.entries()
    assert str(info.value) == "%s: entry 'x' in the file is no entry (%s)" % (path, why)


@pytest.mark.parametrize("path", [3, None, ["memory.db"], 3.5])
def test_a_path_that_is_no_file_name_is_refused_naming_path(path):
    """``SQLiteMemoryStore(3)`` said only "expected str, bytes or
    os.PathLike object, not int", from ``pathlib``."""
    with pytest.raises(ArgumentError) as info:
        SQLiteMemoryStore(path)
    assert str(info.value) == (
        "SQLiteMemoryStore path must be a file name (str or os.PathLike) or ':memory:', got %s %r"
        % (type(path).__name__, path)
    )
