"""How [`BaseStoreMemory`][poolsplit_adapters.stores.langgraph.store.BaseStoreMemory]
reads a LangGraph store: the read plan of a recall (exact reads, no paging;
one op per type only when the store ranks by similarity), the batch that
runs it (our own ranked searches where we serve the store), and the items
turned into entries (counted once, scores kept). The rules are the
[`store`][poolsplit_adapters.stores.langgraph.store] module's docstring's.
"""

import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional, Tuple

from langgraph.store.base import BaseStore, Item, SearchOp

from ...memory.write_gate import check_scope, utc_stamp
from ...poolsplit import (
    EntryError,
    Pool,
    ScoringContext,
    TokenCounter,
    check_entry,
    entry_cost,
    given_token_count,
)
from ...recall import RecallPlan, Search
from ...relevance.known import KnownKey
from ..checks import fresh_copy, storable_text
from .namespaces import Namespace, namespace_label
from .postgres_store_search import EVERY_ITEM
from .ranked_search import RankedSearch, StoreSearcher

__all__ = ["RANK_ALL", "READ_ALL", "ReadSpec", "Recall", "StoreReads", "TokenCounts", "items_of", "keeper", "query_of"]

#: ``limit`` of an op that reads everything it matches in one exact query:
#: more than any namespace holds (and within every engine's 64-bit LIMIT).
READ_ALL = 2**62
#: ``limit`` of a ranked op (``query=``) that ranks everything it matches:
#: ``PostgresStore`` multiplies a vector search's limit by its vectors per
#: item and 2 before binding it, so READ_ALL would overflow its BIGINT.
RANK_ALL = EVERY_ITEM


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
    prepared: Dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The scorer ``select_from`` prepared over these entries, with what it
    was prepared for: a call that fills twice (a task plan's standing room
    moved, `AdapterCall.filled`) scores each candidate once."""


@dataclass(frozen=True)
class ReadSpec:
    link: int
    filter: Optional[Dict[str, Any]]
    query: Optional[str]
    limit: int
    #: the plan's searches an item must match to be kept (empty: keep all),
    #: when one unfiltered read of the namespace stands for all of them
    keep: Tuple[Search, ...] = ()


class TokenCounts:
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


class StoreReads:
    """The read half of ``BaseStoreMemory`` (see the module docstring)."""

    store: BaseStore
    chain: Tuple[Namespace, ...]
    namespace: Namespace
    fetch_k: Optional[int]
    _counts: TokenCounts
    #: Our searcher of the store's ranked searches (`RecallSearcher`), None: the store's own search.
    _ranked_search: Optional[StoreSearcher]
    _postgres_family: bool

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

    def _plan(
        self, pools: Optional[Sequence[Pool]], query: Optional[str], *, corrections: bool = True
    ) -> List[ReadSpec]:
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
            return [ReadSpec(link, None, None, READ_ALL) for link in links]
        searches = tuple(RecallPlan(pools, fetch_k=self.fetch_k or 1).searches())
        for search in searches:  # every engine alike, filtered in the store or here
            for name in search.types or ():
                storable_text(name, "pool type")
        ranked = bool(query and self.indexed)
        if all(search.always for search in searches):
            return [ReadSpec(link, {"scope": "always"}, None, READ_ALL) for link in links] if corrections else []
        if not ranked:
            return [ReadSpec(link, None, None, READ_ALL, searches) for link in links]
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
            searcher = self._ranked_search  # else the store's own search
            ours = searcher is not None and searcher.serves(RankedSearch(self.namespace, limit, untyped=True))
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
                specs.append(ReadSpec(link, {"scope": "always"}, None, READ_ALL))  # corrections never by similarity
            specs += [ReadSpec(link, where, query, limit, keep) for where in filters]
            if nearest_untyped and filters != [None]:  # (one search of every type finds them already)
                specs.append(ReadSpec(link, None, query, limit, tuple(nearest_untyped)))
        return specs

    def _ops(self, specs: Sequence[ReadSpec]) -> List[SearchOp]:
        return [SearchOp(self.chain[s.link], filter=s.filter, limit=s.limit, query=s.query) for s in specs]

    def _split(self, ops: Sequence[Any]) -> Tuple[Dict[int, RankedSearch], List[Any]]:
        """The ops our own ranked search answers (by position) and the rest,
        in order: on a store we have a searcher for (a ``PostgresStore`` or
        an ``InMemoryStore``), every ranked ``SearchOp`` filtered by type at
        most that the searcher serves (`RecallSearcher.serves`: on
        Postgres a walk up to `MOST_RANKED`, an exact read past it; see
        `postgres_store_search` and `memory_store_search`)."""
        ours: Dict[int, RankedSearch] = {}
        searcher = self._ranked_search
        for i, op in enumerate(ops):
            if searcher is None or not isinstance(op, SearchOp) or not op.query or op.offset:
                continue
            where = op.filter
            if where is not None and (set(where) - {"type"} or not isinstance(where.get("type"), (str, type(None)))):
                continue  # a filter of the store's own dialect: its own search
            kind = (where or {}).get("type")
            untyped = where is not None and "type" in where and kind is None
            search = RankedSearch(tuple(op.namespace_prefix), op.limit, type=kind, untyped=untyped, query=op.query)
            if searcher.serves(search):
                ours[i] = search
        return ours, [op for i, op in enumerate(ops) if i not in ours]

    def _ranked(self, ours: Dict[int, RankedSearch]) -> Dict[int, List[Item]]:
        if not ours:
            return {}
        assert self._ranked_search is not None
        return {i: list(items) for i, items in zip(ours, self._ranked_search.run(list(ours.values()), None))}

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
            found = await self._ranked_search.arun(list(ours.values()), None)
            ranked = {i: list(items) for i, items in zip(ours, found)}
        return self._merged(len(ops), ranked, rest)

    def _run(self, specs: Sequence[ReadSpec]) -> List[Tuple[ReadSpec, List[Item]]]:
        results = [items_of(found) for found in (self._batch(self._ops(specs)) if specs else [])]
        limits = [spec.limit for spec in specs]
        again = self._crowded(specs, results, limits)
        while again:
            wider = [(n, replace(specs[n], limit=limits[n])) for n in again]
            for (n, _), found in zip(wider, self._batch(self._ops([spec for _, spec in wider]))):
                results[n] = self._nearest_own(specs[n], items_of(found))
            again = self._crowded(specs, results, limits)
        return list(zip(specs, results))

    async def _arun(self, specs: Sequence[ReadSpec]) -> List[Tuple[ReadSpec, List[Item]]]:
        """Async [`_run`][]."""
        results = [items_of(found) for found in (await self._abatch(self._ops(specs)) if specs else [])]
        limits = [spec.limit for spec in specs]
        again = self._crowded(specs, results, limits)
        while again:
            wider = [(n, replace(specs[n], limit=limits[n])) for n in again]
            for (n, _), found in zip(wider, await self._abatch(self._ops([spec for _, spec in wider]))):
                results[n] = self._nearest_own(specs[n], items_of(found))
            again = self._crowded(specs, results, limits)
        return list(zip(specs, results))

    def _nearest_own(self, spec: ReadSpec, items: List[Item]) -> List[Item]:
        """A widened read's page: the nearest ``spec.limit`` of the
        namespace's own items (as the page of ``fetch_k`` would have been
        without the child's), and whatever else it holds after them (the
        child's, dropped later, which keep the page full: `_crowded`)."""
        own = self.chain[spec.link]
        mine = [item for item in items if tuple(item.namespace) == own]
        return mine[: spec.limit] + [item for item in items if tuple(item.namespace) != own]

    def _crowded(self, specs: Sequence[ReadSpec], results: Sequence[List[Item]], limits: List[int]) -> List[int]:
        """The ranked reads whose page the store filled (``limits[n]``
        items) with fewer than ``spec.limit`` of the namespace's own items,
        each read limit widened fourfold here (at most `RANK_ALL`).

        Why: a LangGraph store's own search matches a namespace as a
        prefix, so a child namespace's items (``("memories", "ana",
        "drafts")``) nearer the query took the page of ``fetch_k`` and were
        then dropped as not this namespace's: over a ``PostgresStore`` with
        a TTL (searched by the store itself) a pool of three facts recalled
        none. Our own searches match the namespace exactly and are never
        crowded."""
        crowded = []
        for n, (spec, items) in enumerate(zip(specs, results)):
            if spec.query is None or limits[n] >= RANK_ALL or len(items) < limits[n]:
                continue
            own = self.chain[spec.link]
            if sum(tuple(item.namespace) == own for item in items) < spec.limit:
                limits[n] = min(limits[n] * 4, RANK_ALL)
                crowded.append(n)
        return crowded

    # -- items -> entries ---------------------------------------------------------------

    def _entry(self, item: Item, *, counted: bool) -> Dict[str, Any]:
        entry: Dict[str, Any] = dict(item.value)
        entry["id"] = item.key
        entry["namespace"] = namespace_label(item.namespace)
        if not entry.get("created"):
            entry["created"] = utc_stamp(item.created_at)
        if not counted:  # a read's: nothing shared with the store's own value (InMemoryStore's)
            return fresh_copy(entry)
        # The content is part of the key: SqliteStore's updated_at has
        # one-second resolution, so a rewrite within the second kept its time.
        # A content of another kind (a list a host wrote) is no key: it fails the check below, named.
        content = entry.get("content")
        cache_key = (tuple(item.namespace), item.key, item.updated_at, content if isinstance(content, str) else None)
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

    def _collect(self, found: Iterable[Tuple[ReadSpec, List[Item]]], *, counted: bool) -> Recall:
        seen: Dict[Tuple[Namespace, str], Tuple[int, Item]] = {}
        by_place: Dict[Tuple[str, str], float] = {}  # (namespace label, key) -> the store's score
        cosine = self.cosine_scores
        for spec, items in found:
            own = self.chain[spec.link]
            keep = keeper(spec.keep) if spec.keep else None
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

    def _scan(self, namespace: Optional[str]) -> List[ReadSpec]:
        specs = self._plan(None, None)
        if namespace is None:
            return specs
        return [s for s in specs if namespace_label(self.chain[s.link]) == namespace]


def keeper(searches: Sequence[Search]) -> Callable[[Mapping[str, Any]], bool]:
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


def items_of(result: Any) -> List[Item]:
    """A search op's result (a list of items) as a list."""
    return list(result or ())


def query_of(context: Optional[Mapping[str, Any]]) -> Optional[str]:
    """The message a read searches by (None: no text to search), the
    context checked first as the core checks it."""
    ScoringContext(context, None)  # a str context, a message of 5: named, before any read
    if context is None:
        return None
    message = context.get("message")
    return message if isinstance(message, str) and message.strip() else None
