"""The agent middleware's recall over a LangGraph store, prepared once and
kept between turns while the namespace has not changed.

A LangGraph ``BaseStore`` has no change counter, so reading the whole
namespace and selecting over it afresh on every agent turn made each turn
cost O(namespace) in Python (~1 s at 10k memories). Here each namespace
chain keeps a [`MemoryIndex`][] of its entries and,
per item, a *stamp* of what was read; a turn first asks the store for a
cheap **watermark** and selects over the kept index when it is the one the
index was built at. When it moved (the middleware's own writes move it too),
only the items whose stamp changed are converted again, and the index is
updated in place (or rebuilt when the store's order would otherwise
differ). How each store kind answers:

* ``InMemoryStore`` (one process by construction): the watermark is the
  namespace's item objects themselves, listed in C (a tuple of references,
  ~1 ms at 100k items) and compared with the kept ones: every ``put`` makes
  a new ``Item``, so any add, rewrite or delete moves it. When it moved, the
  items are compared by identity, which says exactly which items changed
  (the kept index holds the old ones, so their identities cannot be
  reused).
* ``SqliteStore``: ``PRAGMA data_version`` (changes whenever *another*
  connection, in this or another process, commits) with the connection's
  ``total_changes`` (every write through this connection, any thread). When
  either moved, one query reads each item's key, value text and timestamps
  (no JSON parsing), and only changed keys are read through the store
  (``GetOp``): ``updated_at`` there has one-second resolution, so the value
  text, not the time, tells a rewrite apart.
* ``PostgresStore`` with the change counter installed
  (`install_change_counter`:
  triggers on the store table count every insert, update and delete per
  namespace, whoever writes): the namespace's counter, one primary-key
  lookup, whatever the namespace's size; the query also checks that the
  triggers are all there and enabled. When it moved by exactly the rows of
  the middleware's own write (and the index was current just before), only
  those keys are read; otherwise, as below, each item's key and digest.
* ``PostgresStore`` without it: the number of items and the sum of a
  per-row digest (md5 of key, value, times), computed by the server in one
  query: any writer, in any process or transaction, moves it, and no row
  is sent, but the server reads the whole namespace every turn (~0.5 s at
  100k). When it moved, each item's key and digest are read (one query)
  and compared as sets; only changed keys are read through the store.
* ``AsyncPostgresStore``: the same reads, as statements on its own loop; an
  async turn waits for them from a worker thread (a wait on the loop's own
  thread would never end), so the loop keeps running; so does an async
  write's duplicate check, which reads the kept index as a sync one does.
* Any other store, or one with a TTL (expiry changes what a read returns
  without a write): no watermark; the whole namespace is read every turn
  (one exact read per namespace, as before), and the stamp ``(updated_at,
  created_at, value)`` still spares the conversion and the index build.

The candidates and their order are exactly those of
[`BaseStoreMemory.recall`][] (own namespace first, then each link; by
creation time, then key), filtered by the pools' types the same way, so
the selection is the one ``select`` over the recalled list makes (the
index's twins are tested against the core). A recall ranked by the store's
vector index (``fetch_k`` with an indexed store) depends on the query and
is not prepared; its corrections are, when the store's watermark is cheap
(`cheap_watermark`): a kept index of the always-scope items only
(`CORRECTIONS_ONLY`), so a turn sends the store its ranked searches
alone, none of which reads the whole namespace.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import operator
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, cast

from langgraph.store.base import BaseStore, GetOp, Item
from langgraph.store.base.batch import AsyncBatchedBaseStore
from langgraph.store.memory import InMemoryStore

from ...index import MemoryIndex
from ...memory.repeat_candidates import RepeatCandidates
from ...poolsplit import Layering, Pool, Scorer, Selection
from ...recall import RecallPlan, Search
from ...threads import off_loop
from ..internals import moved
from ..postgres import (
    CHANGE_TRIGGERS,
    CHANGES_TABLE,
    alocked_cursor,
    locked_cursor,
    plain_async_postgres_store,
    plain_postgres_store,
    wait_on_store_loop,
)
from .set_up import sqlite_connection
from .store import BaseStoreMemory, Namespace, namespace_label
from .store_reads import keeper

__all__ = ["CORRECTIONS_ONLY", "PreparedRecall", "cheap_watermark", "off_the_loop", "prepares", "watermark"]

_Key = Tuple[int, str]  # (chain link, item key)
#: What `watermark` returns: a tagged tuple, compared with ``==`` only.
Watermark = Tuple[Any, ...]
_Read = Tuple[int, str, Any, Item]  # (chain link, key, stamp, item) of an item that changed

#: Kept entries an in-place update may move behind new ones (at least; or an
#: eighth of the index) before rebuilding costs less: new items are the
#: newest, so only those created in the same second (SqliteStore's
#: resolution) with a later key sort after them.
MOVED_TAIL = 256

#: The SqliteStore columns one diff read takes (a value's JSON text, not parsed).
_SQLITE_ROWS = "SELECT key, value, created_at, updated_at FROM store WHERE prefix = ?"
_SQLITE_ROW = _SQLITE_ROWS + " AND key = ?"


def _sqlite(store: BaseStore) -> Optional[sqlite3.Connection]:
    """The connection of a (sync) ``SqliteStore`` without a TTL, else None."""
    conn = sqlite_connection(store)
    return conn if conn is not None and not getattr(store, "ttl_config", None) else None


def _in_memory(store: BaseStore) -> Optional[Dict[Namespace, Dict[str, Item]]]:
    """An ``InMemoryStore``'s items by namespace, else None."""
    if not isinstance(store, InMemoryStore) or getattr(store, "ttl_config", None):
        return None
    data = getattr(store, "_data", None)
    if isinstance(data, dict):
        return data
    moved(
        "langgraph-checkpoint",
        "InMemoryStore._data",
        "a dict of namespace -> {key: Item}",
        "poolsplit_adapters/stores/langgraph/prepared.py",
        "the agent's recall reads the store through its public search",
    )
    return None


#: PostgresStore: one digest per item (key, value, times; ``value::text`` of
#: a jsonb is its canonical form), and per namespace their number and sum.
_PG_DIGEST = (
    "('x' || left(md5(key || chr(31) || value::text || chr(31) || created_at::text || chr(31)"
    " || updated_at::text), 15))::bit(60)::bigint"
)
_PG_MARK = "SELECT count(*) AS n, coalesce(sum(%s), 0)::text AS s FROM store WHERE prefix = %%s" % _PG_DIGEST
_PG_ROWS = "SELECT key, %s AS d FROM store WHERE prefix = %%s" % _PG_DIGEST
_PG_ROW = _PG_ROWS + " AND key = %s"
#: Whether the change counter's table exists (then `_PG_CHANGES` can run).
_PG_COUNTED = "SELECT to_regclass('%s') IS NOT NULL AS counted" % CHANGES_TABLE
#: A namespace's change counter, how many of the counter's triggers are
#: there and fire in every session (``ENABLE ALWAYS``: all of them, or the
#: counter is not trusted), and which database and server answered: a
#: database restored from an older copy, or a failover to a replica that
#: lagged, can bring a counter back to a value a reader holds while the
#: items differ; the database's oid and the server's start time change then.
#: So does a counter table dropped (or truncated) and installed again: every
#: counter restarts at 0, and as many writes as a reader's kept count
#: brought it back to that count; the table's storage (its file node, new
#: after ``DROP``/``CREATE`` and ``TRUNCATE``) is part of the watermark.
_PG_CHANGES = (
    "SELECT (SELECT count(*) FROM pg_trigger WHERE tgrelid = to_regclass('store') AND tgname = ANY(%%s)"
    " AND tgenabled = 'A') AS armed,"
    " coalesce((SELECT changes FROM %s WHERE prefix = %%s), 0) AS changes,"
    " (SELECT oid FROM pg_database WHERE datname = current_database())::bigint AS db,"
    " pg_postmaster_start_time()::text AS started,"
    " pg_relation_filenode(to_regclass('%s'))::bigint AS counters" % (CHANGES_TABLE, CHANGES_TABLE)
)


def _postgres(store: BaseStore) -> Optional[Any]:
    """A ``PostgresStore`` or an ``AsyncPostgresStore`` without a TTL, else None."""
    if plain_postgres_store(store) or plain_async_postgres_store(store):
        return store
    return None


def off_the_loop(store: BaseStore) -> bool:
    """Whether an async caller runs this store's sync reads in a worker
    thread: an ``AsyncPostgresStore``, whose statements run on its own loop
    and are waited for from the thread (a wait on the loop's own thread
    would never end), and any LangGraph async store (``AsyncSqliteStore``:
    its sync ``batch`` refuses the loop's thread, and ``pools="auto"``
    reads the store's types with it)."""
    return plain_async_postgres_store(store) or isinstance(store, AsyncBatchedBaseStore)


async def _async_rows(store: Any, statements: Sequence[Tuple[str, Tuple[Any, ...]]]) -> List[List[Dict[str, Any]]]:
    async with alocked_cursor(store) as cur:
        found = []
        for sql, params in statements:
            await cur.execute(sql, params)
            found.append(list(await cur.fetchall()))
        return found


def _pg_rows(store: Any, statements: Sequence[Tuple[str, Tuple[Any, ...]]]) -> List[List[Dict[str, Any]]]:
    """Each statement's rows, one cursor for all: the sync store's, or the
    async store's on its own loop, waited for here (as its own ``batch``
    does; refused on that loop's thread)."""
    if not plain_async_postgres_store(store):
        with locked_cursor(store) as cur:
            found = []
            for sql, params in statements:
                cur.execute(sql, params)
                found.append(list(cur.fetchall()))
            return found
    return cast("List[List[Dict[str, Any]]]", wait_on_store_loop(store, _async_rows(store, statements)))


def _pg_query(store: Any, sql: str, chain: Sequence[Namespace]) -> List[List[Any]]:
    """``sql`` with each namespace's label as its one parameter (never in the text)."""
    found = _pg_rows(store, [(sql, (namespace_label(ns),)) for ns in chain])
    return [[tuple(row.values()) for row in rows] for rows in found]


def _pg_changes(store: Any, chain: Sequence[Namespace]) -> Optional[Tuple[Any, ...]]:
    """Each namespace's change counter (one primary-key lookup each), with
    the database and server that answered (see `_PG_CHANGES`), or
    None when the counter is not installed or a trigger is missing or not
    enabled in every session (then it would not be sound)."""
    [[row]] = _pg_rows(store, [(_PG_COUNTED, ())])
    if not row["counted"]:
        return None
    found = _pg_rows(store, [(_PG_CHANGES, (list(CHANGE_TRIGGERS), namespace_label(ns))) for ns in chain])
    counts: List[Any] = []
    for rows in found:
        if not rows or rows[0]["armed"] != len(CHANGE_TRIGGERS):
            return None
        counts.append((int(rows[0]["changes"]), int(rows[0]["db"]), rows[0]["started"], rows[0]["counters"]))
    return tuple(counts)


def watermark(store: BaseStore, chain: Sequence[Namespace]) -> Optional[Watermark]:
    """A cheap value that changes whenever the items of ``chain`` may have
    changed, or None when ``store`` offers none (then read every turn).
    Only ever compared with ``==`` (an ``InMemoryStore``'s holds lists)."""
    data = _in_memory(store)
    if data is not None:
        return ("items", _in_memory_items(data, chain))
    conn = _sqlite(store)
    if conn is not None:
        with store.lock:  # type: ignore[attr-defined]
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            return ("sqlite", version, conn.total_changes)
    if _postgres(store) is not None:
        counts = _pg_changes(store, chain)
        if counts is not None:  # O(1): the triggers counted every writer's changes
            return ("pgchanges", counts)
        # O(namespace) in the server (a digest per row), one round trip, no
        # row to Python: any writer, any process, any transaction shows.
        return ("postgres", tuple(tuple(rows[0]) for rows in _pg_query(store, _PG_MARK, chain)))
    return None


def _in_memory_items(data: Dict[Namespace, Dict[str, Item]], chain: Sequence[Namespace]) -> Tuple[List[Item], ...]:
    """The items of each namespace of ``chain`` in an ``InMemoryStore``'s
    data, in its order (a ``put`` of a new key appends). Lists, not tuples:
    the watermark builds this on every turn, and a list of a dict's values
    is built at its final size (half the time of a tuple, which grows as it
    reads: 0.56 against 1.15 ms for 100k items); it is only compared, never
    hashed."""
    return tuple(list(data.get(ns, {}).values()) for ns in chain)


def cheap_watermark(store: BaseStore, chain: Sequence[Namespace]) -> bool:
    """Whether ``store``'s watermark costs nothing that grows with the
    namespace's size in Python: an ``InMemoryStore``'s items (a tuple of
    references to them, built and compared in C, no Python call per item),
    a ``SqliteStore``'s data version, a PostgresStore's change counter when
    it is installed and armed (one small query to know); not the digest of
    a PostgresStore without it, which the server computes over every row."""
    if _in_memory(store) is not None or _sqlite(store) is not None:
        return True
    return _postgres(store) is not None and _pg_changes(store, chain) is not None


#: The pool plan of a kept index of corrections only: no contextual budget,
#: so the only search is the corrections' (always-scope, any type).
CORRECTIONS_ONLY = (Pool("corrections", 0, 0),)


def prepares(memory: BaseStoreMemory, query: Optional[str]) -> bool:
    """Whether this recall can be prepared: not when the store's vector
    index ranks it for the query (an indexed store, given a query)."""
    return not (query and memory.indexed)


@dataclass
class _Row:
    stamp: Any
    item: Item
    entry: Optional[Dict[str, Any]]  # None: not kept by the pools' types
    digest: int = 0  # of the item's content, the same in every process


def _digest(link: int, item: Item) -> int:
    """A digest of what an item says (namespace link, key, times, value),
    the same in every process, so two middleware objects serving one
    thread agree on whether the store changed."""
    value = json.dumps(item.value, sort_keys=True, ensure_ascii=False, default=str)
    text = repr((link, item.key, str(item.created_at), str(item.updated_at))) + value
    return int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16], "big")


class _StoreDeltas:
    """What changed in the store since the kept index was last brought up
    to date, read as cheaply as each store allows (an ``InMemoryStore``'s
    items themselves, a ``SqliteStore``'s or ``PostgresStore``'s rows
    compared as sets, a noted own write's keys alone): the half of
    [`PreparedRecall`][] that reads, kept apart from the half that applies
    (``_update``) and selects."""

    memory: BaseStoreMemory
    reads: int
    _rows: Dict[_Key, _Row]
    _items: Optional[Tuple[Any, ...]]
    _token: Optional[Watermark]
    _own: Optional[Tuple[Watermark, List[_Key]]]
    _sqlite_seen: Dict[int, Set[Tuple[Any, ...]]]
    _lock: threading.Lock

    def _in_memory_delta(self, token: Tuple[Any, ...]) -> Tuple[List[_Read], Set[_Key]]:
        """What changed, from the items themselves: when the kept items are
        a prefix of the namespace's (``put`` of a new key appends; a rewrite
        keeps its place but is a new object), only the appended ones and the
        rewritten ones (found by identity in one pass in C: a turn that
        closes or re-sees a stored entry rewrites one of ten thousand); else
        (a key deleted: the order shifted) every item by identity."""
        before = self._items
        changed: List[_Read] = []
        gone: Set[_Key] = set()
        for link, items in enumerate(token):
            kept = before[link] if before is not None else None
            if kept is not None and len(items) >= len(kept):
                at = list(itertools.compress(range(len(kept)), map(operator.is_not, items, kept)))
                if all(items[n].key == kept[n].key for n in at):
                    moved = [items[n] for n in at if _moved(self._rows.get((link, items[n].key)), items[n])]
                    changed += [(link, i.key, i, i) for i in moved + list(items[len(kept) :])]
                    continue
            seen = {item.key for item in items}
            changed += [(link, i.key, i, i) for i in items if _moved(self._rows.get((link, i.key)), i)]
            gone |= {k for k in self._rows if k[0] == link and k[1] not in seen}
        return changed, gone

    def _delta_of(self, results: Sequence[Any]) -> Tuple[List[_Read], Set[_Key]]:
        """What changed in a full read of the chain (one result per link)."""
        chain, known = self.memory.chain, self._rows
        changed: List[_Read] = []
        seen: Set[_Key] = set()
        for link, items in enumerate(results):
            for item in items or ():
                if tuple(item.namespace) != chain[link]:
                    continue  # search matched the prefix: children are not ours
                stamp = (item.updated_at, item.created_at, item.value)
                seen.add((link, item.key))
                if _moved(known.get((link, item.key)), stamp):
                    changed.append((link, item.key, stamp, item))
        return changed, set(known) - seen

    def wrote(self, link: int, keys: Sequence[str], before: Optional[Watermark], after: Optional[Watermark]) -> None:
        """Note a write of ``keys`` (one ``put_many`` through this memory)
        between the watermarks ``before`` and ``after``: when the index was
        up to date at ``before`` and the watermark moved by exactly one row
        per key and nothing else (SqliteStore: ``data_version`` unchanged,
        the connection's changes grown by ``len(keys)``; PostgresStore's
        change counter: link ``link``'s counter grown by ``len(keys)``, the
        others unchanged), no other writer committed in between, these keys
        are all that changed, and the next refresh reads only them."""
        with self._lock:
            self._own = None
            if self._token != before or not _own_only(link, len(keys), before, after):
                return
            assert after is not None
            self._own = (after, [(link, key) for key in keys])

    def _own_writes(self, token: Optional[Watermark]) -> Optional[Tuple[List[_Read], Set[_Key], Callable[[], None]]]:
        """The delta of the noted own write, when the watermark is the one
        it left (else None: read the namespace's rows), and how to settle
        the kept rows once it is applied: each written key's old row is
        replaced by its new one in place (the old row rebuilt from the kept
        stamp; the namespace's rows are neither copied nor scanned, so an
        own write costs its keys, not the namespace)."""
        own, self._own = self._own, None
        if own is None or own[0] != token:
            return None
        store, chain = self.memory.store, self.memory.chain
        keys = list(dict.fromkeys(own[1]))
        self.reads += 2
        found: Dict[_Key, Optional[Tuple[Any, ...]]] = {}
        conn = _sqlite(store)
        if conn is not None:
            with store.lock:  # type: ignore[attr-defined]
                for link, key in keys:
                    row = conn.execute(_SQLITE_ROW, (namespace_label(chain[link]), key)).fetchone()
                    found[(link, key)] = None if row is None else tuple(row)
            stamp_of: Callable[[Tuple[Any, ...]], Any] = lambda row: tuple(row[1:])  # noqa: E731
            row_of: Callable[[str, Any], Tuple[Any, ...]] = lambda key, stamp: (key, *stamp)  # noqa: E731
        else:
            rows = _pg_rows(store, [(_PG_ROW, (namespace_label(chain[link]), key)) for link, key in keys])
            for (link, key), read in zip(keys, rows):
                found[(link, key)] = tuple(read[0].values()) if read else None
            stamp_of = lambda row: row[1]  # noqa: E731
            row_of = lambda key, digest: (key, digest)  # noqa: E731
        patch: List[Tuple[int, Set[Tuple[Any, ...]], Optional[Tuple[Any, ...]]]] = []
        for (link, key), row in found.items():
            kept_rows, old = self._sqlite_seen.get(link, set()), self._rows.get((link, key))
            if old is None:  # a new key: the kept rows are the kept items', so it has none
                patch.append((link, set(), row))
                continue
            stale = row_of(key, old.stamp)
            if stale in kept_rows:
                patch.append((link, {stale}, row))  # a key has one row: this is it
            else:  # not kept as read: whatever row the key had
                patch.append((link, {r for r in kept_rows if r[0] == key}, row))

        def settle() -> None:
            for link, stale_rows, row in patch:
                rows = self._sqlite_seen.setdefault(link, set())
                rows -= stale_rows
                if row is not None:
                    rows.add(row)

        results = store.batch([GetOp(chain[link], key) for link, key in keys])
        changed: List[_Read] = []
        gone: Set[_Key] = set()
        for (link, key), item in zip(keys, results):
            row = found[(link, key)]
            if isinstance(item, Item) and row is not None:
                changed.append((link, key, stamp_of(row), item))
            else:
                gone.add((link, key))
        return changed, gone, settle

    def _sqlite_delta(self) -> Tuple[List[_Read], Set[_Key], Callable[[], None]]:
        """Each item's key, value text and timestamps from one query per
        namespace, compared as sets with the last read's (no JSON parsed, no
        Python per unchanged row); the items whose row changed are read
        through the store. Returns how to keep the rows read, once applied."""
        store, chain = self.memory.store, self.memory.chain
        conn = _sqlite(store)
        assert conn is not None
        self.reads += 1
        with store.lock:  # type: ignore[attr-defined]
            now = [set(conn.execute(_SQLITE_ROWS, (namespace_label(ns),)).fetchall()) for ns in chain]
        return self._compared(now, lambda row: tuple(row[1:]), lambda key, stamp: (key, *stamp))

    def _postgres_delta(self) -> Tuple[List[_Read], Set[_Key], Callable[[], None]]:
        """Each item's key and digest (computed by the server), compared as
        sets with the last read's; the items whose digest changed are read
        through the store. Returns how to keep the rows read, once applied."""
        store, chain = self.memory.store, self.memory.chain
        self.reads += 1
        now = [set(rows) for rows in _pg_query(store, _PG_ROWS, chain)]
        return self._compared(now, lambda row: row[1], lambda key, digest: (key, digest))

    def _compared(
        self,
        now: List[Set[Tuple[Any, ...]]],
        stamp_of: Callable[[Tuple[Any, ...]], Any],
        row_of: Callable[[str, Any], Tuple[Any, ...]],
    ) -> Tuple[List[_Read], Set[_Key], Callable[[], None]]:
        """Each link's rows (key first, then what marks the item's version:
        ``stamp_of`` picks it, ``row_of`` rebuilds the row) compared as sets
        with the last read's; the items whose rows are new are read through
        the store, the keys whose rows are gone reported gone."""
        store, chain = self.memory.store, self.memory.chain
        fresh: List[Tuple[int, str, Any]] = []
        gone: Set[_Key] = set()
        for link, rows in enumerate(now):
            before = self._sqlite_seen.get(link, set())
            fresh += [(link, str(row[0]), stamp_of(row)) for row in rows - before]
            gone |= {(link, str(row[0])) for row in before - rows} - {(link, key) for _, key, _ in fresh}
        changed: List[_Read] = []
        if fresh:
            self.reads += 1
            results = store.batch([GetOp(chain[link], key) for link, key, _ in fresh])
            for (link, key, stamp), item in zip(fresh, results):
                if isinstance(item, Item):
                    changed.append((link, key, stamp, item))
                else:  # deleted between the two reads: not seen either
                    gone.add((link, key))
                    now[link].discard(row_of(key, stamp))
        seen = dict(enumerate(now))

        def settle() -> None:
            self._sqlite_seen = seen

        return changed, gone, settle


class PreparedRecall(_StoreDeltas):
    """The entries of one namespace chain, for one set of pool types, as a
    kept [`MemoryIndex`][].

    Args:
        memory: the chain's [`BaseStoreMemory`][] (reads and conversion).
        pools: the pools whose types decide which items are candidates.
        scorer: the index's scorer (an embedding scorer is vectorised).

    Example:
        ```python
        prepared = PreparedRecall(memory, pools, scorer)
        prepared.refresh()                       # cheap when nothing changed
        selection = prepared.select(pools, {"message": "deploy"})
        prepared.version                         # equal: the same content
        ```
    """

    def __init__(self, memory: BaseStoreMemory, pools: Sequence[Pool], scorer: Scorer) -> None:
        self.memory = memory
        self.scorer = scorer
        searches = tuple(RecallPlan(pools, fetch_k=1).searches())
        self._keep: Callable[[Mapping[str, Any]], bool] = keeper(searches)
        self._rows: Dict[_Key, _Row] = {}
        self._order: List[_Key] = []
        self._index: Optional[MemoryIndex] = None
        self._token: Optional[Watermark] = None
        # an InMemoryStore's items of each link, as last applied (what its next delta is read against)
        self._items: Optional[Tuple[Any, ...]] = None
        self._digest = 0
        self._sqlite_seen: Dict[int, Set[Tuple[Any, ...]]] = {}  # link -> the rows of the last diff read
        self._own: Optional[Tuple[Watermark, List[_Key]]] = None  # (watermark after, keys) of a noted own write
        # the own namespace's items of each written type group, built on its first write
        self._repeats: Dict[Tuple[Any, ...], RepeatCandidates] = {}
        self._lock = threading.Lock()
        self.reads = 0  # store reads beyond the watermark (for benchmarks and tests)

    @staticmethod
    def signature(pools: Sequence[Pool]) -> Tuple[Any, ...]:
        """What decides the candidates of ``pools`` (prepared states are
        shared by plans with the same one)."""
        searches: Tuple[Search, ...] = tuple(RecallPlan(pools, fetch_k=1).searches())
        return tuple(sorted({(s.types, s.always, s.untyped) for s in searches}, key=repr))

    @property
    def version(self) -> Tuple[str, int, str]:
        """Equal versions mean the same candidates, in this process or
        another (a sum of the candidates' content digests, with their number)."""
        return ("prepared", len(self._order), "%032x" % self._digest)

    # -- reading what changed ---------------------------------------------------------

    def refresh(self) -> None:
        """Bring the index up to date with the store: a watermark read, and
        when it moved, the changed items only."""
        with self._lock:
            store = self.memory.store
            token = watermark(store, self.memory.chain)
            if token is not None and token == self._token and self._index is not None:
                return
            if _in_memory(store) is not None:
                # The items the watermark holds (built once a turn, not twice):
                # what is applied is exactly what the watermark compares.
                assert token is not None
                items = token[1]
                changed, gone = self._in_memory_delta(items)
                self._update(changed, gone, token)
                self._items = items  # kept once applied: a malformed item is read again
                return
            elif _sqlite(store) is not None:
                own = self._own_writes(token)
                changed, gone, settle = own if own is not None else self._sqlite_delta()
                self._update(changed, gone, token)
                settle()  # the rows read, kept only once applied: a malformed item is read again
                return
            elif _postgres(store) is not None:
                own = self._own_writes(token)
                changed, gone, settle = own if own is not None else self._postgres_delta()
                self._update(changed, gone, token)
                settle()
                return
            else:
                self.reads += 1
                changed, gone = self._delta_of(store.batch(self.memory._ops(self.memory._plan(None, None))))
            self._update(changed, gone, token)

    async def arefresh(self) -> None:
        """Async `refresh` (a store without a watermark is read with ``abatch``)."""
        store = self.memory.store
        if off_the_loop(store):  # its statements on its loop, waited for in a worker thread
            await off_loop(self.refresh)
            return
        if _in_memory(store) is not None or _sqlite(store) is not None or _postgres(store) is not None:
            self.refresh()  # a sync store: its reads block either way
            return
        results = await store.abatch(self.memory._ops(self.memory._plan(None, None)))
        with self._lock:
            self.reads += 1
            self._update(*self._delta_of(results), None)

    def _update(self, changed: Sequence[_Read], gone: Set[_Key], token: Optional[Watermark]) -> None:
        """Apply what changed: new and rewritten items converted (all of
        them first: a malformed one raises and changes nothing), then the
        index updated in place when every new entry sorts after the ones
        kept (the recall's order: link, creation time, key), else rebuilt."""
        known, memory = self._rows, self.memory
        fresh = []
        for link, key, stamp, item in changed:
            entry = memory._entry(item, counted=True) if self._keep(item.value) else None
            fresh.append(((link, key), _Row(stamp, item, entry, _digest(link, item) if entry is not None else 0)))
        out = {k for k in gone | {k for k, _ in fresh} if k in known and known[k].entry is not None}
        new_rows = dict(fresh)
        added = sorted((k for k, row in fresh if row.entry is not None), key=lambda k: _sort_key(k, new_rows[k]))
        leaving = {k: known[k] for k in out}  # the kept rows whose entries leave the index
        for wanted, repeats in self._repeats.items():
            for link, key in gone:
                if link == 0:
                    repeats.drop(key)
            for (link, key), row in fresh:
                if link == 0:
                    repeats.drop(key)
                    if _typed(row.item, wanted):
                        repeats.put(key, _bucketed(row.item))
        # Everything is converted: the kept rows change in place from here
        # (no copy of the namespace's rows per turn).
        rows = known
        for k in gone:
            rows.pop(k, None)
        rows.update(fresh)
        if not out and not added and self._index is not None:
            self._token = token
            return
        # The kept order without the leaving keys, each found by bisection in
        # the order as it was (their old rows): a rewrite (a repeat's new
        # provenance on every demoting turn) no longer scans the namespace.
        remaining = _without(self._order, out, lambda k: _sort_key(k, leaving[k] if k in leaving else rows[k]))
        # Where the first new entry goes: the kept entries after it (a short
        # tail: new items are the newest) are moved behind the new ones.
        cut = len(remaining)
        if added:
            cut = bisect.bisect_right(
                remaining, _sort_key(added[0], rows[added[0]]), key=lambda k: _sort_key(k, rows[k])
            )
        tail = remaining[cut:]
        index = self._index
        if index is not None and len(tail) <= max(MOVED_TAIL, len(remaining) // 8):
            for row in leaving.values():
                index.remove(row.entry)  # type: ignore[arg-type]
            moved = sorted(added + tail, key=lambda k: _sort_key(k, rows[k]))
            for k in tail:
                index.remove(rows[k].entry)  # type: ignore[arg-type]
            index.extend([rows[k].entry for k in moved])  # type: ignore[misc]
            order = remaining[:cut] + moved
        else:
            order = sorted((k for k, row in rows.items() if row.entry is not None), key=lambda k: _sort_key(k, rows[k]))
            index = MemoryIndex(
                [rows[k].entry for k in order],  # type: ignore[misc]
                token_counter=memory._counts.counter,
                scorer=self.scorer,
            )
        lost = sum(row.digest for row in leaving.values())
        self._digest = (self._digest - lost + sum(rows[k].digest for k in added)) % (1 << 128)
        self._rows, self._order, self._index, self._token = rows, order, index, token

    # -- what a write could repeat -------------------------------------------------------

    def repeatable(self, candidates: Sequence[Mapping[str, Any]]) -> Optional[List[Item]]:
        """The own namespace's items ``candidates`` could repeat, after a
        refresh: every item the write's duplicate check would read (the
        candidates' ids, and the items of their types, ``type`` as the
        store's filter compares it) that `RepeatCandidates` names, so
        the finder over these gives the verdict it gives over all of them.

        None when the store's rows are not all kept here (a store without a
        watermark is read through the pools' searches): then the caller
        reads the store. Each written type's candidate index is built on
        its first write (one pass over the kept items, what one full read
        cost) and follows every refresh after, so a write then costs its
        candidates, not the namespace.
        """
        store = self.memory.store
        if _in_memory(store) is None and _sqlite(store) is None and _postgres(store) is None:
            return None
        self.refresh()
        with self._lock:
            keys: Set[str] = set()
            for entry in candidates:
                kind = entry.get("type")
                wanted = (kind,) if kind not in (None, "note") else ("note", None)
                repeats = self._repeats.get(wanted)
                if repeats is None:
                    repeats = self._repeats[wanted] = RepeatCandidates(
                        (key, _bucketed(row.item))
                        for (link, key), row in self._rows.items()
                        if link == 0 and _typed(row.item, wanted)
                    )
                keys.add(str(entry["id"]))  # the write's own id is read whatever its type
                keys |= {str(key) for key in repeats.candidates(entry)}
            found = (self._rows.get((0, key)) for key in keys)
            return [row.item for row in found if row is not None]

    # -- selecting --------------------------------------------------------------------

    def select(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]],
        *,
        now: Any = None,
        scorer: Optional[Scorer] = None,
        layering: Optional[Layering] = None,
    ) -> Selection:
        """The core's selection over the kept candidates (as
        [`BaseStoreMemory.select_from`][] over a fresh recall)."""
        with self._lock:  # never half a refresh: another thread's update changes the index in place
            assert self._index is not None, "refresh() first"
            return self._index.select(
                list(pools), context, now=now, scorer=scorer, visibility=self.memory.visibility, layering=layering
            )

    def entries(self) -> List[Mapping[str, Any]]:
        """The candidates in recall order (what a fresh recall returns)."""
        return [] if self._index is None else self._index.entries

    def items(self) -> List[List[Item]]:
        """The kept candidates' store items, one list per chain link, in
        recall order (with `CORRECTIONS_ONLY`, what the corrections'
        read by filter returns: for
        [`recall_with`][poolsplit_adapters.stores.langgraph.store.BaseStoreMemory.recall_with])."""
        with self._lock:
            assert self._index is not None, "refresh() first"
            found: List[List[Item]] = [[] for _ in self.memory.chain]
            for link, key in self._order:
                found[link].append(self._rows[(link, key)].item)
            return found


def _own_only(link: int, rows: int, before: Optional[Watermark], after: Optional[Watermark]) -> bool:
    """Whether the watermark moved from ``before`` to ``after`` by exactly
    ``rows`` rows written to chain link ``link`` and nothing else (a
    watermark that can tell: SqliteStore's, PostgresStore's change counter)."""
    if not (isinstance(before, tuple) and isinstance(after, tuple) and before[0] == after[0]):
        return False
    if before[0] == "sqlite":
        return bool(after[1] == before[1] and after[2] - before[2] == rows)
    if before[0] == "pgchanges":
        if [place for _, *place in after[1]] != [place for _, *place in before[1]]:
            return False  # another database or server answered: nothing can be told
        moved = [a[0] - b[0] for a, b in zip(after[1], before[1])]
        return len(moved) == len(before[1]) > link and moved[link] == rows and not any(moved[:link] + moved[link + 1 :])
    return False


def _typed(item: Item, wanted: Tuple[Any, ...]) -> bool:
    """Whether the store's ``filter={"type": w}`` for one of ``wanted``
    returns ``item`` (a missing ``type`` compares as None)."""
    return isinstance(item.value, Mapping) and item.value.get("type") in wanted


def _bucketed(item: Item) -> Dict[str, Any]:
    """What the duplicate check compares of an item: its value, in its namespace."""
    value = item.value if isinstance(item.value, Mapping) else {}
    return {**value, "namespace": namespace_label(item.namespace)}


def _moved(old: Optional[_Row], stamp: Any) -> bool:
    """Whether an item read with ``stamp`` differs from the kept row (identity first: an ``InMemoryStore`` item)."""
    return old is None or not (old.stamp is stamp or old.stamp == stamp)


def _without(order: List[_Key], out: Set[_Key], sort_key: Callable[[_Key], Any]) -> List[_Key]:
    """``order`` (sorted by ``sort_key``, whose values are distinct) without
    the keys in ``out``: each found by bisection, so a few leaving keys cost
    their number times log n, not a pass over the namespace (4 ms a turn at
    10k items, 40 at 100k). A key not where its sort key says (never, while
    ``order`` is sorted) falls back to the pass."""
    if not out:
        return order
    spots = []
    for key in out:
        at = bisect.bisect_left(order, sort_key(key), key=sort_key)
        if at >= len(order) or order[at] != key:
            return [k for k in order if k not in out]
        spots.append(at)
    kept = list(order)
    for at in sorted(spots, reverse=True):
        del kept[at]
    return kept


def _sort_key(key: _Key, row: _Row) -> Tuple[int, Any, str]:
    """The recall's order: chain link, the store's creation time, key."""
    return key[0], row.item.created_at, key[1]
