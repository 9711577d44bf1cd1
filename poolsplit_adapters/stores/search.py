"""Search across namespaces, for operators only.

Every agent-facing path sees memory through a [`Visibility`][]
 that matches namespaces exactly, so one tenant never
reads another's memory. An operator sometimes must: to find where a wrong
fact came from, or every copy of a secret before forgetting it. This module
is that one explicit door: it reads every namespace and returns the matches
grouped by namespace, so the answer itself shows whose memory each match is.
Nothing in the adapters, the middleware or the memory blocks calls it, and it
must stay that way (``tests/test_store_search.py`` checks that no package
module but the CLI imports it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from ..poolsplit import IsActive, check_entry, default_is_active
from ..relevance.bm25 import WordIndex
from ..relevance.words import Analyzer
from .base import MemoryStore

__all__ = ["SearchHit", "search_all_namespaces"]


@dataclass(frozen=True)
class SearchHit:
    """One matching entry: ``score`` is the share of the query's words it
    contains (in its content or tags), ``matched`` those words as the query
    wrote them (normalised), sorted."""

    entry: Mapping[str, Any]
    score: float
    matched: Tuple[str, ...]


def _text(entry: Mapping[str, Any]) -> str:
    return "%s %s" % (entry["content"], " ".join(entry.get("tags") or ()))


def search_all_namespaces(
    source: Union[MemoryStore, Iterable[Mapping[str, Any]]],
    query: str,
    *,
    limit: Optional[int] = 10,
    include_inactive: bool = False,
    is_active: IsActive = default_is_active,
    analyzer: Optional[Analyzer] = None,
) -> Dict[Optional[str], List[SearchHit]]:
    """Entries of *every* namespace that share a word with ``query``,
    grouped by namespace. Operator-only: never call it on an agent's path.

    Words are the relevance-first scorer's
    ([`Analyzer`][]): letters and digits of
    any script, NFKC and casefolded, stemmed (so "refund" finds "refunds"),
    CJK as character bigrams, stopwords dropped; read from content and tags.
    Within a namespace hits rank by score, then by their BM25 relevance over
    the searched entries (the relevance-first scorer's relevance: rarer
    words and shorter entries first), then id; groups come in name order,
    entries without a namespace (key ``None``) first.

    Args:
        source: a store (its ``entries()`` are read) or entries.
        query: the words to look for.
        limit: hits kept per namespace (None: all).
        include_inactive: also search superseded and inactive entries (for
            audits); by default only what could still load.
        is_active: the activeness predicate (default: the core's).
        analyzer: how texts become words (default ``Analyzer()``, the
            adapters' default scorer's).

    Raises:
        ValueError: ``query`` has no searchable word, or ``limit`` < 0.
        EntryError: a malformed entry (named by position and field).

    Example:
        ```python
        hits = search_all_namespaces(store, "refund rounding")
        for namespace, found in hits.items():
            print(namespace, [h.entry["id"] for h in found])
        ```
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError("limit must be a non-negative int or None, got %r" % (limit,))
    analyzer = analyzer if analyzer is not None else Analyzer()
    wanted = analyzer.query_words(query)
    if not wanted:
        raise ValueError("the query %r has no searchable word (letters or digits, not a stopword)" % query)
    entries = source.entries() if isinstance(source, MemoryStore) else source
    searched: List[Tuple[Mapping[str, Any], str]] = []
    for position, entry in enumerate(entries):
        check_entry(entry, position)
        if include_inactive or is_active(entry):
            searched.append((entry, _text(entry)))
    corpus = WordIndex(analyzer)
    corpus.add_many([text for _, text in searched])
    bm25 = corpus.query(query)
    grouped: Dict[Optional[str], List[Tuple[float, SearchHit]]] = {}
    for entry, text in searched:
        terms = set(analyzer.terms(text))
        matched = tuple(sorted(word for word, variants in wanted if not terms.isdisjoint(variants)))
        if matched:
            hit = SearchHit(entry, len(matched) / len(wanted), matched)
            grouped.setdefault(entry.get("namespace"), []).append((bm25.relevance(text, analyzer), hit))
    ordered: Dict[Optional[str], List[SearchHit]] = {}
    for namespace in sorted(grouped, key=lambda name: (name is not None, name or "")):
        ranked = sorted(grouped[namespace], key=lambda pair: (-pair[1].score, -pair[0], pair[1].entry.get("id") or ""))
        hits = [hit for _, hit in ranked]
        ordered[namespace] = hits if limit is None else hits[:limit]
    return ordered
