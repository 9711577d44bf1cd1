"""MemoryIndex with an embedding scorer: the same selection as the core's
per-entry path, entry vectors embedded once, and the fallback reported.

(The index's matrix path multiplied the old score's factor; until it asks
the prepared scorer for the relevance-first score, an embedding scorer goes
through the core's per-entry path, embedding each text once, on first use.)"""

from __future__ import annotations

import pytest
from conftest import NOW
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_adapters import MemoryIndex, Pool, select
from poolsplit_adapters.memory.hash_embedding import HashEmbedder
from poolsplit_adapters.relevance import RelevanceScorer
from poolsplit_adapters.relevance.embedding import EmbeddingFallbackWarning, EmbeddingScorer

WORDS = ["refund", "refunds", "rounding", "rounded", "staging", "deploy", "cluster", "cache", "review", "menu"]
PLAN = [Pool("corrections", 0, 0, ("correction",)), Pool("notes", 60, 4, ("note",), min_relevance=0.1)]


class CountingEmbedder(HashEmbedder):
    """The hash embedding, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts = 0

    def embed_documents(self, texts):  # noqa: ANN001, ANN201
        self.texts += len(texts)
        return super().embed_documents(texts)


def _report(sel):
    return (
        [(c.entry["id"], c.pool, c.score, c.cost) for c in sel.chosen],
        [(d.entry["id"], d.reason, d.pool, d.score) for d in sel.dropped],
    )


entries = st.lists(
    st.builds(
        lambda n, words, typ, prio: {
            "id": "e%d" % n,
            "type": typ,
            "content": " ".join(words),
            "base_priority": prio,
            "token_count": 1 + len(words),
        },
        st.integers(0, 10_000),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
        st.sampled_from(["note", "note", "correction"]),
        st.sampled_from([1, 5, 9]),
    ),
    max_size=25,
    unique_by=lambda e: e["id"],
)


@given(entries, st.lists(st.sampled_from(WORDS), max_size=4).map(" ".join))
def test_index_equals_the_per_entry_path(store, message):
    scorer = EmbeddingScorer(HashEmbedder())
    context = {"message": message}
    expected = select(store, PLAN, context, now=NOW, scorer=scorer)
    got = MemoryIndex(store, scorer=scorer).select(PLAN, context, now=NOW)
    assert _report(got) == _report(expected)


def test_entries_are_embedded_once_and_later_queries_embed_nothing_more():
    embedder = CountingEmbedder()
    scorer = EmbeddingScorer(embedder)
    store = [{"id": "n%d" % i, "type": "note", "content": "refund rounding note %d" % i} for i in range(50)]
    index = MemoryIndex(store, scorer=scorer)
    for message in ("refunds rounded", "deploy staging", "refunds rounded"):
        index.select(PLAN, {"message": message}, now=NOW)
    assert embedder.texts == 50  # each text once; queries go through embed_query
    index.add({"id": "late", "type": "note", "content": "cache review"})
    index.select(PLAN, {"message": "cache"}, now=NOW)
    assert embedder.texts == 51


class Broken(HashEmbedder):
    def embed_query(self, text):  # noqa: ANN001, ANN201
        raise RuntimeError("offline")


def test_a_failing_embedder_falls_back_to_the_lexical_relevance_ranking_and_says_so():
    store = [
        {"id": "a", "type": "note", "content": "refund rounding", "token_count": 5},
        {"id": "b", "type": "note", "content": "cafeteria menu", "token_count": 5, "base_priority": 9},
    ]
    scorer = EmbeddingScorer(Broken())
    with pytest.warns(EmbeddingFallbackWarning):
        got = MemoryIndex(store, scorer=scorer).select(
            [Pool("notes", 60, 4, ("note",))], {"message": "refund"}, now=NOW
        )
    lexical = select(store, [Pool("notes", 60, 4, ("note",))], {"message": "refund"}, now=NOW, scorer=RelevanceScorer())
    assert _report(got) == _report(lexical)
    assert got.notes["scorer_fallback"].startswith("query embedding failed")
