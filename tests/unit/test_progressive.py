"""Progressive loading (seed 003's layers): exact fills on hand-made pools,
invariants on generated ones, seed-001 behaviour without summaries, the
sufficiency rule, layered markers and token metrics."""

from __future__ import annotations

import copy
from typing import List, Optional, Sequence

import pytest
from example_memory import EXAMPLES, NOW
from hypothesis import given
from hypothesis import strategies as st
from strategies import contexts, nows, pools, stores

from poolsplit_adapters import EntryError, Pool, Reason, select
from poolsplit_adapters.memory.metrics import TokenMetrics, token_metrics
from poolsplit_adapters.memory.progressive import (
    Candidate,
    Layer,
    Pick,
    candidate,
    needs_full_text,
    progressive_fill,
    progressive_select,
    summary_of,
    wants_detail,
)
from poolsplit_adapters.render import marker, parse_markers, render_context
from poolsplit_adapters.stores import load_pools, load_store

S, T, F = Layer.SUMMARY, Layer.TIMELINE, Layer.FULL


def cand(rank: int, full: int, summary: Optional[int], tags: Sequence[str] = (), created: Optional[str] = None):
    entry = {"id": "e%d" % rank, "content": "x" * (4 * full), "tags": list(tags), "created": created}
    if summary is not None:
        entry["summary"] = "s" * (4 * summary)
    return Candidate(rank, entry, 10.0 - rank, full, summary, tuple(tags))


# -- The detail words and the sufficiency rule ------------------------------------------


def test_wants_detail_on_whole_words():
    assert wants_detail("give me the EXACT command")
    assert wants_detail("Full text of the runbook, please")
    assert wants_detail("explain it step-by-step")  # a multi-word entry, any separator
    assert not wants_detail("open it in fullscreen")
    assert not wants_detail("what changed in the pipeline?")
    assert not wants_detail("") and not wants_detail(None)
    assert wants_detail("the gist", detail_words={"gist"})


def test_three_loaded_entries_are_sufficient_unless_detail_is_asked():
    assert needs_full_text(2, detail=False)
    assert not needs_full_text(3, detail=False)
    assert needs_full_text(30, detail=True)
    assert not needs_full_text(1, detail=False, sufficient=1)


# -- The fill, exactly ---------------------------------------------------------------------


def test_breadth_loads_summaries_then_depth_upgrades_in_rank_order_while_it_fits():
    pool = Pool("p", 50, 4)
    cands = [cand(0, 20, 5), cand(1, 30, 6), cand(2, 10, None), cand(3, 8, 8), cand(4, 12, 4)]
    # Summaries where cheaper (c3's is not), in rank order, until the entry cap: 5 + 6 + 10 + 8 = 29.
    assert progressive_fill(cands, pool, deepen=False) == [Pick(0, S, 5), Pick(1, S, 6), Pick(2, F, 10), Pick(3, F, 8)]
    # Depth: c0 +15 fits (44); c1 +24 would not (68 > 50), so c1 keeps its summary instead of being dropped.
    deep = progressive_fill(cands, pool, deepen=True)
    assert deep == [Pick(0, F, 20), Pick(1, S, 6), Pick(2, F, 10), Pick(3, F, 8)]
    # With 9 tokens only c0's summary fits, then c4's (5 + 4).
    assert progressive_fill(cands, Pool("p", 9, 4), deepen=False) == [Pick(0, S, 5), Pick(4, S, 4)]


def test_a_long_entry_loads_its_summary_where_plain_selection_drops_it():
    cands = [cand(0, 90, 10), cand(1, 20, None)]
    pool = Pool("p", 40, 5)
    assert progressive_fill(cands, pool, deepen=True) == [Pick(0, S, 10), Pick(1, F, 20)]
    plain = select([c.entry for c in cands], [pool], token_counter=lambda text: max(1, len(text) // 4))
    assert plain.pools["p"] == [cands[1].entry]  # the 90-token entry does not fit in full


def test_timeline_loads_the_top_topics_recent_entries():
    db, ui = ("db",), ("ui",)
    cands = (
        [cand(0, 20, 5, db, "2026-01-01T00:00:00Z")]
        + [cand(r, 20, 5, ui, "2026-11-01T00:00:00Z") for r in range(1, 7)]
        + [
            cand(7, 20, 5, db, "2026-06-01T00:00:00Z"),
            cand(8, 20, 5, ("ops", "db"), "2026-11-15T00:00:00Z"),
            cand(9, 20, 5, db, "2026-11-10T00:00:00Z"),
            cand(10, 20, None, db, "2026-11-19T00:00:00Z"),  # no summary: no timeline line
        ]
    )
    pool = Pool("p", 100, 8)
    # A quarter of the pool (2 entries, 25 tokens) is held for the timeline of "db": breadth takes ranks
    # 0-5, then the two most recent "db" entries with a summary (8, then 9) instead of ranks 6 and 7.
    shallow = progressive_fill(cands, pool, deepen=False)
    assert shallow == [Pick(r, S, 5) for r in range(6)] + [Pick(8, T, 5), Pick(9, T, 5)]
    # Depth upgrades in rank order: 40 + 4 x 15 = 100, then nothing else fits.
    deep = progressive_fill(cands, pool, deepen=True)
    assert deep == [Pick(r, F, 20) for r in range(4)] + [Pick(4, S, 5), Pick(5, S, 5), Pick(8, T, 5), Pick(9, T, 5)]
    # Without tags there is no timeline: plain rank order.
    untagged = [c._replace(tags=()) for c in cands]
    assert [p.position for p in progressive_fill(untagged, pool, deepen=False)] == list(range(8))
    assert progressive_fill(cands, pool, deepen=False, timeline_share=0) == progressive_fill(
        untagged, pool, deepen=False
    )


def test_room_the_timeline_does_not_use_goes_back_to_breadth():
    cands = [cand(0, 20, 10, ("db",)), cand(1, 20, 10, ("db",)), cand(2, 20, 10), cand(3, 20, 10), cand(4, 20, 10)]
    # One timeline slot and 10 tokens are held; the one "db" entry loads by rank anyway, so the held
    # room returns to breadth and rank 3 fits: the same picks as without a timeline.
    assert progressive_fill(cands, Pool("p", 40, 8), deepen=False) == [Pick(r, S, 10) for r in range(4)]


def test_zero_budgets_load_nothing():
    cands = [cand(0, 5, 1)]
    assert progressive_fill(cands, Pool("p", 0, 5), deepen=True) == []
    assert progressive_fill(cands, Pool("p", 50, 0), deepen=True) == []
    assert progressive_fill([], Pool("p", 50, 5), deepen=True) == []


# -- The fill on generated candidates --------------------------------------------------------


@st.composite
def candidate_lists(draw):
    n = draw(st.integers(0, 12))
    out = []
    for rank in range(n):
        full = draw(st.integers(1, 30))
        summary = draw(st.one_of(st.none(), st.integers(1, 30)))
        tags = draw(st.lists(st.sampled_from(["db", "ui", "ops"]), max_size=2, unique=True))
        created = draw(st.sampled_from([None, "garbage", "2026-01-01", "2026-06-01T00:00:00Z", "2026-11-01"]))
        out.append(cand(rank, full, summary, tags, created))
    return out


budget_pools = st.builds(Pool, st.just("p"), st.one_of(st.integers(0, 120), st.just(float("inf"))), st.integers(0, 9))
shares = st.sampled_from([0.0, 0.25, 0.5, 1.0])


def plain_greedy(cands: List[Candidate], pool: Pool) -> List[Pick]:
    """Seed 001's fill, written out: rank order, skip what overflows, stop at the cap."""
    used, out = 0, []
    for c in cands:
        if len(out) >= pool.max_entries:
            break
        if used + c.full_cost <= pool.max_tokens:
            out.append(Pick(c.position, F, c.full_cost))
            used += c.full_cost
    return out


@given(candidate_lists(), budget_pools, st.booleans(), shares)
def test_fill_invariants(cands, pool, deepen, share):
    picks = progressive_fill(cands, pool, deepen=deepen, timeline_share=share)
    by_position = {c.position: c for c in cands}
    assert sum(p.cost for p in picks) <= pool.max_tokens
    assert len(picks) <= pool.max_entries
    assert [p.position for p in picks] == sorted({p.position for p in picks})  # unique, rank order
    for p in picks:
        c = by_position[p.position]
        assert p.cost == (c.full_cost if p.layer is F else c.summary_cost)
        if p.layer is not F:
            assert c.summary_cost is not None and c.summary_cost < c.full_cost
    # Which candidates load never depends on deepen; depth only ever costs more.
    other = progressive_fill(cands, pool, deepen=not deepen, timeline_share=share)
    assert [p.position for p in other] == [p.position for p in picks]
    shallow, deep = (other, picks) if deepen else (picks, other)
    assert sum(p.cost for p in deep) >= sum(p.cost for p in shallow)
    assert {p.position for p in picks} <= set(by_position)


@given(candidate_lists(), budget_pools, st.booleans(), shares)
def test_without_summaries_the_fill_is_seed_001s(cands, pool, deepen, share):
    plain = [c._replace(summary_cost=None) for c in cands]
    assert progressive_fill(plain, pool, deepen=deepen, timeline_share=share) == plain_greedy(plain, pool)


# -- The whole selection -----------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::poolsplit_adapters.UnadmittedCorrectionWarning")  # random plans
@given(stores(), pools(), contexts, nows)
def test_progressive_select_without_summaries_equals_select(entries, plan, context, now):
    plain = select(entries, plan, context, now=now)
    got = progressive_select(entries, plan, context, now=now)
    assert got.pools == plain.pools
    assert [
        (c.entry is p.entry, c.index, c.pool, c.always, c.score, c.cost) for c, p in zip(got.chosen, plain.chosen)
    ] == [(True, p.index, p.pool, p.always, p.score, p.cost) for p in plain.chosen]
    assert len(got.chosen) == len(plain.chosen)
    assert [(d.index, d.reason, d.pool, d.cost) for d in got.dropped] == [
        (d.index, d.reason, d.pool, d.cost) for d in plain.dropped
    ]
    assert got.stats == plain.stats
    assert all(c.layer == F for c in got.chosen)
    assert got.metrics.savings_percent == 0.0


@st.composite
def summarised_stores(draw):
    entries = draw(stores())
    out = []
    for entry in entries:
        if draw(st.booleans()):
            entry = dict(entry, summary=draw(st.sampled_from(["", "short", "a longer summary than most", "db"])))
        out.append(entry)
    return out


@pytest.mark.filterwarnings("ignore::poolsplit_adapters.UnadmittedCorrectionWarning")  # random plans
@given(summarised_stores(), pools(), contexts, nows, st.sampled_from([None, True, False]))
def test_progressive_select_invariants(entries, plan, context, now, detail):
    before = copy.deepcopy(entries)
    plain = select(entries, plan, context, now=now)
    got = progressive_select(entries, plan, context, now=now, detail=detail)
    assert entries == before  # nothing the caller passed is mutated
    positions = [c.index for c in got.chosen] + [d.index for d in got.dropped]
    assert sorted(positions) == list(range(len(entries)))
    for pool in plan:
        stat = got.stats[pool.name]
        assert stat.tokens_used <= pool.max_tokens and stat.entries_used <= pool.max_entries
        assert stat.tokens_used == sum(c.cost for c in got.chosen if c.pool == pool.name and not c.always)
    # The always tier and every reason decided before any pool are the core's
    # (budgets and thresholds depend on what earlier pools took).
    assert [(c.index, c.pool) for c in got.chosen if c.always] == [(c.index, c.pool) for c in plain.chosen if c.always]
    budget = (Reason.TOKEN_BUDGET, Reason.ENTRY_CAP, Reason.BELOW_RELEVANCE)
    assert [(d.index, d.reason) for d in got.dropped if d.reason not in budget] == [
        (d.index, d.reason) for d in plain.dropped if d.reason not in budget
    ]
    assert got.metrics.total_tokens == sum(c.cost for c in got.chosen)
    assert got.metrics.baseline_tokens == sum(c.full_cost for c in got.chosen)
    contextual = sum(1 for c in got.chosen if not c.always)
    assert got.deepened == needs_full_text(contextual, detail=got.detail)


def test_sufficiency_is_decided_over_the_whole_selection():
    def store(n: int) -> list:
        return [
            {"id": "e%d" % i, "type": "fact" if i % 2 else "skill", "content": "word " * 40, "summary": "gist %d" % i}
            for i in range(n)
        ]

    plan = [Pool("facts", 200, 5, ("fact",)), Pool("skills", 200, 5, ("skill",))]
    two = progressive_select(store(2), plan, {"message": "anything"}, now=NOW)
    assert two.deepened and [c.layer for c in two.chosen] == [F, F]
    three = progressive_select(store(3), plan, {"message": "anything"}, now=NOW)
    assert not three.deepened and [c.layer for c in three.chosen] == [S, S, S]  # one pool holds only one
    detail = progressive_select(store(3), plan, {"message": "the exact wording"}, now=NOW)
    assert detail.detail and detail.deepened and [c.layer for c in detail.chosen] == [F, F, F]
    assert progressive_select(store(3), plan, {"message": "exact"}, now=NOW, detail=False).deepened is False


def test_on_the_example_store_with_summaries():
    entries = load_store(EXAMPLES / "memory_with_summaries.jsonl")
    plan = load_pools(EXAMPLES / "pools.toml")
    context = {"message": "retry the payment provider", "project": "checkout", "tags": ["payments"]}
    plain = select(entries, plan, context, now=NOW)
    got = progressive_select(entries, plan, context, now=NOW)
    assert not got.deepened
    assert len(got.chosen) >= len(plain.chosen)
    assert got.metrics.total_tokens < sum(c.cost for c in plain.chosen)
    assert all(c.layer == F for c in got.chosen if c.always)  # corrections always load in full
    assert {c.layer for c in got.chosen if not c.always} <= {S, T}  # every curated entry has a summary


# -- Summaries, markers, metrics -------------------------------------------------------------------


def test_a_bad_summary_names_the_entry_and_the_field():
    with pytest.raises(EntryError, match="entry 'ep-1': field 'summary' must be a string or None, got list") as err:
        summary_of({"id": "ep-1", "content": "x", "summary": ["a"]})
    assert err.value.field == "summary" and err.value.entry_id == "ep-1"
    assert summary_of({"content": "x", "summary": "  "}) is None
    with pytest.raises(EntryError, match="token_counter returned 0 for its summary"):
        candidate(3, {"content": "x", "summary": "y"}, 1.0, 5, token_counter=lambda text: 0)
    with pytest.raises(EntryError, match="field 'summary'"):
        progressive_select([{"id": "bad", "content": "x", "summary": 3}], [Pool("p", 10, 2)])


@pytest.mark.parametrize("summary", ["\u200b", "\u00ad\u200d ", "\ufffd", "\ufeff\n"])
def test_a_summary_that_shows_nothing_counts_as_none(summary):
    # The one rule of "shows nothing" (write_gate.blank): a zero-width
    # summary loaded as the entry's layer, and the model read an empty
    # marker where the full text would have fit.
    assert summary_of({"content": "x", "summary": summary}) is None
    entries = [{"id": "n%d" % i, "content": "full text of note %d" % i, "summary": summary} for i in range(4)]
    got = progressive_select(entries, [Pool("p", 400, 5)])
    assert [(c.entry["id"], c.layer) for c in got.chosen] == [("n0", F), ("n1", F), ("n2", F), ("n3", F)]


def test_layer_markers_say_what_loaded_and_parse_back():
    entry = {"id": "ep-1", "content": "Full <story>.", "summary": 'Short "gist" > here', "created": "2026-11-01"}
    text = marker(entry, "episodes", S)
    assert text == (
        '<memory id="ep-1" at="2026-11-01" pool="episodes" layer="summary">\nShort "gist" &gt; here\n</memory>'
    )
    assert marker(entry, "episodes", "full") == (
        '<memory id="ep-1" at="2026-11-01" pool="episodes">\nFull &lt;story&gt;.\n</memory>'
    )
    assert parse_markers(marker(entry, "episodes", T)) == [
        {
            "id": "ep-1",
            "at": "2026-11-01",
            "pool": "episodes",
            "layer": "timeline",
            "content": 'Short "gist" > here',
        }
    ]
    assert entry["content"] == "Full <story>."  # the entry is not touched
    with pytest.raises(ValueError, match="has no summary"):
        marker({"id": "x", "content": "y"}, "p", S)


def test_render_layers_adds_the_omission_and_expand_lines():
    entries = [{"id": "e%d" % i, "type": "fact", "content": "word " * 20, "summary": "gist %d" % i} for i in range(5)]
    got = progressive_select(entries, [Pool("facts", 100, 3, ("fact",))], {"message": "word"}, now=NOW)
    rendered = render_context(got)
    lines = rendered.text.splitlines()
    assert lines[-2] == "[2 more entries left out by budget: facts 2]"
    assert (
        lines[-1]
        == '[3 entries shown as summaries (layer="summary" or "timeline"); their full text is available by id]'
    )
    assert [m["layer"] for m in parse_markers(rendered.text)] == ["summary"] * 3
    assert rendered.included_ids == ["e0", "e1", "e2"] and rendered.omitted_ids == ["e3", "e4"]
    one = progressive_select(
        entries[:1], [Pool("facts", 100, 3, ("fact",))], {"message": "word"}, now=NOW, detail=False
    )
    assert one.deepened  # a single entry is not sufficient context: it loads in full, and no hint follows
    assert render_context(one).text == marker(entries[0], "facts", F)
    short = progressive_select(entries[:1], [Pool("facts", 6, 3, ("fact",))], {"message": "word"}, now=NOW)
    assert render_context(short).text.splitlines()[-1] == (
        '[1 entry shown as a summary (layer="summary" or "timeline"); its full text is available by id]'
    )


def test_token_metrics_exact():
    entries = [
        {"id": "a", "type": "fact", "content": "x" * 80, "summary": "y" * 8},  # full 20, summary 2
        {"id": "b", "type": "fact", "content": "x" * 40},  # full 10, no summary
        {"id": "c", "type": "fact", "content": "x" * 120, "summary": "y" * 20},  # full 30, summary 5
        {"id": "fix", "type": "correction", "scope": "always", "content": "x" * 24},  # full 6
    ]
    plan = [Pool("c", 0, 0, ("correction",)), Pool("facts", 100, 5, ("fact",))]
    got = progressive_select(entries, plan, now=NOW)
    m = got.metrics
    assert (m.summary_tokens, m.timeline_tokens, m.full_tokens) == (7, 0, 16)
    assert (m.summary_entries, m.full_entries, m.total_tokens, m.baseline_tokens) == (2, 2, 23, 66)
    assert m.savings_percent == pytest.approx(100 * 43 / 66)
    assert str(m) == "tokens: 23 (summaries 7, full text 16) against 66 with every entry in full text: 65.2% saved"
    contextual = token_metrics(got.chosen, include_always=False)
    assert (contextual.total_tokens, contextual.baseline_tokens) == (17, 60)
    assert token_metrics(select(entries, plan, now=NOW).chosen).savings_percent == 0.0
    # A plain selection: every entry in full, said in words, no 0.0% saving.
    assert str(token_metrics(select(entries, plan, now=NOW).chosen)) == "tokens: 66, every entry in full text"
    assert TokenMetrics().savings_percent == 0.0
    layered = TokenMetrics(5, 3, 10, 40, summary_entries=1, timeline_entries=1, full_entries=1)
    assert str(layered) == (
        "tokens: 18 (summaries 5, timeline lines 3, full text 10) against 40 with every entry in full text: 55.0% saved"
    )
    assert m.to_dict() == {
        "tokens_by_layer": {"summary": 7, "timeline": 0, "full": 16},
        "entries_by_layer": {"summary": 2, "timeline": 0, "full": 2},
        "total_tokens": 23,
        "baseline_tokens": 66,
        "savings_percent": 65.15,
    }


def test_the_benchmark_tables_hold_their_invariants():
    import progressive as bench  # benchmarks/progressive.py (benchmarks/ is on the test path)

    table = bench.measure()
    for plan_name, modes in table.items():
        plain, layered, summaries = modes["plain"], modes["progressive"], modes["summaries"]
        assert layered["tokens"] < plain["tokens"] and summaries["tokens"] <= layered["tokens"], plan_name
        assert plain["saved"] == 0.0 and plain["summary"] == plain["timeline"] == 0
        assert summaries["deepened"] == 0  # depth switched off
        assert layered["entries"] >= plain["entries"] and layered["reached"] >= plain["reached"], plan_name
        # Depth only ever adds answers: what summaries answer, progressive answers too.
        assert summaries["which"] <= layered["which"], plan_name


def test_progressive_select_refuses_keywords_select_does_not_document():
    with pytest.raises(TypeError, match="unexpected keyword arguments: _report, scope"):
        progressive_select(EXAMPLES, [Pool("p", 99, 9)], scope=None, _report=False)  # type: ignore[call-arg]
