"""Running a recall plan against a ``VectorStoreIndex``, the query embedded once.

Every search of the plan is a ``VectorIndexRetriever`` with the search's
``MetadataFilters``; all of them get one ``QueryBundle`` that already carries
the query's embedding, so none embeds it again. (Left to themselves, the
sub-retrievers of an async retrieval each embed the query: one paid
embedding call per search.)

The always-scope fetch is exact where the vector store can filter without
a similarity search (``get_nodes(filters=...)``): through an approximate
index (HNSW), a filtered similarity search only looks at the nearest few
dozen candidates before filtering, and a correction far from the query would
silently never load. Stores without ``get_nodes`` (the in-memory
``SimpleVectorStore``, an exact scan) get the filtered similarity search.

Postgres (``PGVectorStore``) is searched around its filter code, which writes
filter values into SQL text: every search of the plan runs as the store's own
similarity query (``_build_query``: its distance, limit and query hook) with
the plan's condition added as bound parameters
(`metadata_condition`), on the
store's own sessions, and the always-scope fetch is one exact query on the
same condition. Those private names are pinned by the Postgres tests.

With the filter index (`install_filter_index`
on the store), a pool search whose filter matches few rows (at most
`filter_first_bound`, counted
through that index in the same statement) reads just those rows and orders
them exactly by distance, as over LangChain's ``PGVector``; with many it is
the store's query through the HNSW index, as without the index; a filter
found that large skips the count on the retriever's next calls for a while
(`LargeFilters`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import sys
from typing import Any, List, Optional, Sequence, Tuple, Union

import sqlalchemy
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store.base import VectorStoreIndex
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters, SimpleVectorStore

from ...checks import check_instance, check_label
from ...poolsplit import near_miss_scope
from ...recall import RecallPlan, Search, present_types
from ...threads import at_once
from ..internals import require
from ..postgres import (
    FirstUseSetup,
    LargeFilters,
    check_postgres_text,
    check_search,
    exact_search_settings,
    filter_first_search,
    hnsw_search_settings,
    llama_index_filter_index,
    metadata_condition,
    pool_search_bound,
    require_llama_index_internals,
)
from ..recall_protocol import RecallSearcher, check_served
from .llama_index_nodes import node_to_entry


def metadata_filters(search: Search, type_key: str = "type") -> Optional[MetadataFilters]:
    """``search`` in LlamaIndex's filter dialect (flat ``AND``, which every
    vector store that filters understands; "no ``type``" is ``IS_EMPTY``)."""
    clauses: List[Union[MetadataFilter, MetadataFilters]] = []
    if search.types is not None:
        clauses.append(MetadataFilter(key=type_key, value=list(search.types), operator=FilterOperator.IN))
    if search.untyped:
        clauses.append(MetadataFilter(key=type_key, value=None, operator=FilterOperator.IS_EMPTY))
    if search.always:
        clauses.append(MetadataFilter(key="scope", value="always", operator=FilterOperator.EQ))
    if search.namespaces:
        clauses.append(MetadataFilter(key="namespace", value=list(search.namespaces), operator=FilterOperator.IN))
    return MetadataFilters(filters=clauses) if clauses else None


class IndexRecall(RecallSearcher[QueryBundle, NodeWithScore]):
    """A recall plan's searches over one index (the recall protocol's
    `RecallSearcher`).

    Args:
        index: the ``VectorStoreIndex`` to search.
        plan: the search sizes (``fetch_k``, ``always_k``, ...) the
            retriever's calls recall with, each for its own pools.
        type_key: the metadata key the type filters use.
        embed_model: embeds the query; default: the index's own model (the
            one its vectors were made with).

    Example:
        ```python
        recall = IndexRecall(index, RecallPlan(pools, fetch_k=20))
        query = recall.prepare(QueryBundle("deploy"))
        [skills, always] = recall.run(recall.plan.searches(), query)
        ```
    """

    def __init__(
        self,
        index: VectorStoreIndex,
        plan: RecallPlan,
        *,
        type_key: str = "type",
        embed_model: Optional[BaseEmbedding] = None,
        setup_store: bool = True,
    ) -> None:
        # Checked here, not by the first search: a non-index failed as if
        # LlamaIndex's internals had changed, a type_key of None inside
        # LlamaIndex's MetadataFilter, a model that is none on the first query.
        if not isinstance(index, VectorStoreIndex):
            raise TypeError("index must be a LlamaIndex VectorStoreIndex, got %s" % type(index).__name__)
        self.index = index
        self.plan = plan
        self.type_key = check_label(type_key, "type_key")
        check_instance(embed_model, BaseEmbedding, "embed_model")
        # LlamaIndex's own retrievers read the index's model the same way.
        if embed_model is None:
            require(index, ("_embed_model",), "llama-index-core", "the index's embedding model", __name__)
        self.embed_model: BaseEmbedding = embed_model or index._embed_model
        #: What the index's scores measure (a StoreMetric), when known: the
        #: retriever then takes recalled nodes' relevance from their scores.
        self.metric: Any = None
        #: The pool filters found too large to count, kept between calls
        #: (over PGVectorStore with the filter index: their count is skipped).
        self.large_filters = LargeFilters()
        #: What the first search makes sure the store has (over
        #: PGVectorStore: the filter index, which serves the ``type`` key
        #: only), unless ``setup_store`` is False.
        self.setup = FirstUseSetup(index.vector_store, enabled=setup_store and type_key == "type")

    def entry_types(self) -> Optional[frozenset[str]]:
        """The types the index holds, for ``pools="auto"``: a
        ``SimpleVectorStore``'s (its filter metadata, read per call), else
        None (the host may declare ``entry_types=``)."""
        store, key = self.index.vector_store, self.type_key
        if isinstance(store, SimpleVectorStore):
            found = store.data.metadata_dict.values()
            return present_types(
                [m if key == "type" else {"type": m[key]} if m.get(key) is not None else {} for m in found]
            )
        return None

    def _retriever(self, search: Search) -> BaseRetriever:
        return self.index.as_retriever(
            similarity_top_k=search.k, filters=metadata_filters(search, self.type_key), embed_model=self.embed_model
        )

    def _postgres(self) -> Optional[PGVectorStoreSearch]:
        store = self.index.vector_store
        if not PGVectorStoreSearch.serves(store):
            return None
        return PGVectorStoreSearch(store, self.type_key, large_filters=self.large_filters)

    def _needs_embedding(self, query: QueryBundle) -> bool:
        return bool(self.index.vector_store.is_embedding_query and query.embedding is None)

    # -- the recall protocol ------------------------------------------------------------

    def serves(self, search: Search) -> bool:
        """Whether `run` answers ``search``: every search of a plan (one
        with its own query text is not: the call's query is embedded once)."""
        return search.query is None

    def prepare(self, query: QueryBundle) -> QueryBundle:
        """``query`` carrying its embedding (computed once here when the
        store searches by vector and it has none), for every search."""
        if self._needs_embedding(query):
            embedding = self.embed_model.get_agg_embedding_from_queries(_embedded_texts(query))
            query = dataclasses.replace(query, embedding=embedding)
        return query

    async def aprepare(self, query: QueryBundle) -> QueryBundle:
        """Async [`prepare`][]."""
        if self._needs_embedding(query):
            embedding = await self.embed_model.aget_agg_embedding_from_queries(_embedded_texts(query))
            query = dataclasses.replace(query, embedding=embedding)
        return query

    def query_vector(self, query: QueryBundle) -> Optional[List[float]]:
        """The embedding of a [`prepare`][]d ``query`` when it is its text's
        own (not an aggregate of other strings), else None."""
        return query.embedding if _embedded_texts(query) == [query.query_str] else None

    def run(self, searches: Sequence[Search], query: QueryBundle) -> List[List[NodeWithScore]]:
        """Each search's nodes for a [`prepare`][]d query (a pool's: most
        similar first, each ``NodeWithScore`` with the store's score), in
        one round (the retriever grows the searches until the budgets are
        filled)."""
        check_served(self, searches)
        postgres = self._postgres()
        if postgres is not None:
            checked = postgres.checked(list(searches))
            postgres.store._initialize()  # once, before the threads
            if self.setup.pending:
                self.setup.run()
            return at_once([functools.partial(postgres.search, search, query.embedding) for search in checked])
        self._check_filtered_fields(searches)
        results = []
        for search in searches:
            exact = self._always_exactly(search)
            results.append(exact if exact is not None else self._retriever(search).retrieve(query))
        return results

    async def arun(self, searches: Sequence[Search], query: QueryBundle) -> List[List[NodeWithScore]]:
        """[`run`][], the searches concurrently."""
        check_served(self, searches)
        postgres = self._postgres()
        if postgres is not None:
            checked = postgres.checked(list(searches))
            if self.setup.pending:
                await self.setup.arun()
            return list(await asyncio.gather(*(postgres.asearch(search, query.embedding) for search in checked)))

        self._check_filtered_fields(searches)

        async def one(search: Search) -> List[NodeWithScore]:
            exact = await self._aalways_exactly(search)
            return exact if exact is not None else await self._retriever(search).aretrieve(query)

        return list(await asyncio.gather(*(one(search) for search in searches)))

    def _check_filtered_fields(self, searches: Sequence[Search]) -> None:
        """Refuse a node whose type (``type_key``), ``scope`` or ``namespace``
        is not a string, or whose scope is "always" but for case or a slip
        (``"Always"``), as the node paths refuse it (`node_to_entry`'s
        `EntryError`, naming the node and the field): the plan's filters
        match no such value (the always fetch asks ``scope == "always"``),
        so it was never recalled, or recalled into a pool's budget as a
        contextual entry, and never reported.
        A node of a namespace the ``searches`` do not read is another
        tenant's to fix, never this one's error. Checked where the store's
        metadata is in hand (a ``SimpleVectorStore``, which scans every node
        per search anyway); another store's filters leave such a node out
        unseen."""
        store = self.index.vector_store
        if not isinstance(store, SimpleVectorStore):
            return
        key, text = self.type_key, (str, type(None))
        read = None if any(not s.namespaces for s in searches) else {n for s in searches for n in s.namespaces}
        for position, (node_id, metadata) in enumerate(store.data.metadata_dict.items()):
            get = metadata.get
            if read is not None and isinstance(get("namespace"), text) and get("namespace") not in read:
                continue  # not read by this plan (a namespace that is not a string is nobody's: refused)
            if not (
                isinstance(get(key), text) and isinstance(get("scope"), text) and isinstance(get("namespace"), text)
            ) or near_miss_scope(get("scope")):
                filtered = {field: get(field) for field in (key, "scope", "namespace") if field in metadata}
                node_to_entry(TextNode(text="", id_=node_id, metadata=filtered), position, type_key=key)

    def _always_exactly(self, search: Search) -> Optional[List[NodeWithScore]]:
        """Every always-scope node by filter alone, or None when the store
        cannot fetch by filter (then the similarity search serves)."""
        if not search.always:
            return None
        try:
            nodes = self.index.vector_store.get_nodes(filters=metadata_filters(search, self.type_key))
        except NotImplementedError:
            return None
        return [NodeWithScore(node=node, score=None) for node in nodes]

    async def _aalways_exactly(self, search: Search) -> Optional[List[NodeWithScore]]:
        if not search.always:
            return None
        try:
            nodes = await self.index.vector_store.aget_nodes(filters=metadata_filters(search, self.type_key))
        except NotImplementedError:
            return None
        return [NodeWithScore(node=node, score=None) for node in nodes]


def _embedded_texts(query: QueryBundle) -> List[str]:
    """The strings a query's embedding is made of: its ``embedding_strs``,
    else its text, empty as it may be. Why: LlamaIndex gives an empty query
    no embedding strings and so no vector, and its vector stores then fail
    on the missing vector deep inside their similarity code
    (``SimpleVectorStore``: ``NoneType * float``), so a selection with no
    message (``VectorIndexMemory.select(pools)``, a first turn) failed;
    embedded like any text, an empty query recalls like one, as LangChain's
    vector stores embed it."""
    return list(query.embedding_strs) or [query.query_str]


class PGVectorStoreSearch:
    """The plan's searches on LlamaIndex's ``PGVectorStore``, every filter
    value a bound parameter.

    The store's own filter code pastes values into SQL text, so it is never
    given one: a pool search is the store's similarity query
    (``_build_query``, without filters) with
    `metadata_condition` added, run
    on the store's session with its index settings (``hnsw.ef_search``);
    the always-scope fetch selects by that condition alone, in node id
    order, with no similarity in it. With the filter index
    (`install_filter_index`; its
    size read in the same round trip as the HNSW settings), a pool search
    whose filter matches few rows reads them and orders them exactly
    (`filtered` says which), and a short HNSW page is completed by an
    exact search (`completed` lists those).

    Example:
        ```python
        search = PGVectorStoreSearch(vector_store)
        nodes = search.search(Search("always", 1000, always=True, namespaces=("o'brien",)), None)
        ```
    """

    _OWN_COLUMNS = ("id", "node_id", "text", "metadata_", "distance", "poolsplit_exact")
    #: The column saying a row came through the filter index, ordered exactly.
    _EXACT = "poolsplit_exact"

    def __init__(self, store: Any, type_key: str = "type", *, large_filters: Optional[LargeFilters] = None) -> None:
        require_llama_index_internals(store)
        self.store = store
        self.type_key = type_key
        #: The caller's memory of filters too large to count (their count is
        #: then skipped, see `LargeFilters`);
        #: None: every search counts.
        self.large_filters = large_filters
        # The filter index serves the ``type`` key only (the key is fixed
        # in the index): with another key the probe would walk a whole
        # namespace, so those searches run as without the index.
        self._filter_index = llama_index_filter_index(store) if type_key == "type" else None
        #: Labels of the searches an index scan returned short and an exact scan completed.
        self.completed: List[str] = []

    @staticmethod
    def serves(store: Any) -> bool:
        """Whether ``store`` is a ``PGVectorStore`` (never imports the
        package: a store of that class means it is imported already)."""
        module = sys.modules.get("llama_index.vector_stores.postgres")
        return module is not None and isinstance(store, module.PGVectorStore)

    def checked(self, searches: List[Search]) -> List[Search]:
        """``searches``, once every value in them is one Postgres text can
        hold (else ``ArgumentError`` naming the field, before any query)."""
        for search in searches:
            check_search(search, self.type_key)
        return searches

    def _statement(self, search: Search, embedding: Optional[List[float]], bound: Optional[int] = None) -> Any:
        """``search``'s statement: the always fetch by condition alone; a
        pool search the store's own query with the condition, and, with a
        filter-first ``bound`` (the filter index is there:
        `pool_search_bound`), first
        the bounded count that picks between reading the few matching rows
        exactly and that query through the HNSW index (one of the two
        branches runs)."""
        table = self.store._table_class
        condition = metadata_condition(table.metadata_, search, self.type_key)
        if search.always:
            columns = (table.node_id, table.text, table.metadata_)
            return sqlalchemy.select(*columns).where(condition).order_by(table.node_id).limit(search.k)
        query = self.store._build_query(embedding, search.k)
        if bound is None:
            return query.where(condition)
        # The store's own columns (and query hook): without its order and
        # limit for the few rows read exactly, as they are through HNSW.
        matching = query.limit(None).order_by(None).where(condition)
        by_index = query.where(condition).add_columns(sqlalchemy.false().label(self._EXACT))
        return filter_first_search(matching, by_index, bound, search.k, exact=self._EXACT, name="0")

    def _settings(self, search: Search) -> List[Tuple[str, Any]]:
        """The store's HNSW search setting (a similarity search only), for
        this transaction: ``set_config`` takes its value as a bound
        parameter, where ``SET`` cannot (the store's own sync ``SET ... =
        :value`` is a syntax error under psycopg 3)."""
        hnsw = self.store.hnsw_kwargs
        if search.always or not hnsw:
            return []
        ef_search = str(int(hnsw["hnsw_ef_search"]))
        return [
            ("SELECT set_config('hnsw.ef_search', :value, true)", {"value": ef_search}),
            ("SELECT set_config('enable_bitmapscan', 'off', true)", {}),
        ]

    def _nodes(self, search: Search, rows: Sequence[Any]) -> List[NodeWithScore]:
        from llama_index.vector_stores.postgres.base import DBEmbeddingRow

        found = [
            DBEmbeddingRow(
                node_id=row.node_id,
                text=row.text,
                metadata=row.metadata_,
                custom_fields={k: v for k, v in row._asdict().items() if k not in self._OWN_COLUMNS},
                similarity=0.0 if search.always or row.distance is None else 1.0 - row.distance,
            )
            for row in rows
        ]
        result = self.store._db_rows_to_query_result(found)
        return [
            NodeWithScore(node=node, score=None if search.always else similarity)
            for node, similarity in zip(result.nodes, result.similarities)
        ]

    def in_namespace(self, namespace: str) -> List[BaseNode]:
        """Every node of ``namespace``, by that condition alone (a bound
        parameter), in node id order: what ``forget(namespace=...)`` deletes."""
        check_postgres_text("namespace", namespace)
        table = self.store._table_class
        statement = (
            sqlalchemy.select(table.node_id, table.text, table.metadata_)
            .where(table.metadata_["namespace"].astext == namespace)
            .order_by(table.node_id)
        )
        self.store._initialize()
        with self.store._session() as session, session.begin():
            rows = session.execute(statement).all()
        return [found.node for found in self._nodes(Search("namespace", len(rows) or 1, always=True), rows)]

    def _sized(self, search: Search) -> Tuple[List[Any], bool]:
        """The transaction's settings as statements: the store's own, then
        the HNSW scan sized to the search's ``k`` with pgvector's iterative
        scan on (`hnsw_search_settings`);
        and whether the last of them reads the filter index's size (its
        last column)."""
        statements = [sqlalchemy.text(sql).bindparams(**params) for sql, params in self._settings(search)]
        if search.always:
            return statements, False
        if search.untyped and self._filter_index is None:
            # Not the untyped side search without the filter index ("no
            # type": none, where every entry has one): an iterative scan would
            # visit hnsw.max_scan_tuples rows to find nothing, on every call.
            # With the index, few untyped rows are read exactly and many walk
            # HNSW with the scan sized, as a typed pool search does (PGVector's
            # rule): unsized, 40 nearest rows then filtered left a few of them.
            return statements, False
        sized = hnsw_search_settings(search.k, filter_index=self._filter_index or False)
        return statements + [sized], self._filter_index is not None

    def _short(self, search: Search, rows: Sequence[Any]) -> bool:
        """A pool page with fewer rows than asked: the index may have cut it,
        so it is run again exactly before anyone reads it as "the store ran
        out" (the untyped side search is not: its pool's typed search says
        whether the pool is full; nor is a page read through the filter
        index: it is exact already)."""
        if search.always or search.untyped or len(rows) >= search.k:
            return False
        return not self.filtered(search, rows)

    def _saw(self, search: Search, bound: Optional[int], rows: Sequence[Any]) -> None:
        if self.large_filters is not None:
            self.large_filters.saw(search, bound, found=len(rows), exact=self.filtered(search, rows))

    def filtered(self, search: Search, rows: Sequence[Any]) -> bool:
        """Whether ``rows`` (a pool search's) were read through the filter
        index and ordered exactly (a search that found nothing is not)."""
        return not search.always and bool(rows) and bool(getattr(rows[0], self._EXACT, False))

    def search(self, search: Search, embedding: Optional[List[float]]) -> List[NodeWithScore]:
        """The nodes ``search`` finds (a pool's: most similar first; a short
        page completed by an exact search)."""
        return self._nodes(search, self.rows(search, embedding))

    def rows(self, search: Search, embedding: Optional[List[float]]) -> List[Any]:
        """`search`'s rows as the server returned them."""
        self.store._initialize()
        settings, reads_index = self._sized(search)
        with self.store._session() as session:
            with session.begin():
                result = None
                for setting in settings:
                    result = session.execute(setting)
                index_rows = result.one()[-1] if reads_index and result is not None else None
                bound = pool_search_bound(search, index_rows, self.large_filters)
                statement = self._statement(search, embedding, bound)
                rows = list(session.execute(statement).all())
            self._saw(search, bound, rows)
            if self._short(search, rows):
                self.completed.append(search.label)
                with session.begin():
                    session.execute(exact_search_settings())
                    rows = list(session.execute(statement).all())
        return rows

    async def asearch(self, search: Search, embedding: Optional[List[float]]) -> List[NodeWithScore]:
        """`search` on the store's async engine."""
        return self._nodes(search, await self.arows(search, embedding))

    async def arows(self, search: Search, embedding: Optional[List[float]]) -> List[Any]:
        """`rows` on the store's async engine."""
        self.store._initialize()
        settings, reads_index = self._sized(search)
        async with self.store._async_session() as session:
            async with session.begin():
                result = None
                for setting in settings:
                    result = await session.execute(setting)
                index_rows = result.one()[-1] if reads_index and result is not None else None
                bound = pool_search_bound(search, index_rows, self.large_filters)
                statement = self._statement(search, embedding, bound)
                rows = list((await session.execute(statement)).all())
            self._saw(search, bound, rows)
            if self._short(search, rows):
                self.completed.append(search.label)
                async with session.begin():
                    await session.execute(exact_search_settings())
                    rows = list((await session.execute(statement)).all())
        return rows
