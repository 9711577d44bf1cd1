"""Running a recall plan against a LangChain vector store, the query embedded once.

A plan makes several searches per query (one or two per pool, plus the
always-scope fetch). Searching each by text would embed the same query once
per search: with a paid embedding API, that many times the cost and the
latency of every retrieval. So the query is embedded once, with the store's
own embeddings, and each search goes by vector. Only a store that cannot
search by vector (no ``embeddings``, or no ``similarity_search_by_vector``)
is searched by text.

With an embedding scorer the similarity the store computed is used too,
instead of embedding every recalled document again per query: a search
then goes through ``similarity_search_with_score_by_vector`` (when the store
has it) and `VectorRecall.run` returns each document's score.

The always-scope fetch never depends on similarity where the store can say
so exactly: on LangChain's ``PGVector`` it is one query by collection and
metadata (`PGVectorAlwaysFetch`), with no distance ordering; on
langchain-postgres v2's ``PGVectorStore`` it is the store's own exact
``get(where=...)`` (`PGVectorStoreAlwaysFetch`), whose filter values
are bound parameters. Through
an HNSW index a filtered similarity search looks at the ``hnsw.ef_search``
nearest rows and then filters, so corrections far from the query came back
in none of the queries once the planner used the index. Other stores get the
filtered similarity search (exact for the in-memory ones).

The LangChain retriever holds these searches as a searcher of the recall
protocol (`RecallSearcher`): `VectorRecall`, its hits a
document with the store's score (`ScoredDocument`), its query a text with
the run its searches trace under (`DocumentQuery`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import sys
from typing import Any, ClassVar, Dict, List, Mapping, Optional, Sequence, Tuple, Union, cast

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun as AsyncRun
from langchain_core.callbacks import CallbackManagerForRetrieverRun as SyncRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from pydantic import ConfigDict, PrivateAttr

from ...recall import Search, present_types, recalled_texts
from ...threads import at_once
from ..postgres import FirstUseSetup, LargeFilters, check_search, require_pgvector_session
from ..recall_protocol import RecallSearcher, check_served
from .langchain_filters import FilterBuilder, dict_filter
from .pgvector_search import PGVectorPlanSearch, plan_search
from .pgvector_v2_search import PGVectorStorePlanSearch
from .pgvector_v2_search import plan_search as v2_plan_search

# Not part of VectorStore's interface (InMemoryVectorStore and many others have it).
_SCORED_SEARCH = "similarity_search_with_score_by_vector"

#: One hit of a LangChain store's search: the document and the store's
#: score of it (None: not asked for, or the store gives none), the pair
#: LangChain's own scored searches return.
ScoredDocument = Tuple[Document, Optional[float]]


def _unranked(
    store: VectorStore, vector: Optional[List[float]], search_kwargs: Mapping[str, Any]
) -> Optional[List[Document]]:
    """The rows a search of an ``InMemoryVectorStore`` by ``vector`` keeps,
    the first ``k`` in the store's order and without scores, when no row has
    a cosine with it: the query, or every row the filter keeps, is the zero
    vector (a text with no word the embedding counts: ``""``, ``"ok"``).
    LangChain then raises "NaN values found" for the whole search, where
    LlamaIndex's store ranks such rows by NaN; the scorer ranks them without
    similarity, as its own rule says for a zero vector. None in any other
    case (the store's own error stands)."""
    if vector is not None and isinstance(store, InMemoryVectorStore):
        keep = search_kwargs.get("filter")
        rows = [
            (row["vector"], Document(id=row["id"], page_content=row["text"], metadata=row["metadata"]))
            for row in list(store.store.values())
        ]
        kept = [(v, doc) for v, doc in rows if keep is None or keep(doc)]
        if not (any(vector) and any(any(v) for v, _ in kept)):
            return [doc for _, doc in kept[: search_kwargs.get("k", 4)]]
    return None


class StoreSearch(BaseRetriever):
    """One search of the plan as a retriever run, so that traces show each
    search as a child run (tagged with its label) with what it found.

    Example:
        ```python
        StoreSearch(store=store, vector=store.embeddings.embed_query("deploy"), search_kwargs={"k": 20}).invoke("deploy")
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: VectorStore
    vector: Optional[List[float]] = None
    search_kwargs: Dict[str, Any]
    with_scores: bool = False
    """Ask the store for its scores (kept in `scores`, by document id)."""

    _scores: Dict[str, float] = PrivateAttr(default_factory=dict)

    @property
    def scores(self) -> Dict[str, float]:
        """Document id -> the store's score, from the last run (``with_scores``)."""
        return self._scores

    def _keep(self, pairs: Sequence[Tuple[Document, float]]) -> List[Document]:
        for doc, score in pairs:
            if doc.id is not None:
                self._scores[doc.id] = float(score)
        return [doc for doc, _ in pairs]

    def _get_relevant_documents(self, query: str, *, run_manager: SyncRun) -> List[Document]:
        try:
            return self._search(query)
        except ValueError:
            found = _unranked(self.store, self.vector, self.search_kwargs)
            if found is None:
                raise
            return found

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncRun) -> List[Document]:
        try:
            return await self._asearch(query)
        except ValueError:
            found = _unranked(self.store, self.vector, self.search_kwargs)
            if found is None:
                raise
            return found

    def _search(self, query: str) -> List[Document]:
        if self.vector is not None and self.with_scores:
            search = getattr(self.store, _SCORED_SEARCH)
            return self._keep(search(self.vector, **self.search_kwargs))
        if self.vector is not None:
            return self.store.similarity_search_by_vector(self.vector, **self.search_kwargs)
        return self.store.similarity_search(query, **self.search_kwargs)

    async def _asearch(self, query: str) -> List[Document]:
        if self.vector is not None and self.with_scores:
            native = getattr(self.store, "a" + _SCORED_SEARCH, None)
            if callable(native):  # PGVector and others: the store's own async search
                return self._keep(await native(self.vector, **self.search_kwargs))
            # No async twin in LangChain's interface: run it off the event loop.
            search = getattr(self.store, _SCORED_SEARCH)
            return self._keep(await run_in_executor(None, search, self.vector, **self.search_kwargs))
        if self.vector is not None:
            return await self.store.asimilarity_search_by_vector(self.vector, **self.search_kwargs)
        return await self.store.asimilarity_search(query, **self.search_kwargs)


class _ExactAlwaysFetch(BaseRetriever):
    """What both exact always-scope fetches share: the store, the plan's
    always search, no scores, and which store class each one serves
    (looked up in ``sys.modules``: a store of that class means its package
    is imported already, so this never imports it)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: VectorStore
    search: Search

    #: ``(module, class name)`` of the store this fetch serves.
    SERVES: ClassVar[Tuple[str, str]] = ("", "")

    @classmethod
    def serves(cls, store: VectorStore) -> bool:
        """Whether ``store`` is of the class this fetch serves."""
        module = sys.modules.get(cls.SERVES[0])
        return module is not None and isinstance(store, getattr(module, cls.SERVES[1]))

    @property
    def scores(self) -> Dict[str, float]:
        """No scores: the fetch is not ranked."""
        return {}


class PGVectorAlwaysFetch(_ExactAlwaysFetch):
    """The always-scope fetch on LangChain's ``PGVector``: one exact query on
    the store's own session, by collection and metadata (scope, namespace),
    in id order, with no similarity in it, so an HNSW index cannot cut a
    correction. Every value is a bound parameter
    (`metadata_condition`).

    Example:
        ```python
        fetch = PGVectorAlwaysFetch(store=pgvector, search=Search("always", 1000, always=True))
        corrections = fetch.invoke("")
        ```
    """

    SERVES: ClassVar[Tuple[str, str]] = ("langchain_postgres.vectorstores", "PGVector")

    def _statement(self, collection: Any) -> Any:
        from sqlalchemy import select

        from ..postgres import metadata_condition

        rows = self.store.EmbeddingStore  # type: ignore[attr-defined]
        return (
            select(rows)
            .where(
                rows.collection_id == collection.uuid,
                # The same condition as JSONB containment: PGVector's GIN
                # index on cmetadata answers it without reading every row.
                rows.cmetadata.contains({"scope": "always"}),
                metadata_condition(rows.cmetadata, self.search),
            )
            .order_by(rows.id)
            .limit(self.search.k)
        )

    @staticmethod
    def _documents(rows: Sequence[Any]) -> List[Document]:
        return [Document(id=str(row.id), page_content=row.document, metadata=row.cmetadata) for row in rows]

    def _get_relevant_documents(self, query: str, *, run_manager: SyncRun) -> List[Document]:
        store: Any = self.store
        require_pgvector_session(store, asynchronous=False)
        with store._make_sync_session() as session:
            collection = store.get_collection(session)
            if collection is None:
                return []
            return self._documents(session.execute(self._statement(collection)).scalars().all())

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncRun) -> List[Document]:
        store: Any = self.store
        require_pgvector_session(store, asynchronous=True)
        async with store._make_async_session() as session:
            collection = await store.aget_collection(session)
            if collection is None:
                return []
            return self._documents((await session.execute(self._statement(collection))).scalars().all())


class PGVectorStoreAlwaysFetch(_ExactAlwaysFetch):
    """The always-scope fetch on langchain-postgres v2's ``PGVectorStore``
    (``langchain_postgres.PGVectorStore`` over a ``PGEngine``): the store's
    own exact read, ``get(where=..., limit=...)``, with no distance in it,
    so an HNSW index cannot cut a correction. ``PGVectorStore`` writes each
    filter value as a bound parameter (``:name``) and only the field names
    (here the fixed ``scope``, ``namespace``) into its SQL text; the values
    are checked for NUL first
    (`check_search`). Rows come
    back in id order, as from ``PGVector``.

    Example:
        ```python
        always = Search("always", 1000, always=True, namespaces=("memories.ana",))
        corrections = PGVectorStoreAlwaysFetch(store=pg_vector_store, search=always).invoke("")
        ```
    """

    SERVES: ClassVar[Tuple[str, str]] = ("langchain_postgres.v2.vectorstores", "PGVectorStore")

    def _where(self) -> Dict[str, Any]:
        where = dict_filter(self.search)
        assert where is not None  # an always search filters by scope at least
        return dict(where)

    @staticmethod
    def _documents(found: Mapping[str, Any]) -> List[Document]:
        rows = zip(found["ids"], found["documents"], found["metadatas"])
        docs = [Document(id=str(i), page_content=text, metadata=dict(meta or {})) for i, text, meta in rows]
        return sorted(docs, key=lambda d: str(d.id))

    def _get_relevant_documents(self, query: str, *, run_manager: SyncRun) -> List[Document]:
        store: Any = self.store
        return self._documents(store.get(where=self._where(), limit=self.search.k))

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncRun) -> List[Document]:
        store: Any = self.store
        return self._documents(await store.aget(where=self._where(), limit=self.search.k))


def namespace_documents(store: VectorStore, namespace: str) -> Optional[List[Document]]:
    """Every document of ``namespace`` on a Postgres vector store that
    cannot list its documents (``PGVector``, v2 ``PGVectorStore``), read
    exactly (no similarity, the namespace a bound parameter), in id order;
    None for any other store. What ``forget(namespace=...)`` deletes and an
    export of one subject reads.

    Raises:
        ArgumentError: ``namespace`` holds a value Postgres text cannot hold.
    """
    from ..postgres import check_postgres_text

    if PGVectorAlwaysFetch.serves(store):
        from sqlalchemy import select

        check_postgres_text("namespace", namespace)
        pg: Any = store
        require_pgvector_session(pg, asynchronous=False)
        rows = pg.EmbeddingStore
        with pg._make_sync_session() as session:
            collection = pg.get_collection(session)
            if collection is None:
                return []
            statement = (
                select(rows)
                .where(rows.collection_id == collection.uuid, rows.cmetadata["namespace"].astext == namespace)
                .order_by(rows.id)
            )
            return PGVectorAlwaysFetch._documents(session.execute(statement).scalars().all())
    if PGVectorStoreAlwaysFetch.serves(store):
        check_postgres_text("namespace", namespace)
        v2: Any = store
        return PGVectorStoreAlwaysFetch._documents(v2.get(where={"namespace": namespace}))
    return None


#: One search of the plan as a retriever run.
SearchRun = Union[
    StoreSearch, PGVectorAlwaysFetch, PGVectorStoreAlwaysFetch, PGVectorPlanSearch, PGVectorStorePlanSearch
]


def exact_always_fetch(store: VectorStore) -> Optional[Any]:
    """The exact always-scope fetch class for ``store`` (``PGVector``, v2
    ``PGVectorStore``), or None: a filtered similarity search (exact for the
    in-memory stores)."""
    for fetch in (PGVectorAlwaysFetch, PGVectorStoreAlwaysFetch):
        if fetch.serves(store):
            return fetch
    return None


@dataclasses.dataclass(frozen=True)
class DocumentQuery:
    """One call's query to a LangChain vector store, as `VectorRecall`
    searches for it: the text, the retriever run its searches trace under
    (each a child run tagged with its search's label) and the text's vector,
    embedded once a call by `VectorRecall.prepare` (None: the store is
    searched by text).

    Example:
        ```python
        query = recall.prepare(DocumentQuery("deploy", run_manager))
        ```
    """

    text: str
    run_manager: Union[SyncRun, AsyncRun]
    vector: Optional[List[float]] = None


#: What the LangChain retriever holds: a searcher of the recall protocol
#: over `DocumentQuery` and `ScoredDocument`.
DocumentSearcher = RecallSearcher[DocumentQuery, ScoredDocument]


def hit_documents(hits: Sequence[ScoredDocument]) -> List[Document]:
    """The documents of ``hits``, in order."""
    return [doc for doc, _ in hits]


def hit_scores(hits: Sequence[ScoredDocument]) -> Dict[str, float]:
    """Document id -> the store's score, for the hits that have both."""
    return {doc.id: score for doc, score in hits if doc.id is not None and score is not None}


class VectorRecall(RecallSearcher[DocumentQuery, ScoredDocument]):
    """A recall plan's searches over one store (the recall protocol's
    `RecallSearcher`).

    ``scored``: ask the store for its scores where it can return them
    (`scores_available`), so that an embedding scorer reuses them
    instead of embedding the recalled documents again.

    Example:
        ```python
        recall = VectorRecall(store, type_filter(store))
        query = recall.prepare(DocumentQuery("deploy", run_manager))
        [skills, always] = recall.run(RecallPlan(pools, fetch_k=20).searches(), query)
        ```
    """

    def __init__(
        self,
        store: VectorStore,
        build: FilterBuilder,
        *,
        scored: bool = False,
        setup_store: bool = True,
    ) -> None:
        self.store, self.build, self.scored = store, build, scored
        #: Run the sync searches at once, on threads (a Postgres store: each
        #: search is a round trip to the server, on its own pooled
        #: connection). In-process stores search in turn: they are CPU-bound
        #: under the GIL, where threads would only add overhead.
        self.concurrent = exact_always_fetch(store) is not None
        #: The pool filters found too large to count, kept between calls
        #: (over PGVector with the filter index: their count is skipped).
        self.large_filters = LargeFilters()
        #: What the first search makes sure the store has (over PGVector
        #: searched by our own statements: the filter index), unless
        #: ``setup_store`` is False. A caller's own filter_builder keeps the
        #: store's own search, which the index does not serve: nothing then.
        self.setup = FirstUseSetup(store, enabled=setup_store and build is dict_filter)

    def entry_types(self) -> Optional[frozenset[str]]:
        """The types the store holds, for ``pools="auto"``: an
        ``InMemoryVectorStore``'s (read per call: it can change, and its own
        search reads every row anyway), else None (a store that cannot list:
        the host may declare ``entry_types=``)."""
        if isinstance(self.store, InMemoryVectorStore):
            return present_types(row["metadata"] for row in list(self.store.store.values()))
        return None

    @property
    def searches_by_vector(self) -> bool:
        """Whether the store can search by a vector the plan embedded once."""
        return (
            self.store.embeddings is not None
            and type(self.store).similarity_search_by_vector is not VectorStore.similarity_search_by_vector
        )

    @property
    def scores_available(self) -> bool:
        """Whether the store returns its scores when searched by vector."""
        return self.searches_by_vector and callable(getattr(self.store, _SCORED_SEARCH, None))

    def _query_embeddings(self) -> Optional[Embeddings]:
        """The store's embeddings when the searches go by vector (the query
        is then embedded once, with them), else None: search by text."""
        return self.store.embeddings if self.searches_by_vector else None

    def _runs(
        self, vector: Optional[List[float]], searches: Sequence[Search], *, asynchronous: bool = False
    ) -> List[Tuple[Search, SearchRun]]:
        with_scores = self.scored and self.scores_available and vector is not None
        exact = exact_always_fetch(self.store)
        # LangChain's PGVector with the default filters: each search is our
        # own statement on its table (the HNSW scan sized to k, a short page
        # completed exactly, "no type" said exactly). A caller's own
        # filter_builder keeps the store's own search, which is what it speaks.
        own = self.build is dict_filter and vector is not None
        runs: List[Tuple[Search, SearchRun]] = []
        for search in searches:
            if exact is not None:
                check_search(search)  # NUL: one clear error before any query runs
            mine = None
            if own:
                mine = plan_search(
                    self.store,
                    [search],
                    vector,
                    with_scores,
                    asynchronous=asynchronous,
                    large_filters=self.large_filters,
                )
            if mine is not None:
                runs.append((search, mine))
                continue
            # v2 PGVectorStore's pool searches: the same, on its own engine.
            v2 = v2_plan_search(self.store, search, vector, with_scores) if own else None
            if v2 is not None:
                runs.append((search, v2))
                continue
            if exact is not None and search.always:
                runs.append((search, exact(store=self.store, search=search)))
                continue
            kwargs: Dict[str, Any] = {"k": search.k}
            flt = self.build(search)
            if flt is not None:
                kwargs["filter"] = flt
            runs.append(
                (search, StoreSearch(store=self.store, vector=vector, search_kwargs=kwargs, with_scores=with_scores))
            )
        return runs

    @staticmethod
    def _scores(runs: Sequence[Tuple[Search, SearchRun]]) -> Dict[str, float]:
        scores: Dict[str, float] = {}
        for _, retriever in runs:
            scores.update(retriever.scores)
        return scores

    def embed(self, query: str) -> Optional[List[float]]:
        """The query's vector, embedded once with the store's embeddings, or
        None when the store is searched by text."""
        embeddings = self._query_embeddings()
        return None if embeddings is None else embeddings.embed_query(query)

    async def aembed(self, query: str) -> Optional[List[float]]:
        """Async `embed`."""
        embeddings = self._query_embeddings()
        return None if embeddings is None else await embeddings.aembed_query(query)

    def search(
        self, query: str, vector: Optional[List[float]], searches: Sequence[Search], run_manager: SyncRun
    ) -> Tuple[List[List[Document]], Dict[str, float]]:
        """Each search's documents (by ``vector`` when given, else by text),
        and document id -> the store's score when ``scored`` (else empty)."""
        if self.setup.pending and vector is not None and not getattr(self.store, "async_mode", False):
            self.setup.run()
        runs = self._runs(vector, searches)

        def one(run: Tuple[Search, SearchRun]) -> List[Document]:
            search, retriever = run
            found = retriever.invoke(query, config={"callbacks": run_manager.get_child(search.label)})
            if self.concurrent:  # on this search's thread, while the others still wait on the server
                recalled_texts([doc.page_content for doc in found])
            return found

        if self.concurrent:
            # Each search waits on the server: in turn, a call costs their sum;
            # at once (one pooled connection each), the slowest one's.
            results = at_once([functools.partial(one, run) for run in runs])
        else:
            results = [one(run) for run in runs]
        return results, self._scores(runs)

    async def asearch(
        self, query: str, vector: Optional[List[float]], searches: Sequence[Search], run_manager: AsyncRun
    ) -> Tuple[List[List[Document]], Dict[str, float]]:
        """`search`, the searches concurrently."""
        if self.setup.pending and vector is not None and getattr(self.store, "async_mode", False):
            await self.setup.arun()
        runs = self._runs(vector, searches, asynchronous=True)
        found = [r.ainvoke(query, config={"callbacks": run_manager.get_child(s.label)}) for s, r in runs]
        return list(await asyncio.gather(*found)), self._scores(runs)

    # -- the recall protocol ------------------------------------------------------------

    def serves(self, search: Search) -> bool:
        """Whether `run` answers ``search``: every search of a plan (one
        with its own query text is not: the call's query is embedded once)."""
        return search.query is None

    def prepare(self, query: DocumentQuery) -> DocumentQuery:
        """``query`` with its vector (`embed`: once a call, or None: by text)."""
        return dataclasses.replace(query, vector=self.embed(query.text))

    async def aprepare(self, query: DocumentQuery) -> DocumentQuery:
        """Async `prepare`."""
        return dataclasses.replace(query, vector=await self.aembed(query.text))

    def run(self, searches: Sequence[Search], query: DocumentQuery) -> List[List[ScoredDocument]]:
        """Each search's documents (`search`: on a Postgres store at once,
        see `concurrent`), each with the store's score when ``scored`` and
        the store gives scores (else None). One round: the retriever grows
        the searches until the budgets are filled (`FillingRecall`)."""
        check_served(self, searches)
        return self._scored(*self.search(query.text, query.vector, searches, cast(SyncRun, query.run_manager)))

    async def arun(self, searches: Sequence[Search], query: DocumentQuery) -> List[List[ScoredDocument]]:
        """`run`, the searches concurrently."""
        check_served(self, searches)
        found = await self.asearch(query.text, query.vector, searches, cast(AsyncRun, query.run_manager))
        return self._scored(*found)

    def query_vector(self, query: DocumentQuery) -> Optional[List[float]]:
        """The vector `prepare` embedded ``query`` with (None: searched by text)."""
        return query.vector

    @staticmethod
    def _scored(results: Sequence[List[Document]], scores: Mapping[str, float]) -> List[List[ScoredDocument]]:
        """Each search's documents paired with their scores (by id)."""
        return [[(doc, None if doc.id is None else scores.get(doc.id)) for doc in docs] for docs in results]
