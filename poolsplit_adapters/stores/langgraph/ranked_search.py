"""A LangGraph store's ranked searches as the recall protocol has them:
the form they take (`RankedSearch`), which plan searches take it (`ranks`),
and what both LangGraph store searchers are to the protocol, written once
(`LangGraphSearcher`).

A LangGraph store answers a ranked search of one namespace (its tuple,
matched exactly) filtered by one type at most; the recall protocol speaks in
`Search`es. Here is the one translation between the two, below both
searchers (`postgres_store_search`, `memory_store_search`), so neither
reaches into the other's module for it.
"""

from __future__ import annotations

import collections
import functools
import threading
from collections.abc import Mapping, Sequence
from typing import FrozenSet, List, Optional, Tuple

from langgraph.store.base import SearchItem

from ...recall import Search
from ..recall_protocol import RecallSearcher, check_served
from .namespaces import namespace_label

__all__ = ["RANKED", "LangGraphSearcher", "QueryVectors", "RankedSearch", "StoreSearcher", "ranks"]


#: The label of a `RankedSearch` (traces and errors name it).
RANKED = "ranked"


class RankedSearch(Search):
    """A `Search` as a LangGraph store's ranked search asks it: the
    ``limit`` items of one ``namespace`` (a LangGraph tuple) nearest the
    query, of one ``type`` (``untyped``: of none; both unset: of any), for its
    own ``query`` text or the run's. Which plan searches take this form:
    `ranks`; any such `Search` reads as one (`of`).

    Example:
        ```python
        RankedSearch(("memories", "u1"), 20, type="fact")
        ```
    """

    def __init__(
        self,
        namespace: Sequence[str],
        limit: int,
        type: Optional[str] = None,
        untyped: bool = False,
        query: Optional[str] = None,
    ) -> None:
        types = None if type is None else (type,)
        label = namespace_label(tuple(namespace))
        super().__init__(RANKED, limit, types=types, untyped=untyped, namespaces=(label,), query=query)

    @classmethod
    def of(cls, search: Search) -> RankedSearch:
        """``search`` in this form (one it `ranks`; the namespace label
        read back as its tuple, the one mapping of
        `namespace_label`)."""
        if not ranks(search):
            raise ValueError("a LangGraph ranked search has one namespace and at most one type, not %r" % (search,))
        kind = search.types[0] if search.types else None
        return cls(
            tuple(search.namespaces[0].split(".")), search.k, type=kind, untyped=search.untyped, query=search.query
        )

    @functools.cached_property
    def namespace(self) -> Tuple[str, ...]:
        """The namespace searched, as LangGraph's tuple (matched exactly)."""
        return tuple(self.namespaces[0].split("."))

    @property
    def limit(self) -> int:
        """The most items it returns (its ``k``)."""
        return self.k

    @property
    def type(self) -> Optional[str]:
        """The one type searched (None: any, or none with ``untyped``)."""
        return self.types[0] if self.types else None


def ranks(search: Search) -> bool:
    """Whether a LangGraph store's ranked search can say ``search``: one
    namespace, at most one type, not the always-scope fetch (corrections
    are read by filter, never by similarity)."""
    return len(search.namespaces) == 1 and not search.always and (search.types is None or len(search.types) == 1)


class QueryVectors:
    """The query vectors a ranked searcher embedded lately, by text (the
    last `MOST`): the middleware's scorer, when it embeds with the
    store's own model, takes the recall's vector instead of embedding the
    message a second time (one query embedding per call).

    Example:
        ```python
        vectors = QueryVectors()
        vectors.keep({"refund rounding": [0.1, 0.3]})
        vectors.get("refund rounding")   # [0.1, 0.3]
        ```
    """

    #: The most texts kept (the oldest goes first).
    MOST = 64

    def __init__(self) -> None:
        self._kept: collections.OrderedDict[str, List[float]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def keep(self, vectors: Mapping[str, Sequence[float]]) -> None:
        """Remember each text's vector."""
        with self._lock:
            for text, vector in vectors.items():
                self._kept[text] = [float(x) for x in vector]
                self._kept.move_to_end(text)
            while len(self._kept) > self.MOST:
                self._kept.popitem(last=False)

    def get(self, text: str) -> Optional[List[float]]:
        """``text``'s vector if a run embedded it lately, else None."""
        with self._lock:
            return self._kept.get(text)


#: A LangGraph store's searcher, as its callers type it: the recall
#: protocol over a query text (None: each search's own) and the store's items.
StoreSearcher = RecallSearcher[Optional[str], SearchItem]


class LangGraphSearcher(RecallSearcher[Optional[str], SearchItem]):
    """What both LangGraph store searchers (`PostgresStoreSearch`,
    `InMemoryStoreSearch`) are to the recall protocol
    (`RecallSearcher`), written once: they serve the
    searches a LangGraph store's ranked search can say (`ranks`) up to their
    `most` items, take them in that form (`RankedSearch`), have no query to
    prepare (a run embeds each distinct text of its searches, a write
    batch's near-duplicate searches each their own, in one call) and keep
    the vectors they embedded (`QueryVectors`)."""

    #: The largest ``limit`` served (a larger one is the store's own search).
    most: int
    #: The query vectors its runs embedded, by text.
    vectors: QueryVectors
    #: How each search of the last run was answered (for tests and benchmarks).
    last_paths: List[str]

    def serves(self, search: Search) -> bool:
        """Whether `run` answers ``search``: one namespace, at most one type
        (`ranks`), at most `most` items."""
        return ranks(search) and search.k <= self.most

    def prepare(self, query: Optional[str]) -> Optional[str]:
        """``query`` unchanged: a run embeds each distinct text of its searches."""
        return query

    async def aprepare(self, query: Optional[str]) -> Optional[str]:
        """Async `prepare` (unchanged too)."""
        return query

    def query_vector(self, query: Optional[str]) -> Optional[List[float]]:
        """The vector a recent run searched ``query`` with (`vectors`)."""
        return None if query is None else self.vectors.get(query)

    def entry_types(self) -> Optional[FrozenSet[str]]:
        """None: the store's types are not listed here (its memory plans its own pools)."""
        return None

    def _ranked(self, searches: Sequence[Search]) -> List[RankedSearch]:
        """The run's searches in their LangGraph form, each one served (`serves`) first."""
        check_served(self, searches)
        return [RankedSearch.of(search) for search in searches]

    def _texts(self, searches: Sequence[RankedSearch], query: Optional[str]) -> List[str]:
        """Each search's query text: its own, else the run's ``query``."""
        texts = [s.query if s.query is not None else query for s in searches]
        if any(t is None for t in texts):
            raise ValueError("%s.run: a search without a query, and no query for the run" % type(self).__name__)
        return [str(t) for t in texts]
