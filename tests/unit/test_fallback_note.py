"""A scorer's fallback is noted on the selection it affected, on the stateless
path too (the note lives in the call layer, ``reports``, not in the core)."""

from __future__ import annotations

import pytest
from conftest import NOW

from poolsplit_adapters import Pool, select
from poolsplit_adapters.memory.hash_embedding import HashEmbedder
from poolsplit_adapters.relevance import RelevanceScorer
from poolsplit_adapters.relevance.embedding import EmbeddingFallbackWarning, EmbeddingScorer
from poolsplit_adapters.reports import select_noted

STORE = [
    {"id": "a", "type": "note", "content": "refund rounding", "token_count": 5},
    {"id": "b", "type": "note", "content": "cafeteria menu", "token_count": 5, "base_priority": 9},
]
PLAN = [Pool("notes", 60, 4, ("note",))]


class Broken(HashEmbedder):
    def embed_query(self, text):  # noqa: ANN001, ANN201
        raise RuntimeError("offline")


def test_select_noted_records_the_fallback_of_this_calls_scorer():
    with pytest.warns(EmbeddingFallbackWarning):
        got = select_noted(STORE, PLAN, {"message": "refund"}, scorer=EmbeddingScorer(Broken()), now=NOW)
    assert got.notes["scorer_fallback"] == "query embedding failed: the embedder raised RuntimeError: offline"
    # The embedding scorer's fallback is its lexical relevance-first scorer.
    lexical = select(STORE, PLAN, {"message": "refund"}, now=NOW, scorer=RelevanceScorer())
    assert [(c.entry["id"], c.score) for c in got.chosen] == [(c.entry["id"], c.score) for c in lexical.chosen]


def test_a_scorer_that_does_not_fall_back_leaves_no_note():
    got = select_noted(STORE, PLAN, {"message": "refund"}, scorer=EmbeddingScorer(HashEmbedder()), now=NOW)
    assert "scorer_fallback" not in got.notes
    assert "scorer_fallback" not in select_noted(STORE, PLAN, {"message": "refund"}, now=NOW).notes
