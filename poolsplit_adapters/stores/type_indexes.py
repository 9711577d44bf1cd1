"""One HNSW index per memory type on LangGraph's ``store_vectors``, so a
ranked type search never reads a whole type.

Over a vector-indexed ``PostgresStore`` the agent middleware recalls each
pool's types by similarity (:mod:`~poolsplit_adapters.langchain.postgres_store_search`).
Through the store's one HNSW index, a type whose items all lie behind nearer
items of other types (a query about deploys when only the episodes mention
deploys) is a walk past those other items: it gives up at its budget, and
the exact read of every item of the type completes it. That read grows with
the namespace: 10 ms a type at 10k memories, 105 ms at 100k (measured,
``benchmarks/middleware_turn.py``).

:func:`install_type_indexes` gives each listed type its own HNSW index, a
partial index over that type's vectors only, so the type's walk starts among
its own items and its cost no longer depends on what else the namespace
holds (4-5 ms a type at 100k on the same corpus). What it installs, once per
database, after ``store.setup()``:

- the table :data:`TYPE_CODES` (``type`` -> a small integer ``code``): the
  one thing of a type that reaches SQL text is this integer, which is ours;
  a type itself is only ever a bound parameter;
- the column :data:`CODE_COLUMN` on ``store_vectors``: each vector's type
  code, set by triggers from the item's ``value->>'type'`` whoever writes
  (LangGraph's own ``put``, another process): on every insert or update of
  a vector, and when an item's type changes; NULL for a type not listed;
- per listed type, the partial index ``poolsplit_type_hnsw_<code>`` with the
  store's own operator class and HNSW parameters.

The search reads the codes of the types whose index exists, and only while
both triggers are there and enabled (a code nobody keeps could hide an item
from its type's index); it reads them again every :data:`CODES_SECONDS`. A
type's walk through its own index is still filtered by namespace and type
and still completed exactly when it comes back short, as every walk.

Costs: each vector insert of a listed type goes into two HNSW indexes (the
store's and its type's), and each listed type's vectors are stored in its
index once more. The first install over a table that already holds vectors
updates each vector row of the listed types once (a new row version, so the
store's HNSW index takes it again: about 1 ms a row). Installing over a
freshly loaded table before the store's own index is built is the fast
way; running it again (or with more types) is harmless and only indexes
what is new.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence, Tuple

from ..checks import ArgumentError
from .postgres import check_postgres_text, is_async_postgres_store, is_postgres_store

__all__ = [
    "CODES_SECONDS",
    "CODE_COLUMN",
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
#: The triggers that keep :data:`CODE_COLUMN`: on ``store_vectors`` (a vector
#: written) and on ``store`` (an item's type changed).
TYPE_TRIGGERS = ("poolsplit_vector_type_code", "poolsplit_store_type_moved")
#: How long a search keeps the codes it read before reading them again.
CODES_SECONDS = 60.0

_DDL = (
    "CREATE TABLE IF NOT EXISTS poolsplit_vector_types"
    " (type text PRIMARY KEY, code integer GENERATED ALWAYS AS IDENTITY UNIQUE)",
    "ALTER TABLE store_vectors ADD COLUMN IF NOT EXISTS poolsplit_type_code integer",
    # The one rule of a vector's code: its item's type, looked up.
    """
CREATE OR REPLACE FUNCTION poolsplit_vector_type_code() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    NEW.poolsplit_type_code := (SELECT t.code FROM store s JOIN poolsplit_vector_types t ON t.type = s.value->>'type'
                                WHERE s.prefix = NEW.prefix AND s.key = NEW.key);
    RETURN NEW;
END
$body$""",
    "DROP TRIGGER IF EXISTS poolsplit_vector_type_code ON store_vectors",
    "CREATE TRIGGER poolsplit_vector_type_code BEFORE INSERT OR UPDATE ON store_vectors"
    " FOR EACH ROW EXECUTE FUNCTION poolsplit_vector_type_code()",
    # An item whose type changed: its vectors are touched, and the trigger
    # above gives them their new code (LangGraph writes the item before its
    # vectors, and may keep the vectors of an item put with index=False).
    """
CREATE OR REPLACE FUNCTION poolsplit_store_type_moved() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    UPDATE store_vectors SET poolsplit_type_code = NULL WHERE prefix = NEW.prefix AND key = NEW.key;
    RETURN NULL;
END
$body$""",
    "DROP TRIGGER IF EXISTS poolsplit_store_type_moved ON store",
    "CREATE TRIGGER poolsplit_store_type_moved AFTER UPDATE ON store FOR EACH ROW"
    " WHEN (OLD.value->>'type' IS DISTINCT FROM NEW.value->>'type') EXECUTE FUNCTION poolsplit_store_type_moved()",
)

#: Register the listed types (a bound array: never SQL text).
_REGISTER = "INSERT INTO poolsplit_vector_types (type) SELECT unnest(%(types)s::text[]) ON CONFLICT (type) DO NOTHING"
#: Give the vectors of the listed types their code where they lack it (the trigger computes it).
_BACKFILL = (
    "UPDATE store_vectors sv SET poolsplit_type_code = NULL FROM store s"
    " WHERE s.prefix = sv.prefix AND s.key = sv.key AND s.value->>'type' = ANY(%(types)s::text[])"
    " AND sv.poolsplit_type_code IS DISTINCT FROM"
    " (SELECT t.code FROM poolsplit_vector_types t WHERE t.type = s.value->>'type')"
)
_CODES_OF = "SELECT type, code FROM poolsplit_vector_types WHERE type = ANY(%(types)s::text[]) ORDER BY code"

#: ``distance_type`` -> the last part of pgvector's operator class name.
_OPS = {"cosine": "cosine", "l2": "l2", "inner_product": "ip"}
_VECTOR_TYPES = ("vector", "halfvec")
_HNSW_PARAMETERS = ("m", "ef_construction")
#: The longest type name (UTF-8 bytes) the table of codes takes: well under
#: what a btree key holds (~2,700 bytes), so an insert never fails there.
_MOST_TYPE_BYTES = 1000


def type_index_name(code: int) -> str:
    """The partial HNSW index of the type with ``code``.

    Example::

        >>> type_index_name(3)
        'poolsplit_type_hnsw_3'
    """
    return "poolsplit_type_hnsw_%d" % int(code)


def type_codes_sql() -> str:
    """The statement a search reads its type codes with (psycopg
    parameters; none): each listed type whose index exists, and none at all
    unless both :data:`TYPE_TRIGGERS` are there and enabled. Run it only
    where :data:`TYPE_CODES` exists."""
    return (
        "SELECT t.type, t.code FROM poolsplit_vector_types t"
        " WHERE to_regclass('poolsplit_type_hnsw_' || t.code) IS NOT NULL"
        " AND (SELECT count(*) FROM pg_trigger WHERE tgname IN ('%s', '%s') AND tgenabled <> 'D') = 2" % TYPE_TRIGGERS
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
        checked.append(check_postgres_text("types[%d]" % position, name))
        if len(name.encode("utf-8")) > _MOST_TYPE_BYTES:  # the codes' btree key must hold it
            raise ArgumentError(
                "install_type_indexes: types[%d] is %d bytes long; a type name takes at most %d"
                % (position, len(name.encode("utf-8")), _MOST_TYPE_BYTES)
            )
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


def _create_index(code: int, opclass: str, options: str) -> str:
    return (
        "CREATE INDEX IF NOT EXISTS %s ON store_vectors USING hnsw (embedding %s)%s WHERE poolsplit_type_code = %d"
        % (
            type_index_name(code),
            opclass,
            options,
            int(code),
        )
    )


def install_type_indexes(store: Any, types: Sequence[str]) -> List[Tuple[str, int]]:
    """Give each of ``types`` its own HNSW index on LangGraph's
    ``PostgresStore(index=)`` (see the module docstring), and return each
    type with its code. Run once per database after ``store.setup()``;
    running it again, or with more types, is harmless.

    Example::

        store = PostgresStore(conn, index={"dims": 256, "embed": embeddings, "fields": ["content"]})
        store.setup()
        install_type_indexes(store, ["episode", "fact", "skill", "note", "task"])
    """
    if is_async_postgres_store(store):
        raise ArgumentError(
            "install_type_indexes: an AsyncPostgresStore takes `await ainstall_type_indexes(store, types)`"
        )
    if not is_postgres_store(store):
        raise ArgumentError("install_type_indexes takes LangGraph's PostgresStore, got %s" % type(store).__name__)
    names = _checked_types(types)
    opclass, options = _index_definition(store)
    # One transaction: no write between a trigger's drop and its creation
    # goes without its code, and a failed install leaves nothing behind.
    with store._cursor() as cur, cur.connection.transaction():
        for statement in _DDL:
            cur.execute(statement)
        cur.execute(_REGISTER, {"types": names})
        cur.execute(_BACKFILL, {"types": names})
        cur.execute(_CODES_OF, {"types": names})
        codes = [_row(row) for row in cur.fetchall()]
        for _, code in codes:
            cur.execute(_create_index(code, opclass, options))
        cur.execute("ANALYZE store_vectors")
    return codes


async def ainstall_type_indexes(store: Any, types: Sequence[str]) -> List[Tuple[str, int]]:
    """:func:`install_type_indexes` of LangGraph's ``AsyncPostgresStore``
    (the same statements, through its async cursor): run once, after
    ``await store.setup()``.

    Example::

        await ainstall_type_indexes(store, ["episode", "fact"])
    """
    if not is_async_postgres_store(store):
        raise ArgumentError(
            "ainstall_type_indexes takes LangGraph's AsyncPostgresStore, got %s (a sync store: install_type_indexes)"
            % type(store).__name__
        )
    names = _checked_types(types)
    opclass, options = _index_definition(store)
    async with store._cursor() as cur, cur.connection.transaction():
        for statement in _DDL:
            await cur.execute(statement)
        await cur.execute(_REGISTER, {"types": names})
        await cur.execute(_BACKFILL, {"types": names})
        await cur.execute(_CODES_OF, {"types": names})
        codes = [_row(row) for row in await cur.fetchall()]
        for _, code in codes:
            await cur.execute(_create_index(code, opclass, options))
        await cur.execute("ANALYZE store_vectors")
    return codes


def _row(row: Any) -> Tuple[str, int]:
    """(type, code) from a row (a dict row, as LangGraph's connections give, or a tuple)."""
    if isinstance(row, Mapping):
        return str(row["type"]), int(row["code"])
    return str(row[0]), int(row[1])
