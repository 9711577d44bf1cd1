"""The middleware's memory backends: whatever holds an agent's long-term
memory, behind the one interface the middleware calls.

("Backend", not "source": a ``source`` is an entry's provenance key.) The
middleware reads (recall, then select) and writes (evicted turns, notes) the
same way whatever holds the memory:

* a LangGraph ``BaseStore`` (the default: ``runtime.store``), through
  [`BaseStoreMemory`][], one per namespace
  chain (the chain comes from each call's runtime);
* any [`MemoryStore`][] (the store contract):
  the embedded SQLite store, a ``BaseStoreMemory``, LlamaIndex's
  ``PoolSplitMemoryStore``; a LangChain ``VectorStore`` comes wrapped in
  [`VectorStoreMemory`][] (the LangChain adapter's
  [backend_for][poolsplit_adapters.langchain.backends.backend_for] wraps it:
  per-pool recall, corrections by filter, the retriever's recall);
* a list of entries, held in an
  [`InProcessStore`][] (a copy: the caller's
  list is never changed; writes live in this process).

Each kind says how it knows whether it changed (``Snapshot.version``), so the
middleware can reuse one selection for the model calls of one agent step.
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections import OrderedDict
from dataclasses import dataclass
from typing import (
    Any,
    Callable,
    Dict,
    FrozenSet,
    Hashable,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
)

from langgraph.store.base import BaseStore

from ...agent_memory import AgentStore
from ...call import AdapterCall
from ...errors import ArgumentError
from ...memory.progressive import ProgressiveLayers
from ...poolsplit import EntryError, Pool, Selection
from ...recall import VisibleEntries, present_types
from ...settings import AgentMemorySettings
from ...threads import off_loop
from ..base import MemoryStore, StoreVerbs
from ..memory import InProcessStore
from ..protocol_store import contract_of
from .prepared import (
    CORRECTIONS_ONLY,
    PreparedRecall,
    cheap_watermark,
    off_the_loop,
    prepares,
    watermark,
)
from .set_up import require_tables
from .store import BaseStoreMemory, Namespace, Recall, chain_visibility
from .store_reads import query_of

__all__ = ["Backend", "Plan", "Snapshot", "backend_for"]


@dataclass(frozen=True)
class Plan:
    """One call's pool plan and fill: the pools (explicit, or planned for
    the detected task) and the progressive layering (None: plain fill);
    ``call``, the adapter call that planned it, which fills it
    (`AdapterCall.filled`: a task plan's may be filled twice)."""

    pools: List[Pool]
    layering: Optional[ProgressiveLayers] = None
    call: Optional[AdapterCall] = None

    @classmethod
    def of(cls, call: AdapterCall) -> Plan:
        """The plan of ``call``."""
        return cls(list(call.options.pools), call.options.layering, call)

    def with_pools(self, pools: List[Pool]) -> Plan:
        """This plan's fill with ``pools`` (a second fill's)."""
        return Plan(pools, self.layering)


@dataclass(frozen=True)
class Snapshot:
    """What the middleware learns before selecting.

    Attributes:
        version: equal versions mean the store did not change (for this read).
        recall: the candidates, when the source had to read them to know.
        prepared: the kept index of the candidates (a LangGraph store's
            recall that no vector index ranks), brought up to date.
    """

    version: Hashable
    recall: Optional[Recall] = None
    prepared: Optional[PreparedRecall] = None


class Backend(AgentStore):
    """One kind of long-term store, as the middleware uses it: the reads
    here, the writes declared by [`AgentStore`][poolsplit_adapters.agent_memory.AgentStore]. Async
    methods default to the sync ones (for stores without an async API)."""

    def __init__(self, settings: AgentMemorySettings) -> None:
        self.settings = settings

    #: Whether an async caller must make this store's sync reads in a worker
    #: thread (a LangGraph async store, see `off_the_loop`: its reads wait on its own loop).
    off_loop = False

    @abstractmethod
    def snapshot(self, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Snapshot: ...

    @abstractmethod
    def fill(self, snap: Snapshot, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Selection:
        """One fill of ``plan`` from the store (`select` may fill twice)."""

    async def afill(
        self, snap: Snapshot, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan
    ) -> Selection:
        return self.fill(snap, chain, context, plan)

    def select(self, snap: Snapshot, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Selection:
        """The selection of ``plan``: its call fills it (`AdapterCall.filled`:
        twice when a task plan's standing room can go to pools that cut entries)."""
        if plan.call is None:
            return self.fill(snap, chain, context, plan)
        return plan.call.filled(lambda pools: self.fill(snap, chain, context, plan.with_pools(pools)))

    @abstractmethod
    def get(self, chain: Sequence[Namespace], entry_id: str) -> Optional[Mapping[str, Any]]:
        """The entry with ``entry_id`` that a reader of ``chain`` may see
        (its namespaces, exactly), else None: what the expand tool reads."""

    async def aget(self, chain: Sequence[Namespace], entry_id: str) -> Optional[Mapping[str, Any]]:
        return self.get(chain, entry_id)

    @abstractmethod
    def existing(self, chain: Sequence[Namespace], ids: Sequence[str]) -> Set[str]: ...

    @abstractmethod
    def entry_types(self, chain: Sequence[Namespace]) -> Optional[FrozenSet[str]]:
        """The entry types a reader of ``chain`` has in the store, for
        ``pools="auto"`` (the plan shares the budget among them, as the
        retrievers do), or None when the store cannot list them."""

    async def asnapshot(self, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Snapshot:
        return self.snapshot(chain, context, plan)

    async def aselect(
        self, snap: Snapshot, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan
    ) -> Selection:
        """Async `select`."""
        if plan.call is None:
            return await self.afill(snap, chain, context, plan)
        return await plan.call.afilled(lambda pools: self.afill(snap, chain, context, plan.with_pools(pools)))

    async def aexisting(self, chain: Sequence[Namespace], ids: Sequence[str]) -> Set[str]:
        return self.existing(chain, ids)


#: How many namespace chains (per set of pool types) keep a prepared index
#: between turns; the least recently used is dropped (and rebuilt when its
#: user comes back), so memory follows the active users, not the store.
PREPARED_CHAINS = 32


def _refreshed_items(prepared: PreparedRecall) -> List[List[Any]]:
    """``prepared`` brought up to date, then its items (in a worker thread)."""
    prepared.refresh()
    return prepared.items()


class _BaseStoreBackend(Backend):
    """A LangGraph store: each turn a watermark read, and the selection over
    a kept index of the namespace (`PreparedRecall`), updated with
    the items that changed; a recall ranked by the store's vector index is
    read every call, its corrections from a kept index of them when the
    store's watermark is cheap (`cheap_watermark`)."""

    def __init__(
        self, store: BaseStore, settings: AgentMemorySettings, cache: int = 1024, argument: str = "store"
    ) -> None:
        super().__init__(settings)
        require_tables(store, argument)
        self.store = store
        self._memories: OrderedDict[Tuple[Namespace, ...], BaseStoreMemory] = OrderedDict()
        self._prepared: OrderedDict[Tuple[Any, ...], PreparedRecall] = OrderedDict()
        # per chain: the kept corrections of a recall the vector index ranks
        self._corrections: OrderedDict[Tuple[Namespace, ...], PreparedRecall] = OrderedDict()
        self._cache = cache
        self._lock = threading.Lock()
        self.off_loop = off_the_loop(store)

    def prepared(self, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Optional[PreparedRecall]:
        """The chain's kept index for the plan's types, or None when the
        recall is ranked by the store's vector index for this query."""
        memory = self.memory(chain)
        if not prepares(memory, query_of(context)):
            return None
        key = (tuple(chain), PreparedRecall.signature(plan.pools))
        with self._lock:
            found = self._prepared.get(key)
            if found is None or found.memory is not memory:
                found = PreparedRecall(memory, plan.pools, self.settings.scorer)
                self._prepared[key] = found
                memory.keep_repeats_in(found)  # the write's duplicate check reads the kept index
                if len(self._prepared) > PREPARED_CHAINS:
                    self._prepared.popitem(last=False)
            else:
                self._prepared.move_to_end(key)
            return found

    def corrections(self, chain: Sequence[Namespace]) -> Optional[PreparedRecall]:
        """The chain's kept index of its corrections (for a recall the
        store's vector index ranks), or None when the store's watermark
        would cost what the corrections' read by filter costs (then they
        are read by filter, and a kept one is dropped)."""
        memory, key = self.memory(chain), tuple(chain)
        cheap = cheap_watermark(self.store, key)
        with self._lock:
            found = self._corrections.get(key)
            if not cheap:
                self._corrections.pop(key, None)
                return None
            if found is None or found.memory is not memory:
                found = PreparedRecall(memory, CORRECTIONS_ONLY, self.settings.scorer)
                self._corrections[key] = found
                if len(self._corrections) > PREPARED_CHAINS:
                    self._corrections.popitem(last=False)
            else:
                self._corrections.move_to_end(key)
            return found

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
                    fetch_k=self.settings.fetch_k,
                )
                self._memories[key] = found
                if len(self._memories) > self._cache:
                    self._memories.popitem(last=False)
            else:
                self._memories.move_to_end(key)
            return found

    def snapshot(self, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Snapshot:
        prepared = self.prepared(chain, context, plan)
        if prepared is not None:
            prepared.refresh()
            return Snapshot(prepared.version, prepared=prepared)
        fixes = self.corrections(chain)
        if fixes is None:
            recall = self.memory(chain).recall(plan.pools, context)
        else:
            fixes.refresh()
            recall = self.memory(chain).recall_with(plan.pools, context, fixes.items())
        return Snapshot(recall.fingerprint, recall)

    async def asnapshot(self, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Snapshot:
        prepared = self.prepared(chain, context, plan)
        if prepared is not None:
            await prepared.arefresh()
            return Snapshot(prepared.version, prepared=prepared)
        # An AsyncPostgresStore's watermark reads wait on its loop: from a worker thread.
        fixes = await self._off_the_loop(self.corrections, chain)
        if fixes is None:
            recall = await self.memory(chain).arecall(plan.pools, context)
        else:
            # Off the loop, its items too: their lock may be held by a refresh waiting on the loop.
            items = await off_loop(_refreshed_items, fixes) if self.off_loop else None
            if items is None:
                await fixes.arefresh()
                items = fixes.items()
            recall = await self.memory(chain).arecall_with(plan.pools, context, items)
        return Snapshot(recall.fingerprint, recall)

    async def afill(
        self, snap: Snapshot, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan
    ) -> Selection:
        if snap.prepared is not None and self.off_loop:
            # The kept index's lock may be held by a refresh waiting on the store's loop: select from a worker.
            return await off_loop(self.fill, snap, chain, context, plan)
        return self.fill(snap, chain, context, plan)

    def fill(self, snap: Snapshot, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Selection:
        s = self.settings
        if snap.prepared is not None:
            return snap.prepared.select(plan.pools, context, now=s.now, scorer=s.scorer, layering=plan.layering)
        assert snap.recall is not None
        return self.memory(chain).select_from(
            snap.recall, plan.pools, context, now=s.now, scorer=s.scorer, layering=plan.layering
        )

    def get(self, chain: Sequence[Namespace], entry_id: str) -> Optional[Mapping[str, Any]]:
        return self.memory(chain).get(entry_id)

    def verbs(self, chain: Sequence[Namespace]) -> Optional[StoreVerbs]:
        return self.memory(chain)

    async def aget(self, chain: Sequence[Namespace], entry_id: str) -> Optional[Mapping[str, Any]]:
        return await self.memory(chain).aget(entry_id)

    def existing(self, chain: Sequence[Namespace], ids: Sequence[str]) -> Set[str]:
        return self.memory(chain).existing(ids)

    def entry_types(self, chain: Sequence[Namespace]) -> Optional[FrozenSet[str]]:
        return present_types(self.memory(chain).entries())

    async def aexisting(self, chain: Sequence[Namespace], ids: Sequence[str]) -> Set[str]:
        return await self.memory(chain).aexisting(ids)

    def write(self, chain: Sequence[Namespace], entries: Sequence[Mapping[str, Any]]) -> List[Optional[str]]:
        kept = self._kept(chain)
        before = watermark(self.store, chain) if kept else None
        report = self.memory(chain).write(entries)
        self._wrote(kept, chain, list(dict.fromkeys(report.ids)), before)
        return report.kept

    async def awrite(self, chain: Sequence[Namespace], entries: Sequence[Mapping[str, Any]]) -> List[Optional[str]]:
        kept = self._kept(chain)
        before = await self._off_the_loop(watermark, self.store, chain) if kept else None
        report = await self.memory(chain).awrite(entries)
        await self._off_the_loop(self._wrote, kept, chain, list(dict.fromkeys(report.ids)), before)
        return report.kept

    async def _off_the_loop(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)``; for an off-loop store in a worker thread (its reads
        wait on its own loop, and a kept state's lock is never waited for
        on the loop)."""
        return await off_loop(fn, *args) if self.off_loop else fn(*args)

    def _kept(self, chain: Sequence[Namespace]) -> List[PreparedRecall]:
        """The chain's prepared states (on a vector-indexed recall, its kept
        corrections only, kept only where the watermark is cheap: a write
        then costs nothing more with the namespace)."""
        with self._lock:
            kept = [p for (c, _), p in self._prepared.items() if c == tuple(chain)]
            fixes = self._corrections.get(tuple(chain))
            return kept if fixes is None else [*kept, fixes]

    def _wrote(
        self, kept: Sequence[PreparedRecall], chain: Sequence[Namespace], keys: Sequence[str], before: Any
    ) -> None:
        """Tell the chain's prepared states what this write changed (the
        own namespace, link 0), so the next turn reads only these keys."""
        if not kept:
            return
        after = watermark(self.store, chain)
        for prepared in kept:
            prepared.wrote(0, keys, before, after)


class _ContractBackend(Backend):
    """Any store under the store contract (a host's store meeting the
    public protocol only comes as a `ProtocolStore`):
    its ``version`` changes whenever its content does."""

    def __init__(self, store: StoreVerbs, settings: AgentMemorySettings) -> None:
        super().__init__(settings)
        self.store = store

    def snapshot(self, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Snapshot:
        version = self.store.version
        return Snapshot(("version", version) if version is not None else ("unversioned", object()))

    def _options(self, chain: Sequence[Namespace], plan: Plan) -> Dict[str, Any]:
        s = self.settings
        # layering= only when progressive: a contract store's select then
        # must take it (MemoryIndex.select does), and a plain one need not.
        extra: Dict[str, Any] = {} if plan.layering is None else {"layering": plan.layering}
        # Such a store costs its entries' text with its own counter: each
        # counted cost gets the marker the settings' counter adds
        # (RenderedCounter's overhead), so the rendered block keeps to the
        # budgets here too, and a summary (counted by the layers with the
        # marker) never looks dearer than the full text.
        if s.marker_cost:
            extra["marker_cost"] = s.marker_cost
        return {"now": s.now, "scorer": s.scorer, "visibility": chain_visibility(chain, s.chain_penalty), **extra}

    def fill(self, snap: Snapshot, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan) -> Selection:
        return self.store.select(plan.pools, dict(context), **self._options(chain, plan))

    async def afill(
        self, snap: Snapshot, chain: Sequence[Namespace], context: Mapping[str, Any], plan: Plan
    ) -> Selection:
        return await self.store.aselect(plan.pools, dict(context), **self._options(chain, plan))

    def get(self, chain: Sequence[Namespace], entry_id: str) -> Optional[Mapping[str, Any]]:
        found = self.store.get(entry_id)
        return VisibleEntries(
            [found] if found is not None else [], chain_visibility(chain, self.settings.chain_penalty)
        ).get(entry_id)

    def verbs(self, chain: Sequence[Namespace]) -> Optional[StoreVerbs]:
        return self.store if self.store.commits else None

    def entry_types(self, chain: Sequence[Namespace]) -> Optional[FrozenSet[str]]:
        visibility = chain_visibility(chain, self.settings.chain_penalty)
        return present_types(VisibleEntries(self.store.entries(), visibility).visible_entries())

    def existing(self, chain: Sequence[Namespace], ids: Sequence[str]) -> Set[str]:
        return self.store.existing(ids)

    def write(self, chain: Sequence[Namespace], entries: Sequence[Mapping[str, Any]]) -> List[Optional[str]]:
        return self.store.write(list(entries)).kept


def backend_for(store: Any, settings: AgentMemorySettings, *, argument: str = "store") -> Backend:
    """The `Backend` for ``store``; a clear error naming ``argument``
    for anything else (a LangChain ``VectorStore`` comes wrapped by the
    adapter's ``backend_for``)."""
    if isinstance(store, BaseStore):
        return _BaseStoreBackend(store, settings, argument=argument)
    if isinstance(store, (list, tuple)):
        for position, entry in enumerate(store):
            if not isinstance(entry, Mapping):
                raise EntryError(
                    "%s[%d] must be an entry mapping, got %s" % (argument, position, type(entry).__name__),
                    index=position,
                )
        # The text counted by the settings' counter; the marker comes with each call (marker_cost).
        return _ContractBackend(InProcessStore(store, token_counter=settings.text_counter), settings)
    if isinstance(store, MemoryStore):
        return _ContractBackend(contract_of(store), settings)
    raise ArgumentError(
        "%s must be a LangGraph BaseStore, a LangChain VectorStore, a list of entries, or a MemoryStore "
        "(add, get, supersede, delete, entries, select, version); got %s" % (argument, type(store).__name__)
    )
