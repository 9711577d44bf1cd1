"""A huge query is read up to its `QUERY_WORDS`-th distinct word, and the
selection says so: the words past it would cost stemming in every
language and a term per word, and a normal query never reaches it."""

from __future__ import annotations

import pytest

from poolsplit_adapters import MemoryIndex, Pool
from poolsplit_adapters.relevance import Analyzer, RelevanceScorer
from poolsplit_adapters.relevance.words import QUERY_CAP_NOTE, QUERY_WORDS
from poolsplit_adapters.reports import select_noted

POOLS = [Pool("facts", 1000, 3, ("fact",))]
ENTRIES = [
    {"id": "early", "type": "fact", "content": "Refunds round half-even."},
    {"id": "late", "type": "fact", "content": "Zebras graze at dawn."},
]


def _filler(n: int) -> str:
    """``n`` distinct made-up words (letters only), none a stopword."""
    letters = "bcdfghjklmnpqrstvwxz"
    return " ".join("q" + "".join(letters[(k // 20**p) % 20] for p in range(4)) for k in range(n))


def test_a_query_contributes_its_first_query_words_distinct_words():
    assert QUERY_WORDS == 2048
    analyzer = Analyzer()
    text = "refunds " + _filler(QUERY_WORDS - 1) + " zebras " + _filler(10)
    got = [word for word, _ in analyzer.query_words(text)]
    assert len(got) == QUERY_WORDS and got[0] == "refunds" and "zebras" not in got


def test_a_query_at_the_cap_is_read_whole():
    analyzer = Analyzer()
    text = "refunds " + _filler(QUERY_WORDS - 2) + " zebras refunds zebras"
    got = [word for word, _ in analyzer.query_words(text)]
    assert len(got) == QUERY_WORDS and got[-1] == "zebras"


@pytest.mark.parametrize("how", ["index", "select_noted"])
def test_the_selection_notes_a_capped_query(how):
    message = "refunds " + _filler(QUERY_WORDS - 1) + " zebras"
    scorer = RelevanceScorer()
    if how == "index":
        selection = MemoryIndex(ENTRIES).select(POOLS, {"message": message}, scorer=scorer)
    else:
        selection = select_noted(ENTRIES, POOLS, {"message": message}, scorer=scorer)
    assert selection.notes[QUERY_CAP_NOTE] == (
        "the query has 2049 distinct words; only its first 2048 were ranked (QUERY_WORDS), the rest ignored"
    )


def test_a_normal_query_leaves_no_note():
    selection = MemoryIndex(ENTRIES).select(POOLS, {"message": "refunds and zebras"}, scorer=RelevanceScorer())
    assert QUERY_CAP_NOTE not in selection.notes
