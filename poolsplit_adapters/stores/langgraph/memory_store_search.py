"""Ranked type searches over LangGraph's ``InMemoryStore(index=)``, from a kept matrix of each namespace's vectors.

Over a vector-indexed store the agent middleware recalls each pool's types
by similarity, ``fetch_k`` items a type. ``InMemoryStore``'s own search does
that in Python for every search: it tests every item of the namespace
against the filter, builds a NumPy array from the matching items' vector
lists, and sorts every score in Python. With one search per type that was
2.7 s a turn at 100k memories and 170 ms at 10k
(``benchmarks/middleware_turn.py``).

So each namespace's vectors are kept here, between runs, as one float64
matrix (with each row's norm, item, type and place in the store's order),
and brought up to date only when the namespace changed: every ``put`` makes
a new ``Item`` object, so the namespace's items, listed and compared with
the kept ones (one C pass, no Python call per item: ~0.8 ms at 100k items),
say whether anything was added, rewritten or removed; then only new and
rewritten items are read again. A run embeds the query once (the store's own ``embed_query``),
scores every row in one pass (``einsum``: row by row, so equal vectors get
equal scores wherever they sit; a BLAS product may differ in the last bit
with a row's position), and each search takes the best ``limit`` items of
its type.

What stays the store's: its score (cosine similarity; an item's best over
its vectors, one per embedded field), its order (score, then the store's
own order: items as inserted, an item's vectors by path; an item rewritten
in place keeps its place, one deleted and put again goes last), its filter
(``{"type": t}`` is equality, ``{"type": None}`` a missing or null type),
its items without vectors (after the scored ones, when fewer than ``limit``
were scored), its ``SearchItem``s. Scores equal the store's to float
rounding (~1e-15). Two differences, both on purpose: the namespace is
matched exactly, never as a prefix (the store's search let a child
namespace's nearer items take the limit, and the middleware then dropped
them: fewer than ``fetch_k`` of the user's own); and a query whose
embedding is all zeros (no cosine exists) is left to the store's own search.

Cost: the matrix holds 8 bytes a dimension a vector (200 MB for 100k
vectors of 256 dimensions; the store itself holds each vector as a list of
Python floats, about four times that); a run costs one pass over it
(~16 ms at 100k x 256) and a partial sort per search. One search serves a
store in a process (`InMemoryStoreSearch.shared`: every memory over
it, each user's chain, reads the same matrices), and keeps at most
`InMemoryStoreSearch.MOST_NAMESPACES` namespaces (the least recently
searched is dropped, and read again when searched). An update that fails
halfway forgets the namespace, which is then read again whole.

`InMemoryStoreSearch` is a searcher of the recall protocol
(`RecallSearcher`, through `LangGraphSearcher`), as the Postgres one is.
"""

from __future__ import annotations

import asyncio
import operator
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from langgraph.store.base import SearchItem, SearchOp

from ...recall_search import Search
from ..internals import moved
from .ranked_search import LangGraphSearcher, QueryVectors, RankedSearch

__all__ = ["InMemoryStoreSearch", "serves_in_memory_store"]

#: The row type code of an item without a type (missing or None).
_UNTYPED = 0
#: The row type code of an item whose type is not a string (no type filter of ours matches it).
_OTHER = -1


def serves_in_memory_store(store: Any) -> bool:
    """Whether `InMemoryStoreSearch` serves ``store``: LangGraph's
    ``InMemoryStore`` with a vector index and embeddings, holding its items
    and vectors where this version of LangGraph keeps them. A subclass that
    answers ``batch`` or ``abatch`` its own way (an instrumented store, one
    that searches differently) keeps its own search: its answers are its own."""
    from langgraph.store.memory import InMemoryStore

    kind = type(store)
    served = (
        isinstance(store, InMemoryStore)
        and kind.batch is InMemoryStore.batch
        and kind.abatch is InMemoryStore.abatch
        and bool(getattr(store, "index_config", None))
        and getattr(store, "embeddings", None) is not None
    )
    if not served:
        return False
    for name, expected in (
        ("_data", "a dict of namespace -> {key: Item}"),
        ("_vectors", "a dict of namespace -> {key: {path: vector}}"),
    ):
        if not isinstance(getattr(store, name, None), dict):
            moved(
                "langgraph-checkpoint",
                "InMemoryStore.%s" % name,
                expected,
                "poolsplit_adapters/stores/langgraph/memory_store_search.py",
                "the ranked type searches run the store's own search",
            )
            return False
    return True


@dataclass
class _Kept:
    """One namespace's vectors as rows, and what they were read from."""

    dims: int
    items: Dict[str, Any] = field(default_factory=dict)  # key -> the Item object its rows were read from
    keys: List[str] = field(default_factory=list)  # the namespace's keys, in the store's order, when last read
    values: List[Any] = field(default_factory=list)  # its Item objects, the same order
    order: Dict[str, int] = field(default_factory=dict)  # key -> its place in the store's order
    rows: Dict[str, np.ndarray] = field(default_factory=dict)  # key -> its rows (none: no vectors)
    next_order: int = 0
    used: int = 0  # rows in use, alive or not
    most_vectors: int = 1  # the most vectors one item has
    matrix: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))
    norms: np.ndarray = field(default_factory=lambda: np.empty(0))
    alive: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    row_order: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    row_path: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    row_type: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    row_key: List[Optional[str]] = field(default_factory=list)
    #: Items without a vector, key -> type code (found only when fewer than ``limit`` were scored).
    unscored: Dict[str, int] = field(default_factory=dict)


class _KeptRows:
    """Keeping one namespace's rows in step with the store's dicts: new
    and rewritten items appended (their vectors, type codes and owners),
    retired ones marked, the arrays grown, compacted and renumbered: the
    half of [`InMemoryStoreSearch`][] that maintains what its searches
    read."""

    _types: Dict[str, int]

    def _type_code(self, value: Any) -> int:
        kind = value.get("type") if isinstance(value, dict) else None
        if kind is None:
            return _UNTYPED
        if not isinstance(kind, str):
            return _OTHER
        code = self._types.get(kind)
        if code is None:
            code = self._types[kind] = len(self._types) + 1
        return code

    def _update(self, kept: _Kept, data: Dict[str, Any], vectors: Dict[str, Any]) -> None:
        """Bring ``kept`` to the namespace's items: rows of removed and
        rewritten items retired, rows of new and rewritten ones appended,
        each item's place in the store's order kept or moved last."""
        # One snapshot (a dict copy is one C call: another thread's write
        # cannot change it under us). Not list(data.items()): 100k new tuples
        # set off the garbage collector over the store's millions of objects.
        snapshot = data.copy()
        keys, values = list(snapshot), list(snapshot.values())
        known = len(kept.keys)
        current: Dict[str, Any]
        if len(keys) >= known and keys[:known] == kept.keys:
            # Nothing removed or moved (the usual write: items put, new or
            # in place): the rewritten ones are found by identity, in C.
            same = np.fromiter(map(operator.is_, values[:known], kept.values), dtype=bool, count=known)
            at = np.flatnonzero(~same).tolist() + list(range(known, len(keys)))
            changed = [keys[i] for i in at]
            current = {keys[i]: values[i] for i in at}
            for key in keys[known:]:
                kept.order[key] = kept.next_order
                kept.next_order += 1
            ordered = True
        else:
            current = snapshot
            changed, ordered = self._reordered(kept, current)
        kept.keys, kept.values = keys, values
        new_rows: List[Any] = []
        owners: List[Tuple[str, int, int]] = []  # (key, path position, type code) per new row
        for key in changed:
            self._retire(kept, key)
            item = current[key]
            kept.items[key] = item
            code = self._type_code(item.value)
            found = list((vectors.get(key) or {}).values())
            if not found:
                kept.unscored[key] = code
                continue
            kept.most_vectors = max(kept.most_vectors, len(found))
            for position, vector in enumerate(found):
                new_rows.append(vector)
                owners.append((key, position, code))
        if new_rows:
            self._append(kept, new_rows, owners)
        if not ordered:
            self._renumber(kept, current)
        if kept.used - int(kept.alive[: kept.used].sum()) > max(1024, kept.used // 2):
            self._compact(kept)

    def _reordered(self, kept: _Kept, data: Dict[str, Any]) -> Tuple[List[str], bool]:
        """`_update`'s pass when items were removed or moved: the
        changed keys, each new or moved item's place last, removed items'
        rows retired; and whether the kept places still follow the store's
        order (else they are renumbered)."""
        changed: List[str] = []
        last, ordered = -1, True
        for key, item in data.items():
            before = kept.order.get(key)
            if kept.items.get(key) is item:
                if before is not None and before < last:
                    ordered = False  # cannot happen through the store's API; renumbered below
                last = max(last, before if before is not None else last)
                continue
            changed.append(key)
            if before is None or before < last:  # new, or deleted and put again: last in the store's order
                kept.order[key] = kept.next_order
                kept.next_order += 1
            last = kept.order[key]
        for key in kept.items.keys() - data.keys():
            self._retire(kept, key)
            del kept.items[key], kept.order[key]
        return changed, ordered

    @staticmethod
    def _retire(kept: _Kept, key: str) -> None:
        rows = kept.rows.pop(key, None)
        if rows is not None:
            kept.alive[rows] = False
        kept.unscored.pop(key, None)

    def _append(self, kept: _Kept, new_rows: List[Any], owners: List[Tuple[str, int, int]]) -> None:
        try:
            block = np.asarray(new_rows, dtype=np.float64)
        except (TypeError, ValueError):
            raise _Unserved("vectors of differing lengths, or not numbers") from None
        if block.ndim != 2 or (kept.dims and block.shape[1] != kept.dims):
            raise _Unserved("vectors of differing lengths")
        kept.dims = block.shape[1]
        start, end = kept.used, kept.used + len(block)
        if end > len(kept.alive):
            self._grow(kept, max(end, 2 * len(kept.alive), 1024))
        kept.matrix[start:end] = block
        kept.norms[start:end] = np.linalg.norm(block, axis=1)
        kept.alive[start:end] = True
        keys = [key for key, _, _ in owners]
        kept.row_order[start:end] = [kept.order[key] for key in keys]
        kept.row_path[start:end] = [position for _, position, _ in owners]
        kept.row_type[start:end] = [code for _, _, code in owners]
        kept.row_key[start:end] = keys
        spans: Dict[str, List[int]] = {}  # key -> [first row, rows]: an item's vectors are appended together
        for offset, key in enumerate(keys):
            span = spans.setdefault(key, [start + offset, 0])
            span[1] += 1
        for key, (at, count) in spans.items():
            kept.rows[key] = np.arange(at, at + count)
        kept.used = end

    @staticmethod
    def _grow(kept: _Kept, size: int) -> None:
        def grown(array: np.ndarray, shape: Tuple[int, ...]) -> np.ndarray:
            bigger = np.zeros(shape, dtype=array.dtype)
            bigger[: kept.used] = array[: kept.used]
            return bigger

        kept.matrix = grown(kept.matrix if kept.matrix.size else np.empty((0, kept.dims)), (size, kept.dims))
        kept.norms = grown(kept.norms, (size,))
        kept.alive = grown(kept.alive, (size,))
        kept.row_order = grown(kept.row_order, (size,))
        kept.row_path = grown(kept.row_path, (size,))
        kept.row_type = grown(kept.row_type, (size,))
        kept.row_key = kept.row_key[: kept.used] + [None] * (size - kept.used)

    @staticmethod
    def _compact(kept: _Kept) -> None:
        """Drop the retired rows (when they are most of the matrix)."""
        live = np.flatnonzero(kept.alive[: kept.used])
        for name in ("matrix", "norms", "alive", "row_order", "row_path", "row_type"):
            setattr(kept, name, getattr(kept, name)[live].copy())
        kept.row_key = [kept.row_key[i] for i in live]
        kept.used = len(live)
        where: Dict[str, List[int]] = {}
        for row, key in enumerate(kept.row_key):
            assert key is not None
            where.setdefault(key, []).append(row)
        kept.rows = {key: np.asarray(rows) for key, rows in where.items()}

    @staticmethod
    def _renumber(kept: _Kept, data: Dict[str, Any]) -> None:
        """Every item's place again from the store's order (a safety net)."""
        kept.order = {key: n for n, key in enumerate(data)}
        kept.next_order = len(kept.order)
        for row in range(kept.used):
            key = kept.row_key[row]
            if key is not None and kept.alive[row]:
                kept.row_order[row] = kept.order[key]

    # -- searching ----------------------------------------------------------------------


class InMemoryStoreSearch(_KeptRows, LangGraphSearcher):
    """Ranked type searches over one ``InMemoryStore(index=)`` (see the
    module docstring), as the store's ``SearchItem`` lists.

    Example:
        ```python
        search = InMemoryStoreSearch(store)
        [facts, tasks] = search.run([RankedSearch(ns, 20, type="fact"), RankedSearch(ns, 20, type="task")], "deploy")
        ```
    """

    #: Any ``limit`` is served (the Postgres search's is capped by its index).
    most = 2**62
    #: The most namespaces whose matrices one search keeps (the least
    #: recently searched is dropped past it, and read again when searched).
    MOST_NAMESPACES = 64

    def __init__(self, store: Any) -> None:
        if not serves_in_memory_store(store):
            raise ValueError("InMemoryStoreSearch takes an InMemoryStore with a vector index")
        self.store = store
        self.vectors = QueryVectors()
        self._kept: OrderedDict[Tuple[str, ...], _Kept] = OrderedDict()
        self._types: Dict[str, int] = {}  # type -> its row code (>= 1)
        self._lock = threading.Lock()
        #: How each search of the last run was answered: "matrix", or "store" (the store's own search).
        self.last_paths: List[str] = []

    @classmethod
    def shared(cls, store: Any) -> InMemoryStoreSearch:
        """The one search of ``store`` in this process, made on first use:
        every memory over the store (each user's chain, which may share a
        namespace such as ``("memories", "shared")``) reads the same kept
        matrices, instead of one copy (and one first build) each. Kept while
        a memory holds it."""
        with _SHARED_LOCK:
            found = _SHARED.get(id(store))
            if found is None or found.store is not store:
                found = _SHARED[id(store)] = cls(store)
            return found

    # -- keeping the rows ---------------------------------------------------------------

    def _fresh(self, namespace: Tuple[str, ...]) -> Optional[_Kept]:
        """The namespace's rows, read again where it changed; None when it holds nothing."""
        data = self.store._data.get(namespace)
        if not data:
            self._kept.pop(namespace, None)
            return None
        kept = self._kept.get(namespace)
        if kept is not None:
            self._kept.move_to_end(namespace)
            # The items as kept: nothing added, rewritten or removed (each
            # put makes a new Item; the list compare meets the kept objects
            # themselves first, so an unchanged namespace costs one C pass).
            if list(data.values()) == kept.values:
                return kept
        vectors = self.store._vectors.get(namespace) or {}
        if kept is None:
            first = next((v for k in list(data) for v in (vectors.get(k) or {}).values()), None)
            kept = self._kept[namespace] = _Kept(dims=len(first) if first is not None else 0)
            while len(self._kept) > self.MOST_NAMESPACES:
                self._kept.popitem(last=False)
        try:
            self._update(kept, data, vectors)
        except BaseException:
            # Half applied, the rows would no longer match what they were
            # read from: forget them, the next search reads the namespace again.
            self._kept.pop(namespace, None)
            raise
        return kept

    def _search(self, kept: _Kept, scores: np.ndarray, search: RankedSearch) -> List[SearchItem]:
        used = kept.used
        if search.untyped:
            mask = kept.alive[:used] & (kept.row_type[:used] == _UNTYPED)
            wanted: Optional[int] = _UNTYPED
        elif search.type is not None:
            wanted = self._types.get(search.type, -2)
            mask = kept.alive[:used] & (kept.row_type[:used] == wanted)
        else:
            wanted = None
            mask = kept.alive[:used]
        candidates = np.flatnonzero(mask)
        found: List[SearchItem] = []
        if len(candidates):
            sims = scores[candidates]
            rows = search.limit * kept.most_vectors
            if len(candidates) > rows:  # the best rows, every row tied with the last of them included
                threshold = np.partition(sims, len(sims) - rows)[len(sims) - rows]
                keep = sims >= threshold
                candidates, sims = candidates[keep], sims[keep]
            ranked = np.lexsort((kept.row_path[candidates], kept.row_order[candidates], -sims))
            orders = kept.row_order[candidates][ranked]
            _, first = np.unique(orders, return_index=True)  # each item's best row (max over its vectors)
            first.sort()
            for at in first[: search.limit]:
                row = candidates[ranked[at]]
                found.append(self._item(kept, search.namespace, kept.row_key[row], float(sims[ranked[at]])))
        if len(found) < search.limit and kept.unscored:
            loose = [k for k, code in kept.unscored.items() if wanted is None or code == wanted]
            loose.sort(key=kept.order.__getitem__)
            found += [self._item(kept, search.namespace, k, None) for k in loose[: search.limit - len(found)]]
        return found

    @staticmethod
    def _item(kept: _Kept, namespace: Tuple[str, ...], key: Optional[str], score: Optional[float]) -> SearchItem:
        assert key is not None
        item = kept.items[key]
        return SearchItem(
            namespace=namespace,
            key=key,
            value=item.value,
            created_at=item.created_at,
            updated_at=item.updated_at,
            score=score,
        )

    def _answer(
        self, searches: Sequence[RankedSearch], vectors: Dict[str, List[float]], query: Optional[str]
    ) -> List[Optional[List[SearchItem]]]:
        """Each search's items, or None where the store's own search must answer it."""
        # (namespace, query text) -> its rows and their scores, None (the
        # store's own search), or () (an empty namespace): once per pair.
        scored: Dict[Tuple[Tuple[str, ...], str], Any] = {}
        out: List[Optional[List[SearchItem]]] = []
        with self._lock:
            for search in searches:
                text = search.query if search.query is not None else query
                assert text is not None
                key = (tuple(search.namespace), text)
                if key not in scored:
                    scored[key] = self._scored(key[0], vectors[text])
                found = scored[key]
                if not found:  # None: the store's own search; (): nothing there
                    out.append(None if found is None else [])
                else:
                    kept, scores = found
                    out.append(self._search(kept, scores, search))
        return out

    def _scored(self, namespace: Tuple[str, ...], vector: List[float]) -> Any:
        """The namespace's rows and each row's cosine with ``vector``; ()
        for an empty namespace; None where the store's own search answers
        (vectors no matrix holds, a zero query, a query of another length)."""
        try:
            kept = self._fresh(namespace)
        except _Unserved:
            self._kept.pop(namespace, None)
            return None
        if kept is None:
            return ()
        q = np.asarray(vector, dtype=np.float64)
        norm = float(np.linalg.norm(q))
        if norm == 0.0 or (kept.dims and q.shape != (kept.dims,)):
            return None
        used = kept.used
        dots = np.einsum("ij,j->i", kept.matrix[:used], q) if used else np.zeros(0)
        norms = kept.norms[:used]
        scores = np.zeros(used)
        nonzero = norms != 0
        scores[nonzero] = dots[nonzero] / (norms[nonzero] * norm)
        return kept, scores

    def _own_ops(self, searches: Sequence[RankedSearch], query: Optional[str]) -> List[SearchOp]:
        ops = []
        for search in searches:
            where = {"type": None} if search.untyped else ({"type": search.type} if search.type is not None else None)
            ops.append(SearchOp(tuple(search.namespace), filter=where, limit=search.limit, query=search.query or query))
        return ops

    def _finish(
        self, searches: Sequence[RankedSearch], answered: List[Optional[List[SearchItem]]], own: List[Any]
    ) -> List[List[SearchItem]]:
        rest = iter(own)
        self.last_paths = ["store" if found is None else "matrix" for found in answered]
        return [list(next(rest)) if found is None else found for found in answered]

    def run(self, searches: Sequence[Search], query: Optional[str] = None) -> List[List[SearchItem]]:
        """Each search's items, nearest first, with the store's score: for
        its own ``query``, else ``query`` (each distinct text embedded once,
        by the store's embeddings)."""
        if not searches:
            return []
        ranked = self._ranked(searches)
        texts = self._texts(ranked, query)
        distinct = list(dict.fromkeys(texts))
        vectors = {t: self.store.embeddings.embed_query(t) for t in distinct}
        self.vectors.keep(vectors)
        answered = self._answer(ranked, vectors, query)
        left = [s for s, found in zip(ranked, answered) if found is None]
        own = self.store.batch(self._own_ops(left, query)) if left else []
        return self._finish(ranked, answered, own)

    async def arun(self, searches: Sequence[Search], query: Optional[str] = None) -> List[List[SearchItem]]:
        """Async `run` (the query embedded with ``aembed_query``, as the store's ``abatch`` does)."""
        if not searches:
            return []
        ranked = self._ranked(searches)
        texts = self._texts(ranked, query)
        distinct = list(dict.fromkeys(texts))
        found = await asyncio.gather(*(self.store.embeddings.aembed_query(t) for t in distinct))
        self.vectors.keep(dict(zip(distinct, found)))
        answered = self._answer(ranked, dict(zip(distinct, found)), query)
        left = [s for s, got in zip(ranked, answered) if got is None]
        own = await self.store.abatch(self._own_ops(left, query)) if left else []
        return self._finish(ranked, answered, own)


#: The one search per store (`InMemoryStoreSearch.shared`), by the store's id.
_SHARED: weakref.WeakValueDictionary[int, InMemoryStoreSearch] = weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()


class _Unserved(Exception):
    """The namespace's vectors are not a matrix (differing lengths): the store's own search answers."""
