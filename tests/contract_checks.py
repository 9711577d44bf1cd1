"""The store contract's write semantics, checked the same way on every
engine (the Postgres suites run it over PostgresStore, PGVector and
PGVectorStore; tests/unit/test_store_contract.py covers the in-process stores)."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

import pytest

from poolsplit_adapters import EntryError
from poolsplit_adapters.stores import EntryNotFound


class _InNamespace:
    """``memory`` with every added or written entry in ``namespace`` (reads
    pass through): one check, run namespaced where a store needs it."""

    def __init__(self, memory: Any, namespace: str) -> None:
        self.memory, self.namespace = memory, namespace

    def _placed(self, entries: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
        return [dict(e, namespace=self.namespace) for e in entries]

    def add(self, entries: Sequence[Mapping[str, Any]]) -> Any:
        return self.memory.add(self._placed(entries))

    def write(self, entries: Sequence[Mapping[str, Any]]) -> Any:
        return self.memory.write(self._placed(entries))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.memory, name)


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


def check_supersede_back_to_a_closed_version(memory: Any) -> None:
    """``a -> b -> c``, then ``c`` superseded by ``a``'s own id and text: a
    new sighting of a closed version's text opens a version of its own (its
    ``returned_id``, as a write of that text gets), never a loop through
    ``a``; the same sighting again, or an id stored active, is refused."""
    fact = {"type": "fact", "source": "s1", "created": "2026-01-01T00:00:00Z"}
    memory.add([dict(fact, id="a", content="Deploys go out from staging.")])
    memory.supersede(
        "a", dict(fact, id="b", content="Deploys go out from release.", source="s2", created="2026-02-01T00:00:00Z")
    )
    memory.supersede(
        "b", dict(fact, id="c", content="Deploys go out from main.", source="s3", created="2026-03-01T00:00:00Z")
    )
    back = dict(fact, id="a", content="Deploys go out from staging.", source="s4", created="2026-04-01T00:00:00Z")
    returned = memory.supersede("c", back)
    assert returned == "fact-af6c8e6ffad9589b0379d198"
    assert [memory.get(i).get("superseded_by") for i in ("a", "b", "c", returned)] == ["b", "c", returned, None]
    assert memory.get(returned)["supersedes"] == "c" and memory.get(returned)["content"] == back["content"]
    assert [v.id for v in memory.history("a")] == ["a", "b", "c", returned]
    memory.add([dict(fact, id="k", content="Keep the changelog short.", created="2026-01-02T00:00:00Z")])
    version = memory.version
    for again, what in (
        (
            dict(fact, id="b", content="Deploys go out from release.", source="s2", created="2026-02-01T00:00:00Z"),
            "a closed version",
        ),
        (dict(fact, id="k", content="Keep the changelog short.", created="2026-01-02T00:00:00Z"), "an active entry"),
    ):
        with pytest.raises(EntryError) as caught:
            memory.supersede(returned, again)
        assert (caught.value.entry_id, caught.value.field) == (again["id"], "id")
        assert "is already in the store (%s): a new version needs an id of its own" % what in str(caught.value)
    assert memory.version == version and memory.get(returned).get("superseded_by") is None


def check_add_with_supersedes_closes_its_predecessor(memory: Any) -> None:
    """An entry added with ``supersedes`` (an import's line) closes the
    version it names as ``supersede`` does, so ``history`` holds both; one
    naming a version superseded already, or a loop, is refused by field."""
    memory.add([{"id": "p", "type": "fact", "content": "Refunds round up.", "created": "2026-01-01T00:00:00Z"}])
    new = {
        "id": "q",
        "type": "fact",
        "content": "Refunds round half-even.",
        "supersedes": "p",
        "source": "import",
        "created": "2026-02-01T00:00:00Z",
    }
    assert memory.add([new]) == ["q"]
    closed = memory.get("p")
    assert [closed.get(k) for k in ("superseded_by", "valid_until", "closed_source")] == [
        "q",
        "2026-02-01T00:00:00Z",
        "import",
    ]
    assert memory.get("q")["valid_from"] == "2026-02-01T00:00:00Z"
    assert [v.id for v in memory.history("q")] == ["p", "q"] == [v.id for v in memory.history("p")]
    version = memory.version
    with pytest.raises(EntryError) as caught:
        memory.add([{"id": "r", "type": "fact", "content": "Refunds round down.", "supersedes": "p"}])
    assert (caught.value.entry_id, caught.value.field) == ("r", "supersedes")
    assert "names 'p', which is already superseded by 'q'" in str(caught.value)
    with pytest.raises(EntryError) as caught:
        memory.add(
            [
                {"id": "x", "type": "fact", "content": "One.", "supersedes": "y"},
                {"id": "y", "type": "fact", "content": "Two.", "supersedes": "x"},
            ]
        )
    assert (caught.value.entry_id, caught.value.field) == ("x", "supersedes") and "cycle" in str(caught.value)
    assert memory.version == version and memory.get("r") is None and memory.get("x") is None
    # a history added in one write: the older version closed by the newer one
    memory.add(
        [
            {"id": "m1", "type": "fact", "content": "Standup at nine.", "created": "2026-01-01T00:00:00Z"},
            {
                "id": "m2",
                "type": "fact",
                "content": "Standup at ten.",
                "supersedes": "m1",
                "created": "2026-03-01T00:00:00Z",
            },
        ]
    )
    assert memory.get("m1")["superseded_by"] == "m2" and memory.get("m1")["valid_until"] == "2026-03-01T00:00:00Z"
    assert [v.id for v in memory.history("m2")] == ["m1", "m2"]


def check_a_changed_statement_supersedes_the_older(memory: Any, namespace: Optional[str] = None) -> None:
    """A fact, instruction or preference that changes an active stored one of
    its namespace and type supersedes it on write (memory/changes.py): the
    older is closed and kept in history; a statement of another subject, a
    repeat, a correction and another type are left alone. With
    ``namespace``, every entry is written in it (a store that cannot list
    its entries reads the namespace to find the older version)."""
    memory = _InNamespace(memory, namespace) if namespace is not None else memory
    memory.add(
        [
            {"id": "l1", "type": "fact", "content": "The launch is on March 3.", "created": "2026-01-01T00:00:00Z"},
            {"id": "r1", "type": "fact", "content": "The release notes are in the wiki.", "created": "2026-01-01T00:00:00Z"},
            {"id": "i1", "type": "instruction", "content": "Always use tabs.", "created": "2026-01-01T00:00:00Z"},
            {"id": "n1", "type": "note", "content": "The launch is on March 3.", "created": "2026-01-01T00:00:00Z"},
            {"id": "fx", "type": "fact", "scope": "always", "content": "The budget is 5 dollars.",
             "created": "2026-01-01T00:00:00Z"},
        ]
    )  # fmt: skip
    report = memory.write(
        [
            {"id": "l2", "type": "fact", "content": "The launch moved to March 17.", "created": "2026-02-01T00:00:00Z"},
            {"id": "i2", "type": "instruction", "content": "Never use tabs.", "created": "2026-02-01T00:00:00Z"},
            {"id": "b2", "type": "fact", "content": "The budget is 9 dollars.", "created": "2026-02-01T00:00:00Z"},
        ]
    )  # fmt: skip
    assert report.ids == ["l2", "i2", "b2"] and report.kept == [None, None, None]
    mine = [memory.get(i) for i in ("l1", "r1", "i1", "n1", "fx", "l2", "i2", "b2")]
    closed = {e["id"]: e.get("superseded_by") for e in mine if e.get("superseded_by")}
    assert closed == {"l1": "l2", "i1": "i2"}  # not the note, not the correction
    assert memory.get("l1")["valid_until"] == "2026-02-01T00:00:00Z"
    assert memory.get("l2")["supersedes"] == "l1"
    assert [v.id for v in memory.history("l2")] == ["l1", "l2"]
    memory.add(
        [{"id": "l3", "type": "fact", "content": "The launch is now March 24.", "created": "2026-03-01T00:00:00Z"}]
    )
    assert [v.id for v in memory.history("l1")] == ["l1", "l2", "l3"]
    assert memory.get("r1").get("superseded_by") is None


#: Every verb of the store contract (sync and async): each a wrapper
#: written once in StoreVerbs over the primitives.
CONTRACT_VERBS = (
    "add", "aadd", "write", "awrite", "get", "aget", "entries", "aentries", "existing", "aexisting",
    "supersede", "asupersede", "delete", "adelete", "history", "forget", "aforget", "expired",
    "sweep_expired", "consolidate",
)  # fmt: skip
#: The verbs a store writes again, and why: BaseStoreMemory's ``get`` reads
#: its whole namespace chain and its ``forget`` any namespace of the store,
#: and its ``write``/``awrite`` run one at a time per namespace (no transaction);
#: SQLite's ``delete``/``forget`` overwrite the file's bytes (then call the
#: contract's); LlamaIndex's memory store writes through to its durable store.
OWN_VERBS: Dict[str, frozenset[str]] = {
    "BaseStoreMemory": frozenset({"get", "aget", "forget", "aforget", "write", "awrite"}),
    "SQLiteMemoryStore": frozenset({"delete", "forget"}),
    "PoolSplitMemoryStore": frozenset(
        "write awrite consolidate supersede asupersede delete adelete forget aforget sweep_expired".split()
    ),
}


def check_implements_the_contract(memory: Any, *, async_twins: bool = True, lists: bool = True) -> None:
    """``memory`` is a StoreVerbs (and so a MemoryStore) with no primitive
    left unimplemented, writes again only the verbs `OWN_VERBS` names, and
    (``async_twins``) its async verbs answer as the sync ones do."""
    import asyncio

    from poolsplit_adapters.stores import MemoryStore, StoreVerbs

    kind = type(memory)
    assert isinstance(memory, StoreVerbs) and isinstance(memory, MemoryStore)
    assert not kind.__abstractmethods__
    own = {verb for verb in CONTRACT_VERBS if getattr(kind, verb) is not getattr(StoreVerbs, verb)}
    expected = next((v for k, v in OWN_VERBS.items() if any(c.__name__ == k for c in kind.__mro__)), frozenset())
    assert own == expected, kind.__name__
    if not async_twins:
        return
    run = asyncio.run
    first = {"id": "c-1", "type": "fact", "content": "Invoices go out on the 1st.", "created": "2026-01-01T00:00:00Z"}
    assert run(memory.aadd([first])) == ["c-1"]
    assert run(memory.aget("c-1"))["content"] == memory.get("c-1")["content"] == "Invoices go out on the 1st."
    assert run(memory.aexisting(["c-1", "c-none"])) == {"c-1"} == memory.existing(["c-1", "c-none"])
    second = {"id": "c-2", "type": "fact", "content": "Invoices go out on the 2nd."}
    assert run(memory.asupersede("c-1", second)) == "c-2"
    assert memory.get("c-1")["superseded_by"] == "c-2" and memory.get("c-2")["supersedes"] == "c-1"
    assert [v.id for v in memory.history("c-2")] == ["c-1", "c-2"]
    if lists:
        listed = sorted(e["id"] for e in run(memory.aentries()))
        assert listed == sorted(e["id"] for e in memory.entries()) and {"c-1", "c-2"} <= set(listed)
    assert run(memory.adelete("c-2")) is True
    assert memory.get("c-1") is None and memory.get("c-2") is None
    assert run(memory.adelete("c-2")) is False
