"""PoolSplitRetriever: pool-split selection as a LangChain retriever."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun as AsyncRun
from langchain_core.callbacks import CallbackManagerForRetrieverRun as SyncRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, PrivateAttr
from typing_extensions import Unpack

from ..call import AdapterCall, StoreCall, check_recall_options, checked_metric, checked_plan
from ..checks import ArgumentError, check_keywords_only
from ..index import MemoryIndex
from ..poolsplit import Pool, Selection
from ..recall import RecallPlan, present_types, store_scoring, with_query_vector
from ..render import explain_last
from ..reports import event_payload
from ..settings import AdapterSettings, CallOverrides
from ..storable import storable_form
from ..stores.vectorstores.langchain_filters import FilterBuilder, type_filter
from ..stores.vectorstores.langchain_search import (
    DocumentQuery,
    DocumentSearcher,
    ScoredDocument,
    VectorRecall,
    hit_documents,
    hit_scores,
)
from .documents import SELECTION_EVENT, DocumentConverter, checked_documents


@dataclass(frozen=True)
class _Held:
    """The index over ``documents=`` and what it is read with, replaced as
    one value when ``documents`` is assigned (a call reads one of them,
    never an index with another list's way back)."""

    index: MemoryIndex
    source: dict[int, Document]
    types: frozenset[str]

    @classmethod
    def of(cls, documents: list[Document], counter: Any, scorer: Any) -> _Held:
        """The index over checked ``documents`` (their costs by ``counter``),
        built with ``scorer``'s structures: the first call costs what the
        others do."""
        index, source = DocumentConverter.index(documents, counter, (scorer,))
        return cls(index, source, present_types(d.metadata for d in documents))


@dataclass(frozen=True)
class _StoreMode:
    """The vector-store mode's calls: the query prepared once by the
    searcher (in a form every store can take; embedded there), the recall
    grown over the store by that one query (`StoreCall`; the scorer holds
    the searcher's query vector when the store's vector space is the
    scorer's), and the selection's documents. The searcher is held through
    the recall protocol alone (`DocumentSearcher`), so any searcher of the
    protocol serves. Built with the retriever's searcher, plan and metric,
    and replaced with them."""

    recall: DocumentSearcher
    plan: RecallPlan
    metric: Any
    reuse_query: bool

    def _growing(self, call: AdapterCall, query: DocumentQuery) -> StoreCall[ScoredDocument]:
        """One call's growing recall over the store (`StoreCall`), for a prepared ``query``."""
        vector = self.recall.query_vector(query)
        scorer = with_query_vector(call.scorer, query.text, vector) if self.reuse_query else call.scorer
        entries = functools.partial(DocumentConverter.entries, recalled=True)
        return StoreCall(call, self.plan, scorer, self.metric, lambda hits: entries(hit_documents(hits)), hit_scores)

    def select(self, call: AdapterCall, query: str, run_manager: SyncRun) -> tuple[Selection, list[Document]]:
        """The call's selection over the store and the documents it returns."""
        # What an embedding API or a store can take (a lone surrogate cannot be encoded).
        asked = self.recall.prepare(DocumentQuery(storable_form(query), run_manager))
        one = self._growing(call, asked)
        selection = one.fill(lambda searches: self.recall.run(searches, asked))
        return selection, DocumentConverter.to_documents(selection, call.finish(selection), one.source)

    async def aselect(self, call: AdapterCall, query: str, run_manager: AsyncRun) -> tuple[Selection, list[Document]]:
        """Async `select`."""
        asked = await self.recall.aprepare(DocumentQuery(storable_form(query), run_manager))  # as in select
        one = self._growing(call, asked)
        selection = await one.afill(lambda searches: self.recall.arun(searches, asked))
        return selection, DocumentConverter.to_documents(selection, call.finish(selection), one.source)


#: The sources and the fields the vector-store mode (`_StoreMode`) is built
#: from: assigning one checks the one source and rebuilds that mode.
_RECALL_SETTINGS = frozenset(
    {
        "vectorstore",
        "base_retriever",
        "fetch_k",
        "always_k",
        "max_fetch_k",
        "breadth",
        "store_metric",
        "filter_builder",
        "scorer",
        "setup_store",
    }
)


_SOURCES = {"vectorstore": (VectorStore, "a LangChain vector store"), "base_retriever": (BaseRetriever, "LangChain's")}


class PoolSplitRetriever(AdapterSettings, BaseRetriever):
    """A retriever that fills reserved per-type budgets and always returns
    behavioural corrections first.

    Replace ``vectorstore.as_retriever()`` with it in any chain: the output
    is a list of documents like any retriever's, ordered always-scope first
    (input order), then each pool's documents in pool order. Give exactly
    one source of documents:

    * ``documents=[...]``: the memory itself, held in a
      [`MemoryIndex`][] built when the list is given:
      at construction, and again on ``retriever.documents = [...]`` (checked
      as at construction; a bad list raises and changes nothing). The list
      is read then, so a change made in place (``retriever.documents.append``,
      an edited document) is not seen: assign a new list, e.g.
      ``retriever.documents = [*retriever.documents, doc]`` (an
      [`expand_tool`][] made before reads the documents it was made over);
    * a vector store, through [`from_vectorstore`][] (per-pool recall);
    * ``base_retriever=``: pool whatever another retriever returns. It can
      only pool what that retriever returns: if its top-k holds no skill, no
      skill pool can fill. Prefer a vector store when you can.

    The selection settings (``pools``, ``k``, ``token_counter``, ``scorer``,
    ``visibility``, ``project``, ``now``) are those of
    `AdapterSettings`.

    Per call, ``invoke(query, k=..., tags=[...], project=..., now=...,
    namespace=..., goal=..., action_type=..., phase=...)`` overrides the
    defaults (``namespace`` replaces the visibility's namespace for that
    call; the last three are the task signals ``pools="auto"`` reads).

    ``pools="auto"`` with ``total_tokens=`` and ``total_entries=`` plans the
    pools per call for the detected task type (recorded in
    ``selection.notes["task_type"]``); ``progressive=True`` loads summaries
    first (returned documents then carry the summary as their text and
    ``metadata["poolsplit"]["layer"]``; [`expand_tool`][] fetches the full
    text); ``embeddings=`` ranks by embedding similarity. Every call emits a
    ``poolsplit_selection`` custom callback event carrying
    ``render.selection_dict(selection)`` (visible in tracing and ``astream_events``);
    [`capture_selections`][] gives a caller its
    own [`Selection`][], and `last_selection`
    is the selection of the call that finished last.

    Example:
        ```python
        pools = [
            Pool("fixes", 0, 0, ("correction",)),  # every always-scope correction, outside the budgets
            Pool("notes", 400, 6, ("note",)),
            Pool("skills", 100, 1, ("skill",)),  # reserved: notes cannot take its slot
        ]
        retriever = PoolSplitRetriever(documents=docs, pools=pools)
        chain = {"context": retriever | format_documents, "question": RunnablePassthrough()} | prompt | model
        with capture_selections() as mine:
            docs = retriever.invoke("did the deploy finish?", k=3)
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    documents: Optional[list[Document]] = Field(default=None, description="Standalone mode: the memory.")
    vectorstore: Optional[VectorStore] = Field(default=None, description="Per-pool recall mode (see from_vectorstore).")
    base_retriever: Optional[BaseRetriever] = Field(
        default=None, description="Pool what another retriever returns (it can only pool what that returns)."
    )
    fetch_k: int = Field(default=RecallPlan.fetch_k, description="Vector-store mode: see RecallPlan.fetch_k.")
    always_k: int = Field(default=RecallPlan.always_k, description="Vector-store mode: see RecallPlan.always_k.")
    max_fetch_k: int = Field(
        default=RecallPlan.max_fetch_k,
        description="Vector-store mode: a pool search grows up to this many results (see RecallPlan.max_fetch_k).",
    )
    breadth: float = Field(
        default=RecallPlan.breadth,
        description="Vector-store mode: recall grows until a pool's candidates hold this many times its budget "
        "(see RecallPlan.breadth).",
    )
    filter_builder: Optional[FilterBuilder] = Field(
        default=None,
        description="Vector-store mode: (Search) -> the store's filter (default: type_filter(vectorstore)).",
    )
    setup_store: bool = Field(
        default=True,
        description="Vector-store mode: on its first search, create what the store's pool searches need when it is "
        "missing (over PGVector: the filter index, see stores.postgres.ensure_filter_index); False: create nothing.",
    )
    store_metric: Optional[str] = Field(
        default=None,
        description="Vector-store mode with embeddings=: what the store's scores measure (see recall.store_metric).",
    )

    _held: Optional[_Held] = PrivateAttr(default=None)
    _recall: Optional[DocumentSearcher] = PrivateAttr(default=None)
    _metric: Any = PrivateAttr(default=None)
    _store: Optional[_StoreMode] = PrivateAttr(default=None)

    def __init__(self, *given: Any, **data: Any) -> None:
        check_keywords_only(type(self).__name__, given)
        check_recall_options(data, _SOURCES)
        if data.get("documents") is not None:
            data["documents"] = checked_documents(data["documents"])
        super().__init__(**data)
        self._one_source(self.documents, self.vectorstore, self.base_retriever)
        self._build_recall()
        if self.documents is not None:
            self._held = self._indexed(self.documents)

    def _build_recall(self) -> None:
        """The searcher of the vector-store mode and its calls (`_StoreMode`),
        from the current settings (None in the other modes)."""
        self._recall, self._metric, self._store = None, None, None
        if self.vectorstore is not None:
            # Each call recalls for its own plan (pools="auto" varies by
            # message); the recall plan holds the search sizes.
            plan = checked_plan(
                fetch_k=self.fetch_k, always_k=self.always_k, max_fetch_k=self.max_fetch_k, breadth=self.breadth
            )
            self._metric = checked_metric(self.vectorstore, self.store_metric)
            build = self.filter_builder or type_filter(self.vectorstore)
            reuse_query, scored = store_scoring(self.scorer, self.vectorstore.embeddings, self._metric)
            self._recall = VectorRecall(self.vectorstore, build, scored=scored, setup_store=self.setup_store)
            self._store = _StoreMode(self._recall, plan, self._metric, reuse_query)

    def __setattr__(self, name: str, value: Any) -> None:
        """Assigning ``documents`` rebuilds the index, and assigning a source
        or a recall setting (`_RECALL_SETTINGS`) rebuilds the recall
        (the other settings are read per call). Either is checked and built
        first: a bad value raises and leaves the retriever as it was."""
        if name in _RECALL_SETTINGS and "_recall" in (self.__pydantic_private__ or {}):
            check_recall_options({name: value})
            before = getattr(self, name)
            kept = (self._recall, self._metric, self._store)
            super().__setattr__(name, value)
            try:
                self._one_source(self.documents, self.vectorstore, self.base_retriever)
                self._build_recall()
            except BaseException:
                super().__setattr__(name, before)
                self._recall, self._metric, self._store = kept
                raise
            return
        if name != "documents":
            super().__setattr__(name, value)
            return
        documents = None if value is None else checked_documents(value)
        self._one_source(documents, self.vectorstore, self.base_retriever)
        held = None if documents is None else self._indexed(documents)
        super().__setattr__("documents", documents)
        self._held = held

    @staticmethod
    def _one_source(*sources: Any) -> None:
        given = sum(source is not None for source in sources)
        if given != 1:
            raise ArgumentError(
                "PoolSplitRetriever needs exactly one of documents=, vectorstore= or base_retriever= (got %d)" % given
            )

    def _indexed(self, documents: list[Document]) -> _Held:
        assert self.token_counter is not None
        return _Held.of(documents, self.token_counter, self.scorer)

    def _entry_types(self) -> Optional[frozenset[str]]:
        """The types the source holds, for ``pools="auto"``: the documents'
        (read when they are given), else the store's (`VectorRecall.entry_types`)."""
        if self._held is not None:
            return self._held.types
        return None if self._recall is None else self._recall.entry_types()

    @classmethod
    def from_vectorstore(
        cls, vectorstore: VectorStore, pools: Union[Sequence[Pool], str], **options: Any
    ) -> PoolSplitRetriever:
        """Recall candidates per pool from ``vectorstore``, then select.

        ``options``: ``fetch_k``, ``always_k``, ``max_fetch_k``, ``breadth`` (see
        `RecallPlan`), ``filter_builder``,
        ``setup_store`` and the selection settings. The searches are the plan's: each pool's
        types pushed down as a filter (plus a search for documents without
        ``type`` when the pool admits ``"note"``), the always-scope documents
        fetched by a scope filter independent of similarity, and a namespace
        pushed down into all of them. The query is embedded once per call
        with the store's embeddings and every search goes by vector; each
        search is a child run tagged with its label (``pool:<name>``,
        ``pool:<name>:untyped``, ``always``).

        Recalled documents are put in id order before selection, so
        always-scope documents come back in a stable order: by id.

        Budgets are filled: a pool search that came back full while its
        pool's budget has room is run again with ``k`` at least doubled, up
        to ``max_fetch_k`` (`FillingRecall`),
        by the same query vector; it also grows until a pool's candidates
        hold ``breadth`` (default 2) times its budget, so the scorer's order
        chooses from more than fits. ``selection.notes["recall"]`` says how far
        each pool's recall went and which pools the store ran out for.

        With ``embeddings=`` (the store's own model) the relevance of each
        recalled document is the store's score, turned into a cosine by
        ``store_metric`` (known for ``InMemoryVectorStore``), so documents
        are not embedded again per query, and the query vector of the
        store's searches is the scorer's too: one query embedding per call,
        sync and async. With ``pools="auto"`` each call recalls for its own plan.

        Over LangChain's ``PGVector`` the first search creates the btree
        index the pool searches need when it is missing, then ``ANALYZE``
        (`ensure_filter_index`:
        once, under an advisory lock, so concurrent first uses create it
        once): without it each pool search walked the HNSW index, measured
        at 100k rows at many times one plain filtered search. It needs the
        right to create an index on the table; where that is refused the
        searches go on without it (a
        `StoreSetupWarning` says
        so). ``setup_store=False`` creates nothing.
        """
        return cls(vectorstore=vectorstore, pools=pools, **options)  # checked (and copied) as every adapter's

    def expand_tool(self) -> Any:
        """The ``expand_memory(entry_id)`` tool over this retriever's own
        documents (``documents=`` mode), limited to what its visibility lets
        a query see: give it to an agent that reads this retriever's
        summaries (``progressive=True``)."""
        if self._held is None:
            raise ArgumentError(
                "expand_tool() needs documents= mode; for a vector store, build "
                "memory.expand_tools.langchain_expand_tool over the memory the agent may read"
            )
        from ..memory.expand_tools import langchain_expand_tool
        from ..recall import VisibleEntries

        return langchain_expand_tool(VisibleEntries(self._held.index, self.visibility))

    def explain(self) -> str:
        """The why/why-not table of the call that finished last."""
        return explain_last(self.last_selection)

    # -- the retriever protocol --------------------------------------------------------

    def _finish(self, call: AdapterCall, found: Optional[list[Document]]) -> tuple[Selection, list[Document]]:
        if found is None:
            held = self._held
            assert held is not None
            selection, source = call.select_in(held.index), held.source
        else:
            entries, source = DocumentConverter.entries(found)  # another retriever's: one search, no growth
            selection = call.select(entries)
        return selection, DocumentConverter.to_documents(selection, call.finish(selection), source)

    def _get_relevant_documents(
        self, query: str, *, run_manager: SyncRun, **kw: Unpack[CallOverrides]
    ) -> list[Document]:
        call = AdapterCall(self, query, kw, entry_types=self._entry_types)
        if self._store is not None:
            selection, documents = self._store.select(call, query, run_manager)
        elif self.base_retriever is None:
            selection, documents = self._finish(call, None)
        else:  # what another retriever returns, as a child run tagged "base"
            found = self.base_retriever.invoke(query, config={"callbacks": run_manager.get_child("base")})
            selection, documents = self._finish(call, found)
        run_manager.get_child().on_custom_event(SELECTION_EVENT, event_payload(selection), run_id=run_manager.run_id)
        return documents

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncRun, **kw: Unpack[CallOverrides]
    ) -> list[Document]:
        call = AdapterCall(self, query, kw, entry_types=self._entry_types)
        if self._store is not None:
            selection, documents = await self._store.aselect(call, query, run_manager)
        elif self.base_retriever is None:
            selection, documents = self._finish(call, None)
        else:  # as in _get_relevant_documents
            found = await self.base_retriever.ainvoke(query, config={"callbacks": run_manager.get_child("base")})
            selection, documents = self._finish(call, found)
        await run_manager.get_child().on_custom_event(
            SELECTION_EVENT, event_payload(selection), run_id=run_manager.run_id
        )
        return documents
