"""BaseStoreMemory: a LangGraph ``BaseStore`` namespace as pool-split
long-term memory, usable alone or under the agent middleware.

LangGraph keeps an agent's long-term memory in a ``BaseStore``
(``InMemoryStore``, ``SqliteStore``, ``PostgresStore``): items under
namespaces such as ``("memories", user_id)``, each a JSON value. Here an item
is an entry: its value holds the entry's fields, its key is the entry ``id``,
and its namespace (labels joined by ``"."``, which LangGraph forbids inside a
label: [`namespace_label`][], the one mapping) is the entry ``namespace``.

Reading is where a plain ``store.search`` goes wrong for this job, so the
rules are written once here:

* **Exact namespaces.** ``search`` matches namespace *prefixes*; items in
  child namespaces (``("memories", "u1", "drafts")``) are not this user's
  memory and are dropped. A chain of namespaces (the user's own, then e.g.
  ``("memories", "shared")``) is explicit and scored with the chain penalty.
* **Corrections by filter.** Always-scope entries are fetched with a
  ``scope == "always"`` filter, independent of any query or type.
* **Each pool's types recalled independently**, by the one recall plan
  (`RecallPlan`) translated to
  ``BaseStore`` ops: its filters have no ``$in``, so one ``SearchOp`` per
  type (plus one for entries without a ``type``, which default to
  ``"note"``), all in one ``batch`` round trip, so a rare type is never
  crowded out by a frequent one.
* **Every item read exactly once.** Each op is one exact read (``limit``
  past any namespace's size, ``offset`` 0), never paged with ``offset``:
  ``PostgresStore`` orders by ``updated_at``, which the items of one
  ``put_many`` share, so offset pages overlapped and skipped items at their
  edges; and ``InMemoryStore`` scans the namespace once per op, so paging
  made a recall cost grow with the square of the namespace.
* **``query=``** is passed when the store has a vector index: each type op
  then recalls its ``fetch_k`` nearest items (every item, ranked, when
  ``fetch_k`` is None); corrections are always read whole, by filter. The
  items' ``score`` is kept (`Recall.scores`): with the adapters'
  default scorer it is the vector half of the fused relevance (BM25 the
  other), so a selection over an indexed store never discards the store's
  own similarity. **Normalisation**: LangGraph's stores score a cosine
  index (``distance_type`` ``"cosine"``, the default) with the cosine
  similarity itself, in [-1, 1] (``InMemoryStore``; ``PostgresStore`` and
  ``SqliteStore`` as ``1 - cosine distance``): taken as is. Another
  ``distance_type`` (``"l2"``, ``"inner_product"``) gives no cosine, so its
  scores are not used and the selection ranks by words. Over a sync
  ``PostgresStore(index=)`` the ranked ops are our own statements
  (`postgres_store_search`: the HNSW
  index walked, a type of few items read exactly), with the scores the
  store's own search gives.
* **Counted once.** Token counts are cached by ``(namespace, key,
  updated_at, content)``: repeated turns over an unchanged store make no
  tokenizer call (the content too: SqliteStore's ``updated_at`` has
  one-second resolution, so a rewrite within the second keeps its time).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Dict, List, Optional, Set, Tuple, Union

from langgraph.store.base import BaseStore, GetOp, Item
from typing_extensions import TypedDict, Unpack

from ...defaults import default_adapter_scorer
from ...memory.expiry import EXPIRES, is_expired, moment_of, note_expired
from ...poolsplit import (
    Layering,
    Moment,
    Pool,
    Scorer,
    Selection,
    TokenCounter,
    Visibility,
    check_pools,
)
from ...recall import same_vector_space, takes_store_scores, with_query_vector, with_store_scores
from ...render import RenderedCounter
from ...reports import select_noted
from ...tokens import default_counter
from ..postgres import is_async_postgres_store, is_postgres_store
from .memory_store_search import InMemoryStoreSearch, serves_in_memory_store
from .namespaces import Namespace, chain_visibility, check_ids, check_namespaces, namespace_label
from .postgres_store_search import PostgresStoreSearch, serves_postgres_store
from .ranked_search import StoreSearcher
from .set_up import require_tables
from .store_reads import RANK_ALL, READ_ALL, ReadSpec, Recall, TokenCounts, query_of
from .store_writes import NEAR_K, StoreWrites

__all__ = [
    "BaseStoreMemory",
    "Namespace",
    "Recall",
    "check_namespaces",
    "namespace_label",
    "READ_ALL",
    "RANK_ALL",
    "NEAR_K",
    "chain_visibility",
]

NamespaceArg = Union[Sequence[str], Sequence[Sequence[str]]]


class SelectKeywords(TypedDict, total=False):
    """The keywords of [`BaseStoreMemory.select`][] and ``aselect``,
    declared once for both.

    Example:
        ```python
        memory.select(pools, {"message": "deploy"}, now=datetime.datetime(2025, 1, 6, tzinfo=datetime.timezone.utc))
        ```
    """

    now: Optional[datetime.datetime]
    """Reference time for recency (default: the time of the call)."""
    scorer: Optional[Scorer]
    """Ranking function ``scorer(entry, context, *, now=None) -> float`` (default: the adapters' default,
    `default_adapter_scorer`; ``default_scorer`` for the spec's ranking)."""
    visibility: Optional[Visibility]
    """What the query may see (default: this memory's namespace chain)."""
    layering: Optional[Layering]
    """Progressive loading (see [`ProgressiveLayers`][poolsplit_adapters.memory.ProgressiveLayers])."""
    marker_cost: int
    """Tokens added to each counted cost: the marker of an entry rendered
    into a prompt (as [`MemoryIndex.select`][poolsplit_adapters.index.MemoryIndex.select] takes it)."""


#: Our searchers of a LangGraph store's ranked searches, each after the
#: test of the stores it serves, tried in order (none: the store's own search
#: answers). A new store is one more pair: its test and its searcher, a
#: `RecallSearcher` (the memory uses nothing of a searcher but that protocol).
_SEARCHERS: Tuple[Tuple[Callable[[Any], bool], Callable[[Any], StoreSearcher]], ...] = (
    (serves_postgres_store, PostgresStoreSearch),
    (serves_in_memory_store, InMemoryStoreSearch.shared),  # one per store: every memory reads its matrices
)


def store_searcher(store: Any) -> Optional[StoreSearcher]:
    """Our searcher of ``store``'s ranked searches (`_SEARCHERS`), or
    None: the store's own search answers them."""
    return next((make(store) for serves, make in _SEARCHERS if serves(store)), None)


class BaseStoreMemory(StoreWrites):
    """Pool-split long-term memory over one namespace of a LangGraph store.

    Args:
        store: any LangGraph ``BaseStore``.
        namespace: the user's namespace, e.g. ``("memories", "u1")``, or an
            explicit chain ``[("memories", "u1"), ("memories", "shared")]``:
            reads see exactly these namespaces (never their children), links
            after the first score ``x chain_penalty ** link``; writes go to the
            first.
        chain_penalty: score factor per chain link after the first (default 0.9).
        token_counter: cost of an entry without ``token_count`` (default:
            tiktoken ``o200k_base``, offline); results are cached. The core's
            cost rule applies (a counter answering 0 or 2.7 is an
            ``EntryError`` naming the item).
        fetch_k: with a vector-indexed store, how many nearest items each type
            op recalls (default None: every item).

    It satisfies [`MemoryStore`][poolsplit_adapters.stores.MemoryStore]: ``add``
    refuses an id already stored, ``supersede`` and ``delete`` follow the
    contract's one semantics, ``version`` is the fingerprint of one read of
    the namespaces (the store has no change counter). [`put`][poolsplit_adapters.stores.langgraph.store.BaseStoreMemory.put] and
    [`put_many`][poolsplit_adapters.stores.langgraph.store.BaseStoreMemory.put_many] are LangGraph's ``put``: they overwrite an item with the
    same key.
        cache_size: how many token counts to keep (default 65536).

    Example:
        ```python
        from langgraph.store.memory import InMemoryStore
        from poolsplit_adapters import Pool
        from poolsplit_adapters.langchain import BaseStoreMemory

        memory = BaseStoreMemory(InMemoryStore(), ("memories", "u1"))
        memory.put({"id": "fix-1", "content": "Amounts in cents.", "type": "correction", "scope": "always"})
        memory.put({"content": "Deployed checkout on Monday.", "type": "episode"})
        pools = [Pool("fixes", 0, 0, ("correction",)), Pool("episodes", 300, 3, ("episode",))]
        selection = memory.select(pools, {"message": "when did checkout deploy?"})
        ```
    """

    def __init__(
        self,
        store: BaseStore,
        namespace: NamespaceArg,
        *,
        chain_penalty: float = 0.9,
        token_counter: Optional[TokenCounter] = None,
        fetch_k: Optional[int] = None,
        cache_size: int = 65536,
    ) -> None:
        if not isinstance(store, BaseStore):
            raise TypeError("BaseStoreMemory store must be a LangGraph BaseStore, got %s" % type(store).__name__)
        self.chain = check_namespaces(namespace)
        require_tables(store, "BaseStoreMemory store")
        self.store = store
        self.namespace = self.chain[0]
        self.visibility = chain_visibility(self.chain, chain_penalty)
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 1:
            raise ValueError("BaseStoreMemory cache_size must be an int >= 1, got %r" % (cache_size,))
        if fetch_k is not None and (isinstance(fetch_k, bool) or not isinstance(fetch_k, int) or fetch_k < 1):
            raise ValueError("BaseStoreMemory fetch_k must be None or an int >= 1, got %r" % (fetch_k,))
        if token_counter is not None and not callable(token_counter):
            raise TypeError("BaseStoreMemory token_counter must be callable, got %r" % (token_counter,))
        self.fetch_k = fetch_k
        self._counts = TokenCounts(token_counter or default_counter(), cache_size)
        self._repeats: Optional[Callable[[], Any]] = None  # a weak reference to a kept index (keep_repeats_in)
        # Our searcher of its ranked searches, kept (over a PostgresStore it remembers
        # large filters; over an InMemoryStore, each namespace's vectors as a matrix).
        self._ranked_search = store_searcher(store)
        self._postgres_family = is_postgres_store(store) or is_async_postgres_store(store)

    def __repr__(self) -> str:
        return "BaseStoreMemory(%s, %r)" % (type(self.store).__name__, list(self.chain))

    # -- reading ----------------------------------------------------------------------

    def recall(self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None) -> Recall:
        """The candidates [`select`][] would see (one batched, paged read),
        with token counts filled in from the cache."""
        pools = check_pools(pools)
        return self._collect(self._run(self._plan(pools, query_of(context))), counted=True)

    async def arecall(self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None) -> Recall:
        """Async [`recall`][]."""
        pools = check_pools(pools)
        return self._collect(await self._arun(self._plan(pools, query_of(context))), counted=True)

    def _with(self, corrections: Sequence[Sequence[Item]]) -> List[Tuple[ReadSpec, List[Item]]]:
        """``corrections`` (one list of items per chain link) as the
        corrections' read by filter would have returned them."""
        if len(corrections) != len(self.chain):
            raise ValueError(
                "corrections: one list of items per namespace of the chain (%d), got %d"
                % (len(self.chain), len(corrections))
            )
        return [
            (ReadSpec(link, {"scope": "always"}, None, READ_ALL), list(items)) for link, items in enumerate(corrections)
        ]

    def recall_with(
        self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]], corrections: Sequence[Sequence[Item]]
    ) -> Recall:
        """[`recall`][] with the corrections given instead of read: one
        list of the always-scope items per chain link, as the read by filter
        returns them (the agent middleware keeps them in an index it brings
        up to date with a cheap watermark). On a vector-indexed store, given
        a query, only the ranked searches then reach the store, ``fetch_k``
        items a type, and no read by filter of the whole namespace (whether
        a ranked search costs the namespace's size is the store's own
        search: exhaustive in ``InMemoryStore`` and sqlite-vec). The result
        is the one [`recall`][] returns.

        Example:
            ```python
            memory.recall_with(pools, {"message": "deploy"}, [fixes])  # fixes: this chain link's correction items
            ```
        """
        pools = check_pools(pools)
        found = self._run(self._plan(pools, query_of(context), corrections=False))
        return self._collect(self._with(corrections) + found, counted=True)

    async def arecall_with(
        self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]], corrections: Sequence[Sequence[Item]]
    ) -> Recall:
        """Async [`recall_with`][]."""
        pools = check_pools(pools)
        found = await self._arun(self._plan(pools, query_of(context), corrections=False))
        return self._collect(self._with(corrections) + found, counted=True)

    def select_from(
        self,
        recall: Recall,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]] = None,
        *,
        now: Moment = None,
        scorer: Optional[Scorer] = None,
        layering: Optional[Layering] = None,
        visibility: Optional[Visibility] = None,
        marker_cost: int = 0,
    ) -> Selection:
        """Select over a `Recall` (the core selector, unchanged;
        ``scorer``: default the adapters' default scorer
        (`default_adapter_scorer`; until
        0.5 the spec's ``default_scorer``, still one argument away), taking
        the store's scores as the vector half of its relevance
        (`takes_store_scores`);
        ``layering``: progressive loading, see
        [`ProgressiveLayers`][poolsplit_adapters.memory.ProgressiveLayers];
        ``visibility``: default this memory's namespace chain;
        ``marker_cost``: added to each counted cost, `RenderedCounter`'s rule)."""
        kept = recall.prepared
        if not (kept and kept["for"][0] is scorer and kept["for"][1] is context and kept["now"] == now):
            kept.clear()  # another call's: prepared for this call's scorer, context and time only
            kept.update({"for": (scorer, context), "now": now, "scorer": self._scorer_for(recall, scorer, context)})
        selection = select_noted(
            recall.entries,
            pools,
            context,
            scorer=kept["scorer"],
            kept=kept,
            token_counter=RenderedCounter(self._counts.counter, overhead=marker_cost)
            if marker_cost
            else self._counts.counter,
            now=now,
            visibility=self.visibility if visibility is None else visibility,
            layering=layering,
        )
        return note_expired(selection, _expired_ids(recall.entries, now))

    def _scorer_for(self, recall: Recall, scorer: Optional[Scorer], context: Optional[Mapping[str, Any]]) -> Scorer:
        """``scorer`` (default: the adapters' default scorer) taking the
        recall's query vector and the store's scores where it can."""
        used = default_adapter_scorer() if scorer is None else scorer
        model = self.index_embeddings
        message = query_of(context)
        if message is not None and self._ranked_search is not None and same_vector_space(used, model):
            # The recall's own query vector: the scorer embeds with the store's model, so it would only embed again.
            used = with_query_vector(used, message, self._ranked_search.query_vector(message))
        if recall.scores and takes_store_scores(used, model):
            from ...relevance.similarity import StoreMetric  # numpy, on use: the store has a vector index

            used = with_store_scores(used, recall.scores, StoreMetric.COSINE)
        return used

    def get(self, entry_id: str) -> Optional[Dict[str, Any]]:
        """The entry stored under ``entry_id`` in this memory's namespaces
        (own first, then the chain; exact, never a child namespace), else
        None. One batch. The expand tool reads full text through it."""
        [entry_id] = check_ids([entry_id])
        results = self.store.batch([GetOp(ns, entry_id) for ns in self.chain])
        for item in results:
            if isinstance(item, Item):
                return self._entry(item, counted=False)
        return None

    async def aget(self, entry_id: str) -> Optional[Dict[str, Any]]:
        """Async [`get`][]."""
        [entry_id] = check_ids([entry_id])
        results = await self.store.abatch([GetOp(ns, entry_id) for ns in self.chain])
        for item in results:
            if isinstance(item, Item):
                return self._entry(item, counted=False)
        return None

    # The contract's ``**options``, declared (SelectKeywords): narrower than Any, on purpose.
    def select(  # type: ignore[override]
        self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Unpack[SelectKeywords]
    ) -> Selection:
        """Recall from the store, then select: corrections first, then each
        pool's entries (the core's `select`).
        ``options``: ``now``, ``scorer`` (`SelectKeywords`)."""
        return self.select_from(self.recall(pools, context), pools, context, **options)

    async def aselect(  # type: ignore[override]
        self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Unpack[SelectKeywords]
    ) -> Selection:
        """Async [`select`][]."""
        return self.select_from(await self.arecall(pools, context), pools, context, **options)

    @property
    def version(self) -> Tuple[Tuple[str, str, Any], ...]:
        """The ``(namespace, key, updated_at)`` of every item of the
        namespaces: one read (a LangGraph store keeps no change counter);
        equal values mean the same content."""
        return self._collect(self._run(self._scan(None)), counted=False).fingerprint

    def read(self, ids: Optional[Sequence[str]] = None, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """Fresh copies of the own namespace's entries with these ids (one
        batch), or of every entry of the chain (of ``namespace`` when given)."""
        if ids is None:
            return self._collect(self._run(self._scan(namespace)), counted=False).entries
        keys = check_ids(ids)
        results = self.store.batch([GetOp(self.namespace, k) for k in keys]) if keys else []
        return [self._entry(item, counted=False) for item in results if isinstance(item, Item)]

    async def aread(self, ids: Optional[Sequence[str]] = None, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """Async [`read`][]."""
        if ids is None:
            return self._collect(await self._arun(self._scan(namespace)), counted=False).entries
        keys = check_ids(ids)
        results = await self.store.abatch([GetOp(self.namespace, k) for k in keys]) if keys else []
        return [self._entry(item, counted=False) for item in results if isinstance(item, Item)]


def _expired_ids(entries: Sequence[Mapping[str, Any]], now: Optional[datetime.datetime]) -> Set[str]:
    """The ids of ``entries`` whose ``expires`` is at or before ``now``."""
    moment = moment_of(now)
    return {str(e.get("id")) for e in entries if e.get(EXPIRES) is not None and is_expired(e, moment)}
