"""Search across namespaces, for operators only.

Every agent-facing path sees memory through a :class:`~poolsplit_adapters.
poolsplit.Visibility` that matches namespaces exactly, so one tenant never
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
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Tuple, Union

from ..poolsplit import IsActive, check_entry, default_is_active, significant_words
from .base import MemoryStore

__all__ = ["SearchHit", "search_all_namespaces"]


@dataclass(frozen=True)
class SearchHit:
    """One matching entry: ``score`` is the share of the query's words it
    contains (in its content or tags), ``matched`` those words, sorted."""

    entry: Mapping[str, Any]
    score: float
    matched: Tuple[str, ...]


def _words(entry: Mapping[str, Any]) -> FrozenSet[str]:
    return significant_words(entry["content"] + " " + " ".join(entry.get("tags") or ()))


def search_all_namespaces(
    source: Union[MemoryStore, Iterable[Mapping[str, Any]]],
    query: str,
    *,
    limit: Optional[int] = 10,
    include_inactive: bool = False,
    is_active: IsActive = default_is_active,
) -> Dict[Optional[str], List[SearchHit]]:
    """Entries of *every* namespace that share a word with ``query``,
    grouped by namespace. Operator-only: never call it on an agent's path.

    Words are the core's significant words (lower-cased alphanumeric runs of
    three or more characters, minus stopwords), read from content and tags.
    Within a namespace hits rank by score, then id; groups come in name
    order, entries without a namespace (key ``None``) first.

    Args:
        source: a store (its ``entries()`` are read) or entries.
        query: the words to look for.
        limit: hits kept per namespace (None: all).
        include_inactive: also search superseded and inactive entries (for
            audits); by default only what could still load.
        is_active: the activeness predicate (default: the core's).

    Raises:
        ValueError: ``query`` has no searchable word, or ``limit`` < 0.
        EntryError: a malformed entry (named by position and field).

    Example::

        hits = search_all_namespaces(store, "refund rounding")
        for namespace, found in hits.items():
            print(namespace, [h.entry["id"] for h in found])
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError("limit must be a non-negative int or None, got %r" % (limit,))
    wanted = significant_words(query)
    if not wanted:
        raise ValueError("the query %r has no searchable word (three letters or more, not a stopword)" % query)
    entries = source.entries() if isinstance(source, MemoryStore) else source
    grouped: Dict[Optional[str], List[SearchHit]] = {}
    for position, entry in enumerate(entries):
        check_entry(entry, position)
        if not include_inactive and not is_active(entry):
            continue
        matched = wanted & _words(entry)
        if matched:
            hit = SearchHit(entry, len(matched) / len(wanted), tuple(sorted(matched)))
            grouped.setdefault(entry.get("namespace"), []).append(hit)
    ordered: Dict[Optional[str], List[SearchHit]] = {}
    for namespace in sorted(grouped, key=lambda name: (name is not None, name or "")):
        hits = sorted(grouped[namespace], key=lambda h: (-h.score, h.entry.get("id") or ""))
        ordered[namespace] = hits if limit is None else hits[:limit]
    return ordered
