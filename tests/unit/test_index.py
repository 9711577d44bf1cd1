"""MemoryIndex returns exactly what the stateless functions return."""

from __future__ import annotations

import datetime
import re
from typing import Any, List

import pytest
import reference
from hypothesis import given
from hypothesis import strategies as st
from strategies import TYPES, contexts, nows, pools, stores

from poolsplit_adapters import EntryError, Pool, UnadmittedCorrectionWarning, select
from poolsplit_adapters.index import MemoryIndex
from poolsplit_adapters.poolsplit import significant_words

NOW = datetime.datetime(2026, 7, 7)

# Random plans may leave a correction's type unadmitted: the warning is
# expected there (its own tests pin it in test_core_errors).
RANDOM_PLANS = pytest.mark.filterwarnings("ignore::poolsplit_adapters.UnadmittedCorrectionWarning")


def _same(a, b):
    return {k: [id(x) for x in v] for k, v in a.items()} == {k: [id(x) for x in v] for k, v in b.items()}


def _unique(store):
    # The index holds each dict once; the stateless path allows repeats.
    seen, out = set(), []
    for entry in store:
        if id(entry) not in seen:
            seen.add(id(entry))
            out.append(entry)
    return out


def _report(sel):
    chosen = [(id(c.entry), c.index, c.pool, c.always, c.score, c.cost) for c in sel.chosen]
    dropped = [(id(d.entry), d.index, d.reason, d.pool, d.cost) for d in sel.dropped]
    return chosen, dropped, sel.stats


@pytest.mark.parametrize("use_numpy", [True, False])
@RANDOM_PLANS
@given(store=stores(), plan=pools(), context=contexts, now=nows)
def test_index_equals_stateless_and_reference(use_numpy, store, plan, context, now):
    store = _unique(store)
    index = MemoryIndex(store, use_numpy=use_numpy)
    expected = reference.fill_pools(store, plan, context, now)
    assert _same(index.retrieve_pools(plan, context, now=now), expected)
    assert _report(index.select(plan, context, now=now)) == _report(select(store, plan, context, now=now))


@RANDOM_PLANS
@given(
    store=stores(),
    extra=stores(),
    plan=pools(),
    context=contexts,
    now=nows,
    ops=st.lists(st.tuples(st.sampled_from(["add", "remove", "replace", "mutate"]), st.integers(0, 50)), max_size=12),
)
def test_index_equals_stateless_after_add_remove_replace_refresh(store, extra, plan, context, now, ops):
    index = MemoryIndex(_unique(store))
    spare = [dict(x) for x in extra]
    for op, n in ops:
        live = index.entries
        if op == "add" and spare:
            index.add(spare.pop())
        elif op == "remove" and live:
            index.remove(live[n % len(live)])
        elif op == "replace" and live and spare:
            index.replace(live[n % len(live)], spare.pop())
        elif op == "mutate" and live:
            victim = live[n % len(live)]
            victim["base_priority"] = n % 9
            victim["content"] = victim["content"] + " deploy staging"
            victim["type"] = TYPES[n % len(TYPES)]  # the kept type masks must follow
            index.refresh(victim)
        # Query between operations too: arrays grow by tails and shrink by
        # tombstones between queries, and must stay exact either way.
        assert _same(
            index.retrieve_pools(plan, context, now=now), reference.fill_pools(index.entries, plan, context, now)
        )
    assert _same(index.retrieve_pools(plan, context, now=now), reference.fill_pools(index.entries, plan, context, now))
    assert _report(index.select(plan, context, now=now)) == _report(select(index.entries, plan, context, now=now))


def test_custom_scorer_uses_the_generic_path_with_cached_costs():
    calls = []

    def counter(text):
        calls.append(text)
        return 1 + len(text) // 3

    entries = [{"id": "e%d" % n, "content": "word " * n, "type": "fact"} for n in range(1, 30)]
    index = MemoryIndex(entries, token_counter=counter)
    assert len(calls) == 29

    def scorer(entry, context, now=None):
        return float(len(entry["content"]) % 5)

    plan = [Pool("facts", 40, 5)]
    got = index.retrieve_pools(plan, {"message": "word"}, now=NOW, scorer=scorer)
    want = select(entries, plan, {"message": "word"}, now=NOW, scorer=scorer, token_counter=counter).pools
    assert _same(got, want)
    calls.clear()
    for _ in range(3):
        index.retrieve_pools(plan, {"message": "word"}, now=NOW, scorer=scorer)
        index.select(plan, {"message": "word deploy"}, now=NOW)
    assert calls == []


def test_repeated_queries_make_no_tokenizer_calls():
    calls = []

    def counter(text):
        calls.append(text)
        return max(1, len(text) // 4)

    entries = [{"id": "n%d" % n, "content": "note number %d about staging" % n} for n in range(200)]
    index = MemoryIndex(entries, token_counter=counter)
    assert len(calls) == 200
    calls.clear()
    plan = [Pool("notes", 50, 5)]
    for message in ["staging", "number about", "nothing"]:
        index.retrieve_pools(plan, {"message": message}, now=NOW)
        index.select(plan, {"message": message}, now=NOW)
    assert calls == []
    index.add({"id": "new", "content": "fresh note"})
    assert calls == ["fresh note"]


def test_index_rejects_bad_entries_and_duplicates():
    with pytest.raises(EntryError, match="'b'.*'tags'"):
        MemoryIndex([{"id": "a", "content": "x"}, {"id": "b", "content": "y", "tags": "ops"}])
    entry = {"id": "a", "content": "x"}
    index = MemoryIndex([entry])
    with pytest.raises(ValueError, match="already in the index"):
        index.add(entry)
    with pytest.raises(KeyError):
        index.remove({"content": "not indexed"})
    assert index.remove_id("a") == [entry] and len(index) == 0
    # A batch smaller than the recent additions looks each key up (a turn's
    # writes against thousands of recent entries): the same answer.
    others = [{"id": "o%d" % n, "content": "x"} for n in range(3)]
    index = MemoryIndex(others)
    with pytest.raises(ValueError, match=re.escape("entry 'o1' (index 3) is already in the index")):
        index.add(others[1])
    index.add({"id": "o3", "content": "x"})
    assert len(index) == 4


def test_mutation_is_invisible_until_refresh():
    low = {"id": "low", "content": "a", "base_priority": 1, "token_count": 1}
    high = {"id": "high", "content": "b", "base_priority": 9, "token_count": 1}
    index = MemoryIndex([low, high])
    plan = [Pool("p", 10, 1)]
    low["base_priority"] = 20
    assert index.retrieve_pools(plan, now=NOW)["p"] == [high]
    index.refresh(low)
    assert index.retrieve_pools(plan, now=NOW)["p"] == [low]


def test_index_warns_for_unadmitted_corrections():
    index = MemoryIndex([{"id": "fix", "content": "never", "type": "correction", "scope": "always"}])
    with pytest.warns(UnadmittedCorrectionWarning, match="'fix'"):
        index.retrieve_pools([Pool("tasks", 10, 1, ("task",))], now=NOW)


def test_larger_store_matches_reference_with_pruning_and_partition():
    # Big enough that the top-slice partition and cost pruning both engage.
    import synth  # benchmarks/synth.py, the benchmarks' store generator

    store = synth.make_store(4000, seed=5)
    index = MemoryIndex(store)
    for context in synth.make_queries(6, seed=9):
        expected = reference.fill_pools(store, synth.POOLS, context, synth.NOW)
        assert _same(index.retrieve_pools(synth.POOLS, context, now=synth.NOW), expected)
        assert _same(select(store, synth.POOLS, context, now=synth.NOW).pools, expected)


def test_concurrent_queries_and_appends_stay_exact():
    from concurrent.futures import ThreadPoolExecutor

    import synth

    store = synth.make_store(3000, seed=12)
    index = MemoryIndex(store[:2000])
    queries = synth.make_queries(8, seed=3)

    def ask(ctx):
        return index.retrieve_pools(synth.POOLS, ctx, now=synth.NOW)

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(ask, ctx) for ctx in queries * 3]
        for entry in store[2000:]:
            index.add(entry)
        [f.result() for f in futures]
    for ctx in queries:
        assert _same(ask(ctx), reference.fill_pools(store, synth.POOLS, ctx, synth.NOW))


# Text that stresses the index's chunked word reader: case, digits,
# punctuation, non-ASCII letters (some lower-case to ASCII: KELVIN SIGN,
# capital I with dot), the reader's own separator, stopwords, short runs.
_TEXT = st.lists(
    st.sampled_from([*"abcXYZ019 .,-_\n\t\x01\x00", "\u212a", "\u0130", "\u00e9", "\u03a3", "the", "for"]),
    max_size=40,
).map("".join)


@given(texts=st.lists(_TEXT, min_size=1, max_size=12), message=_TEXT, data=st.data())
def test_index_reads_exactly_the_words_significant_words_finds(texts, message, data):
    """Every entry's message overlap (hence score) is the stateless one: the
    index's words are the core's words for any text."""
    words = sorted({w for text in texts for w in significant_words(text)})
    if words:
        message += " " + " ".join(data.draw(st.lists(st.sampled_from(words), max_size=6)))
    store = [{"id": "e%d" % n, "type": "note", "content": text, "token_count": 1} for n, text in enumerate(texts)]
    plan = [Pool("all", 10_000, 100)]
    context = {"message": message}
    expected = [(c.entry["id"], c.score) for c in select(store, plan, context, now=NOW).chosen]
    assert [(c.entry["id"], c.score) for c in MemoryIndex(store).select(plan, context, now=NOW).chosen] == expected
    assert len(expected) == len(texts)


def test_index_checks_the_visibility_filter_as_the_core_does():
    index = MemoryIndex([{"id": "a", "content": "deploy"}])
    for ask in (
        lambda **kw: select(index.entries, [Pool("p", 9, 1)], **kw),
        lambda **kw: index.select([Pool("p", 9, 1)], **kw),
    ):
        with pytest.raises(TypeError, match="visibility must be a Visibility, got str 'A'"):
            ask(visibility="A")


@pytest.mark.parametrize("use_numpy", [True, False])
def test_the_same_dict_twice_is_refused_wherever_the_first_copy_is(use_numpy):
    """Identity is checked against the sorted base (a big batch goes there
    directly), the recent additions and the batch itself; the error names the
    first offending entry (of a repeat, its second copy) and the index is left
    unchanged."""
    many = [{"id": "e%d" % i, "content": "x"} for i in range(70000)]  # over the fold size: straight into the base
    index = MemoryIndex(many, use_numpy=use_numpy)
    fresh = {"id": "fresh", "content": "y"}
    index.add(fresh)  # a small batch: into the recent part
    for batch, named in (
        ([{"id": "ok", "content": "z"}, many[123]], "'e123' (index 70002)"),
        ([{"id": "ok", "content": "z"}, fresh], "'fresh' (index 70002)"),
        ([fresh, many[5]], "'fresh' (index 70001)"),
    ):
        with pytest.raises(ValueError, match=re.escape("entry %s is already in the index" % named)):
            index.extend(batch)
    twice = {"id": "twice", "content": "w"}
    with pytest.raises(ValueError, match=re.escape("entry 'twice' (index 70003) is already in the index")):
        index.extend([{"id": "ok", "content": "z"}, twice, twice])
    assert len(index) == 70001 and index.version == 2
    index.remove(many[7])
    index.add(many[7])  # removed from the base, so it may come back
    assert len(index) == 70001 and index.entries[-1] is many[7]


@pytest.mark.parametrize("answer", [0, -3, 2.7, True, "4"])
def test_a_counter_answer_the_core_refuses_names_its_entry_and_changes_nothing(answer):
    """The index asks the core's entry_cost about every answer it did not
    accept on sight: the same EntryError as select, naming the entry."""
    entries = [
        {"id": "given", "content": "has its own count", "token_count": 7},
        {"id": "bad", "content": "the counter fails on this one"},
    ]
    index = MemoryIndex(
        [{"id": "first", "content": "before"}], token_counter=lambda text: answer if "fails" in text else 3
    )
    with pytest.raises(EntryError, match=re.escape("entry 'bad' (index 2): field 'token_count'")) as info:
        index.extend(entries)
    with pytest.raises(EntryError) as core:
        select(entries, [Pool("all", 100, 5)], token_counter=lambda text: answer if "fails" in text else 3)
    assert info.value.problem == core.value.problem and info.value.entry_id == "bad"
    assert [e["id"] for e in index.entries] == ["first"] and index.version == 1


def test_a_subclass_of_dict_or_a_mapping_gets_the_core_check():
    """The fast check answers only for plain dicts; anything else is checked
    by the core, with its message."""

    class Entry(dict):  # type: ignore[type-arg]
        pass

    with pytest.raises(EntryError, match=re.escape("entry 'sub' (index 0): field 'tags' must be a list or tuple")):
        MemoryIndex([Entry(id="sub", content="x", tags="ops")])
    index = MemoryIndex([Entry(id="ok", content="x", tags=["ops"])])
    assert [e["id"] for e in index.entries] == ["ok"]


def test_a_selection_reports_the_index_as_it_was_whatever_changes_after():
    """A selection's lazy report (rows and counts of what did not load)
    describes the index at query time, also after removals (the index
    shares its entries list with the selection and copies it before its
    next in-place change), additions and a compaction."""
    entries = [
        {"id": "n%03d" % n, "type": "note", "content": "staging note %d" % n, "token_count": 5} for n in range(100)
    ]
    index = MemoryIndex(entries)
    plan, context = [Pool("notes", 20, 4)], {"message": "staging"}
    selection = index.select(plan, context, now=NOW)
    expected = select(entries, plan, context, now=NOW)
    for entry in entries[:60]:  # past half of the slots: the index compacts
        index.remove(entry)
    index.add({"id": "late", "content": "staging late", "token_count": 1})
    assert [(d.entry["id"], d.index, d.reason) for d in selection.dropped] == [
        (d.entry["id"], d.index, d.reason) for d in expected.dropped
    ]
    assert len(selection.dropped) == 96
    assert selection.counts == expected.counts
    assert [c.entry["id"] for c in index.select(plan, context, now=NOW).chosen] == ["late", "n060", "n061", "n062"]


def test_a_counter_is_asked_once_per_distinct_text():
    """The build counts each distinct text once (a store repeats texts), and
    every entry still gets its cost."""
    calls = []

    def counter(text):
        calls.append(text)
        return len(text)

    entries = [{"id": "e%d" % n, "content": ("same text" if n % 2 else "other")} for n in range(6)]
    index = MemoryIndex(entries, token_counter=counter)
    assert calls == ["other", "same text"]
    assert [c.cost for c in index.select([Pool("all", 100, 10)], {}, now=NOW).chosen] == [5, 9, 5, 9, 5, 9]


def test_the_kept_priority_term_follows_a_refreshed_priority_with_the_adapters_scorer():
    """The boost's priority term is kept between selections (no query
    changes it): a priority changed in place and refreshed must reach the
    next selection, as the core's per-entry boost reads it."""
    from poolsplit_adapters.defaults import default_adapter_scorer

    entries = [
        {"id": "e%d" % n, "content": "deploy the staging service %d" % n, "base_priority": n % 5 + 1, "token_count": 3}
        for n in range(12)
    ]
    index = MemoryIndex(entries)
    plan = [Pool("p", 9, 3)]
    context = {"message": "deploy staging"}

    def ranked(selection: Any) -> List[Any]:
        return [(c.entry["id"], c.score) for c in selection.chosen]

    first = ranked(index.select(plan, context, now=NOW, scorer=default_adapter_scorer()))
    assert first == ranked(select(entries, plan, context, now=NOW, scorer=default_adapter_scorer()))
    entries[0]["base_priority"] = 10
    index.refresh(entries[0])
    after = ranked(index.select(plan, context, now=NOW, scorer=default_adapter_scorer()))
    assert after == ranked(select(entries, plan, context, now=NOW, scorer=default_adapter_scorer()))
    assert after[0][0] == "e0" and after != first
