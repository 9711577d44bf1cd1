"""One call's BM25 relevance of entries to its message, over the corpus it
ranks against.

Both relevance-first scorers need it: `RelevanceScorer`'s
prepared call fuses it with embeddings, and the embedding scorer
(`embedding`) falls back to it where a vector is missing. Kept here,
below both, the embedding scorer does not import the scorer that wraps it.

The corpus is the scorer's own (a store's, kept as entries are added) when
it holds anything; else the call's own, counting each entry once as the
call meets it, so a list of candidates ranks against its own statistics.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence

from .bm25 import Query, WordIndex
from .words import Analyzer

__all__ = ["CallWords"]


class CallWords:
    """The BM25 half of one call: the message's query over the call's corpus.

    Attributes:
        own: the call's own corpus, or None when it ranks against the
            scorer's (then nothing is counted).
        counted: id -> entry of what `own` holds.

    Example:
        >>> words = CallWords(Analyzer(), None, "refund rounding")
        >>> words.relevance({"content": "the refund total was rounded"}) > words.relevance({"content": "lunch"})
        True
    """

    def __init__(self, analyzer: Analyzer, corpus: Optional[WordIndex], message: str) -> None:
        self.analyzer = analyzer
        self.message = message
        self._shared = corpus
        self.own: Optional[WordIndex] = None if corpus is not None and len(corpus) else WordIndex(analyzer)
        self.counted: Dict[int, Mapping[str, Any]] = {}
        self._query: Optional[Query] = None

    def corpus(self) -> WordIndex:
        """The corpus this call ranks against."""
        if self.own is not None:
            return self.own
        assert self._shared is not None
        return self._shared

    def count(self, entries: Sequence[Mapping[str, Any]]) -> bool:
        """Count the entries not counted yet into the call's own corpus;
        whether the statistics changed (then every relevance the caller
        derived from them is stale)."""
        own = self.own
        if own is None:
            return False
        fresh = [entry for entry in entries if self.counted.get(id(entry)) is not entry]
        if not fresh:
            return False
        for entry in fresh:
            self.counted[id(entry)] = entry
            own.add(entry["content"])
        self._query = None  # new statistics: the query is built again over them
        return True

    def relevance(self, entry: Mapping[str, Any]) -> float:
        """Normalised BM25 of the entry's content, in [0, 1) (counted first
        when the call keeps its own corpus)."""
        if not self.message:
            return 0.0
        if self.own is not None and self.counted.get(id(entry)) is not entry:
            self.count([entry])
        if self._query is None:
            self._query = self.corpus().query(self.message)
        return self._query.relevance(entry["content"], self.analyzer)
