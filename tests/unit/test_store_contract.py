"""One store contract: every store satisfies MemoryStore, and the same
sequence of writes has the same meaning on each (add, get, supersede,
delete, entries, select, version)."""

from __future__ import annotations

import datetime
import pathlib
from typing import Any, List

import pytest
from store_engines import NAMESPACE, counter, engines

from poolsplit_adapters import EntryError, Pool
from poolsplit_adapters.errors import ArgumentError
from poolsplit_adapters.langchain import BaseStoreMemory, namespace_label
from poolsplit_adapters.stores import EntryNotFound, InProcessStore, MemoryStore

NOW = datetime.datetime(2026, 7, 7, tzinfo=datetime.timezone.utc)
POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("facts", 200, 5, ("fact",))]
U1 = NAMESPACE


STORES = engines(POOLS)


@pytest.fixture(params=sorted(STORES))
def store(request: Any, tmp_path: pathlib.Path) -> Any:
    return STORES[request.param](tmp_path)


def fields(entry: Any, *keys: str) -> List[Any]:
    return [entry.get(k) for k in keys] if entry is not None else None


def chosen(store: Any) -> List[Any]:
    selection = store.select(POOLS, {"message": "refund rounding"}, now=NOW)
    return [(c.entry["id"], c.always) for c in selection.chosen]


def test_every_store_class_satisfies_the_memory_store_protocol(store):
    assert isinstance(store, MemoryStore)


def test_add_assigns_id_and_created_never_mutates_and_get_returns_a_copy(store):
    entry = {"type": "fact", "content": "Refunds round half-even."}
    [entry_id] = store.add([entry])
    assert entry == {"type": "fact", "content": "Refunds round half-even."}
    got = store.get(entry_id)
    assert fields(got, "id", "type", "content") == [entry_id, "fact", "Refunds round half-even."]
    assert isinstance(got["created"], str) and got["created"]
    got["content"] = "changed"
    assert store.get(entry_id)["content"] == "Refunds round half-even."
    assert store.get("missing") is None


def test_editing_what_a_read_returned_never_edits_the_store_or_its_history(store):
    # Found by an adversarial run: the in-memory stores handed out dict(entry),
    # whose lists were the stored ones. Read, add a tag, supersede (the
    # ordinary edit) had rewritten the old version's tags in place first.
    store.add([{"id": "fix-1", "type": "fact", "content": "Amounts in cents.", "tags": ["billing"], "x": {"k": [1]}}])
    version = store.version
    edited = store.get("fix-1")
    edited["tags"].append("refunds")
    edited["x"]["k"].append(2)
    store.entries()[0]["tags"].append("listed")
    assert fields(store.get("fix-1"), "tags", "x") == [["billing"], {"k": [1]}]
    assert store.version == version
    del edited["id"]
    new_id = store.supersede("fix-1", dict(edited, content="Amounts in cents, refunds too."))
    assert fields(store.get("fix-1"), "tags", "x", "superseded_by") == [["billing"], {"k": [1]}, new_id]
    assert fields(store.get(new_id), "tags", "x") == [["billing", "refunds"], {"k": [1, 2]}]


def test_the_entries_an_in_process_store_starts_with_share_nothing_with_the_caller():
    given = [{"id": "a", "type": "fact", "content": "Amounts in cents.", "tags": ["billing"]}]
    store = InProcessStore(given)
    given[0]["tags"].append("later")
    assert store.get("a")["tags"] == ["billing"]


@pytest.mark.parametrize("given", ["Refunds round half-even.", b"Refunds round half-even."])
def test_add_given_a_text_instead_of_entries_says_so_on_every_store(store, given):
    # A string was iterated into characters: "entry at index 0: is not a mapping (got str 'R')".
    with pytest.raises(TypeError) as raised:
        store.add(given)
    assert str(raised.value) == (
        "add() takes an iterable of entries (mappings such as {'content': ...}), got %s %r"
        % (type(given).__name__, given)
    )
    assert store.entries() == []


def test_add_refuses_a_stored_or_repeated_id_and_writes_nothing(store):
    store.add([{"id": "a", "content": "first", "type": "fact"}])
    before = store.version
    with pytest.raises(EntryError) as caught:
        store.add([{"id": "b", "content": "new", "type": "fact"}, {"id": "a", "content": "again", "type": "fact"}])
    assert caught.value.field == "id" and caught.value.entry_id == "a"
    with pytest.raises(EntryError, match="repeats"):
        store.add([{"id": "c", "content": "one"}, {"id": "c", "content": "two"}])
    assert sorted(e["id"] for e in store.entries()) == ["a"]
    assert store.version == before


@pytest.mark.parametrize(
    "entry, field",
    [
        ({"id": "x", "content": "Use cents.", "scope": "Always"}, "scope"),
        ({"id": "x", "content": "Use cents.", "scope": " always"}, "scope"),
        ({"id": "x", "content": "   "}, "content"),
        ({"id": "x", "content": ""}, "content"),
        ({"id": "x", "content": "Use cents.", "created": "yesterday"}, "created"),
        # A vector store wrote these, then refused them on every read (a
        # document's token_count must be a positive int): one write poisoned
        # the memory. Now no store takes one.
        ({"id": "x", "content": "Use cents.", "token_count": 0}, "token_count"),
        ({"id": "x", "content": "Use cents.", "token_count": -3}, "token_count"),
        ({"id": "x", "content": "Use cents.", "token_count": True}, "token_count"),
        ({"id": "x", "content": "Use cents.", "token_count": 2.0}, "token_count"),
    ],
)
def test_every_store_refuses_what_the_write_gate_refuses_naming_entry_and_field(store, entry, field):
    with pytest.raises(EntryError) as caught:
        store.add([entry])
    assert caught.value.entry_id == "x" and caught.value.field == field
    assert "'x'" in str(caught.value) and repr(field) in str(caught.value)
    assert store.entries() == []


def test_supersede_has_one_semantics_on_every_store(store):
    store.add([{"id": "fix", "type": "correction", "scope": "always", "content": "Amounts in dollars."}])
    store.add([{"id": "old", "type": "fact", "content": "Refunds round up."}])
    version = store.version
    assert store.supersede("old", {"id": "new", "type": "fact", "content": "Refunds round half-even."}) == "new"
    assert store.version != version
    assert store.get("old")["superseded_by"] == "new"
    assert store.get("new")["supersedes"] == "old"
    assert chosen(store) == [("fix", True), ("new", False)]  # the old one never loads again
    with pytest.raises(ValueError, match="already superseded by 'new'"):
        store.supersede("old", {"id": "newer", "content": "x"})
    with pytest.raises(EntryNotFound):
        store.supersede("missing", {"id": "other", "content": "x"})
    with pytest.raises(KeyError):  # EntryNotFound is a KeyError
        store.supersede("missing", {"id": "other", "content": "x"})
    with pytest.raises(EntryError, match="must differ"):
        store.supersede("new", {"id": "new", "content": "x"})
    with pytest.raises(EntryError, match="already in the store"):
        store.supersede("new", {"id": "fix", "content": "x"})
    assert sorted(e["id"] for e in store.entries()) == ["fix", "new", "old"]


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"superseded_by": "zzz"}, "superseded_by"),
        ({"valid_until": "2026-01-01T00:00:00Z"}, "valid_until"),
        ({"status": "retired"}, "status"),
    ],
)
def test_supersede_refuses_a_new_version_given_closed_and_changes_nothing_on_every_store(store, extra, field):
    # Found by the lifecycle sequence hunt: the new version was stored closed
    # (superseded_by naming nothing, or retired) and the old one closed into
    # it, so the fact had no active version left and nothing of it loaded.
    store.add([{"id": "o", "type": "fact", "content": "Refunds round up."}])
    version = store.version
    new = dict({"id": "n", "type": "fact", "content": "Refunds round half-even."}, **extra)
    with pytest.raises(EntryError) as caught:
        store.supersede("o", new)
    assert (caught.value.entry_id, caught.value.field) == ("n", field)
    assert store.version == version and store.get("n") is None and store.get("o").get("superseded_by") is None
    assert store.supersede("o", {k: v for k, v in new.items() if k != field}) == "n"  # open: accepted
    assert (store.get("o")["superseded_by"], store.get("n").get("superseded_by")) == ("n", None)


def test_a_fact_said_again_after_its_version_closed_is_written_again_on_every_store(store):
    # The write gate's content key gives the returning text the closed
    # version's id: folded into it, the fact would never load again.
    text = "Use the staging database for load tests."
    first = {
        "id": "fact-key",
        "type": "fact",
        "content": text,
        "source": "thread:t1",
        "created": "2026-07-01T00:00:00Z",
    }
    assert store.write([first]).ids == ["fact-key"]
    store.supersede("fact-key", {"id": "perf", "type": "fact", "content": "Use the perf database for load tests."})
    retried = store.write([first])  # the first write retried: still its closed version
    assert retried.ids == ["fact-key"] and retried.to_dict()["refused"] == {"duplicate": 1}
    again = dict(first, source="thread:t2", created="2026-07-05T00:00:00Z")
    report = store.write([again])
    assert report.to_dict()["written"] == 1 and not report.duplicates
    (returned,) = report.ids
    assert returned not in ("fact-key", "perf") and returned.startswith("fact-")
    assert store.get(returned)["content"] == text and store.get("fact-key")["superseded_by"] == "perf"
    assert store.write([again]).ids == [returned]  # the return retried lands on it
    loaded = [c.entry["id"] for c in store.select(POOLS, {"message": "database load tests"}, now=NOW).chosen]
    assert sorted(loaded) == sorted(["perf", returned])
    assert "seen" not in store.get("fact-key")
    # Closed again and said again: a third version of its own (a kept duplicate
    # finder once held the return under the closed id, and folded this into it).
    store.supersede(returned, {"id": "perf2", "type": "fact", "content": "Use the perf2 database for load tests."})
    third = store.write([dict(first, source="thread:t3", created="2026-07-09T00:00:00Z")])
    assert third.to_dict()["written"] == 1 and third.ids[0] not in ("fact-key", returned, "perf2")
    assert store.get("fact-key")["superseded_by"] == "perf" and store.get(returned)["superseded_by"] == "perf2"
    live = {c.entry["id"] for c in store.select(POOLS, {"message": "database load tests"}, now=NOW).chosen}
    assert live == {"perf", "perf2", third.ids[0]}


def test_a_created_time_past_the_calendar_once_in_utc_is_kept_as_given(store):
    # Converting it to UTC overflowed (OverflowError from every store's write).
    early = {"id": "e", "type": "fact", "content": "The first fact.", "created": "0001-01-01T00:30:00+01:00"}
    late = {"id": "l", "type": "fact", "content": "The last fact.", "created": "9999-12-31T23:00:00-05:00"}
    assert store.write([early, late]).ids == ["e", "l"]
    assert [store.get("e")["created"], store.get("l")["created"]] == [early["created"], late["created"]]


def test_a_version_of_a_history_keeps_its_id_when_its_text_repeats_another_entry(store):
    # What an export holds after supersede gave B the text of A: restored,
    # B2 was folded into A and B's superseded_by named nothing.
    text = "Deploy on Fridays is forbidden."
    written = store.write(
        [
            {"id": "A", "type": "fact", "content": text},
            {"id": "B", "type": "fact", "content": "Something else.", "superseded_by": "B2", "status": "active"},
            {"id": "B2", "type": "fact", "content": text, "supersedes": "B"},
        ]
    )
    assert written.ids == ["A", "B", "B2"] and not written.duplicates
    assert store.get("B2")["content"] == text and store.get("B")["superseded_by"] == "B2"
    plain = store.write([{"id": "C", "type": "fact", "content": text}])  # no history: a repeat, as ever
    assert plain.ids[0] in ("A", "B2") and len(plain.duplicates) == 1


def test_a_consolidator_noop_never_drops_or_retires_a_correction_on_every_store(store):
    # A noop on an always-scope candidate dropped the host's correction before
    # the write, and retired it once stored; refused now, the correction written.
    from agent_fakes import PlanningFakeModel, handle, plan

    fix = {"id": "fix", "type": "fact", "scope": "always", "content": "Never deploy on Fridays."}
    note = {"id": "n1", "type": "fact", "content": "Release notes go to the wiki."}

    def decide(payload: Any) -> Any:
        return plan({"op": "noop", "new": handle(payload, "Never")}, {"op": "add", "new": handle(payload, "wiki")})

    report, result = store.consolidate([fix, note], model=PlanningFakeModel(decide=decide))
    assert result.to_dict() == {"accepted": {"add": 1}, "refused": {"always_scope": 1}, "unresolved": 1}
    assert sorted(report.ids) == ["fix", "n1"]
    assert store.get("fix")["scope"] == "always" and store.get("fix").get("status", "active") == "active"
    assert chosen(store)[0] == ("fix", True)


def _consolidator(decide: Any) -> Any:
    from agent_fakes import PlanningFakeModel

    return PlanningFakeModel(decide=decide)


OLD = {"id": "old", "type": "fact", "content": "The staging database is db-7.", "created": "2026-02-01T00:00:00Z"}
NEW = {"id": "c1", "type": "fact", "content": "We moved staging to database db-9.", "created": "2026-03-01T00:00:00Z"}


def test_a_consolidators_update_applies_on_every_store(store):
    # Over a durable store, PoolSplitMemoryStore applied it to its own index:
    # the target was not there, and the update fell silently to a plain add.
    from agent_fakes import handle, plan

    store.add([OLD])
    decide = lambda payload: plan({"op": "update", "new": handle(payload, "db-9"), "old": handle(payload, "db-7")})  # noqa: E731
    report, result = store.consolidate([NEW], model=_consolidator(decide), at="2026-03-05T00:00:00Z")
    assert result.to_dict() == {"accepted": {"update": 1}, "refused": {}, "unresolved": 0}
    assert store.get("old")["superseded_by"] == "c1" and store.get("c1")["supersedes"] == "old"
    assert [v.id for v in store.history("c1")] == ["old", "c1"]


def test_an_update_the_store_refuses_when_it_applies_is_reported_failed_and_its_entry_written(store):
    from agent_fakes import handle, plan

    store.add([OLD])

    def decide(payload: Any) -> Any:  # another writer records a sighting on the target meanwhile
        store.write([{"type": "fact", "content": "the staging database is db-7", "source": "thread:other"}])
        return plan({"op": "update", "new": handle(payload, "db-9"), "old": handle(payload, "db-7")})

    report, result = store.consolidate([NEW], model=_consolidator(decide), at="2026-03-05T00:00:00Z")
    assert result.to_dict() == {"accepted": {"update": 1}, "refused": {}, "unresolved": 0, "failed": 1}
    [(op, reason)] = result.failed
    assert op.op.value == "update" and reason
    assert store.get("old").get("superseded_by") is None and store.get("c1")["content"] == NEW["content"]
    assert [r["source"] for r in store.get("old")["seen"]] == ["thread:other"]  # the other writer's sighting kept


def test_a_consolidation_whose_write_must_fail_changes_nothing(store):
    from agent_fakes import handle, plan

    store.add([OLD, {"id": "taken", "type": "fact", "content": "Invoices are monthly."}])
    before = sorted((e["id"], e.get("superseded_by")) for e in store.entries())
    decide = lambda payload: plan({"op": "update", "new": handle(payload, "db-9"), "old": handle(payload, "db-7")})  # noqa: E731
    clash = {"id": "taken", "type": "fact", "content": "Refunds are weekly."}
    with pytest.raises(EntryError, match="taken"):
        store.consolidate([NEW, clash], model=_consolidator(decide), at="2026-03-05T00:00:00Z")
    assert sorted((e["id"], e.get("superseded_by")) for e in store.entries()) == before


def test_a_version_stays_in_the_namespace_of_the_entry_it_supersedes(store):
    # One tenant's supersede closed another tenant's entry on the shared
    # stores; forget() of the writer's namespace then left it closed by nothing.
    label = namespace_label(U1)
    store.add([{"id": "b", "type": "fact", "namespace": label, "content": "U1's account ends in 1234."}])
    if isinstance(store, BaseStoreMemory):  # one namespace per memory: another tenant's id is not found at all
        other = BaseStoreMemory(store.store, ("memories", "u2"), token_counter=counter)
        with pytest.raises(EntryNotFound):
            other.supersede("b", {"id": "x", "type": "fact", "content": "hijack"})
    else:
        with pytest.raises(
            EntryError, match="field 'namespace' is 'memories.u2' but the entry it supersedes, 'b', is in"
        ):
            store.supersede("b", {"id": "x", "type": "fact", "namespace": "memories.u2", "content": "hijack"})
    assert store.get("b").get("superseded_by") is None and store.get("x") is None
    assert store.supersede("b", {"id": "b2", "type": "fact", "content": "U1's account ends in 9999."}) == "b2"
    assert store.get("b2")["namespace"] == label  # named none: the version takes the entry's namespace


def test_a_created_time_with_an_offset_is_stored_in_utc_so_time_travel_holds(store):
    # Kept as given, the core read 10:00-05:00 as 10:00 UTC while as_of
    # converted it: at 12:00Z the new version loaded, three hours early.
    from poolsplit_adapters import Visibility

    store.add([{"id": "old", "type": "fact", "content": "Refunds round up.", "created": "2026-02-01T00:00:00Z"}])
    store.supersede(
        "old", {"id": "new", "type": "fact", "content": "Refunds round down.", "created": "2026-03-01T10:00:00-05:00"}
    )
    assert store.get("new")["created"] == "2026-03-01T15:00:00Z"
    assert store.get("old")["valid_until"] == store.get("new")["valid_from"] == "2026-03-01T15:00:00Z"

    def valid_at(moment: str) -> List[str]:
        at = datetime.datetime.fromisoformat(moment)
        selection = store.select(POOLS, {"message": "refunds"}, now=NOW, visibility=Visibility(as_of=at))
        return [c.entry["id"] for c in selection.chosen]

    assert valid_at("2026-03-01T12:00:00+00:00") == ["old"]
    assert valid_at("2026-03-01T16:00:00+00:00") == ["new"]


def test_an_expired_entry_is_reported_and_named_in_the_notes_on_every_store(store):
    store.add(
        [
            {"id": "e", "type": "fact", "content": "Refund freeze until Friday.", "expires": "2026-07-01T00:00:00Z"},
            {"id": "k", "type": "fact", "content": "Refunds need two approvals."},
        ]
    )
    selection = store.select(POOLS, {"message": "refund freeze"}, now=NOW)
    assert [c.entry["id"] for c in selection.chosen] == ["k"]
    assert [(d.entry["id"], d.reason.value) for d in selection.dropped] == [("e", "expired")]
    assert selection.notes["expired"] == ["e"]


def test_a_consolidators_update_back_to_a_closed_text_leaves_that_text_live(store):
    # The update's candidate kept the content key, a closed version's id:
    # folded into it, A closed B and B closed A, and nothing was live.
    from agent_fakes import handle, plan

    store.add([{"id": "A", "type": "fact", "content": "We deploy from the staging branch.", "source": "s1"}])
    store.supersede("A", {"id": "B", "type": "fact", "content": "We deploy from the release branch.", "source": "s2"})
    back = {"id": "A", "type": "fact", "content": "We deploy from the staging branch.", "source": "s3"}

    def decide(payload: Any) -> Any:
        return plan({"op": "update", "new": handle(payload, "staging"), "old": handle(payload, "release")})

    report, result = store.consolidate([back], model=_consolidator(decide))
    assert result.to_dict() == {"accepted": {"update": 1}, "refused": {}, "unresolved": 0}
    live = [e["id"] for e in store.entries() if not e.get("superseded_by") and e.get("status", "active") == "active"]
    assert len(live) == 1 and live[0] not in ("A", "B") and store.get(live[0])["supersedes"] == "B"
    assert store.get("A")["superseded_by"] == "B"


def test_delete_forgets_an_entry_and_the_versions_it_superseded(store):
    store.add([{"id": "v1", "type": "fact", "content": "Refunds round up."}])
    store.supersede("v1", {"id": "v2", "type": "fact", "content": "Refunds round down."})
    store.supersede("v2", {"id": "v3", "type": "fact", "content": "Refunds round half-even."})
    store.add([{"id": "other", "type": "fact", "content": "Invoices are monthly."}])
    version = store.version
    assert store.delete("v3") is True
    assert store.version != version
    assert [e["id"] for e in store.entries()] == ["other"]
    assert store.delete("v3") is False and store.get("v1") is None


@pytest.mark.parametrize(
    ("links", "said"),
    [
        ({"superseded_by": "s"}, "the entry itself"),
        ({"supersedes": "p", "superseded_by": "p"}, "the version it supersedes"),
    ],
)
def test_an_entry_closed_into_itself_or_its_predecessor_is_refused_on_every_store(store, links, said):
    # Found in the lifecycle hunt: add stored it, and history() of it raised
    # (a cycle) ever after; refused now, naming the field, nothing written.
    version = store.version
    with pytest.raises(EntryError) as caught:
        store.add([dict({"id": "s", "type": "note", "content": "Standup is at nine."}, **links)])
    assert (caught.value.entry_id, caught.value.field) == ("s", "superseded_by")
    assert "names %s: its versions would form a cycle" % said in str(caught.value)
    assert store.version == version and store.get("s") is None


def test_delete_keeping_the_history_keeps_the_older_versions_on_every_store(store):
    # Found in the lifecycle hunt: LlamaIndex's memory store over a durable
    # store deleted the older versions there all the same (and read through
    # to it, so they were gone everywhere).
    store.add([{"id": "v1", "type": "fact", "content": "Refunds round up."}])
    store.supersede("v1", {"id": "v2", "type": "fact", "content": "Refunds round half-even."})
    assert store.delete("v2", history=False) is True
    assert [(e["id"], e.get("superseded_by")) for e in store.entries()] == [("v1", "v2")]
    assert store.get("v2") is None and [v.id for v in store.history("v1")] == ["v1"]


def test_a_deleted_versions_id_given_to_another_entry_joins_no_history_on_every_store(store):
    # Found by the lifecycle sequence test: x and w name a deleted version as
    # the one they supersede; an unrelated entry later stored under that id
    # became their history (history("x") listed v1 alone, without x), and
    # delete("x") and the expiry sweep of w deleted it with them.
    store.add([{"id": "v1", "type": "note", "content": "Alice lives at 12 Marker Lane."}])
    assert store.delete("v1") is True
    store.add([{"id": "x", "type": "note", "content": "Bob likes tea.", "supersedes": "v1"}])
    store.add([{"id": "w", "type": "note", "content": "Dan parks on level 2.", "supersedes": "v1",
                "expires": "2026-07-01T00:00:00Z"}])  # fmt: skip
    store.add([{"id": "v1", "type": "note", "content": "Carol has a cat."}])
    assert [[v.id for v in store.history(i)] for i in ("x", "w", "v1")] == [["x"], ["w"], ["v1"]]
    assert store.sweep_expired(NOW) == ["w"]
    assert store.delete("x") is True
    assert [(e["id"], e["content"], e.get("superseded_by")) for e in store.entries()] == [
        ("v1", "Carol has a cat.", None)
    ]


def test_version_is_equal_while_the_content_is(store):
    first = store.version
    assert store.version == first
    store.add([{"content": "Refunds round half-even.", "type": "fact"}])
    second = store.version
    assert second != first and store.version == second


def test_select_loads_corrections_first_then_the_pools(store):
    store.add(
        [
            {"id": "fix", "type": "correction", "scope": "always", "content": "Amounts in cents."},
            {"id": "fact", "type": "fact", "content": "Refunds round half-even."},
            {"id": "note", "type": "note", "content": "Unrelated note about lunch."},
        ]
    )
    assert chosen(store) == [("fix", True), ("fact", False)]


@pytest.mark.parametrize(
    "context, message",
    [
        ({"message": 5}, "context['message'] must be a string, got int 5"),
        ({"message": ["refund"]}, "context['message'] must be a string, got list ['refund']"),
        ("refund rounding", "context must be a mapping or None, got str 'refund rounding'"),
    ],
)
async def test_a_selection_context_of_the_wrong_kind_is_named_on_every_store(store, context, message, request):
    # Before: VectorStoreMemory searched for str(5) and "['refund']", and it
    # and BaseStoreMemory raised "'str' object has no attribute 'get'".
    store.add([{"id": "fact", "type": "fact", "content": "Refunds round half-even."}])
    with pytest.raises(TypeError) as raised:
        store.select(POOLS, context, now=NOW)
    assert str(raised.value) == message
    if request.node.callspec.params["store"] == "basestore-sqlite":
        return  # LangGraph's SqliteStore has no async methods
    with pytest.raises(TypeError) as raised:
        await store.aselect(POOLS, context, now=NOW)
    assert str(raised.value) == message


def test_the_middleware_takes_every_store_as_a_backend(store):
    from poolsplit_adapters.langchain.backends import backend_for
    from poolsplit_adapters.settings import AgentMemorySettings
    from poolsplit_adapters.stores.langgraph.backends import Plan

    settings = AgentMemorySettings.held_by("test", pools=POOLS, token_counter=counter, now=NOW, chain_penalty=0.9)
    label = namespace_label(U1)
    store.add(
        [
            {"id": "fix", "type": "correction", "scope": "always", "content": "Amounts in cents.", "namespace": label},
            {"id": "fact", "type": "fact", "content": "Refunds round half-even.", "namespace": label},
            {"id": "elsewhere", "type": "correction", "scope": "always", "content": "Not ours.", "namespace": "x"},
        ]
        if not isinstance(store, BaseStoreMemory)
        else [
            {"id": "fix", "type": "correction", "scope": "always", "content": "Amounts in cents."},
            {"id": "fact", "type": "fact", "content": "Refunds round half-even."},
        ]
    )
    backend = backend_for(store, settings)
    plan, context = Plan(POOLS), {"message": "refund rounding"}
    selection = backend.select(backend.snapshot([U1], context, plan), [U1], context, plan)
    assert [(c.entry["id"], c.always) for c in selection.chosen] == [("fix", True), ("fact", False)]
    assert backend.existing([U1], ["fix", "nope"]) == {"fix"}
    assert backend.get([U1], "fact")["content"] == "Refunds round half-even."


def test_supersede_back_to_a_closed_version_is_no_cycle_on_every_store(store):
    # supersede("c", {"id": "a", ...}) after a -> b -> c closed c into the
    # closed a: nothing of the fact loaded, and history() raised on the loop.
    from contract_checks import check_supersede_back_to_a_closed_version

    check_supersede_back_to_a_closed_version(store)
    loaded = sorted(c.entry["id"] for c in store.select(POOLS, {"message": "deploys"}, now=NOW).chosen)
    assert loaded == ["fact-af6c8e6ffad9589b0379d198", "k"]


def test_an_entry_added_with_supersedes_closes_its_predecessor_on_every_store(store):
    # add([{"id": "b", "supersedes": "a"}]) left a active, and history("b") omitted b.
    from contract_checks import check_add_with_supersedes_closes_its_predecessor

    check_add_with_supersedes_closes_its_predecessor(store)
    loaded = sorted(c.entry["id"] for c in store.select(POOLS, {"message": "refunds standup"}, now=NOW).chosen)
    assert loaded == ["m2", "q"]


def test_an_entry_added_with_supersedes_never_closes_another_tenants_entry(store):
    label = namespace_label(U1)
    store.add([{"id": "b", "type": "fact", "namespace": label, "content": "U1's account ends in 1234."}])
    hijack = {"id": "x", "type": "fact", "content": "hijack", "supersedes": "b"}
    if isinstance(store, BaseStoreMemory):  # one namespace per memory: another tenant's id is not found at all
        other = BaseStoreMemory(store.store, ("memories", "u2"), token_counter=counter)
        assert other.add([hijack]) == ["x"] and [v.id for v in other.history("x")] == ["x"]
    else:
        with pytest.raises(EntryError) as caught:
            store.add([dict(hijack, namespace="memories.u2")])
        assert (caught.value.entry_id, caught.value.field) == ("x", "namespace")
        assert "but the entry it supersedes, 'b', is in 'memories.u1'" in str(caught.value)
        assert store.get("x") is None
    assert store.get("b").get("superseded_by") is None


def test_a_changed_statement_supersedes_the_older_on_every_store(store):
    # "The launch moved to March 17." beside "The launch is on March 3.": both loaded on equal
    # terms, and when one fit it was as often the stale one.
    from contract_checks import check_a_changed_statement_supersedes_the_older

    check_a_changed_statement_supersedes_the_older(store)
    facts = [Pool("facts", 400, 10, ("fact", "instruction"))]
    loaded = sorted(c.entry["id"] for c in store.select(facts, {"message": "launch tabs"}, now=NOW).chosen)
    assert loaded == ["b2", "fx", "i2", "l3", "r1"]


def test_every_store_class_implements_the_one_contract_with_its_async_twins(store, request):
    from contract_checks import check_implements_the_contract

    # LangGraph's SqliteStore has no async API (its AsyncSqliteStore has): the twins are not run over it.
    sync_only = request.node.callspec.params["store"] == "basestore-sqlite"
    check_implements_the_contract(store, async_twins=not sync_only)


@pytest.mark.parametrize(
    "entry_id, said",
    [
        ("a\x00b", "entry id 'a\\x00b' contains NUL (\\x00), which Postgres text cannot hold"),
        (
            "\ud800",
            "entry id '\\ud800' contains a lone surrogate at position 0 (not UTF-8), which Postgres text cannot hold",
        ),
        (7, "entry id must be a string, got int 7"),
    ],
)
def test_an_id_no_store_can_hold_is_refused_by_every_verb_on_every_store(store, entry_id, said):
    # Found by an adversarial run: the same id gave None/False on the in-process store, a raw
    # UnicodeEncodeError from SQLite, and this ArgumentError from a LangGraph store.
    store.add([{"id": "kept", "type": "fact", "content": "The db is db-1."}])
    for verb in (
        lambda: store.get(entry_id),
        lambda: store.delete(entry_id),
        lambda: store.history(entry_id),
        lambda: store.supersede(entry_id, {"type": "fact", "content": "The db is db-2."}),
    ):
        with pytest.raises(ArgumentError) as raised:
            verb()
        assert str(raised.value) == said
    assert [e["id"] for e in store.entries()] == ["kept"]


async def test_an_id_no_store_can_hold_is_refused_by_the_async_verbs_on_every_store(store):
    with pytest.raises(ArgumentError) as got:
        await store.aget("\ud800")
    with pytest.raises(ArgumentError) as deleted:
        await store.adelete("a\x00b")
    assert (str(got.value), str(deleted.value)) == (
        "entry id '\\ud800' contains a lone surrogate at position 0 (not UTF-8), which Postgres text cannot hold",
        "entry id 'a\\x00b' contains NUL (\\x00), which Postgres text cannot hold",
    )


@pytest.mark.parametrize("given", ["The db is db-2.", ["The db is db-2."], None])
def test_a_new_version_that_is_no_mapping_is_refused_by_name_on_every_store(store, given):
    # Found by an adversarial run: supersede("kept", "text") raised AttributeError ('str' object
    # has no attribute 'get') from memory/validity.py on every store.
    store.add([{"id": "kept", "type": "fact", "content": "The db is db-1."}])
    with pytest.raises(EntryError) as raised:
        store.supersede("kept", given)
    assert str(raised.value) == "entry at index 0: is not a mapping (got %s %r)" % (type(given).__name__, given)
    assert [(e["id"], e.get("superseded_by")) for e in store.entries()] == [("kept", None)]


@pytest.mark.parametrize("field, value", [("extra", 10**40), ("base_priority", 2**63), ("meta", {"n": [-(2**63) - 1]})])
def test_an_integer_past_64_bits_is_refused_by_name_on_every_store(store, field, value):
    # Found by an adversarial run: 10**40 in any field was stored by SQLite and the in-process
    # store, raised "Integer exceeds 64-bit range" from inside LangGraph's SqliteStore (orjson),
    # and PostgresStore reads it back as the float 1e+40: not what was written.
    entry = {"id": "big", "type": "fact", "content": "The db is db-1.", field: value}
    with pytest.raises(EntryError) as raised:
        store.add([entry])
    assert str(raised.value).startswith("entry 'big' (index 0): field %r holds the integer " % field)
    assert str(raised.value).endswith("beyond 64 bits (LangGraph's stores read it back changed, or refuse it)")
    assert store.entries() == []


def test_a_forget_namespace_no_store_can_hold_is_refused_the_same_on_every_store(store):
    # Found by an adversarial run: a 1,001-byte namespace forgot 0 entries on the SQLite and
    # in-process stores and was an ArgumentError on the LangGraph stores.
    with pytest.raises(ArgumentError) as raised:
        store.forget(namespace="n" * 1001)
    assert str(raised.value) == "forget namespace '%s...' is 1001 bytes long; it takes at most 1000 (UTF-8)" % (
        "n" * 40
    )


async def test_history_has_its_async_twin_on_every_store(store, request):
    # Every other verb of the contract (add, get, entries, supersede, delete, forget, ...) has one.
    store.add([{"id": "v1", "type": "fact", "source": "docs", "content": "Refunds round up."}])
    store.supersede("v1", {"id": "v2", "type": "fact", "source": "docs", "content": "Refunds round half-even."})
    assert [(v.id, v.source) for v in store.history("v2")] == [("v1", "docs"), ("v2", "docs")]
    if request.node.callspec.params["store"] == "basestore-sqlite":
        return  # LangGraph's sync SqliteStore has no async methods (AsyncSqliteStore has)
    versions = await store.ahistory("v2")
    assert versions == store.history("v2")
    with pytest.raises(ArgumentError):
        await store.ahistory(3)


async def test_sweep_expired_has_its_async_twin_on_every_store(store, request):
    store.add(
        [
            {"id": "old", "type": "fact", "content": "The sale ends Friday.", "expires": "2026-07-01T00:00:00Z"},
            {"id": "kept", "type": "fact", "content": "Refunds round half-even."},
        ]
    )
    store.supersede("old", {"id": "old2", "type": "fact", "content": "The sale ends Sunday.",
                            "expires": "2026-07-02T00:00:00Z"})  # fmt: skip
    sync_only = request.node.callspec.params["store"] == "basestore-sqlite"  # LangGraph's sync SqliteStore

    async def swept(moment: datetime.datetime) -> Any:
        return store.sweep_expired(moment) if sync_only else await store.asweep_expired(moment)

    assert await swept(datetime.datetime(2026, 6, 30)) == []
    assert await swept(datetime.datetime(2026, 7, 1, 12)) == ["old"]
    assert await swept(datetime.datetime(2026, 7, 3)) == ["old2"]
    assert [e["id"] for e in store.entries()] == ["kept"]
