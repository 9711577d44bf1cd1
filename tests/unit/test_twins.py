"""Every fast twin of a core rule gives the rule's answer: one differential
module for all of them.

The core (``poolsplit_adapters.poolsplit``) states each rule once, plainly,
and holds the one fill (``fill_pools``) and its plain list source
(``ListCandidates``, what its ``select`` fills from). ``poolsplit_adapters.fastpath``
and ``poolsplit_adapters.index`` are faster candidate sources for that same
fill: every source gives the list source's selection. Each test below names
the twin and the rule it mirrors, and compares them on generated input; the
straightforward implementation of the spec (``benchmarks/reference.py``) is
the third opinion on every path.
"""

from __future__ import annotations

import collections
import datetime

import pytest
import reference
from conftest import NOW
from hypothesis import given
from hypothesis import strategies as st
from strategies import WORDS, contexts, disjoint_pools, nows, pools, scopes, stores

from poolsplit_adapters import fastpath
from poolsplit_adapters.fastpath import BestFirstCandidates, plain_entry_ok, word_runs
from poolsplit_adapters.index import MIN_WORD_LENGTH, WORD_CHARACTERS, MemoryIndex
from poolsplit_adapters.poolsplit import (
    STOPWORDS,
    EntryError,
    ListCandidates,
    Pool,
    Reason,
    Visibility,
    as_utc,
    check_entry,
    default_scorer,
    entry_time,
    fill_pools,
    prepare_scorer,
    select,
    significant_words,
)
from poolsplit_adapters.relevance import Analyzer, RelevanceScorer
from poolsplit_adapters.relevance.batch import Codes, TermCoder
from poolsplit_adapters.relevance.bm25 import WordIndex
from poolsplit_adapters.relevance.columns import TermPostings
from poolsplit_adapters.relevance.feedback import Feedback
from poolsplit_adapters.relevance.words import cache_key

# Random plans may leave a correction's type unadmitted: the warning is
# expected there (its own tests pin it in test_core_errors).
RANDOM_PLANS = pytest.mark.filterwarnings("ignore::poolsplit_adapters.UnadmittedCorrectionWarning")

_KEYS = ["content", "type", "id", "scope", "project", "created", "namespace", "source", "summary", "tags"]
_KEYS += ["base_priority", "token_count", "status"]
# Built-in values of every kind the checks tell apart, boundaries included.
_VALUES = st.one_of(
    st.none(),
    st.text(max_size=3),
    st.binary(max_size=2),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([10**400, -(10**400), 2**1023, 2**53 - 1, 2**53, 10**300, 10**300 + 1, 1e300, -1e300, 1.7e308]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.one_of(st.text(max_size=2), st.integers(0, 1), st.none()), max_size=3),
    st.lists(st.text(max_size=2), max_size=3).map(tuple),
    st.sets(st.text(max_size=2), max_size=2),
)


def _passes_check_entry(entry):
    try:
        check_entry(entry)
    except EntryError:
        return False
    return True


@given(st.dictionaries(st.sampled_from(_KEYS), _VALUES))
def test_plain_entry_ok_passes_exactly_what_check_entry_passes(entry):
    """fastpath.plain_entry_ok mirrors check_entry for a plain dict of built-in values."""
    assert plain_entry_ok(entry) == _passes_check_entry(entry)


@given(st.text())
def test_word_runs_yield_the_significant_words_of_any_text(text):
    """fastpath.word_runs mirrors significant_words' tokenizer."""
    runs = {run.decode() for run in word_runs(text)}
    assert frozenset(w for w in runs if len(w) > 2) - STOPWORDS == significant_words(text)


def test_the_index_word_reader_states_the_core_word_rule():
    """index.WORD_CHARACTERS / MIN_WORD_LENGTH mirror significant_words: a
    word is a run of characters that lower-case to one of them."""
    sample = [chr(c) for c in range(32, 0x2200)]
    found = {c for c in sample if significant_words(c * MIN_WORD_LENGTH)}
    assert found == {c for c in sample if c.lower() in set(WORD_CHARACTERS)}
    assert not significant_words("a" * (MIN_WORD_LENGTH - 1))


# Text that stresses the word readers: case, digits, punctuation, non-ASCII
# letters (some lower-case to ASCII: KELVIN SIGN, capital I with dot), the
# index's own separator, stopwords, short runs.
_TEXT = st.lists(
    st.sampled_from([*"abcXYZ019 .,-_\n\t\x01\x00", "\u212a", "\u0130", "\u00e9", "\u03a3", "the", "for", *WORDS]),
    max_size=40,
).map("".join)


def _report(selection):
    chosen = [(id(c.entry), c.index, c.pool, c.always, c.score, c.cost, c.layer) for c in selection.chosen]
    dropped = [(id(d.entry), d.index, d.reason, d.pool, d.score, d.cost) for d in selection.dropped]
    pools = {name: [id(e) for e in got] for name, got in selection.pools.items()}
    return pools, chosen, dropped, selection.stats


def _unique(store):
    # The index holds each dict once; the list paths allow repeats.
    return list({id(entry): entry for entry in store}.values())


def _reference(store, plan, context, now, **options):
    return {k: [id(e) for e in v] for k, v in reference.fill_pools(store, plan, context, now, **options).items()}


@RANDOM_PLANS
@given(store=stores(), plan=pools(), context=contexts, now=nows, view=scopes)
def test_every_path_selects_what_the_core_selects(store, plan, context, now, view):
    """The faster sources of the one fill, fastpath.select (BestFirstCandidates)
    and MemoryIndex's columns, with numpy and without, give the list source's
    selection (the core's select): the same report, to the score; without a
    visibility filter, the reference agrees too."""
    expected = _report(select(store, plan, context, now=now, visibility=view))
    assert _report(fastpath.select(store, plan, context, now=now, visibility=view)) == expected
    if view is None:
        assert expected[0] == _reference(store, plan, context, now)
    unique = _unique(store)
    core = _report(select(unique, plan, context, now=now, visibility=view))
    for use_numpy in (True, False):
        index = MemoryIndex(unique, use_numpy=use_numpy)
        assert _report(index.select(plan, context, now=now, visibility=view)) == core


@RANDOM_PLANS
@given(store=stores(), plan=pools(), context=contexts, now=nows)
def test_best_first_candidates_equal_list_candidates_with_any_scorer_and_known_costs(store, plan, context, now):
    """BestFirstCandidates mirrors ListCandidates: with a spec-form scorer
    (no best-first bound), and with costs given (as MemoryIndex gives them)."""

    def scorer(entry, ctx, *, now=None):
        return default_scorer(entry, ctx, now=now) + len(entry["content"]) % 3

    costs = [1 + len(entry["content"]) % 4 for entry in store]
    for chosen_scorer in (default_scorer, scorer):
        for known in (None, costs):
            plain = ListCandidates(store, prepare_scorer(chosen_scorer, context, now), costs=known)
            fast = BestFirstCandidates(store, prepare_scorer(chosen_scorer, context, now), costs=known)
            assert _report(fill_pools(plan, fast)) == _report(fill_pools(plan, plain))
    expected = _reference(store, plan, context, now, scorer=scorer)
    assert _report(fastpath.select(store, plan, context, now=now, scorer=scorer))[0] == expected


@given(texts=st.lists(_TEXT, min_size=1, max_size=12), message=_TEXT, data=st.data())
def test_every_path_reads_the_message_overlap_the_core_reads(texts, message, data):
    """The index's word postings and fastpath's byte runs mirror
    ScoringContext.relevance: every entry's score is the core's, for any text."""
    words = sorted({w for text in texts for w in significant_words(text)})
    if words:
        message += " " + " ".join(data.draw(st.lists(st.sampled_from(words), max_size=6)))
    store = [{"id": "e%d" % n, "type": "note", "content": text, "token_count": 1} for n, text in enumerate(texts)]
    plan, context, now = [Pool("all", 10_000, 100)], {"message": message}, NOW
    expected = [(c.entry["id"], c.score) for c in select(store, plan, context, now=now).chosen]
    assert len(expected) == len(texts)
    assert [(c.entry["id"], c.score) for c in fastpath.select(store, plan, context, now=now).chosen] == expected
    assert [(c.entry["id"], c.score) for c in MemoryIndex(store).select(plan, context, now=now).chosen] == expected


def test_a_larger_store_engages_pruning_and_top_slices_and_still_agrees():
    """At a few thousand entries the best-first pruning (fastpath) and the
    index's top-slice partition engage; both still give the core's answer."""
    import synth

    store = synth.make_store(3000, seed=5)
    index = MemoryIndex(store)
    for context in synth.make_queries(4, seed=9):
        expected = _report(select(store, synth.POOLS, context, now=synth.NOW))
        assert _report(fastpath.select(store, synth.POOLS, context, now=synth.NOW)) == expected
        assert _report(index.select(synth.POOLS, context, now=synth.NOW)) == expected
        assert expected[0] == _reference(store, synth.POOLS, context, synth.NOW)


def _counted_from_rows(selection):
    counted = {}
    for d in selection.dropped:
        count, tokens = counted.get((d.pool, d.reason), (0, 0))
        counted[(d.pool, d.reason)] = (count + 1, tokens + (d.cost or 0))
    return counted


def _every_path(store, plan, context, now, view):
    """A fresh selection from each source of the one fill (the list source,
    fastpath's, the index with and without numpy), made on demand: a report
    read once is built once."""
    unique = _unique(store)
    return [
        lambda: select(store, plan, context, now=now, visibility=view),
        lambda: fastpath.select(store, plan, context, now=now, visibility=view),
        lambda: MemoryIndex(unique).select(plan, context, now=now, visibility=view),
        lambda: MemoryIndex(unique, use_numpy=False).select(plan, context, now=now, visibility=view),
    ]


@RANDOM_PLANS
@given(store=stores(), plan=pools(), context=contexts, now=nows, view=scopes)
def test_counts_without_rows_are_the_counts_of_the_rows(store, plan, context, now, view):
    """Selection.counts, from the core's rule (list paths) or MemoryIndex's
    vectorised tally (its twin), equal what the rows of .dropped count."""
    for make in _every_path(store, plan, context, now, view):
        counted = make().counts  # counted before any row exists
        assert counted == _counted_from_rows(make())


@RANDOM_PLANS
@given(
    store=stores(),
    plan=disjoint_pools(),
    context=contexts,
    now=nows,
    view=scopes,
    per_key=st.integers(0, 3),
    scorer=st.sampled_from([None, RelevanceScorer()]),
)
def test_pools_of_disjoint_types_count_and_sample_each_group_as_the_rows_do(
    store, plan, context, now, view, per_key, scorer
):
    """When no two pools share a type, MemoryIndex counts and samples each
    pool's group by cost and a mask per key, with no key per position: the
    counts and the sample of the rows all the same (the core's rule)."""
    options = {"now": now, "visibility": view, **({"scorer": scorer} if scorer else {})}
    index = MemoryIndex(_unique(store))
    rows = index.select(plan, context, **options).dropped  # the general rule's rows, one per entry left out
    assert index.select(plan, context, **options).counts == _counted_from_rows(index.select(plan, context, **options))
    if scorer is None:  # (a RelevanceScorer's corpus is the index's store, the core's the call's entries)
        assert _rows(rows) == _rows(select(_unique(store), plan, context, **options).dropped)
    seen: dict = {}
    expected = []
    for d in rows:
        seen[(d.pool, d.reason)] = seen.get((d.pool, d.reason), 0) + 1
        if seen[(d.pool, d.reason)] <= per_key:
            expected.append(d)
    assert _rows(index.select(plan, context, **options).dropped_sample(per_key)) == _rows(expected)


def test_pools_of_disjoint_types_count_each_reason_exactly():
    # One pick of cost 5 leaves a room of 5: an entry of cost 5 was cut by
    # the entry cap, one of 7 by the budget, and the pick (5, the final room)
    # counts in neither; a skill no pool admits, a correction no pool
    # admits, an archived note, a note outside the namespace.
    def note(n, cost, **more):
        return {
            "id": "n%d" % n,
            "type": "note",
            "content": "deploy %d" % n,
            "token_count": cost,
            "namespace": "team",
            **more,
        }

    store = [
        note(1, 5, base_priority=9),
        note(2, 5),
        note(3, 7),
        note(4, 3, status="archived"),
        note(5, 2, namespace="other"),
        {"id": "s1", "type": "skill", "content": "bisect", "token_count": 4, "namespace": "team"},
        {"id": "c1", "type": "correction", "scope": "always", "content": "no force-push", "namespace": "team"},
    ]
    plan = [Pool("notes", 10, 1, ("note",)), Pool("episodes", 10, 1, ("episode",))]
    with pytest.warns(UserWarning, match="no pool admits"):
        picked = MemoryIndex(store).select(
            plan, {"message": "deploy"}, now=NOW, visibility=Visibility(namespace="team")
        )
    assert [e["id"] for e in picked.entries()] == ["n1"]
    assert picked.counts == {
        (None, Reason.INACTIVE): (1, 0),
        (None, Reason.NAMESPACE): (1, 0),
        ("notes", Reason.TOKEN_BUDGET): (1, 7),
        ("notes", Reason.ENTRY_CAP): (1, 5),
        (None, Reason.ALWAYS_NO_POOL): (1, 0),
        (None, Reason.NO_POOL): (1, 0),
    }
    # Plain ints, as every row's: events and checkpoints serialise them.
    assert {type(d.index) for d in picked.dropped_sample(2)} == {int}
    assert [(d.entry["id"], d.reason, d.pool) for d in picked.dropped_sample(1)] == [
        ("n2", Reason.ENTRY_CAP, "notes"),
        ("n3", Reason.TOKEN_BUDGET, "notes"),
        ("n4", Reason.INACTIVE, None),
        ("n5", Reason.NAMESPACE, None),
        ("s1", Reason.NO_POOL, None),
        ("c1", Reason.ALWAYS_NO_POOL, None),
    ]


# Words of several scripts and their inflections: stems, CJK bigrams, marks.
_RELEVANCE_WORDS = ["refund", "refunds", "Refunded", "rounding", "staging", "deploy", "the", "退款被四舍五入", "退款"]
_RELEVANCE_WORDS += ["החזר", "הֶחְזֵר", "Rückerstattung", "reembolso", "x", "42"]
_RELEVANCE_TEXT = st.lists(st.sampled_from(_RELEVANCE_WORDS), max_size=8).map(" ".join)


@given(texts=st.lists(_RELEVANCE_TEXT, max_size=12), message=_RELEVANCE_TEXT, data=st.data())
def test_term_postings_give_the_per_entry_bm25_of_every_text(texts, message, data):
    """relevance.columns.TermPostings.relevance mirrors bm25.Query.relevance:
    the same bits for every position, the texts added in one batch or two
    (the second at positions from the cut), also after texts are re-read in
    place."""
    postings = TermPostings(RelevanceScorer().analyzer)
    cut = data.draw(st.integers(0, len(texts)))
    postings.add(0, texts[:cut])
    postings.add(cut, texts[cut:])
    current = list(texts)
    for position in data.draw(st.lists(st.integers(0, max(len(texts) - 1, 0)), max_size=3)) if texts else []:
        new = data.draw(_RELEVANCE_TEXT)
        postings.replace(position, current[position], new)
        current[position] = new
    query = postings.corpus.query(message)
    per_entry = WordIndex(postings.analyzer)
    per_entry.add_many(current)
    expected = [per_entry.query(message).relevance(text, postings.analyzer) for text in current]
    assert postings.relevance(query, len(current)).tolist() == expected


@given(texts=st.lists(st.one_of(st.none(), _RELEVANCE_TEXT), max_size=12), data=st.data())
def test_the_postings_count_the_statistics_the_per_entry_corpus_counts(texts, data):
    """The document frequencies TermPostings hands its corpus (read from the
    postings' (term, text) keys) are the per-entry WordIndex's (a set per
    text), loaded at once (None: a removed position) or added in two batches."""
    analyzer = RelevanceScorer().analyzer
    alive = [text for text in texts if text is not None]
    per_entry = WordIndex(analyzer)
    per_entry.add_many(alive)
    loaded = TermPostings(analyzer)
    loaded.load(texts)
    added, cut = TermPostings(analyzer), data.draw(st.integers(0, len(alive)))
    added.add(0, alive[:cut])
    added.add(cut, alive[cut:])
    for postings in (loaded, added):
        corpus = postings.corpus
        assert dict(corpus._df) == dict(per_entry._df)
        assert (corpus.documents, corpus.total_length) == (per_entry.documents, per_entry.total_length)


# ASCII words whose language votes differ (stopwords of several languages),
# lone letters, digits, case, punctuation, underscores, the coder's separator.
_CODED_WORDS = ["The", "the", "and", "el", "los", "der", "und", "het", "van", "le", "et", "il", "di", "de", "en"]
_CODED_WORDS += ["refund", "Refunds", "rounding", "a", "I", "x", "7", "42", "a5", "don't", "e-mail", "snake_case"]
_CODED_WORDS += [
    "\x00",
    "\x01",
    "\x01\x01",
    "a\x01b",
    "...",
    "",
    "Ünïcode",
    "退款",
    "ιζε",
    "Straße",
    "ｒｅｆｕｎｄ",
    "\t\n",
]
_CODED_TEXT = st.one_of(
    st.lists(st.sampled_from(_CODED_WORDS), max_size=10).map(" ".join),
    st.lists(st.sampled_from(_CODED_WORDS), max_size=6).map("".join),
    st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=30),
    st.text(max_size=12),
)
_CODED_ANALYZERS = [
    RelevanceScorer().analyzer,
    Analyzer(languages=("german", "english", "spanish"), default_language="spanish"),
    Analyzer(languages=("english", "english", "dutch"), default_language="dutch"),
    Analyzer(languages=("russian", "french"), default_language="russian"),
    Analyzer(languages=("finnish",), default_language="finnish"),
]


@given(
    batches=st.lists(st.lists(st.one_of(st.none(), _CODED_TEXT), max_size=12), min_size=1, max_size=3),
    analyzer=st.sampled_from(_CODED_ANALYZERS),
)
def test_the_batch_coder_gives_each_text_its_per_text_terms(batches, analyzer):
    """relevance.batch.TermCoder (split, vote and stem per distinct word)
    mirrors Analyzer.terms text by text: each text holds exactly its terms
    (as a multiset, coded by the caller's codes) and its length, whatever
    mix of ASCII, Unicode, separator-holding and None texts a batch holds,
    batch after batch on one coder (its word tables grown, not rebuilt)."""
    codes = Codes()
    coder = TermCoder(analyzer, codes)
    for texts in batches:
        terms, holders, lengths = coder.code(texts)
        named = list(codes)
        got = [collections.Counter() for _ in texts]
        for term, holder in zip(terms.tolist(), holders.tolist()):
            got[holder][named[term]] += 1
        expected = [collections.Counter(analyzer.terms(text) if text is not None else ()) for text in texts]
        assert got == expected
        assert lengths.tolist() == [sum(counted.values()) for counted in expected]


@given(
    first=st.lists(_CODED_TEXT, max_size=10),
    later=st.lists(_CODED_TEXT, max_size=6),
    message=_CODED_TEXT,
    analyzer=st.sampled_from(_CODED_ANALYZERS),
)
def test_the_index_and_its_bm25_postings_split_a_batch_once_with_the_per_text_result(first, later, message, analyzer):
    """MemoryIndex(prepare_for=[scorer]) hands the token ids its word reader
    split (an ASCII batch) to the BM25 postings, which code them with the
    index's shared vocabulary; prepare_for after construction codes the
    stored texts itself. Both give every position the per-entry BM25 bits
    (bm25.Query.relevance over Analyzer.terms), at construction and after
    a later batch."""
    scorer = RelevanceScorer(analyzer=analyzer)
    entries = [{"id": "e%d" % n, "content": text} for n, text in enumerate(first + later)]
    built = MemoryIndex(entries[: len(first)], prepare_for=[scorer])
    afterwards = MemoryIndex(entries[: len(first)]).prepare_for(scorer)
    per_entry = WordIndex(analyzer)
    per_entry.add_many(first + later)
    for index in (built, afterwards):
        index.extend(entries[len(first) :])
        postings = index._scoring.terms[cache_key(analyzer)]
        expected = [per_entry.query(message).relevance(text, analyzer) for text in first + later]
        assert postings.relevance(postings.corpus.query(message), len(entries)).tolist() == expected
        assert dict(postings.corpus._df) == dict(per_entry._df)


_RELEVANCE_STORE = st.lists(
    st.fixed_dictionaries(
        {"content": _RELEVANCE_TEXT},
        optional={
            "type": st.sampled_from(["note", "fact", "correction"]),
            "scope": st.just("always"),
            "base_priority": st.sampled_from([0, 1, 5, 9, 12]),
            "created": st.sampled_from(["2025-01-01T00:00:00Z", "2026-06-20T00:00:00Z", "not a date"]),
            "tags": st.lists(st.sampled_from(["ops", "billing"]), max_size=2),
            "project": st.sampled_from(["checkout", "search"]),
            "status": st.sampled_from(["active", "archived"]),
            "namespace": st.sampled_from(["A", "B", "global"]),
            "source": st.just("chat"),
        },
    ),
    max_size=20,
).map(lambda store: [dict(entry, id="e%d" % (n % 7)) for n, entry in enumerate(store)])


@RANDOM_PLANS
@given(store=_RELEVANCE_STORE, plan=pools(), message=_RELEVANCE_TEXT, now=nows, view=scopes, data=st.data())
def test_memory_index_ranks_with_the_relevance_scorer_as_the_per_entry_path_does(store, plan, message, now, view, data):
    """MemoryIndex's vectorised BM25 (TermPostings + Modifiers.boost_columns +
    combine_columns) mirrors RelevanceScorer's per-entry score over a corpus
    of the index's entries: with numpy and without, after additions,
    removals (and the compaction they trigger) and in-place re-reads; with
    pseudo-relevance feedback too (its sources, the admitted contextual
    candidates, read from the columns there)."""
    context = {"message": message, "tags": data.draw(st.sampled_from([[], ["ops"]])), "project": "checkout"}
    feedback = data.draw(
        st.sampled_from(
            [None, Feedback(top=1, weight=0.3), Feedback(top=2, weight=0.1), Feedback(top=2, weight=0.3, terms=2)]
        )
    )
    indexes = [MemoryIndex(store, scorer=RelevanceScorer(feedback=feedback)), MemoryIndex(store, use_numpy=False)]
    later = data.draw(_RELEVANCE_STORE)
    gone = data.draw(st.lists(st.sampled_from(store), max_size=len(store), unique_by=id)) if store else []
    changed = [entry for entry in store if entry not in gone][:2]
    for index in indexes:
        index.extend(later)
        for entry in gone:
            index.remove(entry)
    for entry in changed:
        entry["content"] += " refunds"
    for index in indexes:
        index.refresh_all(changed)
    kept = RelevanceScorer(feedback=feedback)
    kept.index_entries(indexes[0].entries)
    expected = _report(select(indexes[0].entries, plan, context, now=now, scorer=kept, visibility=view))
    for index in indexes:
        got = index.select(plan, context, now=now, scorer=RelevanceScorer(feedback=feedback), visibility=view)
        assert _report(got) == expected


def test_memory_index_bm25_survives_a_compaction():
    """After removals compact the index (positions renumbered, postings
    rebuilt), the vectorised BM25 still gives the per-entry scores."""
    store = [
        {"id": "e%d" % n, "content": _RELEVANCE_WORDS[n % len(_RELEVANCE_WORDS)] + " refunds" * (n % 3)}
        for n in range(100)
    ]
    index = MemoryIndex(store, scorer=RelevanceScorer())
    for entry in store[::3] + store[1::3]:
        index.remove(entry)
    assert len(index._slots) < 100  # compacted
    plan, context = [Pool("all", 10_000, 100)], {"message": "refund 退款"}
    kept = RelevanceScorer()
    kept.index_entries(index.entries)
    expected = _report(select(index.entries, plan, context, now=NOW, scorer=kept))
    assert _report(index.select(plan, context, now=NOW)) == expected


def _rows(rows):
    return [(id(d.entry), d.index, d.reason, d.pool, d.score, d.cost) for d in rows]


@RANDOM_PLANS
@given(store=stores(), plan=pools(), context=contexts, now=nows, view=scopes, per_key=st.integers(1, 3))
def test_dropped_sample_is_the_first_rows_of_each_pool_and_reason(store, plan, context, now, view, per_key):
    """Selection.dropped_sample, from the core's rule (list paths) or
    MemoryIndex's vectorised masks (its twin), before any row exists, is
    the first ``per_key`` rows of .dropped per (pool, reason), in input order."""
    for make in _every_path(store, plan, context, now, view):
        sampled = make().dropped_sample(per_key)  # no row built before
        seen: dict = {}
        expected = []
        for d in make().dropped:
            seen[(d.pool, d.reason)] = seen.get((d.pool, d.reason), 0) + 1
            if seen[(d.pool, d.reason)] <= per_key:
                expected.append(d)
        assert _rows(sampled) == _rows(expected)


# Lifecycle times (expires, valid_from, valid_until) in both spellings the
# core reads (Z, an offset, naive, a bare date), around the strategies' nows.
_DAY = datetime.timedelta(days=1)
_LIFE_TIMES = ["2026-01-01T00:00:00Z", "2026-07-07T02:00:00+02:00", "2026-07-07", "2026-07-08T12:00:00", "2027-01-01"]


@st.composite
def _lifecycle_stores(draw):
    renewed = {}
    for entry in draw(stores()):
        if id(entry) not in renewed:
            entry = dict(entry)
            for key in ("expires", "valid_from", "valid_until"):
                if draw(st.integers(0, 2)) == 0:
                    entry[key] = draw(st.sampled_from(_LIFE_TIMES))
            if "valid_until" in entry and draw(st.booleans()):
                entry["superseded_by"] = "newer"
            renewed[id(entry)] = entry
        renewed.setdefault(id(entry), entry)
    return [renewed[k] for k in renewed]


@RANDOM_PLANS
@given(store=_lifecycle_stores(), plan=pools(), context=contexts, now=nows, at=st.sampled_from([None, *_LIFE_TIMES]))
def test_every_path_judges_expiry_and_as_of_as_the_core_does(store, plan, context, now, at):
    """core.lifecycle_reason is the one rule of expiry and time travel: the
    fastpath admission, the index's ``expires`` column (with and without
    numpy) and its as_of route give the core's report, reasons included."""
    view = None if at is None else Visibility(as_of=at)
    expected = _report(select(store, plan, context, now=now, visibility=view))
    for make in _every_path(store, plan, context, now, view)[1:]:
        assert _report(make()) == expected
    # And the rule itself: nothing expired at the reference time loads; what is reported expired is.
    selection = select(store, plan, context, now=now, visibility=view)
    moment = view.at if view is not None else as_utc(now)
    assert all((entry_time(c.entry, "expires") or moment + _DAY) > moment for c in selection.chosen)
    expired = [d.entry for d in selection.dropped if d.reason is Reason.EXPIRED]
    assert all(entry_time(entry, "expires") <= moment for entry in expired)


# Values the batch readers must read as the per-entry ones do: offsets,
# trailing Zs, impossible dates, statuses and counts of every kind.
_BATCH_ENTRY = st.fixed_dictionaries(
    {"content": _TEXT},
    optional={
        "type": st.sampled_from(["note", "fact", "correction"]),
        "scope": st.sampled_from(["always", "session", None]),
        "created": st.sampled_from(
            [None, "", "Z", "2026-06-20T00:00:00Z", "2026-06-20", "2026-06-20T10:00:00+05:00", "2026-02-30", "x"]
            + ["2026-06-20T00:00:00.250ZZ", "0001-01-01T00:00:00", "9999-12-31T23:59:59.999999"]
        ),
        "base_priority": st.sampled_from([0, 1, 5.5, -2, 10**20]),
        "tags": st.lists(st.sampled_from(["ops", "billing", "x"]), max_size=3),
        "project": st.sampled_from(["checkout", None]),
        "namespace": st.sampled_from(["A", None]),
        "source": st.sampled_from(["chat", "", None]),
        "status": st.sampled_from(["active", "archived", None, 3]),
        "superseded_by": st.sampled_from([None, "", "n2", 0, 1]),
        "token_count": st.sampled_from([None, 0, 3, True, -1, 2.0]),
        "expires": st.sampled_from([None, "2026-06-20T00:00:00Z", "2026-06-20T10:00:00+05:00", "2027-01-01"]),
    },
)


@given(store=st.lists(_BATCH_ENTRY, max_size=30))
def test_the_index_reads_a_batch_of_plain_dicts_as_it_reads_each_entry(store):
    """MemoryIndex._plain_columns and its batch twins (parse_created,
    default_is_active, default_token_counter, given_token_count, read key by
    key) give every column, word and tag the per-entry readers give (a
    mapping that is not a dict takes the per-entry path)."""
    import types

    batch = MemoryIndex(store)
    each = MemoryIndex([types.MappingProxyType(entry) for entry in store])
    for name, column in batch._columns.items():
        assert column.tobytes() == each._columns[name].tobytes(), name
    assert [found.tobytes() for found in batch._words.lists] == [found.tobytes() for found in each._words.lists]
    assert [found.tobytes() for found in batch._tags.lists] == [found.tobytes() for found in each._tags.lists]


@pytest.mark.parametrize("per_key", [1, 3, 40, 10**30])
def test_the_index_sample_past_its_first_slices_is_the_first_rows_of_each_key(per_key):
    """A store of thousands (the column sample reads from the front in
    doubling slices, the first of 512): rare keys far back, a key whose
    rows all sit at the end, removals, a catch-all pool; the sample is the
    first rows of .dropped per (pool, reason) on the index as on the core."""
    from poolsplit_adapters.index import MemoryIndex

    store = [{"id": "n%04d" % n, "content": "note %d" % n, "type": "note", "token_count": 3} for n in range(3000)]
    store += [{"id": "x%d" % n, "content": "retired", "status": "archived"} for n in range(2)]
    store += [{"id": "f%04d" % n, "content": "fact %d" % n, "type": "fact", "token_count": 2} for n in range(1500)]
    store += [{"id": "c%d" % n, "content": "fix", "type": "correction", "scope": "always"} for n in range(3)]
    plan = [Pool("notes", 30, 5, ("note",)), Pool("rest", 40, 1000, None)]
    index = MemoryIndex(store)
    index.remove(store[7])
    kept = [e for e in store if e is not store[7]]
    sampled = index.select(plan, now=NOW).dropped_sample(per_key)
    seen: dict = {}
    expected = []
    for d in select(kept, plan, now=NOW).dropped:
        seen[(d.pool, d.reason)] = seen.get((d.pool, d.reason), 0) + 1
        if seen[(d.pool, d.reason)] <= per_key:
            expected.append(d)
    assert [(d.entry["id"], d.reason, d.pool, d.cost) for d in sampled] == [
        (d.entry["id"], d.reason, d.pool, d.cost) for d in expected
    ]
    assert {(d.pool, d.reason) for d in sampled} >= {("rest", Reason.TOKEN_BUDGET), (None, Reason.INACTIVE)}
