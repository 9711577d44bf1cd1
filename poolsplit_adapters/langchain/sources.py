"""The long-term stores the agent middleware accepts, behind one interface.

The middleware reads (recall, then select) and writes (evicted turns, notes)
the same way whatever holds the memory:

* a LangGraph ``BaseStore`` (the default: ``runtime.store``), through
  :class:`~poolsplit_adapters.langchain.BaseStoreMemory`;
* a LangChain ``VectorStore``, through
  :meth:`PoolSplitRetriever.from_vectorstore` (per-pool recall, corrections
  by filter: the retriever's recall, not a second one);
* an object following the project's store contract (``add``, ``get``,
  ``supersede``, ``delete``, ``entries``, ``select``, ``version``), such as
  the embedded SQLite store;
* a list of entries, held in a :class:`~poolsplit_adapters.MemoryIndex`
  (a copy: the caller's list is never changed; writes live in this process).

Each kind says how it knows whether it changed (``Snapshot.version``), so the
middleware can reuse one selection for the model calls of one agent step.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Dict, Hashable, List, Mapping, Optional, Sequence, Set, Tuple

from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore
from langgraph.store.base import BaseStore

from ..index import MemoryIndex
from ..memory.progressive import ProgressiveLayers
from ..poolsplit import EntryError, Pool, Selection, check_entry
from ..recall import VisibleEntries
from ..settings import AgentMemorySettings
from ..stores.checks import check_storable
from ..stores.postgres import check_entry_text
from .documents import document_to_entry
from .retriever import PoolSplitRetriever
from .store import BaseStoreMemory, Namespace, Recall, chain_visibility
from .vector_search import PGVectorAlwaysFetch

__all__ = ["Plan", "Snapshot", "Source", "source_for", "STORE_METHODS"]

#: What an object must have to be used as a store-contract store.
STORE_METHODS = ("add", "get", "supersede", "delete", "entries", "select")


@dataclass(frozen=True)
class Plan:
    """One call's pool plan and fill: the pools (explicit, or planned for
    the detected task) and the progressive layering (None: plain fill)."""

    pools: List[Pool]
    layering: Optional[ProgressiveLayers] = None


@dataclass(frozen=True)
class Snapshot:
    """What the middleware learns before selecting.

    Attributes:
        version: equal versions mean the store did not change (for this read).
        recall: the candidates, when the source had to read them to know.
    """

    version: Hashable
    recall: Optional[Recall] = None


class Source(ABC):
    """One kind of long-term store, as the middleware uses it. Async methods
    default to the sync ones (for stores without an async API)."""

    def __init__(self, settings: AgentMemorySettings) -> None:
        self.settings = settings

    @abstractmethod
    def snapshot(self, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Snapshot: ...

    @abstractmethod
    def select(
        self, snap: Snapshot, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan
    ) -> Selection: ...

    @abstractmethod
    def get(self, chain: Sequence[Namespace], entry_id: str) -> Optional[Mapping[str, Any]]:
        """The entry with ``entry_id`` that a reader of ``chain`` may see
        (its namespaces, exactly), else None: what the expand tool reads."""

    async def aget(self, chain: Sequence[Namespace], entry_id: str) -> Optional[Mapping[str, Any]]:
        return self.get(chain, entry_id)

    @abstractmethod
    def existing(self, chain: Sequence[Namespace], ids: Sequence[str]) -> Set[str]: ...

    @abstractmethod
    def write(self, chain: Sequence[Namespace], entries: Sequence[Mapping[str, Any]]) -> None: ...

    async def asnapshot(self, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Snapshot:
        return self.snapshot(chain, context, plan)

    async def aselect(
        self, snap: Snapshot, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan
    ) -> Selection:
        return self.select(snap, chain, context, plan)

    async def aexisting(self, chain: Sequence[Namespace], ids: Sequence[str]) -> Set[str]:
        return self.existing(chain, ids)

    async def awrite(self, chain: Sequence[Namespace], entries: Sequence[Mapping[str, Any]]) -> None:
        self.write(chain, entries)


class _BaseStoreSource(Source):
    """A LangGraph store: read every call (it has no change counter), select
    only when what was read changed."""

    def __init__(self, store: BaseStore, settings: AgentMemorySettings, cache: int = 1024) -> None:
        super().__init__(settings)
        self.store = store
        self._memories: OrderedDict[Tuple[Namespace, ...], BaseStoreMemory] = OrderedDict()
        self._cache = cache
        self._lock = threading.Lock()

    def memory(self, chain: Sequence[Namespace]) -> BaseStoreMemory:
        key = tuple(chain)
        with self._lock:
            found = self._memories.get(key)
            if found is None:
                found = BaseStoreMemory(
                    self.store,
                    list(key),
                    chain_penalty=self.settings.chain_penalty,
                    token_counter=self.settings.token_counter,
                    page_size=self.settings.page_size,
                    fetch_k=self.settings.fetch_k,
                )
                self._memories[key] = found
                if len(self._memories) > self._cache:
                    self._memories.popitem(last=False)
            else:
                self._memories.move_to_end(key)
            return found

    def snapshot(self, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Snapshot:
        recall = self.memory(chain).recall(plan.pools, context)
        return Snapshot(recall.fingerprint, recall)

    async def asnapshot(self, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Snapshot:
        recall = await self.memory(chain).arecall(plan.pools, context)
        return Snapshot(recall.fingerprint, recall)

    def select(self, snap: Snapshot, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Selection:
        assert snap.recall is not None
        s = self.settings
        return self.memory(chain).select_from(
            snap.recall, plan.pools, context, now=s.now, scorer=s.scorer, layering=plan.layering
        )

    def get(self, chain: Sequence[Namespace], entry_id: str) -> Optional[Mapping[str, Any]]:
        return self.memory(chain).get(entry_id)

    async def aget(self, chain: Sequence[Namespace], entry_id: str) -> Optional[Mapping[str, Any]]:
        return await self.memory(chain).aget(entry_id)

    def existing(self, chain: Sequence[Namespace], ids: Sequence[str]) -> Set[str]:
        return self.memory(chain).existing(ids)

    async def aexisting(self, chain: Sequence[Namespace], ids: Sequence[str]) -> Set[str]:
        return await self.memory(chain).aexisting(ids)

    def write(self, chain: Sequence[Namespace], entries: Sequence[Mapping[str, Any]]) -> None:
        self.memory(chain).put_many(entries)

    async def awrite(self, chain: Sequence[Namespace], entries: Sequence[Mapping[str, Any]]) -> None:
        await self.memory(chain).aput_many(entries)


class _ContractSource(Source):
    """A store following the project's store contract: its ``version``
    changes whenever its content does."""

    def __init__(self, store: Any, settings: AgentMemorySettings) -> None:
        super().__init__(settings)
        self.store = store

    def snapshot(self, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Snapshot:
        version = getattr(self.store, "version", None)
        return Snapshot(("version", version) if version is not None else ("unversioned", object()))

    def select(self, snap: Snapshot, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Selection:
        s = self.settings
        # layering= only when progressive: a contract store's select then
        # must take it (MemoryIndex.select does), and a plain one need not.
        extra: Dict[str, Any] = {} if plan.layering is None else {"layering": plan.layering}
        result: Selection = self.store.select(
            plan.pools,
            dict(context),
            now=s.now,
            scorer=s.scorer,
            visibility=chain_visibility(chain, s.chain_penalty),
            **extra,
        )
        return result

    def get(self, chain: Sequence[Namespace], entry_id: str) -> Optional[Mapping[str, Any]]:
        found = self.store.get(entry_id)
        return VisibleEntries(
            [found] if found is not None else [], chain_visibility(chain, self.settings.chain_penalty)
        ).get(entry_id)

    def existing(self, chain: Sequence[Namespace], ids: Sequence[str]) -> Set[str]:
        return {i for i in ids if self.store.get(i) is not None}

    def write(self, chain: Sequence[Namespace], entries: Sequence[Mapping[str, Any]]) -> None:
        self.store.add(list(entries))


class _ListSource(Source):
    """A list of entries, copied into a MemoryIndex; writes are added to the
    index (this process only)."""

    def __init__(self, entries: Sequence[Mapping[str, Any]], settings: AgentMemorySettings) -> None:
        super().__init__(settings)
        for position, entry in enumerate(entries):
            check_entry(entry, position)
        self.index = MemoryIndex([dict(e) for e in entries], token_counter=settings.token_counter)
        self._ids = {str(e["id"]) for e in entries if isinstance(e, Mapping) and e.get("id")}
        self._lock = threading.Lock()

    def snapshot(self, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Snapshot:
        return Snapshot(self.index.version)

    def select(self, snap: Snapshot, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Selection:
        s = self.settings
        return self.index.select(
            plan.pools,
            dict(context),
            now=s.now,
            scorer=s.scorer,
            visibility=chain_visibility(chain, s.chain_penalty),
            layering=plan.layering,
        )

    def get(self, chain: Sequence[Namespace], entry_id: str) -> Optional[Mapping[str, Any]]:
        return VisibleEntries(self.index, chain_visibility(chain, self.settings.chain_penalty)).get(entry_id)

    def existing(self, chain: Sequence[Namespace], ids: Sequence[str]) -> Set[str]:
        with self._lock:
            return {i for i in ids if i in self._ids}

    def write(self, chain: Sequence[Namespace], entries: Sequence[Mapping[str, Any]]) -> None:
        for position, entry in enumerate(entries):
            check_entry(entry, position)
        with self._lock:
            self.index.extend([dict(e) for e in entries])
            self._ids.update(str(e["id"]) for e in entries if e.get("id"))


class _VectorStoreSource(Source):
    """A LangChain vector store, recalled per pool by the retriever.

    A vector store has no change counter and a read is a full recall, so the
    version is the number of writes made through this source: a selection is
    reused within a step unless the middleware itself wrote; a document added
    by another path during a step shows from the next step on."""

    def __init__(self, store: VectorStore, settings: AgentMemorySettings) -> None:
        super().__init__(settings)
        self.store = store
        self._writes = 0

    def snapshot(self, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Snapshot:
        return Snapshot(("writes", self._writes))

    def _retriever(self, chain: Sequence[Namespace], plan: Plan) -> PoolSplitRetriever:
        s = self.settings
        options: Dict[str, Any] = {}
        if s.fetch_k is not None:
            options["fetch_k"] = s.fetch_k
        return PoolSplitRetriever.from_vectorstore(
            self.store,
            plan.pools,
            token_counter=s.token_counter,
            scorer=s.scorer,
            now=s.now,
            visibility=chain_visibility(chain, s.chain_penalty),
            progressive=plan.layering is not None,
            **options,
        )

    @staticmethod
    def _call(context: Mapping[str, Any]) -> Tuple[str, Dict[str, Any]]:
        return str(context.get("message") or ""), {"tags": context.get("tags"), "project": context.get("project")}

    def select(self, snap: Snapshot, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Selection:
        retriever = self._retriever(chain, plan)
        query, options = self._call(context)
        retriever.invoke(query, **options)
        assert retriever.last_selection is not None
        return retriever.last_selection

    async def aselect(
        self, snap: Snapshot, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan
    ) -> Selection:
        retriever = self._retriever(chain, plan)
        query, options = self._call(context)
        await retriever.ainvoke(query, **options)
        assert retriever.last_selection is not None
        return retriever.last_selection

    def existing(self, chain: Sequence[Namespace], ids: Sequence[str]) -> Set[str]:
        return {d.id for d in self.store.get_by_ids(list(ids)) if d.id is not None}

    def get(self, chain: Sequence[Namespace], entry_id: str) -> Optional[Mapping[str, Any]]:
        found = [document_to_entry(d, i) for i, d in enumerate(self.store.get_by_ids([entry_id]))]
        return VisibleEntries(found, chain_visibility(chain, self.settings.chain_penalty)).get(entry_id)

    async def aexisting(self, chain: Sequence[Namespace], ids: Sequence[str]) -> Set[str]:
        return {d.id for d in await self.store.aget_by_ids(list(ids)) if d.id is not None}

    def _documents(self, entries: Sequence[Mapping[str, Any]]) -> Tuple[List[Document], List[str]]:
        docs, ids = [], []
        postgres = PGVectorAlwaysFetch.serves(self.store)
        for position, entry in enumerate(entries):
            check_entry(entry, position)
            check_storable(entry, position)
            if postgres:
                check_entry_text(entry, position)
            metadata = {k: v for k, v in entry.items() if k not in ("content", "id")}
            docs.append(Document(page_content=str(entry["content"]), metadata=metadata, id=entry.get("id")))
            ids.append(str(entry.get("id")))
        return docs, ids

    def write(self, chain: Sequence[Namespace], entries: Sequence[Mapping[str, Any]]) -> None:
        docs, ids = self._documents(entries)
        if docs:
            self.store.add_documents(docs, ids=ids)
            self._writes += 1

    async def awrite(self, chain: Sequence[Namespace], entries: Sequence[Mapping[str, Any]]) -> None:
        docs, ids = self._documents(entries)
        if docs:
            await self.store.aadd_documents(docs, ids=ids)
            self._writes += 1


def is_contract_store(store: Any) -> bool:
    """Whether ``store`` follows the project's store contract (duck typing)."""
    return all(callable(getattr(store, name, None)) for name in STORE_METHODS)


def source_for(store: Any, settings: AgentMemorySettings, *, argument: str = "store") -> Source:
    """The :class:`Source` for ``store``; a clear error naming ``argument``
    for anything else."""
    if isinstance(store, BaseStore):
        return _BaseStoreSource(store, settings)
    if isinstance(store, VectorStore):
        return _VectorStoreSource(store, settings)
    if isinstance(store, (list, tuple)):
        for position, entry in enumerate(store):
            if not isinstance(entry, Mapping):
                raise EntryError(
                    "%s[%d] must be an entry mapping, got %s" % (argument, position, type(entry).__name__),
                    index=position,
                )
        return _ListSource(store, settings)
    if is_contract_store(store):
        return _ContractSource(store, settings)
    raise TypeError(
        "%s must be a LangGraph BaseStore, a LangChain VectorStore, a list of entries, or a store with %s; got %s"
        % (argument, ", ".join(STORE_METHODS), type(store).__name__)
    )
