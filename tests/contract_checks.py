"""The store contract's write semantics, checked the same way on every
engine (the Postgres suites run it over PostgresStore, PGVector and
PGVectorStore; tests/unit/test_store_contract.py covers the in-process stores)."""

from __future__ import annotations

from typing import Any

import pytest

from poolsplit_adapters import EntryError
from poolsplit_adapters.stores import EntryNotFound


def check_add_and_supersede(memory: Any) -> None:
    """``v1`` added once (a second add of its id refused), superseded by
    ``v2`` (the version changes, the chain is recorded both ways), and the
    refusals: an already superseded entry, a missing one."""
    memory.add([{"id": "v1", "type": "fact", "content": "Refunds round up."}])
    with pytest.raises(EntryError, match="already in the store"):
        memory.add([{"id": "v1", "content": "again"}])
    version = memory.version
    assert memory.supersede("v1", {"id": "v2", "type": "fact", "content": "Refunds round half-even."}) == "v2"
    assert memory.version != version
    assert (memory.get("v1")["superseded_by"], memory.get("v2")["supersedes"]) == ("v2", "v1")
    with pytest.raises(ValueError, match="already superseded"):
        memory.supersede("v1", {"id": "v3", "content": "x"})
    with pytest.raises(EntryNotFound):
        memory.supersede("missing", {"id": "v4", "content": "x"})
