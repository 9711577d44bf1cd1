"""The first-use setup keeps a vector store's rows whole: over ``PGVector``
and LlamaIndex's ``PGVectorStore`` it sets the table's
``toast_tuple_target`` (once, only where the table has none of its own,
never with ``setup_store=False``), so a row written afterwards keeps its
vector in its page and a pool read through the filter index computes each
distance without a second lookup out of line. Rows written before it keep
their layout. A real Postgres, a fresh database per test; the layout read
from the table's TOAST relation (empty: every row whole).
"""

from __future__ import annotations

import base64
import random
from typing import Any, List

import psycopg
import pytest
import sqlalchemy
from langchain_core.documents import Document
from pg_embeddings import DIMS, HashedNgramEmbeddings, HashedNgramLlamaEmbedding
from pg_server import Database

from poolsplit_adapters import Pool, Visibility
from poolsplit_adapters.stores.postgres import ensure_filter_index, filter_index_name, whole_row_target

langchain_postgres = pytest.importorskip("langchain_postgres")
from poolsplit_adapters.langchain import PoolSplitRetriever  # noqa: E402

#: Each text carries 1,600 characters of noise (compressed, still ~1.2 kB):
#: with its vector (1 kB at the suite's 256 dimensions; ``PGVector`` keeps
#: one table class per process) a row is past Postgres' ~2 kB threshold,
#: so by default its vector, the largest value that may move, goes out of line.
NOISE = 1600
POOLS = [Pool("corrections", 0, 0, ("correction",)), Pool("content", 2000, 10, ("fact",))]
TABLE = "langchain_pg_embedding"
#: What the setup sets on an 8 kB-page server (the embedded one).
WHOLE = "toast_tuple_target=%d" % whole_row_target(8192)


def documents(prefix: str, n: int = 12) -> List[Document]:
    noise = random.Random(prefix)
    facts = [
        Document(
            "deploy checkout staging note %d %s" % (i, base64.b64encode(noise.randbytes(NOISE * 3 // 4)).decode()),
            id="%s-%02d" % (prefix, i),
            metadata={"type": "fact", "namespace": "t"},
        )
        for i in range(n)
    ]
    fix = Document(
        "Quote amounts in cents.",
        id="%s-fix" % prefix,
        metadata={"type": "correction", "scope": "always", "namespace": "t"},
    )
    return facts + [fix]


def make_store(engine: Any) -> Any:
    return langchain_postgres.PGVector(HashedNgramEmbeddings(DIMS), connection=engine, embedding_length=DIMS)


def retriever(store: Any, **kwargs: Any) -> PoolSplitRetriever:
    return PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=5, visibility=Visibility(namespace="t"), **kwargs)


def options(db: Database, table: str = TABLE) -> List[str]:
    """The table's options (``reloptions``), e.g. ``['toast_tuple_target=8160']``."""
    with psycopg.connect(db.conninfo) as conn:
        row = conn.execute("SELECT reloptions FROM pg_class WHERE oid = to_regclass(%s)", (table,)).fetchone()
    return list(row[0] or []) if row is not None else []


def out_of_line(db: Database, table: str = TABLE) -> int:
    """Bytes the table keeps out of line (its TOAST relation's size)."""
    with psycopg.connect(db.conninfo) as conn:
        row = conn.execute(
            "SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE oid = to_regclass(%s)", (table,)
        ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def engine(pg_database: Database) -> Any:
    engine = sqlalchemy.create_engine(pg_database.url)
    yield engine
    engine.dispose()


def test_rows_written_after_the_first_use_keep_their_vector_in_the_row(pg_database: Database, engine: Any):
    store = make_store(engine)
    first = retriever(store)
    first.invoke("hello")  # an application starting: the first use, on the empty store
    assert first._recall is not None and first._recall.setup.created is True
    assert options(pg_database) == [WHOLE]
    store.add_documents(documents("a"))
    assert out_of_line(pg_database) == 0
    found = retriever(make_store(engine)).invoke("deploy checkout staging note 3")
    ids = [d.id for d in found]
    assert "a-fix" in ids and any(i.startswith("a-0") for i in ids)


def test_without_the_setup_a_vector_goes_out_of_line(pg_database: Database, engine: Any):
    """The premise: nothing set, the same rows keep their vectors out of
    line; and ``setup_store=False`` sets nothing."""
    store = make_store(engine)
    retriever(store, setup_store=False).invoke("hello")
    store.add_documents(documents("a"))
    assert options(pg_database) == []
    assert out_of_line(pg_database) > 0


def test_rows_written_before_keep_their_layout_and_a_target_of_ones_own_is_kept(pg_database: Database, engine: Any):
    store = make_store(engine)
    store.add_documents(documents("a"))
    before = out_of_line(pg_database)
    assert before > 0
    with psycopg.connect(pg_database.conninfo, autocommit=True) as conn:
        conn.execute("ALTER TABLE langchain_pg_embedding SET (toast_tuple_target = 4000)")
    assert ensure_filter_index(store) is True  # the index is made; the table's own target stays
    assert options(pg_database) == ["toast_tuple_target=4000"]
    assert out_of_line(pg_database) == before


def test_the_setting_is_sent_once(pg_database: Database, engine: Any):
    sent: List[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        if statement.startswith("ALTER TABLE"):
            sent.append(statement)

    sqlalchemy.event.listen(engine, "before_cursor_execute", seen)
    store = make_store(engine)
    assert ensure_filter_index(store) is True
    assert ensure_filter_index(make_store(engine)) is False
    assert sent == ["ALTER TABLE %s SET (toast_tuple_target = %d)" % (TABLE, whole_row_target(8192))]


llama_postgres = pytest.importorskip("llama_index.vector_stores.postgres")


def llama_store(db: Database, table: str) -> Any:
    return llama_postgres.PGVectorStore(
        connection_string=db.url, async_connection_string=db.url, table_name=table, embed_dim=DIMS
    )


@pytest.mark.parametrize("table", ["memory", "mem%", "mem_%x", "mem%%y"])
def test_llama_index_first_use_finds_what_it_set_whatever_the_table_name(pg_database: Database, table: str):
    """LlamaIndex's table ``data_<table_name>``: the first use makes the
    index and the setting, the second finds both and sends nothing, also
    when the name holds ``%`` or ``_`` (looked up as a bound value, where
    ``%`` is itself: doubled, as the dialect quotes it for SQL text, the
    lookup missed and every first use set the table again)."""
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    store = llama_store(pg_database, table)
    sent: List[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        if statement.lstrip().upper().startswith(("ALTER TABLE", "CREATE INDEX", "ANALYZE")):
            sent.append(statement.split(" ")[0])

    try:
        store._initialize()
        sqlalchemy.event.listen(store._engine, "before_cursor_execute", seen)
        assert ensure_filter_index(store) is True
        assert sent == ["ALTER", "CREATE", "ANALYZE"]
        sent.clear()
        assert ensure_filter_index(store) is False
        assert sent == []
        data = "data_%s" % table.lower()
        assert options(pg_database, '"%s"' % data) == [WHOLE]
        with psycopg.connect(pg_database.conninfo) as conn:
            index = conn.execute("SELECT to_regclass(%s)", ('"%s"' % filter_index_name(data),)).fetchone()
        assert index is not None and index[0] is not None
        nodes = [TextNode(text=d.page_content, id_=d.id, metadata={"type": "fact"}) for d in documents("n", 5)]
        VectorStoreIndex.from_vector_store(store, embed_model=HashedNgramLlamaEmbedding(dims=DIMS)).insert_nodes(nodes)
        assert out_of_line(pg_database, '"%s"' % data) == 0
    finally:
        if store._engine is not None:
            store._engine.dispose()


def test_whole_row_target_is_the_largest_a_page_allows():
    assert whole_row_target(8192) == 8160
    assert whole_row_target(32768) == 32736
