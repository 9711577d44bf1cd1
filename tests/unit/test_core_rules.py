"""Exact values for the rules added around the spec: the relevance
threshold, time bounds, explicit unnamespaced links, the report's JSON form,
and clear errors at the edges."""

from __future__ import annotations

import datetime
import json
import threading

import pytest
from conftest import NOW
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_adapters import EntryError, MemoryIndex, Pool, Reason, Visibility, retrieve_pools, select
from poolsplit_adapters.render import selection_dict


def e(eid, content="x" * 40, **kw):
    return {"id": eid, "content": content, **kw}


STORE = [
    e("deploy", "deploy the staging cluster", type="note", token_count=5, created="2026-07-01T00:00:00Z"),
    e("half", "deploy notes for mobile", type="note", token_count=5, created="2026-06-01T00:00:00Z"),
    e("other", "cafeteria menu", type="note", token_count=5, base_priority=9, created="2026-07-06T00:00:00Z"),
    e("undated", "deploy staging cluster again", type="note", token_count=5),
    e("fix", "never force-push", type="correction", scope="always", created="2020-01-01T00:00:00Z"),
]
PLAN = [Pool("corrections", 0, 0, ("correction",)), Pool("notes", 100, 10, ("note",), min_relevance=0.5)]
ASK = {"message": "deploy staging cluster"}


def test_min_relevance_sets_marginal_candidates_aside_before_the_budget():
    sel = select(STORE, PLAN, ASK, now=NOW)
    # deploy: 3/3 words, undated: 3/3 (and age 0: newest), half: 1/3 < 0.5, other: 0/3.
    assert [c.entry["id"] for c in sel.chosen] == ["fix", "undated", "deploy"]
    assert [(d.entry["id"], d.reason, d.pool) for d in sel.dropped] == [
        ("half", Reason.BELOW_RELEVANCE, "notes"),
        ("other", Reason.BELOW_RELEVANCE, "notes"),
    ]
    assert sel.stats["notes"].candidates == 4
    # Without a threshold the high-priority but unrelated note wins a slot.
    plain = select(STORE, [PLAN[0], Pool("notes", 100, 10, ("note",))], ASK, now=NOW)
    # 12.5, 5 x (1 - 0.7 x 6.5 / 90) x 2.5, 9 x (1 - 0.7 x 1.5 / 90), 5 x (1 - 0.7 x 36.5 / 90) x 1.5
    assert [c.entry["id"] for c in plain.chosen] == ["fix", "undated", "deploy", "other", "half"]


def test_min_relevance_never_applies_to_corrections_and_is_the_same_on_the_index():
    strict = [Pool("all", 100, 10, min_relevance=1.0)]
    expected = ["fix", "undated", "deploy"]
    assert [x["id"] for x in retrieve_pools(STORE, strict, ASK, now=NOW)["all"]] == expected
    assert [x["id"] for x in MemoryIndex(STORE).retrieve_pools(strict, ASK, now=NOW)["all"]] == expected
    generic = MemoryIndex(STORE, use_numpy=False).select(strict, ASK, now=NOW)
    assert [c.entry["id"] for c in generic.chosen] == expected


def test_a_plain_scorer_function_is_its_own_relevance():
    def scorer(entry, context, now=None):
        return float(len(entry["content"]))

    got = retrieve_pools(STORE, [Pool("all", 100, 10, min_relevance=20)], ASK, now=NOW, scorer=scorer)
    assert [x["id"] for x in got["all"]] == ["fix", "undated", "deploy", "half"]


def test_time_bounds_filter_contextual_entries_and_report_undated_ones():
    view = Visibility(since="2026-06-15", until=datetime.datetime(2026, 7, 2))
    for sel in (
        select(STORE, [Pool("all", 100, 10)], ASK, now=NOW, visibility=view),
        MemoryIndex(STORE).select([Pool("all", 100, 10)], ASK, now=NOW, visibility=view),
    ):
        # The 2020 correction is a standing rule: never time-filtered.
        assert [c.entry["id"] for c in sel.chosen] == ["fix", "deploy"]
        assert [(d.entry["id"], d.reason) for d in sel.dropped] == [
            ("half", Reason.OUT_OF_TIME),
            ("other", Reason.OUT_OF_TIME),
            ("undated", Reason.UNDATED),
        ]


def test_aware_bounds_are_converted_to_utc_and_bad_bounds_are_clear_errors():
    plus2 = datetime.timezone(datetime.timedelta(hours=2))
    assert Visibility(since=datetime.datetime(2026, 7, 1, 2, 0, tzinfo=plus2)).bounds[0] == datetime.datetime(
        2026, 7, 1
    )
    with pytest.raises(ValueError, match="since must be an ISO-8601 time"):
        Visibility(since="last tuesday")
    with pytest.raises(TypeError, match="until must be a datetime"):
        Visibility(until=20260701)
    with pytest.raises(ValueError, match="is after until"):
        Visibility(since="2026-07-02", until="2026-07-01")


def test_a_bound_given_as_text_with_an_offset_is_the_instant_its_datetime_is():
    """``since="...+05:00"`` and the same aware datetime bound one instant (the
    text's offset was dropped: an entry created after the instant was hidden)."""
    plus5 = datetime.timezone(datetime.timedelta(hours=5))
    for name in ("since", "until"):
        text = Visibility(**{name: "2026-07-07T05:00:00+05:00"})
        moment = Visibility(**{name: datetime.datetime(2026, 7, 7, 5, tzinfo=plus5)})
        assert text.bounds == moment.bounds
    assert Visibility(since="2026-07-07T05:00:00+05:00").bounds[0] == datetime.datetime(2026, 7, 7)
    created = [{"id": "x", "content": "x", "created": "2026-07-07T02:00:00Z"}]
    view = Visibility(since="2026-07-07T05:00:00+05:00", until="2026-07-07T02:00:00z")
    for sel in (
        select(created, [Pool("all", 100, 10)], now=NOW, visibility=view),
        MemoryIndex(created).select([Pool("all", 100, 10)], now=NOW, visibility=view),
    ):
        assert [c.entry["id"] for c in sel.chosen] == ["x"]


def test_a_none_link_names_entries_without_a_namespace_only_when_asked():
    store = [e("mine", namespace="a"), e("shared-fix", type="correction", scope="always"), e("theirs", namespace="b")]
    plan = [Pool("corrections", 0, 0, ("correction",)), Pool("notes", 100, 10, ("note",))]
    strict = select(store, plan, now=NOW, visibility=Visibility(namespace="a"))
    assert [c.entry["id"] for c in strict.chosen] == ["mine"]
    widened = select(store, plan, now=NOW, visibility=Visibility(namespace=("a", None)))
    assert [c.entry["id"] for c in widened.chosen] == ["shared-fix", "mine"]
    assert [(d.entry["id"], d.reason) for d in widened.dropped] == [("theirs", Reason.NAMESPACE)]
    index = MemoryIndex(store).select(plan, now=NOW, visibility=Visibility(namespace=("a", None)))
    assert [c.entry["id"] for c in index.chosen] == ["shared-fix", "mine"]


def test_reason_is_a_str_enum_and_to_dict_is_plain_json():
    sel = select(STORE, PLAN, ASK, now=NOW)
    assert Reason.BELOW_RELEVANCE == "below_relevance" and str(Reason.TOKEN_BUDGET) == "token_budget"
    data = json.loads(json.dumps(selection_dict(sel)))
    assert [row["id"] for row in data["chosen"]] == ["fix", "undated", "deploy"]
    assert data["chosen"][2] == {
        "id": "deploy",
        "type": "note",
        "index": 0,
        "pool": "notes",
        "always": False,
        "score": sel.chosen[2].score,
        "tokens": 5,
        "layer": "full",
    }
    assert [(row["id"], row["reason"]) for row in data["dropped"]] == [
        ("half", "below_relevance"),
        ("other", "below_relevance"),
    ]
    assert data["stats"]["notes"]["tokens_used"] == 10


def test_a_lazy_report_stays_exact_after_the_index_changes():
    store = [e("a", type="note", token_count=60), e("b", type="note", token_count=60), e("c", type="note")]
    index = MemoryIndex(store)
    sel = index.select([Pool("notes", 100, 1, ("note",))], now=NOW)
    index.remove(store[1])
    index.add(e("d"))
    assert [(d.entry["id"], d.index, d.reason) for d in sel.dropped] == [
        ("b", 1, Reason.TOKEN_BUDGET),
        ("c", 2, Reason.ENTRY_CAP),
    ]


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"id": "big", "content": "x", "base_priority": 10**400}, "base_priority"),
        ({"id": "big", "content": "x", "base_priority": -(10**309)}, "base_priority"),
    ],
)
def test_priorities_too_large_for_a_float_are_refused_like_infinities(entry, field):
    for call in (lambda: select([entry], [Pool("p", 10, 1)]), lambda: MemoryIndex([entry])):
        with pytest.raises(
            EntryError, match="must be a finite number, got int <a 401-digit int>|finite number"
        ) as info:
            call()
        assert info.value.field == field and info.value.entry_id == "big"


def test_bad_arguments_name_themselves():
    with pytest.raises(TypeError, match="entries must be a sequence of entry mappings, got NoneType None"):
        select(None, [Pool("p", 10, 1)])
    with pytest.raises(TypeError, match="entries must be a sequence of entry mappings, got str"):
        retrieve_pools("abc", [Pool("p", 10, 1)])
    with pytest.raises(TypeError, match="pools must be a sequence of Pool objects, got NoneType"):
        select([], None)
    with pytest.raises(TypeError, match="Visibility namespace must be a non-empty string"):
        Visibility(namespace=5)
    with pytest.raises(TypeError, match="require_tags must be a list of strings"):
        Visibility(require_tags="ops")
    with pytest.raises(TypeError, match="min_relevance must be a finite number"):
        Pool("p", 10, 1, min_relevance="high")
    with pytest.raises(EntryError, match=r"token_counter returned 0 for its content"):
        select([e("z")], [Pool("p", 10, 1)], token_counter=lambda text: 0)


def test_index_mutations_name_the_missing_entry_and_bump_the_version():
    index = MemoryIndex([e("a")])
    version = index.version
    with pytest.raises(KeyError, match="entry 'ghost' is not in the index"):
        index.refresh_all([e("ghost")])
    with pytest.raises(KeyError, match="entry 'ghost' is not in the index"):
        index.remove(e("ghost"))
    assert index.version == version
    index.add(e("b"))
    index.replace(index.entries[0], e("a2"))
    assert index.version == version + 2
    assert [x["id"] for x in index.entries] == ["b", "a2"]


def test_replace_is_atomic_for_concurrent_queries():
    fix = e("fix", "v0", type="correction", scope="always")
    index = MemoryIndex([fix] + [e("n%d" % i, type="note") for i in range(200)])
    plan = [Pool("corrections", 0, 0, ("correction",)), Pool("notes", 50, 3, ("note",))]
    seen = []
    stop = threading.Event()

    def ask():
        while not stop.is_set():
            seen.append([x["content"] for x in index.retrieve_pools(plan, now=NOW)["corrections"]])

    readers = [threading.Thread(target=ask) for _ in range(3)]
    for t in readers:
        t.start()
    current = fix
    for version in range(1, 150):
        new = e("fix", "v%d" % version, type="correction", scope="always")
        index.replace(current, new)
        current = new
    stop.set()
    for t in readers:
        t.join()
    assert seen and all(len(got) == 1 for got in seen)


def test_threshold_cuts_are_shown_in_their_own_omission_line():
    from poolsplit_adapters.render import parse_markers, render_context

    text = render_context(select(STORE, PLAN, ASK, now=NOW)).text
    assert [m["id"] for m in parse_markers(text)] == ["fix", "undated", "deploy"]
    assert text.splitlines()[-1] == "[2 more entries left out below the relevance threshold: notes 2]"


@pytest.mark.parametrize(
    "a_priority, b_priority, message",
    [
        # the largest priorities there are (MAX_PRIORITY: a larger one could
        # overflow to inf and is refused): a 1e300 x 2.5 x 0.5 above b's 9e299
        (1e300, 9e299, "deploy"),
        # both scores round to the smallest subnormal; the id breaks the tie
        (5e-324, 5e-324, "deploy staging cluster review"),
    ],
)
def test_best_first_bound_holds_at_the_largest_priorities_and_in_subnormals(a_priority, b_priority, message):
    """With a namespace-chain penalty the best-first bound multiplies in the
    score's own order: it never falls below the exact score, so the stateless
    path and the index both rank a first (found by review: a bound taken in
    another order put b first)."""
    view = Visibility(namespace=("A", "B"), chain_penalty=0.5)
    a = {
        "id": "a",
        "content": "deploy staging cluster",
        "base_priority": a_priority,
        "namespace": "B",
        "token_count": 1,
    }
    b = {"id": "b", "content": "nothing", "base_priority": b_priority, "namespace": "A", "token_count": 1}
    pools = [Pool("p", 10, 2)]
    for store in ([a, b], [b, a]):
        context = {"message": message}
        assert [e["id"] for e in retrieve_pools(store, pools, context, now=NOW, visibility=view)["p"]] == ["a", "b"]
        index = MemoryIndex(store)
        assert [e["id"] for e in index.retrieve_pools(pools, context, now=NOW, visibility=view)["p"]] == ["a", "b"]


def test_list_candidates_name_a_context_passed_where_the_prepared_scorer_goes():
    from poolsplit_adapters.poolsplit import ListCandidates, default_scorer, prepare_scorer

    with pytest.raises(TypeError, match=r"prepare_scorer\(scorer, context, now\), got dict"):
        ListCandidates([{"content": "x"}], {"message": "deploy"})
    source = ListCandidates([{"content": "deploy x"}], prepare_scorer(default_scorer, {"message": "deploy"}, NOW))
    assert (
        source.score(0)
        == select([{"content": "deploy x"}], [Pool("p", 9, 1)], {"message": "deploy"}, now=NOW).chosen[0].score
    )


def test_a_failing_activeness_predicate_leaves_the_index_unchanged():
    def is_active(entry):
        if entry["id"] == "bad":
            raise RuntimeError("predicate failed")
        return True

    index = MemoryIndex([{"id": "x", "content": "deploy"}], is_active=is_active)
    before = (
        len(index),
        index.version,
        selection_dict(index.select([Pool("p", 99, 9)], {"message": "deploy"}, now=NOW)),
    )
    with pytest.raises(RuntimeError, match="predicate failed"):
        index.extend([{"id": "ok", "content": "deploy"}, {"id": "bad", "content": "deploy"}])
    after = (
        len(index),
        index.version,
        selection_dict(index.select([Pool("p", 99, 9)], {"message": "deploy"}, now=NOW)),
    )
    assert after == before
    assert before[0] == 1


def test_a_plain_scorer_function_is_called_once_per_entry_even_with_a_threshold():
    calls = []

    def scorer(entry, context, now=None):
        calls.append(entry["id"])
        return 2.0 if entry["id"] == "a" else 0.5

    entries = [{"id": "a", "content": "x"}, {"id": "b", "content": "y"}]
    pools = [Pool("p", 99, 9, min_relevance=1.0)]
    for run in (
        lambda: select(entries, pools, now=NOW, scorer=scorer),
        lambda: MemoryIndex(entries).select(pools, now=NOW, scorer=scorer),
    ):
        calls.clear()
        selection = run()
        assert [c.entry["id"] for c in selection.chosen] == ["a"]
        assert [(d.entry["id"], d.reason) for d in selection.dropped] == [("b", Reason.BELOW_RELEVANCE)]
        assert sorted(calls) == ["a", "b"]


@given(
    st.one_of(st.integers(0, 3), st.floats(0, 3, allow_nan=False)),
    st.one_of(st.integers(0, 3), st.floats(0, 3, allow_nan=False)),
)
def test_loads_contextual_says_whether_the_fill_can_load_a_contextual_entry(max_tokens, max_entries):
    # The one spelling of "this pool can load nothing contextual" (recall
    # asks it for no candidates): an entry costs at least 1 token.
    pool = Pool("p", max_tokens, max_entries)
    cheapest = {"id": "e", "content": "x", "token_count": 1}
    loaded = select([cheapest], [pool]).pools["p"]
    assert pool.loads_contextual == bool(loaded)


def test_the_one_fill_lives_in_the_core_and_its_0_3_home_names_the_same_objects():
    # Issue #40: the fill came back into the core (0.3 had moved it to seamed, with a warning on the old path).
    import warnings

    from poolsplit_adapters import seamed, seams

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from poolsplit_adapters.poolsplit import Candidates, Layering, ListCandidates, fill_pools
    assert (fill_pools, ListCandidates) == (seamed.fill_pools, seamed.ListCandidates)
    assert (Candidates, Layering) == (seams.Candidates, seams.Layering)
    import poolsplit_adapters.poolsplit as core

    assert seamed.select is core.select

    with pytest.raises(AttributeError, match="no attribute 'fill_poolz'"):
        _ = core.fill_poolz
