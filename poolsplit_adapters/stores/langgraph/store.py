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
import threading
import weakref
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple, Union

from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchOp
from typing_extensions import TypedDict, Unpack

from ...defaults import default_adapter_scorer
from ...errors import ArgumentError
from ...memory.changes import changing, updates
from ...memory.duplicates import DuplicateFinder
from ...memory.expiry import EXPIRES, is_expired, moment_of, note_expired
from ...memory.write_gate import check_scope, utc_stamp
from ...poolsplit import (
    EntryError,
    Layering,
    Moment,
    Pool,
    Scorer,
    Selection,
    TokenCounter,
    Visibility,
    check_entry,
    check_pools,
    entry_cost,
    entry_error,
    given_token_count,
)
from ...recall import RecallPlan, Search, same_vector_space, takes_store_scores, with_query_vector, with_store_scores
from ...relevance.known import KnownKey
from ...reports import select_noted
from ...threads import off_loop
from ...tokens import default_counter
from ..base import (
    Change,
    StoreVerbs,
    live,
    prepare_entries,
    returning,
    same_id_repeats,
    settle_repeats,
)
from ..checks import check_key_text, storable_text
from ..postgres import is_async_postgres_store, is_postgres_store, plain_async_postgres_store
from ..write_path import Derived
from .memory_store_search import InMemoryStoreSearch, serves_in_memory_store
from .namespaces import Namespace, namespace_label
from .postgres_store_search import (
    EVERY_ITEM,
    PostgresStoreSearch,
    RankedSearch,
    RankedSearcher,
    serves_postgres_store,
)

__all__ = ["BaseStoreMemory", "Namespace", "Recall", "check_namespaces", "namespace_label"]

NamespaceArg = Union[Sequence[str], Sequence[Sequence[str]]]

#: Value keys that are the item's location, not its content.
_LOCATION_KEYS = ("id", "namespace")
#: ``limit`` of an op that reads everything it matches in one exact query:
#: more than any namespace holds (and within every engine's 64-bit LIMIT).
READ_ALL = 2**62
#: ``limit`` of a ranked op (``query=``) that ranks everything it matches:
#: ``PostgresStore`` multiplies a vector search's limit by its vectors per
#: item and 2 before binding it, so READ_ALL would overflow its BIGINT.
RANK_ALL = EVERY_ITEM
#: On a vector-indexed store, how many nearest items of its type a written
#: entry is compared with for near duplicates.
NEAR_K = 10


def chain_visibility(chain: Sequence[Namespace], chain_penalty: float) -> Visibility:
    """What a query over the namespace ``chain`` (own first) may see: the
    entries of those namespaces, each further link scored ``chain_penalty``
    lower."""
    labels = tuple(namespace_label(ns) for ns in chain)
    return Visibility(namespace=labels if len(labels) > 1 else labels[0], chain_penalty=chain_penalty)


def _check_one(value: Any, argument: str) -> Namespace:
    if isinstance(value, str) or not isinstance(value, (tuple, list)) or not value:
        raise ArgumentError(
            "%s must be a non-empty tuple of strings such as ('memories', 'user-1'), got %r" % (argument, value)
        )
    for label in value:
        if not isinstance(label, str) or not label or "." in label:
            raise ArgumentError(
                "%s: every label must be a non-empty string without '.', got %r in %r" % (argument, label, value)
            )
        storable_text(label, "%s label" % argument)  # NUL, lone surrogate: before any store sees it
    label = namespace_label(value)  # a Postgres key holds it: an error names its start, not the whole
    check_key_text(label, "%s %r" % (argument, label if len(label) <= 40 else label[:40] + "..."))
    return tuple(value)


def _check_ids(ids: Iterable[Any], argument: str = "entry id") -> List[str]:
    """``ids`` as a list of distinct strings every store can hold (NUL and
    lone surrogates refused, naming ``argument``, before any query runs)."""
    keys = []
    for key in dict.fromkeys(ids):
        if not isinstance(key, str):
            raise ArgumentError("%s must be a string, got %s %r" % (argument, type(key).__name__, key))
        keys.append(storable_text(key, argument))
    return keys


def check_namespaces(value: Any, argument: str = "namespace") -> Tuple[Namespace, ...]:
    """A namespace (tuple of labels) or an explicit chain of them (a list or
    tuple of tuples, own namespace first) as a chain. Errors name ``argument``."""
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, (tuple, list)) for v in value):
        chain = tuple(_check_one(v, argument) for v in value)
        if len(set(chain)) != len(chain):
            raise ValueError("%s: the namespace chain repeats a namespace: %r" % (argument, value))
        return chain
    return (_check_one(value, argument),)


@dataclass(frozen=True)
class Recall:
    """What one read of the store returned.

    Attributes:
        entries: the candidates, own namespace first, then each chain link;
            within a namespace by creation time, then key (so corrections load
            in the order they were written).
        fingerprint: ``(namespace label, key, updated_at)`` of every item read
            (``updated_at`` as the store gave it, a datetime to the
            microsecond, compared without formatting it): equal
            fingerprints mean an unchanged store for this read.
    """

    entries: List[Dict[str, Any]]
    fingerprint: Tuple[Tuple[str, str, Any], ...]
    scores: Dict[KnownKey, float] = field(default_factory=dict)
    """Entry id -> the cosine the store's vector index gave the item (its
    ``score``; empty without ``query=`` or for a non-cosine index)."""


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


@dataclass(frozen=True)
class _Spec:
    link: int
    filter: Optional[Dict[str, Any]]
    query: Optional[str]
    limit: int
    #: the plan's searches an item must match to be kept (empty: keep all),
    #: when one unfiltered read of the namespace stands for all of them
    keep: Tuple[Search, ...] = ()


class _Counts:
    """Token counts (and the validity check) by ``(namespace, key, updated_at, content)``."""

    def __init__(self, counter: TokenCounter, size: int) -> None:
        self.counter = counter
        self.size = size
        self._data: OrderedDict[Tuple[Namespace, str, Any, Any], int] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Tuple[Namespace, str, Any, Any]) -> Optional[int]:
        with self._lock:
            found = self._data.get(key)
            if found is not None:
                self._data.move_to_end(key)
            return found

    def put(self, key: Tuple[Namespace, str, Any, Any], count: int) -> None:
        with self._lock:
            self._data[key] = count
            if len(self._data) > self.size:
                self._data.popitem(last=False)


class BaseStoreMemory(StoreVerbs):
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
    the namespaces (the store has no change counter). [`put`][] and
    [`put_many`][] are LangGraph's ``put``: they overwrite an item with the
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
        self.store = store
        self.chain = check_namespaces(namespace)
        self.namespace = self.chain[0]
        self.visibility = chain_visibility(self.chain, chain_penalty)
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 1:
            raise ValueError("BaseStoreMemory cache_size must be an int >= 1, got %r" % (cache_size,))
        if fetch_k is not None and (isinstance(fetch_k, bool) or not isinstance(fetch_k, int) or fetch_k < 1):
            raise ValueError("BaseStoreMemory fetch_k must be None or an int >= 1, got %r" % (fetch_k,))
        if token_counter is not None and not callable(token_counter):
            raise TypeError("BaseStoreMemory token_counter must be callable, got %r" % (token_counter,))
        self.fetch_k = fetch_k
        self._counts = _Counts(token_counter or default_counter(), cache_size)
        self._repeats: Optional[Callable[[], Any]] = None  # a weak reference to a kept index (keep_repeats_in)
        # Our ranked searches over a PostgresStore(index=) we serve (kept: it remembers large filters).
        self._pg_search = PostgresStoreSearch(store) if serves_postgres_store(store) else None
        # ... or over an InMemoryStore(index=) (kept: it keeps each namespace's vectors as a matrix).
        self._ranked_search: Optional[RankedSearcher] = self._pg_search
        if self._ranked_search is None and serves_in_memory_store(store):
            self._ranked_search = InMemoryStoreSearch.shared(store)
        self._postgres_family = is_postgres_store(store) or is_async_postgres_store(store)

    def __repr__(self) -> str:
        return "BaseStoreMemory(%s, %r)" % (type(self.store).__name__, list(self.chain))

    @property
    def _index_config(self) -> Any:
        """The store's vector index configuration: what LangGraph's stores
        built with ``index=`` keep as ``index_config`` (None without one)."""
        return getattr(self.store, "index_config", None)

    @property
    def indexed(self) -> bool:
        """Whether the store has a vector index (then recall passes ``query=``)."""
        return bool(self._index_config)

    @property
    def index_embeddings(self) -> Any:
        """The embeddings the store's vector index was configured with
        (``index={"embed": ...}``), or None: a scorer embedding with the
        same model takes the store's scores and query vector instead of
        embedding again."""
        if not self.indexed:
            return None
        config = self._index_config
        return config.get("embed") if isinstance(config, Mapping) else None

    @property
    def cosine_scores(self) -> bool:
        """Whether the index's item scores are cosine similarities (its
        ``distance_type`` is ``"cosine"``, LangGraph's default; see the
        module docstring), so a selection may use them."""
        if not self.indexed:
            return False
        config = self._index_config
        kind = config.get("distance_type", "cosine") if isinstance(config, Mapping) else "cosine"
        return kind == "cosine"

    # -- the read plan ----------------------------------------------------------------

    def _plan(self, pools: Optional[Sequence[Pool]], query: Optional[str], *, corrections: bool = True) -> List[_Spec]:
        """The search ops of one recall, each one exact read (no paging).

        Without similarity ranking (no ``query`` on an indexed store with
        ``fetch_k``) every search of the plan would read its matches whole:
        one unfiltered read of each namespace serves them all, keeping what
        the plan's searches admit (``InMemoryStore`` scans a namespace once
        per op, and ``PostgresStore`` runs a filter as a scan too). A plan
        that can load corrections only reads them by filter. With ranking,
        the plan's searches in ``BaseStore``'s dialect: one op per type.
        ``corrections=False`` (a ranked recall only): without the
        corrections' read by filter, for a caller that keeps them
        ([`recall_with`][])."""
        links = range(len(self.chain))
        if pools is None:  # entries(): everything
            return [_Spec(link, None, None, READ_ALL) for link in links]
        searches = tuple(RecallPlan(pools, fetch_k=self.fetch_k or 1).searches())
        for search in searches:  # every engine alike, filtered in the store or here
            for name in search.types or ():
                storable_text(name, "pool type")
        ranked = bool(query and self.indexed)
        if all(search.always for search in searches):
            return [_Spec(link, {"scope": "always"}, None, READ_ALL) for link in links] if corrections else []
        if not ranked:
            return [_Spec(link, None, None, READ_ALL, searches) for link in links]
        limit = self.fetch_k if self.fetch_k is not None else RANK_ALL
        filters: List[Optional[Dict[str, Any]]] = []
        keep: Tuple[Search, ...] = ()  # what each op's items must match: nothing more than its filter
        nearest_untyped: List[Search] = []
        if self.fetch_k is None:
            # Every item ranked: one op per namespace finds what the per-type
            # ops would (no limit cuts any of them), kept by the plan's
            # searches here. One op asks the store to embed the query once:
            # per type, it embedded it once per op (three times for three types).
            filters, keep = [None], tuple(s for s in searches if not s.always)
        else:
            # A Postgres store's own filter {"type": None} matches a stored null,
            # never a missing key: where our statements do not serve it (a TTL),
            # untyped notes are the untyped items among the nearest of any type,
            # kept here (as PGVector's side search).
            ours = self._pg_search is not None and limit <= self._pg_search.most  # else the store's own search
            nearest_untyped = [s for s in searches if s.untyped and not s.always and not ours and self._postgres_family]
            for search in searches:
                if search.always or search in nearest_untyped:
                    continue  # read whole, by filter, below; the untyped side search below
                if search.untyped:
                    found: List[Optional[Dict[str, Any]]] = [{"type": None}]
                elif search.types is None:
                    found = [None]
                else:
                    found = [{"type": name} for name in search.types]
                filters += [f for f in found if f not in filters]
            if None in filters:  # one pool takes every type: one search serves all
                filters = [None]
        specs = []
        for link in links:
            if corrections:
                specs.append(_Spec(link, {"scope": "always"}, None, READ_ALL))  # corrections never by similarity
            specs += [_Spec(link, where, query, limit, keep) for where in filters]
            if nearest_untyped and filters != [None]:  # (one search of every type finds them already)
                specs.append(_Spec(link, None, query, limit, tuple(nearest_untyped)))
        return specs

    def _ops(self, specs: Sequence[_Spec]) -> List[SearchOp]:
        return [SearchOp(self.chain[s.link], filter=s.filter, limit=s.limit, query=s.query) for s in specs]

    def _postgres_search(self) -> Optional[PostgresStoreSearch]:
        """Our own ranked searches when the store is a ``PostgresStore`` with
        a vector index they serve, else None."""
        return self._pg_search

    def _split(self, ops: Sequence[Any]) -> Tuple[Dict[int, RankedSearch], List[Any]]:
        """The ops our own ranked search answers (by position) and the rest,
        in order: on a served ``PostgresStore`` or ``InMemoryStore``, every
        ranked ``SearchOp`` filtered by type at most, within the searcher's
        largest ``limit`` (its ``most``: on Postgres a walk up to
        `MOST_RANKED`,
        an exact read past it; see `postgres_store_search`
        and `memory_store_search`)."""
        ours: Dict[int, RankedSearch] = {}
        searcher = self._ranked_search
        for i, op in enumerate(ops):
            if searcher is None or not isinstance(op, SearchOp) or not op.query:
                continue
            where = op.filter
            if op.limit > searcher.most or op.offset:
                continue
            if where is not None and (set(where) - {"type"} or not isinstance(where.get("type"), (str, type(None)))):
                continue  # a filter of the store's own dialect: its own search
            kind = (where or {}).get("type")
            untyped = where is not None and "type" in where and kind is None
            ours[i] = RankedSearch(tuple(op.namespace_prefix), op.limit, type=kind, untyped=untyped, query=op.query)
        return ours, [op for i, op in enumerate(ops) if i not in ours]

    def _ranked(self, ours: Dict[int, RankedSearch]) -> Dict[int, List[Item]]:
        if not ours:
            return {}
        assert self._ranked_search is not None
        return {i: list(items) for i, items in zip(ours, self._ranked_search.run(list(ours.values())))}

    @staticmethod
    def _merged(count: int, ranked: Dict[int, List[Item]], rest: Sequence[Any]) -> List[Any]:
        others = iter(rest)
        return [ranked[i] if i in ranked else next(others) for i in range(count)]

    def _batch(self, ops: Sequence[Any]) -> List[Any]:
        """``store.batch(ops)``, its ranked searches ours where we serve
        them (`_split`): the results in ``ops`` order."""
        ours, others = self._split(ops)
        rest = self.store.batch(others) if others else []
        return self._merged(len(ops), self._ranked(ours), rest)

    async def _abatch(self, ops: Sequence[Any]) -> List[Any]:
        """Async `_batch`."""
        ours, others = self._split(ops)
        rest = await self.store.abatch(others) if others else []
        ranked: Dict[int, List[Item]] = {}
        if ours:  # an async store's run on its cursor; a sync store's in a worker thread (as its own abatch)
            assert self._ranked_search is not None
            found = await self._ranked_search.arun(list(ours.values()))
            ranked = {i: list(items) for i, items in zip(ours, found)}
        return self._merged(len(ops), ranked, rest)

    def _run(self, specs: Sequence[_Spec]) -> List[Tuple[_Spec, List[Item]]]:
        results = self._batch(self._ops(specs)) if specs else []
        return [(spec, _items(found)) for spec, found in zip(specs, results)]

    async def _arun(self, specs: Sequence[_Spec]) -> List[Tuple[_Spec, List[Item]]]:
        results = await self._abatch(self._ops(specs)) if specs else []
        return [(spec, _items(found)) for spec, found in zip(specs, results)]

    # -- items -> entries ---------------------------------------------------------------

    def _entry(self, item: Item, *, counted: bool) -> Dict[str, Any]:
        entry: Dict[str, Any] = dict(item.value)
        entry["id"] = item.key
        entry["namespace"] = namespace_label(item.namespace)
        if not entry.get("created"):
            entry["created"] = utc_stamp(item.created_at)
        if not counted:
            return entry
        # The content is part of the key: SqliteStore's updated_at has
        # one-second resolution, so a rewrite within the second kept its time.
        cache_key = (tuple(item.namespace), item.key, item.updated_at, entry.get("content"))
        cost = self._counts.get(cache_key)
        if cost is None:
            try:
                check_entry(entry)
                check_scope(entry)  # a near-miss "Always" a host wrote past us: a correction that would never load
                cost = entry_cost(entry, self._counts.counter)  # the core's rule: never 0, never 2.7
            except EntryError as err:
                where = "field %r " % err.field if err.field else ""
                raise EntryError(
                    "store item %r in namespace %r: %s%s" % (item.key, entry["namespace"], where, err.problem),
                    entry_id=item.key,
                    field=err.field,
                    problem=err.problem,
                ) from None
            self._counts.put(cache_key, cost)
        if given_token_count(entry) is None:
            entry["token_count"] = cost
        return entry

    def _collect(self, found: Iterable[Tuple[_Spec, List[Item]]], *, counted: bool) -> Recall:
        seen: Dict[Tuple[Namespace, str], Tuple[int, Item]] = {}
        by_place: Dict[Tuple[str, str], float] = {}  # (namespace label, key) -> the store's score
        cosine = self.cosine_scores
        for spec, items in found:
            own = self.chain[spec.link]
            keep = _keeper(spec.keep) if spec.keep else None
            for item in items:
                if tuple(item.namespace) != own:
                    continue  # a child namespace: search matched the prefix, not the namespace
                if keep is not None and not keep(item.value):
                    continue  # read with the namespace, but no search of the plan would find it
                seen.setdefault((own, item.key), (spec.link, item))
                score = getattr(item, "score", None)
                if cosine and spec.query is not None and score is not None:
                    by_place.setdefault((namespace_label(own), item.key), float(score))
        # By id; an id two namespaces of the chain hold, by (namespace, id)
        # for each (relevance.known): neither takes the other's score.
        places = Counter(key for _, key in by_place)
        scores: Dict[KnownKey, float] = {
            (key if places[key] == 1 else (label, key)): score for (label, key), score in by_place.items()
        }
        ordered = sorted(seen.values(), key=lambda li: (li[0], li[1].created_at, li[1].key))
        labels = {ns: namespace_label(ns) for ns in self.chain}
        fingerprint = tuple((labels[tuple(item.namespace)], item.key, item.updated_at) for _, item in ordered)
        entries = [self._entry(item, counted=counted) for _, item in ordered]
        return Recall(entries, fingerprint, scores)

    # -- reading ----------------------------------------------------------------------

    def recall(self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None) -> Recall:
        """The candidates [`select`][] would see (one batched, paged read),
        with token counts filled in from the cache."""
        pools = check_pools(pools)
        return self._collect(self._run(self._plan(pools, _query(context))), counted=True)

    async def arecall(self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None) -> Recall:
        """Async [`recall`][]."""
        pools = check_pools(pools)
        return self._collect(await self._arun(self._plan(pools, _query(context))), counted=True)

    def _with(self, corrections: Sequence[Sequence[Item]]) -> List[Tuple[_Spec, List[Item]]]:
        """``corrections`` (one list of items per chain link) as the
        corrections' read by filter would have returned them."""
        if len(corrections) != len(self.chain):
            raise ValueError(
                "corrections: one list of items per namespace of the chain (%d), got %d"
                % (len(self.chain), len(corrections))
            )
        return [
            (_Spec(link, {"scope": "always"}, None, READ_ALL), list(items)) for link, items in enumerate(corrections)
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
        found = self._run(self._plan(pools, _query(context), corrections=False))
        return self._collect(self._with(corrections) + found, counted=True)

    async def arecall_with(
        self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]], corrections: Sequence[Sequence[Item]]
    ) -> Recall:
        """Async [`recall_with`][]."""
        pools = check_pools(pools)
        found = await self._arun(self._plan(pools, _query(context), corrections=False))
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
    ) -> Selection:
        """Select over a `Recall` (the core selector, unchanged;
        ``scorer``: default the adapters' default scorer
        (`default_adapter_scorer`; until
        0.5 the spec's ``default_scorer``, still one argument away), taking
        the store's scores as the vector half of its relevance
        (`takes_store_scores`);
        ``layering``: progressive loading, see
        [`ProgressiveLayers`][poolsplit_adapters.memory.ProgressiveLayers];
        ``visibility``: default this memory's namespace chain)."""
        used = default_adapter_scorer() if scorer is None else scorer
        model = self.index_embeddings
        message = _query(context)
        if message is not None and self._ranked_search is not None and same_vector_space(used, model):
            # The recall's own query vector: the scorer embeds with the store's model, so it would only embed again.
            used = with_query_vector(used, message, self._ranked_search.vectors.get(message))
        if recall.scores and takes_store_scores(used, model):
            from ...relevance.similarity import StoreMetric  # numpy, on use: the store has a vector index

            used = with_store_scores(used, recall.scores, StoreMetric.COSINE)
        selection = select_noted(
            recall.entries,
            pools,
            context,
            scorer=used,
            token_counter=self._counts.counter,
            now=now,
            visibility=self.visibility if visibility is None else visibility,
            layering=layering,
        )
        return note_expired(selection, _expired_ids(recall.entries, now))

    def get(self, entry_id: str) -> Optional[Dict[str, Any]]:
        """The entry stored under ``entry_id`` in this memory's namespaces
        (own first, then the chain; exact, never a child namespace), else
        None. One batch. The expand tool reads full text through it."""
        [entry_id] = _check_ids([entry_id])
        results = self.store.batch([GetOp(ns, entry_id) for ns in self.chain])
        for item in results:
            if isinstance(item, Item):
                return self._entry(item, counted=False)
        return None

    async def aget(self, entry_id: str) -> Optional[Dict[str, Any]]:
        """Async [`get`][]."""
        [entry_id] = _check_ids([entry_id])
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

    # -- the contract's primitives ----------------------------------------------------

    def _scan(self, namespace: Optional[str]) -> List[_Spec]:
        specs = self._plan(None, None)
        if namespace is None:
            return specs
        return [s for s in specs if namespace_label(self.chain[s.link]) == namespace]

    def read(self, ids: Optional[Sequence[str]] = None, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """Fresh copies of the own namespace's entries with these ids (one
        batch), or of every entry of the chain (of ``namespace`` when given)."""
        if ids is None:
            return self._collect(self._run(self._scan(namespace)), counted=False).entries
        keys = _check_ids(ids)
        results = self.store.batch([GetOp(self.namespace, k) for k in keys]) if keys else []
        return [self._entry(item, counted=False) for item in results if isinstance(item, Item)]

    async def aread(self, ids: Optional[Sequence[str]] = None, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """Async [`read`][]."""
        if ids is None:
            return self._collect(await self._arun(self._scan(namespace)), counted=False).entries
        keys = _check_ids(ids)
        results = await self.store.abatch([GetOp(self.namespace, k) for k in keys]) if keys else []
        return [self._entry(item, counted=False) for item in results if isinstance(item, Item)]

    def preparing(self, entries: Iterable[Mapping[str, Any]]) -> List[Dict[str, Any]]:
        """[`StoreVerbs.preparing`][], each entry placed in the own namespace
        (an entry without one is written there, and read back with its
        label): so a repeat is compared with stored entries as they read."""
        prepared = super().preparing(entries)
        own = namespace_label(self.namespace)
        return [entry if entry.get("namespace") is not None else dict(entry, namespace=own) for entry in prepared]

    def _item_value(self, entry: Mapping[str, Any], position: int) -> Dict[str, Any]:
        own = namespace_label(self.namespace)
        where = entry.get("namespace")
        if where is not None and where != own:
            raise entry_error(entry, position, "namespace", "is %r but this memory writes to %r" % (where, own))
        return {k: v for k, v in entry.items() if k not in _LOCATION_KEYS}

    def _change_ops(self, change: Change, stored: List[Dict[str, Any]]) -> List[PutOp]:
        for position, entry in enumerate(change.insert):
            self._item_value(entry, position)  # refuse another namespace before anything is checked
        rows = change.rows(change.verify(stored))
        ops = [PutOp(self.namespace, str(e["id"]), self._item_value(e, n)) for n, e in enumerate(rows)]
        gone = {e["id"] for e in stored}
        return ops + [PutOp(self.namespace, i, None) for i in change.forget if i in gone]

    def commit(self, change: Change) -> None:
        """Apply ``change`` in one ``batch`` (verified against the items as
        read just before: a LangGraph store has no transaction to check in)."""
        stored = self.read(change.touched + list(change.forget))
        ops = self._change_ops(change, stored)
        if ops:
            self.store.batch(ops)

    async def acommit(self, change: Change) -> None:
        """Async [`commit`][]."""
        stored = await self.aread(change.touched + list(change.forget))
        ops = self._change_ops(change, stored)
        if ops:
            await self.store.abatch(ops)

    # -- writing ----------------------------------------------------------------------

    def _put_ops(self, entries: Sequence[Mapping[str, Any]]) -> Tuple[List[PutOp], List[str]]:
        prepared = prepare_entries(entries, self.stamp())
        ops = [PutOp(self.namespace, str(e["id"]), self._item_value(e, n)) for n, e in enumerate(prepared)]
        return ops, [str(e["id"]) for e in prepared]

    def put_many(self, entries: Sequence[Mapping[str, Any]]) -> List[str]:
        """Write ``entries`` to the own namespace in one batch, overwriting
        items with the same key (LangGraph's ``put``); returns their ids
        (``id``, else a new one). Checked first as every write is
        (`prepare_entries`): a malformed
        entry raises [`EntryError`][] and nothing is
        written. The caller's dicts are not changed."""
        ops, ids = self._put_ops(entries)
        if ops:
            self.store.batch(ops)
        return ids

    async def aput_many(self, entries: Sequence[Mapping[str, Any]]) -> List[str]:
        """Async [`put_many`][]."""
        ops, ids = self._put_ops(entries)
        if ops:
            await self.store.abatch(ops)
        return ids

    def put(self, entry: Mapping[str, Any]) -> str:
        """Write one entry (host-curated: always-scope allowed); returns its id."""
        return self.put_many([entry])[0]

    async def aput(self, entry: Mapping[str, Any]) -> str:
        """Async [`put`][]."""
        return (await self.aput_many([entry]))[0]

    # -- duplicates: the one gate, with the store's own search -----------------------

    def _near_ops(self, prepared: Sequence[Mapping[str, Any]]) -> List[Union[GetOp, SearchOp]]:
        """What a write's candidates could repeat, in the own namespace: each
        candidate's id (the write gate's content key finds an exact repeat),
        and its type's items: the ``NEAR_K`` nearest to its text on a
        vector-indexed store, else all of them (one read per type)."""
        ops: List[Union[GetOp, SearchOp]] = [GetOp(self.namespace, str(e["id"])) for e in prepared]
        kinds: List[Optional[str]] = []
        for entry in prepared:
            kind = entry.get("type")
            wanted = [kind] if kind not in (None, "note") else ["note", None]
            if self.indexed:
                for w in wanted:
                    ops.append(SearchOp(self.namespace, filter={"type": w}, query=str(entry["content"]), limit=NEAR_K))
            else:
                kinds += [w for w in wanted if w not in kinds]
        ops += [SearchOp(self.namespace, filter={"type": w}, limit=READ_ALL) for w in kinds]
        return ops

    def _neighbours(self, results: Sequence[Any]) -> DuplicateFinder:
        items: Dict[str, Item] = {}
        for result in results:
            for item in [result] if isinstance(result, Item) else _items(result):
                if tuple(item.namespace) == self.namespace:
                    items.setdefault(item.key, item)
        ordered = sorted(items.values(), key=lambda item: (item.created_at, item.key))
        return DuplicateFinder([self._entry(item, counted=False) for item in ordered], is_active=live)

    def keep_repeats_in(self, kept: Any) -> None:
        """Answer the duplicate check from ``kept`` (an object whose
        ``repeatable(candidates)`` returns the own namespace's items the
        candidates could repeat, or None to read the store: the agent
        middleware's prepared recall) instead of reading every item of the
        written types. Held weakly: when the kept index is dropped, writes
        read the store again. A vector-indexed store keeps its search."""
        self._repeats = weakref.ref(kept)

    def _kept_repeats(self, candidates: Sequence[Mapping[str, Any]]) -> Optional[List[Item]]:
        kept = None if self._repeats is None or self.indexed else self._repeats()
        return None if kept is None else kept.repeatable(candidates)  # type: ignore[no-any-return]

    def duplicate_finder(self, candidates: Sequence[Mapping[str, Any]]) -> DuplicateFinder:
        """The stored entries ``candidates`` could repeat: from the kept
        index ([`keep_repeats_in`][]) when there is one, else read with
        the store's own search (`_near_ops`)."""
        items = self._kept_repeats(candidates)
        if items is not None:
            return self._neighbours([items])
        ops = self._near_ops(candidates)
        return self._neighbours(self._batch(ops) if ops else [])

    def change_finder(self, candidates: Sequence[Mapping[str, Any]]) -> DuplicateFinder:
        """What a changing statement is compared with: read with the store's
        own search (`_near_ops`, for the changing statements only),
        never the kept index, which holds only what a repeat could be (the
        same values), never a statement's older value."""
        ops = self._near_ops([c for c in candidates if changing(c)])
        return self._neighbours(self._batch(ops) if ops else [])

    def neighbour_finder(self, candidates: Sequence[Mapping[str, Any]]) -> DuplicateFinder:
        """A consolidation's finder: always read with the store's own search
        (the kept index names only what a repeat could be, and the model is
        shown the nearest entries of the type, repeats or not)."""
        ops = self._near_ops(candidates)
        return self._neighbours(self._batch(ops) if ops else [])

    async def aderive(self, entries: Sequence[Mapping[str, Any]]) -> Derived:
        """One derivation of an async write, as
        [`StoreVerbs.derive`][poolsplit_adapters.stores.StoreVerbs.derive] derives it, through
        the store's async API (its kept index, when one is kept, from a
        worker thread for an ``AsyncPostgresStore``)."""
        prepared = self.preparing(entries)
        stored = await self.aread([str(e["id"]) for e in prepared])
        moved = returning(prepared, stored)  # before any finder files them (see stored_for)
        if moved:
            stored += await self.aread(moved)
        if plain_async_postgres_store(self.store) and self._repeats is not None:
            # the kept index's refresh waits on the store's loop: from a worker thread
            items = await off_loop(self._kept_repeats, prepared)
        else:
            items = self._kept_repeats(prepared)
        if items is not None:
            finder = self._neighbours([items])
        else:
            ops = self._near_ops(prepared)
            finder = self._neighbours(await self._abatch(ops) if ops else [])
        hits = finder.admit(prepared)
        hits = same_id_repeats(prepared, hits, stored)
        repeats = {n for n, hit in enumerate(hits) if hit is not None}
        changed = None
        statements = [e for n, e in enumerate(prepared) if n not in repeats and changing(e)]
        if statements:
            ops = self._near_ops(statements)
            changed = updates(self._neighbours(await self._abatch(ops)), prepared, repeats)
        return (prepared, *settle_repeats(prepared, hits, changed))

    def _forget_ops(self, namespace: str) -> Tuple[Namespace, SearchOp]:
        if not isinstance(namespace, str) or not namespace:
            raise ValueError("forget namespace must be a non-empty string, got %r" % (namespace,))
        target = _check_one(tuple(namespace.split(".")), "forget namespace")
        return target, SearchOp(target, limit=READ_ALL)

    def forget(self, *, namespace: str) -> int:
        """Delete every item of the namespace labelled ``namespace`` (e.g.
        ``"memories.u1"``: any namespace of the store, exactly, never its
        children) in one batch, their vectors with them; return how many.
        Every version goes (superseded ones are items of the same namespace).
        """
        target, op = self._forget_ops(namespace)
        [found] = self.store.batch([op])
        keys = [item.key for item in _items(found) if tuple(item.namespace) == target]
        if keys:
            self.store.batch([PutOp(target, key, None) for key in keys])
        return len(keys)

    async def aforget(self, *, namespace: str) -> int:
        """Async [`forget`][]."""
        target, op = self._forget_ops(namespace)
        [found] = await self.store.abatch([op])
        keys = [item.key for item in _items(found) if tuple(item.namespace) == target]
        if keys:
            await self.store.abatch([PutOp(target, key, None) for key in keys])
        return len(keys)


def _expired_ids(entries: Sequence[Mapping[str, Any]], now: Optional[datetime.datetime]) -> Set[str]:
    """The ids of ``entries`` whose ``expires`` is at or before ``now``."""
    moment = moment_of(now)
    return {str(e.get("id")) for e in entries if e.get(EXPIRES) is not None and is_expired(e, moment)}


def _keeper(searches: Sequence[Search]) -> Callable[[Mapping[str, Any]], bool]:
    """`Search.admits` of any of ``searches`` (no namespace condition:
    each op reads one namespace), as one predicate over an item's value."""
    if any(s.types is None and not s.always and not s.untyped for s in searches):
        return lambda value: True
    types = {t for s in searches if s.types is not None and not s.always and not s.untyped for t in s.types}
    always = any(s.always for s in searches)
    untyped = any(s.untyped for s in searches)

    def keep(value: Mapping[str, Any]) -> bool:
        kind = value.get("type")
        return kind in types or (untyped and kind is None) or (always and value.get("scope") == "always")

    return keep


def _items(result: Any) -> List[Item]:
    """A search op's result (a list of items) as a list."""
    return list(result or ())


def _query(context: Optional[Mapping[str, Any]]) -> Optional[str]:
    if context is None:
        return None
    message = context.get("message")
    return message if isinstance(message, str) and message.strip() else None
