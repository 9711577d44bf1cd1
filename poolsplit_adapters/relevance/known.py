"""Relevance a vector store already computed, looked up for an entry: the
one rule of every scorer that takes it (`with_known_relevance`,
`with_known_relevance`).

Keys are entry ids. An id that two namespaces of one recall both hold (a
chain of namespaces: a user's own and a shared one) is keyed by
``(namespace label, id)`` instead, for each: keyed by id alone, one entry
took the other's score (the shared namespace's exact match read as
irrelevant because the user's own entry of that id was far from the query).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Tuple, Union

__all__ = ["KnownKey", "known_relevance"]

#: An entry id, or ``(namespace label, id)`` for an id several namespaces hold.
KnownKey = Union[str, Tuple[str, str]]


def known_relevance(known: Mapping[Any, float], entry: Mapping[str, Any]) -> Optional[float]:
    """The relevance ``known`` holds for ``entry``, or None: under
    ``(namespace, id)`` first, then under its id.

    Example:
        >>> known_relevance({("team", "n"): 0.9, "m": 0.2}, {"id": "n", "namespace": "team"})
        0.9
        >>> known_relevance({("team", "n"): 0.9}, {"id": "n", "namespace": "me"}) is None
        True
    """
    if not known:
        return None
    entry_id = entry.get("id")
    if not isinstance(entry_id, str):
        return None
    namespace = entry.get("namespace")
    if isinstance(namespace, str):
        value = known.get((namespace, entry_id))
        if value is not None:
            return value
    return known.get(entry_id)
