"""`ProtocolStore`, the adapter from a host's store that meets the public
protocol only to the store contract: its verbs reach the host's store
with every flag they were given."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import pytest

from poolsplit_adapters import MemoryIndex, Pool, select
from poolsplit_adapters.stores.memory import InProcessStore
from poolsplit_adapters.stores.protocol_store import ProtocolStore
from poolsplit_adapters.stores.sqlite import SQLiteMemoryStore

OLD = {"id": "fix-1", "type": "correction", "content": "Quote amounts in dollars.", "created": "2026-01-01T00:00:00Z"}
NEW = {"id": "fix-2", "type": "correction", "content": "Quote amounts in cents.", "created": "2026-02-01T00:00:00Z"}


def _history(store: Any) -> Any:
    store.add([OLD])
    store.supersede("fix-1", NEW)
    return store


def test_delete_without_history_reaches_a_sqlite_store_and_keeps_the_older_version(tmp_path):
    with SQLiteMemoryStore(tmp_path / "memory.db") as sqlite:
        verbs = ProtocolStore(_history(sqlite))
        assert verbs.delete("fix-2", history=False) is True
        assert [e["id"] for e in sqlite.entries()] == ["fix-1"]
        assert sqlite.get("fix-1")["superseded_by"] == "fix-2"  # kept, closed as it was


def test_delete_with_history_forgets_the_older_versions_too(tmp_path):
    with SQLiteMemoryStore(tmp_path / "memory.db") as sqlite:
        assert ProtocolStore(_history(sqlite)).delete("fix-2") is True
        assert sqlite.entries() == []


class OwnStore:
    """A host's store meeting the protocol only, whose delete has no flag."""

    def __init__(self) -> None:
        self.inner = InProcessStore([])

    def add(self, entries: Any) -> List[str]:
        return self.inner.add(entries)

    def get(self, entry_id: str) -> Optional[Dict[str, Any]]:
        return self.inner.get(entry_id)

    def supersede(self, entry_id: str, new_entry: Any) -> str:
        return self.inner.supersede(entry_id, new_entry)

    def delete(self, entry_id: str) -> bool:
        return self.inner.delete(entry_id)

    def entries(self, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        return self.inner.entries(namespace)

    def select(self, pools: Any, context: Any = None, **options: Any) -> Any:
        return self.inner.select(pools, context, **options)

    @property
    def version(self) -> Any:
        return self.inner.version


def test_delete_without_history_is_refused_when_the_hosts_delete_has_no_such_flag():
    own = _history(OwnStore())
    with pytest.raises(TypeError) as err:
        ProtocolStore(own).delete("fix-2", history=False)
    assert str(err.value) == (
        "delete('fix-2', history=False): OwnStore.delete takes no history flag, so it would forget the older "
        "versions too; nothing was deleted"
    )
    assert [e["id"] for e in own.entries()] == ["fix-1", "fix-2"]


NOTE = {"id": "n1", "type": "note", "content": "Deploys go out on Tuesdays."}


class PassesOn:
    """A host's store whose select is the core's over its entries, its options passed on."""

    def __init__(self) -> None:
        self.given: List[Dict[str, Any]] = []

    def select(self, pools: Any, context: Any = None, **options: Any) -> Any:
        self.given.append(dict(options))
        return select([NOTE], pools, context, **options)


class NamesIt:
    """A host's store whose select names marker_cost (an index's, here)."""

    def __init__(self) -> None:
        self.given: List[int] = []

    def select(self, pools: Any, context: Any = None, *, marker_cost: int = 0, **options: Any) -> Any:
        self.given.append(marker_cost)
        return MemoryIndex([NOTE]).select(pools, context, marker_cost=marker_cost, **options)


def test_marker_cost_reaches_a_hosts_select_only_when_it_names_it():
    pools = [Pool("notes", 100, 3)]
    text = select([NOTE], pools).chosen[0].cost
    # The core's select takes no marker_cost: a select passing its options on to it is not given one.
    passes_on = PassesOn()
    assert [c.cost for c in ProtocolStore(passes_on).select(pools, None, marker_cost=9).chosen] == [text]  # type: ignore[arg-type]
    assert passes_on.given == [{}]
    names_it = NamesIt()
    assert [c.cost for c in ProtocolStore(names_it).select(pools, None, marker_cost=9).chosen] == [text + 9]  # type: ignore[arg-type]
    assert names_it.given == [9]
