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
has it) and :meth:`VectorRecall.run_scored` returns each document's score.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Dict, List, Optional, Sequence, Tuple

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, PrivateAttr

from ..poolsplit import Pool, Visibility
from ..recall import RecallPlan, Search
from .filters import FilterBuilder

# Not part of VectorStore's interface (InMemoryVectorStore and many others have it).
_SCORED_SEARCH = "similarity_search_with_score_by_vector"


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
    with_scores: bool = False
    """Ask the store for its scores (kept in :attr:`scores`, by document id)."""

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

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> List[Document]:
        if self.vector is not None and self.with_scores:
            search = getattr(self.store, _SCORED_SEARCH)
            return self._keep(search(self.vector, **self.search_kwargs))
        if self.vector is not None:
            return self.store.similarity_search_by_vector(self.vector, **self.search_kwargs)
        return self.store.similarity_search(query, **self.search_kwargs)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> List[Document]:
        if self.vector is not None and self.with_scores:
            # No async twin in LangChain's interface: run it off the event loop.
            search = getattr(self.store, _SCORED_SEARCH)
            return self._keep(await run_in_executor(None, search, self.vector, **self.search_kwargs))
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

    @property
    def scores_available(self) -> bool:
        """Whether the store returns its scores when searched by vector."""
        return self.searches_by_vector and callable(getattr(self.store, _SCORED_SEARCH, None))

    def _runs(
        self,
        visibility: Optional[Visibility],
        vector: Optional[List[float]],
        pools: Optional[Sequence[Pool]],
        scored: bool,
    ) -> Tuple[RecallPlan, List[Tuple[Search, StoreSearch]]]:
        plan = self.plan if pools is None else dataclasses.replace(self.plan, pools=tuple(pools))
        runs = []
        for search in plan.searches(visibility):
            kwargs: Dict[str, Any] = {"k": search.k}
            flt = self.build(search)
            if flt is not None:
                kwargs["filter"] = flt
            retriever = StoreSearch(
                store=self.store, vector=vector, search_kwargs=kwargs, with_scores=scored and vector is not None
            )
            runs.append((search, retriever))
        return plan, runs

    @staticmethod
    def _scores(runs: Sequence[Tuple[Search, StoreSearch]]) -> Dict[str, float]:
        scores: Dict[str, float] = {}
        for _, retriever in runs:
            scores.update(retriever.scores)
        return scores

    def run(
        self, query: str, visibility: Optional[Visibility], run_manager: CallbackManagerForRetrieverRun
    ) -> List[Document]:
        """Every search's documents (in plan order, duplicates included)."""
        return self.run_scored(query, visibility, run_manager)[0]

    def run_scored(
        self,
        query: str,
        visibility: Optional[Visibility],
        run_manager: CallbackManagerForRetrieverRun,
        *,
        pools: Optional[Sequence[Pool]] = None,
        scored: bool = False,
    ) -> Tuple[List[Document], Dict[str, float]]:
        """:meth:`run` for this call's ``pools`` (default: the plan's), and,
        with ``scored`` on a store that returns scores, document id -> the
        store's score (empty otherwise)."""
        vector = None
        if self.searches_by_vector:
            assert self.store.embeddings is not None
            vector = self.store.embeddings.embed_query(query)
        plan, runs = self._runs(visibility, vector, pools, scored and self.scores_available)
        results = [
            retriever.invoke(query, config={"callbacks": run_manager.get_child(search.label)})
            for search, retriever in runs
        ]
        return plan.collect([search for search, _ in runs], results), self._scores(runs)

    async def arun(
        self, query: str, visibility: Optional[Visibility], run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> List[Document]:
        """:meth:`run`, the searches concurrently."""
        return (await self.arun_scored(query, visibility, run_manager))[0]

    async def arun_scored(
        self,
        query: str,
        visibility: Optional[Visibility],
        run_manager: AsyncCallbackManagerForRetrieverRun,
        *,
        pools: Optional[Sequence[Pool]] = None,
        scored: bool = False,
    ) -> Tuple[List[Document], Dict[str, float]]:
        """:meth:`run_scored`, the searches concurrently."""
        vector = None
        if self.searches_by_vector:
            assert self.store.embeddings is not None
            vector = await self.store.embeddings.aembed_query(query)
        plan, runs = self._runs(visibility, vector, pools, scored and self.scores_available)
        results = await asyncio.gather(
            *(
                retriever.ainvoke(query, config={"callbacks": run_manager.get_child(search.label)})
                for search, retriever in runs
            )
        )
        return plan.collect([search for search, _ in runs], results), self._scores(runs)
