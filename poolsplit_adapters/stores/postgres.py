"""Postgres through the frameworks' own stores, with no value in SQL text.

The adapters keep long-term memory in the frameworks' Postgres stores
(LangChain's ``PGVector``, LlamaIndex's ``PGVectorStore``) and add no table
of their own. But LlamaIndex's store writes metadata filter *values* into
its SQL text: a namespace ``x'); DROP TABLE t; --`` ran as SQL through
``get_nodes(filters=...)``. Quoting values ourselves would only be a second
SQL dialect to get right. So every condition the recall plan pushes down to
Postgres is built here, once, as a SQLAlchemy expression on the store's own
metadata column: keys and values (type, scope, namespace) travel as bound
parameters, and the adapters run it through the store's own engine.

The always-scope fetch uses the same condition with no similarity ordering:
through an approximate index (HNSW), a filtered similarity search looks at
the nearest few dozen rows before filtering, so a correction far from the
query would silently never load.

Postgres text cannot hold NUL, nor a lone surrogate (not UTF-8): such a
value is refused up front with an `ArgumentError`
naming the field (an argument) or an [`EntryError`][]
naming the entry and field (a write), instead of a driver traceback from
inside the store; the rule is `checks`', so every store refuses the same.

**One connection setting.** The three stores want the same database in
different forms: ``PGVector`` and LlamaIndex's ``PGVectorStore`` (and
langchain-postgres v2's ``PGEngine``) a SQLAlchemy URL naming the psycopg 3
driver, ``postgresql+psycopg://``; LangGraph's ``PostgresStore`` a libpq
connection string, ``postgresql://`` (psycopg itself). [`PostgresConnection`][]
takes one (either form, or libpq's ``key=value`` form) and gives each store
its own, so a deployment sets one variable.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import math
import re
import sys
import threading
import time
import urllib.parse
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ..errors import ArgumentError
from ..recall_search import Search
from .checks import check_storable, storable_text
from .internals import moved, require

__all__ = [
    "PostgresConnection",
    "check_entry_text",
    "check_search",
    "check_postgres_text",
    "FILTER_INDEX",
    "FilterIndexSetup",
    "FirstUseSetup",
    "StoreSetupWarning",
    "LargeFilters",
    "aensure_filter_index",
    "ensure_filter_index",
    "exact_search_settings",
    "filter_first_bound",
    "filter_first_search",
    "filter_index_name",
    "hnsw_search_settings",
    "hnsw_search_settings_psycopg",
    "install_change_counter",
    "install_filter_index",
    "ainstall_change_counter",
    "ainstall_filter_index",
    "is_async_postgres_store",
    "is_postgres_store",
    "locked_cursor",
    "alocked_cursor",
    "namespace_lock",
    "anamespace_lock",
    "namespace_lock_key",
    "store_session_lock",
    "astore_session_lock",
    "STORE_SETUP_LOCK",
    "plain_async_postgres_store",
    "plain_postgres_store",
    "wait_on_store_loop",
    "llama_index_filter_index",
    "require_llama_index_internals",
    "require_pgvector_session",
    "metadata_condition",
    "pool_search_bound",
]

#: The URL schemes taken as Postgres (libpq's two, and SQLAlchemy's with a driver).
_SCHEMES = ("postgresql", "postgres")
_SQLALCHEMY_DRIVERS = ("psycopg", "psycopg2", "psycopg_async", "asyncpg", "pg8000")


def check_postgres_text(field: str, value: str) -> str:
    """``value`` when Postgres text can hold it, else `ArgumentError`
    naming ``field`` (NUL, or a lone surrogate, which is not UTF-8): the one
    rule every store applies, `storable_text`."""
    return storable_text(value, field)


def check_entry_text(entry: Mapping[str, Any], index: Optional[int] = None) -> None:
    """Raise [`EntryError`][] naming the entry and
    field when a value of ``entry`` holds NUL or a lone surrogate: Postgres
    text and JSONB cannot store it (the driver's own error names neither).
    The storable rule every write path applies
    (`check_storable`)."""
    check_storable(entry, index)


def check_search(search: Search, type_key: str = "type") -> None:
    """Refuse, before any query runs, a value of ``search`` that Postgres
    text cannot hold (see `check_postgres_text`)."""
    check_postgres_text("type_key", type_key)
    for value in search.types or ():
        check_postgres_text("type", value)
    for value in search.namespaces:
        check_postgres_text("namespace", value)


def metadata_condition(metadata: Any, search: Search, type_key: str = "type") -> Any:
    """``search``'s filter as a SQLAlchemy condition on ``metadata`` (a JSON
    or JSONB column of the store's table): every key and value is a bound
    parameter, never SQL text.

    Example:
        ```python
        stmt = select(table).where(metadata_condition(table.cmetadata, Search("always", 1000, always=True)))
        ```
    """
    import sqlalchemy  # the Postgres stores' own dependency, not the core's

    check_search(search, type_key)
    clauses: List[Any] = []
    if search.types is not None:
        clauses.append(metadata[type_key].astext.in_(list(search.types)))
    if search.untyped:
        clauses.append(metadata[type_key].astext.is_(None))
    if search.always:
        clauses.append(metadata["scope"].astext == "always")
    if search.namespaces:
        clauses.append(metadata["namespace"].astext.in_(list(search.namespaces)))
    return sqlalchemy.and_(sqlalchemy.true(), *clauses)


#: pgvector's bounds on ``hnsw.ef_search`` (its default is 40).
HNSW_EF_SEARCH = (40, 1000)

#: For the current transaction only (``set_config(..., true)``), so a pooled
#: connection goes back as it came: ``hnsw.ef_search`` raised to the
#: largest ``k`` (an HNSW scan returns at most ``ef_search`` rows), and
#: ``hnsw.iterative_scan`` from ``off`` to ``relaxed_order`` when the
#: server's pgvector has it (>= 0.8; on an older one the name is refused).
#: A setting someone chose stays: a larger ``ef_search``, and
#: ``strict_order``. The GUCs may not exist yet in a fresh session (pgvector
#: defines them when its library loads), hence the defaults in
#: ``coalesce``. The one value, ``k``, is a bound parameter.
_HNSW_SETTINGS = """
SELECT set_config('hnsw.ef_search', LEAST(:most, GREATEST(:k,
           coalesce(nullif(current_setting('hnsw.ef_search', true), '')::int, :least)))::text, true),
       CASE WHEN coalesce(nullif(current_setting('hnsw.iterative_scan', true), ''), 'off') = 'off'
             AND (SELECT (regexp_match(extversion, '^(\\d+)\\.(\\d+)'))::int[] >= ARRAY[0, 8]
                  FROM pg_extension WHERE extname = 'vector')
            THEN set_config('hnsw.iterative_scan', 'relaxed_order', true) END
"""


#: The one more column `hnsw_search_settings` returns with
#: ``filter_index=True``: how many rows the table of `FILTER_INDEX`
#: holds now, NULL when the index does not exist. The planner's own
#: estimate: the rows per page the last ``ANALYZE`` (or ``VACUUM``, or
#: index build) counted, times the pages the table has now. Not the index's
#: ``reltuples`` alone: an index made on an empty table (on first use, or
#: ``install_filter_index`` run before the data came, as the docs' example
#: did) kept 0 there until autovacuum came by: the bound was then ``k``,
#: so every pool search took its by-index branch, as without the index
#: (and without statistics the planner ran that branch as a read and sort
#: of all the tenant's rows of the pool's types). A table never counted with rows in it
#: (``relpages`` 0) is taken at `ROWS_PER_PAGE` rows a page.
_FILTER_INDEX_ROWS = """,
       (SELECT CASE WHEN t.relpages > 0 AND t.reltuples > 0
                    THEN t.reltuples / t.relpages
                    ELSE :rows_per_page END
               * (pg_relation_size(t.oid) / current_setting('block_size')::int)
          FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid
         WHERE x.indexrelid = to_regclass(:filter_index)) AS filter_index_rows
"""

#: The rows per table page `_FILTER_INDEX_ROWS` assumes for a table
#: whose rows were never counted: a row of a vector store (text, metadata,
#: a vector of a few hundred dimensions) takes about this much of a page
#: (measured: 7.6 rows a page at 384 dimensions and ~700-character texts,
#: ``benchmarks/stores_pg_default.py``'s rows). Only the choice between
#: reading a pool's rows and walking HNSW depends on it, never a result.
ROWS_PER_PAGE = 8


def hnsw_search_settings(k: int, *, filter_index: Union[bool, str] = False) -> Any:
    """The statement that makes the current transaction's filtered HNSW
    searches come back full: ``ef_search`` at least ``k`` and pgvector's
    iterative scan on (see `_HNSW_SETTINGS`). Without them a filtered
    HNSW scan looks at ``ef_search`` (40) nearest rows and then filters, so a
    pool whose types are a tenth of the table got about 4 of its 20; that
    read as "the store has nothing more".

    With ``filter_index``, the same round trip also reads the size of the
    filter index (column ``filter_index_rows``, None when there is no such
    index): what `filter_first_bound` needs. ``True`` means
    `FILTER_INDEX` (``PGVector``'s); a string is the index's
    schema-qualified name (LlamaIndex's, `filter_index_name`), a
    bound parameter like every value here.

    Example:
        ```python
        session.execute(hnsw_search_settings(20))   # then the searches, same transaction
        ```
    """
    return _hnsw_search_settings(int(k), FILTER_INDEX if filter_index is True else filter_index or None)


@functools.lru_cache(maxsize=64)
def _hnsw_search_settings(k: int, filter_index: Optional[str]) -> Any:
    """`hnsw_search_settings`, built once per ``k`` (every call of a
    retriever sends it: building a text construct each time cost more than
    the server spends on it)."""
    import sqlalchemy

    least, most = HNSW_EF_SEARCH
    if filter_index is None:
        return sqlalchemy.text(_HNSW_SETTINGS).bindparams(k=k, least=least, most=most)
    sql = _HNSW_SETTINGS.rstrip() + _FILTER_INDEX_ROWS
    return sqlalchemy.text(sql).bindparams(
        k=k, least=least, most=most, filter_index=filter_index, rows_per_page=ROWS_PER_PAGE
    )


#: A ``:name`` parameter of the settings' SQL (never a ``::type`` cast).
_NAMED_PARAMETER = re.compile(r"(?<![:\w]):([a-z_]+)\b")


def hnsw_search_settings_psycopg(k: int, filter_index: Optional[str] = None) -> Tuple[str, Dict[str, Any]]:
    """`hnsw_search_settings` for a psycopg cursor (LangGraph's
    ``PostgresStore`` talks psycopg, not SQLAlchemy): the same SQL, its
    parameters in psycopg's ``%(name)s`` form, and their values. One text
    for both drivers, so the two settings can never differ.

    Example:
        ```python
        sql, params = hnsw_search_settings_psycopg(20, "poolsplit_pool_filter_store")
        cursor.execute(sql, params)   # inside the transaction of the searches
        ```
    """
    least, most = HNSW_EF_SEARCH
    sql = _HNSW_SETTINGS if filter_index is None else _HNSW_SETTINGS.rstrip() + _FILTER_INDEX_ROWS
    params: Dict[str, Any] = {"k": int(k), "least": least, "most": most}
    if filter_index is not None:
        params["filter_index"] = filter_index
        params["rows_per_page"] = ROWS_PER_PAGE
    return _NAMED_PARAMETER.sub(r"%(\1)s", sql), params


#: The btree index `install_filter_index` puts on ``PGVector``'s
#: filter columns (collection, ``namespace``, ``type``). A fixed name, so a
#: search can tell in the same round trip whether it is there.
FILTER_INDEX = "poolsplit_pool_filter"

#: Postgres keeps the first 63 bytes of an identifier (``NAMEDATALEN - 1``).
_MAX_IDENTIFIER = 63


def filter_index_name(table: Optional[str] = None) -> str:
    """The name of the filter index on ``table``: `FILTER_INDEX` on
    ``PGVector``'s table (``table`` None: one table per schema), and
    `FILTER_INDEX` then ``_`` and the table's name where one schema
    holds several tables of the store (LlamaIndex's ``data_<table_name>``,
    one per ``table_name``), so each table's index is its own. A name longer
    than Postgres keeps ends in a digest of the whole, so two long table
    names never share an index name. The one naming rule of both stores.

    Example:
        >>> filter_index_name()
        'poolsplit_pool_filter'
        >>> filter_index_name("data_memory")
        'poolsplit_pool_filter_data_memory'
    """
    if table is None:
        return FILTER_INDEX
    name = "%s_%s" % (FILTER_INDEX, table)
    if len(name.encode("utf-8")) <= _MAX_IDENTIFIER:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:12]
    head = name.encode("utf-8")[: _MAX_IDENTIFIER - len(digest) - 1].decode("utf-8", "ignore")
    return "%s_%s" % (head, digest)


#: How many times one row an HNSW scan visits costs over one matching row
#: read through `FILTER_INDEX` with its distance: ~50 us against
#: ~5 us (measured on 100k rows; ``benchmarks/stores_pg.py`` prints each
#: search's plan). It sets where `filter_first_bound` switches.
HNSW_VISIT_COST = 10


def filter_first_bound(k: int, index_rows: Optional[float]) -> Optional[int]:
    """The most rows a pool's filter may match for its search to read them
    all and order them exactly, rather than walk the HNSW index; None
    without `FILTER_INDEX` (``index_rows`` None: the index is not there).

    Why this bound: to find ``k`` rows matching ``n`` of ``N``, an HNSW
    scan visits about ``k x N / n`` rows, each `HNSW_VISIT_COST`
    times the cost of reading one of the ``n``; the two cost the same at
    ``n = sqrt(HNSW_VISIT_COST x k x N)``. Below it the exact read is both
    cheaper and exact (no similarity cut-off at all); above it the HNSW
    scan is cheaper. At least ``k``: a filter with at most ``k`` rows is
    read whole either way.

    Example:
        >>> filter_first_bound(20, 100_000)
        4472
        >>> filter_first_bound(20, None) is None
        True
    """
    if index_rows is None:
        return None
    return max(int(k), math.isqrt(int(HNSW_VISIT_COST * int(k) * max(float(index_rows), 0.0))))


#: The filter-first bound that skips the count: the probe reads no row
#: (``LIMIT 0``), its count (0) is above this bound, so the search walks the
#: HNSW index at once. What `LargeFilters.bound` gives a filter it
#: remembers as large.
SKIP_COUNT = -1

#: How long (seconds) `LargeFilters` remembers a filter that matched
#: more rows than its bound before counting its rows again.
LARGE_FILTER_SECONDS = 60.0


class LargeFilters:
    """The pool filters a retriever found to match more rows than their
    `filter_first_bound`, remembered for `LARGE_FILTER_SECONDS`,
    so that their searches skip the count and walk the HNSW index at once.

    Why: the count of a filter's matching rows reads each row it counts
    (an expression index gives Postgres no index-only scan), so for a large
    pool (one tenant's facts) it read the bound's 4,472 rows on every call
    only to find what it found the call before: 8 ms of a 21 ms search,
    measured at 100k rows. Skipping it changes no guarantee: a filter with
    more rows than the bound is walked through HNSW either way, a short
    page is still completed by an exact search, and new rows only ever make
    a large filter larger. Only deletions, or rewrites that move rows to
    another type or namespace, can make it small again: within the window
    its search still walks the index, as it does for any filter just above
    the bound, its short page is completed, and it is counted again after
    the window. A new bound (the table grew or ``k`` changed) is a new
    filter here, counted at once. The untyped side search is never
    remembered: its page is not completed (its pool's typed search says
    whether the pool is full), so only the count makes it exact.

    Example:
        >>> large = LargeFilters()
        >>> search = Search("pool:content", 20, types=("fact",), namespaces=("t",), pool="content")
        >>> bound = large.bound(search, 100_000)
        >>> bound
        4472
        >>> large.saw(search, bound, found=20, exact=False)   # the count said "many"
        >>> large.bound(search, 100_000)
        -1
    """

    #: The most filters remembered (the oldest half is forgotten past it).
    MOST = 4096

    def __init__(self, seconds: float = LARGE_FILTER_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.clock = clock
        self._seen: Dict[Tuple[Any, ...], float] = {}

    @staticmethod
    def _key(search: Search, bound: int) -> Tuple[Any, ...]:
        return (search.types, search.untyped, search.namespaces, bound)

    def bound(self, search: Search, index_rows: Optional[float]) -> Optional[int]:
        """`filter_first_bound` for ``search``, or `SKIP_COUNT`
        while its filter is remembered as larger than that bound."""
        bound = filter_first_bound(search.k, index_rows)
        if bound is None or search.untyped:
            return bound
        seen = self._seen.get(self._key(search, bound))
        if seen is not None and self.clock() - seen < self.seconds:
            return SKIP_COUNT
        return bound

    def saw(self, search: Search, bound: Optional[int], *, found: int, exact: bool) -> None:
        """Take what a search counted with ``bound``: rows that came through
        the HNSW branch (``found`` > 0, not ``exact``) mean the count was
        above the bound. A skipped count (`SKIP_COUNT`) says nothing
        new, so the filter is counted again when its window ends."""
        if bound is None or bound == SKIP_COUNT or found == 0 or exact or search.untyped:
            return
        if len(self._seen) >= self.MOST:
            for key in list(self._seen)[: self.MOST // 2]:
                self._seen.pop(key, None)
        self._seen[self._key(search, bound)] = self.clock()


def pool_search_bound(search: Search, index_rows: Optional[float], large: Optional[LargeFilters]) -> Optional[int]:
    """The filter-first bound ``search``'s statement is sent with: None for
    the always-scope fetch (no count) and without the filter index
    (``index_rows`` None), `SKIP_COUNT` while ``large`` remembers its
    filter as larger than the bound, else `filter_first_bound`. The
    one rule of PGVector's and LlamaIndex's pool searches.

    Example:
        >>> pool_search_bound(Search("pool:skills", 20, types=("skill",)), 100_000, None)
        4472
    """
    if search.always:
        return None
    return filter_first_bound(search.k, index_rows) if large is None else large.bound(search, index_rows)


def filter_first_search(matching: Any, by_index: Any, bound: Any, k: int, *, exact: str, name: str) -> Any:
    """A pool search with the filter index: one statement that reads the
    keys and distances of the rows ``matching`` matches (its ``id`` and
    ``distance`` columns, through `FILTER_INDEX`), never past ``bound + 1``
    of them, behind a ``MATERIALIZED`` fence (so the planner cannot answer
    an order with the HNSW index), and then runs one of two branches. At
    most ``bound`` rows (all of them were read): those ordered exactly by
    distance (ties by ``id``), the first ``k``, and ``matching`` (the
    search's columns, filtered, neither ordered nor limited) of those rows
    only, found again by ``id`` (the table's key), in that order. More:
    ``by_index`` (the search through the HNSW index, filtered, ordered and
    limited). ``bound`` (an int or a ``bindparam`` the caller fills in) is
    a bound parameter either way. Column ``exact`` (its name) says which
    branch a row came from; ``name`` keeps the statement's CTE names apart
    from another search's in one statement. The one rule of PGVector's and
    LlamaIndex's pool searches.

    Why one read: the count that chose the branch used to be a read of its
    own, and for a filter of few rows it read each row twice (the count
    and then the distances): measured at 100k rows, 2,531 of a tenant's
    episodes counted in as long as they were read and ordered. The rows a
    large filter reads before the count stops it are paid once a minute
    (`LargeFilters` remembers the filter: its searches then send
    `SKIP_COUNT` and read none). Why keys first: a row of a vector store
    is text, metadata and a vector, and the fence keeps what it reads;
    reading every matching row whole copied each text and metadata into the
    fence and sorted them to keep ``k`` (6.9 ms against 1.9 ms for a
    tenant's 1,682 episodes).

    Example:
        ```python
        statement = filter_first_search(matching, by_index, 4472, 20, exact="exact", name="0")
        ```
    """
    import sqlalchemy

    if isinstance(bound, int):
        bound = sqlalchemy.bindparam("bound_%s" % name, bound, type_=sqlalchemy.Integer)
    key, distance = matching.selected_columns.id, matching.selected_columns.distance
    ranked = (
        matching.with_only_columns(key, distance).limit(bound + 1).cte("matching_%s" % name).prefix_with("MATERIALIZED")
    )
    counted = sqlalchemy.select(sqlalchemy.func.count()).select_from(ranked).scalar_subquery()
    few = sqlalchemy.select((counted <= bound).label("exact")).cte("filter_first_%s" % name)
    is_few = sqlalchemy.select(few.c.exact).scalar_subquery()
    first = (
        sqlalchemy.select(ranked.c.id, ranked.c.distance)
        .where(is_few)
        .order_by(ranked.c.distance, ranked.c.id)
        .limit(k)
        .subquery("first_%s" % name)
    )
    by_filter = (
        matching.add_columns(sqlalchemy.true().label(exact))
        .join(first, key == first.c.id)
        .order_by(first.c.distance, first.c.id)
    )
    return sqlalchemy.union_all(by_filter, by_index.where(sqlalchemy.not_(is_few)))


def install_filter_index(store: Any) -> None:
    """Give the store's table a btree index on its filter columns, then
    ``ANALYZE`` it, so a pool search of a rare type reads its few rows
    instead of walking the HNSW index past thousands. Over ``PGVector`` and
    LlamaIndex's ``PGVectorStore`` the retrievers do this themselves on
    their first search (`ensure_filter_index`; ``setup_store=False``
    turns that off): run it yourself where they may not (a role that may
    not create an index; at deploy time, as the table's owner). Once per
    table, on a store made for sync use (it changes the schema: it needs the
    right to create an index on the table); running it again is harmless.
    Where the table has no ``toast_tuple_target`` of its own it also sets
    one (`FilterIndexSetup.whole_rows`: rows written afterwards keep their
    vector in the row).

    - LangChain's ``PGVector``: `FILTER_INDEX` on ``(collection_id,
      cmetadata->>'namespace', cmetadata->>'type')``.
    - LlamaIndex's ``PGVectorStore``: `filter_index_name` of its table
      ``data_<table_name>`` on ``(metadata_->>'namespace', metadata_->>'type',
      metadata_->>'scope')`` (``type`` is the key the index serves: a
      retriever with another ``type_key`` searches as without the index).
      ``scope`` too because the always-scope fetch has no GIN index to use
      there (``metadata_`` is JSON by default, text parsed on every row
      read): through this index it reads just the tenant's corrections,
      measured 35 ms -> 6 ms per call at 2k entries.
    - LangGraph's ``PostgresStore`` (with ``index=``): ``filter_index_name("store")``
      on ``store (prefix, (value->>'type'))``, for the agent middleware's
      ranked type searches
      (`postgres_store_search`).

    Why: a filtered HNSW scan visits rows until ``k`` of them match, so a
    pool of a rare type (one tenant's skills: ~1% of the table) visited
    thousands of rows per search, ~10x one plain filtered search. With the
    index, a pool search counts its matching rows first (at most
    `filter_first_bound` of them, in the same statement) and, when
    they are few, reads just those and orders them by distance: exact, with
    no HNSW cut-off, and cheap. A pool with many matching rows still walks
    the HNSW index (cheap there: matches are dense). Untyped entries
    (no ``type``) are then found exactly too (the index answers "no type").
    Without the index nothing changes: every pool search walks the HNSW index.

    Only fixed names and the store's own declared table (quoted by the
    dialect) reach this SQL; any other store is an
    `ArgumentError`.

    Example:
        ```python
        store = PGVector(embeddings, connection=url, embedding_length=256)
        install_filter_index(store)
        ```
    """
    if hasattr(store, "EmbeddingStore"):
        _pgvector_filter_index_setup(store, every=True)
    elif _is_llama_index_store(store):
        _llama_index_filter_index_setup(store, every=True)
    elif is_postgres_store(store):
        _ddl(store, _STORE_FILTER_INDEX_DDL)
    elif is_async_postgres_store(store):
        raise ArgumentError("install_filter_index: an AsyncPostgresStore takes `await ainstall_filter_index(store)`")
    else:
        raise ArgumentError(
            "install_filter_index takes LangChain's PGVector (made for sync use), LlamaIndex's PGVectorStore"
            " or LangGraph's PostgresStore, got %s" % type(store).__name__
        )


#: The filter index of LangGraph's ``store`` table (fixed names only: ours and LangGraph's table).
_STORE_FILTER_INDEX_DDL = (
    "CREATE INDEX IF NOT EXISTS %s ON store (prefix, (value->>'type'))" % filter_index_name("store"),
    "ANALYZE store",
)


async def ainstall_filter_index(store: Any) -> None:
    """`install_filter_index` of LangGraph's ``AsyncPostgresStore``
    (the same index, through its async cursor): run once, after
    ``await store.setup()``.

    Example:
        ```python
        async with AsyncPostgresStore.from_conn_string(url, index=index) as store:
            await store.setup()
            await ainstall_filter_index(store)
        ```
    """
    await _async_ddl(store, _STORE_FILTER_INDEX_DDL, "ainstall_filter_index")


async def _async_ddl(store: Any, statements: Sequence[str], name: str) -> None:
    if not is_async_postgres_store(store):
        raise ArgumentError(
            "%s takes LangGraph's AsyncPostgresStore, got %s (a sync store: %s)"
            % (name, type(store).__name__, name[1:])
        )
    async with astore_session_lock(store, STORE_SETUP_LOCK), alocked_cursor(store) as cur:
        for statement in statements:
            await cur.execute(statement)


def _ddl(store: Any, statements: Sequence[str]) -> None:
    """``statements`` on LangGraph's ``PostgresStore``, one install at a
    time (`STORE_SETUP_LOCK`)."""
    with store_session_lock(store, STORE_SETUP_LOCK), locked_cursor(store) as cur:
        for statement in statements:
            cur.execute(statement)


def is_postgres_store(store: Any) -> bool:
    """Whether ``store`` is LangGraph's sync ``PostgresStore`` (looked up in
    ``sys.modules``: never imports the package)."""
    module = sys.modules.get("langgraph.store.postgres.base")
    return module is not None and isinstance(store, module.PostgresStore)


def is_async_postgres_store(store: Any) -> bool:
    """Whether ``store`` is LangGraph's ``AsyncPostgresStore`` (looked up in
    ``sys.modules``: never imports the package)."""
    module = sys.modules.get("langgraph.store.postgres.aio")
    return module is not None and isinstance(store, module.AsyncPostgresStore)


def _plain(store: Any) -> bool:
    """Whether our statements can run on the store's own connection: the
    store has no TTL (its own reads keep the TTL's rules: its own path serves
    them), and has the ``_cursor()`` they run through (missing: said once,
    and the store's own path serves them)."""
    if getattr(store, "ttl_config", None):
        return False
    if callable(getattr(store, "_cursor", None)):
        return True
    moved(
        "langgraph-checkpoint-postgres",
        "%s._cursor()" % ("AsyncPostgresStore" if is_async_postgres_store(store) else "PostgresStore"),
        "a context manager yielding a cursor of the store's connection",
        "poolsplit_adapters/stores/postgres.py",
        "the store's own search and list serve the reads",
    )
    return False


@contextlib.contextmanager
def locked_cursor(store: Any) -> Iterator[Any]:
    """A cursor of LangGraph's sync ``PostgresStore`` with the store's lock
    held: every statement of ours on a LangGraph Postgres store runs through
    this (or `alocked_cursor`).

    Why: ``PostgresStore.from_conn_string`` opens one connection, and a
    psycopg connection not in pipeline mode runs one command at a time.
    The store's ``batch`` takes ``store.lock`` for it (``_cursor(pipeline=True)``);
    its plain ``_cursor()`` takes none, so our reads through it, in threads
    beside the store's own batches, failed with "another command is already
    in progress". In pipeline mode (``pipe``) the store takes no lock and
    its batches run side by side; ours still take it, so a transaction of
    ours (`PostgresStoreSearch`'s
    run, `install_type_indexes`)
    never nests with another (psycopg refused them "at the wrong nesting
    level"). No pipeline mode is entered here (a statement such as ``CREATE
    INDEX CONCURRENTLY`` cannot run in one), and the lock is not reentrant:
    nothing inside may reach the store.

    Example:
        ```python
        with locked_cursor(store) as cur:
            cur.execute("SELECT 1")
        ```
    """
    with store.lock, store._cursor() as cur:
        yield cur


@contextlib.asynccontextmanager
async def alocked_cursor(store: Any) -> AsyncIterator[Any]:
    """`locked_cursor` of LangGraph's ``AsyncPostgresStore``: its own
    ``_cursor()`` takes its ``asyncio`` lock on a single connection (a
    pooled one needs none) except in pipeline mode, where this takes it.
    Run on the store's loop (`wait_on_store_loop` from another thread)."""
    lock = store.lock if getattr(store, "pipe", None) is not None else contextlib.nullcontext()
    async with lock, store._cursor() as cur:
        yield cur


#: How long `store_session_lock` waits at most between two tries of a
#: lock another session holds (seconds; it starts at a tenth).
NAMESPACE_LOCK_WAIT = 0.05


def namespace_lock_key(namespace: Sequence[str]) -> int:
    """The advisory lock key of a LangGraph namespace (a tuple of labels): 64
    bits of a hash of its labels, as Postgres' signed ``bigint``, so no
    value reaches SQL text (the key is a bound parameter too).

    Example:
        >>> namespace_lock_key(("memories", "ana")) == namespace_lock_key(("memories", "ana"))
        True
    """
    label = "\x00".join(namespace).encode("utf-8")  # NUL: a label never holds one
    digest = hashlib.blake2b(label, digest_size=8, person=b"poolsplit-ns").digest()
    return int.from_bytes(digest, "big", signed=True)


_TRY_LOCK = "SELECT pg_try_advisory_lock(%s) AS locked"
_UNLOCK = "SELECT pg_advisory_unlock(%s)"


def _lock_pool(store: Any) -> Optional[Any]:
    """``store``'s connection pool (a ``psycopg_pool`` pool), or None for a
    single connection."""
    conn = getattr(store, "conn", None)
    return conn if conn is not None and callable(getattr(conn, "getconn", None)) else None


#: Per store object over a pool: its lock session (a connection of its own,
#: opened with the pool's settings, closed with the store) and the guard
#: its statements take turns on. Not a connection of the pool: held for a
#: write's length beside the write's own, two writers exhausted a pool of
#: two, each waiting for the other's connection until the pool's timeout.
_LOCK_SESSIONS: weakref.WeakKeyDictionary[Any, Tuple[Any, Any]] = weakref.WeakKeyDictionary()
_LOCK_SESSIONS_MADE = threading.Lock()


def _lock_session(store: Any, pool: Any, *, fresh: bool = False) -> Callable[[], Any]:
    """A cursor factory of ``store``'s lock session (made on first use,
    or again when ``fresh`` or the last one broke)."""
    import psycopg

    with _LOCK_SESSIONS_MADE:
        found = _LOCK_SESSIONS.get(store)
        if fresh or found is None or found[1].closed or found[1].broken:
            if found is not None:
                found[1].close()
            conn = psycopg.Connection.connect(pool.conninfo, **dict(pool.kwargs or {}, autocommit=True))
            weakref.finalize(store, conn.close)
            found = _LOCK_SESSIONS[store] = (threading.Lock(), conn)
    guard, conn = found

    @contextlib.contextmanager
    def cursor() -> Iterator[Any]:
        with guard, conn.cursor() as cur:
            yield cur

    return cursor


async def _alock_session(store: Any, pool: Any, *, fresh: bool = False) -> Callable[[], Any]:
    """`_lock_session` of an ``AsyncPostgresStore`` over an async pool
    (on the store's loop)."""
    import psycopg

    found = _LOCK_SESSIONS.get(store)
    if fresh or found is None or found[1].closed or found[1].broken:
        if found is not None:
            await found[1].close()
        conn = await psycopg.AsyncConnection.connect(pool.conninfo, **dict(pool.kwargs or {}, autocommit=True))
        found = _LOCK_SESSIONS[store] = (asyncio.Lock(), conn)
    guard, conn = found

    @contextlib.asynccontextmanager
    async def cursor() -> AsyncIterator[Any]:
        async with guard, conn.cursor() as cur:
            yield cur

    return cursor


@contextlib.contextmanager
def namespace_lock(store: Any, namespace: Sequence[str]) -> Iterator[None]:
    """Hold the advisory lock of ``namespace`` (`namespace_lock_key`)
    while a change of it runs on LangGraph's ``PostgresStore`` ``store``
    (any other store: nothing): a LangGraph store has no transaction, so a
    change reads what it closes and then puts, and two servers superseding
    one fact at once each closed it with their own value. A session lock
    (`store_session_lock`)."""
    with store_session_lock(store, namespace_lock_key(namespace)):
        yield


@contextlib.asynccontextmanager
async def anamespace_lock(store: Any, namespace: Sequence[str]) -> AsyncIterator[None]:
    """`namespace_lock` of LangGraph's ``AsyncPostgresStore``."""
    async with astore_session_lock(store, namespace_lock_key(namespace)):
        yield


#: The session lock key under which our schema changes of LangGraph's
#: store tables run one at a time (`install_change_counter`,
#: `install_filter_index`, `install_type_indexes`): the class of
#: `SETUP_LOCK`, step 2, as one ``bigint``. Six installs at once failed
#: with "duplicate key value violates unique constraint" (``CREATE OR
#: REPLACE FUNCTION``, ``CREATE INDEX IF NOT EXISTS`` race) or deadlocked.
STORE_SETUP_LOCK = (0x706F6F6C << 32) | 2  # "pool", step 2


@contextlib.contextmanager
def store_session_lock(store: Any, key: int) -> Iterator[None]:
    """Hold session advisory lock ``key`` (a bound ``bigint``) on LangGraph's
    ``PostgresStore`` ``store`` (an ``AsyncPostgresStore``: its
    `astore_session_lock`, waited for on its loop; any other store:
    nothing) while the block runs: on the store's one connection (each try through `locked_cursor`,
    so the store's other threads are never held up while it waits: it
    polls ``pg_try_advisory_lock``, holding no snapshot between tries, so
    a ``CREATE INDEX CONCURRENTLY`` of the holder never waits for it), or,
    over a pool, on a lock session of the store's own (`_lock_session`: a
    connection of the pool held beside the write's own exhausted a small
    pool). Released by the server if the session ends."""
    pool = _lock_pool(store)
    if is_async_postgres_store(store) and callable(getattr(store, "_cursor", None)):
        # a sync call on an AsyncPostgresStore (as its own sync methods): the async lock, on its loop
        on_loop = astore_session_lock(store, key)
        wait_on_store_loop(store, on_loop.__aenter__())
        try:
            yield
        except BaseException:
            wait_on_store_loop(store, on_loop.__aexit__(*sys.exc_info()))
            raise
        wait_on_store_loop(store, on_loop.__aexit__(None, None, None))
        return
    if not is_postgres_store(store) or not callable(getattr(store, "_cursor", None)):
        yield
        return
    if pool is None:
        cursor: Callable[[], Any] = lambda: locked_cursor(store)  # noqa: E731
        _take(cursor, key)
        with _released(cursor, key):
            yield
        return
    import psycopg

    session = _lock_session(store, pool)
    try:
        _take(session, key)
    except psycopg.OperationalError:  # the session died (a server restart): once more, on a new one
        session = _lock_session(store, pool, fresh=True)
        _take(session, key)
    with _released(session, key):
        yield


@contextlib.contextmanager
def _released(cursor: Callable[[], Any], key: int) -> Iterator[None]:
    """Release lock ``key`` after the block; after a failed block quietly:
    a session that died (the failure itself, often) released it, and its
    "connection is closed" must not hide why the block failed. After a
    block that succeeded, a session that died is no error either (the
    write committed; its lock went with the session)."""
    import psycopg

    try:
        yield
    except BaseException:
        with contextlib.suppress(Exception), cursor() as cur:
            cur.execute(_UNLOCK, (key,))
        raise
    with contextlib.suppress(psycopg.OperationalError), cursor() as cur:  # a dead session: released
        cur.execute(_UNLOCK, (key,))


def _take(cursor: Callable[[], Any], key: int) -> None:
    wait = NAMESPACE_LOCK_WAIT / 10
    while True:
        with cursor() as cur:
            cur.execute(_TRY_LOCK, (key,))
            row = cur.fetchone()
        if _locked(row):
            return
        time.sleep(wait)
        wait = min(wait * 2, NAMESPACE_LOCK_WAIT)


def _locked(row: Any) -> bool:
    return bool(row["locked"] if isinstance(row, Mapping) else row[0])


@contextlib.asynccontextmanager
async def astore_session_lock(store: Any, key: int) -> AsyncIterator[None]:
    """`store_session_lock` of LangGraph's ``AsyncPostgresStore`` (through
    its async cursor, `alocked_cursor`, on the store's loop)."""
    pool = _lock_pool(store)
    if not is_async_postgres_store(store) or not callable(getattr(store, "_cursor", None)):
        yield
        return
    if pool is None:
        await _atake(lambda: alocked_cursor(store), key)
        async with _areleased(lambda: alocked_cursor(store), key):
            yield
        return
    import psycopg

    session = await _alock_session(store, pool)
    try:
        await _atake(session, key)
    except psycopg.OperationalError:
        session = await _alock_session(store, pool, fresh=True)
        await _atake(session, key)
    async with _areleased(session, key):
        yield


@contextlib.asynccontextmanager
async def _areleased(cursor: Callable[[], Any], key: int) -> AsyncIterator[None]:
    """`_released` on an async cursor."""
    import psycopg

    try:
        yield
    except BaseException:
        with contextlib.suppress(Exception):
            async with cursor() as cur:
                await cur.execute(_UNLOCK, (key,))
        raise
    with contextlib.suppress(psycopg.OperationalError):  # a dead session: released
        async with cursor() as cur:
            await cur.execute(_UNLOCK, (key,))


async def _atake(cursor: Callable[[], Any], key: int) -> None:
    wait = NAMESPACE_LOCK_WAIT / 10
    while True:
        async with cursor() as cur:
            await cur.execute(_TRY_LOCK, (key,))
            row = await cur.fetchone()
        if _locked(row):
            return
        await asyncio.sleep(wait)
        wait = min(wait * 2, NAMESPACE_LOCK_WAIT)


def wait_on_store_loop(store: Any, work: Any) -> Any:
    """The coroutine ``work`` run on the ``AsyncPostgresStore``'s own loop
    and waited for here (what the store's own sync ``batch`` does); refused
    on that loop's thread, where the wait would never end."""
    try:
        running: Optional[asyncio.AbstractEventLoop] = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    require(store, ("_loop",), "langgraph-checkpoint", "the event loop the store's own sync methods run on", __name__)
    if running is store._loop:
        work.close()
        raise asyncio.InvalidStateError(
            "a synchronous read of AsyncPostgresStore on its own event loop would deadlock: "
            "use the async interface (arecall, ainvoke, the agent's async run)"
        )
    return asyncio.run_coroutine_threadsafe(work, store._loop).result()


def plain_postgres_store(store: Any) -> bool:
    """Whether ``store`` is a sync ``PostgresStore`` without a TTL whose
    cursor we can use: what the middleware's watermark and our ranked
    searches read directly (with a TTL, expiry and refresh-on-read stay the
    store's own). The one rule of both (`plain_async_postgres_store`
    is its async twin)."""
    return is_postgres_store(store) and _plain(store)


def plain_async_postgres_store(store: Any) -> bool:
    """`plain_postgres_store` of an ``AsyncPostgresStore``: the same
    tables and statements, through its async cursor."""
    return is_async_postgres_store(store) and _plain(store)


def _is_llama_index_store(store: Any) -> bool:
    """Whether ``store`` is LlamaIndex's ``PGVectorStore`` (looked up in
    ``sys.modules``: never imports the package)."""
    module = sys.modules.get("llama_index.vector_stores.postgres")
    return module is not None and isinstance(store, module.PGVectorStore)


#: The advisory lock (Postgres' two-key form: a fixed class, then the
#: setup step) under which `ensure_filter_index` looks for the index
#: and creates it. Fixed numbers: no value reaches it.
SETUP_LOCK = (0x706F6F6C, 1)  # "pool", step 1: the filter index

#: How long `ensure_filter_index` waits for the table's lock before it
#: gives up (a long write transaction on the table): the search then runs
#: without the index, as before, and says so in a warning.
SETUP_LOCK_TIMEOUT = "5s"


class FilterIndexSetup:
    """The filter index of a ``PGVector`` or a LlamaIndex ``PGVectorStore``,
    created on first use, and the table's rows kept whole.

    `ensure_filter_index` (and `aensure_filter_index`) run the
    statements; this holds the text they send, so the sync and async paths
    cannot differ. In one transaction: an advisory lock (`SETUP_LOCK`),
    so two processes using a fresh database at once take turns and the
    second finds the index the first made; then, in one query (`STATE`),
    whether the index exists, whether its table's rows were never counted,
    and whether the table has a ``toast_tuple_target`` of its own; only what
    is missing then runs: ``ALTER TABLE ... SET (toast_tuple_target = ...)``
    (`whole_rows`) when the table has none, ``CREATE INDEX IF NOT EXISTS``
    and ``ANALYZE`` of the table (the planner's statistics of the new
    index's expressions) when the index is not there, ``ANALYZE`` alone
    when it is but the table's rows were never counted. Fixed names and the
    store's own table only, quoted by the dialect; the names a query looks
    up are bound values.
    """

    LOCK = "SELECT pg_advisory_xact_lock(%d, %d)" % SETUP_LOCK
    TIMEOUT = "SELECT set_config('lock_timeout', '%s', true)" % SETUP_LOCK_TIMEOUT
    #: What is there, in one round trip (``:index`` and ``:table`` bound, as
    #: ``to_regclass`` reads them). ``present``: the filter index exists.
    #: ``uncounted``: its table has rows its statistics never counted
    #: (``reltuples`` 0, or -1: never analyzed, yet pages on disk): an
    #: index made on an empty table, the data loaded since, autovacuum not
    #: yet by (or off). The planner then has no statistics of the index's
    #: expressions and chose, measured at 100k rows, to read a whole tenant
    #: through the filter index for the always-scope fetch (7k pages a call
    #: instead of the GIN index's 35) and for a dense pool instead of
    #: walking HNSW: 43k pages a call against 25k after ``ANALYZE``.
    #: ``split``: the table has no ``toast_tuple_target`` of its own (one
    #: set by anyone, us included, is kept). ``block_size``: the server's
    #: page size (`whole_row_target` sizes the target by it).
    STATE = (
        "SELECT to_regclass(:index) IS NOT NULL AS present,"
        " coalesce((SELECT t.reltuples <= 0 AND pg_relation_size(t.oid) > 0 FROM pg_index x"
        " JOIN pg_class t ON t.oid = x.indrelid WHERE x.indexrelid = to_regclass(:index)), false) AS uncounted,"
        " NOT EXISTS (SELECT 1 FROM pg_class c CROSS JOIN unnest(c.reloptions) AS o(setting)"
        " WHERE c.oid = to_regclass(:table) AND split_part(o.setting, '=', 1) = 'toast_tuple_target') AS split,"
        " current_setting('block_size')::int AS block_size"
    )

    @staticmethod
    def create(table: str) -> List[str]:
        """The DDL for ``PGVector``'s quoted table name ``table``."""
        return [
            "CREATE INDEX IF NOT EXISTS %s ON %s (collection_id, (cmetadata->>'namespace'), (cmetadata->>'type'))"
            % (FILTER_INDEX, table),
            "ANALYZE " + table,
        ]

    @staticmethod
    def create_llama_index(index: str, table: str) -> List[str]:
        """The DDL for LlamaIndex ``PGVectorStore``'s quoted index and table names."""
        return [
            "CREATE INDEX IF NOT EXISTS %s ON %s"
            " ((metadata_->>'namespace'), (metadata_->>'type'), (metadata_->>'scope'))" % (index, table),
            "ANALYZE " + table,
        ]

    @staticmethod
    def whole_rows(table: str, block_size: int) -> str:
        """The statement that keeps each row of quoted table ``table``
        written from now on whole in its page, up to the largest row a page
        of ``block_size`` bytes holds (`whole_row_target`).

        Why: a vector store's row is a text, its metadata and a vector;
        past ~2 kB (384 dimensions and a paragraph of text) Postgres moves
        a value of the row out of line (TOAST), and over ``PGVector`` that
        is the vector (its type is stored ``external``). A pool read through
        the filter index computes each matching row's distance, and each
        then cost a second index lookup and page: measured at 100k rows, a
        tenant's 1,682 episodes ordered exactly in 17 ms with the vectors
        out of line against 1.9 ms with them in the row. The setting changes
        no row already written (those keep their layout until rewritten);
        its lock blocks neither reads nor writes (``SHARE UPDATE
        EXCLUSIVE``). A row larger than a page still goes out of line."""
        return "ALTER TABLE %s SET (toast_tuple_target = %d)" % (table, whole_row_target(block_size))

    @staticmethod
    def to_run(create: List[str], table: str, state: Any, *, every: bool = False) -> List[str]:
        """What is left to run, from `STATE`'s row ``state``: `whole_rows`
        of quoted ``table`` when it has no target of its own; all of
        ``create`` (the index, then ``ANALYZE``) when the index does not
        exist or ``every`` (`install_filter_index`: the index made if
        missing and the table analyzed, whatever is there), the ``ANALYZE``
        alone when it exists uncounted; led by the lock timeout when
        anything runs (not for ``every``: run by hand, it waits)."""
        left = create if every or not state.present else create[1:] if state.uncounted else []
        if state.split:
            left = [FilterIndexSetup.whole_rows(table, int(state.block_size)), *left]
        return [FilterIndexSetup.TIMEOUT, *left] if left and not every else left

    @staticmethod
    def created(run: List[str]) -> bool:
        """Whether ``run`` (from [`to_run`][]) created the index."""
        return any(statement.startswith("CREATE INDEX") for statement in run)


#: What a page holds besides one row (``MAXALIGN`` of the page header and
#: one line pointer): ``block_size`` less this is Postgres' largest
#: ``toast_tuple_target`` (8160 for 8 kB pages).
_PAGE_OVERHEAD = 32


def whole_row_target(block_size: int) -> int:
    """The ``toast_tuple_target`` `FilterIndexSetup.whole_rows` sets:
    the largest a page of ``block_size`` bytes allows, so a row moves a
    value out of line only when it would not fit in a page whole.

    Example:
        >>> whole_row_target(8192)
        8160
    """
    return int(block_size) - _PAGE_OVERHEAD


def _state_query(index: str, table: str) -> Tuple[Any, Dict[str, str]]:
    """`FilterIndexSetup.STATE` for index ``index`` of table ``table``
    (each a name the dialect quoted, as ``to_regclass`` reads it: a bound
    value, `as_bound_value`)."""
    import sqlalchemy

    return sqlalchemy.text(FilterIndexSetup.STATE), {"index": as_bound_value(index), "table": as_bound_value(table)}


def as_bound_value(quoted: str) -> str:
    """A name the dialect quoted for SQL text, as a bound value holds it.

    For SQL text sent with parameters the dialect doubles ``%``; a bound
    value is read as it is, so the doubled name was another name:
    ``to_regclass`` found nothing, and a table named with ``%`` never
    found its own filter index.

    Example:
        >>> as_bound_value('public."poolsplit_pool_filter_data_mem%%"')
        'public."poolsplit_pool_filter_data_mem%"'
    """
    return quoted.replace("%%", "%")


def _pgvector_table(store: Any, connection: Any) -> str:
    """``PGVector``'s embedding table, quoted by the connection's dialect."""
    return str(connection.dialect.identifier_preparer.format_table(store.EmbeddingStore.__table__))


def ensure_filter_index(store: Any) -> bool:
    """Create `FILTER_INDEX` on LangChain ``PGVector`` ``store``'s
    table (made for sync use), or LlamaIndex ``PGVectorStore``'s index
    (`install_filter_index` says which), unless it is there; True when
    this call created it. What `PoolSplitRetriever.from_vectorstore`
    runs on its first search (``setup_store=False``: never), so a pool of a
    rare type is read through the index instead of walking the HNSW index
    past thousands of rows, without anyone running
    `install_filter_index` first.

    Safe under concurrent first use: the check and the creation hold one
    advisory lock (`FilterIndexSetup`), so of two processes starting
    on a fresh database one creates the index and the other waits for it,
    then finds it and creates nothing. Where the index is there but its
    table holds rows its statistics never counted (it was made on the empty
    table, autovacuum has not come by since), it runs ``ANALYZE`` once
    (`FilterIndexSetup.STATE` says why), and where the table has no
    ``toast_tuple_target`` of its own it sets one
    (`FilterIndexSetup.whole_rows`). ``CREATE INDEX`` holds off the
    table's writers while it builds (a second or so a 100k rows); it waits
    at most `SETUP_LOCK_TIMEOUT` for the table, then raises, like any
    refusal (a role that may not create an index): the caller decides.

    Example:
        ```python
        store = PGVector(embeddings, connection=url, embedding_length=384)
        ensure_filter_index(store)   # True the first time, then False
        ```
    """
    if _is_llama_index_store(store):
        return FilterIndexSetup.created(_llama_index_filter_index_setup(store, every=False))
    return FilterIndexSetup.created(_pgvector_filter_index_setup(store, every=False))


async def aensure_filter_index(store: Any) -> bool:
    """`ensure_filter_index` of a ``PGVector`` made with
    ``async_mode=True`` (the same statements, through its async session),
    or of LlamaIndex's ``PGVectorStore`` through its async engine."""
    if _is_llama_index_store(store):
        return await _aensure_llama_index_filter_index(store)
    require_pgvector_session(store, asynchronous=True)
    async with store._make_async_session() as session:
        if not hasattr(store, "EmbeddingStore"):  # an async PGVector sets its tables up on first use
            await store.aget_collection(session)
        connection = await session.connection()
        await connection.exec_driver_sql(FilterIndexSetup.LOCK)
        table = _pgvector_table(store, connection)
        state = (await connection.execute(*_state_query(FILTER_INDEX, table))).one()
        run = FilterIndexSetup.to_run(FilterIndexSetup.create(table), table, state)
        for statement in run:
            await connection.exec_driver_sql(statement)
        await session.commit()
        return FilterIndexSetup.created(run)


class StoreSetupWarning(UserWarning):
    """A store's first-use setup (`FirstUseSetup`) could not run:
    the searches go on without what it would have made (the same results,
    slower), and the message says why and what to run instead."""


def _is_pgvector(store: Any) -> bool:
    """Whether ``store`` is LangChain's ``PGVector`` (looked up in
    ``sys.modules``: never imports langchain-postgres)."""
    module = sys.modules.get("langchain_postgres.vectorstores")
    return module is not None and isinstance(store, module.PGVector)


#: The store objects whose filter index this process created or found:
#: a retriever made later over the same object (the agent middleware makes
#: one per turn) checks nothing. Weak: a store no longer used is forgotten.
_VERIFIED_STORES: weakref.WeakSet[Any] = weakref.WeakSet()


def _verified(store: Any) -> bool:
    try:
        return store in _VERIFIED_STORES
    except TypeError:  # a store without weak references (a pydantic model): checked per retriever
        return False


def _remember_verified(store: Any) -> None:
    with contextlib.suppress(TypeError):  # a store without weak references: checked per retriever
        _VERIFIED_STORES.add(store)


class FirstUseSetup:
    """What a retriever's recall makes sure of on its first search of a
    Postgres store, once (``enabled=False``: never, nothing is created).

    Over LangChain's ``PGVector``: its filter index
    (`ensure_filter_index`: created when missing, then ``ANALYZE``),
    without which every pool search walks the HNSW index until ``k`` of its
    rows turn up (``benchmarks/stores_pg_default.py`` measures the call
    with and without it against one plain filtered search), and a default
    is what most users get: few read the paragraph that says to run
    `install_filter_index`.
    Over LlamaIndex's ``PGVectorStore``: its filter index likewise (the
    caller enables this only for the ``type`` key, the one it serves).
    Other stores: nothing (their setup stays the documented helpers).

    A refusal (a role that may not create an index, the table's lock not
    given within `SETUP_LOCK_TIMEOUT`) is a `StoreSetupWarning`,
    once, and the searches go on without the index: the same results, as
    slow as before. `created` says what the first use did. A store
    object already set up in this process (by an earlier retriever over it:
    the agent middleware makes one per turn) is not checked again.

    Example:
        ```python
        setup = FirstUseSetup(pgvector_store)
        setup.run()        # the first search: creates the index if missing
        setup.created      # True (made it), False (found it), None (not run, or refused)
        ```
    """

    def __init__(self, store: Any, enabled: bool = True) -> None:
        self.store = store
        self.enabled = enabled
        self.created: Optional[bool] = None
        served = enabled and (_is_pgvector(store) or _is_llama_index_store(store))
        self._done = not served or _verified(store)

    @property
    def pending(self) -> bool:
        """Whether the next search should run the setup first."""
        return not self._done

    def run(self) -> None:
        """The setup, on a store made for sync use (once; then nothing)."""
        if self._done:
            return
        self._done = True  # once, whatever happens: a refusal is not retried per call
        import sqlalchemy.exc

        try:
            self.created = ensure_filter_index(self.store)
        except sqlalchemy.exc.SQLAlchemyError as err:
            self._refused(self.store, err)
        else:
            _remember_verified(self.store)

    async def arun(self) -> None:
        """`run` on a store made with ``async_mode=True``."""
        if self._done:
            return
        self._done = True
        import sqlalchemy.exc

        try:
            self.created = await aensure_filter_index(self.store)
        except sqlalchemy.exc.SQLAlchemyError as err:
            self._refused(self.store, err)
        else:
            _remember_verified(self.store)

    @staticmethod
    def _refused(store: Any, err: Exception) -> None:
        reason = str(getattr(err, "orig", None) or err).strip().splitlines()[0]
        warnings.warn(
            "%s: the pool searches' filter index could not be created on first use (%s); the searches run"
            " without it (the same results, slower). Have the table's owner run install_filter_index(store) once,"
            " or pass setup_store=False to skip this step." % (type(store).__name__, reason),
            StoreSetupWarning,
            stacklevel=4,
        )


def _pgvector_filter_index_setup(store: Any, *, every: bool) -> List[str]:
    """The filter index setup of a ``PGVector`` on its own session, under
    the setup lock: the statements the table still needs, or ``every`` one
    (`install_filter_index`); returns those run."""
    # Fixed names only: ours and the framework's own table (quoted by the
    # dialect). Not a SQLAlchemy Index on the ORM table: that would join
    # PGVector's shared metadata, and its create_all would make it too.
    require_pgvector_session(store, asynchronous=False)
    with store._make_sync_session() as session:
        connection = session.connection()
        connection.exec_driver_sql(FilterIndexSetup.LOCK)  # beside a first use's setup
        table = _pgvector_table(store, connection)
        state = connection.execute(*_state_query(FILTER_INDEX, table)).one()
        run = FilterIndexSetup.to_run(FilterIndexSetup.create(table), table, state, every=every)
        for statement in run:
            connection.exec_driver_sql(statement)
        session.commit()
        return run


#: The private names of LlamaIndex's ``PGVectorStore`` that our pool
#: searches and its filter index are made of (no public path runs a
#: statement of ours on its session, nor reads its rows into nodes).
LLAMA_INDEX_INTERNALS = (
    "_initialize",
    "_table_class",
    "_session",
    "_async_session",
    "_build_query",
    "_db_rows_to_query_result",
)


def require_llama_index_internals(store: Any) -> None:
    """Refuse a LlamaIndex ``PGVectorStore`` whose release moved a name of
    `LLAMA_INDEX_INTERNALS` (`FrameworkInternalsError` naming it, its version
    and the tested range), before any statement runs."""
    require(
        store,
        LLAMA_INDEX_INTERNALS,
        "llama-index-vector-stores-postgres",
        "its setup, table class, session makers, similarity query and row reader",
        __name__,
    )


def require_pgvector_session(store: Any, *, asynchronous: bool) -> None:
    """Refuse a ``PGVector`` without the session maker our statements run
    on (``_make_sync_session``, or ``_make_async_session`` in async mode):
    a `FrameworkInternalsError` naming it, before any statement runs."""
    name = "_make_async_session" if asynchronous else "_make_sync_session"
    require(store, (name,), "langchain-postgres", "a method opening a session of the store's engine", __name__)


def llama_index_filter_index(store: Any) -> str:
    """The schema-qualified, quoted name of the filter index of LlamaIndex
    ``PGVectorStore`` ``store`` (`filter_index_name` of its table, in
    the table's schema) as a bound value holds it (`as_bound_value`): what a
    search passes, as a bound parameter, to `hnsw_search_settings`."""
    return as_bound_value(_llama_index_names(store)[0])


@functools.lru_cache(maxsize=1)
def _postgres_quoting() -> Any:
    """The Postgres dialect's identifier quoting (every Postgres driver quotes the same)."""
    from sqlalchemy.dialects import postgresql

    dialect: Any = postgresql.dialect
    return dialect().identifier_preparer


def _llama_index_filter_index_setup(store: Any, *, every: bool) -> List[str]:
    """`_pgvector_filter_index_setup` of LlamaIndex's ``PGVectorStore`` (its
    own setup first: its schema and table exist after it)."""
    require_llama_index_internals(store)
    store._initialize()
    qualified, index, table = _llama_index_names(store)
    with store._session() as session, session.begin():
        connection = session.connection()
        connection.exec_driver_sql(FilterIndexSetup.LOCK)  # beside a first use's setup
        state = connection.execute(*_state_query(qualified, table)).one()
        run = FilterIndexSetup.to_run(FilterIndexSetup.create_llama_index(index, table), table, state, every=every)
        for statement in run:
            connection.exec_driver_sql(statement)
        return run


def _llama_index_names(store: Any) -> Tuple[str, str, str]:
    """LlamaIndex ``PGVectorStore``'s filter index and table, each quoted
    by the Postgres rules for SQL text (``_postgres_quoting``): the index
    schema-qualified (what ``to_regclass`` looks up, as `as_bound_value`
    of it), the index alone (``CREATE INDEX`` names it unqualified: it lands
    in the table's schema), and the table. The index name is ours, derived
    from the store's declared table name."""
    table = store._table_class.__table__
    preparer = _postgres_quoting()
    index = preparer.quote(filter_index_name(table.name))
    qualified = "%s.%s" % (preparer.quote_schema(table.schema), index) if table.schema else index
    return qualified, index, preparer.format_table(table)


async def _aensure_llama_index_filter_index(store: Any) -> bool:
    require_llama_index_internals(store)
    store._initialize()  # sync, as the store's own async methods run it
    qualified, index, table = _llama_index_names(store)
    async with store._async_session() as session, session.begin():
        connection = await session.connection()
        await connection.exec_driver_sql(FilterIndexSetup.LOCK)
        state = (await connection.execute(*_state_query(qualified, table))).one()
        run = FilterIndexSetup.to_run(FilterIndexSetup.create_llama_index(index, table), table, state)
        for statement in run:
            await connection.exec_driver_sql(statement)
        return FilterIndexSetup.created(run)


def exact_search_settings() -> Any:
    """The statement that makes the current transaction's similarity
    searches exact (no index scan, so no HNSW; a bitmap scan of a btree
    index on the filter columns stays allowed): the completion of a search
    the index returned short, which then says truthfully whether the store
    holds more."""
    import sqlalchemy

    return sqlalchemy.text("SELECT set_config('enable_indexscan', 'off', true)")


#: The per-namespace change counters of LangGraph's ``store`` table, kept by
#: triggers (`install_change_counter`). Fixed names: no value is ever
#: part of this SQL.
CHANGES_TABLE = "poolsplit_store_changes"
#: The triggers that keep it; all of them enabled means the counters are sound.
CHANGE_TRIGGERS = (
    "poolsplit_store_changes_insert",
    "poolsplit_store_changes_update",
    "poolsplit_store_changes_delete",
    "poolsplit_store_changes_truncate",
)
_CHANGE_COUNTER_DDL = [
    "CREATE TABLE IF NOT EXISTS poolsplit_store_changes (prefix text PRIMARY KEY, changes bigint NOT NULL)",
    """
CREATE OR REPLACE FUNCTION poolsplit_store_changed() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        UPDATE poolsplit_store_changes SET changes = changes + 1;
    ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO poolsplit_store_changes AS c (prefix, changes)
            SELECT prefix, count(*) FROM new_rows GROUP BY prefix
            ON CONFLICT (prefix) DO UPDATE SET changes = c.changes + EXCLUDED.changes;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO poolsplit_store_changes AS c (prefix, changes)
            SELECT prefix, count(*) FROM (SELECT prefix FROM new_rows UNION ALL SELECT prefix FROM old_rows
                                          WHERE prefix NOT IN (SELECT prefix FROM new_rows)) moved GROUP BY prefix
            ON CONFLICT (prefix) DO UPDATE SET changes = c.changes + EXCLUDED.changes;
    ELSE
        INSERT INTO poolsplit_store_changes AS c (prefix, changes)
            SELECT prefix, count(*) FROM old_rows GROUP BY prefix
            ON CONFLICT (prefix) DO UPDATE SET changes = c.changes + EXCLUDED.changes;
    END IF;
    RETURN NULL;
END
$body$""",
    "DROP TRIGGER IF EXISTS poolsplit_store_changes_insert ON store",
    "CREATE TRIGGER poolsplit_store_changes_insert AFTER INSERT ON store REFERENCING NEW TABLE AS new_rows"
    " FOR EACH STATEMENT EXECUTE FUNCTION poolsplit_store_changed()",
    "DROP TRIGGER IF EXISTS poolsplit_store_changes_update ON store",
    "CREATE TRIGGER poolsplit_store_changes_update AFTER UPDATE ON store"
    " REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION poolsplit_store_changed()",
    "DROP TRIGGER IF EXISTS poolsplit_store_changes_delete ON store",
    "CREATE TRIGGER poolsplit_store_changes_delete AFTER DELETE ON store REFERENCING OLD TABLE AS old_rows"
    " FOR EACH STATEMENT EXECUTE FUNCTION poolsplit_store_changed()",
    "DROP TRIGGER IF EXISTS poolsplit_store_changes_truncate ON store",
    "CREATE TRIGGER poolsplit_store_changes_truncate AFTER TRUNCATE ON store"
    " FOR EACH STATEMENT EXECUTE FUNCTION poolsplit_store_changed()",
    # In every session, replica ones too (session_replication_role =
    # replica: a logical replication apply worker, a restore tool): enabled
    # for origin sessions only, as CREATE TRIGGER leaves them, they missed
    # those writers, and the middleware trusted a counter that had not moved.
    *("ALTER TABLE store ENABLE ALWAYS TRIGGER %s" % name for name in CHANGE_TRIGGERS),
    # Last, once the triggers count every write: every namespace already
    # stored gets its counter, so a TRUNCATE
    # (which names no rows) moves every counter that a reader may hold.
    "INSERT INTO poolsplit_store_changes (prefix, changes) SELECT DISTINCT prefix, 0 FROM store"
    " ON CONFLICT (prefix) DO NOTHING",
]


def install_change_counter(store: Any) -> None:
    """Give LangGraph's ``PostgresStore`` table a change counter per
    namespace, so the agent middleware's turn costs the same at 10k and
    100k memories. Run once per database, after ``store.setup()`` (like it,
    it changes the schema: it needs the right to create a table, a function
    and triggers on ``store``); running it again is harmless.

    Why a trigger: a LangGraph store has no change counter, and every
    watermark the middleware can compute without one reads the whole
    namespace (a digest of its rows: ~0.5 s a turn at 100k memories). A
    counter the middleware's own writes bumped would miss every other
    writer (a tool's ``store.put``, another process, a migration). The
    triggers fire for every writer of the table, in the writer's own
    transaction: a reader sees the new count exactly when it sees the
    write. Cost: one small upsert per write statement, and concurrent
    writers of one namespace queue on its counter row until they commit.

    The triggers fire in every session, ``session_replication_role =
    replica`` included (``ENABLE ALWAYS``). The middleware checks on every
    turn that all four triggers are there and enabled so
    (`CHANGE_TRIGGERS`); if not (e.g. installed by an older version:
    install again), it falls back to the digest.

    Example:
        ```python
        with PostgresStore.from_conn_string(url) as store:
            store.setup()
            install_change_counter(store)
        ```
    """
    if is_async_postgres_store(store):
        raise ArgumentError(
            "install_change_counter: an AsyncPostgresStore takes `await ainstall_change_counter(store)`"
        )
    _ddl(store, _CHANGE_COUNTER_DDL)


async def ainstall_change_counter(store: Any) -> None:
    """`install_change_counter` of LangGraph's ``AsyncPostgresStore``
    (the same table, function and triggers, through its async cursor): run
    once, after ``await store.setup()``.

    Example:
        ```python
        async with AsyncPostgresStore.from_conn_string(url) as store:
            await store.setup()
            await ainstall_change_counter(store)
        ```
    """
    await _async_ddl(store, _CHANGE_COUNTER_DDL, "ainstall_change_counter")


@dataclass(frozen=True)
class PostgresConnection:
    """One Postgres connection setting, in the form each store takes.

    Args:
        url: the database, as a libpq URI (``postgresql://me@db-host/memory``,
            ``postgres://...``), a SQLAlchemy URL with any Postgres driver
            (``postgresql+psycopg://...``, ``+psycopg2``, ``+asyncpg``) or a
            libpq keyword string (``host=db-host dbname=memory user=me``).
            Query parameters (``sslmode``, ``host=/socket/dir``, ...) carry
            over to both forms unchanged.

    The forms differ only in the scheme: [`sqlalchemy_url`][] names the
    psycopg 3 driver, the one all three stores share (sync and async), and
    [`conninfo`][] is libpq's own. An unparsable value is an
    `ArgumentError` naming ``url``. The
    password (``user:password@``, or a ``password`` parameter or keyword)
    never shows in ``repr`` or an error.

    Example:
        >>> pg = PostgresConnection("postgresql://me:secret@db-host:5432/memory?sslmode=require")
        >>> pg.sqlalchemy_url    # PGVector(connection=...), PGEngine.from_connection_string(...)
        'postgresql+psycopg://me:secret@db-host:5432/memory?sslmode=require'
        >>> pg.conninfo          # PostgresStore.from_conn_string(...), psycopg.connect(...)
        'postgresql://me:secret@db-host:5432/memory?sslmode=require'
        >>> sorted(pg.llama_index)  # PGVectorStore(**pg.llama_index, table_name=..., embed_dim=...)
        ['async_connection_string', 'connection_string']
        >>> pg
        PostgresConnection('postgresql://me:***@db-host:5432/memory?sslmode=require')
    """

    url: str

    def __post_init__(self) -> None:
        if not isinstance(self.url, str) or not self.url.strip():
            raise ArgumentError("PostgresConnection url must be a non-empty string, got %r" % (self.url,))
        object.__setattr__(self, "url", _as_uri(self.url.strip()))

    def __repr__(self) -> str:
        head, mark, query = self.url.partition("?")
        password = urllib.parse.urlsplit(head).password
        if password is not None:
            head = head.replace(":%s@" % password, ":***@", 1)
        # libpq's keyword form becomes query parameters: a password there too
        return "PostgresConnection(%r)" % (head + mark + "&".join(_masked(part) for part in query.split("&")))

    @property
    def conninfo(self) -> str:
        """libpq's form (``postgresql://...``): LangGraph's ``PostgresStore``, psycopg."""
        return self.url

    @property
    def sqlalchemy_url(self) -> str:
        """SQLAlchemy's form with the psycopg 3 driver (``postgresql+psycopg://...``):
        LangChain's ``PGVector``, langchain-postgres v2's ``PGEngine``,
        LlamaIndex's ``PGVectorStore``; one driver for sync and async."""
        return "postgresql+psycopg" + self.url[len("postgresql") :]

    @property
    def llama_index(self) -> Dict[str, str]:
        """LlamaIndex ``PGVectorStore``'s two connection keywords (sync and
        async, the same psycopg URL): ``PGVectorStore(**pg.llama_index, ...)``."""
        return {"connection_string": self.sqlalchemy_url, "async_connection_string": self.sqlalchemy_url}


def _as_uri(value: str) -> str:
    """``value`` as a libpq ``postgresql://`` URI (see [`PostgresConnection`][])."""
    if "://" not in value:
        return _keywords_uri(value)
    scheme, rest = value.split("://", 1)
    base, _, driver = scheme.lower().partition("+")
    if base not in _SCHEMES or (driver and driver not in _SQLALCHEMY_DRIVERS):
        raise ArgumentError(
            "PostgresConnection url must start with postgresql:// (or postgres://, postgresql+psycopg://), got %r"
            % (scheme + "://",)
        )
    return "postgresql://" + rest


def _masked(parameter: str) -> str:
    """A URI query parameter, its value ``***`` when it is the password."""
    key, equals, _ = parameter.partition("=")
    return key + "=***" if equals and urllib.parse.unquote(key).strip().lower() == "password" else parameter


#: A ``password`` keyword of a libpq keyword string, with its value (quoted or not).
_PASSWORD_KEYWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)", re.IGNORECASE)


def _keywords_uri(value: str) -> str:
    """A libpq ``key=value`` string as a URI, every keyword a query
    parameter (libpq reads ``dbname``, ``host``, ``user`` ... there too)."""
    try:
        from psycopg.conninfo import conninfo_to_dict  # the Postgres stores' own driver
    except ImportError:  # pragma: no cover - the postgres extra brings it
        raise ArgumentError("PostgresConnection: a key=value url needs psycopg (pip install psycopg)") from None
    try:
        params = conninfo_to_dict(value)
    except Exception as exc:  # psycopg.ProgrammingError: the message says what is wrong
        shown = _PASSWORD_KEYWORD.sub(r"\1***", value)
        raise ArgumentError("PostgresConnection url %r is not a libpq connection string: %s" % (shown, exc)) from None
    if not params:
        raise ArgumentError("PostgresConnection url %r names no connection parameter" % (value,))
    return "postgresql://?" + urllib.parse.urlencode(sorted((k, str(v)) for k, v in params.items()))
