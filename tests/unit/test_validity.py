"""Updates with validity: supersede and retire close versions (never delete
them), as_of selects what was valid at a time, history walks the chain; and
expiry: an ``expires`` time makes an entry inactive, composing with the
core's default_is_active."""

from __future__ import annotations

import copy
import datetime
from typing import Any, Dict

import pytest

from poolsplit_adapters import Pool, select
from poolsplit_adapters.memory.expand import UnknownEntryError
from poolsplit_adapters.memory.expiry import active_at, expires_at, is_active, is_expired
from poolsplit_adapters.memory.validity import as_of, history, is_valid_at, retire, supersede, valid_at
from poolsplit_adapters.poolsplit import EntryError, Reason, default_is_active

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"


def v(entry_id: str, value: str, source: str, created: str) -> Dict[str, Any]:
    return {"id": entry_id, "type": "fact", "content": "staging DB is %s" % value, "source": source, "created": created}


def chain() -> Any:
    a = v("a", "db-7", "thread:1", T0)
    a2, b = supersede(a, v("b", "db-9", "thread:2", T1))
    b2, c = supersede(b, v("c", "db-12", "thread:3", T2))
    return a2, b2, c


# -- supersede and retire ------------------------------------------------------------------------


def test_supersede_closes_the_old_and_opens_the_new_without_mutating_either() -> None:
    old, new = v("a", "db-7", "thread:1", T0), v("b", "db-9", "thread:2", T1)
    frozen = copy.deepcopy((old, new))
    closed, opened = supersede(old, new)
    assert (old, new) == frozen
    assert closed == dict(old, superseded_by="b", valid_until=T1, closed_source="thread:2")
    assert opened == dict(new, supersedes="a", valid_from=T1)
    assert not default_is_active(closed) and default_is_active(opened)


def test_supersede_at_and_source_given() -> None:
    closed, opened = supersede(
        v("a", "x", "s1", T0), v("b", "y", "s2", T2), at=datetime.datetime(2026, 2, 1), source="cli"
    )
    assert (closed["valid_until"], closed["closed_source"], opened["valid_from"]) == (T1, "cli", T1)
    aware = datetime.datetime(2026, 2, 1, 2, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    assert supersede(v("a", "x", "s1", T0), v("b", "y", "s2", T2), at=aware)[0]["valid_until"] == T1


def test_supersede_keeps_a_valid_from_the_new_entry_has() -> None:
    _, opened = supersede(v("a", "x", "s", T0), dict(v("b", "y", "s", T2), valid_from=T1))
    assert opened["valid_from"] == T1


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ({"content": "x"}, {"id": "b", "content": "y"}, "id"),
        ({"id": "a", "content": "x"}, {"id": "a", "content": "y"}, "id"),
        ({"id": "a", "content": "x", "superseded_by": "z"}, {"id": "b", "content": "y"}, "superseded_by"),
        (
            {"id": "a", "content": "x", "status": "retired", "valid_until": T1},
            {"id": "b", "content": "y"},
            "valid_until",
        ),
        ({"id": "a", "content": "x", "created": T2}, {"id": "b", "content": "y", "created": T1}, "valid_until"),
        ({"id": "a", "content": "x", "valid_from": "soon"}, {"id": "b", "content": "y", "created": T1}, "valid_from"),
    ],
)
def test_supersede_refuses_what_would_fork_or_reverse_a_chain(old: Any, new: Any, field: str) -> None:
    with pytest.raises(EntryError) as err:
        supersede(old, new)
    assert err.value.field == field


def test_supersede_refuses_a_malformed_at() -> None:
    with pytest.raises(ValueError, match="ISO-8601"):
        supersede(v("a", "x", "s", T0), v("b", "y", "s", T1), at="next week")


def test_retire_closes_without_successor() -> None:
    entry = v("a", "frozen", "thread:1", T0)
    closed = retire(entry, at=T1, source="thread:9")
    assert closed == dict(entry, status="retired", valid_until=T1, closed_source="thread:9")
    assert not default_is_active(closed)
    with pytest.raises(EntryError):
        retire(closed, at=T2)
    with pytest.raises(EntryError):
        retire(entry, at="2025-01-01T00:00:00Z")


# -- as_of ---------------------------------------------------------------------------------------------


def test_as_of_returns_the_version_valid_at_each_time() -> None:
    a, b, c = chain()
    entries = [c, a, b]
    assert as_of(entries, "2025-12-31T00:00:00Z") == []
    assert as_of(entries, T0) == [a]
    assert as_of(entries, "2026-01-31T23:59:59Z") == [a]
    assert as_of(entries, T1) == [b]  # valid_until is exclusive, valid_from inclusive
    assert as_of(entries, datetime.datetime(2027, 1, 1)) == [c]


def test_as_of_follows_the_cores_time_bound_rule_for_undated_entries() -> None:
    undated = {"id": "u", "content": "x"}
    garbled = {"id": "g", "content": "x", "created": "last spring"}  # the core reads it as no time
    standing = {"id": "s", "content": "never deploy on Fridays", "scope": "always"}
    legacy = {"id": "l", "content": "y", "created": T0, "superseded_by": "p"}  # closed before validity times
    assert as_of([undated, garbled, standing, legacy], T1) == [standing]
    closed = retire(standing, at=T1)
    assert as_of([closed], T0) == [closed] and as_of([closed], T2) == []


def test_as_of_respects_expiry() -> None:
    temp = {"id": "t", "content": "freeze", "created": T0, "expires": T1}
    assert is_valid_at(temp, "2026-01-15T00:00:00Z") and not is_valid_at(temp, T1)


def test_valid_at_is_an_is_active_predicate_for_select() -> None:
    a, b, c = chain()
    pools = [Pool("facts", 100, 5, ("fact",))]
    assert [e["id"] for e in select([a, b, c], pools).pools["facts"]] == ["c"]
    assert [e["id"] for e in select([a, b, c], pools, is_active=valid_at("2026-02-15")).pools["facts"]] == ["b"]


def test_a_selection_never_loads_two_versions() -> None:
    a, b, c = chain()
    chosen = select([a, b, c], [Pool("facts", 1000, 10)], {"message": "staging DB"}).pools["facts"]
    assert [e["id"] for e in chosen] == ["c"]


def test_malformed_validity_times_name_the_entry_and_field() -> None:
    with pytest.raises(EntryError, match="'valid_until'") as err:
        as_of([{"id": "x", "content": "y", "valid_until": 20260101}], T1)
    assert err.value.entry_id == "x" and err.value.index == 0


# -- history ---------------------------------------------------------------------------------------------


def test_history_returns_the_chain_oldest_first_with_sources_and_times_from_any_member() -> None:
    a, b, c = chain()
    for member in ("a", "b", "c"):
        versions = history([c, b, a, {"id": "other", "content": "z"}], member)
        assert [(x.id, x.source, x.valid_from, x.valid_until, x.closed_source) for x in versions] == [
            ("a", "thread:1", T0, T1, "thread:2"),
            ("b", "thread:2", T1, T2, "thread:3"),
            ("c", "thread:3", T2, None, None),
        ]
        assert versions[0].entry is a


def test_history_follows_superseded_by_alone_for_entries_without_supersedes() -> None:
    old = {"id": "o", "content": "x", "superseded_by": "n"}
    new = {"id": "n", "content": "y"}
    assert [x.id for x in history([new, old], "n")] == ["o", "n"]


def test_history_of_a_lone_entry_and_a_missing_link() -> None:
    assert [x.id for x in history([{"id": "a", "content": "x", "supersedes": "forgotten"}], "a")] == ["a"]
    with pytest.raises(UnknownEntryError):
        history([], "a")


def test_history_follows_a_link_only_where_the_older_version_names_the_newer_in_its_namespace() -> None:
    # A supersedes left by a deleted version whose id another entry (here
    # another tenant's) got later made that entry the history, without x.
    reused = {"id": "v1", "content": "Carol has a cat.", "namespace": "u1"}
    later = {"id": "x", "content": "Bob likes tea.", "namespace": "u2", "supersedes": "v1"}
    assert [[v.id for v in history([reused, later], i)] for i in ("x", "v1")] == [["x"], ["v1"]]
    closed = dict(reused, superseded_by="x")  # closed into another namespace: no link either
    assert [[v.id for v in history([closed, later], i)] for i in ("x", "v1")] == [["x"], ["v1"]]
    same = dict(closed, namespace="u2")
    assert [[v.id for v in history([same, later], i)] for i in ("x", "v1")] == [["v1", "x"], ["v1", "x"]]


def test_history_refuses_a_cycle() -> None:
    a = {"id": "a", "content": "x", "superseded_by": "b", "supersedes": "b"}
    b = {"id": "b", "content": "y", "superseded_by": "a", "supersedes": "a"}
    with pytest.raises(EntryError, match="cycle"):
        history([a, b], "a")


# -- expiry ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expires", "now", "expired"),
    [
        (None, T2, False),
        (T1, "2026-01-31T23:59:59Z", False),
        (T1, T1, True),  # the instant itself is expired
        ("2026-02-01T02:00:00+02:00", T1, True),  # an offset is converted to UTC
        ("2026-02-01", datetime.datetime(2026, 2, 1), True),  # a bare date: midnight
        (T1, datetime.datetime(2026, 2, 1, 0, 59, tzinfo=datetime.timezone(datetime.timedelta(hours=1))), False),
    ],
)
def test_is_expired(expires: Any, now: Any, expired: bool) -> None:
    entry = {"id": "e", "content": "x"} if expires is None else {"id": "e", "content": "x", "expires": expires}
    assert is_expired(entry, now) is expired


@pytest.mark.parametrize("bad", ["", "next friday", 20260101, ["2026-01-01"]])
def test_a_malformed_expires_is_an_entry_error_naming_entry_and_field(bad: Any) -> None:
    with pytest.raises(EntryError) as err:
        expires_at({"id": "e1", "content": "x", "expires": bad})
    assert (err.value.entry_id, err.value.field) == ("e1", "expires")
    assert "e1" in str(err.value) and "expires" in str(err.value)


def test_is_active_composes_with_the_core_default() -> None:
    live = {"id": "a", "content": "x", "expires": T2}
    assert is_active(live, T1) and not is_active(live, T2)
    assert not is_active(dict(live, status="archived"), T1)
    assert not is_active(dict(live, superseded_by="b"), T1)
    assert is_active(dict(live, status="archived"), T1, base=lambda e: True)


def test_the_core_drops_expired_entries_and_reports_them_expired() -> None:
    entries = [
        {"id": "old", "type": "note", "content": "deploy freeze", "expires": T1},
        {"id": "new", "type": "note", "content": "deploy checklist"},
        {"id": "gone", "type": "note", "content": "deploy x", "status": "retired", "expires": T1},
    ]
    now = datetime.datetime(2026, 3, 1)
    selection = select(entries, [Pool("notes", 100, 5)], {"message": "deploy"}, now=now)
    assert [e["id"] for e in selection.pools["notes"]] == ["new"]
    # Inactive first: an entry both retired and expired is reported inactive.
    assert {(d.entry["id"], d.reason.value) for d in selection.dropped} == {("old", "expired"), ("gone", "inactive")}
    assert selection.counts[(None, Reason.EXPIRED)] == (1, 0)
    at_expiry = select(entries, [Pool("notes", 100, 5)], now=datetime.datetime(2026, 2, 1))  # the instant: expired
    assert [e["id"] for e in at_expiry.pools["notes"]] == ["new"]
    before = select(entries, [Pool("notes", 100, 5)], {"message": "deploy"}, now=datetime.datetime(2026, 1, 1))
    assert {e["id"] for e in before.pools["notes"]} == {"old", "new"}
    # active_at stays a plain is_active predicate: what it refuses is its own "inactive".
    assert (
        select(entries, [Pool("notes", 100, 5)], is_active=active_at(T2), now=datetime.datetime(2026, 1, 1))
        .dropped[0]
        .reason
        is Reason.INACTIVE
    )


def test_time_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="ISO-8601"):
        is_expired({"content": "x", "expires": T1}, "tomorrow")
    with pytest.raises(TypeError):
        is_expired({"content": "x", "expires": T1}, 5)  # type: ignore[arg-type]


# -- Visibility(as_of=...): time travel in the core, on every path -----------------------------------------


def _facts(entries: Any, when: Any, **options: Any) -> Any:
    from poolsplit_adapters import MemoryIndex, Visibility

    pools = [Pool("facts", 100, 5, ("fact",))]
    view = Visibility(as_of=when)
    got = [[e["id"] for e in select(entries, pools, visibility=view, **options).pools["facts"]]]
    got.append([e["id"] for e in MemoryIndex(entries).select(pools, visibility=view, **options).pools["facts"]])
    assert got[0] == got[1]
    return got[0]


def test_as_of_selects_the_old_version_and_leaves_history_alone() -> None:
    from poolsplit_adapters import Visibility

    a, b, c = chain()
    entries = [a, b, c]
    before = copy.deepcopy(entries)
    assert _facts(entries, "2026-01-15T00:00:00Z") == ["a"]  # superseded since, but valid then
    assert _facts(entries, T1) == ["b"]  # valid_until exclusive, valid_from inclusive
    assert _facts(entries, datetime.datetime(2026, 2, 28, 23, 59)) == ["b"]
    assert _facts(entries, "2026-03-01T01:00:00+01:00") == ["c"]  # an offset is converted to UTC
    assert _facts(entries, "2025-12-31") == []  # nothing was valid yet
    assert [x.id for x in history(entries, "b")] == ["a", "b", "c"] and entries == before
    dropped = select(entries, [Pool("facts", 100, 5)], visibility=Visibility(as_of=T0))
    assert {(d.entry["id"], d.reason.value) for d in dropped.dropped} == {("b", "out_of_time"), ("c", "out_of_time")}


def test_as_of_reasons_closed_undated_and_expired_entries() -> None:
    from poolsplit_adapters import Visibility

    closed = retire({"id": "r", "type": "fact", "content": "x", "created": T0}, at=T1)
    undated = {"id": "u", "type": "fact", "content": "y"}
    standing = {"id": "s", "type": "fact", "content": "z", "scope": "always"}
    temp = {"id": "t", "type": "fact", "content": "w", "created": T0, "expires": T2}
    entries = [closed, undated, standing, temp]
    assert _facts(entries, "2026-01-15") == ["s", "r", "t"]
    why = {
        d.entry["id"]: d.reason for d in select(entries, [Pool("f", 100, 5)], visibility=Visibility(as_of=T2)).dropped
    }
    assert why == {"r": Reason.INACTIVE, "u": Reason.UNDATED, "t": Reason.EXPIRED}
    # Expiry is judged at as_of, not at now: it had not expired in January, though it has by now.
    assert "t" in _facts(entries, "2026-01-15", now=datetime.datetime(2026, 6, 1))


def test_as_of_is_checked() -> None:
    from poolsplit_adapters import Visibility

    with pytest.raises(ValueError, match="as_of must be an ISO-8601 time"):
        Visibility(as_of="last week")
    with pytest.raises(TypeError, match="as_of"):
        Visibility(as_of=20260101)  # type: ignore[arg-type]
    assert Visibility(as_of="2026-01-01T02:00:00+02:00").at == datetime.datetime(2026, 1, 1)
    assert Visibility().active is False and Visibility(as_of=T0).active is True


def test_a_malformed_lifecycle_time_is_refused_on_every_path() -> None:
    from poolsplit_adapters import MemoryIndex, Visibility, fastpath

    bad = {"id": "b", "type": "fact", "content": "y", "expires": "soon"}
    index = MemoryIndex([{"id": "a", "content": "x"}])
    with pytest.raises(EntryError) as err:
        index.add(bad)  # refused before any change
    assert (err.value.entry_id, err.value.field, len(index)) == ("b", "expires", 1)
    for run in (select, fastpath.select):
        with pytest.raises(EntryError, match="'expires'"):
            run([bad], [Pool("f", 100, 5)])
        with pytest.raises(EntryError, match="'valid_from'"):
            run([{"id": "c", "content": "z", "valid_from": 7}], [Pool("f", 100, 5)], visibility=Visibility(as_of=T0))
