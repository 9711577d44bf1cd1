"""The recall plan's searches over LangChain's ``PGVector``, as our own statements.

Through ``PGVector``'s own search, a filtered search through an HNSW index
looks at the ``hnsw.ef_search`` (40) nearest rows and then filters: a pool
whose types are a small part of the table (one tenant's skills in a shared
table) got a few of its ``fetch_k``, and what came back read as "the store
has nothing more". So each
search of the plan is one statement on the store's own table and session:
the collection looked up inside it, the search's conditions as bound
parameters (`metadata_condition`:
the query vector, types, namespaces, ``k`` and the collection's name are all
parameters, never SQL text), after one statement that sizes the
transaction's HNSW scan
(`hnsw_search_settings`:
``ef_search`` at least ``k``, pgvector's iterative scan on). The retriever
runs the plan's searches at once, each on its own pooled connection (one
statement for the whole plan ran its branches one after another in one
server process: slower on two cores than five at once).

What is kept from ``PGVector``: its distance (``store.distance_strategy``),
its documents (id, text, metadata as stored) and its score (the distance).
The always-scope search has no similarity in it: by collection and metadata
(the JSONB containment PGVector's GIN index answers), in id order.

**A short page is checked, not believed.** A pool search that returns fewer
than ``k`` rows is run again exactly, in the same session (index scans off
for that transaction: no HNSW; a btree index on the filter columns still
serves it), so "the store ran out" in ``notes["recall"]`` is what the table
says. With the iterative scan this happens only when the scan hit
``hnsw.max_scan_tuples`` or the table truly holds fewer: a rare type in a
small tenant.

**A few matching rows are read, not searched for.** A filtered HNSW scan
visits rows until ``k`` match: for a rare type that is thousands of rows.
With the filter index (`install_filter_index`),
each search's statement first reads the keys and distances of its
matching rows through that index, never past
`filter_first_bound`;
when they are at most that many it orders them by distance and reads the
texts of the first ``k`` (exact: its page is never completed), else it
walks the HNSW index as above. One statement, one round trip: the count of
what it read decides which of its two branches runs
(`filter_first_search`). Without the index nothing of this runs. A filter the count
found larger than the bound is remembered by the retriever for a while
(`LargeFilters`): its next
searches skip the count and walk the HNSW index at once.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun as AsyncRun
from langchain_core.callbacks import CallbackManagerForRetrieverRun as SyncRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, PrivateAttr

from ...recall import Search
from ..postgres import (
    LargeFilters,
    exact_search_settings,
    filter_first_search,
    hnsw_search_settings,
    metadata_condition,
    pool_search_bound,
    require_pgvector_session,
)

__all__ = ["PGVectorPlanSearch", "serves_pgvector"]


def serves_pgvector(store: VectorStore) -> bool:
    """Whether ``store`` is LangChain's ``PGVector`` (looked up in
    ``sys.modules``: never imports langchain-postgres)."""
    module = sys.modules.get("langchain_postgres.vectorstores")
    return module is not None and isinstance(store, module.PGVector)


class PGVectorPlanSearch(BaseRetriever):
    """Searches of a recall plan over ``PGVector`` as one retriever run and
    one statement (``UNION ALL`` when there are several; the retriever gives
    each search its own, so traces show each as a child run).

    ``invoke`` returns every search's documents in plan order; `found`
    splits them by search and `scores` holds the store's distance per
    document id (pool searches only, when ``with_scores``).

    Example:
        ```python
        run = PGVectorPlanSearch(store=pgvector, searches=plan.searches(), vector=store.embeddings.embed_query(q))
        run.invoke(q)
        per_search = run.found   # one list per search, plan order
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: VectorStore
    searches: List[Search]
    vector: List[float]
    with_scores: bool = False
    #: The retriever's memory of filters too large to count (the count is
    #: then skipped, see `LargeFilters`);
    #: None: every search counts.
    large_filters: Optional[LargeFilters] = None

    _found: List[List[Document]] = PrivateAttr(default_factory=list)
    _scores: Dict[str, float] = PrivateAttr(default_factory=dict)
    #: Labels of the searches an index scan returned short and an exact scan completed.
    _completed: List[str] = PrivateAttr(default_factory=list)
    #: Labels of the searches read through the filter index and ordered exactly.
    _filtered: List[str] = PrivateAttr(default_factory=list)
    #: The filter-first bound each search's statement was sent with.
    _bounds: Dict[int, Optional[int]] = PrivateAttr(default_factory=dict)

    @property
    def found(self) -> List[List[Document]]:
        """Each search's documents, from the last run."""
        return self._found

    @property
    def scores(self) -> Dict[str, float]:
        """Document id -> the store's distance (``with_scores``), from the last run."""
        return self._scores

    @property
    def completed(self) -> List[str]:
        """The searches the index scan returned short and an exact scan then ran again, from the last run."""
        return self._completed

    @property
    def filtered(self) -> List[str]:
        """The pool searches whose matching rows were few enough to be read
        through the filter index and ordered exactly (no HNSW scan), from the
        last run; a search that found nothing is not listed."""
        return self._filtered

    # -- the statement ----------------------------------------------------------------

    def _statement(self, positions: Sequence[int], index_rows: Optional[float] = None) -> Any:
        """The statement for the searches at ``positions`` (``UNION ALL`` of
        their branches) and its parameters: the query vector and each
        filter-first bound (`filter_first_bound`,
        from ``index_rows``, the filter index's size: None when it is not there)."""
        import sqlalchemy

        store: Any = self.store
        tables = (store.EmbeddingStore, store.CollectionStore, store.collection_name)
        distance = store.distance_strategy.__name__  # cosine_distance, l2_distance, max_inner_product
        params: Dict[str, Any] = {QUERY_VECTOR: self.vector}
        branches = []
        for i in positions:
            search = self.searches[i]
            bound = self._bounds[i] = pool_search_bound(search, index_rows, self.large_filters)
            branches.append(search_branch(tables, distance, i, search, bound is not None))
            if bound is not None:
                params[bound_name(i)] = bound
        statement = branches[0] if len(branches) == 1 else sqlalchemy.union_all(*branches)
        return statement, params

    def _ranked(self) -> bool:
        """Whether a search here is ranked by distance (the always fetch is not)."""
        return any(not s.always for s in self.searches)

    def _largest_k(self) -> int:
        return max((s.k for s in self.searches if not s.always), default=1)

    # -- results ------------------------------------------------------------------------

    def _short(self, found: List[List[Any]]) -> List[int]:
        """The pool searches the HNSW scan returned short (the untyped one is
        a side search: its pool's typed search says whether the pool is
        full; a page read through the filter index is exact already)."""
        return [
            i
            for i, s in enumerate(self.searches)
            if not (s.always or s.untyped) and len(found[i]) < s.k and not (found[i] and found[i][0].exact)
        ]

    @staticmethod
    def _split(rows: Sequence[Any], found: List[List[Any]], positions: Sequence[int]) -> None:
        for i in positions:
            found[i] = []
        for row in rows:
            found[row.search].append(row)
        for i in positions:  # relaxed_order returns rows nearly in order: put them in order
            found[i].sort(key=lambda r: (r.distance is None, r.distance or 0.0, r.id))

    def _finish(self, found: List[List[Any]]) -> List[Document]:
        self._found, self._scores = [], {}
        exact = [bool(rows) and bool(rows[0].exact) for rows in found]  # read through the filter index
        if self.large_filters is not None:
            for i, rows in enumerate(found):
                self.large_filters.saw(self.searches[i], self._bounds.get(i), found=len(rows), exact=exact[i])
        self._filtered = [s.label for s, read in zip(self.searches, exact) if read and not s.always]
        for search, rows in zip(self.searches, found):
            docs = [Document(id=str(r.id), page_content=r.document, metadata=r.cmetadata) for r in rows]
            if self.with_scores and not search.always:
                self._scores.update((str(r.id), float(r.distance)) for r in rows)
            self._found.append(docs)
        return [doc for docs in self._found for doc in docs]

    def _get_relevant_documents(self, query: str, *, run_manager: SyncRun) -> List[Document]:
        store: Any = self.store
        everything = list(range(len(self.searches)))
        found: List[List[Any]] = [[] for _ in self.searches]
        with store._make_sync_session() as session:
            index_rows = None
            if self._ranked():
                index_rows = session.execute(hnsw_search_settings(self._largest_k(), filter_index=True)).one()[-1]
            connection = session.connection()
            self._split(connection.execute(*self._statement(everything, index_rows)).all(), found, everything)
            session.commit()
            short = self._short(found)
            if short:
                connection = session.connection()
                connection.execute(exact_search_settings())
                self._split(connection.execute(*self._statement(short, index_rows)).all(), found, short)
                session.commit()
        self._completed = [self.searches[i].label for i in short]
        return self._finish(found)

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncRun) -> List[Document]:
        store: Any = self.store
        everything = list(range(len(self.searches)))
        found: List[List[Any]] = [[] for _ in self.searches]
        async with store._make_async_session() as session:
            if not hasattr(store, "EmbeddingStore"):  # an async PGVector sets its tables up on first use
                await store.aget_collection(session)
            index_rows = None
            if self._ranked():
                settings = hnsw_search_settings(self._largest_k(), filter_index=True)
                index_rows = (await session.execute(settings)).one()[-1]
            connection = await session.connection()
            self._split((await connection.execute(*self._statement(everything, index_rows))).all(), found, everything)
            await session.commit()
            short = self._short(found)
            if short:
                connection = await session.connection()
                await connection.execute(exact_search_settings())
                self._split((await connection.execute(*self._statement(short, index_rows))).all(), found, short)
                await session.commit()
        self._completed = [self.searches[i].label for i in short]
        return self._finish(found)


#: The query vector's parameter name in every statement here.
QUERY_VECTOR = "query_vector"


def bound_name(position: int) -> str:
    """The parameter holding the filter-first bound of the search at ``position``."""
    return "filter_first_bound_%d" % position


@functools.lru_cache(maxsize=512)
def search_branch(
    tables: Tuple[Any, Any, str], distance: str, position: int, search: Search, filter_first_on: bool
) -> Any:
    """One search's statement, built once per shape and kept (building and
    hashing one cost milliseconds of Python per search per call): every
    value that changes between calls (the query vector, the filter-first
    bound) is a named parameter, everything else is a bound parameter the
    statement carries. ``tables``: ``PGVector``'s embedding and collection
    tables and the collection's name; ``distance``: the store's distance
    method on the vector column; ``filter_first_on``: the filter index is
    there, so a filter matching few rows is read first and ordered exactly
    (`filter_first_bound`)."""
    import sqlalchemy

    rows, collections, name = tables
    collection = sqlalchemy.select(collections.uuid).where(collections.name == name).scalar_subquery()
    # "No type" as PGVector's own dict filter says it (it cannot): no type
    # condition, the untyped entries among the nearest of any type. Said
    # exactly without the filter index, a store whose entries all have a
    # type (the advice) paid a full scan per call to find none; the index
    # answers it exactly for the cost of a probe.
    condition = dataclasses.replace(search, untyped=False) if search.untyped and not filter_first_on else search
    where = [rows.collection_id == collection, metadata_condition(rows.cmetadata, condition)]
    columns = [sqlalchemy.literal(position).label("search"), rows.id, rows.document, rows.cmetadata]
    if search.always:
        # The containment PGVector's GIN index on cmetadata answers.
        where.append(rows.cmetadata.contains({"scope": "always"}))
        nothing = sqlalchemy.cast(sqlalchemy.null(), sqlalchemy.Float).label("distance")
        exact = sqlalchemy.true().label("exact")
        return sqlalchemy.select(*columns, nothing, exact).where(*where).order_by(rows.id).limit(search.k)
    vector = sqlalchemy.bindparam(QUERY_VECTOR, type_=rows.embedding.type)
    order = getattr(rows.embedding, distance)(vector)
    by_index = sqlalchemy.select(*columns, order.label("distance"), sqlalchemy.false().label("exact"))
    if not filter_first_on:
        return by_index.where(*where).order_by(order).limit(search.k)
    bound = sqlalchemy.bindparam(bound_name(position), type_=sqlalchemy.Integer)
    matching = sqlalchemy.select(*columns, order.label("distance")).where(*where)
    by_index = by_index.where(*where).order_by(order).limit(search.k)
    return filter_first_search(matching, by_index, bound, search.k, exact="exact", name=str(position))


def plan_search(
    store: VectorStore,
    searches: Sequence[Search],
    vector: Optional[List[float]],
    with_scores: bool,
    *,
    asynchronous: bool,
    large_filters: Optional[LargeFilters] = None,
) -> Optional[PGVectorPlanSearch]:
    """The one-statement round for ``store`` (a ``PGVector`` searched by
    vector, in the mode it was made for), else None: a ``PGVector`` in the
    other mode then raises its own error through its own search."""
    if vector is None or not serves_pgvector(store):
        return None
    if bool(getattr(store, "async_mode", False)) != asynchronous:
        return None
    require_pgvector_session(store, asynchronous=asynchronous)
    return PGVectorPlanSearch(
        store=store, searches=list(searches), vector=vector, with_scores=with_scores, large_filters=large_filters
    )
