"""Running a recall plan against a LangChain vector store, the query embedded once.

A plan makes several searches per query (one or two per pool, plus the
always-scope fetch). Searching each by text would embed the same query once
per search: with a paid embedding API, that many times the cost and the
latency of every retrieval. So the query is embedded once, with the store's
own embeddings, and each search goes by vector. Only a store that cannot
search by vector (no ``embeddings``, or no ``similarity_search_by_vector``)
is searched by text.
"""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Optional, Tuple

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict

from ..poolsplit import Visibility
from ..recall import RecallPlan, Search
from .filters import FilterBuilder


class StoreSearch(BaseRetriever):
    """One search of the plan as a retriever run, so that traces show each
    search as a child run (tagged with its label) with what it found.

    Example::

        StoreSearch(store=store, vector=store.embeddings.embed_query("deploy"), search_kwargs={"k": 20}).invoke("deploy")
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: VectorStore
    vector: Optional[List[float]] = None
    search_kwargs: Dict[str, Any]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> List[Document]:
        if self.vector is not None:
            return self.store.similarity_search_by_vector(self.vector, **self.search_kwargs)
        return self.store.similarity_search(query, **self.search_kwargs)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> List[Document]:
        if self.vector is not None:
            return await self.store.asimilarity_search_by_vector(self.vector, **self.search_kwargs)
        return await self.store.asimilarity_search(query, **self.search_kwargs)


class VectorRecall:
    """A :class:`~poolsplit_adapters.recall.RecallPlan` over one store.

    Example::

        recall = VectorRecall(store, RecallPlan(pools, fetch_k=20), type_filter(store))
        candidates = recall.run("deploy", None, run_manager)
    """

    def __init__(self, store: VectorStore, plan: RecallPlan, build: FilterBuilder) -> None:
        self.store = store
        self.plan = plan
        self.build = build

    @property
    def searches_by_vector(self) -> bool:
        """Whether the store can search by a vector the plan embedded once."""
        return (
            self.store.embeddings is not None
            and type(self.store).similarity_search_by_vector is not VectorStore.similarity_search_by_vector
        )

    def _runs(
        self, visibility: Optional[Visibility], vector: Optional[List[float]]
    ) -> List[Tuple[Search, StoreSearch]]:
        runs = []
        for search in self.plan.searches(visibility):
            kwargs: Dict[str, Any] = {"k": search.k}
            flt = self.build(search)
            if flt is not None:
                kwargs["filter"] = flt
            runs.append((search, StoreSearch(store=self.store, vector=vector, search_kwargs=kwargs)))
        return runs

    def run(
        self, query: str, visibility: Optional[Visibility], run_manager: CallbackManagerForRetrieverRun
    ) -> List[Document]:
        """Every search's documents (in plan order, duplicates included)."""
        vector = None
        if self.searches_by_vector:
            assert self.store.embeddings is not None
            vector = self.store.embeddings.embed_query(query)
        runs = self._runs(visibility, vector)
        results = [
            retriever.invoke(query, config={"callbacks": run_manager.get_child(search.label)})
            for search, retriever in runs
        ]
        return self.plan.collect([search for search, _ in runs], results)

    async def arun(
        self, query: str, visibility: Optional[Visibility], run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> List[Document]:
        """:meth:`run`, the searches concurrently."""
        vector = None
        if self.searches_by_vector:
            assert self.store.embeddings is not None
            vector = await self.store.embeddings.aembed_query(query)
        runs = self._runs(visibility, vector)
        results = await asyncio.gather(
            *(
                retriever.ainvoke(query, config={"callbacks": run_manager.get_child(search.label)})
                for search, retriever in runs
            )
        )
        return self.plan.collect([search for search, _ in runs], results)
