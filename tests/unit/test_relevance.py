"""The relevance-first scorer: Unicode words and stems, incremental BM25,
fusion with embeddings, and the bound on what modifiers can reorder."""

from __future__ import annotations

import datetime
import doctest
import math
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from poolsplit_adapters import MemoryIndex, Pool, select
from poolsplit_adapters.memory.hash_embedding import HashEmbedder
from poolsplit_adapters.relevance import (
    Analyzer,
    Modifiers,
    RelevanceScorer,
    StemmingUnavailableWarning,
    WordIndex,
    bm25,
    combine,
    fusion,
    modifiers,
    scorer,
    words,
)
from poolsplit_adapters.reports import select_noted

NOW = datetime.datetime(2026, 7, 7, 12, 0, 0)


def ids(selection):
    return [c.entry["id"] for c in selection.chosen]


@pytest.mark.parametrize("module", [words, bm25, fusion, modifiers, scorer])
def test_docstring_examples_run(module):
    assert doctest.testmod(module).failed == 0


# -- words ---------------------------------------------------------------------------------


def test_words_are_nfkc_casefolded_letters_of_any_script():
    assert words.words("ＲＥＦＵＮＤＳ, Straße! v2_beta") == ["refunds", "strasse", "v2", "beta"]
    # Pointed and unpointed Hebrew are one word; Greek and Cyrillic are words.
    assert words.words("הֶחְזֵר") == words.words("החזר") == ["החזר"]
    assert words.words("ΕΠΙΣΤΡΟΦΉ χρημάτων") == ["επιστροφή", "χρημάτων"]
    assert words.words("возврат") == ["возврат"]


def test_cjk_runs_become_character_bigrams():
    assert words.words("退款已处理") == ["退款", "款已", "已处", "处理"]
    assert words.words("API退款") == ["api", "退款"]
    assert words.words("款") == ["款"]
    assert words.words("払い戻し") == ["払い", "い戻", "戻し"]


def test_stems_in_the_text_language_and_its_stopwords_dropped():
    analyzer = Analyzer()
    assert analyzer.terms("The refunds were rounded") == ("refund", "round")
    assert analyzer.language_of("Los reembolsos de la tienda fueron redondeados") == "spanish"
    assert analyzer.terms("Los reembolsos de la tienda fueron redondeados") == ("reembols", "tiend", "fueron", "redond")
    assert analyzer.language_of("Die Rückerstattungen wurden für den Kunden abgerundet") == "german"
    assert analyzer.language_of("возврат денег") == "russian"
    # A three-word note without stopwords: the default language.
    assert analyzer.language_of("reembolsos redondeados hoy") == "english"


def test_each_distinct_word_is_stemmed_once_and_a_cjk_run_is_its_own_stem():
    calls = []

    def stem(word):
        calls.append(word)
        return word.rstrip("s")

    table = words._Stems(stem)
    assert [table[w] for w in ["refunds", "gates", "refunds", "退款", "refunds"]] == [
        "refund",
        "gate",
        "refund",
        "退款",
        "refund",
    ]
    assert calls == ["refunds", "gates"]


def test_a_word_snowball_stems_to_nothing_stays_itself():
    # Snowball's Greek stemmer strips "ιζε" and "ακι" to "": as terms, every
    # such word would be one and the same, and match the others.
    analyzer = Analyzer()
    assert words._stemmer("greek")["καλημερα"] == "καλημερ"
    assert analyzer.terms("ιζε ακι καλημερα") == ("ιζε", "ακι", "καλημερ")
    corpus = WordIndex(analyzer)
    corpus.add_many(["ιζε", "ακι"])
    assert (corpus.frequency("ιζε"), corpus.frequency("ακι"), corpus.frequency("")) == (1, 1, 0)
    assert corpus.query("ιζε").relevance("ακι", analyzer) == 0.0 < corpus.query("ιζε").relevance("ιζε", analyzer)


def test_language_ties_go_to_the_first_candidate_and_no_stopword_to_the_default():
    # One English and one Spanish stopword: English is listed first.
    assert words.detect_language(["the", "el", "gato"], "the el gato", ("english", "spanish"), "spanish") == "english"
    assert words.detect_language(["the", "el", "gato"], "the el gato", ("spanish", "english"), "english") == "spanish"
    assert words.detect_language(["gato"], "gato", ("english", "spanish"), "spanish") == "spanish"


def test_a_query_word_keeps_its_stems_in_every_language():
    assert Analyzer().query_terms("the Rückerstattung") == [frozenset({"rückerstattung", "ruckerstatt"})]
    only_english = Analyzer(languages=("english",))
    assert only_english.query_terms("refunds") == [frozenset({"refund"})]


def test_analyzer_settings_are_checked():
    with pytest.raises(ValueError, match="unknown"):
        Analyzer(languages=("klingon",))
    with pytest.raises(ValueError, match="default_language"):
        Analyzer(languages=("spanish",))
    with pytest.raises(ValueError, match="non-empty"):
        Analyzer(languages="english")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"names \(str\), got \(1,\)"):
        Analyzer(languages=[1])  # type: ignore[list-item]


def test_a_list_of_languages_reads_as_the_tuple_it_spells():
    # It used to be kept as given: every analysis cache then failed on an unhashable list.
    listed = Analyzer(languages=["english", "german"])  # type: ignore[arg-type]
    assert listed == Analyzer(languages=("english", "german"))
    assert listed.terms("refunds were rounded") == ("refund", "round")
    assert listed.query_terms("refunds") == [frozenset({"refund"})]


def test_without_snowball_words_are_unstemmed_and_it_says_so(monkeypatch):
    monkeypatch.setattr(words, "_snowball", None)
    analyzer = Analyzer()
    with pytest.warns(StemmingUnavailableWarning, match="snowballstemmer"):
        assert analyzer.terms("The refunds") == ("refunds",)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        analyzer.terms("again")  # once per analyzer


# -- BM25 ----------------------------------------------------------------------------------


TEXTS = st.lists(
    st.lists(
        st.sampled_from("refund refunds rounding cent staging deploy 退款 החזר".split()), min_size=1, max_size=5
    ).map(" ".join),
    max_size=12,
)


@settings(max_examples=40)
@given(TEXTS, st.data())
def test_word_index_kept_incrementally_equals_one_built_from_scratch(texts, data):
    kept = WordIndex()
    for text in texts:
        kept.add(text)
    gone = data.draw(st.lists(st.sampled_from(texts), unique=True) if texts else st.just([]))
    for text in gone:
        kept.remove(text)
    rest = list(texts)
    for text in gone:
        rest.remove(text)
    fresh = WordIndex()
    fresh.add_many(rest)
    assert (kept.documents, kept.total_length) == (fresh.documents, fresh.total_length)
    for term in ["refund", "round", "cent", "stage", "退款", "החזר"]:
        assert kept.frequency(term) == fresh.frequency(term)


def test_add_many_refuses_a_batch_with_a_non_text_and_counts_none_of_it():
    index = WordIndex()
    index.add("the staging gate")
    with pytest.raises(TypeError, match="got int"):
        index.add_many(["refunds are rounded", 7])
    assert (index.documents, index.frequency("refund"), "refunds are rounded" in index) == (1, 0, False)


def test_removing_an_unknown_text_names_it():
    with pytest.raises(KeyError, match="never there"):
        WordIndex().remove("never there")


def test_normalised_bm25_has_the_documented_value():
    index = WordIndex()
    index.add_many(["refund cent", "staging deploy"])
    query = index.query("refund")
    # One word, once, at average length: tf (k1 + 1) / (tf + k1) / (k1 + 1) = 1 / (1 + k1).
    assert query.relevance("refund cent", index.analyzer) == pytest.approx(1 / (1 + bm25.K1), rel=1e-12)
    assert query.relevance("staging deploy", index.analyzer) == 0.0


@settings(max_examples=40)
@given(TEXTS, st.sampled_from(["refund", "refunds rounding", "退款 cent", "החזר deploy staging"]))
def test_normalised_bm25_is_in_zero_one(texts, message):
    index = WordIndex()
    index.add_many(texts)
    query = index.query(message)
    for text in texts:
        assert 0.0 <= query.relevance(text, index.analyzer) < 1.0


# -- the scorer: what it finds -------------------------------------------------------------


def test_search_refund_finds_every_entry_that_says_refunds():
    entries = [
        {"id": "r%02d" % i, "content": "Customer %d asked about refunds for order %d" % (i, 100 + i)} for i in range(15)
    ] + [
        {"id": "n%02d" % i, "content": "Stand-up note %d: deploy went fine" % i, "base_priority": 10} for i in range(15)
    ]
    chosen = select(entries, [Pool("all", 10_000, 15)], {"message": "refund"}, scorer=RelevanceScorer(), now=NOW)
    assert sorted(ids(chosen)) == ["r%02d" % i for i in range(15)]


def test_a_chinese_query_finds_the_chinese_entry():
    entries = [
        {"id": "menu", "content": "午餐菜单已经更新", "base_priority": 10, "created": "2026-07-07T00:00:00Z"},
        {"id": "refund", "content": "退款金额被四舍五入少了一分钱", "created": "2025-07-01T00:00:00Z"},
        {"id": "english", "content": "Refunds are rounded", "created": "2026-07-01T00:00:00Z"},
    ]
    chosen = select(
        entries, [Pool("one", 1000, 1)], {"message": "为什么退款少了一分钱"}, scorer=RelevanceScorer(), now=NOW
    )
    assert ids(chosen) == ["refund"]


def test_a_hebrew_query_finds_the_hebrew_entry():
    entries = [
        {"id": "menu", "content": "תפריט ארוחת הצהריים עודכן", "base_priority": 10},
        {"id": "refund", "content": "החזר כספי נשלח ללקוח אתמול"},
    ]
    chosen = select(
        entries, [Pool("one", 1000, 1)], {"message": "מתי נשלח החזר כספי"}, scorer=RelevanceScorer(), now=NOW
    )
    assert ids(chosen) == ["refund"]


def test_hebrew_particles_joined_to_a_word_are_stripped_to_three_letters():
    assert words.hebrew_stem("ההחזר") == words.hebrew_stem("החזר") == "חזר"
    assert words.hebrew_stem("ובבית") == words.hebrew_stem("בבית") == words.hebrew_stem("בית") == "בית"
    assert words.hebrew_stem("מתי") == "מתי"  # three letters: nothing is stripped
    assert words.hebrew_stem("נשלח") == "נשלח"  # no particle letter in front
    analyzer = Analyzer()
    # The same rule in a document and a query, whatever the text's language.
    assert analyzer.terms("ההחזר נשלח") == ("חזר", "נשלח")
    assert analyzer.query_terms("החזר refunds") == [frozenset({"חזר"}), frozenset({"refund", "refunds"})]


HEBREW_LETTERS = st.text(st.sampled_from([chr(c) for c in range(0x05D0, 0x05EB)]), min_size=3, max_size=8)


@given(HEBREW_LETTERS, st.text(st.sampled_from("והבכלמש"), min_size=1, max_size=4))
def test_a_hebrew_word_with_particles_in_front_has_the_words_stem(word, particles):
    assert words.hebrew_stem(particles + word) == words.hebrew_stem(word)
    assert len(words.hebrew_stem(word)) >= 3


def test_a_hebrew_query_without_the_article_finds_the_entry_written_with_it_and_back():
    entries = [
        {"id": "menu", "content": "תפריט ארוחת הצהריים עודכן", "base_priority": 10},
        {"id": "refund", "content": "ההחזר נשלח ללקוח אתמול"},
    ]
    for message in ("מתי נשלח החזר", "איפה ההחזר", "ובהחזר"):
        chosen = select(entries, [Pool("one", 1000, 1)], {"message": message}, scorer=RelevanceScorer(), now=NOW)
        assert ids(chosen) == ["refund"], message
    written_bare = [{"id": "refund", "content": "החזר נשלח ללקוח"}, entries[0]]
    chosen = select(written_bare, [Pool("one", 1000, 1)], {"message": "ההחזר"}, scorer=RelevanceScorer(), now=NOW)
    assert ids(chosen) == ["refund"]


_LATIN = "abcdefghijklmnopqrstuvwxyzäöüßéèàçñóíúâêôõãë"
_SCRIPTS = {
    "russian": "абвгдеёжзийклмнопрстуфхцчшщъыьэюя",
    "greek": "αβγδεζηθικλμνξοπρστυφχψωάέήίόύώ",
    "arabic": "ابتثجحخدذرزسشصضطظعغفقكلمنهوي",
}


@pytest.mark.parametrize("language", [*Analyzer().languages, *_SCRIPTS])
def test_snowballs_c_code_gives_the_pure_python_stems(language):
    """The ``fast`` extra's PyStemmer is what snowballstemmer runs once it is
    installed: swapping it in must not change one stem (real words of the
    language and arbitrary strings of its alphabet)."""
    import importlib

    c_stemmer = pytest.importorskip("Stemmer").Stemmer(language)
    module = importlib.import_module("snowballstemmer.%s_stemmer" % language)
    python_stemmer = getattr(module, language.capitalize() + "Stemmer")()
    alphabet = _SCRIPTS.get(language, _LATIN)
    samples = ["refunds", "rounding", "Rückerstattungen", "reembolsos", "возвраты", "επιστροφές", "الاسترداد"]
    samples += [alphabet[n % len(alphabet) :] + alphabet[: n % 7] for n in range(200)]

    @given(st.lists(st.text(alphabet, min_size=1, max_size=14), max_size=50))
    def same(words_):
        assert [c_stemmer.stemWord(w) for w in words_] == [python_stemmer.stemWord(w) for w in words_]

    same()
    assert [c_stemmer.stemWord(w) for w in samples] == [python_stemmer.stemWord(w) for w in samples]


def test_spanish_and_german_queries_match_inflected_entries():
    entries = [
        {"id": "es", "content": "Los reembolsos se redondean hacia abajo"},
        {"id": "de", "content": "Die Rückerstattungen wurden abgerundet"},
        {"id": "other", "content": "La reunión es el lunes"},
    ]
    plan = [Pool("one", 1000, 1)]
    assert ids(select(entries, plan, {"message": "reembolso"}, scorer=RelevanceScorer(), now=NOW)) == ["es"]
    assert ids(select(entries, plan, {"message": "Rückerstattung"}, scorer=RelevanceScorer(), now=NOW)) == ["de"]


def test_an_old_strong_match_beats_fresh_high_priority_noise():
    entries = [{"id": "old", "content": "The refund rounding bug lost a cent", "created": "2025-03-01T00:00:00Z"}] + [
        {
            "id": "fresh%d" % i,
            "content": "Refund page moved, see wiki %d" % i,
            "created": "2026-07-07T00:00:00Z",
            "base_priority": 10,
        }
        for i in range(5)
    ]
    chosen = select(
        entries, [Pool("one", 1000, 1)], {"message": "refund rounding cent"}, scorer=RelevanceScorer(), now=NOW
    )
    assert ids(chosen) == ["old"]


def test_recency_horizon_and_weight_are_settings():
    entry = {"content": "refund", "created": "2026-06-27T12:00:00Z"}  # ten days old
    default = RelevanceScorer().prepare({"message": "refund"}, NOW)
    longer = RelevanceScorer(modifiers=Modifiers(recency_horizon_days=40, recency_weight=0.2)).prepare(
        {"message": "refund"}, NOW
    )
    base = 0.1 * 5 / 10 + 0.05 / 2  # default priority, no project
    assert default.boost(entry) == pytest.approx(base + 0.1 * (1 - 10 / 30), abs=1e-12)
    assert longer.boost(entry) == pytest.approx(base + 0.2 * (1 - 10 / 40), abs=1e-12)


def test_no_message_ranks_by_the_boost_alone():
    entries = [
        {"id": "low", "content": "a", "base_priority": 1},
        {"id": "high", "content": "b", "base_priority": 9},
        {"id": "fresh", "content": "c", "base_priority": 1, "created": "2026-07-07T00:00:00Z"},
    ]
    chosen = select(entries, [Pool("all", 1000, 3)], {}, scorer=RelevanceScorer(), now=NOW)
    assert ids(chosen) == ["fresh", "high", "low"]  # boosts 0.135, 0.115, 0.035
    prepared = RelevanceScorer().prepare({}, NOW)
    assert prepared.relevance(entries[0]) == 0.0


def test_min_relevance_thresholds_the_relevance_and_reports_the_cut():
    entries = [{"id": "hit", "content": "refund rounding"}, {"id": "miss", "content": "deploy staging"}]
    chosen = select(
        entries, [Pool("all", 1000, 5, min_relevance=0.05)], {"message": "refund"}, scorer=RelevanceScorer(), now=NOW
    )
    assert ids(chosen) == ["hit"]
    assert [(d.entry["id"], d.reason.value) for d in chosen.dropped] == [("miss", "below_relevance")]


def test_settings_are_checked():
    with pytest.raises(ValueError, match="lexical_weight"):
        RelevanceScorer(lexical_weight=1.5)
    with pytest.raises(ValueError, match="floor"):
        RelevanceScorer(floor=-0.1)
    with pytest.raises(TypeError, match="Modifiers"):
        RelevanceScorer(modifiers={"recency_weight": 1})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="recency_horizon_days"):
        Modifiers(recency_horizon_days=0)
    with pytest.raises(ValueError, match="priority_weight"):
        Modifiers(priority_weight=-1)
    with pytest.raises(TypeError, match="message"):
        RelevanceScorer().prepare({"message": 3}, NOW)


# -- the bound -----------------------------------------------------------------------------


@given(
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
    st.floats(0.0, 0.3),
    st.floats(0.0, 0.3),
)
def test_combine_never_lets_a_boost_undo_a_lead_of_delta(r, lead, boost_low, boost_high):
    mods = Modifiers()  # bound 0.3
    high = min(1.0, r + mods.delta() + lead)
    if high < r + mods.delta():
        return  # no relevance r + δ exists within [0, 1]
    assert combine(high, boost_low) > combine(r, boost_high)


META = st.fixed_dictionaries(
    {
        "base_priority": st.sampled_from([-3, 0, -0.0, 0.5, 1, 5, 9, 10, 10.5, 50]),
        "created": st.one_of(
            st.none(), st.integers(-5, 800).map(lambda d: (NOW - datetime.timedelta(days=d)).isoformat() + "Z")
        ),
        "tags": st.sampled_from([None, ["money"], ["money", "bug"], ["ops"]]),
        "project": st.sampled_from([None, "checkout", "search"]),
    }
)


@given(META, META, st.sampled_from([None, ["money"]]), st.sampled_from([None, "checkout"]))
def test_an_entry_never_outranks_one_more_relevant_by_delta_whatever_its_metadata(
    weak_meta, strong_meta, tags, project
):
    weak = {"id": "weak", "content": "refund notes for the finance team and the deploy", **weak_meta}
    strong = {"id": "strong", "content": "refund rounding cent", **strong_meta}
    weak = {k: v for k, v in weak.items() if v is not None}
    strong = {k: v for k, v in strong.items() if v is not None}
    context = {"message": "refund rounding cent", "tags": tags or [], "project": project}
    prepared = RelevanceScorer().prepare(context, NOW)
    prepared.warm([weak, strong])
    assert prepared.relevance(strong) >= prepared.relevance(weak) + RelevanceScorer().delta  # the premise
    chosen = select([weak, strong], [Pool("one", 1000, 1)], context, scorer=RelevanceScorer(), now=NOW)
    assert ids(chosen) == ["strong"]


# -- corpus, determinism, paths --------------------------------------------------------------

STORE = st.lists(
    st.builds(
        lambda n, text, prio, age: {
            "id": "e%d" % n,
            "content": text,
            "base_priority": prio,
            "created": (NOW - datetime.timedelta(days=age)).isoformat() + "Z",
        },
        st.integers(0, 10_000),
        st.lists(
            st.sampled_from("refund refunds rounding cent staging deploy 退款 החזר".split()), min_size=1, max_size=5
        ).map(" ".join),
        st.sampled_from([1, 5, 9]),
        st.integers(0, 400),
    ),
    max_size=20,
    unique_by=lambda e: e["id"],
)
MESSAGES = st.sampled_from(["refund rounding", "退款", "החזר staging", "cent", ""])


def _report(selection):
    return [(c.entry["id"], c.score) for c in selection.chosen], [(d.entry["id"], d.reason) for d in selection.dropped]


@settings(max_examples=40)
@given(STORE, MESSAGES, st.randoms())
def test_the_same_input_in_any_order_gives_the_same_selection(store, message, rng):
    plan = [Pool("all", 12, 3)]
    first = select(store, plan, {"message": message}, scorer=RelevanceScorer(), now=NOW)
    shuffled = list(store)
    rng.shuffle(shuffled)
    again = select(shuffled, plan, {"message": message}, scorer=RelevanceScorer(), now=NOW)
    assert sorted(_report(first)[0]) == sorted(_report(again)[0])


@settings(max_examples=40)
@given(STORE, MESSAGES)
def test_a_kept_corpus_ranks_like_the_per_call_count_of_the_same_store(store, message):
    plan = [Pool("all", 12, 3)]
    per_call = select(store, plan, {"message": message}, scorer=RelevanceScorer(), now=NOW)
    kept = RelevanceScorer()
    kept.index_entries(store)
    with_corpus = select(store, plan, {"message": message}, scorer=kept, now=NOW)
    assert _report(with_corpus) == _report(per_call)


def test_a_kept_corpus_follows_the_store_as_it_changes():
    kept = RelevanceScorer()
    first = {"id": "a", "content": "refund rounding"}
    kept.index_entries([first, {"id": "b", "content": "refund staging"}])
    assert kept.corpus is not None and kept.corpus.frequency("refund") == 2
    kept.forget_entries([first])
    assert (kept.corpus.documents, kept.corpus.frequency("refund"), kept.corpus.frequency("round")) == (1, 1, 0)
    with pytest.raises(KeyError, match="refund rounding"):
        kept.forget_entries([first])


@settings(max_examples=40)
@given(STORE, MESSAGES)
def test_memory_index_with_the_scorer_equals_the_stateless_path(store, message):
    plan = [Pool("all", 12, 3, min_relevance=0.01)]
    stateless = select(store, plan, {"message": message}, scorer=RelevanceScorer(), now=NOW)
    indexed = MemoryIndex(store, scorer=RelevanceScorer()).select(plan, {"message": message}, now=NOW)
    assert _report(indexed) == _report(stateless)


# -- fusion with embeddings -------------------------------------------------------------------


def test_with_an_embedder_the_relevance_is_the_documented_fusion():
    fused = RelevanceScorer(HashEmbedder(), lexical_weight=0.25)
    entry = {"content": "Refunds were rounded down"}
    prepared = fused.prepare({"message": "refund rounding"}, NOW)
    prepared.warm([entry])
    lexical = prepared.lexical_relevance(entry)
    cosine = prepared.embedding.embedded_relevance(entry)
    assert lexical > 0.0 and cosine > 0.0
    assert prepared.relevance(entry) == 0.75 * cosine + 0.25 * lexical
    assert prepared.score(entry) == combine(prepared.relevance(entry), prepared.boost(entry))
    assert prepared.fallback_reason is None


def test_a_failing_embedder_leaves_the_words_and_says_so():
    class Broken(HashEmbedder):
        def embed_query(self, text):  # noqa: ANN001, ANN201
            raise RuntimeError("offline")

    entries = [{"id": "a", "content": "refund rounding"}, {"id": "b", "content": "deploy staging"}]
    with pytest.warns(UserWarning, match="offline"):
        chosen = select_noted(
            entries, [Pool("all", 100, 1)], {"message": "refund"}, scorer=RelevanceScorer(Broken()), now=NOW
        )
    assert ids(chosen) == ["a"]
    assert "query embedding failed" in chosen.notes["scorer_fallback"]


def test_known_relevance_from_a_vector_store_is_fused_without_embedding():
    fused = RelevanceScorer(HashEmbedder()).with_known_relevance({"a": 0.8})
    prepared = fused.prepare({"message": "zebra"}, NOW)
    entry = {"id": "a", "content": "refund rounding"}
    assert prepared.relevance(entry) == 0.5 * 0.8 + 0.5 * 0.0


def test_fuse_counts_a_negative_cosine_as_no_match():
    assert fusion.fuse(0.2, -0.7, 0.5) == 0.1
    assert math.isclose(fusion.fuse(0.0, 1.0, 0.0), 1.0)


# -- the vectorised form a columnar index uses ---------------------------------------------


@settings(max_examples=60)
@given(
    st.lists(META, min_size=1, max_size=15),
    st.sampled_from([None, ["money"], ["money", "ops"]]),
    st.sampled_from([None, "checkout"]),
)
def test_boost_columns_are_bit_identical_to_the_per_entry_boost(metas, tags, project):
    np = pytest.importorskip("numpy")
    entries = [{"content": "x", **{k: v for k, v in m.items() if v is not None}} for m in metas]
    mods = Modifiers()
    wanted = frozenset(tags or ())
    created = [modifiers.parse_created(e.get("created")) for e in entries]
    micros = [-1 if c is None else int((NOW - c) / datetime.timedelta(microseconds=1)) for c in created]
    columns = dict(
        priority=np.array([float(e.get("base_priority", 5)) for e in entries]),
        days=np.array([m / 1e6 / 86400.0 if m >= 0 or c is not None else 0.0 for m, c in zip(micros, created)]),
        dated=np.array([c is not None for c in created]),
        tags_shared=np.array([float(len(set(e.get("tags") or ()) & wanted)) for e in entries]),
        tags_distinct=np.array([float(len(set(e["tags"]))) if e.get("tags") else 1.0 for e in entries]),
        project=np.array(
            [1 if e.get("project") is None else (2 if e.get("project") == project else 0) for e in entries],
            dtype=np.int8,
        ),
    )
    one_by_one = [mods.boost(e, wanted, project, NOW) for e in entries]
    assert mods.boost_columns(**columns).tolist() == one_by_one
    if not tags:  # the index passes None when the context names no tag
        assert mods.boost_columns(**{**columns, "tags_shared": None}).tolist() == one_by_one
    relevance = np.linspace(-0.2, 0.9, len(entries))
    assert modifiers.combine_columns(relevance, np.array(one_by_one)).tolist() == [
        combine(float(r), b) for r, b in zip(relevance, one_by_one)
    ]


@settings(max_examples=80)
@given(
    st.lists(
        st.one_of(
            st.none(),  # undated
            st.tuples(st.just("edge"), st.integers(-3_000_000, 3_000_000)),  # microseconds off the horizon
            st.tuples(st.just("any"), st.integers(-10 * 86_400_000_000, 400 * 86_400_000_000)),
        ),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from([30.0, 0.5, 7.25]),
    st.sampled_from([0.1, 0.0, 0.37]),
)
def test_recency_columns_equal_the_term_from_days_bit_for_bit(picks, horizon, weight):
    # recency_columns reads the created column (microseconds) and computes
    # only where an entry can be younger than the horizon: its terms are
    # those boost_columns computes from days and dated over every position.
    np = pytest.importorskip("numpy")
    ref = 63_900_000_000_000_000  # microseconds since year 1, in 2026
    edge = int(horizon * 86_400_000_000)
    ages = [None if p is None else (edge + p[1] if p[0] == "edge" else p[1]) for p in picks]
    created = np.array([-1 if age is None else ref - age for age in ages], dtype=np.int64)
    mods = Modifiers(recency_weight=weight, recency_horizon_days=horizon)
    days = (ref - created).astype(np.float64) / 1e6 / 86400.0
    zeros = np.zeros(len(ages))
    plain = dict(priority=zeros, tags_shared=None, tags_distinct=zeros + 1.0, project=np.ones(len(ages), dtype=np.int8))
    from_days = mods.boost_columns(days=days, dated=created >= 0, **plain)
    term = mods.recency_columns(created, ref)
    from_created = mods.boost_columns(days=None, dated=None, recency_term=term, **plain)
    assert from_created.tolist() == from_days.tolist()
    # Exactly the dated entries younger than the horizon get a term.
    young = [age is not None and weight > 0.0 and max(age / 1e6 / 86400.0, 0.0) < horizon for age in ages]
    assert [t > 0.0 for t in term.tolist()] == young
