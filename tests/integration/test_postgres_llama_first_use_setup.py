"""LlamaIndex's ``PGVectorStore`` under the retriever: its first search
creates the store's filter index (once), a second use creates nothing,
``setup_store=False`` creates nothing, and the results are the same either
way. The same rule as over LangChain's ``PGVector``
(``test_postgres_first_use_setup.py``, where concurrent first use is tested:
one lock serves both stores). A real Postgres, a fresh database per test; the
DDL counted by listening on the store's engines.
"""

from __future__ import annotations

from typing import Any, Iterator, List

import psycopg
import pytest
import sqlalchemy
from filter_index_plan import QUERY, K
from pg_embeddings import DIMS, HashedNgramLlamaEmbedding
from pg_server import Database

from poolsplit_adapters import Pool, Visibility
from poolsplit_adapters.stores.postgres import filter_index_name

postgres = pytest.importorskip("llama_index.vector_stores.postgres")
from llama_index.core import VectorStoreIndex  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402

from poolsplit_adapters.llama_index import PoolSplitRetriever  # noqa: E402

INDEX = filter_index_name("data_memory")
#: The filter-index plan's pools, the content pool on facts: a pool that
#: admits "note" adds a side search for untyped entries, which without the
#: index cannot say "no type" (it returns the nearest of any type), so the
#: candidates the scorer ranks among would differ by design.
POOLS = [
    Pool("corrections", 0, 0, ("correction",)),
    Pool("content", 200, 3, ("fact",)),
    Pool("skills", 10_000, 100, ("skill",)),
    Pool("growth", 10_000, 100, ("growth",)),
]
QUERIES = [QUERY, "audit the refund ledger", "growth on the staging service"]


def nodes() -> List[TextNode]:
    items = [
        ("fix-0", "Quote amounts in cents.", {"type": "correction", "scope": "always"}),
        ("fix-1", "Never force-push to main.", {"type": "correction", "scope": "always"}),
        ("fact-budget", "Quarterly budget spreadsheet cells.", {"type": "fact"}),
    ]
    # Similarity falls strictly with each entry's number (one more " again"
    # each): no ties, so "the same nodes" has one answer.
    items += [("fact-%02d" % i, "deploy checkout staging note" + " again" * i, {"type": "fact"}) for i in range(30)]
    items += [("skill-%d" % i, "skill audit ledger refund" + " again" * i, {"type": "skill"}) for i in range(6)]
    items += [("growth-%d" % i, "growth service staging" + " again" * i, {"type": "growth"}) for i in range(2)]
    for _, _, metadata in items:
        metadata["namespace"] = "t"
    items += [
        ("other-%02d" % i, "deploy checkout skill %d" % i, {"type": "skill", "namespace": "o"}) for i in range(15)
    ]
    out = [TextNode(text=text, id_=node_id, metadata=dict(metadata)) for node_id, text, metadata in items]
    for node in out:
        node.excluded_embed_metadata_keys = list(node.metadata)
    return out


def make_store(database: Database) -> Any:
    return postgres.PGVectorStore(
        connection_string=database.url, async_connection_string=database.url, table_name="memory", embed_dim=DIMS
    )


class DDL:
    """The DDL statements sent through the store's sync and async engines."""

    def __init__(self, store: Any) -> None:
        store._initialize()
        self.sent: List[str] = []
        for engine in (store._engine, store._async_engine.sync_engine):
            sqlalchemy.event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        if statement.lstrip().upper().startswith(("CREATE INDEX IF NOT EXISTS", "ANALYZE")):
            self.sent.append(statement.split("(")[0].strip())


def retriever(store: Any, **kwargs: Any) -> PoolSplitRetriever:
    index = VectorStoreIndex.from_vector_store(store, embed_model=HashedNgramLlamaEmbedding())
    return PoolSplitRetriever.from_vector_store_index(
        index, POOLS, fetch_k=K, visibility=Visibility(namespace="t"), **kwargs
    )


def filter_indexes(db: Database) -> List[str]:
    with psycopg.connect(db.conninfo) as conn:
        rows = conn.execute("SELECT indexname FROM pg_indexes WHERE indexname = %s", (INDEX,)).fetchall()
    return [r[0] for r in rows]


def ids(found: List[Any]) -> List[str]:
    return [n.node.node_id for n in found]


@pytest.fixture
def loaded(pg_database: Database) -> Iterator[Any]:
    """The nodes in ``data_memory``, no HNSW index (both ways exact), no filter index."""
    store = make_store(pg_database)
    VectorStoreIndex.from_vector_store(store, embed_model=HashedNgramLlamaEmbedding()).insert_nodes(nodes())
    yield store
    if store._engine is not None:
        store._engine.dispose()


def test_the_first_use_creates_the_index_once_and_opting_out_creates_nothing(pg_database, loaded):
    assert filter_indexes(pg_database) == []
    ddl = DDL(loaded)
    without = retriever(loaded, setup_store=False)
    before = [ids(without.retrieve(q)) for q in QUERIES]
    assert ddl.sent == [] and filter_indexes(pg_database) == []

    first = retriever(loaded)
    after = [ids(first.retrieve(q)) for q in QUERIES]
    assert [s.split()[0] for s in ddl.sent] == ["CREATE", "ANALYZE"]
    assert filter_indexes(pg_database) == [INDEX]
    assert after == before  # the same nodes with and without the index
    assert all(got[:2] == ["fix-0", "fix-1"] for got in after)
    assert not [i for got in after for i in got if i.startswith("other-")]

    ddl.sent.clear()
    second = retriever(loaded)
    assert [ids(second.retrieve(q)) for q in QUERIES] == before
    assert ddl.sent == []
    assert second._recall is not None and second._recall.setup.created is False


@pytest.mark.filterwarnings("ignore::poolsplit_adapters.poolsplit.UnadmittedCorrectionWarning")
def test_another_type_key_creates_nothing(pg_database, loaded):
    """The index serves the ``type`` key only: a retriever on another key
    searches as without it, so its first use creates nothing (the nodes
    carry no ``kind``: their corrections' type is then unadmitted, which is
    beside the point here)."""
    retriever(loaded, type_key="kind").retrieve(QUERY)
    assert filter_indexes(pg_database) == []


async def test_the_async_first_use_creates_the_index_once(pg_database, loaded):
    ddl = DDL(loaded)
    got = ids(await retriever(loaded).aretrieve(QUERY))
    assert [s.split()[0] for s in ddl.sent] == ["CREATE", "ANALYZE"]
    ddl.sent.clear()
    assert ids(await retriever(loaded).aretrieve(QUERY)) == got
    assert ddl.sent == []
    assert filter_indexes(pg_database) == [INDEX]
    assert got == ids(retriever(loaded, setup_store=False).retrieve(QUERY))
