"""Bad input gets a clear error naming the entry and the field."""

from __future__ import annotations

import datetime
import math
import warnings

import pytest
from conftest import NOW

from poolsplit_adapters import (
    EntryError,
    MemoryIndex,
    Pool,
    Reason,
    UnadmittedCorrectionWarning,
    Visibility,
    retrieve,
    retrieve_pools,
    select,
)
from poolsplit_adapters.poolsplit import MAX_COST, MAX_PRIORITY

POOL = Pool("p", 100, 10)


@pytest.mark.parametrize(
    ("entry", "field", "fragment"),
    [
        ({"id": "t1", "content": "x", "tags": "ops"}, "tags", "list or tuple"),
        ({"id": "t1", "content": "x", "tags": ["ops", 3]}, "tags", "only strings"),
        ({"id": "t1"}, "content", "missing"),
        ({"id": "t1", "content": None}, "content", "must be a string"),
        ({"id": "t1", "content": "x", "created": 20260101}, "created", "string or None"),
        ({"id": "t1", "content": "x", "project": ["a"]}, "project", "string or None"),
        ({"id": "t1", "content": "x", "type": None}, "type", "must be a string"),
        ({"id": "t1", "content": "x", "base_priority": "high"}, "base_priority", "number"),
        ({"id": "t1", "content": "x", "base_priority": True}, "base_priority", "number"),
    ],
)
def test_malformed_field_names_entry_and_field(entry, field, fragment):
    with pytest.raises(EntryError, match=fragment) as info:
        retrieve_pools([{"content": "fine"}, entry], [POOL], now=NOW)
    err = info.value
    assert err.field == field and err.entry_id == "t1" and err.index == 1
    assert "'t1'" in str(err) and repr(field) in str(err)


def test_entry_without_id_is_named_by_index():
    with pytest.raises(EntryError, match="entry at index 2: field 'tags'"):
        retrieve([{"content": "a"}, {"content": "b"}, {"content": "c", "tags": "x"}], POOL, now=NOW)


def test_non_mapping_entry():
    with pytest.raises(EntryError, match="index 1.*not a mapping"):
        retrieve([{"content": "a"}, "just text"], POOL, now=NOW)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "9", None, True])
def test_scorer_must_return_a_finite_number(bad):
    with pytest.raises(EntryError, match="scorer must return a finite number, got ") as info:
        retrieve([{"id": "e1", "content": "a"}], POOL, scorer=lambda e, c, now=None: bad, now=NOW)
    assert info.value.entry_id == "e1"


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_non_finite_priority_is_refused(bad):
    # NaN would make the default score NaN and break the total sort order.
    with pytest.raises(EntryError, match="finite number") as info:
        retrieve([{"id": "e1", "content": "a", "base_priority": bad}], POOL, now=NOW)
    assert info.value.field == "base_priority"


@pytest.mark.parametrize("bad", [1.7e308, -1.7e308, 10**301, 2**1023])
def test_a_priority_whose_score_could_overflow_is_refused_by_name(bad):
    # x1.7e308 times the default score's factors (up to x5.625) was an
    # infinity: no order of scores holds one, and --json printed "Infinity".
    with pytest.raises(EntryError, match="beyond MAX_PRIORITY") as info:
        retrieve([{"id": "e1", "content": "a", "base_priority": bad}], POOL, now=NOW)
    assert info.value.field == "base_priority" and info.value.entry_id == "e1"
    entry = {"id": "e1", "content": "alpha", "base_priority": MAX_PRIORITY, "tags": ["t"], "project": "p"}
    chosen = select([entry], [POOL], {"message": "alpha", "tags": ["t"], "project": "p"}, now=NOW).chosen
    assert chosen[0].score == MAX_PRIORITY * 1.5 * 1.5 * 2.5  # every factor at its largest, still finite


@pytest.mark.parametrize("bad", [0, -2, 1.5, None, True])
def test_token_counter_must_return_a_positive_int(bad):
    with pytest.raises(EntryError, match="token_counter returned") as info:
        retrieve([{"id": "e1", "content": "a"}], POOL, token_counter=lambda t: bad, now=NOW)
    assert info.value.field == "token_count"


def test_a_cost_above_the_largest_is_refused_given_or_counted():
    """A count no text has (past 2**53 - 1, where the vectorised paths'
    int64 columns and float sums stop being exact) is named, on every path,
    where it is met: the index, the stateless path, a counter's answer."""
    fine = {"id": "ok", "content": "a", "token_count": MAX_COST}
    huge = {"id": "big", "content": "a", "token_count": MAX_COST + 1}
    message = "entry 'big' (index 1): field 'token_count' is 9007199254740992, above the largest cost, 2**53 - 1"
    for path in (lambda e: select(e, [POOL], now=NOW), lambda e: MemoryIndex(e)):
        path([{"content": "x"}, fine])
        with pytest.raises(EntryError) as info:
            path([{"content": "x"}, huge])
        assert str(info.value) == message and info.value.field == "token_count"
    with pytest.raises(EntryError, match=r"is 100000000000\.\.\. \(31 digits\), above the largest cost"):
        MemoryIndex([{"id": "big", "content": "a", "token_count": 10**30}])
    for path in (lambda c: select([{"id": "e1", "content": "a"}], [POOL], token_counter=c, now=NOW),
                 lambda c: MemoryIndex([{"id": "e1", "content": "a"}], token_counter=c)):  # fmt: skip
        with pytest.raises(EntryError, match="token_counter returned 9007199254740992 for its content, above"):
            path(lambda text: MAX_COST + 1)


def test_the_index_sums_costs_near_the_largest_exactly():
    """Five costs of 2**53 - 1 sum past float64's exact integers: the
    index's counts of what a budget cut are the core's, to the token."""
    pools = [Pool("fixes", 0, 0, ("correction",)), Pool("facts", 200, 5, ("fact",))]
    entries = [{"id": "f%d" % n, "type": "fact", "content": "x", "token_count": MAX_COST} for n in range(5)]
    entries.append({"id": "c", "type": "correction", "scope": "always", "content": "fix", "token_count": MAX_COST})
    got = MemoryIndex(entries).select(pools, {"message": "x"}, now=NOW)
    assert got.counts == select(entries, pools, {"message": "x"}, now=NOW).counts
    assert got.counts == {("facts", Reason.TOKEN_BUDGET): (5, 5 * MAX_COST)}
    assert [c.entry["id"] for c in got.chosen] == ["c"]  # the correction loads, outside every budget


def test_pool_argument_errors():
    with pytest.raises(TypeError, match=r"bare string 'skill' \(did you mean \('skill',\)\?\)"):
        Pool("skills", 10, 2, types="skill")
    with pytest.raises(ValueError, match="must not be empty"):
        Pool("", 10, 2)
    with pytest.raises(TypeError, match="name must be a string"):
        Pool(3, 10, 2)
    with pytest.raises(TypeError, match="max_tokens must be a number"):
        Pool("p", "10", 2)
    with pytest.raises(ValueError, match="NaN"):
        Pool("p", math.nan, 2)
    with pytest.raises(TypeError, match="every type must be a string"):
        Pool("p", 1, 1, types=("a", None))
    assert Pool("p", 1, 1, types=["b", "a"]).types == ("b", "a")
    assert Pool("p", 1, 1, types={"b", "a"}).types == ("a", "b")
    with pytest.raises(TypeError, match="single Pool"):
        retrieve_pools([], POOL)
    with pytest.raises(TypeError, match=r"pools\[1\] must be a Pool"):
        retrieve_pools([], [POOL, ("q", 1, 1)])


def test_context_errors():
    with pytest.raises(TypeError, match="context\\['tags'\\]"):
        retrieve([{"content": "a"}], POOL, {"tags": "ops"}, now=NOW)
    with pytest.raises(TypeError, match="context\\['message'\\]"):
        retrieve([{"content": "a"}], POOL, {"message": 12}, now=NOW)
    with pytest.raises(TypeError, match="now must be a datetime"):
        retrieve([{"content": "a"}], POOL, now="2026-07-07")


def test_a_bad_tag_in_the_context_is_named_even_past_a_long_list():
    tags = ["a" * 25, "b" * 25, 3]
    with pytest.raises(TypeError) as info:
        retrieve([{"content": "a"}], POOL, {"tags": tags}, now=NOW)
    assert str(info.value) == "context['tags'] must be a list of strings, got int 3"
    with pytest.raises(TypeError) as info:
        retrieve([{"content": "a"}], POOL, {"tags": "ops"}, now=NOW)
    assert str(info.value) == "context['tags'] must be a list of strings, got str 'ops'"


def test_cost_and_time_errors_say_what_was_wanted():
    with pytest.raises(EntryError) as info:
        retrieve([{"id": "e1", "content": "a"}], POOL, token_counter=lambda t: 2.5, now=NOW)
    assert str(info.value) == (
        "entry 'e1' (index 0): field 'token_count' is not a positive integer and token_counter returned 2.5 "
        "for its content (costs are positive ints)"
    )
    for value, got in (("soon", "got str 'soon'"), (5, "got int 5")):
        with pytest.raises(EntryError) as info:
            retrieve([{"id": "e1", "content": "a", "expires": value}], POOL, now=NOW)
        assert str(info.value) == "entry 'e1' (index 0): field 'expires' must be an ISO-8601 time (a string), " + got


def test_unadmitted_correction_is_warned_and_reported():
    entries = [
        {"id": "fix-1", "content": "Never force-push main.", "type": "correction", "scope": "always"},
        {"id": "t1", "content": "ship it", "type": "task"},
        {"id": "g1", "content": "grew", "type": "growth"},
    ]
    plan = [Pool("tasks", 100, 5, types=("task",))]
    with pytest.warns(UnadmittedCorrectionWarning, match="'fix-1'.*'correction'.*no pool admits"):
        sel = select(entries, plan, now=NOW)
    reasons = {d.entry["id"]: d.reason for d in sel.dropped}
    assert reasons == {"fix-1": Reason.ALWAYS_NO_POOL, "g1": Reason.NO_POOL}
    with pytest.warns(UnadmittedCorrectionWarning):
        retrieve_pools(entries, plan, now=NOW)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        retrieve_pools(entries, [Pool("all", 100, 5)], now=NOW)


def test_every_path_words_the_unadmitted_correction_warning_alike():
    # The core select and its twins (seamed, the index) each warn in step 4.
    from poolsplit_adapters import MemoryIndex, poolsplit, seamed

    entries = [
        {"id": "fix-1", "content": "Never force-push main.", "type": "correction", "scope": "always"},
        {"id": "t1", "content": "ship it", "type": "task"},
    ]
    plan = [Pool("tasks", 100, 5, types=("task",))]
    paths = [
        lambda: poolsplit.select(entries, plan, now=NOW),
        lambda: poolsplit.retrieve_pools(entries, plan, now=NOW),
        lambda: seamed.select(entries, plan, now=NOW),
        lambda: MemoryIndex(entries).select(plan, now=NOW),
    ]
    said = []
    for run in paths:
        with pytest.warns(UnadmittedCorrectionWarning) as caught:
            run()
        said.append([str(w.message) for w in caught])
    expected = (
        "entry 'fix-1' (index 0) is an always-scope correction of type 'correction', but no pool admits that type: "
        "it will not load. Add the type to a pool."
    )
    assert said == [[expected]] * len(paths)


def test_report_reasons_exact():
    entries = [
        {"id": "old", "content": "a", "status": "archived"},
        {"id": "t1", "content": "a", "type": "task", "token_count": 6, "base_priority": 9},
        {"id": "t2", "content": "a", "type": "task", "token_count": 6, "base_priority": 8},
        {"id": "t3", "content": "a", "type": "task", "token_count": 1, "base_priority": 7},
        {"id": "t4", "content": "a", "type": "task", "token_count": 1, "base_priority": 6},
        {"id": "c1", "content": "a" * 40, "type": "task", "scope": "always"},
    ]
    sel = select(entries, [Pool("tasks", 10, 2, types=("task",))], now=NOW)
    assert [c.entry["id"] for c in sel.chosen] == ["c1", "t1", "t3"]
    assert [(d.entry["id"], d.reason, d.pool) for d in sel.dropped] == [
        ("old", Reason.INACTIVE, None),
        ("t2", Reason.TOKEN_BUDGET, "tasks"),
        ("t4", Reason.ENTRY_CAP, "tasks"),
    ]
    stat = sel.stats["tasks"]
    assert (stat.tokens_used, stat.entries_used, stat.always_count, stat.always_tokens) == (7, 2, 1, 10)
    assert sel.dropped[1].cost == 6 and sel.dropped[1].score == pytest.approx(8 * 1.0)


# An aware time whose UTC instant is before year 1 or after 9999: ISO-8601, but
# no datetime holds it once converted (it raised OverflowError from deep inside).
PAST_THE_RANGE = ("9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00")


@pytest.mark.parametrize("value", PAST_THE_RANGE)
@pytest.mark.parametrize("field", ["expires", "valid_from", "valid_until"])
def test_a_lifecycle_time_past_the_utc_range_is_the_entrys_error_on_every_path(field, value):
    from poolsplit_adapters import fastpath
    from poolsplit_adapters.poolsplit import select as core_select

    entries = [{"id": "e1", "content": "a", field: value}]
    expected = "field %r is %r, outside the years 1 to 9999 once converted to UTC" % (field, value)
    paths = (core_select, fastpath.select, lambda e, p, **o: MemoryIndex(e).select(p, **o))
    for path in paths:
        with pytest.raises(EntryError) as info:
            path(entries, [POOL], now=NOW, visibility=Visibility(as_of=NOW))
        assert str(info.value).startswith("entry 'e1'") and str(info.value).endswith(expected)
        assert (info.value.entry_id, info.value.field) == ("e1", field)


@pytest.mark.parametrize("value", PAST_THE_RANGE)
def test_an_aware_argument_past_the_utc_range_is_a_value_error_naming_it(value):
    moment = datetime.datetime.fromisoformat(value)
    with pytest.raises(ValueError) as info:
        select([{"content": "a"}], [POOL], now=moment)
    assert str(info.value) == "now is %s, outside the years 1 to 9999 once converted to UTC" % value
    for name in ("since", "until", "as_of"):
        with pytest.raises(ValueError) as info:
            Visibility(**{name: moment})
        assert str(info.value) == "Visibility %s is %s, outside the years 1 to 9999 once converted to UTC" % (
            name,
            value,
        )
    with pytest.raises(ValueError) as info:
        Visibility(as_of=value)
    assert str(info.value) == "Visibility as_of is %r, outside the years 1 to 9999 once converted to UTC" % value


def test_the_core_given_pools_auto_names_the_plan_it_takes_instead():
    # pools="auto" is the adapters' task plan; the core takes Pools, and said only "got str 'auto'".
    from poolsplit_adapters import MemoryIndex, Pool, select

    entries = [{"id": "n1", "type": "note", "content": "Deploys go out on Tuesdays."}]
    expected = (
        "pools must be a sequence of Pool objects, got str 'auto' ('auto' is the adapters' task plan; here give"
        " the Pools it makes: poolsplit_adapters.memory.task_pools(context, total_tokens=..., total_entries=...))"
    )
    for call in (lambda: select(entries, "auto", {}), lambda: MemoryIndex(entries).select("auto", {})):
        with pytest.raises(TypeError) as raised:
            call()
        assert str(raised.value) == expected
    assert [e["id"] for e in select(entries, [Pool("notes", 100, 2)], {}).entries()] == ["n1"]
