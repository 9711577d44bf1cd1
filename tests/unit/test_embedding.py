"""EmbeddingScorer, the deterministic hash embedding, exact similarity and the
vector-store score rule, with real LangChain and LlamaIndex embedding objects
and stores."""

from __future__ import annotations

import datetime
import doctest
import math
import sqlite3
import subprocess
import sys
import warnings
from typing import Dict, List, Mapping, Sequence

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_tests.integration_tests import EmbeddingsIntegrationTests
from langchain_tests.unit_tests import EmbeddingsUnitTests

from poolsplit_adapters import EntryError, Pool, select
from poolsplit_adapters.index import MemoryIndex
from poolsplit_adapters.memory import hash_embedding
from poolsplit_adapters.memory.hash_embedding import HashEmbedder
from poolsplit_adapters.poolsplit import ScoringContext
from poolsplit_adapters.relevance import Modifiers, RelevanceScorer, similarity, vector_cache
from poolsplit_adapters.relevance import embedding as embedding_module
from poolsplit_adapters.relevance.embedding import (
    EmbeddingFallbackWarning,
    EmbeddingScorer,
)
from poolsplit_adapters.relevance.similarity import (
    StoreMetric,
    cosine,
    levels,
    metric_for,
    norms_of,
    quantise,
    relevance_from_store_score,
    score_matrix,
)
from poolsplit_adapters.relevance.vector_cache import InMemoryVectorCache, content_key, decode_vector, encode_vector

NOW = datetime.datetime(2026, 7, 7, 12, 0, 0)

# Quantisation moves a cosine by at most this much (measured: well under it).
QUANTISATION_TOLERANCE = 0.01


def float_cosine(a: Sequence[float], b: Sequence[float]) -> float:
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    denominator = np.linalg.norm(x) * np.linalg.norm(y)
    return float(x @ y / denominator) if denominator else 0.0


class CountingEmbedder:
    """A LangChain-shaped embedder over HashEmbedder that counts its calls
    and can be told to fail: the failure modes a remote model has."""

    def __init__(self, fail_query: bool = False, fail_documents: bool = False, dim: int = 256) -> None:
        self.inner = HashEmbedder(dim)
        self.fail_query = fail_query
        self.fail_documents = fail_documents
        self.document_calls: List[int] = []
        self.query_calls = 0

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        self.document_calls.append(len(texts))
        if self.fail_documents:
            raise ConnectionError("embedding service unreachable")
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> List[float]:
        self.query_calls += 1
        if self.fail_query:
            raise ConnectionError("embedding service unreachable")
        return self.inner.embed_query(text)


ENTRIES = [
    {"id": "refund-bug", "content": "Refunds were rounded down by one cent on discounted orders"},
    {"id": "staging", "content": "The staging URL moved to a new cluster last week"},
    {"id": "refund-task", "content": "Write a regression test for refund rounding"},
    {"id": "kitten", "content": "Photos of the office kitten are in the shared drive"},
]


# -- the deterministic embedding --------------------------------------------------


def test_hash_embedding_is_unit_length_and_zero_without_words():
    embedder = HashEmbedder(64)
    vector = embedder.embed("Refunds rounding incident")
    assert math.isclose(math.fsum(x * x for x in vector), 1.0, rel_tol=1e-12)
    assert embedder.embed("a an the of") == [0.0] * 64  # no significant word: nothing to compare


def test_hash_embedding_is_the_same_in_another_process():
    # Python's own hash() is salted per process; the embedding must not be.
    code = (
        "from poolsplit_adapters.memory.hash_embedding import HashEmbedder;"
        "print(repr(HashEmbedder(32).embed('refund rounding incident')))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={"PYTHONHASHSEED": seed, "PATH": ""},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1
    assert eval(outputs.pop()) == HashEmbedder(32).embed("refund rounding incident")


def test_inflections_rank_above_unrelated_text():
    # No shared word between query and the top two: only word-start n-grams
    # ("refunded"/"refunds", "rounding"/"rounded") make them similar.
    embedder = HashEmbedder()
    query = embedder.embed_query("refunded rounding")
    texts = {
        "both": "refunds were rounded",
        "one": "rounded totals",
        "unrelated": "kitten photos in the drive",
        "suffix-only": "running staging builds",
    }
    vectors = {k: embedder.embed(t) for k, t in texts.items()}
    ranked = sorted(texts, key=lambda k: -float_cosine(query, vectors[k]))
    assert ranked[:2] == ["both", "one"]
    assert float_cosine(query, vectors["both"]) > 0.3
    assert abs(float_cosine(query, vectors["unrelated"])) < 0.1


def test_hash_embedding_rejects_bad_arguments():
    with pytest.raises(ValueError, match="dim"):
        HashEmbedder(0)
    with pytest.raises(TypeError, match="strings"):
        HashEmbedder().embed(None)  # type: ignore[arg-type]


# -- exact similarity ----------------------------------------------------------------


@given(
    dim=st.integers(1, 64),
    rows=st.integers(1, 40),
    seed=st.integers(0, 2**32 - 1),
    scale=st.sampled_from([1e-3, 1.0, 1e3]),
)
def test_score_matrix_is_bit_identical_to_cosine_per_row_in_any_order(dim, rows, seed, scale):
    rng = np.random.default_rng(seed)
    matrix = quantise(rng.standard_normal((rows, dim)) * scale)
    query = quantise(rng.standard_normal(dim))
    full = score_matrix(query, matrix)
    single = [cosine(query, row) for row in matrix]
    assert full.tolist() == single
    order = rng.permutation(rows)
    assert score_matrix(query, matrix[order], norms_of(matrix)[order]).tolist() == full[order].tolist()
    assert ((full >= -1.0) & (full <= 1.0)).all()


def test_quantised_products_are_exact_at_the_worst_case():
    # Every component at the quantisation limit with one sign: the largest
    # partial sums float32 must still hold exactly.
    for dim in (1, 7, 384, 1536, 4096):
        top = levels(dim)
        assert dim * top * top <= 2**24
        ones = np.full((3, dim), top, dtype=np.float32)
        assert (ones @ ones[0]).tolist() == [float(dim * top * top)] * 3


def test_quantised_cosine_is_close_to_the_float_cosine():
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((200, 384))
    exact = vectors @ vectors[0] / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(vectors[0]))
    quantised = score_matrix(quantise(vectors[0]), quantise(vectors))
    assert np.max(np.abs(quantised - exact)) < QUANTISATION_TOLERANCE


def test_quantise_rejects_non_finite_vectors_and_keeps_zero():
    with pytest.raises(ValueError, match="NaN"):
        quantise([1.0, float("nan")])
    assert quantise([0.0, 0.0]).tolist() == [0.0, 0.0]
    assert cosine(quantise([0.0, 0.0]), quantise([1.0, 0.0])) == 0.0


def test_score_matrix_names_a_shape_mismatch():
    with pytest.raises(ValueError, match="does not match"):
        score_matrix(quantise([1.0, 0.0]), quantise([[1.0, 0.0, 0.0]]))


# -- the scorer: formula, ranking, paths ---------------------------------------------------


def test_score_is_relevance_first_with_a_bounded_boost():
    scorer = EmbeddingScorer(HashEmbedder())
    context = {"message": "refund rounding", "tags": ["money"], "project": "checkout"}
    entry = {
        "id": "e",
        "content": "Refunds rounded down",
        "tags": ["money", "bug"],
        "project": "checkout",
        "created": "2026-06-01T00:00:00Z",
        "base_priority": 7,
    }
    prepared = scorer.prepare(context, NOW)
    relevance = prepared.relevance(entry)
    expected_cos = float_cosine(HashEmbedder().embed("refund rounding"), HashEmbedder().embed(entry["content"]))
    assert relevance == pytest.approx(expected_cos, abs=QUANTISATION_TOLERANCE)
    # 36 days old: past the 30-day recency horizon, no recency boost.
    # priority 7 -> 0.07, every tag? one of two -> 0.025, same project 0.05.
    boost = 0.1 * 7 / 10 + 0.05 * 1 / 2 + 0.05
    assert prepared.boost(entry) == pytest.approx(boost, abs=1e-15)
    assert prepared.score(entry) == (relevance + 0.01) * (1.0 + prepared.boost(entry))
    assert scorer(entry, context, now=NOW) == prepared.score(entry)


def test_an_old_strong_match_outranks_a_fresh_weak_one_over_months():
    # The regression: under the spec's factors a 200-day-old match
    # lost to any entry of the last month; relevance first, it wins.
    scorer = EmbeddingScorer(HashEmbedder())
    old = {"id": "old", "content": "Refunds were rounded down by one cent", "created": "2025-12-19T00:00:00Z"}
    fresh = {
        "id": "fresh",
        "content": "Refund policy page moved to the wiki",
        "created": "2026-07-07T00:00:00Z",
        "base_priority": 10,
    }
    chosen = select([fresh, old], [Pool("one", 1000, 1)], {"message": "refunds rounded down"}, scorer=scorer, now=NOW)
    assert [e["id"] for e in chosen.entries()] == ["old"]
    spec_shape = ScoringContext({}, NOW)
    assert spec_shape.partial(old) < spec_shape.partial(fresh) / 3  # what used to bury it


def test_negative_cosine_counts_as_no_match():
    scorer = EmbeddingScorer(HashEmbedder())
    prepared = scorer.prepare({"message": "refund rounding"}, NOW)
    entry = {"content": "kitten photos"}
    assert prepared.relevance(entry) <= 0.0 or prepared.relevance(entry) < 0.1
    # Whatever the sign of the (noise) cosine, the relevance part is max(0, cos).
    assert prepared.score(entry) == (max(0.0, prepared.relevance(entry)) + 0.01) * (1.0 + prepared.boost(entry))


def test_exact_ranking_through_select():
    scorer = EmbeddingScorer(HashEmbedder())
    chosen = select(ENTRIES, [Pool("all", 1000, 4)], {"message": "refunds got rounded"}, scorer=scorer, now=NOW)
    assert [c.entry["id"] for c in chosen.chosen] == ["refund-bug", "refund-task", "kitten", "staging"]
    prepared = scorer.prepare({"message": "refunds got rounded"}, NOW)
    relevance = {c.entry["id"]: prepared.relevance(c.entry) for c in chosen.chosen}
    assert min(relevance["refund-bug"], relevance["refund-task"]) > 0.25
    assert max(relevance["kitten"], relevance["staging"]) < 0.1  # hash-collision noise only


def test_the_lexical_default_misses_what_embeddings_find():
    # The case: one shared word out of several is under the lexical
    # threshold, so recency and priority decide instead of meaning.
    entries = [
        {"id": "note", "content": "Checkout review: use the preview URL", "created": "2026-07-06T00:00:00Z"},
        {
            "id": "episode",
            "content": "Refunded totals were rounded wrong in October",
            "created": "2026-06-25T00:00:00Z",
        },
    ]
    context = {"message": "fix the refund rounding bug in the totals report for finance"}
    pools = [Pool("one", 1000, 1)]
    lexical = select(entries, pools, context, now=NOW)
    embedded = select(entries, pools, context, scorer=EmbeddingScorer(HashEmbedder()), now=NOW)
    assert [e["id"] for e in lexical.entries()] == ["note"]
    assert [e["id"] for e in embedded.entries()] == ["episode"]


@given(
    words=st.lists(
        st.sampled_from(
            "refund refunds rounding rounded staging cluster kitten photos tests deploy deployed cent".split()
        ),
        min_size=0,
        max_size=6,
    ),
    hybrid=st.sampled_from([0.0, 0.5]),
    seed=st.integers(0, 1000),
)
def test_relevance_is_bit_identical_one_by_one_and_as_a_matrix(words, hybrid, seed):
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(words, size=rng.integers(0, 4))) if words else "" for _ in range(12)]
    entries = [{"content": t} for t in texts]
    scorer = EmbeddingScorer(HashEmbedder(128), lexical_weight=hybrid)
    prepared = scorer.prepare({"message": "refunds rounding deploy"}, NOW)
    one_by_one = [prepared.relevance(e) for e in entries]
    lexical = ScoringContext({"message": "refunds rounding deploy"}, NOW)
    overlap = np.array([lexical.relevance(e) for e in entries])
    matrix = scorer.vectors_of(texts)
    assert prepared.relevance_of_matrix(matrix, overlap=overlap if hybrid else None).tolist() == one_by_one
    shuffled = rng.permutation(len(texts))
    again = scorer.prepare({"message": "refunds rounding deploy"}, NOW)
    assert [again.relevance(entries[i]) for i in shuffled] == [one_by_one[i] for i in shuffled]


def test_hybrid_mixes_cosine_and_word_overlap():
    pure = EmbeddingScorer(HashEmbedder()).prepare({"message": "refund rounding cluster"}, NOW)
    mixed = EmbeddingScorer(HashEmbedder(), lexical_weight=0.5).prepare({"message": "refund rounding cluster"}, NOW)
    entry = {"content": "refund rounding"}
    assert mixed.relevance(entry) == 0.5 * pure.relevance(entry) + 0.5 * (2 / 3)


def test_no_message_means_no_relevance_and_the_boost_alone_orders():
    scorer = EmbeddingScorer(HashEmbedder())
    prepared = scorer.prepare({"tags": ["money"]}, NOW)
    entry = {"content": "Refunds rounded", "tags": ["money"], "base_priority": 3}
    assert not prepared.has_query
    assert prepared.relevance(entry) == 0.0
    # priority 0.03 + every tag 0.05 + no project 0.025
    assert prepared.score(entry) == 0.01 * (1.0 + 0.1 * 3 / 10 + 0.05 + 0.05 / 2)


def test_memory_index_with_the_scorer_matches_the_stateless_path():
    scorer = EmbeddingScorer(HashEmbedder())
    index = MemoryIndex([dict(e) for e in ENTRIES])
    context = {"message": "rounding of refunds"}
    pools = [Pool("all", 30, 2)]
    from_index = index.select(pools, context, now=NOW, scorer=scorer)
    stateless = select(index.entries, pools, context, now=NOW, scorer=scorer)
    assert [(c.entry["id"], c.score) for c in from_index.chosen] == [(c.entry["id"], c.score) for c in stateless.chosen]


def test_a_malformed_entry_or_context_is_named():
    scorer = EmbeddingScorer(HashEmbedder())
    with pytest.raises(EntryError, match="'bad'.*content"):
        scorer({"id": "bad", "content": 3}, {"message": "x"}, now=NOW)
    with pytest.raises(TypeError, match="message"):
        scorer.prepare({"message": 5}, NOW)


def test_constructor_rejects_what_is_not_an_embedder():
    with pytest.raises(TypeError, match="embed_documents and embed_query"):
        EmbeddingScorer(object())
    with pytest.raises(ValueError, match="floor"):
        EmbeddingScorer(HashEmbedder(), floor=-1)
    with pytest.raises(TypeError, match="modifiers"):
        EmbeddingScorer(HashEmbedder(), modifiers={"recency_weight": 1})
    with pytest.raises(ValueError, match="lexical_weight"):
        EmbeddingScorer(HashEmbedder(), lexical_weight=2)
    with pytest.raises(ValueError, match="batch_size"):
        EmbeddingScorer(HashEmbedder(), batch_size=0)


# -- batching and caching --------------------------------------------------------------


def test_entries_are_embedded_once_in_batches_and_the_query_once():
    embedder = CountingEmbedder()
    scorer = EmbeddingScorer(embedder, batch_size=256)
    texts = ["memory number %d" % i for i in range(600)] + ["memory number 1"]  # one repeat
    matrix = scorer.vectors_of(texts)
    assert matrix.shape == (601, 256)
    assert embedder.document_calls == [256, 256, 88]
    assert matrix[1].tolist() == matrix[600].tolist()
    scorer.vectors_of(texts[::-1])
    assert embedder.document_calls == [256, 256, 88]  # all cached
    entries = [{"content": t} for t in texts[:50]]
    for _ in range(2):
        prepared = scorer.prepare({"message": "number 7"}, NOW)
        prepared.scores(entries)
    assert embedder.query_calls == 1  # the repeated message is remembered
    assert embedder.document_calls == [256, 256, 88]


def test_warming_embeds_a_cold_store_in_one_call_before_selection():
    embedder = CountingEmbedder()
    scorer = EmbeddingScorer(embedder)
    context = {"message": "refund rounding"}
    scorer.prepare(context, NOW).warm(ENTRIES)  # what a selector does with its candidates
    chosen = select(ENTRIES, [Pool("all", 1000, 4)], context, scorer=scorer, now=NOW)
    assert embedder.document_calls == [len(ENTRIES)]
    assert embedder.query_calls == 1
    assert len(chosen.chosen) == 4


def test_an_edited_entry_is_embedded_again_and_models_do_not_mix():
    assert content_key("a", "model-1") != content_key("b", "model-1")
    assert content_key("a", "model-1") != content_key("a", "model-2")
    embedder = CountingEmbedder()
    scorer = EmbeddingScorer(embedder)
    scorer.vectors_of(["old text"])
    scorer.vectors_of(["new text"])
    assert embedder.document_calls == [1, 1]


class SqliteVectorCache:
    """The VectorCache protocol over a real SQLite table: what a durable
    store does so that a restart does not re-embed."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")

    def get_many(self, keys: Sequence[str]) -> Dict[str, np.ndarray]:
        marks = ",".join("?" * len(keys))
        rows = self.db.execute("SELECT key, vector FROM vectors WHERE key IN (%s)" % marks, list(keys))
        return {key: decode_vector(blob) for key, blob in rows}

    def put_many(self, items: Mapping[str, np.ndarray]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO vectors VALUES (?, ?)", [(k, encode_vector(v)) for k, v in items.items()]
        )
        self.db.commit()


def test_a_durable_cache_survives_a_restart(tmp_path):
    path = str(tmp_path / "vectors.sqlite")
    first = CountingEmbedder()
    before = EmbeddingScorer(first, cache=SqliteVectorCache(path)).vectors_of(["alpha refund", "beta rounding"])
    second = CountingEmbedder()  # a new process: new embedder, new scorer, same file
    after = EmbeddingScorer(second, cache=SqliteVectorCache(path)).vectors_of(["beta rounding", "alpha refund"])
    assert second.document_calls == []
    assert after.tolist() == before[::-1].tolist()


def test_in_memory_cache_is_bounded_and_read_only():
    cache = InMemoryVectorCache(max_items=2)
    cache.put_many({k: np.zeros(2, dtype=np.float32) for k in "abc"})
    assert sorted(cache.get_many(list("abc"))) == ["b", "c"]
    with pytest.raises(ValueError):
        cache.get_many(["c"])["c"][0] = 1.0
    cache.discard(["b"])
    assert len(cache) == 1
    with pytest.raises(ValueError, match="max_items"):
        InMemoryVectorCache(max_items=0)


def test_vectors_computed_elsewhere_are_not_embedded_again():
    embedder = CountingEmbedder()
    scorer = EmbeddingScorer(embedder)
    scorer.fill_cache(["refund rounding"], [HashEmbedder(256).embed("refund rounding")])
    scorer.prepare({"message": "refunds"}, NOW).relevance({"content": "refund rounding"})
    assert embedder.document_calls == []


# -- fallback ----------------------------------------------------------------------------


def _lexical_scores(entries, context):
    """The lexical relevance-first scores (BM25, same modifiers): the fallback."""
    return RelevanceScorer(modifiers=Modifiers()).prepare(context, NOW).scores(entries)


def test_no_embedder_ranks_lexically_and_warns_once():
    scorer = EmbeddingScorer(None)
    context = {"message": "refund rounding"}
    with pytest.warns(EmbeddingFallbackWarning, match="no embedder configured"):
        prepared = scorer.prepare(context, NOW)
    assert prepared.fallback_reason == "no embedder configured"
    assert prepared.scores(ENTRIES) == _lexical_scores(ENTRIES, context)
    words = RelevanceScorer().prepare(context, NOW)
    words.warm(ENTRIES)
    assert prepared.relevance(ENTRIES[2]) == words.relevance(ENTRIES[2]) > 0.3  # both words
    # "refunds", "rounded": the same stems, unlike the core's exact words
    assert prepared.relevance(ENTRIES[0]) == words.relevance(ENTRIES[0]) > 0.3
    assert prepared.relevance(ENTRIES[1]) == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = scorer.prepare(context, NOW)  # no second warning
    assert again.fallback_reason == "no embedder configured"


def test_a_failing_embedder_falls_back_to_the_lexical_scores():
    embedder = CountingEmbedder(fail_query=True)
    scorer = EmbeddingScorer(embedder)
    context = {"message": "refund rounding"}
    with pytest.warns(EmbeddingFallbackWarning, match="ConnectionError"):
        chosen = select(ENTRIES, [Pool("all", 1000, 4)], context, scorer=scorer, now=NOW)
    lexical = select(ENTRIES, [Pool("all", 1000, 4)], context, now=NOW, scorer=RelevanceScorer())
    assert [(c.entry["id"], c.score) for c in chosen.chosen] == [(c.entry["id"], c.score) for c in lexical.chosen]
    assert "query embedding failed" in (scorer.last_fallback_reason or "")


def test_failing_entry_embedding_is_tried_once_per_call_and_scored_lexically():
    embedder = CountingEmbedder(fail_documents=True)
    scorer = EmbeddingScorer(embedder)
    scorer.fill_cache([ENTRIES[0]["content"]], [HashEmbedder(256).embed(ENTRIES[0]["content"])])
    context = {"message": "refund rounding"}
    with pytest.warns(EmbeddingFallbackWarning, match="entry embedding failed"):
        prepared = scorer.prepare(context, NOW)
        scores = prepared.scores(ENTRIES)
    assert len(embedder.document_calls) == 1
    assert scores[1:] == _lexical_scores(ENTRIES, context)[1:]  # no vector: lexical
    assert scores[0] == (max(0.0, prepared.relevance(ENTRIES[0])) + 0.01) * (1.0 + prepared.boost(ENTRIES[0]))
    assert "ConnectionError" in (prepared.fallback_reason or "")


@pytest.mark.parametrize(
    "bad_output, message",
    [
        ([[1.0, float("nan")]], "NaN"),
        ([], "0 vectors for 1 texts"),
        ([[1.0], [2.0]], "2 vectors for 1 texts"),
        ("not vectors", "instead of a list of vectors"),
        ([[1.0, 0.0, 0.0]], "3-dimensional"),
    ],
)
def test_an_embedder_returning_junk_is_a_fallback_with_the_reason(bad_output, message):
    class Junk:
        def embed_documents(self, texts):
            return bad_output

        def embed_query(self, text):
            return [1.0, 0.0]

    scorer = EmbeddingScorer(Junk())
    with pytest.warns(EmbeddingFallbackWarning):
        prepared = scorer.prepare({"message": "x y z"}, NOW)
        prepared.relevance({"content": "abc"})
    assert message in (prepared.fallback_reason or "")


def test_dimension_change_is_caught():
    class Shifting(CountingEmbedder):
        def embed_query(self, text):
            return [1.0, 0.0, 0.0]

    scorer = EmbeddingScorer(Shifting())
    scorer.vectors_of(["refund"])
    with pytest.warns(EmbeddingFallbackWarning, match="3-dimensional"):
        prepared = scorer.prepare({"message": "refund"}, NOW)
    assert prepared.fallback_reason is not None and "3-dimensional" in prepared.fallback_reason


# -- framework embedding objects ----------------------------------------------------------


def test_langchain_and_llama_index_embeddings_give_the_same_ranking():
    from llama_index.core.embeddings import MockEmbedding

    from poolsplit_adapters.langchain.embeddings import HashEmbeddings
    from poolsplit_adapters.llama_index.embeddings import HashEmbedding

    context = {"message": "refunds got rounded"}
    pools = [Pool("all", 1000, 4)]
    results = []
    for embedder in (HashEmbedder(), HashEmbeddings(), HashEmbedding()):
        chosen = select(ENTRIES, pools, context, scorer=EmbeddingScorer(embedder), now=NOW).chosen
        results.append([(c.entry["id"], c.score) for c in chosen])
    assert results[0] == results[1] == results[2]
    # LlamaIndex's own mock gives every text the same vector: the scorer
    # works with it (the protocol), and every relevance is then 1.
    prepared = EmbeddingScorer(MockEmbedding(embed_dim=8)).prepare(context, NOW)
    assert {prepared.relevance(e) for e in ENTRIES} == {1.0}


def test_model_id_names_the_vector_space():
    from llama_index.core.embeddings import MockEmbedding

    from poolsplit_adapters.langchain.embeddings import HashEmbeddings

    assert EmbeddingScorer(HashEmbedder(64)).model_id == HashEmbedder(64).model_id
    assert EmbeddingScorer(HashEmbeddings(dim=64)).model_id == HashEmbedder(64).model_id
    assert EmbeddingScorer(MockEmbedding(embed_dim=8)).model_id.endswith("MockEmbedding:unknown")
    assert EmbeddingScorer(HashEmbedder(), model_id="mine").model_id == "mine"


class _HashEmbeddingsUnderTest:
    """What both of LangChain's Embeddings suites below run against."""

    @property
    def embeddings_class(self):
        from poolsplit_adapters.langchain.embeddings import HashEmbeddings

        return HashEmbeddings

    @property
    def embedding_model_params(self):
        return {"dim": 64}


class TestHashEmbeddingsStandardUnit(_HashEmbeddingsUnderTest, EmbeddingsUnitTests):
    """LangChain's own conformance suite for an Embeddings class."""


class TestHashEmbeddingsStandardIntegration(_HashEmbeddingsUnderTest, EmbeddingsIntegrationTests):
    """LangChain's own integration suite for an Embeddings class."""


# -- vector stores: the same similarity ------------------------------------------------------


def test_in_memory_vector_store_scores_are_the_scorers_relevance():
    from langchain_core.vectorstores import InMemoryVectorStore

    from poolsplit_adapters.langchain.embeddings import HashEmbeddings

    store = InMemoryVectorStore(HashEmbeddings())
    store.add_texts([e["content"] for e in ENTRIES], ids=[e["id"] for e in ENTRIES])
    prepared = EmbeddingScorer(HashEmbeddings()).prepare({"message": "refunds got rounded"}, NOW)
    by_id = {e["id"]: e for e in ENTRIES}
    metric = metric_for(store)
    assert metric is StoreMetric.COSINE
    hits = store.similarity_search_with_score("refunds got rounded", k=4)
    for document, score in hits:
        assert relevance_from_store_score(score, metric) == pytest.approx(
            prepared.relevance(by_id[document.id]), abs=QUANTISATION_TOLERANCE
        )
    assert [d.id for d, _ in hits][:2] == ["refund-bug", "refund-task"]


def test_llama_index_simple_vector_store_scores_are_the_scorers_relevance():
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    from poolsplit_adapters.llama_index.embeddings import HashEmbedding

    nodes = [TextNode(text=e["content"], id_=e["id"]) for e in ENTRIES]
    index = VectorStoreIndex(nodes, embed_model=HashEmbedding())
    metric = metric_for(index)
    assert metric is StoreMetric.COSINE
    prepared = EmbeddingScorer(HashEmbedding()).prepare({"message": "refunds got rounded"}, NOW)
    by_id = {e["id"]: e for e in ENTRIES}
    for hit in index.as_retriever(similarity_top_k=4).retrieve("refunds got rounded"):
        assert relevance_from_store_score(hit.score, metric) == pytest.approx(
            prepared.relevance(by_id[hit.node.node_id]), abs=QUANTISATION_TOLERANCE
        )


@given(seed=st.integers(0, 10_000))
def test_distance_rules_recover_the_cosine_of_unit_vectors(seed):
    rng = np.random.default_rng(seed)
    a, b = (v / np.linalg.norm(v) for v in rng.standard_normal((2, 16)))
    cos = float(a @ b)
    distance = float(np.linalg.norm(a - b))
    cases = {
        StoreMetric.COSINE: cos,
        StoreMetric.DOT_PRODUCT: cos,
        StoreMetric.COSINE_DISTANCE: 1.0 - cos,
        StoreMetric.EUCLIDEAN: distance,
        StoreMetric.NEGATIVE_EUCLIDEAN: -distance,
        StoreMetric.SQUARED_EUCLIDEAN: distance**2,
    }
    for metric, score in cases.items():
        assert relevance_from_store_score(score, metric) == pytest.approx(cos, abs=1e-9)


def test_unknown_store_and_bad_score_are_errors():
    with pytest.raises(ValueError, match="pass the store's metric"):
        metric_for(object())
    with pytest.raises(ValueError, match="finite"):
        relevance_from_store_score(float("inf"), StoreMetric.COSINE)
    assert relevance_from_store_score(3.0, "euclidean") == -1.0  # clipped


def test_known_relevance_from_a_store_is_used_instead_of_embedding():
    embedder = CountingEmbedder()
    scorer = EmbeddingScorer(embedder).with_known_relevance({"staging": 0.9})
    prepared = scorer.prepare({"message": "refund rounding"}, NOW)
    assert prepared.relevance(ENTRIES[1]) == 0.9
    assert embedder.document_calls == []
    assert prepared.score(ENTRIES[1]) == (0.9 + 0.01) * (1.0 + 0.1 * 5 / 10 + 0.05 / 2)  # default priority, no project


# -- docstring examples -----------------------------------------------------------------------


@pytest.mark.parametrize("module", [embedding_module, hash_embedding, similarity, vector_cache])
def test_docstring_examples_run(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def test_framework_docstring_examples_run():
    from poolsplit_adapters.langchain import embeddings as lc
    from poolsplit_adapters.llama_index import embeddings as li

    for module in (lc, li):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0


def test_hash_embedding_sees_words_of_any_script():
    # Until v2 only ASCII words counted: a Chinese or Hebrew text had the
    # zero vector, and a vector store's cosine with it was NaN.
    embedder = HashEmbedder(256)
    chinese, hebrew = embedder.embed("退款少了一分钱"), embedder.embed("החזר כספי נשלח")
    assert math.isclose(math.fsum(x * x for x in chinese), 1.0, rel_tol=1e-12)
    assert math.isclose(math.fsum(x * x for x in hebrew), 1.0, rel_tol=1e-12)
    dot = lambda a, b: math.fsum(x * y for x, y in zip(a, b))  # noqa: E731
    assert dot(chinese, embedder.embed("为什么退款少了")) > dot(chinese, embedder.embed("午餐菜单"))
    assert hash_embedding.significant_words("The refunds were rounded") == {"refunds", "rounded"}
    assert embedder.model_id.startswith("poolsplit-hash-v2/")
