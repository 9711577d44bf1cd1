"""The recall plan's searches over LangChain's ``PGVector``, as our own statements.

Through ``PGVector``'s own search, a filtered search through an HNSW index
looks at the ``hnsw.ef_search`` (40) nearest rows and then filters: a pool
whose types are a small part of the table (one tenant's skills in a shared
table) got a few of its ``fetch_k``, and what came back read as "the store
has nothing more". So each
search of the plan is one statement on the store's own table and session:
the collection looked up inside it, the search's conditions as bound
parameters (:func:`~poolsplit_adapters.stores.postgres.metadata_condition`:
the query vector, types, namespaces, ``k`` and the collection's name are all
parameters, never SQL text), after one statement that sizes the
transaction's HNSW scan
(:func:`~poolsplit_adapters.stores.postgres.hnsw_search_settings`:
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
small tenant. An index on the filter columns keeps that completion cheap,
and tells the planner how selective each pool's filter is::

    CREATE INDEX ON langchain_pg_embedding ((cmetadata->>'namespace'), (cmetadata->>'type'));
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, Dict, List, Optional, Sequence

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun as AsyncRun
from langchain_core.callbacks import CallbackManagerForRetrieverRun as SyncRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, PrivateAttr

from ..recall import Search
from ..stores.postgres import exact_search_settings, hnsw_search_settings, metadata_condition

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

    ``invoke`` returns every search's documents in plan order; :attr:`found`
    splits them by search and :attr:`scores` holds the store's distance per
    document id (pool searches only, when ``with_scores``).

    Example::

        run = PGVectorPlanSearch(store=pgvector, searches=plan.searches(), vector=store.embeddings.embed_query(q))
        run.invoke(q)
        per_search = run.found   # one list per search, plan order
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: VectorStore
    searches: List[Search]
    vector: List[float]
    with_scores: bool = False

    _found: List[List[Document]] = PrivateAttr(default_factory=list)
    _scores: Dict[str, float] = PrivateAttr(default_factory=dict)
    #: Labels of the searches an index scan returned short and an exact scan completed.
    _completed: List[str] = PrivateAttr(default_factory=list)

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

    # -- the statement ----------------------------------------------------------------

    def _branch(self, position: int, search: Search) -> Any:
        import sqlalchemy

        store: Any = self.store
        rows, collections = store.EmbeddingStore, store.CollectionStore
        collection = (
            sqlalchemy.select(collections.uuid).where(collections.name == store.collection_name).scalar_subquery()
        )
        # "No type" as PGVector's own dict filter says it (it cannot): no type
        # condition, the untyped entries among the nearest of any type. Said
        # exactly, a store whose entries all have a type (the advice) paid a
        # full scan per call to find none.
        condition = dataclasses.replace(search, untyped=False) if search.untyped else search
        where = [rows.collection_id == collection, metadata_condition(rows.cmetadata, condition)]
        if search.always:
            # The containment PGVector's GIN index on cmetadata answers.
            where.append(rows.cmetadata.contains({"scope": "always"}))
            distance: Any = sqlalchemy.cast(sqlalchemy.null(), sqlalchemy.Float)
            order: Any = rows.id
        else:
            distance = order = store.distance_strategy(self.vector)
        return (
            sqlalchemy.select(
                sqlalchemy.literal(position).label("search"),
                rows.id,
                rows.document,
                rows.cmetadata,
                distance.label("distance"),
            )
            .where(*where)
            .order_by(order)
            .limit(search.k)
        )

    def _statement(self, positions: Sequence[int]) -> Any:
        import sqlalchemy

        branches = [self._branch(i, self.searches[i]) for i in positions]
        if len(branches) == 1:
            return branches[0]
        return sqlalchemy.union_all(*branches)

    def _ranked(self) -> bool:
        """Whether a search here is ranked by distance (the always fetch is not)."""
        return any(not s.always for s in self.searches)

    def _largest_k(self) -> int:
        return max((s.k for s in self.searches if not s.always), default=1)

    # -- results ------------------------------------------------------------------------

    def _short(self, found: List[List[Any]]) -> List[int]:
        """The pool searches that came back short (the untyped one is a side
        search: its pool's typed search says whether the pool is full)."""
        return [i for i, s in enumerate(self.searches) if not (s.always or s.untyped) and len(found[i]) < s.k]

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
            if self._ranked():
                session.execute(hnsw_search_settings(self._largest_k()))
            self._split(session.execute(self._statement(everything)).all(), found, everything)
            session.commit()
            short = self._short(found)
            if short:
                session.execute(exact_search_settings())
                self._split(session.execute(self._statement(short)).all(), found, short)
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
            if self._ranked():
                await session.execute(hnsw_search_settings(self._largest_k()))
            self._split((await session.execute(self._statement(everything))).all(), found, everything)
            await session.commit()
            short = self._short(found)
            if short:
                await session.execute(exact_search_settings())
                self._split((await session.execute(self._statement(short))).all(), found, short)
                await session.commit()
        self._completed = [self.searches[i].label for i in short]
        return self._finish(found)


def plan_search(
    store: VectorStore,
    searches: Sequence[Search],
    vector: Optional[List[float]],
    with_scores: bool,
    *,
    asynchronous: bool,
) -> Optional[PGVectorPlanSearch]:
    """The one-statement round for ``store`` (a ``PGVector`` searched by
    vector, in the mode it was made for), else None: a ``PGVector`` in the
    other mode then raises its own error through its own search."""
    if vector is None or not serves_pgvector(store):
        return None
    if bool(getattr(store, "async_mode", False)) != asynchronous:
        return None
    return PGVectorPlanSearch(store=store, searches=list(searches), vector=vector, with_scores=with_scores)
