"""Running a recall plan against a ``VectorStoreIndex``, the query embedded once.

Every search of the plan is a ``VectorIndexRetriever`` with the search's
``MetadataFilters``; all of them get one ``QueryBundle`` that already carries
the query's embedding, so none embeds it again. (Left to themselves, the
sub-retrievers of an async retrieval each embed the query: one paid
embedding call per search.)

The always-scope fetch is exact where the vector store can filter without
a similarity search (``get_nodes(filters=...)``, e.g. Postgres): through an
approximate index (HNSW), a filtered similarity search only looks at the
nearest few dozen candidates before filtering, and a correction far from the
query would silently never load. Stores without ``get_nodes`` (the in-memory
``SimpleVectorStore``, an exact scan) get the filtered similarity search.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, List, Optional, Sequence, Tuple, Union

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store.base import VectorStoreIndex
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters

from ..poolsplit import Pool, Visibility
from ..recall import RecallPlan, Search


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


class IndexRecall:
    """A :class:`~poolsplit_adapters.recall.RecallPlan` over one index.

    Args:
        index: the ``VectorStoreIndex`` to search.
        plan: the recall plan (pools, ``fetch_k``, ``always_k``).
        type_key: the metadata key the type filters use.
        embed_model: embeds the query; default: the index's own model (the
            one its vectors were made with).

    Example::

        recall = IndexRecall(index, RecallPlan(pools, fetch_k=20))
        candidates = recall.retrieve(QueryBundle("deploy"), visibility=None)
    """

    def __init__(
        self,
        index: VectorStoreIndex,
        plan: RecallPlan,
        *,
        type_key: str = "type",
        embed_model: Optional[BaseEmbedding] = None,
    ) -> None:
        self.index = index
        self.plan = plan
        self.type_key = type_key
        # LlamaIndex's own retrievers read the index's model the same way.
        self.embed_model: BaseEmbedding = embed_model or index._embed_model
        #: What the index's scores measure (a StoreMetric), when known: the
        #: retriever then takes recalled nodes' relevance from their scores.
        self.metric: Any = None

    def _retrievers(
        self, visibility: Optional[Visibility], pools: Optional[Sequence[Pool]] = None
    ) -> Tuple[RecallPlan, List[Tuple[Search, BaseRetriever]]]:
        plan = self.plan if pools is None else dataclasses.replace(self.plan, pools=tuple(pools))
        return plan, [
            (
                search,
                self.index.as_retriever(
                    similarity_top_k=search.k,
                    filters=metadata_filters(search, self.type_key),
                    embed_model=self.embed_model,
                ),
            )
            for search in plan.searches(visibility)
        ]

    def _needs_embedding(self, query: QueryBundle) -> bool:
        return bool(self.index.vector_store.is_embedding_query and query.embedding is None and query.embedding_strs)

    def retrieve(
        self, query: QueryBundle, visibility: Optional[Visibility], pools: Optional[Sequence[Pool]] = None
    ) -> List[NodeWithScore]:
        """Every search's nodes (plan order, duplicates included), for this
        call's ``pools`` (default: the plan's). Each ``NodeWithScore`` keeps
        the store's score."""
        if self._needs_embedding(query):
            embedding = self.embed_model.get_agg_embedding_from_queries(query.embedding_strs)
            query = dataclasses.replace(query, embedding=embedding)
        plan, searches = self._retrievers(visibility, pools)
        results = []
        for search, retriever in searches:
            exact = self._always_exactly(search)
            results.append(exact if exact is not None else retriever.retrieve(query))
        return plan.collect([search for search, _ in searches], results)

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

    async def aretrieve(
        self, query: QueryBundle, visibility: Optional[Visibility], pools: Optional[Sequence[Pool]] = None
    ) -> List[NodeWithScore]:
        """:meth:`retrieve`, the searches concurrently."""
        if self._needs_embedding(query):
            embedding = await self.embed_model.aget_agg_embedding_from_queries(query.embedding_strs)
            query = dataclasses.replace(query, embedding=embedding)
        plan, searches = self._retrievers(visibility, pools)

        async def one(search: Search, retriever: BaseRetriever) -> List[NodeWithScore]:
            exact = await self._aalways_exactly(search)
            return exact if exact is not None else await retriever.aretrieve(query)

        results = await asyncio.gather(*(one(search, retriever) for search, retriever in searches))
        return plan.collect([search for search, _ in searches], results)
