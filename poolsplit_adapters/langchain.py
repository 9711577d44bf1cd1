"""LangChain adapters: pool-split selection as a drop-in retriever,
document compressor and LCEL runnable.

Data flows one way: ``Document`` -> entry (metadata + ``content`` + ``id``)
-> core selector -> selection -> new ``Document`` objects, always-scope
corrections first, then each pool's documents in pool order. The caller's
documents are never mutated: returned documents are copies whose metadata
gains one key, ``"poolsplit"`` (``{"pool", "score", "always"}``).

Entry points:

* :class:`PoolSplitRetriever` standalone over documents
  (``PoolSplitRetriever(documents=..., pools=...)``), over a vector store with
  per-pool recall (:meth:`PoolSplitRetriever.from_vectorstore`), or over any
  retriever (``base_retriever=...``).
* :class:`PoolSplitCompressor` for ``ContextualCompressionRetriever`` and
  compressor pipelines, and :meth:`PoolSplitCompressor.as_runnable` for
  ``retriever | selector`` in LCEL.
* :func:`format_documents`: provenance-tagged text for a prompt.
"""

from __future__ import annotations

import asyncio
import datetime
import warnings
from dataclasses import replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
    Callbacks,
)
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from ._frameworks import (
    SELECTION_KEY,
    cap_round_robin,
    check_pools,
    entry_from,
    omitted_by_pool,
    select_with,
    selection_digest,
    selection_metadata,
)
from .index import MemoryIndex
from .poolsplit import Pool, Visibility, Scorer, Selection, TokenCounter, default_scorer, select
from .render import explain, marker, omission_line

__all__ = [
    "PoolSplitRetriever",
    "PoolSplitCompressor",
    "document_to_entry",
    "format_documents",
    "type_filter",
    "SELECTION_KEY",
    "SELECTION_EVENT",
]

#: Name of the custom callback event carrying each call's selection report.
SELECTION_EVENT = "poolsplit_selection"

FilterBuilder = Callable[..., Any]


def document_to_entry(document: Document, position: int = 0) -> Dict[str, Any]:
    """The entry for a document: its metadata, ``content`` = page content,
    ``id`` = ``document.id`` (else ``metadata["id"]``).

    Raises:
        EntryError: malformed metadata, naming the document and the field.
    """
    return entry_from(document.page_content, document.metadata, document.id, kind="document", position=position)


def _default_counter() -> TokenCounter:
    from .tokens import default_counter

    return default_counter()


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


class _Selector:
    """Selection over documents, shared by the retriever and the compressor."""

    @staticmethod
    def entries(
        documents: Sequence[Document], *, recalled: bool = False
    ) -> Tuple[List[Dict[str, Any]], Dict[int, Document]]:
        """Entries for ``documents`` and the way back to each document.

        ``recalled``: the documents come from several recalls of one store,
        so the same id seen twice is the same document and is kept once, and
        they are put in id order first (see below).
        """
        entries, source = [], {}
        seen: Set[str] = set()
        if recalled:
            # Recall order is similarity order, which changes with every
            # query; id order keeps corrections (and complete ties) stable.
            documents = sorted(documents, key=lambda d: (d.id is None, d.id or ""))
        for position, doc in enumerate(documents):
            entry = document_to_entry(doc, position)
            key = entry.get("id")
            if recalled and key is not None:
                if key in seen:
                    continue
                seen.add(key)
            entries.append(entry)
            source[id(entry)] = doc
        return entries, source

    @staticmethod
    def to_documents(selection: Selection, k: Optional[int], source: Mapping[int, Document]) -> List[Document]:
        chosen = cap_round_robin(selection, k)
        omitted = omitted_by_pool(selection, chosen)
        out = []
        for c in chosen:
            original = source[id(c.entry)]
            metadata = dict(original.metadata)
            metadata[SELECTION_KEY] = selection_metadata(c, omitted)
            out.append(Document(page_content=original.page_content, metadata=metadata, id=original.id))
        return out


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
            self.token_counter = _default_counter()
        return self

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        # Built here rather than in the validator so that a malformed document
        # raises EntryError (naming it) instead of a wrapped validation error.
        if self.documents is not None:
            entries, self._source = _Selector.entries(self.documents)
            self._index = MemoryIndex(entries, token_counter=self.token_counter or _default_counter())

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
            return self._index.select(self.pools, context, now=moment, scorer=self.scorer, visibility=view), self._source
        entries, source = _Selector.entries(candidates, recalled=self.vectorstore is not None)
        assert self.token_counter is not None
        selection = select(
            entries, self.pools, context, scorer=self.scorer, token_counter=self.token_counter, now=moment, visibility=view
        )
        return selection, source

    def _finish(self, selection: Selection, source: Dict[int, Document], k: Optional[int]) -> List[Document]:
        self._last = selection
        return _Selector.to_documents(selection, k if k is not None else self.k, source)

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


class PoolSplitCompressor(BaseDocumentCompressor):
    """Re-apply pool budgets to documents another stage produced.

    Use it in ``ContextualCompressionRetriever(base_compressor=...)`` or a
    ``DocumentCompressorPipeline``; put it last, since a later filter could
    drop the corrections it puts first. Same arguments as the retriever's
    selection part (``pools``, ``k``, ``token_counter``, ``scorer``,
    ``project``, ``now``, ``scope``); :attr:`last_selection` holds the last report.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    pools: List[Pool]
    k: Optional[int] = None
    token_counter: Optional[TokenCounter] = None
    scorer: Scorer = Field(default=default_scorer)
    project: Optional[str] = None
    now: Optional[datetime.datetime] = None
    visibility: Optional[Visibility] = None

    _last: Optional[Selection] = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _prepare(self) -> PoolSplitCompressor:
        self.pools = check_pools(self.pools)
        if self.token_counter is None:
            self.token_counter = _default_counter()
        return self

    @property
    def last_selection(self) -> Optional[Selection]:
        """The selection report of the most recent call."""
        return self._last

    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Optional[Callbacks] = None,
    ) -> List[Document]:
        """Select from ``documents`` for ``query`` (new documents returned)."""
        entries, source = _Selector.entries(documents)
        assert self.token_counter is not None
        context = {"message": query or "", "project": self.project}
        selection = select_with(self, entries, context)
        self._last = selection
        return _Selector.to_documents(selection, self.k, source)

    def as_runnable(self) -> Runnable[Union[Sequence[Document], Mapping[str, Any]], List[Document]]:
        """This selection as an LCEL runnable.

        Input: a list of documents (``retriever | selector``: no query, so
        ranking uses priority, recency, tags and project only), or a mapping
        ``{"documents": [...], "query": "..."}``, e.g.
        ``{"documents": retriever, "query": RunnablePassthrough()} | selector``.
        """

        def run(value: Union[Sequence[Document], Mapping[str, Any]], config: RunnableConfig) -> List[Document]:
            if isinstance(value, Mapping):
                return self.compress_documents(value["documents"], value.get("query", ""))
            return self.compress_documents(list(value), "")

        return RunnableLambda(run, name="PoolSplitSelector")


def format_documents(documents: Sequence[Document]) -> str:
    """Render returned documents as cite-able ``<memory id source at pool>``
    markers (content escaped so it cannot forge a marker), for a prompt:
    ``retriever | format_documents | prompt | model``.

    When the documents come from this package's retriever or compressor,
    the text ends with an explicit line saying how many more entries budgets
    (or ``k``) left out, per pool: silent truncation makes a model believe
    that is all there is."""
    blocks = []
    omitted: Mapping[str, int] = {}
    for doc in documents:
        entry = dict(doc.metadata)
        entry["content"] = doc.page_content
        if doc.id:
            entry["id"] = doc.id
        chosen = doc.metadata.get(SELECTION_KEY) or {}
        omitted = chosen.get("omitted") or omitted
        blocks.append(marker(entry, chosen.get("pool")))
    line = omission_line(omitted, "by budget or k")
    return "\n".join(blocks + ([line] if line else []))
