"""The agent middleware's recall over a LangGraph store, prepared once and
kept between turns while the namespace has not changed.

A LangGraph ``BaseStore`` has no change counter, so reading the whole
namespace and selecting over it afresh on every agent turn made each turn
cost O(namespace) in Python (~1 s at 10k memories). Here each namespace
chain keeps a :class:`~poolsplit_adapters.MemoryIndex` of its entries and,
per item, a *stamp* of what was read; a turn first asks the store for a
cheap **watermark** and selects over the kept index when it is the one the
index was built at. When it moved (the middleware's own writes move it too),
only the items whose stamp changed are converted again, and the index is
updated in place (or rebuilt when the store's order would otherwise
differ). How each store kind answers:

* ``InMemoryStore`` (one process by construction): the watermark is the
  namespace's item objects themselves; every ``put`` makes a new ``Item``,
  so identity says exactly which items changed (the kept index holds the
  old ones, so their identities cannot be reused).
* ``SqliteStore``: ``PRAGMA data_version`` (changes whenever *another*
  connection, in this or another process, commits) with the connection's
  ``total_changes`` (every write through this connection, any thread). When
  either moved, one query reads each item's key, value text and timestamps
  (no JSON parsing), and only changed keys are read through the store
  (``GetOp``): ``updated_at`` there has one-second resolution, so the value
  text, not the time, tells a rewrite apart.
* Any other store (``PostgresStore``, ...), or one with a TTL (expiry
  changes what a read returns without a write): no watermark; the whole
  namespace is read every turn (one exact read per namespace, as before),
  and the stamp ``(updated_at, created_at, value)`` still spares the
  conversion and the index build.

The candidates and their order are exactly those of
:meth:`BaseStoreMemory.recall` (own namespace first, then each link; by
creation time, then key), filtered by the pools' types the same way, so
the selection is the one ``select`` over the recalled list makes (the
index's twins are tested against the core). A recall ranked by the store's
vector index (``fetch_k`` with an indexed store) depends on the query and
is not prepared.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from langgraph.store.base import BaseStore, GetOp, Item
from langgraph.store.memory import InMemoryStore

from ..index import MemoryIndex
from ..poolsplit import Layering, Pool, Scorer, Selection
from ..recall import RecallPlan, Search
from .store import BaseStoreMemory, Namespace, _keeper, namespace_label

__all__ = ["PreparedRecall", "prepares", "watermark"]

_Key = Tuple[int, str]  # (chain link, item key)

#: The SqliteStore columns one diff read takes (a value's JSON text, not parsed).
_SQLITE_ROWS = "SELECT key, value, created_at, updated_at FROM store WHERE prefix = ?"


def _sqlite(store: BaseStore) -> Optional[sqlite3.Connection]:
    """The connection of a (sync) ``SqliteStore`` without a TTL, else None."""
    try:
        from langgraph.store.sqlite import SqliteStore
    except ImportError:  # pragma: no cover - the langchain extra installs it
        return None
    conn = getattr(store, "conn", None)
    if isinstance(store, SqliteStore) and isinstance(conn, sqlite3.Connection) and not store.ttl_config:
        return conn
    return None


def _in_memory(store: BaseStore) -> Optional[Dict[Namespace, Dict[str, Item]]]:
    """An ``InMemoryStore``'s items by namespace, else None."""
    data = getattr(store, "_data", None)
    if isinstance(store, InMemoryStore) and isinstance(data, dict) and not getattr(store, "ttl_config", None):
        return data
    return None


def watermark(store: BaseStore, chain: Sequence[Namespace]) -> Optional[Hashable]:
    """A cheap value that changes whenever the items of ``chain`` may have
    changed, or None when ``store`` offers none (then read every turn)."""
    data = _in_memory(store)
    if data is not None:
        return ("items", tuple(tuple(data.get(ns, {}).values()) for ns in chain))
    conn = _sqlite(store)
    if conn is not None:
        with store.lock:  # type: ignore[attr-defined]
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            return ("sqlite", version, conn.total_changes)
    return None


def prepares(memory: BaseStoreMemory, query: Optional[str]) -> bool:
    """Whether this recall can be prepared: not when the store's vector
    index ranks it for the query (``fetch_k`` on an indexed store)."""
    return not (query and memory.indexed and memory.fetch_k is not None)


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


class PreparedRecall:
    """The entries of one namespace chain, for one set of pool types, as a
    kept :class:`~poolsplit_adapters.MemoryIndex`.

    Args:
        memory: the chain's :class:`BaseStoreMemory` (reads and conversion).
        pools: the pools whose types decide which items are candidates.
        scorer: the index's scorer (an embedding scorer is vectorised).

    Example::

        prepared = PreparedRecall(memory, pools, scorer)
        prepared.refresh()                       # cheap when nothing changed
        selection = prepared.select(pools, {"message": "deploy"})
        prepared.version                         # equal: the same content
    """

    def __init__(self, memory: BaseStoreMemory, pools: Sequence[Pool], scorer: Scorer) -> None:
        self.memory = memory
        self.scorer = scorer
        searches = tuple(RecallPlan(pools, fetch_k=1).searches())
        self._keep: Callable[[Mapping[str, Any]], bool] = _keeper(searches)
        self._rows: Dict[_Key, _Row] = {}
        self._order: List[_Key] = []
        self._index: Optional[MemoryIndex] = None
        self._token: Optional[Hashable] = None
        self._digest = 0
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
            store, chain = self.memory.store, self.memory.chain
            token = watermark(store, chain)
            if token is not None and token == self._token and self._index is not None:
                return
            data = _in_memory(store)
            if data is not None:
                # The watermark is the items themselves: identity is the stamp.
                found = [(link, item.key, item, item) for link, ns in enumerate(chain) for item in token[1][link]]  # type: ignore[index]
            elif _sqlite(store) is not None:
                found = self._sqlite_rows()
            else:
                self.reads += 1
                results = store.batch(self.memory._ops(self.memory._plan(None, None)))
                found = self._generic_rows(results)
            self._apply(found, token)

    async def arefresh(self) -> None:
        """Async :meth:`refresh` (a store without a watermark is read with ``abatch``)."""
        store = self.memory.store
        if _in_memory(store) is not None or _sqlite(store) is not None:
            self.refresh()  # in-process reads, no I/O to await
            return
        results = await store.abatch(self.memory._ops(self.memory._plan(None, None)))
        with self._lock:
            self.reads += 1
            self._apply(self._generic_rows(results), None)

    def _generic_rows(self, results: Sequence[Any]) -> List[Tuple[int, str, Any, Optional[Item]]]:
        chain = self.memory.chain
        found: List[Tuple[int, str, Any, Optional[Item]]] = []
        for link, items in enumerate(results):
            for item in items or ():
                if tuple(item.namespace) == chain[link]:  # search matched the prefix: children are not ours
                    found.append((link, item.key, (item.updated_at, item.created_at, item.value), item))
        return found

    def _sqlite_rows(self) -> List[Tuple[int, str, Any, Optional[Item]]]:
        """Each item's key and stamp (value text, timestamps) from one query
        per namespace; the items whose stamp changed read through the store."""
        store, chain = self.memory.store, self.memory.chain
        conn = _sqlite(store)
        assert conn is not None
        self.reads += 1
        stamped: List[Tuple[int, str, Any]] = []
        with store.lock:  # type: ignore[attr-defined]
            for link, ns in enumerate(chain):
                rows = conn.execute(_SQLITE_ROWS, (namespace_label(ns),)).fetchall()
                stamped += [(link, str(key), (value, created, updated)) for key, value, created, updated in rows]
        known = self._rows
        fresh = [(link, key) for link, key, stamp in stamped if _moved(known.get((link, key)), stamp)]
        got: Dict[_Key, Item] = {}
        if fresh:
            self.reads += 1
            results = store.batch([GetOp(chain[link], key) for link, key in fresh])
            got = {k: item for k, item in zip(fresh, results) if isinstance(item, Item)}
        found: List[Tuple[int, str, Any, Optional[Item]]] = []
        for link, key, stamp in stamped:
            item = got.get((link, key))
            if item is None:
                old = known.get((link, key))
                if _moved(old, stamp):
                    continue  # deleted between the two reads: gone
                item = old.item  # type: ignore[union-attr]
            found.append((link, key, stamp, item))
        return found

    def _apply(self, found: Sequence[Tuple[int, str, Any, Optional[Item]]], token: Optional[Hashable]) -> None:
        """Turn the rows read into the kept rows and index: unchanged stamps
        keep their entry; the index is updated in place when the unchanged
        entries keep their order and every new one sorts after them, else
        rebuilt."""
        known, memory = self._rows, self.memory
        rows: Dict[_Key, _Row] = {}
        same: set[_Key] = set()
        for link, key, stamp, item in found:
            assert item is not None
            old = known.get((link, key))
            if not _moved(old, stamp):
                rows[(link, key)] = old  # type: ignore[assignment]
                same.add((link, key))
                continue
            entry = memory._entry(item, counted=True) if self._keep(item.value) else None
            rows[(link, key)] = _Row(stamp, item, entry, _digest(link, item) if entry is not None else 0)
        order = sorted(
            (k for k, row in rows.items() if row.entry is not None), key=lambda k: _sort_key(k, rows[k].item)
        )
        kept_before = [k for k in self._order if k in same]
        head = len(kept_before)
        index = self._index
        changed = order != self._order or head != len(order)
        if index is not None and order[:head] == kept_before:
            for k in self._order:
                if k not in same:
                    index.remove(known[k].entry)  # type: ignore[arg-type]
            index.extend([rows[k].entry for k in order[head:]])  # type: ignore[misc]
        else:
            index = MemoryIndex(
                [rows[k].entry for k in order],  # type: ignore[misc]
                token_counter=memory._counts.counter,
                scorer=self.scorer,
            )
        if changed or index is not self._index:
            self._digest = sum(rows[k].digest for k in order) % (1 << 128)
        self._rows, self._order, self._index, self._token = rows, order, index, token

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
        :meth:`BaseStoreMemory.select_from` over a fresh recall)."""
        assert self._index is not None, "refresh() first"
        return self._index.select(
            list(pools), context, now=now, scorer=scorer, visibility=self.memory.visibility, layering=layering
        )

    def entries(self) -> List[Mapping[str, Any]]:
        """The candidates in recall order (what a fresh recall returns)."""
        return [] if self._index is None else self._index.entries


def _moved(old: Optional[_Row], stamp: Any) -> bool:
    """Whether an item read with ``stamp`` differs from the kept row (identity first: an ``InMemoryStore`` item)."""
    return old is None or not (old.stamp is stamp or old.stamp == stamp)


def _sort_key(key: _Key, item: Item) -> Tuple[int, Any, str]:
    return key[0], item.created_at, key[1]
