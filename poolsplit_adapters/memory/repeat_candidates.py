"""Which stored entries a write could repeat, found without reading the store.

The duplicate check ([`DuplicateFinder`][])
compares a write with the stored entries of its namespace and type. Built
afresh for each write from every such entry, it costs what the namespace
costs (12 s of a 12.4 s write at 100k memories on ``PostgresStore``), though
only a handful of entries can ever match. `RepeatCandidates` is kept
beside an index that already follows the store (the agent middleware's
prepared recall) and names, for a new entry, a **superset** of the stored
entries the word rule could match; a finder over just those (in the store's
order) gives the same verdict as one over all of them.

Exact, not approximate: nothing outside the set can match, because

* an **exact** repeat has the same bucket and normalised text: one map lookup;
* a **near** repeat by words lives on the same shelf as the candidate (the
  same bucket, values, identifiers, negations, linkers and qualifiers: the
  finder compares nothing else), and two texts of ``n`` and ``m`` content
  words match only when they share at least
  `shared_needed` ``(n, m)`` of
  them (the word rule's own comparisons: the Jaccard floor, the threshold,
  and below ``MIN_NEAR_WORDS`` words the same words only). Order every
  text's words by one fixed order; the first word two texts share has at
  least ``s - 1`` shared words after it in each, so it is among the first
  ``n - s + 1`` words of one and ``m - s + 1`` of the other (prefix
  filtering). A stored entry of ``m`` words is posted under its first
  ``m - t + 1``, ``t`` the least ``shared_needed(k, m)`` over every partner
  size ``k``; a candidate of ``n`` words probes, among the stored entries of
  each size ``m``, its first ``n - shared_needed(n, m) + 1``. Same sizes at
  the 0.9 threshold need every word shared, so a probe is one word: the
  candidate's rarest.

  The fixed order is the words' document frequency when the index was built
  (rarest first, then the word; a word first seen later counts 0): any fixed
  order keeps the argument, and this one keeps common words ("user",
  "assistant" in every episode) out of the prefixes, so a probe reads the
  entries sharing a *rare* word, not the namespace.

The set holds inactive entries too (activity can change with the clock, the
finder decides it at write time) and entries whose content is not a string
(the finder refuses them, as a full scan would). Cosine near duplicates
(``embed=``) are not covered: a cosine can be high without a shared word.

Example:
    >>> c = RepeatCandidates()
    >>> c.put("n1", {"type": "note", "content": "User prefers dark mode in the editor"})
    >>> c.put("n2", {"type": "note", "content": "The deploy runs on Fridays"})
    >>> sorted(c.candidates({"type": "note", "content": "Note: user prefers dark mode in the editor"}))
    ['n1']
    >>> c.drop("n1"); c.candidates({"type": "note", "content": "user prefers dark mode in the editor"})
    set()
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any, Dict, FrozenSet, Hashable, Iterable, List, Mapping, Optional, Set, Tuple

from .duplicates import OVERLAP_THRESHOLD, _values_in_order, bucket, content_words, normalise_text, shared_needed

__all__ = ["RepeatCandidates"]

_Row = Tuple[Hashable, Optional[Hashable], List[Tuple[Hashable, int, str]]]  # (exact key, shelf if posted, postings)


class RepeatCandidates:
    """The stored entries, by key, that a new entry could repeat under the
    word rule: an exact, superset answer (see the module).

    Args:
        entries: ``(key, entry)`` pairs to start from; their words fix the
            order prefixes are taken in.
        threshold: the finder's word-overlap threshold (default
            `OVERLAP_THRESHOLD`).

    ``put`` / ``drop`` keep it in step with the store (a rewrite is a
    ``drop`` then a ``put``); ``candidates`` only reads.

    Example:
        >>> c = RepeatCandidates([("a", {"content": "Deploys go through the release checklist"})])
        >>> c.candidates({"content": "deploys go through the release checklist!"})
        {'a'}
    """

    def __init__(
        self, entries: Iterable[Tuple[Hashable, Mapping[str, Any]]] = (), *, threshold: float = OVERLAP_THRESHOLD
    ) -> None:
        self.threshold = threshold
        self._exact: Dict[Hashable, Set[Hashable]] = {}
        self._postings: Dict[Hashable, Set[Hashable]] = {}
        self._sizes: Dict[Hashable, Counter[int]] = {}  # shelf -> how many posted entries of each word count
        self._malformed: Set[Hashable] = set()
        self._rows: Dict[Hashable, _Row] = {}
        given = [(key, entry, _text(entry)) for key, entry in entries]
        words = [content_words(text) if text is not None else frozenset() for _, _, text in given]
        frequency: Counter[str] = Counter()
        for found in words:
            frequency.update(found)
        self._rank: Dict[str, int] = dict(frequency)  # fixed from here on
        for (key, entry, text), found in zip(given, words):
            self._put(key, entry, text, found)

    def __len__(self) -> int:
        return len(self._rows) + len(self._malformed)

    def __repr__(self) -> str:
        return "RepeatCandidates(%d entries)" % len(self)

    def _first(self, words: FrozenSet[str], count: int) -> List[str]:
        """The first ``count`` of ``words`` in the fixed order."""
        return sorted(words, key=lambda w: (self._rank.get(w, 0), w))[:count]

    def _shelf(self, entry: Mapping[str, Any], text: str) -> Hashable:
        return bucket(entry), _values_in_order(text)

    def put(self, key: Hashable, entry: Mapping[str, Any]) -> None:
        """Record a stored entry under ``key`` (replacing what ``key`` held)."""
        text = _text(entry)
        self._put(key, entry, text, content_words(text) if text is not None else frozenset())

    def _put(self, key: Hashable, entry: Mapping[str, Any], text: Optional[str], words: FrozenSet[str]) -> None:
        self.drop(key)
        if text is None:
            self._malformed.add(key)
            return
        exact = (bucket(entry), normalise_text(text))
        self._exact.setdefault(exact, set()).add(key)
        shelf = self._shelf(entry, text)
        posted = [(shelf, len(words), w) for w in self._first(words, _posted_prefix(len(words), self.threshold))]
        for where in posted:
            self._postings.setdefault(where, set()).add(key)
        if posted:
            self._sizes.setdefault(shelf, Counter())[len(words)] += 1
        self._rows[key] = (exact, shelf if posted else None, posted)

    def drop(self, key: Hashable) -> None:
        """Forget ``key`` (deleted, or about to be rewritten); unknown keys are ignored."""
        self._malformed.discard(key)
        row = self._rows.pop(key, None)
        if row is None:
            return
        exact, shelf, posted = row
        for table, where in [(self._exact, exact)] + [(self._postings, p) for p in posted]:
            found = table[where]
            found.discard(key)
            if not found:
                del table[where]
        if shelf is not None:  # posted: under its word count
            sizes, size = self._sizes[shelf], posted[0][1]
            sizes[size] -= 1
            if sizes[size] <= 0:
                del sizes[size]
            if not sizes:
                del self._sizes[shelf]

    def candidates(self, entry: Mapping[str, Any]) -> Set[Hashable]:
        """The keys of every stored entry ``entry`` could repeat, exactly or
        nearly by words (a superset: the finder decides), and of every stored
        entry whose content is not a string."""
        found = set(self._malformed)
        text = _text(entry)
        if text is None:
            return found
        found |= self._exact.get((bucket(entry), normalise_text(text)), set())
        words = content_words(text)
        shelf = self._shelf(entry, text)
        for size in self._sizes.get(shelf, ()):
            need = shared_needed(len(words), size, self.threshold)
            if need is None:
                continue
            for word in self._first(words, len(words) - need + 1):
                found |= self._postings.get((shelf, size, word), set())
        return found


@functools.lru_cache(maxsize=4096)
def _posted_prefix(size: int, threshold: float) -> int:
    """How many of a stored entry's ``size`` words it is posted under: all
    but the fewest any partner must share, plus one (0: it can match
    nothing near)."""
    needs = [shared_needed(k, size, threshold) for k in range(1, 3 * size + 2)]
    least = min((t for t in needs if t is not None), default=None)
    return 0 if least is None else size - least + 1


def _text(entry: Any) -> Optional[str]:
    if not isinstance(entry, Mapping):
        return None
    text = entry.get("content")
    return text if isinstance(text, str) else None
