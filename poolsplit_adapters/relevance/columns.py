"""BM25 over a columnar store: postings kept as entries come and go, and
the relevance of every position in one numpy pass.

:class:`~poolsplit_adapters.MemoryIndex` answers a query with columns, one
value per position. For :class:`~.scorer.RelevanceScorer` that column is
the normalised BM25 of :mod:`.bm25`; computing it entry by entry would be
Python work proportional to the store on every call. :class:`TermPostings`
keeps, per term, the positions holding it and how often (two typed arrays,
appended as entries are added: O(terms of the new entries), no merge step),
each position's length in terms, and a :class:`~.bm25.WordIndex` of the
same texts for the document frequencies. A query then reads the postings of
its few terms, so the per-call work is O(postings of the query's terms) in
numpy plus one array the size of the store.

**Twin.** :meth:`TermPostings.relevance` is the twin of
:meth:`.bm25.Query.relevance`: the same float64 operations in the same
order (a term the text lacks adds exactly 0.0 where the per-entry path adds
nothing), so every position gets the per-entry value's exact bits
(``tests/unit/test_twins.py`` compares them on generated text).

**What counts as the corpus.** Every text the store holds (active or not,
always-scope or not, whatever a query's visibility): the statistics of a
store, as a search engine keeps them, not of one call's candidates.
"""

from __future__ import annotations

import array
import itertools
from typing import Any, Dict, List, Mapping, Sequence

from .bm25 import K1, B, Query, WordIndex, _counts
from .words import Analyzer, cache_key

__all__ = ["TermPostings"]


class TermPostings:
    """Term -> (positions, counts) of a store's texts, their lengths, and
    their :class:`~.bm25.WordIndex`; see the module docstring.

    Args:
        analyzer: how texts become terms (the scorer's).
        columns: keep the postings (numpy installed); False keeps only the
            document frequencies, for the per-entry path.

    Example:
        >>> postings = TermPostings(Analyzer())
        >>> postings.add(0, ["Refunds are rounded down", "The staging gate"])
        >>> query = postings.corpus.query("refund")
        >>> [round(float(r), 4) for r in postings.relevance(query, 2)]
        [0.4737, 0.0]
    """

    def __init__(self, analyzer: Analyzer, *, columns: bool = True) -> None:
        self.analyzer = analyzer
        self.corpus = WordIndex(analyzer)
        self.columns = columns
        self._key = cache_key(analyzer)
        self._codes: Dict[str, int] = {}
        self._positions: List[array.array[int]] = []
        self._counts: List[array.array[int]] = []
        self._lengths = array.array("i")
        # Positions re-read in place: their arrays still list the old terms;
        # the override (term counts, length) wins.
        self._overrides: Dict[int, Mapping[str, int]] = {}

    def add(self, start: int, texts: Sequence[str]) -> None:
        """Count ``texts[k]`` as the document at position ``start + k``
        (positions from ``start`` are new, in order)."""
        self.corpus.add_many(texts)
        if self.columns:
            self._post(start, texts)

    def _post(self, start: int, texts: Sequence[str]) -> None:
        import numpy as np

        held = [_counts(self._key, self.analyzer, text) for text in texts]
        self._lengths.extend(length for _, length in held)
        counters = [counts for counts, _ in held]
        codes = self._codes

        def code(term: str) -> int:
            found = codes.get(term)
            if found is None:
                found = codes[term] = len(codes)
                self._positions.append(array.array("i"))
                self._counts.append(array.array("i"))
            return found

        flat = np.fromiter(map(code, itertools.chain.from_iterable(c.keys() for c in counters)), dtype=np.int64)
        counts = np.fromiter(itertools.chain.from_iterable(c.values() for c in counters), dtype=np.int32)
        sizes = np.fromiter(map(len, counters), dtype=np.int64, count=len(counters))
        positions = np.repeat(np.arange(start, start + len(texts), dtype=np.int32), sizes)
        # One stable sort groups the pairs by term, positions still ascending.
        order = np.argsort(flat, kind="stable")
        flat, counts, positions = flat[order], counts[order], positions[order]
        if not len(flat):
            return
        bounds = (np.flatnonzero(flat[1:] != flat[:-1]) + 1).tolist()
        for first, end in zip([0, *bounds], [*bounds, len(flat)]):
            term = int(flat[first])
            self._positions[term].frombytes(positions[first:end].tobytes())
            self._counts[term].frombytes(counts[first:end].tobytes())

    def remove(self, text: str) -> None:
        """The document ``text`` is gone (its position is no longer alive;
        the postings keep it, the caller's alive mask hides it)."""
        self.corpus.remove(text)

    def replace(self, position: int, old: str, new: str) -> None:
        """The document at ``position`` now reads ``new``."""
        self.corpus.remove(old)
        self.corpus.add(new)
        if self.columns:
            counts, length = _counts(self._key, self.analyzer, new)
            self._overrides[position] = counts
            self._lengths[position] = length

    def rebuild(self, texts: Sequence[str]) -> None:
        """Postings of ``texts`` at positions 0.. (after a compaction; the
        corpus holds the same documents and is kept)."""
        self._codes, self._positions, self._counts = {}, [], []
        self._lengths, self._overrides = array.array("i"), {}
        if self.columns:
            self._post(0, texts)

    def relevance(self, query: Query, size: int) -> Any:
        """The normalised BM25 of every position below ``size`` for
        ``query`` (a :meth:`~.bm25.WordIndex.query`), as float64; the twin
        of :meth:`~.bm25.Query.relevance`."""
        import numpy as np

        out = np.zeros(size, dtype=np.float64)
        if not query.words or query.ceiling <= 0.0 or not self.columns:
            return out
        # Term frequency per query word (a word's stem variants summed), one
        # dense row per word: O(postings of the query's terms) additions.
        tf = np.zeros((len(query.words), size), dtype=np.float64)
        for number, variants in enumerate(query.words):
            row = tf[number]
            for variant in variants:
                term = self._codes.get(variant)
                if term is not None:
                    # A term lists a position once: a fancy += is exact.
                    row[np.frombuffer(self._positions[term], dtype=np.int32)] += np.frombuffer(
                        self._counts[term], dtype=np.int32
                    )
        for position, own in self._overrides.items():
            if position < size:
                tf[:, position] = [sum(own.get(variant, 0) for variant in variants) for variants in query.words]
        union = np.flatnonzero(tf.any(axis=0))
        if not len(union):
            return out
        tf = tf[:, union]
        length = np.frombuffer(self._lengths, dtype=np.int32)[union].astype(np.float64)
        norm = K1 * (1.0 - B + B * length / query.average_length)
        total = np.zeros(len(union), dtype=np.float64)
        for weight, count in zip(query.weights, tf):
            total = total + np.where(count > 0.0, weight * count * (K1 + 1.0) / (count + norm), 0.0)
        out[union] = total / query.ceiling
        return out
