"""Which stored entries a write could repeat, found without reading the store.

The duplicate check (:class:`~poolsplit_adapters.memory.duplicates.DuplicateFinder`)
compares a write with the stored entries of its namespace and type. Built
afresh for each write from every such entry, it costs what the namespace
costs (12 s of a 12.4 s write at 100k memories on ``PostgresStore``), though
only a handful of entries can ever match. :class:`RepeatCandidates` is kept
beside an index that already follows the store (the agent middleware's
prepared recall) and names, for a new entry, a **superset** of the stored
entries the word rule could match; a finder over just those (in the store's
order) gives the same verdict as one over all of them.

Exact, not approximate: nothing outside the set can match, because

* an **exact** repeat has the same bucket and normalised text: one map lookup;
* a **near** repeat by words lives on the same shelf as the candidate (the
  same bucket, values, identifiers, negations, linkers and qualifiers: the
  finder compares nothing else), and either

  - one of the two has fewer than
    :data:`~poolsplit_adapters.memory.duplicates.MIN_NEAR_WORDS` content
    words: then only the same words in the same order match, so both have
    the same (non-empty) word set: one map lookup by that set; or
  - both have at least that many, and they share ``s`` content words with
    ``s >= JACCARD_FLOOR * |a ∪ b|`` (else the overlap is 0), so ``s >=
    ceil(JACCARD_FLOOR * |a|)`` and ``s >= ceil(JACCARD_FLOOR * |b|)``.
    Order every text's words by one fixed order; the first shared word
    has at least ``s - 1`` shared words after it in each text, so it is
    among the first ``|x| - ceil(JACCARD_FLOOR * |x|) + 1`` words of each
    (prefix filtering). Each stored entry is posted under its prefix only,
    and a candidate probes its own prefix: every possible match is found.

  The fixed order is the words' document frequency when the index was built
  (rarest first, then the word; a word first seen later counts 0): any fixed
  order keeps the argument, and this one keeps common words ("user",
  "assistant" in every episode) out of the prefixes, so a probe reads the
  entries sharing a *rare* word, not the namespace.

The set holds inactive entries too (activity can change with the clock, the
finder decides it at write time) and entries whose content is not a string
(the finder refuses them, as a full scan would). Cosine near duplicates
(``embed=``) are not covered: a cosine can be high without a shared word.

Example::

    >>> c = RepeatCandidates()
    >>> c.put("n1", {"type": "note", "content": "User prefers dark mode in the editor"})
    >>> c.put("n2", {"type": "note", "content": "The deploy runs on Fridays"})
    >>> sorted(c.candidates({"type": "note", "content": "Note: user prefers dark mode in the editor"}))
    ['n1']
    >>> c.drop("n1"); c.candidates({"type": "note", "content": "user prefers dark mode in the editor"})
    set()
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Dict, FrozenSet, Hashable, Iterable, List, Mapping, Optional, Set, Tuple

from .duplicates import JACCARD_FLOOR, MIN_NEAR_WORDS, _values_in_order, bucket, content_words, normalise_text

__all__ = ["RepeatCandidates"]

_Row = Tuple[Hashable, Optional[Hashable], List[Hashable]]  # (exact key, short key, posting keys)


class RepeatCandidates:
    """The stored entries, by key, that a new entry could repeat under the
    word rule: an exact, superset answer (see the module).

    Args:
        entries: ``(key, entry)`` pairs to start from; their words fix the
            order prefixes are taken in.

    ``put`` / ``drop`` keep it in step with the store (a rewrite is a
    ``drop`` then a ``put``); ``candidates`` only reads.

    Example::

        >>> c = RepeatCandidates([("a", {"content": "Deploys go through the release checklist"})])
        >>> c.candidates({"content": "deploys go through the release checklist!"})
        {'a'}
    """

    def __init__(self, entries: Iterable[Tuple[Hashable, Mapping[str, Any]]] = ()) -> None:
        given = list(entries)
        frequency: Counter[str] = Counter()
        for _, entry in given:
            text = _text(entry)
            if text is not None:
                frequency.update(content_words(text))
        self._rank: Dict[str, int] = dict(frequency)
        self._exact: Dict[Hashable, Set[Hashable]] = {}
        self._short: Dict[Hashable, Set[Hashable]] = {}
        self._postings: Dict[Hashable, Set[Hashable]] = {}
        self._malformed: Set[Hashable] = set()
        self._rows: Dict[Hashable, _Row] = {}
        for key, entry in given:
            self.put(key, entry)

    def __len__(self) -> int:
        return len(self._rows) + len(self._malformed)

    def __repr__(self) -> str:
        return "RepeatCandidates(%d entries)" % len(self)

    def _prefix(self, words: FrozenSet[str]) -> List[str]:
        """The first ``|words| - ceil(JACCARD_FLOOR * |words|) + 1`` words in the fixed order."""
        keep = len(words) - max(1, math.ceil(JACCARD_FLOOR * len(words))) + 1
        return sorted(words, key=lambda w: (self._rank.get(w, 0), w))[:keep]

    def _keys(self, entry: Mapping[str, Any], text: str) -> Tuple[Hashable, Optional[Hashable], List[Hashable]]:
        where = bucket(entry)
        shelf = (where, _values_in_order(text))
        words = content_words(text)
        exact = (where, normalise_text(text))
        if not words:
            return exact, None, []
        if len(words) < MIN_NEAR_WORDS:
            return exact, (shelf, words), []
        return exact, None, [(shelf, word) for word in self._prefix(words)]

    def put(self, key: Hashable, entry: Mapping[str, Any]) -> None:
        """Record a stored entry under ``key`` (replacing what ``key`` held)."""
        self.drop(key)
        text = _text(entry)
        if text is None:
            self._malformed.add(key)
            return
        exact, short, posted = self._keys(entry, text)
        self._exact.setdefault(exact, set()).add(key)
        if short is not None:
            self._short.setdefault(short, set()).add(key)
        for where in posted:
            self._postings.setdefault(where, set()).add(key)
        self._rows[key] = (exact, short, posted)

    def drop(self, key: Hashable) -> None:
        """Forget ``key`` (deleted, or about to be rewritten); unknown keys are ignored."""
        self._malformed.discard(key)
        row = self._rows.pop(key, None)
        if row is None:
            return
        exact, short, posted = row
        for table, where in (
            [(self._exact, exact)]
            + [(self._short, short)] * (short is not None)
            + [(self._postings, p) for p in posted]
        ):
            found = table[where]
            found.discard(key)
            if not found:
                del table[where]

    def candidates(self, entry: Mapping[str, Any]) -> Set[Hashable]:
        """The keys of every stored entry ``entry`` could repeat, exactly or
        nearly by words (a superset: the finder decides), and of every stored
        entry whose content is not a string."""
        found = set(self._malformed)
        text = _text(entry)
        if text is None:
            return found
        exact, short, _ = self._keys(entry, text)
        found |= self._exact.get(exact, set())
        if short is not None:
            return found | self._short.get(short, set())
        words = content_words(text)
        if len(words) >= MIN_NEAR_WORDS:
            shelf = (bucket(entry), _values_in_order(text))
            for word in self._prefix(words):
                found |= self._postings.get((shelf, word), set())
        return found


def _text(entry: Any) -> Optional[str]:
    if not isinstance(entry, Mapping):
        return None
    text = entry.get("content")
    return text if isinstance(text, str) else None
