"""PoolSplitRetriever: pool-split selection as a LangChain retriever."""

from __future__ import annotations

import asyncio
import datetime
import warnings
from dataclasses import replace
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from .._frameworks import (
    check_pools,
    selection_digest,
)
from ..index import MemoryIndex
from ..poolsplit import Pool, Scorer, Selection, TokenCounter, Visibility, default_scorer, select
from ..render import explain
from ..tokens import default_counter
from .documents import SELECTION_EVENT, DocumentConverter

FilterBuilder = Callable[..., Any]


def type_filter(store: VectorStore) -> FilterBuilder:
    """The default filter builder for ``store``:
    ``(types, scope, namespaces=None) -> filter``.

    ``InMemoryVectorStore`` takes a callable, which can apply the "note"
    default for documents without a ``type``. Other stores get the dict
    form most of them accept (``{"type": {"$in": [...]}}``,
    ``{"scope": "always"}``, ``{"namespace": {"$in": [...]}}``); there,
    documents must carry ``type`` explicitly. Pass your own
    ``filter_builder`` for other filter dialects; it is called with
    ``namespaces=`` only when the query is scoped to namespaces.
    """
    if isinstance(store, InMemoryVectorStore):

        def build_callable(
            types: Optional[Tuple[str, ...]], scope: Optional[str], namespaces: Optional[Tuple[str, ...]] = None
        ) -> Any:
            def accept(doc: Document) -> bool:
                if scope is not None and doc.metadata.get("scope") != scope:
                    return False
                if namespaces is not None and doc.metadata.get("namespace") not in namespaces:
                    return False
                return types is None or doc.metadata.get("type", "note") in types

            return accept

        return build_callable

    def build_dict(
        types: Optional[Tuple[str, ...]], scope: Optional[str], namespaces: Optional[Tuple[str, ...]] = None
    ) -> Any:
        clauses: List[Dict[str, Any]] = []
        if types is not None:
            clauses.append({"type": {"$in": list(types)}})
        if scope is not None:
            clauses.append({"scope": scope})
        if namespaces is not None:
            clauses.append({"namespace": {"$in": list(namespaces)}})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    return build_dict


class PoolSplitRetriever(BaseRetriever):
    """A retriever that fills reserved per-type budgets and always returns
    behavioural corrections first.

    Replace ``vectorstore.as_retriever()`` with it in any chain: the output
    is a list of documents like any retriever's, ordered always-scope first
    (input order), then each pool's documents in pool order.

    Args:
        pools: the pool plan (:class:`~poolsplit_adapters.Pool` list).
        documents: standalone mode: the memory, held in a
            :class:`~poolsplit_adapters.MemoryIndex` built once.
        vectorstore: per-pool recall mode (see :meth:`from_vectorstore`).
        base_retriever: pool whatever another retriever returns. It can only
            pool what that retriever returns: if its top-k holds no skill,
            no skill pool can fill. Prefer ``vectorstore`` when you can.
        k: default cap on *contextual* documents per call; always-scope
            documents come on top of ``k``. Slots are dealt round-robin
            across pools. None: the pools' own caps only.
        fetch_k: per-pool recall size in vectorstore mode (default 20).
        always_k: how many always-scope documents one filtered fetch may
            return in vectorstore mode (default 1000; a warning says when the
            fetch came back full and may have been truncated).
        filter_builder: ``(types, scope) -> filter`` for the vector store
            (default: :func:`type_filter`).
        token_counter: cost of a document without ``token_count`` metadata
            (default: tiktoken ``o200k_base``, offline).
        scorer: ranking function (default: the spec's lexical scorer).
        project: default project context for scoring.
        now: fixed reference time (default: the time of each call).
        scope: a :class:`~poolsplit_adapters.Visibility`: exact namespace (or an
            explicit chain), required tags (AND), required source. Default:
            none. Provenance is not required by default: dropping an
            unsourced correction would be worse than showing it with an
            empty ``source``, which the rendered marker makes visible.

    Per call, ``invoke(query, k=..., tags=[...], project=..., now=...,
    namespace=...)`` overrides the defaults (``namespace`` replaces the
    scope's namespace for that call). The selection report of the last call is
    :attr:`last_selection`; every call also emits a ``poolsplit_selection``
    custom callback event with a JSON-friendly digest, visible in tracing
    and in ``astream_events``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    pools: List[Pool]
    documents: Optional[List[Document]] = None
    vectorstore: Optional[VectorStore] = None
    base_retriever: Optional[BaseRetriever] = None
    k: Optional[int] = None
    fetch_k: int = 20
    always_k: int = 1000
    filter_builder: Optional[FilterBuilder] = None
    token_counter: Optional[TokenCounter] = None
    scorer: Scorer = Field(default=default_scorer)
    project: Optional[str] = None
    now: Optional[datetime.datetime] = None
    visibility: Optional[Visibility] = None

    _index: Optional[MemoryIndex] = PrivateAttr(default=None)
    _source: Dict[int, Document] = PrivateAttr(default_factory=dict)
    _last: Optional[Selection] = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _prepare(self) -> PoolSplitRetriever:
        self.pools = check_pools(self.pools)
        modes = [m for m in (self.documents, self.vectorstore, self.base_retriever) if m is not None]
        if len(modes) != 1:
            raise ValueError(
                "PoolSplitRetriever needs exactly one of documents=, vectorstore= or base_retriever= "
                "(got %d)" % len(modes)
            )
        if self.k is not None and self.k < 0:
            raise ValueError("k must be >= 0, got %r" % (self.k,))
        if self.token_counter is None:
            self.token_counter = default_counter()
        return self

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        # Built here rather than in the validator so that a malformed document
        # raises EntryError (naming it) instead of a wrapped validation error.
        if self.documents is not None:
            entries, self._source = DocumentConverter.entries(self.documents)
            self._index = MemoryIndex(entries, token_counter=self.token_counter or default_counter())

    @classmethod
    def from_vectorstore(
        cls,
        vectorstore: VectorStore,
        pools: Sequence[Pool],
        *,
        fetch_k: int = 20,
        filter_builder: Optional[FilterBuilder] = None,
        **kwargs: Any,
    ) -> PoolSplitRetriever:
        """Recall candidates per pool from ``vectorstore``, then select.

        Each pool runs its own similarity search (``fetch_k`` results) with
        its types pushed down as a filter, so a pool of rare, low-priority
        types gets candidates even when the store is dominated by other
        types; always-scope documents are fetched with a scope filter,
        independent of how similar they are to the query. Pooling after one
        shared top-k would only move the starvation one stage earlier.

        Recalled documents are put in id order before selection (recall
        order is similarity order and changes with every query), so
        always-scope documents come back in a stable order: by id.
        """
        return cls(vectorstore=vectorstore, pools=list(pools), fetch_k=fetch_k, filter_builder=filter_builder, **kwargs)

    @property
    def last_selection(self) -> Optional[Selection]:
        """The full selection report of the most recent call (None before
        the first). With concurrent calls, the last one to finish."""
        return self._last

    def explain(self) -> str:
        """The why/why-not table of the most recent call."""
        if self._last is None:
            return "no call yet"
        return explain(self._last)

    # -- recall ---------------------------------------------------------------------

    def _recall_plan(self, view: Optional[Visibility]) -> List[Tuple[str, Dict[str, Any]]]:
        """(child tag, search kwargs) for every sub-retrieval in vectorstore mode.

        A namespace scope is pushed down too: filtered only after recall, a
        small tenant in a large shared store would lose its candidates to the
        others' top-k, the same starvation one stage earlier."""
        assert self.vectorstore is not None
        build = self.filter_builder or type_filter(self.vectorstore)
        chain = view.chain if view is not None else ()

        def make(types: Optional[Tuple[str, ...]], scope: Optional[str]) -> Any:
            return build(types, scope, namespaces=chain) if chain else build(types, scope)

        plan = []
        for pool in self.pools:
            if pool.max_entries <= 0 or pool.max_tokens < 1:
                continue  # nothing contextual can load: its always-scope docs come below
            search: Dict[str, Any] = {"k": self.fetch_k}
            flt = make(pool.types, None)
            if flt is not None:
                search["filter"] = flt
            plan.append(("pool:%s" % pool.name, search))
        plan.append(("always", {"k": self.always_k, "filter": make(None, "always")}))
        return plan

    def _sub_retriever(self, search: Dict[str, Any]) -> BaseRetriever:
        assert self.vectorstore is not None
        return self.vectorstore.as_retriever(search_kwargs=search)

    def _check_always_fetch(self, tag: str, docs: Sequence[Document]) -> None:
        if tag == "always" and len(docs) >= self.always_k:
            warnings.warn(
                "the always-scope fetch returned always_k=%d documents and may have been truncated: "
                "raise always_k so that every correction loads" % self.always_k,
                stacklevel=3,
            )

    # -- the retriever protocol --------------------------------------------------------

    def _context(self, query: str, tags: Optional[Sequence[str]], project: Optional[str]) -> Dict[str, Any]:
        return {"message": query, "tags": list(tags or ()), "project": project if project is not None else self.project}

    def _view(self, namespace: Union[None, str, Sequence[str]]) -> Optional[Visibility]:
        if namespace is None:
            return self.visibility
        base = self.visibility or Visibility()
        chain = namespace if isinstance(namespace, str) else tuple(namespace)
        return replace(base, namespace=chain)

    def _select(
        self, candidates: Optional[List[Document]], context: Dict[str, Any], now: Any, view: Optional[Visibility]
    ) -> Tuple[Selection, Dict[int, Document]]:
        moment = now if now is not None else self.now
        if candidates is None:
            assert self._index is not None
            return self._index.select(
                self.pools, context, now=moment, scorer=self.scorer, visibility=view
            ), self._source
        entries, source = DocumentConverter.entries(candidates, recalled=self.vectorstore is not None)
        assert self.token_counter is not None
        selection = select(
            entries,
            self.pools,
            context,
            scorer=self.scorer,
            token_counter=self.token_counter,
            now=moment,
            visibility=view,
        )
        return selection, source

    def _finish(self, selection: Selection, source: Dict[int, Document], k: Optional[int]) -> List[Document]:
        self._last = selection
        return DocumentConverter.to_documents(selection, k if k is not None else self.k, source)

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: Optional[int] = None,
        tags: Optional[Sequence[str]] = None,
        project: Optional[str] = None,
        now: Optional[datetime.datetime] = None,
        namespace: Union[None, str, Sequence[str]] = None,
    ) -> List[Document]:
        view = self._view(namespace)
        candidates: Optional[List[Document]] = None
        if self.vectorstore is not None:
            candidates = []
            for tag, search in self._recall_plan(view):
                docs = self._sub_retriever(search).invoke(query, config={"callbacks": run_manager.get_child(tag)})
                self._check_always_fetch(tag, docs)
                candidates += docs
        elif self.base_retriever is not None:
            candidates = self.base_retriever.invoke(query, config={"callbacks": run_manager.get_child("base")})
        selection, source = self._select(candidates, self._context(query, tags, project), now, view)
        run_manager.get_child().on_custom_event(SELECTION_EVENT, selection_digest(selection), run_id=run_manager.run_id)
        return self._finish(selection, source, k)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: Optional[int] = None,
        tags: Optional[Sequence[str]] = None,
        project: Optional[str] = None,
        now: Optional[datetime.datetime] = None,
        namespace: Union[None, str, Sequence[str]] = None,
    ) -> List[Document]:
        view = self._view(namespace)
        candidates: Optional[List[Document]] = None
        if self.vectorstore is not None:
            plan = self._recall_plan(view)
            results = await asyncio.gather(
                *(
                    self._sub_retriever(search).ainvoke(query, config={"callbacks": run_manager.get_child(tag)})
                    for tag, search in plan
                )
            )
            candidates = []
            for (tag, _), docs in zip(plan, results):
                self._check_always_fetch(tag, docs)
                candidates += docs
        elif self.base_retriever is not None:
            candidates = await self.base_retriever.ainvoke(query, config={"callbacks": run_manager.get_child("base")})
        selection, source = self._select(candidates, self._context(query, tags, project), now, view)
        await run_manager.get_child().on_custom_event(
            SELECTION_EVENT, selection_digest(selection), run_id=run_manager.run_id
        )
        return self._finish(selection, source, k)
