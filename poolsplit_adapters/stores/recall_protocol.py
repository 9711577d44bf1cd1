"""The one recall protocol: what every store searcher is to its callers,
`RecallSearcher` (searches in, ranked hits per search out, sync and async).

A recall asks a store several searches at once (one per pool, its types
pushed down as a filter; the untyped side search; the always-scope fetch),
each a `Search` in no filter dialect. Each store
answers them its own way: LangGraph's ``PostgresStore`` by our statements on
its tables, its ``InMemoryStore`` from a kept matrix, a LangChain
``VectorStore`` by its own searches (or ours on ``PGVector``), a LlamaIndex
``VectorStoreIndex`` by its retrievers (or ours on ``PGVectorStore``). They
used to have three shapes (a ranked searcher of type searches, a LangChain
document recall, a LlamaIndex index recall), told apart by their callers
with ``isinstance``. Now each implements this protocol, and its callers (the
LangGraph store memory's batches, both frameworks' retrievers) use nothing
else to search: a new store is a new searcher of this protocol.

The three things that differ between frameworks stay the framework's, as
the protocol's type parameters: the query (``QueryT``: a text for a LangGraph
store, a text with its trace for LangChain, a ``QueryBundle`` for LlamaIndex)
and the hit (``HitT``: a ``SearchItem``, a ``(Document, score)`` pair, a
``NodeWithScore``), each carrying the store's score where the store gives
one. What a searcher can do beyond answering is said by its members, never
guessed from its class: which searches it serves (`RecallSearcher.serves`),
the query vector it embedded (`RecallSearcher.query_vector`, which a scorer
in the same vector space takes instead of embedding the message again), the
types its store holds (`RecallSearcher.entry_types`, for ``pools="auto"``).
"""

from __future__ import annotations

from typing import Any, FrozenSet, List, Optional, Protocol, Sequence, TypeVar, runtime_checkable

from ..recall_search import Search

__all__ = ["RecallSearcher", "check_served"]

QueryT = TypeVar("QueryT")
HitT = TypeVar("HitT")


@runtime_checkable
class RecallSearcher(Protocol[QueryT, HitT]):
    """A store's searches of one recall: `run` answers each `Search`
    with the store's hits, best first.

    One call: `prepare` the query once (embedded, where the store searches
    by vector), then `run` the call's searches with it, as many rounds as
    the recall grows (`FillingRecall`): the query is
    never embedded again within the call. `aprepare` and `arun` are the async
    twins (an async store's own connection or the framework's async search;
    a sync store's blocking searches off the event loop).

    Example:
        ```python
        searcher: RecallSearcher[Optional[str], SearchItem] = InMemoryStoreSearch(store)
        query = searcher.prepare("when did checkout deploy?")
        facts = Search("pool:facts", 20, types=("fact",), namespaces=("memories.u1",), pool="facts")
        [found] = searcher.run([facts], query)  # SearchItems, nearest first
        ```
    """

    def serves(self, search: Search) -> bool:
        """Whether `run` answers ``search``: a caller that has another way
        (a LangGraph store's own search) takes that one for the rest; a
        caller without one asks only what is served."""

    def prepare(self, query: QueryT) -> QueryT:
        """``query`` as every search of one call uses it (its vector, when
        the store searches by vector: embedded here, once a call)."""

    async def aprepare(self, query: QueryT) -> QueryT:
        """Async `prepare`."""

    def run(self, searches: Sequence[Search], query: QueryT) -> List[List[HitT]]:
        """Each search's hits, best first (at most its ``k``), with the
        store's score where it gives one; one list per search, in order.

        Raises:
            ValueError: a search this searcher does not serve (`serves`).
        """

    async def arun(self, searches: Sequence[Search], query: QueryT) -> List[List[HitT]]:
        """Async `run`."""

    def query_vector(self, query: QueryT) -> Optional[List[float]]:
        """The vector this searcher searched for ``query`` with (embedded by
        the store's own model), or None (not embedded, or not lately)."""

    def entry_types(self) -> Optional[FrozenSet[str]]:
        """The types the store holds (for ``pools="auto"``) when it can say
        cheaply, else None (the caller plans without them)."""


def check_served(searcher: RecallSearcher[Any, Any], searches: Sequence[Search]) -> None:
    """Refuse, before any search runs, a search ``searcher`` does not
    serve (`RecallSearcher.serves`): answered by the wrong searcher, its
    filter would be dropped or its text ignored, and the hits would be
    wrong without a sign.

    Raises:
        ValueError: naming the search and the searcher.
    """
    for search in searches:
        if not searcher.serves(search):
            raise ValueError("%s does not serve the search %r" % (type(searcher).__name__, search))
