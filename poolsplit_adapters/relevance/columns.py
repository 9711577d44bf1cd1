"""BM25 over a columnar store: postings kept as entries come and go, and
the relevance of every position in one numpy pass.

[`MemoryIndex`][poolsplit_adapters.index.MemoryIndex] answers a query with columns, one
value per position. For [`RelevanceScorer`][] that column is
the normalised BM25 of `bm25`; computing it entry by entry would be
Python work proportional to the store on every call. [`TermPostings`][]
keeps, per term, the positions holding it and, for each, the code of its
(count, length) pair (two typed arrays, appended as entries are added:
O(terms of the new entries), no merge step), each position's length in
terms, and a [`WordIndex`][] of the same texts for the document
frequencies. A query then reads the postings of its few terms, so the
per-call work is O(postings of the query's terms) in numpy plus one array
the size of the store.

**Why pairs.** A term's share at a position depends on nothing but its count
there and the position's length (the query fixes the weight and the average
length), and a store holds few distinct (count, length) pairs: a few
hundred where it holds millions of postings. So each query word computes its
share once per pair, a table that fits in cache, and every posting is one
lookup into it and one addition: the formula's five array operations per
posting (and a float copy of the counts) become a gather from a small table.

**Twin.** [`TermPostings.relevance`][] is the twin of
`bm25.Query.relevance`: both call the one BM25 term, `bm25.term`, and
its `bm25.length_norm` (here on float64 arrays, elementwise; no second copy
of the formula or of ``K1`` and ``B``), in the same
order (a term the text lacks adds exactly 0.0 where the per-entry path adds
nothing), so every position gets the per-entry value's exact bits
(``tests/unit/test_twins.py`` compares them on generated text). The pair
table computes each share with the same operations on the same two
numbers, so its entries are the per-position values' exact bits.

**What counts as the corpus.** Every text the store holds (active or not,
always-scope or not, whatever a query's visibility): the statistics of a
store, as a search engine keeps them, not of one call's candidates.
"""

from __future__ import annotations

import array
import itertools
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .batch import Codes, TermCoder, Vocabulary
from .bm25 import Query, WordIndex, _counts, length_norm, term
from .words import Analyzer, cache_key

__all__ = ["TermPostings"]


class TermPostings:
    """Term -> (positions, counts) of a store's texts, their lengths, and
    their [`WordIndex`][]; see the module docstring.

    Args:
        analyzer: how texts become terms (the scorer's).
        columns: keep the postings (numpy installed); False keeps only the
            document frequencies, for the per-entry path.
        vocabulary: the token ids to share with another reader of the same
            texts (a [`MemoryIndex`][poolsplit_adapters.index.MemoryIndex]'s word codes).

    Example:
        >>> postings = TermPostings(Analyzer())
        >>> postings.add(0, ["Refunds are rounded down", "The staging gate"])
        >>> query = postings.corpus.query("refund")
        >>> [round(float(r), 4) for r in postings.relevance(query, 2)]
        [0.4202, 0.0]
    """

    def __init__(self, analyzer: Analyzer, *, columns: bool = True, vocabulary: Optional[Vocabulary] = None) -> None:
        self.analyzer = analyzer
        self.corpus = WordIndex(analyzer)
        self.columns = columns
        self._key = cache_key(analyzer)
        self._codes = Codes()
        self._vocabulary = vocabulary
        self._coder = TermCoder(analyzer, self._codes, vocabulary)
        self._terms: List[str] = []  # code -> term
        self._positions: List[array.array[int]] = []
        self._pairs: List[array.array[int]] = []  # per term: the (count, length) code of each posting
        self._lengths = array.array("i")
        # (count, length) code -> its count and its length; count << 32 | length -> code.
        self._pair_count = array.array("i")
        self._pair_length = array.array("i")
        self._pair_codes: Dict[int, int] = {}
        # Positions re-read in place: their arrays still list the old terms;
        # the override (term counts, length) wins.
        self._overrides: Dict[int, Mapping[str, int]] = {}

    def add(self, start: int, texts: Sequence[str], ids: Any = None) -> None:
        """Count ``texts[k]`` as the document at position ``start + k``
        (positions from ``start`` are new, in order). ``ids``: the texts'
        tokens as this postings' vocabulary coded them, when the caller split
        them already (see `code`)."""
        if not self.columns:
            self.corpus.add_many(texts)
        elif ids is not None:
            frequencies, total = self._post(start, texts, ids)
            self.corpus.add_counted(texts, total, frequencies)
        else:
            self._post_all(start, texts)

    def load(self, texts: Sequence[Optional[str]]) -> None:
        """Count every text (None: a removed position, empty) as the
        documents at positions 0.. of empty postings, each text analysed
        once for the statistics and the postings alike (an index building
        them for a store it already holds)."""
        if not self.columns:
            self.corpus.add_many([text for text in texts if text is not None])
            return
        self._post_all(0, texts)

    def _post_all(self, start: int, texts: Sequence[Optional[str]], counted: bool = True) -> None:
        """Post ``texts`` at positions from ``start`` and, unless the corpus
        holds them already (``counted`` False), count the alive ones in it;
        a chunk at a time: each chunk's sort is small and no analysis of
        the whole store is held at once."""
        for first in range(0, len(texts), _CHUNK):
            chunk = texts[first : first + _CHUNK]
            frequencies, total = self._post(start + first, chunk)
            if counted:
                self.corpus.add_counted([text for text in chunk if text is not None], total, frequencies)

    def _post(self, start: int, texts: Sequence[Optional[str]], ids: Any = None) -> Tuple[Dict[str, int], int]:
        """Postings of ``texts`` at positions ``start``... (None: empty), how
        many of them hold each term (the document frequencies, read from the
        postings' (term, text) keys: no set per text) and their total
        length in terms."""
        import numpy as np

        codes = self._codes
        known = len(codes)
        terms, holders, lengths = self._coder.code(texts, ids)
        self._lengths.frombytes(lengths.tobytes())
        for _ in range(len(codes) - known):
            self._positions.append(array.array("i"))
            self._pairs.append(array.array("i"))
        # code -> term for the new codes: the last ones in the dict's (insertion) order.
        self._terms.extend(list(itertools.islice(reversed(codes), len(codes) - len(self._terms)))[::-1])
        if not len(terms):
            return {}, 0
        # One sort of (term, text) keys counts each term in each text, grouped
        # by term with the texts ascending, as the posting arrays are kept.
        keys, counts = np.unique((terms << 32) | holders, return_counts=True)
        flat, offsets = keys >> 32, (keys & 0xFFFFFFFF).astype(np.int32)
        pairs = self._pair_code(counts.astype(np.int32), lengths[offsets])
        positions = offsets + np.int32(start)
        bounds = (np.flatnonzero(flat[1:] != flat[:-1]) + 1).tolist()
        frequencies: Dict[str, int] = {}
        for first, end in zip([0, *bounds], [*bounds, len(flat)]):
            term = int(flat[first])
            self._positions[term].frombytes(positions[first:end].tobytes())
            self._pairs[term].frombytes(pairs[first:end].tobytes())
            frequencies[self._terms[term]] = end - first
        return frequencies, len(terms)

    def _pair_code(self, counts: Any, lengths: Any) -> Any:
        """The (count, length) code of each posting (int32), new pairs
        numbered in the order of their first key."""
        import numpy as np

        keys = (counts.astype(np.int64) << 32) | lengths.astype(np.int64)
        distinct, inverse = _distinct(keys, int(counts.max(initial=0)), int(lengths.max(initial=0)))
        known = self._pair_codes
        table = np.empty(len(distinct), dtype=np.int32)
        for n, key in enumerate(distinct.tolist()):
            code = known.get(key)
            if code is None:
                code = known[key] = len(known)
                self._pair_count.append(key >> 32)
                self._pair_length.append(key & 0xFFFFFFFF)
            table[n] = code
        return table[inverse]

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
        self._codes, self._positions, self._pairs, self._terms = Codes(), [], [], []
        self._coder = TermCoder(self.analyzer, self._codes, self._vocabulary)
        self._lengths, self._overrides = array.array("i"), {}
        self._pair_count, self._pair_length, self._pair_codes = array.array("i"), array.array("i"), {}
        if self.columns:
            self._post_all(0, texts, counted=False)

    def relevance(self, query: Query, size: int) -> Any:
        """The normalised BM25 of every position below ``size`` for
        ``query`` (a [`query`][poolsplit_adapters.relevance.WordIndex.query]), as float64; the twin
        of `relevance`."""
        import numpy as np

        total = np.zeros(size, dtype=np.float64)
        if not query.words or query.ceiling <= 0.0 or not self.columns:
            return total
        average = query.average_length
        pair_count = np.frombuffer(self._pair_count, dtype=np.int32)
        pair_counts = pair_count.astype(np.float64)
        # The same operations as the per-position norm below, on each pair's length.
        pair_norm = length_norm(np.frombuffer(self._pair_length, dtype=np.int32).astype(np.float64), average)
        norm: Any = None  # per position, for the words whose counts add up over stems
        overridden = np.fromiter(self._overrides, dtype=np.int64, count=len(self._overrides))
        # Word by word, in the query's order, each position adds its term's
        # share: the per-entry sum's order (a position without the word adds
        # nothing there, as here).
        for weight, variants in zip(query.weights, query.words):
            held = [self._codes[v] for v in variants if v in self._codes]
            if not held:
                continue
            where = _joined(self._positions, held)
            pairs = _joined(self._pairs, held)
            if len(overridden):
                keep = ~np.isin(where, overridden)
                where, pairs = where[keep], pairs[keep]
            if len(held) == 1:
                # Its share per (count, length) pair, then one lookup per posting.
                share = term(weight, pair_counts, pair_norm)
                # One addition per posting, in place (a term lists a position
                # once): ``total[where] += ...`` with a gather and a scatter
                # on either side of it costs three times as much.
                np.add.at(total, where, share[pairs])
                continue
            # Two stems of the word in one text: their counts add up, so the
            # pair no longer names the count; the formula per posting.
            where, inverse = np.unique(where, return_inverse=True)
            count = np.bincount(inverse, weights=pair_count[pairs])
            if norm is None:
                lengths = np.frombuffer(self._lengths, dtype=np.int32)[:size].astype(np.float64)
                norm = length_norm(lengths, average)
            np.add.at(total, where, term(weight, count, norm[where]))
        if len(overridden):
            if norm is None:
                lengths = np.frombuffer(self._lengths, dtype=np.int32)[:size].astype(np.float64)
                norm = length_norm(lengths, average)
            self._overridden(query, overridden[overridden < size], norm, total)
        return total / query.ceiling

    def _overridden(self, query: Query, positions: Any, norm: Any, total: Any) -> None:
        """The sums of the positions re-read in place, from their own term
        counts (the postings still list their old terms), in the same order."""
        import numpy as np

        for position in positions.tolist():
            own = self._overrides[position]
            value = 0.0
            for weight, variants in zip(query.weights, query.words):
                count = float(sum(own.get(variant, 0) for variant in variants))
                if count:
                    value += float(term(weight, np.float64(count), norm[position]))
            total[position] = value


#: Texts analysed and posted at a time.
_CHUNK = 16384


def _joined(arrays: List[array.array[int]], terms: List[int]) -> Any:
    """The int32 postings of ``terms`` one after the other (a view, not a
    copy, for one term)."""
    import numpy as np

    if len(terms) == 1:
        return np.frombuffer(arrays[terms[0]], dtype=np.int32)
    return np.concatenate([np.frombuffer(arrays[t], dtype=np.int32) for t in terms])


def _distinct(keys: Any, most_count: int, most_length: int) -> tuple[Any, Any]:
    """``np.unique(keys, return_inverse=True)`` for (count << 32 | length)
    keys: through a dense table of the batch's counts by lengths when it is
    small (a store's usual case: a few passes over the postings instead of
    sorting them), else by sorting."""
    import numpy as np

    width = most_length + 1
    cells = (most_count + 1) * width
    if cells > 1 << 22:
        return np.unique(keys, return_inverse=True)
    cell = (keys >> 32) * width + (keys & 0xFFFFFFFF)
    seen = np.zeros(cells, dtype=bool)
    seen[cell] = True
    present = np.flatnonzero(seen)
    number = np.zeros(cells, dtype=np.int64)
    number[present] = np.arange(len(present))
    distinct = ((present // width) << 32) | (present % width)
    return distinct, number[cell]
