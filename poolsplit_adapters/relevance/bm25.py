"""BM25 over a corpus whose statistics are kept incrementally.

Why our own BM25 and not ``bm25s``: ``bm25s`` is fast by precomputing a
sparse matrix of scores for a *fixed* corpus; adding or removing one
document means re-indexing all of them. A memory store grows by a few
entries per turn and is queried between writes, so what must be cheap is
the update: [`WordIndex`][] keeps the document frequency of every term,
the number of documents and their total length, and changes them by one
document's terms on [`add`][poolsplit_adapters.relevance.WordIndex.add] / [`remove`][poolsplit_adapters.relevance.WordIndex.remove]
(O(terms of that document)). A query then reads the document frequencies
of its few terms (O(query terms)) and each scored entry's term counts
(cached by text in `words`).

**The score.** Okapi BM25 with ``k1 = 1.2``, ``b = 0.75`` and the
non-negative idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``; a query word is
the set of its stem variants ([`query_terms`][poolsplit_adapters.relevance.Analyzer.query_terms]), whose
term frequency in a document is the sum over the variants present and
whose df is the largest of theirs (the form the corpus actually uses).

**Normalised to [0, 1).** A term's contribution ``idf * tf (k1 + 1) /
(tf + k1 (1 - b + b dl / avgdl))`` never reaches ``idf (k1 + 1)``, so
dividing the sum by ``sum(idf) (k1 + 1)`` gives a relevance in [0, 1): the
share of the best score this query could have. That scale does not depend
on the query's length or the corpus's size, so one ``min_relevance`` and
one fusion weight mean the same on every call. A document that holds every
query word once at average length scores ``1 / (k1 + 1)``, about 0.45.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from .words import Analyzer, cache_key

__all__ = ["WordIndex", "K1", "B", "idf", "length_norm", "term", "Query"]

#: Term-frequency saturation: the second occurrence of a word adds about half
#: of what the first did, the tenth little.
K1 = 1.2
#: Length normalisation: a long entry's occurrences count less (0: none).
B = 0.75


def idf(documents: int, frequency: int) -> float:
    """BM25's non-negative inverse document frequency."""
    return math.log(1.0 + (documents - frequency + 0.5) / (frequency + 0.5))


def length_norm(length: Any, average: Any) -> Any:
    """The denominator's length part, ``k1 (1 - b + b dl / avgdl)``.

    The one place it is written: `Query.relevance` calls it on a float
    and `relevance.columns.TermPostings` on float64 arrays (elementwise, the
    same operations in the same order, so each element is the float's bits;
    `tests/unit/test_twins.py` and `tests/unit/test_bm25_term.py` pin them).

    Example:
        >>> length_norm(4, 4.0) == K1
        True
    """
    return K1 * (1.0 - B + B * length / average)


def term(weight: Any, count: Any, norm: Any) -> Any:
    """One query word's BM25 share, ``idf * tf (k1 + 1) / (tf + norm)``.

    ``weight`` is the word's `idf`,
    ``count`` its term frequency in the text and ``norm`` the text's
    `length_norm`. Every
    BM25 computation of the package calls it: `Query.relevance` per text
    on floats, `relevance.columns.TermPostings` on float64 arrays
    (elementwise, the same operations in the same order, so the column path
    gives the scalar path's bits; `tests/unit/test_bm25_term.py` pins that).

    Example:
        >>> term(1.0, 1, K1) == 1.0
        True
    """
    return weight * count * (K1 + 1.0) / (count + norm)


class WordIndex:
    """Document frequencies of a corpus of texts, updated per text.

    A text added twice counts as two documents (two entries saying the same
    thing); [`remove`][] takes one copy away.

    Args:
        analyzer: how texts become terms (shared with the scorer that reads
            this index, so both see the same words).

    Example:
        >>> index = WordIndex()
        >>> index.add("Refunds are rounded down")
        >>> index.add("The staging gate")
        >>> index.documents, index.frequency("refund")
        (2, 1)
        >>> index.remove("The staging gate")
        >>> index.documents
        1
    """

    def __init__(self, analyzer: Analyzer | None = None) -> None:
        self.analyzer = analyzer if analyzer is not None else Analyzer()
        self.documents = 0
        self.total_length = 0
        self._df: Counter[str] = Counter()
        self._copies: Counter[str] = Counter()

    def __len__(self) -> int:
        return self.documents

    def __contains__(self, text: object) -> bool:
        return isinstance(text, str) and self._copies[text] > 0

    def add(self, text: str) -> None:
        """Count one more document with this text."""
        if not isinstance(text, str):
            raise TypeError("WordIndex.add takes a text, got %s" % type(text).__name__)
        terms = self.analyzer.terms(text)
        self._copies[text] += 1
        self.documents += 1
        self.total_length += len(terms)
        self._df.update(set(terms))

    def add_many(self, texts: Sequence[str]) -> None:
        """[`add`][] each text, in one pass (the same counts as one
        [`add`][] after another)."""
        texts = list(texts)
        for text in texts:
            if not isinstance(text, str):
                raise TypeError("WordIndex.add takes a text, got %s" % type(text).__name__)
        analysed = self.analyzer.terms_many(texts)
        self.add_counted(texts, sum(map(len, analysed)), Counter(itertools.chain.from_iterable(map(set, analysed))))

    def add_counted(self, texts: Sequence[str], total_length: int, frequencies: Mapping[str, int]) -> None:
        """Count ``texts`` as documents whose statistics the caller has
        counted: their total length in terms and how many of them hold each
        term (what [`TermPostings`][] reads from its postings)."""
        self._copies.update(texts)
        self.documents += len(texts)
        self.total_length += total_length
        self._df.update(frequencies)

    def remove(self, text: str) -> None:
        """Count one document with this text less.

        Raises:
            KeyError: the text is not in the index (names its start).
        """
        if self._copies[text] <= 0:
            del self._copies[text]
            raise KeyError("WordIndex holds no document %r" % (text[:60],))
        terms = self.analyzer.terms(text)
        self._copies[text] -= 1
        if not self._copies[text]:
            del self._copies[text]
        self.documents -= 1
        self.total_length -= len(terms)
        for word in set(terms):
            self._df[word] -= 1
            if not self._df[word]:
                del self._df[word]

    def frequency(self, term: str) -> int:
        """How many documents hold ``term``."""
        return self._df.get(term, 0)

    @property
    def average_length(self) -> float:
        """Mean number of terms per document (1 for an empty index, so a
        lone scored text has length ratio 1)."""
        return self.total_length / self.documents if self.documents and self.total_length else 1.0

    def query(self, text: str, most: Optional[int] = None) -> Query:
        """Digest a query once against the current statistics; with
        ``most``, only its ``most`` words of highest idf (the rarest; ties:
        the earlier), in the query's order."""
        return Query(self, self.analyzer.query_terms(text), most)


class Query:
    """One query's words with their idf, scoring texts (see the module
    docstring for the formula). Built by [`WordIndex.query`][]."""

    __slots__ = ("words", "weights", "ceiling", "average_length", "_owners", "_key")

    def __init__(self, index: WordIndex, words: List[FrozenSet[str]], most: Optional[int] = None) -> None:
        documents = max(index.documents, 1)
        if most is not None and (isinstance(most, bool) or not isinstance(most, int) or most < 1):
            raise ValueError("Query most must be an int of at least 1 or None, got %r" % (most,))
        weights = [idf(documents, min(max(index.frequency(v) for v in variants), documents)) for variants in words]
        if most is not None and len(words) > most:
            kept = sorted(sorted(range(len(words)), key=lambda n: (-weights[n], n))[:most])
            words, weights = [words[n] for n in kept], [weights[n] for n in kept]
        self.words: List[FrozenSet[str]] = words
        self.weights: List[float] = weights
        self.ceiling = math.fsum(self.weights) * (K1 + 1.0)
        self.average_length = index.average_length
        # variant -> the query words it belongs to: a text that shares no
        # variant (most of a store) is answered by one set operation.
        owners: Dict[str, List[int]] = {}
        for number, variants in enumerate(words):
            for variant in variants:
                owners.setdefault(variant, []).append(number)
        self._owners = owners
        self._key = cache_key(index.analyzer)

    def __bool__(self) -> bool:
        return bool(self.words)

    def relevance(self, text: str, analyzer: Analyzer) -> float:
        """Normalised BM25 of ``text`` for this query, in [0, 1);
        ``analyzer`` is the index's (the scorer checks they agree)."""
        if not self.words or self.ceiling <= 0.0:
            return 0.0
        counts, length = _counts(self._key, analyzer, text)
        owners = self._owners
        if owners.keys().isdisjoint(counts):
            return 0.0
        tf = [0] * len(self.words)
        for variant in owners.keys() & counts.keys():
            for number in owners[variant]:
                tf[number] += counts[variant]
        norm = length_norm(length, self.average_length)
        total = 0.0
        for weight, count in zip(self.weights, tf):
            if count:
                total += term(weight, count, norm)
        return total / self.ceiling


_COUNTS: Dict[Tuple[Tuple[object, ...], str], Tuple[Mapping[str, int], int]] = {}
_COUNTS_LIMIT = 1 << 17


def _counts(settings: Tuple[object, ...], analyzer: Analyzer, text: str) -> Tuple[Mapping[str, int], int]:
    """Term counts and length of a text (cached: a store's texts are scored
    on every query); ``settings`` is ``cache_key(analyzer)``."""
    key = (settings, text)
    held = _COUNTS.get(key)
    if held is None:
        terms = analyzer.terms(text)
        if len(_COUNTS) >= _COUNTS_LIMIT:
            _COUNTS.clear()
        held = _COUNTS[key] = (Counter(terms), len(terms))
    return held
