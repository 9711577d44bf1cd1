"""PoolSplitRetriever: pool-split selection as a LlamaIndex retriever."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from llama_index.core.indices.vector_store.base import VectorStoreIndex
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters

from .._frameworks import (
    cap_round_robin,
    check_pools,
    select_with,
)
from ..index import MemoryIndex
from ..poolsplit import Pool, Scorer, Selection, TokenCounter, Visibility, default_scorer
from ..render import explain
from .events import announce
from .nodes import AnyNode, NodeConverter, llama_counter


class PoolSplitRetriever(BaseRetriever):
    """Retrieve nodes into reserved per-type budgets, corrections first.

    Args:
        pools: the pool plan.
        nodes: the memory (nodes or documents), held in a ``MemoryIndex``.
        k: cap on contextual nodes, dealt round-robin across pools;
            always-scope nodes come on top of it. None: the pools' caps.
        token_counter: cost of a node without ``token_count`` metadata
            (default: LlamaIndex's tokenizer).
        scorer: ranking function (default: the spec's lexical scorer).
        tags / project: scoring context for every query.
        now: fixed reference time (default: each call's time).
        scope: a :class:`~poolsplit_adapters.Visibility` (exact namespace or
            explicit chain, required tags, required source); default none.
        show_selection_to_llm: keep the ``poolsplit`` metadata in the LLM view.

    Use :meth:`from_vector_store_index` to recall per pool from an index.
    """

    def __init__(
        self,
        pools: Sequence[Pool],
        nodes: Optional[Sequence[AnyNode]] = None,
        *,
        k: Optional[int] = None,
        token_counter: Optional[TokenCounter] = None,
        scorer: Scorer = default_scorer,
        tags: Sequence[str] = (),
        project: Optional[str] = None,
        now: Optional[datetime.datetime] = None,
        visibility: Optional[Visibility] = None,
        show_selection_to_llm: bool = False,
        _recall: Optional[_Recall] = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.pools = check_pools(pools)
        if (nodes is None) == (_recall is None):
            raise ValueError("PoolSplitRetriever needs nodes=, or use PoolSplitRetriever.from_vector_store_index(...)")
        if k is not None and k < 0:
            raise ValueError("k must be >= 0, got %r" % (k,))
        self.k = k
        self.token_counter = token_counter or llama_counter()
        self.scorer = scorer
        self.context_tags = list(tags)
        self.project = project
        self.now = now
        self.visibility = visibility
        self._selector = NodeConverter(show_selection_to_llm)
        self._recall = _recall
        self._index: Optional[MemoryIndex] = None
        self._source: Dict[int, BaseNode] = {}
        self.last_selection: Optional[Selection] = None
        if nodes is not None:
            entries, self._source = NodeConverter.entries(nodes)
            self._index = MemoryIndex(entries, token_counter=self.token_counter)

    @classmethod
    def from_vector_store_index(
        cls,
        index: VectorStoreIndex,
        pools: Sequence[Pool],
        *,
        fetch_k: int = 20,
        always_k: int = 1000,
        type_key: str = "type",
        **kwargs: Any,
    ) -> PoolSplitRetriever:
        """Recall candidates per pool from ``index``, then select.

        Each pool's similarity search runs with ``MetadataFilters`` on
        ``type_key`` (the pool's types, ``IN``), so rare low-priority types
        get candidates even when other types dominate the index; always-scope
        nodes are fetched with a ``scope == "always"`` filter (up to
        ``always_k``), independent of similarity. Nodes need an explicit
        ``type`` in their metadata for the filters to see them.
        """
        plan = check_pools(pools)
        recalls: List[Tuple[str, BaseRetriever]] = []
        scope = kwargs.get("visibility")
        # A namespace scope is pushed down as well: filtered only after
        # recall, a small tenant would lose its candidates to the others.
        tenant = (
            [MetadataFilter(key="namespace", value=list(scope.chain), operator=FilterOperator.IN)]
            if scope is not None and scope.chain
            else []
        )
        for pool in plan:
            if pool.max_entries <= 0 or pool.max_tokens < 1:
                continue
            clauses: List[Union[MetadataFilter, MetadataFilters]] = list(tenant)
            if pool.types is not None:
                clauses.append(MetadataFilter(key=type_key, value=list(pool.types), operator=FilterOperator.IN))
            filters = MetadataFilters(filters=clauses) if clauses else None
            recalls.append(("pool:%s" % pool.name, index.as_retriever(similarity_top_k=fetch_k, filters=filters)))
        always = MetadataFilters(
            filters=[MetadataFilter(key="scope", value="always", operator=FilterOperator.EQ), *tenant]
        )
        recalls.append(("always", index.as_retriever(similarity_top_k=always_k, filters=always)))
        return cls(plan, _recall=_Recall(recalls), **kwargs)

    def explain(self) -> str:
        """The why/why-not table of the most recent call."""
        return "no call yet" if self.last_selection is None else explain(self.last_selection)

    def _context(self, query: QueryBundle) -> Dict[str, Any]:
        return {"message": query.query_str, "tags": self.context_tags, "project": self.project}

    def _choose(self, candidates: Optional[List[NodeWithScore]], query: QueryBundle) -> List[NodeWithScore]:
        if candidates is None:
            assert self._index is not None
            selection = self._index.select(
                self.pools, self._context(query), now=self.now, scorer=self.scorer, visibility=self.visibility
            )
            source = self._source
        else:
            entries, source = NodeConverter.entries(candidates, recalled=True)
            selection = select_with(self, entries, self._context(query))
        self.last_selection = selection
        announce("retriever", selection)
        return self._selector.to_nodes(cap_round_robin(selection, self.k), source)

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        candidates = self._recall.retrieve(query_bundle) if self._recall is not None else None
        return self._choose(candidates, query_bundle)

    async def _aretrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        candidates = await self._recall.aretrieve(query_bundle) if self._recall is not None else None
        return self._choose(candidates, query_bundle)


class _Recall:
    """The per-pool sub-retrievals of a vector-store-backed retriever."""

    def __init__(self, recalls: List[Tuple[str, BaseRetriever]]) -> None:
        self.recalls = recalls

    def retrieve(self, query: QueryBundle) -> List[NodeWithScore]:
        return [n for _, r in self.recalls for n in r.retrieve(query)]

    async def aretrieve(self, query: QueryBundle) -> List[NodeWithScore]:
        results = await asyncio.gather(*(r.aretrieve(query) for _, r in self.recalls))
        return [n for batch in results for n in batch]
