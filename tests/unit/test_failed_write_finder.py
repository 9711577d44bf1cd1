"""A write whose commit fails leaves nothing of itself in the store's kept
duplicate finder, even when another writer's commit, started before the
failure, brings that finder along after it: retried, its lines were found
repeats of themselves and counted ``duplicate`` although each was stored
once (seen with eight threads flushing into a store whose commits failed).

The interleaving is made deterministic on a real SQLite store: writer B's
commit runs writer A's whole failing write before its own goes through.
"""

from __future__ import annotations

import pathlib
import sqlite3
from typing import Any, Callable, Optional

import pytest

from poolsplit_adapters.stores import SQLiteMemoryStore


class Interleaved(SQLiteMemoryStore):
    fail_next = False
    inside: Optional[Callable[[], None]] = None

    def commit(self, change: Any) -> Any:
        if self.fail_next:
            self.fail_next = False
            raise sqlite3.OperationalError("disk I/O error (injected)")
        if self.inside is not None:
            run, self.inside = self.inside, None
            run()
        return super().commit(change)


SAID = ["The staging deploy finished at noon.", "Refunds are rounded half-even.", "Lunch is at one o'clock."]


def line(n: int) -> dict:
    return {"id": "line-%d" % n, "type": "episode", "content": SAID[n], "namespace": "t"}


def test_a_failed_writes_entries_never_outlive_it_in_the_kept_finder(tmp_path: pathlib.Path):
    with Interleaved(tmp_path / "m.db") as store:
        store.write([line(0)])  # a finder is kept from here on

        def a_fails() -> None:
            store.fail_next = True
            with pytest.raises(sqlite3.OperationalError):
                store.write([line(1)])

        store.inside = a_fails
        assert store.write([line(2)]).kept == [None]  # B, with A's failed write inside its commit
        assert store.get("line-1") is None  # A's write left nothing
        retried = store.write([line(1)])
        assert retried.kept == [None]  # written, not a repeat of a phantom of itself
        stored = store.get("line-1")
        assert stored is not None and "seen" not in stored
        assert sorted(e["id"] for e in store.entries()) == ["line-0", "line-1", "line-2"]
