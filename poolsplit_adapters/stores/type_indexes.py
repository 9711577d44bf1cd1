"""One HNSW index per memory type on LangGraph's ``store_vectors``, so a
ranked type search never reads a whole type.

Over a vector-indexed ``PostgresStore`` the agent middleware recalls each
pool's types by similarity (`postgres_store_search`).
Through the store's one HNSW index, a type whose items all lie behind nearer
items of other types (a query about deploys when only the episodes mention
deploys) is a walk past those other items: it gives up at its budget, and
the exact read of every item of the type completes it. That read grows with
the namespace: 10 ms a type at 10k memories, 105 ms at 100k (measured,
``benchmarks/middleware_turn.py``).

`install_type_indexes` gives each listed type its own HNSW index, a
partial index over that type's vectors only, so the type's walk starts among
its own items and its cost no longer depends on what else the namespace
holds (4-5 ms a type at 100k on the same corpus). What it installs, once per
database, after ``store.setup()``:

- the table `TYPE_CODES` (``type`` -> a small integer ``code``): the
  one thing of a type that reaches SQL text is this integer, which is ours;
  a type itself is only ever a bound parameter;
- the column `CODE_COLUMN` on ``store_vectors``: each vector's type
  code, set by triggers from the item's ``value->>'type'`` whoever writes
  (LangGraph's own ``put``, another process): on every insert or update of
  a vector, and when an item's type changes; NULL for a type not listed;
- per listed type, the partial index ``poolsplit_type_hnsw_<code>`` with the
  store's own operator class and HNSW parameters.

The search reads the codes of the types whose index exists and is valid,
and only while both triggers are there, on their tables, and enabled; it
reads them again every `CODES_SECONDS`. A vector written while the
triggers did not run (disabled, or a session with
``session_replication_role = replica``, as a logical-replication apply)
has no code, and its namespace is searched without the type indexes (one
index probe a run, `NULL_CODES`) until an install gives it its code.
What no check here sees: an item whose *type* was changed while the
triggers did not run keeps its old code; install again after such writes
(every code is then made what the rule gives). A type's walk through its
own index is still filtered by namespace and type and still completed
exactly when it comes back short, as every walk.

Costs: each vector insert of a listed type goes into two HNSW indexes (the
store's and its type's), and each listed type's vectors are stored in its
index once more. While an install runs, writes wait (the tables are locked
in the order LangGraph's writes take them, so a ``put`` never deadlocks
with it) and reads go on; the type indexes are then built ``CONCURRENTLY``
(on an autocommit connection, LangGraph's advice). The first install over
a table that already holds vectors gives each vector row its code (a new
row version, so the store's HNSW index takes it again: about 1 ms a row at
100k); on a bulk load, install before building the store's own HNSW index
(drop ``store_vectors_embedding_idx`` after ``store.setup()``, load,
install, then create it again with its definition), as
``benchmarks/middleware_turn.py`` does. Running the install again, or with
more types, only does what is missing.
"""

from __future__ import annotations

from typing import Any, Dict, Generator, List, Mapping, Optional, Sequence, Tuple, cast

from ..errors import ArgumentError
from .checks import check_key_text
from .postgres import (
    STORE_SETUP_LOCK,
    alocked_cursor,
    astore_session_lock,
    check_postgres_text,
    is_async_postgres_store,
    is_postgres_store,
    locked_cursor,
    store_session_lock,
)

__all__ = [
    "CODES_SECONDS",
    "CODE_COLUMN",
    "NULL_CODES",
    "TYPE_CODES",
    "TYPE_TRIGGERS",
    "ainstall_type_indexes",
    "install_type_indexes",
    "type_codes_sql",
    "type_index_name",
]

#: The table of type codes (fixed names: no value is ever part of this SQL).
TYPE_CODES = "poolsplit_vector_types"
#: The column of ``store_vectors`` that holds each vector's type code.
CODE_COLUMN = "poolsplit_type_code"
#: The triggers that keep `CODE_COLUMN`: on ``store_vectors`` (a vector
#: written) and on ``store`` (an item's type changed).
TYPE_TRIGGERS = ("poolsplit_vector_type_code", "poolsplit_store_type_moved")
#: How long a search keeps the codes it read before reading them again.
CODES_SECONDS = 60.0

#: The one rule of a vector's code: its item's type looked up, 0 for a type
#: not listed. NULL only ever means "written while the triggers did not
#: run" (disabled, or a session in ``session_replication_role = replica``):
#: a namespace holding such a vector is searched without the type indexes
#: (`NULL_CODES`) until an install gives it its code. The functions
#: keep the install's ``search_path``, so every writer's trigger finds the
#: same tables.
_FUNCTIONS = (
    """
CREATE OR REPLACE FUNCTION poolsplit_vector_type_code() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $body$
BEGIN
    NEW.poolsplit_type_code := coalesce(
        (SELECT t.code FROM store s JOIN poolsplit_vector_types t ON t.type = s.value->>'type'
         WHERE s.prefix = NEW.prefix AND s.key = NEW.key), 0);
    RETURN NEW;
END
$body$""",
    # An item whose type changed: its vectors are touched, and the trigger
    # above gives them their new code (LangGraph writes the item before its
    # vectors, and keeps the vectors of an item put again with index=False).
    """
CREATE OR REPLACE FUNCTION poolsplit_store_type_moved() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $body$
BEGIN
    UPDATE store_vectors SET poolsplit_type_code = NULL WHERE prefix = NEW.prefix AND key = NEW.key;
    RETURN NULL;
END
$body$""",
)
#: Each trigger: (its name, its table, its definition), created where the table has none of that name.
_TRIGGERS = (
    (
        TYPE_TRIGGERS[0],
        "store_vectors",
        "CREATE TRIGGER poolsplit_vector_type_code BEFORE INSERT OR UPDATE ON store_vectors"
        " FOR EACH ROW EXECUTE FUNCTION poolsplit_vector_type_code()",
    ),
    (
        TYPE_TRIGGERS[1],
        "store",
        "CREATE TRIGGER poolsplit_store_type_moved AFTER UPDATE ON store FOR EACH ROW"
        " WHEN (OLD.value->>'type' IS DISTINCT FROM NEW.value->>'type') EXECUTE FUNCTION poolsplit_store_type_moved()",
    ),
)
#: The tables, locked first in the order LangGraph's writes take them
#: (``store``, then ``store_vectors``), so an install never deadlocks with a
#: ``put``: writes wait for the install's transaction; reads go on.
_LOCK = "LOCK TABLE store, store_vectors IN SHARE ROW EXCLUSIVE MODE"
_TABLES_READY = "SELECT to_regclass('store') IS NOT NULL AND to_regclass('store_vectors') IS NOT NULL AS ready"
_HAS_COLUMN = (
    "SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'store_vectors'::regclass"
    " AND attname = 'poolsplit_type_code' AND NOT attisdropped) AS present"
)
_HAS_TRIGGER = (
    "SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = %(name)s AND tgrelid = %(table)s::regclass) AS present"
)
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS poolsplit_vector_types"
    " (type text PRIMARY KEY, code integer GENERATED ALWAYS AS IDENTITY UNIQUE)",
    "CREATE INDEX IF NOT EXISTS poolsplit_type_code_missing ON store_vectors (prefix) WHERE poolsplit_type_code IS NULL",
)
#: Register the listed types (a bound array: never SQL text).
_REGISTER = "INSERT INTO poolsplit_vector_types (type) SELECT unnest(%(types)s::text[]) ON CONFLICT (type) DO NOTHING"
#: Every vector whose code is not what the rule gives (NULL, or a type that
#: changed while the triggers did not run) is touched: the trigger computes it.
_BACKFILL = (
    "UPDATE store_vectors sv SET poolsplit_type_code = NULL"
    " WHERE sv.poolsplit_type_code IS DISTINCT FROM coalesce("
    "(SELECT t.code FROM store s JOIN poolsplit_vector_types t ON t.type = s.value->>'type'"
    " WHERE s.prefix = sv.prefix AND s.key = sv.key), 0)"
)
_CODES_OF = "SELECT type, code FROM poolsplit_vector_types WHERE type = ANY(%(types)s::text[]) ORDER BY code"
#: Whether a namespace holds a vector written while the triggers did not run
#: (psycopg parameter ``namespace``: its label). Answered by the partial
#: index ``poolsplit_type_code_missing``.
NULL_CODES = "SELECT EXISTS (SELECT 1 FROM store_vectors WHERE prefix = %(namespace)s AND poolsplit_type_code IS NULL) AS missing"

#: ``distance_type`` -> the last part of pgvector's operator class name.
_OPS = {"cosine": "cosine", "l2": "l2", "inner_product": "ip"}
_VECTOR_TYPES = ("vector", "halfvec")
_HNSW_PARAMETERS = ("m", "ef_construction")


def type_index_name(code: int) -> str:
    """The partial HNSW index of the type with ``code``.

    Example:
        >>> type_index_name(3)
        'poolsplit_type_hnsw_3'
    """
    return "poolsplit_type_hnsw_%d" % int(code)


def type_codes_sql() -> str:
    """The statement a search reads its type codes with (psycopg
    parameters; none): each listed type whose index exists and is valid (a
    concurrent build that failed leaves an invalid one), and none at all
    unless both `TYPE_TRIGGERS` are there, on their own tables, and
    enabled. Run it only where `TYPE_CODES` exists."""
    return (
        "SELECT t.type, t.code FROM poolsplit_vector_types t"
        " JOIN pg_index i ON i.indexrelid = to_regclass('poolsplit_type_hnsw_' || t.code) AND i.indisvalid"
        " WHERE (SELECT count(*) FROM pg_trigger WHERE tgenabled <> 'D' AND ("
        "(tgname = '%s' AND tgrelid = to_regclass('store_vectors'))"
        " OR (tgname = '%s' AND tgrelid = to_regclass('store')))) = 2" % TYPE_TRIGGERS
    )


def _checked_types(types: Any) -> List[str]:
    if isinstance(types, (str, bytes)) or not isinstance(types, Sequence):
        raise ArgumentError("install_type_indexes: types must be a list of type names, got %r" % (types,))
    if not types:
        raise ArgumentError("install_type_indexes: types is empty (name the types the pools recall by similarity)")
    checked: List[str] = []
    for position, name in enumerate(types):
        if not isinstance(name, str) or not name:
            raise ArgumentError("install_type_indexes: types[%d] must be a non-empty string, got %r" % (position, name))
        checked.append(check_key_text(check_postgres_text("types[%d]" % position, name), "types[%d]" % position))
    return list(dict.fromkeys(checked))


def _index_definition(store: Any) -> Tuple[str, str]:
    """The store's operator class and its HNSW ``WITH`` clause, from its
    ``index=`` config (fixed names and integers only)."""
    config: Optional[Mapping[str, Any]] = getattr(store, "index_config", None)
    if not config:
        raise ArgumentError("install_type_indexes takes a PostgresStore made with index= (a vector index)")
    ann = config.get("ann_index_config") or {}
    kind, vector_type = ann.get("kind", "hnsw"), ann.get("vector_type", "vector")
    distance = config.get("distance_type", "cosine")
    if kind != "hnsw" or vector_type not in _VECTOR_TYPES or distance not in _OPS:
        raise ArgumentError(
            "install_type_indexes takes a store whose index is HNSW over vector or halfvec with a cosine, l2 or"
            " inner_product distance; got kind=%r, vector_type=%r, distance_type=%r" % (kind, vector_type, distance)
        )
    parameters = []
    for name in _HNSW_PARAMETERS:
        value = ann.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ArgumentError("install_type_indexes: ann_index_config[%r] must be a positive integer" % name)
        parameters.append("%s = %d" % (name, value))
    options = " WITH (%s)" % ", ".join(parameters) if parameters else ""
    return "%s_%s_ops" % (vector_type, _OPS[distance]), options


def _create_index(code: int, opclass: str, options: str, concurrently: bool) -> str:
    return (
        "CREATE INDEX %sIF NOT EXISTS %s ON store_vectors USING hnsw (embedding %s)%s WHERE poolsplit_type_code = %d"
        % (
            "CONCURRENTLY " if concurrently else "",
            type_index_name(code),
            opclass,
            options,
            int(code),
        )
    )


#: A type index left invalid (by a concurrent build that failed), by name.
_INVALID = "SELECT 1 FROM pg_index WHERE indexrelid = to_regclass(%(name)s) AND NOT indisvalid"


def _drop_index(code: int, concurrently: bool) -> str:
    return "DROP INDEX %sIF EXISTS %s" % ("CONCURRENTLY " if concurrently else "", type_index_name(code))


#: The install's statements, one at a time (sans I/O: the sync and the
#: async install drive the same steps); each is sent its rows.
_Steps = Generator[Tuple[str, Dict[str, Any]], List[Any], List[Tuple[str, int]]]


def _schema_steps(names: List[str]) -> _Steps:
    """Inside the install's transaction: the tables locked, the column, the
    functions, the triggers, the table of codes, the types, the backfill."""
    ready = yield _TABLES_READY, {}
    if not _first(ready):
        raise ArgumentError("install_type_indexes: the store has no store_vectors table yet; run store.setup() first")
    yield _LOCK, {}
    present = yield _HAS_COLUMN, {}
    if not _first(present):  # ACCESS EXCLUSIVE, brief: only the first install
        yield "ALTER TABLE store_vectors ADD COLUMN poolsplit_type_code integer", {}
    for statement in _FUNCTIONS:
        yield statement, {}
    for name, table, definition in _TRIGGERS:
        exists = yield _HAS_TRIGGER, {"name": name, "table": table}
        if not _first(exists):
            yield definition, {}
    for statement in _SCHEMA:
        yield statement, {}
    yield _REGISTER, {"types": names}
    yield _BACKFILL, {}
    rows = yield _CODES_OF, {"types": names}
    return [_row(row) for row in rows]


def _index_steps(codes: List[Tuple[str, int]], opclass: str, options: str, concurrently: bool) -> _Steps:
    """After the schema's transaction: each type's index (an invalid one,
    left by a concurrent build that failed, built again), then ANALYZE."""
    for _, code in codes:
        invalid = yield _INVALID, {"name": type_index_name(code)}
        if invalid:
            yield _drop_index(code, concurrently), {}
        yield _create_index(code, opclass, options, concurrently), {}
    yield "ANALYZE store_vectors", {}
    return codes


def _run(cur: Any, steps: _Steps) -> List[Tuple[str, int]]:
    """Drive ``steps`` on a sync cursor: each statement sent its rows."""
    sql, params = next(steps)
    while True:
        cur.execute(sql, params)
        try:
            sql, params = steps.send(cur.fetchall() if cur.description else [])
        except StopIteration as done:
            return cast("List[Tuple[str, int]]", done.value)


async def _arun(cur: Any, steps: _Steps) -> List[Tuple[str, int]]:
    """`_run` on an async cursor."""
    sql, params = next(steps)
    while True:
        await cur.execute(sql, params)
        try:
            sql, params = steps.send(await cur.fetchall() if cur.description else [])
        except StopIteration as done:
            return cast("List[Tuple[str, int]]", done.value)


def _first(rows: List[Any]) -> Any:
    row = rows[0]
    return next(iter(row.values())) if isinstance(row, Mapping) else row[0]


def install_type_indexes(store: Any, types: Sequence[str]) -> List[Tuple[str, int]]:
    """Give each of ``types`` its own HNSW index on LangGraph's
    ``PostgresStore(index=)`` (see the module docstring), and return each
    type with its code. Run once per database after ``store.setup()``;
    running it again, or with more types, only does what is missing.

    While it runs, writes to the store wait (its tables are locked in the
    order LangGraph's writes take them) and reads go on; the type indexes
    are then built ``CONCURRENTLY`` when the store's connection is in
    autocommit (LangGraph's advice), so nothing waits for the builds.

    Example:
        ```python
        store = PostgresStore(conn, index={"dims": 256, "embed": embeddings, "fields": ["content"]})
        store.setup()
        install_type_indexes(store, ["episode", "fact", "skill", "note", "task"])
        ```
    """
    if is_async_postgres_store(store):
        raise ArgumentError(
            "install_type_indexes: an AsyncPostgresStore takes `await ainstall_type_indexes(store, types)`"
        )
    if not is_postgres_store(store):
        raise ArgumentError("install_type_indexes takes LangGraph's PostgresStore, got %s" % type(store).__name__)
    names = _checked_types(types)
    opclass, options = _index_definition(store)
    # The store's own lock, as its batch takes it on a shared connection: no
    # other thread's statements run inside this transaction; one install at a time.
    with store_session_lock(store, STORE_SETUP_LOCK), locked_cursor(store) as cur:
        with cur.connection.transaction():
            codes = _run(cur, _schema_steps(names))
        concurrently = bool(cur.connection.autocommit)
        _run(cur, _index_steps(codes, opclass, options, concurrently))
        if not concurrently:
            cur.connection.commit()
    return codes


async def ainstall_type_indexes(store: Any, types: Sequence[str]) -> List[Tuple[str, int]]:
    """`install_type_indexes` of LangGraph's ``AsyncPostgresStore``
    (the same statements, through its async cursor): run once, after
    ``await store.setup()``.

    Example:
        ```python
        await ainstall_type_indexes(store, ["episode", "fact"])
        ```
    """
    if not is_async_postgres_store(store):
        raise ArgumentError(
            "ainstall_type_indexes takes LangGraph's AsyncPostgresStore, got %s (a sync store: install_type_indexes)"
            % type(store).__name__
        )
    names = _checked_types(types)
    opclass, options = _index_definition(store)
    async with astore_session_lock(store, STORE_SETUP_LOCK), alocked_cursor(store) as cur:
        async with cur.connection.transaction():
            codes = await _arun(cur, _schema_steps(names))
        concurrently = bool(cur.connection.autocommit)
        await _arun(cur, _index_steps(codes, opclass, options, concurrently))
        if not concurrently:
            await cur.connection.commit()
    return codes


def _row(row: Any) -> Tuple[str, int]:
    """(type, code) from a row (a dict row, as LangGraph's connections give, or a tuple)."""
    if isinstance(row, Mapping):
        return str(row["type"]), int(row["code"])
    return str(row[0]), int(row[1])
