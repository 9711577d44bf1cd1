"""``forget(namespace=...)`` on the Postgres stores, on the real server:
LangChain ``PGVector`` and v2 ``PGVectorStore`` through ``VectorStoreMemory``,
LlamaIndex ``PGVectorStore`` through ``VectorIndexMemory``, LangGraph's
``PostgresStore`` (with its vector index) through ``BaseStoreMemory``. The
vector stores list no rows without ids, so the subject's rows are read by an
exact, bound namespace condition; afterwards search, recall, ``history``, export
and the table itself hold nothing of the subject, and the other subject is
untouched."""

from __future__ import annotations

import datetime
import io
from typing import Any, Callable, Dict, Iterator, Tuple

import psycopg
import pytest
import sqlalchemy
from pg_embeddings import DIMS, HashedNgramEmbeddings, HashedNgramLlamaEmbedding
from pg_server import Database

from poolsplit_adapters import Pool
from poolsplit_adapters.memory import UnknownEntryError
from poolsplit_adapters.stores import dump_store

NOW = datetime.datetime(2026, 7, 7, tzinfo=datetime.timezone.utc)
POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("facts", 400, 10, ("fact",))]
GONE = "memories.u1"
KEPT = "memories.o'brien; DROP TABLE x; --"


def COUNT(text: str) -> int:
    return max(1, len(text) // 4)


def pgvector(db: Database) -> Tuple[Callable[[str], Any], Callable[[], None], str]:
    PGVector = pytest.importorskip("langchain_postgres").PGVector
    from poolsplit_adapters.langchain import VectorStoreMemory

    engine = sqlalchemy.create_engine(db.url)
    store = PGVector(HashedNgramEmbeddings(), connection=engine, collection_name="forget", embedding_length=DIMS)
    memory = VectorStoreMemory(store, token_counter=COUNT)
    return lambda label: memory, engine.dispose, "langchain_pg_embedding"


def pgvectorstore_v2(db: Database) -> Tuple[Callable[[str], Any], Callable[[], None], str]:
    v2 = pytest.importorskip("langchain_postgres.v2.vectorstores")
    from langchain_postgres import Column, PGEngine

    from poolsplit_adapters.langchain import VectorStoreMemory

    engine = PGEngine.from_connection_string(db.url)
    engine.init_vectorstore_table("forget_v2", DIMS, id_column=Column("langchain_id", "TEXT", nullable=False))
    store = v2.PGVectorStore.create_sync(engine, embedding_service=HashedNgramEmbeddings(), table_name="forget_v2")
    memory = VectorStoreMemory(store, token_counter=COUNT)
    return lambda label: memory, lambda: engine._run_as_sync(engine.close()), "forget_v2"


def llama_pgvectorstore(db: Database) -> Tuple[Callable[[str], Any], Callable[[], None], str]:
    PGVectorStore = pytest.importorskip("llama_index.vector_stores.postgres").PGVectorStore
    from llama_index.core import VectorStoreIndex

    from poolsplit_adapters.llama_index import VectorIndexMemory

    store = PGVectorStore(connection_string=db.url, async_connection_string=db.url, table_name="forget", embed_dim=DIMS)
    index = VectorStoreIndex.from_vector_store(store, embed_model=HashedNgramLlamaEmbedding())

    def close() -> None:
        if store._engine is not None:
            store._engine.dispose()

    memory = VectorIndexMemory(index, token_counter=COUNT)
    return lambda label: memory, close, "data_forget"


def langgraph_postgres_store(db: Database) -> Tuple[Callable[[str], Any], Callable[[], None], str]:
    """LangGraph's PostgresStore with a vector index: one BaseStoreMemory per
    namespace (a LangGraph namespace is the label split on dots)."""
    PostgresStore = pytest.importorskip("langgraph.store.postgres").PostgresStore
    from poolsplit_adapters.langchain import BaseStoreMemory

    opened = PostgresStore.from_conn_string(
        db.conninfo, index={"dims": DIMS, "embed": HashedNgramEmbeddings(), "fields": ["content"]}
    )
    store = opened.__enter__()
    store.setup()

    def memory(label: str) -> Any:
        return BaseStoreMemory(store, tuple(label.split(".", 1)), token_counter=COUNT)

    return memory, lambda: opened.__exit__(None, None, None), "store"


#: Each opens ``(memory for a namespace label, close, the table holding the rows)``.
Opener = Callable[[Database], Tuple[Callable[[str], Any], Callable[[], None], str]]
#: The vector stores: one memory object for every namespace, its SQL through SQLAlchemy.
VECTOR_STORES: Dict[str, Opener] = {
    "langchain-pgvector": pgvector,
    "langchain-pgvectorstore-v2": pgvectorstore_v2,
    "llama-pgvectorstore": llama_pgvectorstore,
}
STORES: Dict[str, Opener] = {**VECTOR_STORES, "langgraph-postgres-store": langgraph_postgres_store}


def opened(opener: Opener, db: Database) -> Iterator[Tuple[Callable[[str], Any], Database, str]]:
    memory_for, close, table = opener(db)
    yield memory_for, db, table
    close()


@pytest.fixture(params=sorted(STORES))
def memory(request: Any, pg_database: Database) -> Iterator[Tuple[Callable[[str], Any], Database, str]]:
    yield from opened(STORES[request.param], pg_database)


@pytest.fixture(params=sorted(VECTOR_STORES))
def vector_memory(request: Any, pg_database: Database) -> Iterator[Tuple[Callable[[str], Any], Database, str]]:
    yield from opened(VECTOR_STORES[request.param], pg_database)


def fact(entry_id: str, content: str, namespace: str, **extra: Any) -> Dict[str, Any]:
    return {
        "id": entry_id,
        "type": "fact",
        "content": content,
        "namespace": namespace,
        "source": "thread:a",
        "created": "2026-07-01T00:00:00Z",
        **extra,
    }


def rows_holding(db: Database, table: str, text: str) -> int:
    """Rows of the store's table whose text or metadata holds ``text`` (the
    vector is in the same row: no row, no vector)."""
    with psycopg.connect(db.conninfo) as conn:
        found = conn.execute(
            psycopg.sql.SQL("SELECT count(*) FROM {} AS t WHERE strpos(t::text, %s) > 0").format(
                psycopg.sql.Identifier(table)
            ),
            (text,),
        ).fetchone()
    assert found is not None
    return int(found[0])


def test_forget_a_namespace_leaves_no_trace_on_postgres_stores(memory):
    memory_for, db, table = memory
    store, other = memory_for(GONE), memory_for(KEPT)
    store.add(
        [
            fact("u1-home", "Alice lives at 12 Marker Lane.", GONE),
            fact("u1-fix", "Alice's invoices go to Marker Ltd.", GONE, scope="always", type="correction"),
        ]
    )
    other.add([fact("other", "Bob lives at 3 Quay Street.", KEPT)])
    store.supersede("u1-home", fact("u1-home-2", "Alice lives at 14 Marker Lane.", GONE))
    assert [v.id for v in store.history("u1-home-2")] == ["u1-home", "u1-home-2"]
    assert sorted(e["id"] for e in store.entries(GONE)) == ["u1-fix", "u1-home", "u1-home-2"]
    assert rows_holding(db, table, "Marker") == 3

    assert store.forget(namespace=GONE) == 3

    # search and recall (the vector stores' with no namespace filter: the
    # subject would show if any row were left)
    selection = store.select(POOLS, {"message": "where does alice live marker lane"}, now=NOW)
    assert not [c for c in selection.chosen if "Marker" in c.entry["content"]]
    # history and reads by id
    for gone in ("u1-home", "u1-home-2", "u1-fix"):
        assert store.get(gone) is None
        with pytest.raises(UnknownEntryError):
            store.history(gone)
    # export of the subject
    out = io.StringIO()
    assert dump_store(store.entries(GONE), out) == 0 and out.getvalue() == ""
    # the table: no row (and so no vector) holds any of it; the other subject stays
    assert rows_holding(db, table, "Marker") == 0
    if table == "store":  # LangGraph keeps the vectors in a table of their own
        assert rows_holding(db, "store_vectors", GONE) == 0 and rows_holding(db, "store_vectors", KEPT) == 1
    assert [e["id"] for e in other.entries(KEPT)] == ["other"]
    assert store.forget(namespace=GONE) == 0


def test_forgetting_a_hostile_namespace_never_puts_it_in_sql_text(vector_memory):
    memory_for, db, table = vector_memory
    store = memory_for(GONE)
    store.add([fact("other", "Bob lives at 3 Quay Street.", KEPT), fact("u1", "Alice is here.", GONE)])
    statements = []

    def capture(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    sqlalchemy.event.listen(sqlalchemy.engine.Engine, "before_cursor_execute", capture)
    try:
        assert store.forget(namespace=KEPT) == 1
    finally:
        sqlalchemy.event.remove(sqlalchemy.engine.Engine, "before_cursor_execute", capture)
    assert statements and not [s for s in statements if "brien" in s]
    assert [e["id"] for e in store.entries(GONE)] == ["u1"] and store.entries(KEPT) == []
