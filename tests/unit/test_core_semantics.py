"""Exact-value tests pinning each rule of the poolsplit spec (seed 001)."""

from __future__ import annotations

import copy
import datetime

import pytest
from conftest import NOW

import poolsplit_adapters.poolsplit as core
from poolsplit_adapters import Pool, default_is_active, default_scorer, default_token_counter, retrieve, retrieve_pools


def e(eid, content="x" * 40, **kw):
    return {"id": eid, "content": content, **kw}


# -- costs -------------------------------------------------------------------


def test_default_token_counter_is_len_div_4_never_zero():
    assert default_token_counter("") == 1
    assert default_token_counter("abc") == 1
    assert default_token_counter("abcdefgh") == 2
    assert default_token_counter("a" * 401) == 100


def test_exact_fit_is_taken_and_one_over_is_skipped():
    entries = [e("a", token_count=60, base_priority=9), e("b", token_count=40, base_priority=8)]
    assert [x["id"] for x in retrieve(entries, Pool("p", 100, 10), now=NOW)] == ["a", "b"]
    assert [x["id"] for x in retrieve(entries, Pool("p", 99, 10), now=NOW)] == ["a"]


def test_overflowing_entry_is_skipped_and_scanning_continues():
    entries = [
        e("big", token_count=80, base_priority=9),
        e("huge", token_count=50, base_priority=8),
        e("small", token_count=20, base_priority=1),
    ]
    got = retrieve(entries, Pool("p", 100, 10), now=NOW)
    assert [x["id"] for x in got] == ["big", "small"]


@pytest.mark.parametrize(
    ("token_count", "expected_cost"),
    [(0, 10), (-5, 10), (True, 10), (False, 10), (3.0, 10), ("7", 10), (None, 10), (7, 7)],
)
def test_token_count_used_only_when_positive_int(token_count, expected_cost):
    entry = e("a", content="y" * 40, token_count=token_count)
    # With a budget of exactly the expected cost it fits; one less and it does not.
    assert retrieve([entry], Pool("p", expected_cost, 1), now=NOW) == [entry]
    assert retrieve([entry], Pool("p", expected_cost - 1, 1), now=NOW) == []


def test_custom_token_counter_is_used_for_missing_counts():
    entry = e("a", content="hello world")
    assert retrieve([entry], Pool("p", 2, 1), token_counter=lambda t: 2, now=NOW) == [entry]
    assert retrieve([entry], Pool("p", 1, 1), token_counter=lambda t: 2, now=NOW) == []


# -- caps --------------------------------------------------------------------


def test_zero_caps_admit_only_always_scope():
    always = e("c", scope="always", type="correction")
    ctx = e("t", type="task", token_count=1)
    for pool in (Pool("p", 0, 10), Pool("p", 10, 0), Pool("p", 0, 0)):
        assert retrieve([ctx, always], pool, now=NOW) == [always]


def test_entry_cap_counts_contextual_entries_only():
    entries = [e("c%d" % i, scope="always", token_count=500) for i in range(3)]
    entries += [e("t%d" % i, token_count=1, base_priority=9 - i) for i in range(5)]
    got = retrieve(entries, Pool("p", 10, 2), now=NOW)
    assert [x["id"] for x in got] == ["c0", "c1", "c2", "t0", "t1"]


def test_always_scope_loads_first_in_input_order_outside_both_caps():
    entries = [
        e("t1", base_priority=100, token_count=1),
        e("c2", scope="always", base_priority=0, token_count=10_000),
        e("c1", scope="always", token_count=10_000),
    ]
    got = retrieve(entries, Pool("p", 1, 1), now=NOW)
    assert [x["id"] for x in got] == ["c2", "c1", "t1"]


# -- filtering ---------------------------------------------------------------


def test_missing_status_is_active_other_status_and_superseded_are_not():
    assert default_is_active({"content": "x"})
    assert default_is_active({"content": "x", "status": "active"})
    assert not default_is_active({"content": "x", "status": "archived"})
    assert not default_is_active({"content": "x", "superseded_by": "other"})
    assert default_is_active({"content": "x", "superseded_by": ""})
    entries = [e("a"), e("b", status="archived"), e("c", superseded_by="a"), e("d", scope="always", status="done")]
    assert [x["id"] for x in retrieve(entries, Pool("p", 100, 10), now=NOW)] == ["a"]


def test_typed_pool_ignores_other_types_including_always_entries():
    entries = [
        e("c", type="correction", scope="always"),
        e("s", type="skill"),
        e("n"),  # no type: "note"
    ]
    assert retrieve(entries, Pool("p", 100, 10, types=("skill",)), now=NOW) == [entries[1]]
    assert retrieve(entries, Pool("p", 100, 10, types=("note",)), now=NOW) == [entries[2]]
    # Equal scores: the tie goes to the smaller id ("n" before "s").
    assert retrieve(entries, Pool("p", 100, 10), now=NOW) == [entries[0], entries[2], entries[1]]


# -- ordering ----------------------------------------------------------------


def test_ties_break_by_created_then_id_then_input_index():
    flat = lambda en, cx, now=None: 1.0  # noqa: E731  every score ties
    pool = Pool("p", 10, 10)
    undated = e("z", token_count=1)
    older = e("y", created="2026-06-30T23:00:00", token_count=1)
    newer_b = e("b", created="2026-07-01T00:00:00", token_count=1)
    newer_a = e("a", created="2026-07-01T00:00:00", token_count=1)
    got = retrieve([newer_b, newer_a, older, undated], pool, scorer=flat, now=NOW)
    # "" sorts before any date, older dates before newer, then id.
    assert [x["id"] for x in got] == ["z", "y", "a", "b"]
    twin1, twin2 = e("same", token_count=1), e("same", token_count=1)
    got = retrieve([twin1, twin2], pool, scorer=flat, now=NOW)
    assert got[0] is twin1 and got[1] is twin2
    got = retrieve([twin2, twin1], pool, scorer=flat, now=NOW)
    assert got[0] is twin2 and got[1] is twin1


def test_higher_score_first():
    low, high = e("low", base_priority=1, token_count=1), e("high", base_priority=9, token_count=1)
    assert retrieve([low, high], Pool("p", 10, 10), now=NOW) == [high, low]


# -- identity, mutation, pools -----------------------------------------------


def test_same_objects_returned_and_nothing_mutated():
    entries = [e("a", tags=["x"], created="2026-07-01T00:00:00Z"), e("c", scope="always")]
    before = copy.deepcopy(entries)
    got = retrieve_pools(entries, [Pool("p", 100, 10)], {"tags": ["x"], "message": "xxxx"}, now=NOW)
    assert got["p"][0] is entries[1] and got["p"][1] is entries[0]
    assert entries == before


def test_retrieve_pools_dedupes_by_identity_in_pool_order():
    shared = {"content": "no id at all", "type": "fact"}
    pools = [Pool("first", 100, 10, types=("fact",)), Pool("second", 100, 10)]
    got = retrieve_pools([shared, e("n")], pools, now=NOW)
    assert got["first"] == [shared]
    assert len(got["second"]) == 1 and got["second"][0]["id"] == "n"


@pytest.mark.parametrize("fill", [retrieve_pools, core.retrieve_pools], ids=["package", "core file"])
def test_one_dict_listed_twice_loads_once(fill):
    """Claims are by identity: the same dict at a second position is the entry a pool already took (both
    sources; the fill's claim shortcut by position holds only while no object is listed twice)."""
    shared = {"content": "the same dict twice", "type": "fact", "base_priority": 9}
    pools = [Pool("first", 100, 1, types=("fact",)), Pool("second", 100, 10)]
    got = fill([shared, e("n"), shared], pools, now=NOW)
    assert got["first"] == [shared]
    assert [entry["id"] for entry in got["second"]] == ["n"]


def test_duplicate_pool_names_raise():
    with pytest.raises(ValueError, match="duplicate pool name"):
        retrieve_pools([], [Pool("a", 1, 1), Pool("a", 2, 2)])


def test_a_budget_past_every_cost_is_refused_by_name_and_inf_is_no_cap():
    # 10**30 was accepted, then an agent's checkpointer failed after the model
    # call ("Integer exceeds 64-bit range"): no text costs more than 2**53 - 1.
    with pytest.raises(
        ValueError, match=r"^Pool 's': max_tokens must be at most 9007199254740991 or math.inf, got 10{30}$"
    ):
        Pool("s", 10**30, 3)
    with pytest.raises(ValueError, match=r"^Pool 's': max_entries must be at most 9007199254740991 or math.inf"):
        Pool("s", 10, 2**53)
    assert Pool("s", float("inf"), 2**53 - 1).max_entries == 2**53 - 1


def test_negative_budgets_raise():
    with pytest.raises(ValueError, match="max_tokens"):
        Pool("a", -1, 1)
    with pytest.raises(ValueError, match="max_entries"):
        Pool("a", 1, -1)


# -- default scorer ----------------------------------------------------------


def test_default_scorer_exact_factors():
    now = datetime.datetime(2026, 7, 7)
    base = {"content": "alpha", "created": "2026-07-07T00:00:00"}
    assert default_scorer(base, None, now=now) == 5.0
    assert default_scorer({**base, "base_priority": 2}, None, now=now) == 2.0
    # 45 days: 1 - 0.5 * 0.7 = 0.65; 90 and more days: floor 0.3.
    assert default_scorer({**base, "created": "2026-05-23T00:00:00"}, None, now=now) == pytest.approx(5 * 0.65)
    assert default_scorer({**base, "created": "2020-01-01"}, None, now=now) == pytest.approx(1.5)
    # Future and unparseable timestamps count as age 0.
    assert default_scorer({**base, "created": "2030-01-01"}, None, now=now) == 5.0
    assert default_scorer({**base, "created": "last tuesday"}, None, now=now) == 5.0
    # Tags: half of the entry's distinct tags match -> 1 + 0.5 * 0.5.
    tagged = {**base, "tags": ["a", "b", "b"]}
    assert default_scorer(tagged, {"tags": ["a"]}, now=now) == 5.0 * 1.25
    assert default_scorer(tagged, {"tags": []}, now=now) == 5.0
    # Project: None neutral, same x1.5, other x0.5.
    assert default_scorer(base, {"project": "p"}, now=now) == 5.0
    assert default_scorer({**base, "project": "p"}, {"project": "p"}, now=now) == 7.5
    assert default_scorer({**base, "project": "p"}, {"project": "q"}, now=now) == 2.5
    assert default_scorer({**base, "project": "p"}, None, now=now) == 2.5


def test_default_scorer_message_overlap_threshold():
    now = datetime.datetime(2026, 7, 7)
    entry = {"content": "Deploy the staging cluster with kubectl.", "created": "2026-07-07"}
    # Significant message words: deploy, staging, cluster, today -> 3/4 shared.
    assert default_scorer(entry, {"message": "deploy staging cluster today"}, now=now) == 5.0 * (1 + 0.75 * 1.5)
    # One of seven words = 0.1428... <= 0.15: no boost.
    msg = "deploy alpha bravo charlie delta echo foxtrot"
    assert default_scorer(entry, {"message": msg}, now=now) == 5.0
    # One of six = 0.1666 > 0.15: boost.
    msg = "deploy alpha bravo charlie delta echo"
    assert default_scorer(entry, {"message": msg}, now=now) == pytest.approx(5.0 * (1 + (1 / 6) * 1.5))
    # Stopwords and short words never count; substrings of longer words do not match.
    assert default_scorer(entry, {"message": "the and to deployment"}, now=now) == 5.0


def test_default_scorer_offset_is_dropped_not_converted():
    now = datetime.datetime(2026, 7, 7, tzinfo=datetime.timezone(datetime.timedelta(hours=5)))
    entry = {"content": "x", "created": "2026-07-07T00:00:00+05:00"}
    assert default_scorer(entry, None, now=now) == 5.0


def test_retrieval_never_raises_future_scores():
    entries = [e("a", token_count=1), e("b", token_count=1, base_priority=4)]
    before = [default_scorer(x, None, now=NOW) for x in entries]
    for _ in range(5):
        retrieve_pools(entries, [Pool("p", 1, 1)], now=NOW)
    assert [default_scorer(x, None, now=NOW) for x in entries] == before
