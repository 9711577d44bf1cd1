"""Pseudo-relevance feedback (relevance.feedback): exact semantics, where
its words may come from, and the same answer on every path."""

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_adapters import MemoryIndex, Pool, select
from poolsplit_adapters.poolsplit import Visibility
from poolsplit_adapters.relevance import RelevanceScorer
from poolsplit_adapters.relevance.feedback import Feedback, best_sources, settled

NOW = datetime.datetime(2026, 7, 1)
PLAN = [Pool("all", 1000, 10)]
ASK = {"message": "Which city does Maya's brother live in now?"}


def memories(*extra):
    return [
        {"id": "hop1", "content": "Maya's brother is called Tom.", "created": "2025-01-01T00:00:00Z"},
        {"id": "hop2", "content": "Tom moved to Sydney in August.", "created": "2025-02-01T00:00:00Z"},
        {"id": "chat", "content": "Lunch menu for Friday.", "created": "2026-06-30T00:00:00Z", "base_priority": 9},
        *extra,
    ]


def order(selection):
    return [c.entry["id"] for c in selection.chosen]


def both(store, feedback, view=None):
    """The per-entry path (select over a scorer with the store's corpus)
    and the index's columns: their reports must agree exactly."""
    kept = RelevanceScorer(feedback=feedback)
    kept.index_entries(store)
    per_entry = select(store, PLAN, ASK, now=NOW, scorer=kept, visibility=view)
    index = MemoryIndex(store, scorer=RelevanceScorer(feedback=feedback))
    columns = index.select(PLAN, ASK, now=NOW, visibility=view)
    assert [(c.entry["id"], c.score) for c in columns.chosen] == [(c.entry["id"], c.score) for c in per_entry.chosen]
    return per_entry


def test_the_first_hop_s_words_lift_the_second_hop_above_unrelated_chatter():
    assert order(both(memories(), None)) == ["hop1", "chat", "hop2"]  # no shared word: recency wins
    assert order(both(memories(), Feedback(top=1, weight=0.3))) == ["hop1", "hop2", "chat"]


def test_the_relevance_is_the_weighted_sum_of_both_queries():
    store = memories()
    kept = RelevanceScorer(feedback=Feedback(top=1, weight=0.3))
    kept.index_entries(store)
    prepared = kept.prepare(ASK, NOW)
    prepared.admitted(store)
    first = prepared.first_relevance(store[1])
    second = kept.corpus.query(store[0]["content"]).relevance(store[1]["content"], kept.analyzer)
    assert first == 0.0 and second > 0.0
    assert prepared.relevance(store[1]) == 0.7 * first + 0.3 * settled(second)  # settled: ties by the core rule


def test_another_namespace_s_words_never_expand_the_query():
    # Only "hop1b" in namespace B links Maya to Tom: seen from A, hop2 stays unlifted.
    b = {"id": "hop1b", "content": "Maya's brother is called Tom.", "namespace": "B", "created": "2025-01-01T00:00:00Z"}
    store = memories(b)[1:]
    assert order(both(store, Feedback(top=1, weight=0.3), Visibility(namespace="B")))[:1] == ["hop1b"]
    seen_from_a = both(store, Feedback(top=1, weight=0.3), Visibility(namespace=("A", None)))
    assert order(seen_from_a) == ["chat", "hop2"]
    assert order(both(store, None, Visibility(namespace=("A", None)))) == ["chat", "hop2"]


def test_inactive_and_always_scope_entries_are_not_sources():
    for source in ({"status": "archived"}, {"scope": "always"}):
        hop1 = dict(memories()[0], **source)
        store = [hop1, *memories()[1:]]
        with_feedback = both(store, Feedback(top=1, weight=0.3))
        without = both(store, None)
        assert [(c.entry["id"], c.score) for c in with_feedback.chosen] == [
            (c.entry["id"], c.score) for c in without.chosen
        ]


def test_sources_are_the_best_above_zero_ties_by_created_id_then_position():
    def ids(found, relevance, top):
        return [e["id"] for e in best_sources(found, lambda e: relevance[e["id"]], top)]

    entries = [{"id": "b"}, {"id": "a"}, {"id": "c"}]
    assert ids(entries, {"a": 0.3, "b": 0.3, "c": 0.0}, 3) == ["a", "b"]
    assert ids(entries, {"a": 0.1, "b": 0.3, "c": 0.3}, 2) == ["b", "c"]
    dated = [{"id": "a", "created": "2026-02-01"}, {"id": "b", "created": "2026-01-01"}]
    assert ids(dated, {"a": 0.3, "b": 0.3}, 1) == ["b"]
    twins = [{"id": "x", "content": "one"}, {"id": "x", "content": "two"}]
    assert [e["content"] for e in best_sources(twins, lambda e: 0.5, 1)] == ["one"]


def test_the_sources_do_not_depend_on_the_input_order():
    store = memories({"id": "hop1c", "content": "Maya's brother is called Tom.", "created": "2025-01-01T00:00:00Z"})
    scorer = RelevanceScorer(feedback=Feedback(top=1, weight=0.3))
    scorer.index_entries(store)
    forward = select(store, PLAN, ASK, now=NOW, scorer=scorer)
    backward = select(store[::-1], PLAN, ASK, now=NOW, scorer=scorer)
    assert [(c.entry["id"], c.score) for c in forward.chosen] == [(c.entry["id"], c.score) for c in backward.chosen]


def test_a_scorer_asked_about_one_entry_has_no_sources():
    store = memories()
    plain, expanded = RelevanceScorer(), RelevanceScorer(feedback=Feedback(top=1, weight=0.3))
    assert expanded(store[1], ASK, now=NOW) == plain(store[1], ASK, now=NOW)


@pytest.mark.parametrize("top, weight", [(0, 0.1), (True, 0.1), (2, 0.0), (2, 1.0), (2, "0.1")])
def test_bad_settings_are_refused(top, weight):
    with pytest.raises(ValueError, match="Feedback"):
        Feedback(top=top, weight=weight)
    with pytest.raises(TypeError, match="feedback"):
        RelevanceScorer(feedback=(2, 0.1))  # type: ignore[arg-type]


WORDS = "maya brother tom sydney moved lunch menu refund 退款 cent".split()
STORE = st.lists(
    st.builds(
        lambda n, words, prio, age, status: {
            "id": "e%d" % n,
            "content": " ".join(words),
            "base_priority": prio,
            "created": (NOW - datetime.timedelta(days=age)).isoformat() + "Z",
            "status": status,
        },
        st.integers(0, 10_000),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=5),
        st.sampled_from([0, 1, 5, 9, 12]),
        st.integers(0, 700),
        st.sampled_from(["active", "active", "archived"]),
    ),
    max_size=15,
    unique_by=lambda e: e["id"],
)


@given(STORE, st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join), st.integers(1, 3))
def test_the_relevance_first_bound_holds_for_the_expanded_relevance(store, message, top):
    """Relevance is the expanded query's: a lead of δ in it is never undone
    by priority or age, with feedback on."""
    scorer = RelevanceScorer(feedback=Feedback(top=top, weight=0.3))
    scorer.index_entries(store)
    context = {"message": message}
    chosen = select(store, [Pool("all", 10_000, 100)], context, scorer=scorer, now=NOW).chosen
    prepared = scorer.prepare(context, NOW)
    prepared.admitted([e for e in store if e["status"] == "active"])
    ranked = [prepared.relevance(c.entry) for c in chosen]
    for n, earlier in enumerate(ranked):
        assert all(later < earlier + scorer.delta for later in ranked[n + 1 :])


def test_the_fused_columns_expand_as_the_per_entry_path_does():
    """With an embedder the index fuses over its columns, then expands:
    the same scores as select over a scorer with the same corpus."""
    from poolsplit_adapters.memory import HashEmbedder

    store = memories({"id": "hop1b", "content": "Maya's brother is called Tom.", "namespace": "B"})
    for view in (None, Visibility(namespace=("A", None))):
        kept = RelevanceScorer(HashEmbedder(), feedback=Feedback(top=2, weight=0.3))
        kept.index_entries(store)
        per_entry = select(store, PLAN, ASK, now=NOW, scorer=kept, visibility=view)
        index = MemoryIndex(store, scorer=RelevanceScorer(HashEmbedder(), feedback=Feedback(top=2, weight=0.3)))
        columns = index.select(PLAN, ASK, now=NOW, visibility=view)
        expected = [(c.entry["id"], c.score) for c in per_entry.chosen]
        assert [(c.entry["id"], c.score) for c in columns.chosen] == expected
        assert expected[0][0] in ("hop1", "hop1b")


def test_equal_second_pass_sums_tie_by_the_core_rule_not_by_the_last_bit():
    # Deploy notes alike but for their number: the expanded query holds the
    # two best notes' numbers, so their BM25 sums differ only in the order
    # the terms were added (one ulp apart before settling); the earlier id
    # must still come first, through the LangChain retriever's default scorer.
    from lc_helpers import flooded_memory

    from poolsplit_adapters.langchain import PoolSplitRetriever

    pools = [Pool("corrections", 0, 0, ("correction",)), Pool("content", 400, 1, ("note", "task", "fact"))]
    retriever = PoolSplitRetriever(documents=flooded_memory(5), pools=pools, now=datetime.datetime(2026, 7, 7))
    retriever.invoke("did the deploy of checkout to staging finish", tags=["ops"])
    assert [c.entry["id"] for c in retriever.last_selection.chosen if not c.always] == ["note-000"]


def test_many_entries_tied_at_the_cut_give_the_sources_the_core_rule_picks_on_both_paths():
    """Forty entries share the cut's value (one template, one length): the
    sources are the ties first by the core's order (created, then id), on
    the index's columns as on the per-entry path; their own words then lift
    the entries that share them."""
    start = datetime.datetime(2025, 3, 1)
    ties = [
        {
            "id": "tie-%02d" % n,
            "content": "Maya's brother likes word%02d." % n,
            "created": (start + datetime.timedelta(days=(n * 17) % 40)).strftime("%Y-%m-%dT00:00:00Z"),
        }
        for n in range(40)
    ]  # shuffled days: the ties created first are not the first listed
    echoes = [{"id": "echo-%02d" % n, "content": "word%02d word%02d" % (n, n)} for n in range(40)]
    per_entry = both(memories(*ties, *echoes), Feedback(top=3, weight=0.5))  # hop1 above the cut, then two ties
    assert sorted(i for i in order(per_entry) if i.startswith("echo-")) == ["echo-00", "echo-33"]  # days 0 and 1


def test_a_query_with_most_keeps_its_rarest_words_in_the_query_s_order():
    from poolsplit_adapters.relevance.bm25 import WordIndex, idf
    from poolsplit_adapters.relevance.words import Analyzer

    def named(query):  # each query word by the word it was written as (its variants hold it)
        return [
            next(word for word in ("amber", "basil", "cedar", "dune") if word in variants) for variants in query.words
        ]

    corpus = WordIndex(Analyzer())
    corpus.add_many(
        ["amber basil", "amber cedar", "amber basil dune", "amber"]
    )  # df: amber 4, basil 2, cedar 1, dune 1
    assert named(corpus.query("amber basil cedar dune")) == ["amber", "basil", "cedar", "dune"]
    two = corpus.query("amber basil cedar dune", 2)
    assert named(two) == ["cedar", "dune"]  # idf ties: the earlier first
    assert two.weights == [idf(4, 1), idf(4, 1)]
    assert two.ceiling == (idf(4, 1) + idf(4, 1)) * 2.2
    assert named(corpus.query("dune amber basil cedar", 3)) == ["dune", "basil", "cedar"]  # in the query's order
    assert named(corpus.query("amber basil", 5)) == ["amber", "basil"]


def test_the_expansion_holds_at_most_terms_words_whatever_the_sources_length():
    """A long best match expands the query by its ``terms`` rarest words,
    not all of them: a call's second pass costs what those words cost."""
    long_text = "Tom moved to Sydney. " + " ".join("word%03d" % n for n in range(300))
    store = [
        {"id": "hop1", "content": long_text, "created": "2025-01-01T00:00:00Z"},
        {"id": "hop2", "content": "Maya's brother is called Tom.", "created": "2025-02-01T00:00:00Z"},
        *({"id": "w%d" % n, "content": "word%03d and more" % n} for n in range(0, 300, 3)),
    ]
    # Only the long entry says Sydney: it is the one source. Its words: tom,
    # moved, sydney and 300 numbered ones ("to" is a stopword).
    for terms, expected in ((None, 303), (16, 16)):
        scorer = RelevanceScorer(feedback=Feedback(top=1, weight=0.3, terms=terms))
        scorer.index_entries(store)
        prepared = scorer.prepare({"message": "Who lives in Sydney?"}, NOW)
        prepared.admitted(store)
        second = prepared._expanded()
        assert second is not None and len(second.words) == expected
    # The 16 kept are the rarest (no other entry holds them): never "tom"
    # (hop2 holds it too) nor a numbered word a "w" entry repeats.
    kept = sorted(min(variants, key=len) for variants in second.words)
    assert "tom" not in kept and all(not w.startswith("word") or int(w[4:]) % 3 for w in kept)


@given(STORE, st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join), st.integers(1, 4))
def test_a_bounded_expansion_gives_the_same_selection_on_the_columns_and_per_entry(store, message, terms):
    feedback = Feedback(top=2, weight=0.3, terms=terms)
    context = {"message": message}
    kept = RelevanceScorer(feedback=feedback)
    kept.index_entries(store)
    per_entry = select(store, PLAN, context, now=NOW, scorer=kept)
    columns = MemoryIndex(store, scorer=RelevanceScorer(feedback=feedback)).select(PLAN, context, now=NOW)
    assert [(c.entry["id"], c.score) for c in columns.chosen] == [(c.entry["id"], c.score) for c in per_entry.chosen]


@pytest.mark.parametrize("terms", [0, -1, True, 2.0, "8"])
def test_a_bad_terms_bound_is_refused(terms):
    with pytest.raises(ValueError, match="Feedback terms must be an int of at least 1 or None"):
        Feedback(top=2, weight=0.1, terms=terms)


@pytest.mark.parametrize("most", [0, -1, True, 2.5])
def test_a_query_bound_that_is_not_a_positive_int_is_refused(most):
    from poolsplit_adapters.relevance.bm25 import WordIndex
    from poolsplit_adapters.relevance.words import Analyzer

    corpus = WordIndex(Analyzer())
    corpus.add_many(["amber basil"])
    with pytest.raises(ValueError, match="Query most must be an int of at least 1 or None, got"):
        corpus.query("amber basil", most)


def test_words_only_feedback_expands_words_alone_and_not_beside_vectors():
    """``words_only``: the adapters' words default expands a call with words
    alone, and ranks by the first pass where a vector half exists (an
    embedder, or a vector store's similarities): on both paths."""
    from poolsplit_adapters.memory import HashEmbedder

    only = Feedback(top=1, weight=0.3, words_only=True)
    assert order(both(memories(), only)) == ["hop1", "hop2", "chat"]  # words alone: as without the flag
    scorer = RelevanceScorer(feedback=only)
    assert scorer.expansion is only
    assert scorer.with_known_relevance({"hop2": 0.2}).expansion is None
    assert scorer.with_known_relevance({}).expansion is only  # no similarity given: words alone
    assert RelevanceScorer(HashEmbedder(), feedback=only).expansion is None
    assert RelevanceScorer(HashEmbedder(), feedback=Feedback(top=1, weight=0.3)).expansion is not None
    # Beside vectors the scores are the first pass's, per entry and on the columns.
    store = memories()
    scores = {}
    for feedback in (only, None):
        kept = RelevanceScorer(HashEmbedder(), feedback=feedback)
        kept.index_entries(store)
        per_entry = select(store, PLAN, ASK, now=NOW, scorer=kept)
        index = MemoryIndex(store, scorer=RelevanceScorer(HashEmbedder(), feedback=feedback))
        columns = index.select(PLAN, ASK, now=NOW)
        scores[feedback] = [(c.entry["id"], c.score) for c in per_entry.chosen]
        assert [(c.entry["id"], c.score) for c in columns.chosen] == scores[feedback]
    assert scores[only] == scores[None]


@pytest.mark.parametrize("words_only", [1, "yes", None])
def test_a_words_only_that_is_not_a_bool_is_refused(words_only):
    with pytest.raises(ValueError, match="Feedback words_only must be a bool"):
        Feedback(words_only=words_only)
