"""MemoryIndex: a prepared memory store for the per-turn hot path.

An agent queries its memory on every turn, but most of what selection needs
from an entry does not change between turns: its cost (a tokenizer call),
its parsed creation time, its significant words, tags, project, type and
activeness. :class:`MemoryIndex` computes those once, when an entry is
added, and answers ``retrieve_pools`` / ``select`` with output identical to
the stateless functions of :mod:`poolsplit_adapters.poolsplit` (same dict
objects, same order) over ``index.entries``.

With the default scorer and numpy installed, scoring is vectorised: the
spec's factors are applied element-wise in the spec's order, so every score
is bit-identical to :func:`~poolsplit_adapters.poolsplit.default_scorer`;
the message and tag factors come from inverted postings (word -> entries)
instead of re-reading every text; and each pool ranks only the top slice of
its candidates exactly, widening it only if the budget is not yet full.
With a custom scorer, or without numpy, the index runs the core algorithm
with its cached costs and checks (the generic path), so the tokenizer is
still never asked twice about an unchanged entry.

**Threads.** Queries and mutations take one lock, so a shared index can be
queried from several threads (as LangChain's ``batch`` does); queries then
run one at a time.

**Mutation.** The index caches what it read from each dict when the dict was
added. If you change an indexed dict in place, call :meth:`refresh` with it
(or :meth:`refresh_all`); until then the index ranks it by the old values,
while returning the same, now changed, dict. :meth:`replace` swaps one entry
for another (the new one goes to the end, as with remove + add).
"""

from __future__ import annotations

import datetime
import functools
import threading
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
    TypeVar,
)

from .poolsplit import (
    DEFAULT_PRIORITY,
    MESSAGE_THRESHOLD,
    MESSAGE_WEIGHT,
    PROJECT_OTHER,
    PROJECT_SAME,
    RECENCY_DROP,
    RECENCY_FLOOR,
    RECENCY_HORIZON_DAYS,
    TAG_WEIGHT,
    Chosen,
    Dropped,
    IsActive,
    Pool,
    PoolStats,
    Reason,
    Scorer,
    ScoringContext,
    Selection,
    TokenCounter,
    Visibility,
    _check_pools,
    _describe,
    _run,
    check_entry,
    default_is_active,
    default_scorer,
    default_token_counter,
    entry_cost,
    given_token_count,
    parse_created,
    resolve_visibility,
    significant_words,
    warn_unadmitted,
)

try:  # numpy is optional: without it the generic path serves every query.
    import numpy as np
except ImportError:  # pragma: no cover - exercised only without numpy
    np = None  # type: ignore[assignment]

__all__ = ["MemoryIndex"]

_F = TypeVar("_F", bound=Callable[..., Any])


def _locked(method: _F) -> _F:
    """Run ``method`` under the index's lock: mutations and the lazy array
    build must not interleave (LangChain's ``batch`` queries from threads)."""

    @functools.wraps(method)
    def wrapper(self: MemoryIndex, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


_EPOCH = datetime.datetime(1, 1, 1)
_MICRO = datetime.timedelta(microseconds=1)


def _micros(moment: datetime.datetime) -> int:
    return (moment - _EPOCH) // _MICRO


class MemoryIndex:
    """A prepared, mutable memory store answering pool-split queries fast.

    Args:
        entries: initial entries (plain dicts, checked on the way in).
        token_counter: cost of an entry without a positive ``token_count``;
            called once per added entry (a counter with ``count_many``, such
            as :class:`~poolsplit_adapters.tokens.TiktokenCounter`, is called
            once per batch).
        is_active: activeness predicate, evaluated when an entry is added or
            refreshed.
        use_numpy: set False to force the pure-Python generic path.

    Raises:
        EntryError: a malformed entry (named by id and position).
        ValueError: the same dict object added twice.
    """

    def __init__(
        self,
        entries: Iterable[Mapping[str, Any]] = (),
        *,
        token_counter: TokenCounter = default_token_counter,
        is_active: IsActive = default_is_active,
        use_numpy: bool = True,
    ) -> None:
        self._lock = threading.RLock()
        self._version = 0
        self._counter = token_counter
        self._is_active = is_active
        self._numpy = bool(use_numpy and np is not None)
        self._slots: List[Optional[Mapping[str, Any]]] = []  # position -> entry (None: removed)
        self._where: Dict[int, int] = {}  # id(entry) -> position
        self._cost: List[int] = []
        self._active: List[bool] = []
        self._always: List[bool] = []
        self._type: List[str] = []
        self._priority: List[float] = []
        self._created: List[int] = []  # microseconds since year 1, or -1 when absent/unparseable
        self._project: List[Optional[str]] = []
        self._namespace: List[Optional[str]] = []
        self._has_source: List[bool] = []
        self._ntags: List[int] = []
        self._created_key: List[str] = []
        self._id_key: List[str] = []
        # Inverted postings (tag/word -> positions), only for the vectorised
        # path: new positions wait in ``_pending`` until the next query merges
        # them into ``_postings`` (int32 positions, or a dense 0/1 uint8 mask
        # for words so common that a mask is cheaper to add than to scatter).
        self._pending: Dict[Tuple[str, str], List[int]] = {}
        self._postings: Dict[Tuple[str, str], Any] = {}
        self._arrays: Optional[Dict[str, Any]] = None
        self._type_code: Dict[str, int] = {}
        self._project_code: Dict[str, int] = {}
        self._namespace_code: Dict[str, int] = {}
        self.extend(entries)

    # -- contents ---------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._where)

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return (e for e in self._slots if e is not None)

    def __contains__(self, entry: object) -> bool:
        return id(entry) in self._where

    @property
    def version(self) -> int:
        """Mutation counter: bumped by every ``add``, ``remove``, ``replace``
        and ``refresh``, so a cache keyed on it is never stale."""
        return self._version

    @property
    def entries(self) -> List[Mapping[str, Any]]:
        """The indexed entries in index order (the order the stateless
        functions must be given to return identical results)."""
        return [e for e in self._slots if e is not None]

    def add(self, entry: Mapping[str, Any]) -> None:
        """Index one entry (appended at the end)."""
        self.extend([entry])

    @_locked
    def extend(self, entries: Iterable[Mapping[str, Any]]) -> None:
        """Index several entries; their costs are counted in one batch."""
        batch = list(entries)
        seen: Set[int] = set()
        for offset, entry in enumerate(batch):
            check_entry(entry, len(self) + offset)
            if id(entry) in self._where or id(entry) in seen:
                raise ValueError("%s is already in the index" % _describe(entry, len(self) + offset))
            seen.add(id(entry))
        costs = self._costs(batch)
        self._version += 1
        for entry, cost in zip(batch, costs):
            position = len(self._slots)
            self._slots.append(entry)
            self._where[id(entry)] = position
            self._cost.append(cost)
            for store in (
                self._active,
                self._always,
                self._type,
                self._priority,
                self._created,
                self._project,
                self._namespace,
                self._has_source,
                self._ntags,
                self._created_key,
                self._id_key,
            ):
                store.append(None)  # type: ignore[arg-type]
            self._read(position, entry)

    def _costs(self, batch: Sequence[Mapping[str, Any]]) -> List[int]:
        """Costs of a batch; a counter with ``count_many`` gets every text in
        one call (costs are still validated by the core's ``entry_cost``)."""
        counter: TokenCounter = self._counter
        many = getattr(counter, "count_many", None)
        if many is not None:
            texts = list(dict.fromkeys(e["content"] for e in batch if given_token_count(e) is None))
            if texts:
                counter = dict(zip(texts, many(texts))).__getitem__
        return [entry_cost(e, counter, len(self) + k) for k, e in enumerate(batch)]

    def _read(self, position: int, entry: Mapping[str, Any]) -> None:
        """Cache what selection reads from ``entry`` (its features)."""
        get = entry.get
        self._active[position] = bool(self._is_active(entry))
        self._always[position] = get("scope") == "always"
        self._type[position] = get("type", "note")
        self._priority[position] = float(get("base_priority", DEFAULT_PRIORITY))
        created = parse_created(get("created"))
        self._created[position] = -1 if created is None else _micros(created)
        self._project[position] = get("project")
        self._namespace[position] = get("namespace")
        self._has_source[position] = bool(get("source"))
        tags = set(get("tags") or ())
        self._ntags[position] = len(tags)
        self._created_key[position] = get("created") or ""
        self._id_key[position] = get("id") or ""
        if self._numpy:
            pending = self._pending
            for tag in tags:
                pending.setdefault(("tag", tag), []).append(position)
            for word in significant_words(entry["content"]):
                pending.setdefault(("word", word), []).append(position)

    @_locked
    def remove(self, entry: Mapping[str, Any]) -> None:
        """Remove an indexed entry (by identity). Raises KeyError if absent."""
        position = self._where.pop(id(entry), None)
        if position is None:
            raise KeyError("%s is not in the index" % _describe(entry, None))
        self._version += 1
        self._slots[position] = None
        self._active[position] = False
        if self._arrays is not None and position < self._arrays["size"]:
            self._arrays["alive"][position] = False
            self._arrays["active"][position] = False
            self._arrays["logical"] = np.cumsum(self._arrays["alive"]) - 1
        if len(self._slots) > 64 and len(self._where) < len(self._slots) // 2:
            self._compact()

    def remove_id(self, entry_id: str) -> List[Mapping[str, Any]]:
        """Remove every entry whose ``id`` is ``entry_id``; return them."""
        gone = [e for e in self if e.get("id") == entry_id]
        for entry in gone:
            self.remove(entry)
        return gone

    def replace(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        """Swap ``old`` for ``new`` (``new`` goes to the end of the order)."""
        if id(old) not in self._where:
            raise KeyError("%s is not in the index" % _describe(old, None))
        check_entry(new)
        self.remove(old)
        self.add(new)

    def refresh(self, entry: Mapping[str, Any]) -> None:
        """Re-read an entry that was changed in place (keeps its position).

        Costs O(size of the index) (postings are rebuilt), but only the
        refreshed entry is re-counted."""
        if id(entry) not in self._where:
            raise KeyError("%s is not in the index" % _describe(entry, None))
        self.refresh_all([entry])

    @_locked
    def refresh_all(self, entries: Optional[Iterable[Mapping[str, Any]]] = None) -> None:
        """Re-read the given entries (default: every entry)."""
        targets = list(self if entries is None else entries)
        for entry in targets:
            check_entry(entry, self._where.get(id(entry)))
        costs = self._costs(targets)
        self._version += 1
        for entry, cost in zip(targets, costs):
            self._cost[self._where[id(entry)]] = cost
        # Postings cannot be edited cheaply in place: re-read every entry
        # (costs stay cached, so no tokenizer call but for the refreshed).
        self._rebuild()

    def _compact(self) -> None:
        alive = [e for e in self._slots if e is not None]
        costs = [self._cost[self._where[id(e)]] for e in alive]
        self._where = {id(e): n for n, e in enumerate(alive)}
        self._slots = list(alive)
        self._cost = costs
        self._rebuild()

    def _rebuild(self) -> None:
        self._pending, self._postings = {}, {}
        size = len(self._slots)
        for store in (
            "_active",
            "_always",
            "_type",
            "_priority",
            "_created",
            "_project",
            "_namespace",
            "_has_source",
            "_ntags",
            "_created_key",
            "_id_key",
        ):
            current = getattr(self, store)
            if len(current) != size:
                setattr(self, store, [None] * size)
        for position, entry in enumerate(self._slots):
            if entry is None:
                self._active[position] = False
                continue
            self._read(position, entry)
        self._arrays = None

    # -- queries ----------------------------------------------------------------

    def retrieve_pools(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]] = None,
        *,
        now: Optional[datetime.datetime] = None,
        scorer: Scorer = default_scorer,
        visibility: Optional[Visibility] = None,
        scope: Optional[Visibility] = None,
    ) -> Dict[str, List[Any]]:
        """Same result as ``retrieve_pools(index.entries, pools, context, ...)``
        with the same keywords (``visibility`` included)."""
        view = resolve_visibility(visibility, scope)
        return self._query(pools, context, now, scorer, view, report=False).pools

    def select(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]] = None,
        *,
        now: Optional[datetime.datetime] = None,
        scorer: Scorer = default_scorer,
        visibility: Optional[Visibility] = None,
        scope: Optional[Visibility] = None,
    ) -> Selection:
        """Same result as ``select(index.entries, pools, context, ...)`` with
        the same keywords (scores of dropped entries are always filled here)."""
        view = resolve_visibility(visibility, scope)
        return self._query(pools, context, now, scorer, view, report=True)

    @_locked
    def _query(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]],
        now: Optional[datetime.datetime],
        scorer: Scorer,
        view: Optional[Visibility],
        report: bool,
    ) -> Selection:
        if scorer is not default_scorer or not self._numpy:
            return self._generic(pools, context, now, scorer, view, report)
        return self._vectorised(_check_pools(pools), ScoringContext(context, now), view, report)

    def _generic(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]],
        now: Optional[datetime.datetime],
        scorer: Scorer,
        view: Optional[Visibility],
        report: bool,
    ) -> Selection:
        alive = [p for p, e in enumerate(self._slots) if e is not None]
        items = [self._slots[p] for p in alive]
        cost, active = self._cost, self._active
        by_identity = {id(self._slots[p]): p for p in alive}
        return _run(
            items,  # type: ignore[arg-type]
            pools,
            context,
            scorer=scorer,
            token_counter=self._counter,
            is_active=lambda entry: active[by_identity[id(entry)]],
            now=now,
            report=report,
            warn=True,
            cost_of=lambda index, entry: cost[alive[index]],
            checked=True,
            view=view,
        )

    # -- the vectorised path ------------------------------------------------------

    _COLUMNS = (
        "alive",
        "active",
        "always",
        "type",
        "priority",
        "created",
        "project",
        "namespace",
        "has_source",
        "ntags",
        "cost",
    )

    def _columns(self, start: int) -> Dict[str, Any]:
        """Per-position arrays for positions ``start:`` (new type and project
        names get the next free codes)."""
        type_code, project_code = self._type_code, self._project_code
        for t in self._type[start:]:
            if t is not None and t not in type_code:
                type_code[t] = len(type_code)
        for p in self._project[start:]:
            if p is not None and p not in project_code:
                project_code[p] = len(project_code)
        namespace_code = self._namespace_code
        for name in self._namespace[start:]:
            if name is not None and name not in namespace_code:
                namespace_code[name] = len(namespace_code)
        slots = self._slots[start:]
        return {
            "alive": np.array([e is not None for e in slots], dtype=bool),
            "active": np.array(self._active[start:], dtype=bool) & np.array([e is not None for e in slots], dtype=bool),
            "always": np.array(self._always[start:], dtype=bool),
            "type": np.array([type_code.get(t, -1) for t in self._type[start:]], dtype=np.int32),
            "priority": np.array(self._priority[start:], dtype=np.float64),
            "created": np.array(self._created[start:], dtype=np.int64),
            "project": np.array([-1 if p is None else project_code[p] for p in self._project[start:]], dtype=np.int32),
            "namespace": np.array(
                [-1 if n is None else namespace_code[n] for n in self._namespace[start:]], dtype=np.int32
            ),
            "has_source": np.array(self._has_source[start:], dtype=bool),
            "ntags": np.maximum(np.array(self._ntags[start:], dtype=np.float64), 1.0),
            "cost": np.array(self._cost[start:], dtype=np.int64),
        }

    def _build(self) -> Dict[str, Any]:
        """The per-position arrays, brought up to date: appended entries are
        added as a tail (no full rebuild for an agent adding a memory per
        turn); a refresh or compaction rebuilds everything."""
        size = len(self._slots)
        arrays = self._arrays
        if arrays is not None and arrays["size"] == size:
            return arrays
        if arrays is None:
            self._type_code, self._project_code, self._namespace_code = {}, {}, {}
            arrays = self._columns(0)
        else:
            tail = self._columns(arrays["size"])
            arrays = {name: np.concatenate([arrays[name], tail[name]]) for name in self._COLUMNS}
        arrays["size"] = size
        arrays["type_code"] = self._type_code
        arrays["project_code"] = self._project_code
        arrays["has_created"] = arrays["created"] >= 0
        arrays["logical"] = np.cumsum(arrays["alive"]) - 1
        self._merge_postings(size)
        self._arrays = arrays
        return arrays

    def prepare(self) -> MemoryIndex:
        """Build the vectorised arrays now instead of on the first query."""
        if self._numpy:
            self._build()
        return self

    def _merge_postings(self, size: int) -> None:
        dense_from = max(64, size // 8)
        for key, positions in self._pending.items():
            fresh = np.array(positions, dtype=np.int32)
            known = self._postings.get(key)
            if known is not None and known.dtype == np.uint8:
                if len(known) < size:
                    known = np.concatenate([known, np.zeros(size - len(known), dtype=np.uint8)])
                known[fresh] = 1
                merged = known
            else:
                merged = fresh if known is None else np.concatenate([known, fresh])
                if len(merged) >= dense_from:
                    mask = np.zeros(size, dtype=np.uint8)
                    mask[merged] = 1
                    merged = mask
            self._postings[key] = merged
        self._pending = {}

    def _count(self, kind: str, keys: Iterable[str], size: int) -> Any:
        """How many of ``keys`` each position has (each at most once)."""
        counts = np.zeros(size, dtype=np.uint16)
        for key in keys:
            hits = self._postings.get((kind, key))
            if hits is None:
                continue
            if hits.dtype == np.uint8:
                counts[: len(hits)] += hits
            else:
                counts[hits] += 1
        return counts.astype(np.float64)

    def _scores(self, arrays: Dict[str, Any], ctx: ScoringContext) -> Any:
        """Default scores of every position, bit-identical to the scalar
        scorer: the same float64 operations in the same order."""
        size = len(self._slots)
        score = arrays["priority"].copy()
        seconds = (_micros(ctx.ref) - arrays["created"]).astype(np.float64) / 1e6
        days = np.where(arrays["has_created"], seconds / 86400.0, 0.0)
        days = np.where(days < 0.0, 0.0, days)
        recency = 1.0 - (days / RECENCY_HORIZON_DAYS) * RECENCY_DROP
        score *= np.where(recency > RECENCY_FLOOR, recency, RECENCY_FLOOR)
        if ctx.tags:
            shared = self._count("tag", ctx.tags, size)
            score *= 1.0 + (shared / arrays["ntags"]) * TAG_WEIGHT
        code = arrays["project_code"].get(ctx.project, -2) if ctx.project is not None else -2
        project = arrays["project"]
        score *= np.where(project < 0, 1.0, np.where(project == code, PROJECT_SAME, PROJECT_OTHER))
        if ctx.pattern is not None:
            overlap = self._count("word", ctx.words, size) / ctx.nwords
            score *= np.where(overlap > MESSAGE_THRESHOLD, 1.0 + overlap * MESSAGE_WEIGHT, 1.0)
        return score

    def _fill(self, cand: Any, pool: Pool, score: Any, cost: Any) -> Tuple[List[Tuple[int, float, int]], int]:
        """Greedy fill of one pool over candidate positions, in exact rank
        order, ranking only as much of the order as the budget can use."""
        taken: List[Tuple[int, float, int]] = []
        used = 0
        if pool.max_entries <= 0 or pool.max_tokens < 1:
            return taken, used
        created_key, id_key = self._created_key, self._id_key
        pending = cand
        while pending.size:
            # Whatever costs more than the room left can never be taken.
            pending = pending[cost[pending] <= pool.max_tokens - used]
            if not pending.size:
                break
            want = max(32, 4 * int(min(pool.max_entries - len(taken), 1 << 20)))
            if want < pending.size:
                values = score[pending]
                cut = np.partition(values, pending.size - want)[pending.size - want]
                top_mask = values >= cut  # every tie at the cut comes along
                top, pending = pending[top_mask], pending[~top_mask]
            else:
                top, pending = pending, pending[:0]
            keyed = sorted((-s, created_key[i], id_key[i], i) for s, i in zip(score[top].tolist(), top.tolist()))
            for neg_score, _created, _id, i in keyed:
                c = int(cost[i])
                if used + c > pool.max_tokens:
                    continue
                taken.append((i, -neg_score, c))
                used += c
                if len(taken) >= pool.max_entries or used + 1 > pool.max_tokens:
                    return taken, used
        return taken, used

    def _in_scope(self, arrays: Dict[str, Any], view: Visibility, score: Any) -> Tuple[Any, Any, Any]:
        """(visible mask, reason per position or "", scores with the chain
        penalty): the vectorised form of :meth:`Visibility.judge`, checks in the
        same order (namespace, tags, source)."""
        size = len(self._slots)
        live = arrays["active"]
        reason = np.full(size, "", dtype=object)
        visible = live.copy()
        if view.chain:
            link = np.full(size, -1, dtype=np.int64)
            for position, name in enumerate(view.chain):
                code = self._namespace_code.get(name)
                if code is not None:
                    link[arrays["namespace"] == code] = position
            outside = visible & (link < 0)
            reason[outside] = Reason.NAMESPACE
            visible &= ~outside
            if len(view.chain) > 1:
                factors = np.array([view.chain_penalty**n for n in range(len(view.chain))], dtype=np.float64)
                penalty = np.where(link >= 0, factors[np.maximum(link, 0)], 1.0)
                if (penalty[visible] != 1.0).any():
                    score = score * penalty
        if view.require_tags:
            wanted = set(view.require_tags)
            has_all = self._count("tag", wanted, size) == float(len(wanted))
            lacking = visible & ~has_all
            reason[lacking] = Reason.TAGS
            visible &= ~lacking
        if view.require_source:
            unsourced = visible & ~arrays["has_source"]
            reason[unsourced] = Reason.NO_SOURCE
            visible &= ~unsourced
        return visible, reason, score

    def _vectorised(
        self, pools: List[Pool], ctx: ScoringContext, view: Optional[Visibility], report: bool
    ) -> Selection:
        arrays = self._build()
        size = len(self._slots)
        score = self._scores(arrays, ctx)
        cost = arrays["cost"]
        claimed = np.zeros(size, dtype=bool)
        live = arrays["active"]
        scope_reason = None
        if view is not None:
            live, scope_reason, score = self._in_scope(arrays, view, score)
        result: Dict[str, List[Any]] = {}
        always_chosen: List[Chosen] = []
        contextual_chosen: List[Chosen] = []
        stats: Dict[str, PoolStats] = {}
        last_pool = np.full(size, -1, dtype=np.int32) if report else None
        last_room = np.zeros(size, dtype=np.float64) if report else None
        logical = arrays["logical"]
        slots = self._slots
        type_code = arrays["type_code"]
        for number, pool in enumerate(pools):
            admitted = live & ~claimed
            if pool.types is not None:
                allowed = np.zeros(len(type_code) + 1, dtype=bool)  # the extra slot is code -1
                allowed[[type_code[t] for t in pool.types if t in type_code]] = True
                admitted &= allowed[arrays["type"]]
            always = np.flatnonzero(admitted & arrays["always"])
            cand = np.flatnonzero(admitted & ~arrays["always"])
            taken, used = self._fill(cand, pool, score, cost)
            result[pool.name] = [slots[i] for i in always.tolist()] + [slots[i] for i, _, _ in taken]
            claimed[always] = True
            for i, _, _ in taken:
                claimed[i] = True
            if report:
                assert last_pool is not None and last_room is not None
                last_pool[cand] = number
                last_room[cand] = pool.max_tokens - used
                always_cost = cost[always]
                for i, c in zip(always.tolist(), always_cost.tolist()):
                    always_chosen.append(Chosen(slots[i], int(logical[i]), pool.name, True, None, c))  # type: ignore[arg-type]
                for i, s, c in taken:
                    contextual_chosen.append(Chosen(slots[i], int(logical[i]), pool.name, False, s, c))  # type: ignore[arg-type]
                stats[pool.name] = PoolStats(
                    pool.name,
                    pool.max_tokens,
                    pool.max_entries,
                    used,
                    len(taken),
                    len(always),
                    int(always_cost.sum()),
                    len(always) + len(cand),
                )
        admitted_types = None if any(p.types is None for p in pools) else {t for p in pools for t in p.types or ()}
        lost: List[int] = []
        if admitted_types is not None:
            codes = [c for t, c in arrays["type_code"].items() if t not in admitted_types]
            lost = np.flatnonzero(live & arrays["always"] & np.isin(arrays["type"], codes)).tolist()
        for i in lost:
            warn_unadmitted(slots[i], int(logical[i]), stacklevel=5)
        if not report:
            return Selection(result, [], [], {})
        assert last_pool is not None and last_room is not None
        chosen = claimed
        lost_mask = np.zeros(size, dtype=bool)
        lost_mask[lost] = True
        dropped: List[Dropped] = []
        names = [p.name for p in pools]
        rows = np.flatnonzero(arrays["alive"] & ~chosen)
        for i, was_active, pool_no, room, s, c in zip(
            rows.tolist(),
            arrays["active"][rows].tolist(),
            last_pool[rows].tolist(),
            last_room[rows].tolist(),
            score[rows].tolist(),
            cost[rows].tolist(),
        ):
            entry = slots[i]
            index = int(logical[i])
            if scope_reason is not None and scope_reason[i]:
                dropped.append(Dropped(entry, index, scope_reason[i]))  # type: ignore[arg-type]
            elif not was_active:
                dropped.append(Dropped(entry, index, Reason.INACTIVE))  # type: ignore[arg-type]
            elif pool_no >= 0:
                code = Reason.TOKEN_BUDGET if c > room else Reason.ENTRY_CAP
                dropped.append(Dropped(entry, index, code, names[pool_no], s, c))  # type: ignore[arg-type]
            elif lost_mask[i]:
                dropped.append(Dropped(entry, index, Reason.ALWAYS_NO_POOL))  # type: ignore[arg-type]
            else:
                dropped.append(Dropped(entry, index, Reason.NO_POOL))  # type: ignore[arg-type]
        return Selection(result, always_chosen + contextual_chosen, dropped, stats)
