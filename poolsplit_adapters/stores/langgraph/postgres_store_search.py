"""Ranked type searches over LangGraph's ``PostgresStore(index=)``, as our own statements.

Over a vector-indexed ``PostgresStore`` the agent middleware recalls each
pool's types by similarity, ``fetch_k`` items a type. Through the store's
own ``search`` that cost grew with the namespace: its statement joins
``store`` and ``store_vectors`` under a namespace-prefix condition and a
JSON filter the planner cannot estimate (it guesses 0.5% of the rows), so
it sorts every matching row by distance instead of walking the HNSW index:
about 120 ms a type at 100k memories, 716 of a turn's 729 ms.

So each ranked search here is one statement on the store's own tables and
connection, every value a bound parameter (the namespace label, the type,
the query vector, ``k``); only fixed names and the operator of the index's
``distance_type`` are SQL text. In one transaction:

* **The HNSW settings** of PGVector's searches
  (`hnsw_search_settings_psycopg`:
  ``ef_search`` at least ``k``, pgvector's iterative scan on), sorts
  discouraged (``enable_sort`` off, for this transaction only), so an
  ordered ``LIMIT`` is answered by the index, and a walk budget
  (`walk_budget`, as ``hnsw.max_scan_tuples``; a smaller one set for
  the session stays).
* **A few matching items are read, not searched for.** Each statement
  first counts the type's items in the namespace, never past
  `filter_first_bound`; when they
  are that few, it reads them and orders them exactly, else it walks the
  HNSW index. The rule is PGVector's (the same bound, the same memory of
  large filters, `LargeFilters`).
  With the filter index
  (`install_filter_index` on the
  store: ``(prefix, value->>'type')``) the count and the read cost the
  type's own items; without it they read the namespace through its prefix,
  and the bound is sized by the table.
* **A short page is checked, not believed.** A walk that returns fewer
  than ``k`` distinct items (the type ran out, or the walk its budget) is
  completed by the exact read (every item of the type in the namespace,
  ordered by its nearest vector), so "the store ran out" is what the table
  says.

What this cannot make cheap: a type whose every item lies behind many
nearer items of other types (a query about deploys when only the episodes
mention deploys) walks its budget and ends in the exact read of its items,
which is what the store's own search always cost.

What stays LangGraph's: its tables, its distance (``distance_type``) and
score (``1 - distance`` for cosine, as its own search gives), its items.
The namespace is matched exactly (``prefix = label``), never as a prefix: a
child namespace's items are not this user's memory. Each distinct query
text is embedded once a run, by the store's own embeddings
(``embed_documents``, as its search does): one embedding per recall.

Served: a ``PostgresStore`` or an ``AsyncPostgresStore`` (the same
statements through its async cursor, the query embedded with
``aembed_documents``; a sync call from another thread waits on the store's
loop, as the store's own ``batch`` does) with an ``hnsw`` or ``flat`` index
of ``vector`` or ``halfvec`` and no TTL (expiry and refresh-on-read stay the
store's), and a ``limit`` the HNSW scan can give (`MOST_RANKED`).
Anything else is searched by the store itself, as before.

`PostgresStoreSearch` is a searcher of the recall protocol
(`RecallSearcher`, the members both LangGraph searchers share in
`LangGraphSearcher`): `BaseStoreMemory` holds it, or `InMemoryStoreSearch`,
through that protocol alone.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Dict, Generator, List, Optional, Set, Tuple, cast

from langgraph.store.base import SearchItem

from ...recall import Search
from ...threads import off_loop
from ..postgres import (
    HNSW_EF_SEARCH,
    HNSW_VISIT_COST,
    LargeFilters,
    alocked_cursor,
    filter_first_bound,
    filter_index_name,
    hnsw_search_settings_psycopg,
    locked_cursor,
    plain_async_postgres_store,
    plain_postgres_store,
    pool_search_bound,
    wait_on_store_loop,
)
from ..type_indexes import CODE_COLUMN, CODES_SECONDS, NULL_CODES, TYPE_CODES, type_codes_sql
from .namespaces import namespace_label
from .ranked_search import LangGraphSearcher, QueryVectors, RankedSearch

__all__ = [
    "MOST_RANKED",
    "EVERY_ITEM",
    "PostgresStoreSearch",
    "STORE_FILTER_INDEX",
    "WALK_MARGIN",
    "serves_postgres_store",
    "walk_budget",
]

#: The filter index `install_filter_index`
#: puts on LangGraph's ``store`` table.
STORE_FILTER_INDEX = filter_index_name("store")
#: The largest ``limit`` served here: an HNSW scan gives at most
#: ``hnsw.ef_search`` rows a round, and pgvector caps that at 1000.
MOST_RANKED = HNSW_EF_SEARCH[1]
#: A ``limit`` that ranks every item: the largest a LangGraph store binds
#: (it multiplies a vector search's limit before binding it as a BIGINT).
EVERY_ITEM = 2**31 - 1

#: ``distance_type`` -> (pgvector's operator, the score LangGraph gives of distance ``d``).
_DISTANCES: Dict[str, Tuple[str, Callable[[float], float]]] = {
    "cosine": ("<=>", lambda d: 1.0 - d),
    "l2": ("<->", lambda d: -d),
    "inner_product": ("<#>", lambda d: -d),
}
_VECTOR_TYPES = ("vector", "halfvec")
#: A run's statements, each sent its rows; returns each search's items.
_Steps = Generator[Tuple[str, Dict[str, Any]], List[Dict[str, Any]], List[List[SearchItem]]]


#: Two more columns of the settings' one statement: sorts discouraged for
#: this transaction (an ordered ``LIMIT`` is then the HNSW index's to
#: answer), and the table's size (the planner's count).
_TABLE_ROWS = (
    ", set_config('enable_sort', 'off', true),"
    " (SELECT reltuples FROM pg_class WHERE oid = to_regclass('store')) AS table_rows,"
    " to_regclass('%s') IS NOT NULL AS type_codes" % TYPE_CODES
)
#: The most rows an HNSW walk of this transaction visits (pgvector's
#: ``hnsw.max_scan_tuples``, default 20,000), set to `walk_budget`.
#: A smaller budget someone chose for the session stays.
_WALK_BUDGET = (
    "SELECT set_config('hnsw.max_scan_tuples', LEAST(%(budget)s::int,"
    " coalesce(nullif(current_setting('hnsw.max_scan_tuples', true), '')::int, %(budget)s::int))::text, true)"
)
#: With type indexes (`type_indexes`) in
#: use, ``hnsw.ef_search`` is raised to at least this (a larger one set for
#: the session stays; pgvector's cap, 1000, holds).
_TYPE_EF = ", set_config('hnsw.ef_search', GREATEST(%(ef)s::int, current_setting('hnsw.ef_search')::int)::text, true)"


def type_index_ef(k: int) -> int:
    """The ``hnsw.ef_search`` of a run that walks type indexes: five times
    the largest ``k``, at least 100, at most pgvector's 1000.

    Why: a type's own index holds only that type's items, and a memory
    store's items of one type are often near-duplicates (every episode of
    the same deploy). Over such clusters the walk with ``ef_search`` at
    ``k`` (or pgvector's 40) found 82% of the exact nearest 20 at 100k
    memories (benchmarks/middleware_turn.py's corpus); at 100 it found all
    of them, for ~1.7 ms more a type. The store's own index, where a
    near type's items are dense among others, found all at 40.

    Example:
        >>> type_index_ef(20)
        100
    """
    return min(HNSW_EF_SEARCH[1], max(100, 5 * int(k)))


#: How many times the expected walk (items spread evenly over the index)
#: a walk may visit before it gives up and the exact read completes it.
WALK_MARGIN = 4


def walk_budget(k: int, rows: float) -> int:
    """The most rows a search's HNSW walk visits before it stops and its
    short page is completed by the exact read.

    Why: a walk visits rows until ``k`` of them match. When a type's items
    lie far from the query (types that follow the words: a query about
    deploys is near the episodes only), it walked its 20,000 rows, came back
    short, and the exact read ran anyway: 500 ms of one search at 100k
    items. With the filter-first count, a walk runs only for a type of more
    than ``filter_first_bound(k, rows)`` items, whose evenly spread walk
    visits ``k x rows / items``, less than that bound over
    `HNSW_VISIT_COST`; allowed
    `WALK_MARGIN` times that (at least two rounds of ``ef_search``),
    a walk costs at most a few times the search it would be, and the exact
    read takes what lies beyond.

    Example:
        >>> walk_budget(20, 100_000)
        1788
    """
    least = 2 * max(HNSW_EF_SEARCH[0], int(k))
    bound = filter_first_bound(k, rows)
    assert bound is not None
    return max(least, WALK_MARGIN * bound // HNSW_VISIT_COST)


def _index_config(store: Any) -> Optional[Mapping[str, Any]]:
    config = getattr(store, "index_config", None)
    return config if isinstance(config, Mapping) and config else None


def serves_postgres_store(store: Any) -> bool:
    """Whether `PostgresStoreSearch` serves ``store``: LangGraph's
    ``PostgresStore`` or ``AsyncPostgresStore`` (looked up in
    ``sys.modules``: never imports them) with a vector index we can walk and
    no TTL (see the module docstring)."""
    config = _index_config(store)
    if config is None or not (plain_postgres_store(store) or plain_async_postgres_store(store)):
        return False
    ann = config.get("ann_index_config") or {}
    kind, vector_type = ann.get("kind", "hnsw"), ann.get("vector_type", "vector")
    return (
        kind in ("hnsw", "flat")
        and vector_type in _VECTOR_TYPES
        and config.get("distance_type", "cosine") in _DISTANCES
        and getattr(store, "embeddings", None) is not None
    )


def _type_condition(search: RankedSearch) -> Tuple[str, Dict[str, Any]]:
    """The type part of a search's condition on ``store s``, in the form the
    filter index answers (``value->>'type'``: a JSON null reads as no type)."""
    if search.untyped:
        return " AND s.value->>'type' IS NULL", {}
    if search.type is not None:
        return " AND s.value->>'type' = %(type)s", {"type": search.type}
    return "", {}


class PostgresStoreSearch(LangGraphSearcher):
    """Ranked searches over one ``PostgresStore(index=)`` (see the module
    docstring), as the store's ``SearchItem`` lists.

    Example:
        ```python
        search = PostgresStoreSearch(store)
        [facts, tasks] = search.run([RankedSearch(ns, 20, type="fact"), RankedSearch(ns, 20, type="task")], "deploy")
        ```
    """

    #: The largest ``limit`` served: up to `MOST_RANKED` (what one
    #: HNSW scan round can give) through the index; past it (every item
    #: ranked, the middleware's ``fetch_k=None``) by one exact read.
    most = EVERY_ITEM

    def __init__(self, store: Any) -> None:
        if not serves_postgres_store(store):
            raise ValueError("PostgresStoreSearch takes a PostgresStore with a vector index and no TTL")
        self.store = store
        self.vectors = QueryVectors()
        #: An ``AsyncPostgresStore``: `arun` is the run, `run` waits for it on the store's loop.
        self.asynchronous = plain_async_postgres_store(store)
        config = _index_config(store) or {}
        ann = config.get("ann_index_config") or {}
        self._operator, self._score = _DISTANCES[config.get("distance_type", "cosine")]
        self._cast = ann.get("vector_type", "vector")
        #: LangGraph's own estimate of vectors per item (one per embedded field).
        self._per_item = max(1, int(config.get("__estimated_num_vectors", 1) or 1))
        self._load = _loader(store)
        self.large_filters = LargeFilters()
        #: The types with their own HNSW index (type -> code, see
        #: `type_indexes`), read at most
        #: every ``CODES_SECONDS`` by the clock.
        self.type_codes: Dict[str, int] = {}
        self._codes_read: Optional[float] = None
        #: The run's namespaces (labels) holding a vector without its code (see `NULL_CODES`).
        self._uncoded: Set[str] = set()
        self.clock: Callable[[], float] = time.monotonic
        #: How each search of the last run was answered: "index" (the HNSW walk),
        #: "type index" (the walk of its type's own HNSW index), "filter" (the
        #: count said few: read and ordered exactly) or "exact" (a short walk
        #: completed by the exact read).
        self.last_paths: List[str] = []

    # -- SQL ----------------------------------------------------------------------------

    def _distance(self) -> str:
        return "sv.embedding %s %%(vector)s::%s" % (self._operator, self._cast)

    def _exact_sql(self, condition: str) -> str:
        """Every item of the search's filter with its nearest vector's
        distance, unordered (no ORDER BY on the operator: no index can
        answer it, so it is exact)."""
        return (
            "SELECT s.key, s.value, s.created_at, s.updated_at, min(%s) AS distance"
            " FROM store s JOIN store_vectors sv ON sv.prefix = s.prefix AND sv.key = s.key"
            " WHERE s.prefix = %%(namespace)s%s GROUP BY s.prefix, s.key" % (self._distance(), condition)
        )

    def _index_sql(self, condition: str, gate: str = "", code: Optional[int] = None) -> str:
        """The search through the HNSW index: vectors by distance, filtered
        by namespace and type, ``rows`` of them; with a type ``code``, through
        that type's own index (its predicate, our integer, is the one part
        of a type in SQL text: the planner matches a partial index only to a
        literal)."""
        own = "" if code is None else "sv.%s = %d AND " % (CODE_COLUMN, int(code))
        return (
            "SELECT s.key, s.value, s.created_at, s.updated_at, %s AS distance"
            " FROM store_vectors sv JOIN store s ON s.prefix = sv.prefix AND s.key = sv.key"
            " WHERE %s%ssv.prefix = %%(namespace)s%s ORDER BY %s LIMIT %%(rows)s"
            % (self._distance(), gate, own, condition, self._distance())
        )

    def _code(self, search: RankedSearch) -> Optional[int]:
        """The code of the search's type when it has its own HNSW index and
        every vector of the search's namespace has its code."""
        if search.type is None or search.untyped:
            return None
        return None if namespace_label(search.namespace) in self._uncoded else self.type_codes.get(search.type)

    def _statement(self, search: RankedSearch, bound: int) -> Tuple[str, Dict[str, Any]]:
        """The search's one statement and its parameters: the filter-first
        count (at most ``bound``) picks the exact read or the HNSW walk."""
        condition, params = _type_condition(search)
        params.update(rows=search.limit * self._per_item * 2 + 1, k=search.limit, bound=bound)
        probe = "SELECT 1 FROM store s WHERE s.prefix = %%(namespace)s%s LIMIT %%(bound)s + 1" % condition
        sql = (
            "WITH few AS (SELECT count(*) <= %%(bound)s AS exact FROM (%s) probe),"
            " matching AS MATERIALIZED (%s)"
            # The gate above the fence: a false one never starts the exact read
            # (inside it, the read's parallel workers were launched anyway: 7 ms).
            " (SELECT *, true AS exact FROM matching WHERE (SELECT exact FROM few) ORDER BY distance, key LIMIT %%(k)s)"
            " UNION ALL (SELECT *, false AS exact FROM (%s) found)"
            # the count's answer, even when the type has no item: a row without a key
            " UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, true WHERE (SELECT exact FROM few)"
            % (
                probe,
                self._exact_sql(condition),
                self._index_sql(condition, "NOT (SELECT exact FROM few) AND ", self._code(search)),
            )
        )
        return sql, params

    # -- running ------------------------------------------------------------------------

    def embed(self, query: str) -> List[float]:
        """The query's one embedding, by the store's own embeddings (its
        search embeds queries with ``embed_documents``)."""
        return self._embedded([query])[query]

    def _embedded(self, texts: Sequence[str]) -> Dict[str, List[float]]:
        """Each distinct text's embedding, in one call."""
        distinct = list(dict.fromkeys(texts))
        return {t: list(v) for t, v in zip(distinct, self.store.embeddings.embed_documents(distinct))}

    async def _aembedded(self, texts: Sequence[str]) -> Dict[str, List[float]]:
        """Async `_embedded` (the async store's search embeds with ``aembed_documents``)."""
        distinct = list(dict.fromkeys(texts))
        return {t: list(v) for t, v in zip(distinct, await self.store.embeddings.aembed_documents(distinct))}

    def run(self, searches: Sequence[Search], query: Optional[str] = None) -> List[List[SearchItem]]:
        """Each search's items, nearest first, with the store's score: for
        its own ``query``, else ``query`` (each distinct text embedded once)."""
        if not searches:
            return []
        if self.asynchronous:
            return cast("List[List[SearchItem]]", wait_on_store_loop(self.store, self.arun(searches, query)))
        ranked = self._ranked(searches)
        texts = self._texts(ranked, query)
        vectors = self._embedded(texts)
        self.vectors.keep(vectors)
        steps = self._steps(ranked, [vectors[t] for t in texts])
        with locked_cursor(self.store) as cur, cur.connection.transaction():
            sql, params = next(steps)
            while True:
                cur.execute(sql, params)
                try:
                    sql, params = steps.send(cur.fetchall())
                except StopIteration as done:
                    return cast("List[List[SearchItem]]", done.value)

    async def arun(self, searches: Sequence[Search], query: Optional[str] = None) -> List[List[SearchItem]]:
        """Async `run`, over an ``AsyncPostgresStore`` (its cursor and
        ``aembed_documents``); the same statements, in the same order."""
        if not searches:
            return []
        if not self.asynchronous:  # a sync store's cursor blocks: in a worker thread, as its own abatch
            return await off_loop(self.run, searches, query)
        ranked = self._ranked(searches)
        texts = self._texts(ranked, query)
        vectors = await self._aembedded(texts)
        self.vectors.keep(vectors)
        steps = self._steps(ranked, [vectors[t] for t in texts])
        async with alocked_cursor(self.store) as cur, cur.connection.transaction():
            sql, params = next(steps)
            while True:
                await cur.execute(sql, params)
                try:
                    sql, params = steps.send(await cur.fetchall())
                except StopIteration as done:
                    return cast("List[List[SearchItem]]", done.value)

    def _steps(self, searches: Sequence[RankedSearch], vectors: Sequence[List[float]]) -> _Steps:
        """The run's statements, one at a time, each answered with its rows
        (sans I/O: the sync and the async run drive the same steps, in one
        transaction); returns each search's items."""
        most = min(max(s.limit for s in searches), MOST_RANKED)  # the walks' (a larger limit reads exactly)
        settings, params = hnsw_search_settings_psycopg(most, STORE_FILTER_INDEX)
        row = next(iter((yield settings.rstrip() + _TABLE_ROWS, params)), {})
        rows = row.get("filter_index_rows")
        if rows is None:  # no filter index: the table's size, and a count through its prefix index
            rows = row.get("table_rows")
        size = max(0.0, float(rows or 0.0))
        if not row.get("type_codes"):  # no type indexes installed (or no longer)
            self.type_codes, self._codes_read = {}, None
        elif self._codes_read is None or self.clock() - self._codes_read >= CODES_SECONDS:
            codes = yield type_codes_sql(), {}
            self.type_codes = {str(r["type"]): int(r["code"]) for r in codes}
            self._codes_read = self.clock()
        self._uncoded = set()
        if self.type_codes:  # a namespace holding a vector written without the triggers: no type index there
            for label in dict.fromkeys(namespace_label(s.namespace) for s in searches):
                missing = yield NULL_CODES, {"namespace": label}
                if missing and missing[0]["missing"]:
                    self._uncoded.add(label)
        if self.type_codes and any(self._code(search) is not None for search in searches):
            yield _WALK_BUDGET + _TYPE_EF, {"budget": walk_budget(most, size), "ef": type_index_ef(most)}
        else:
            yield _WALK_BUDGET, {"budget": walk_budget(most, size)}
        found: List[List[SearchItem]] = []
        paths: List[str] = []
        for search, vector in zip(searches, vectors):
            items, path = yield from self._one(search, vector, size)
            found.append(items)
            paths.append(path)
        self.last_paths = paths
        return found

    def _one(
        self, search: RankedSearch, vector: List[float], size: float
    ) -> Generator[Tuple[str, Dict[str, Any]], List[Dict[str, Any]], Tuple[List[SearchItem], str]]:
        label = namespace_label(search.namespace)
        if search.limit > MOST_RANKED:  # every item ranked: one exact read, no walk could give them
            condition, params = _type_condition(search)
            params.update(namespace=label, vector=vector, k=search.limit)
            every = yield (
                "SELECT * FROM (%s) matching ORDER BY distance, key LIMIT %%(k)s" % self._exact_sql(condition),
                params,
            )
            return self._items(search, every), "exact"
        bound = pool_search_bound(search, size, self.large_filters)
        assert bound is not None  # a ranked search always counts (never the always-scope fetch)
        sql, params = self._statement(search, bound)
        params.update(namespace=label, vector=vector)
        found = yield sql, params
        exact = any(row["key"] is None for row in found)  # the count said "few": read exactly
        rows = [row for row in found if row["key"] is not None]
        self.large_filters.saw(search, bound, found=len(rows), exact=exact)
        items = self._items(search, rows)
        path = "filter" if exact else ("index" if self._code(search) is None else "type index")
        if not exact and len(items) < search.limit:  # a short page: what does the table hold?
            condition, _ = _type_condition(search)
            every = yield (
                "SELECT * FROM (%s) matching ORDER BY distance, key LIMIT %%(k)s" % self._exact_sql(condition),
                params,
            )
            items, path = self._items(search, every), "exact"
        return items, path

    def _items(self, search: RankedSearch, rows: Sequence[Mapping[str, Any]]) -> List[SearchItem]:
        """Rows as the store's items, one per key (its nearest vector), nearest first, ``limit`` of them."""
        best: Dict[str, Mapping[str, Any]] = {}
        for row in rows:
            kept = best.get(row["key"])
            if kept is None or row["distance"] < kept["distance"]:
                best[row["key"]] = row
        ordered = sorted(best.values(), key=lambda r: (r["distance"], r["key"]))
        found = []
        for row in ordered:
            value = row["value"] if isinstance(row["value"], dict) else self._load(row["value"])
            if search.type is not None and value.get("type") != search.type:
                # ``value->>'type'`` reads a foreign item's number 5 as "5"; the store's
                # own filter compares JSON values (checked here: a condition in the
                # statement cost the planner its estimate, and the walk its index).
                continue
            found.append(
                SearchItem(
                    namespace=search.namespace,
                    key=row["key"],
                    value=value,
                    created_at=row["created_at"],
                    updated_at=row["updated_at"],
                    score=self._score(float(row["distance"])),
                )
            )
            if len(found) == search.limit:
                break
        return found


def _loader(store: Any) -> Any:
    """How the store reads a value that did not come back as a dict: its own
    deserializer, else LangGraph's JSON loader (the store's own rule)."""
    custom = getattr(store, "_deserializer", None)
    if custom is not None:
        return custom
    from langgraph.store.postgres.base import _json_loads  # the store's own decoding

    return _json_loads
