"""SQLiteMemoryStore(":memory:"): one private connection, so no write-ahead
log is needed; the verbs mean what they mean on a file, and nothing
survives ``close``. Shared-cache in-memory URIs and an empty path are
refused with a StoreError naming them."""

from __future__ import annotations

import datetime
import os

import pytest

from poolsplit_adapters import Pool
from poolsplit_adapters.stores import MemoryStore, SQLiteMemoryStore, StoreError

NOW = datetime.datetime(2026, 7, 7, 12, 0, 0)
POOLS = [Pool("corrections", 0, 0, ("correction",)), Pool("facts", 40, 2, ("fact",))]
FIX = {"id": "fix", "type": "correction", "scope": "always", "content": "Never force-push to main."}
FACTS = [
    {"id": "f1", "type": "fact", "content": "Refunds round half-even."},
    {"id": "f2", "type": "fact", "content": "Invoices are sent on the first."},
]


@pytest.fixture(autouse=True)
def in_empty_folder(tmp_path, monkeypatch):
    """Each test runs in an empty folder, to see that no file is made."""
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("target", [":memory:", "file::memory:", "file:scratch?mode=memory"])
def test_an_in_memory_store_adds_selects_and_loads_corrections_first(target, tmp_path):
    with SQLiteMemoryStore(target) as store:
        assert isinstance(store, MemoryStore) and store.in_memory and not store.read_only
        assert store.add([FIX, *FACTS]) == ["fix", "f1", "f2"]
        new = store.supersede("f1", {"id": "f1b", "type": "fact", "content": "Refunds round half-up."})
        selection = store.select(POOLS, {"message": "refund rounding"}, now=NOW)
        assert [(c.entry["id"], c.always) for c in selection.chosen] == [("fix", True), ("f1b", False), ("f2", False)]
        assert store.get("f1")["superseded_by"] == new == "f1b"  # type: ignore[index]
        assert store.delete("f2") and store.get("f2") is None and len(store) == 3
        assert store.forget(namespace="nobody") == 0
        assert store.version == 6  # one change number per row written or deleted, as on a file
    assert os.listdir(tmp_path) == []  # no file, no log


def test_a_failed_batch_writes_nothing_in_memory():
    with SQLiteMemoryStore(":memory:") as store:
        store.add([FIX])
        with pytest.raises(Exception, match="'fix'"):
            store.add([FACTS[0], {**FIX, "content": "Other text."}])
        assert [e["id"] for e in store.entries()] == ["fix"]


def test_each_in_memory_store_is_its_own_and_gone_when_closed():
    first, second = SQLiteMemoryStore(":memory:"), SQLiteMemoryStore(":memory:")
    first.add([FIX])
    assert second.entries() == [] and second.version == 0
    first.close()
    with SQLiteMemoryStore(":memory:") as reopened:
        assert reopened.entries() == []  # reopening starts empty: nothing survives close
    second.close()


def test_a_file_named_like_the_memory_target_is_left_alone(tmp_path):
    (tmp_path / ":memory:").write_bytes(b"not a database")
    with SQLiteMemoryStore(":memory:") as store:
        store.add([FIX])
    assert (tmp_path / ":memory:").read_bytes() == b"not a database"


@pytest.mark.parametrize("target", ["file::memory:?cache=shared", "file:scratch?mode=memory&cache=shared"])
def test_a_shared_cache_in_memory_database_is_refused(target):
    with pytest.raises(StoreError) as refused:
        SQLiteMemoryStore(target)
    assert str(refused.value) == (
        "%s: a shared-cache in-memory database is refused: other connections of this process would share it "
        "without the write-ahead log that keeps the store's connections in step; use ':memory:' (one private "
        "connection) or a file path (e.g. in tempfile.mkdtemp())" % target
    )


def test_an_empty_path_is_refused():
    with pytest.raises(StoreError) as refused:
        SQLiteMemoryStore("")
    assert str(refused.value) == (
        "'': an empty path names no store file (an unset setting?); give a file path, or ':memory:' for a "
        "store that lives only as long as the object"
    )


def test_another_uri_is_refused_not_taken_as_a_file_name(tmp_path):
    with pytest.raises(StoreError) as refused:
        SQLiteMemoryStore("file:notes.db?mode=rwc")
    assert str(refused.value) == (
        "file:notes.db?mode=rwc: only in-memory URIs are read (file::memory:, mode=memory); pass the file's path"
    )
    assert os.listdir(tmp_path) == []
