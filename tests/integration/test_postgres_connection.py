"""One Postgres setting for every store: ``PostgresConnection`` takes one URL
(SQLAlchemy's form, libpq's URI or its ``key=value`` form) and each of the
four stores, given its own form, writes and reads the same database.

Before: ``PGVector``, LlamaIndex's ``PGVectorStore`` and langchain-postgres
v2's ``PGEngine`` wanted ``postgresql+psycopg://``, LangGraph's
``PostgresStore`` a libpq string; a deployment kept two settings in step.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

import psycopg
import pytest
from pg_embeddings import DIMS, HashedNgramEmbeddings, HashedNgramLlamaEmbedding
from pg_server import Database

from poolsplit_adapters.stores.postgres import PostgresConnection

FORMS: Dict[str, Callable[[Database], str]] = {
    "sqlalchemy url": lambda db: db.url,
    "libpq keywords": lambda db: db.conninfo,
    "libpq uri": lambda db: db.url.replace("postgresql+psycopg://", "postgresql://"),
}


def count(database: Database, sql: str) -> int:
    with psycopg.connect(database.conninfo) as conn:
        row = conn.execute(sql).fetchone()
        assert row is not None
        return int(row[0])


@pytest.mark.parametrize("form", list(FORMS))
async def test_one_setting_reaches_the_same_database_through_every_store(pg_database, form):
    from langchain_core.documents import Document
    from langchain_postgres import Column, PGEngine, PGVector, PGVectorStore
    from langgraph.store.postgres import PostgresStore
    from llama_index.core.schema import TextNode
    from llama_index.vector_stores.postgres import PGVectorStore as LlamaPGVectorStore

    pg = PostgresConnection(FORMS[form](pg_database))

    lc = PGVector(HashedNgramEmbeddings(), connection=pg.sqlalchemy_url, embedding_length=DIMS)
    lc.add_documents([Document("Quote in cents.", id="lc-1", metadata={"type": "note"})])
    assert [d.id for d in lc.similarity_search("cents", k=1)] == ["lc-1"]

    llama: Any = LlamaPGVectorStore(**pg.llama_index, table_name="memory", embed_dim=DIMS)
    node = TextNode(text="Quote in cents.", id_="li-1", embedding=HashedNgramLlamaEmbedding().get_text_embedding("x"))
    llama.add([node])
    assert [n.node_id for n in await llama.aget_nodes(node_ids=["li-1"])] == ["li-1"]  # the async URL too
    await llama.close()

    with PostgresStore.from_conn_string(pg.conninfo) as graph:
        graph.setup()
        graph.put(("memories", "u1"), "lg-1", {"content": "Quote in cents."})
        assert graph.get(("memories", "u1"), "lg-1") is not None

    engine = PGEngine.from_connection_string(pg.sqlalchemy_url)
    engine.init_vectorstore_table("memory_v2", DIMS, id_column=Column("langchain_id", "TEXT", nullable=False))
    v2 = PGVectorStore.create_sync(engine, embedding_service=HashedNgramEmbeddings(), table_name="memory_v2")
    v2.add_documents([Document("Quote in cents.", id="v2-1")])
    assert [d.id for d in v2.get_by_ids(["v2-1"])] == ["v2-1"]
    engine._run_as_sync(engine.close())

    assert count(pg_database, "SELECT count(*) FROM langchain_pg_embedding") == 1
    assert count(pg_database, "SELECT count(*) FROM data_memory") == 1
    assert count(pg_database, "SELECT count(*) FROM store") == 1
    assert count(pg_database, "SELECT count(*) FROM memory_v2") == 1
