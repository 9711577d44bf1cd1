"""A pool search that an HNSW index returns short is not "the store ran out".

A filtered HNSW scan looks at ``hnsw.ef_search`` nearest rows and then
filters; pgvector's iterative scan (>= 0.8) goes on scanning, but only up to
``hnsw.max_scan_tuples``. Either way a rare type's search can come back with
fewer rows than asked while the table holds more, and the recall then
reported that pool as having nothing more (``notes["recall"]["store_ran_out"]``)
with a few of its rows loaded. Here the index is forced (no sequential scan)
and the iterative scan stopped after its first batch
(``hnsw.max_scan_tuples = 1``), on a real Postgres: the store's own filtered
search comes back short (the premise), and the retriever over it still
recalls every row of the rare type and says it ran out only once it has.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List

import psycopg
import pytest
import sqlalchemy
from langchain_core.documents import Document
from pg_embeddings import DIMS, HashedNgramEmbeddings
from pg_server import Database

from poolsplit_adapters import Pool, Visibility

NOTES, RARE, FEW = 400, 60, 3
#: The index forced, and pgvector's iterative scan cut to its first batch.
SHORT_SCANS = {"options": "-c enable_seqscan=off -c hnsw.max_scan_tuples=1"}
QUERY = "deploy the checkout service to staging"
POOLS = [
    Pool("corrections", 0, 0, ("correction",)),
    Pool("notes", 60, 2, ("note",)),
    Pool("rare", 100_000, 1_000, ("rare",)),  # room for every rare row: recall must find them all
    Pool("few", 100_000, 1_000, ("few",)),  # fewer rows than fetch_k: the store truly runs out
]


def corpus() -> List[Document]:
    words = ["deploy", "checkout", "staging", "ledger", "refund", "cache", "queue", "service", "build", "audit"]
    docs = [Document("Quote amounts in cents.", id="fix-0", metadata={"type": "correction", "scope": "always"})]
    for i in range(NOTES):
        text = " ".join(words[(i * k) % len(words)] for k in range(1, 6)) + " note %d" % i
        docs.append(Document(text, id="note-%03d" % i, metadata={"type": "note", "namespace": "t"}))
    for i in range(RARE):
        docs.append(Document("rare fact %d about the audit ledger" % i, id="rare-%03d" % i, metadata={"type": "rare"}))
    for i in range(FEW):
        docs.append(Document("few item %d" % i, id="few-%d" % i, metadata={"type": "few"}))
    for doc in docs:
        doc.metadata.setdefault("namespace", "t")
    return docs


@pytest.fixture
def store(pg_database: Database) -> Iterator[Any]:
    from langchain_postgres import PGVector

    loader = sqlalchemy.create_engine(pg_database.url)
    PGVector(HashedNgramEmbeddings(), connection=loader, embedding_length=DIMS).add_documents(corpus())
    with loader.begin() as conn:
        conn.exec_driver_sql("CREATE INDEX hnsw ON langchain_pg_embedding USING hnsw (embedding vector_cosine_ops)")
        conn.exec_driver_sql("ANALYZE langchain_pg_embedding")
    loader.dispose()
    engine = sqlalchemy.create_engine(pg_database.url, connect_args=SHORT_SCANS)
    yield PGVector(HashedNgramEmbeddings(), connection=engine, embedding_length=DIMS)
    engine.dispose()


def recall_notes(retriever: Any) -> Dict[str, Any]:
    selection = retriever.last_selection
    assert selection is not None
    return dict(selection.notes["recall"])


def recalled_ids(retriever: Any, prefix: str) -> List[str]:
    selection = retriever.last_selection
    seen = [c.entry["id"] for c in selection.chosen] + [d.entry["id"] for d in selection.dropped]
    return sorted(i for i in seen if i.startswith(prefix))


def test_the_forced_index_returns_a_rare_types_page_short(store):
    """The premise: the store's own filtered search, through the index,
    comes back with fewer rare rows than asked (the table holds 60)."""
    found = store.similarity_search(QUERY, k=20, filter={"type": "rare"})
    assert len(found) < 20


def test_a_short_index_page_is_completed_and_the_store_runs_out_only_when_it_has(store):
    from poolsplit_adapters.langchain import PoolSplitRetriever

    retriever = PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=20, visibility=Visibility(namespace="t"))
    docs = retriever.invoke(QUERY)
    assert recalled_ids(retriever, "rare-") == ["rare-%03d" % i for i in range(RARE)]
    assert recalled_ids(retriever, "few-") == ["few-%d" % i for i in range(FEW)]
    notes = recall_notes(retriever)
    # Both pools loaded all there is: now "ran out" is what the table says.
    assert notes["store_ran_out"] == ["rare", "few"]
    assert notes["fetch_k"]["rare"] > RARE  # grown past what the table holds, then believed
    assert [d.id for d in docs][0] == "fix-0"


async def test_the_async_recall_completes_a_short_page_too(pg_database: Database, store):
    from langchain_postgres import PGVector
    from sqlalchemy.ext.asyncio import create_async_engine

    from poolsplit_adapters.langchain import PoolSplitRetriever

    engine = create_async_engine(pg_database.url, connect_args=SHORT_SCANS)
    try:
        async_store = PGVector(HashedNgramEmbeddings(), connection=engine, embedding_length=DIMS, async_mode=True)
        retriever = PoolSplitRetriever.from_vectorstore(
            async_store, POOLS, fetch_k=20, visibility=Visibility(namespace="t")
        )
        await retriever.ainvoke(QUERY)
        assert recalled_ids(retriever, "rare-") == ["rare-%03d" % i for i in range(RARE)]
        assert recall_notes(retriever)["store_ran_out"] == ["rare", "few"]
    finally:
        await engine.dispose()


def test_llama_index_pgvectorstore_completes_a_short_page_too(pg_database: Database):
    """The same on LlamaIndex's PGVectorStore (its own HNSW index, the same
    forced sessions): every rare node recalled, "ran out" only once true."""
    postgres = pytest.importorskip("llama_index.vector_stores.postgres")
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode
    from pg_embeddings import HashedNgramLlamaEmbedding

    from poolsplit_adapters.llama_index import PoolSplitRetriever

    def make(**engine: Any) -> Any:
        return postgres.PGVectorStore(
            connection_string=pg_database.url,
            async_connection_string=pg_database.url,
            table_name="memory",
            embed_dim=DIMS,
            hnsw_kwargs={"hnsw_m": 16, "hnsw_ef_construction": 64, "hnsw_ef_search": 40},
            **engine,
        )

    loader = make()
    nodes = [TextNode(text=d.page_content, id_=str(d.id), metadata=dict(d.metadata)) for d in corpus()]
    for node in nodes:
        node.excluded_embed_metadata_keys = list(node.metadata)
    VectorStoreIndex.from_vector_store(loader, embed_model=HashedNgramLlamaEmbedding()).insert_nodes(nodes)
    with loader._engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE data_memory")
    loader._engine.dispose()
    store = make(create_engine_kwargs={"connect_args": SHORT_SCANS})
    try:
        index = VectorStoreIndex.from_vector_store(store, embed_model=HashedNgramLlamaEmbedding())
        retriever = PoolSplitRetriever.from_vector_store_index(index, POOLS, fetch_k=20)
        _, selection = retriever.retrieve_with_selection(QUERY, namespace="t")
        seen = [c.entry["id"] for c in selection.chosen] + [d.entry["id"] for d in selection.dropped]
        assert sorted(i for i in seen if i.startswith("rare-")) == ["rare-%03d" % i for i in range(RARE)]
        assert selection.notes["recall"]["store_ran_out"] == ["rare", "few"]
    finally:
        store._engine.dispose()


# -- langchain-postgres v2 PGVectorStore ------------------------------------------------

#: How v2 tables keep metadata: every key in its JSON column (the default),
#: or the keys the recall filters by in columns of their own, the rest in JSON.
V2_LAYOUTS = {"json": (), "columns": ("type", "scope", "namespace")}


@pytest.fixture(params=sorted(V2_LAYOUTS))
def v2_store(request: Any, pg_database: Database) -> Iterator[Any]:
    """A v2 ``PGVectorStore`` with an HNSW index, on a ``PGEngine`` whose
    sessions must use it and whose iterative scan stops after one batch."""
    pytest.importorskip("langchain_postgres.v2.vectorstores")
    from langchain_postgres import Column, PGEngine, PGVectorStore
    from langchain_postgres.v2.indexes import HNSWIndex

    kept = list(V2_LAYOUTS[request.param])

    def make(engine: Any) -> Any:
        return PGVectorStore.create_sync(
            engine, embedding_service=HashedNgramEmbeddings(), table_name="memory_v2", metadata_columns=kept
        )

    loader = PGEngine.from_connection_string(pg_database.url)
    try:
        loader.init_vectorstore_table(
            "memory_v2",
            DIMS,
            id_column=Column("langchain_id", "TEXT", nullable=False),
            metadata_columns=[Column(name, "TEXT") for name in kept],
        )
        store = make(loader)
        docs = corpus()
        store.add_documents(docs, ids=[d.id for d in docs])
        store.apply_vector_index(HNSWIndex())
        with psycopg.connect(pg_database.conninfo, autocommit=True) as conn:
            conn.execute("ANALYZE memory_v2")
    finally:
        loader._run_as_sync(loader.close())
    engine = PGEngine.from_connection_string(pg_database.url, connect_args=SHORT_SCANS)
    yield make(engine)
    engine._run_as_sync(engine.close())


def written(doc: Document) -> Dict[str, Any]:
    """A returned document's metadata as written (our ``poolsplit`` key apart;
    a metadata column the document did not set reads back as None)."""
    return {k: v for k, v in doc.metadata.items() if k != "poolsplit" and v is not None}


def test_the_forced_index_returns_a_rare_types_page_short_on_pgvectorstore_v2(v2_store):
    """The premise on v2: its own filtered search comes back short."""
    found = v2_store.similarity_search(QUERY, k=20, filter={"type": "rare"})
    assert len(found) < 20


def test_pgvectorstore_v2_completes_a_short_page_and_runs_out_only_when_it_has(v2_store):
    from langchain_core.vectorstores import InMemoryVectorStore

    from poolsplit_adapters.langchain import PoolSplitRetriever

    # The store's distances serve the fused relevance, as an in-memory store's cosines do.
    retriever = PoolSplitRetriever.from_vectorstore(
        v2_store, POOLS, fetch_k=20, visibility=Visibility(namespace="t"), store_metric="cosine_distance"
    )
    docs = retriever.invoke(QUERY)
    assert recalled_ids(retriever, "rare-") == ["rare-%03d" % i for i in range(RARE)]
    assert recalled_ids(retriever, "few-") == ["few-%d" % i for i in range(FEW)]
    notes = recall_notes(retriever)
    assert notes["store_ran_out"] == ["rare", "few"]
    assert notes["fetch_k"]["rare"] > RARE
    assert [d.id for d in docs][0] == "fix-0"
    # The completed pools load what an exact in-memory store loads, each
    # document as written (the notes pool's full page is the index's own
    # approximate nearest 20: not compared).
    exact = InMemoryVectorStore(HashedNgramEmbeddings())
    exact.add_documents(corpus())
    oracle = PoolSplitRetriever.from_vectorstore(exact, POOLS, fetch_k=20, visibility=Visibility(namespace="t"))

    def loaded(found: List[Document]) -> List[Any]:
        # By pool and id: within a pool the order follows float32 distances
        # here and float64 cosines there, which tie differently.
        kept = [(d.metadata["poolsplit"]["pool"], d.id, d.page_content, written(d)) for d in found]
        return sorted(k for k in kept if k[3]["type"] != "note")

    assert loaded(docs) == loaded(oracle.invoke(QUERY))
    assert len(loaded(docs)) == 1 + RARE + FEW


async def test_pgvectorstore_v2_async_recall_completes_a_short_page_too(v2_store):
    from poolsplit_adapters.langchain import PoolSplitRetriever

    retriever = PoolSplitRetriever.from_vectorstore(v2_store, POOLS, fetch_k=20, visibility=Visibility(namespace="t"))
    docs = await retriever.ainvoke(QUERY)
    assert recalled_ids(retriever, "rare-") == ["rare-%03d" % i for i in range(RARE)]
    assert recalled_ids(retriever, "few-") == ["few-%d" % i for i in range(FEW)]
    assert recall_notes(retriever)["store_ran_out"] == ["rare", "few"]
    assert [d.id for d in docs][0] == "fix-0"


def v2_like(store: Any, engine: Any, **options: Any) -> Any:
    """Another ``PGVectorStore`` on ``store``'s table (its metadata columns), over ``engine``."""
    from langchain_postgres import PGVectorStore

    from poolsplit_adapters.stores.vectorstores.pgvector_v2_search import StoreTable

    kept = list(StoreTable.of(store).metadata_columns)
    return PGVectorStore.create_sync(
        engine, embedding_service=HashedNgramEmbeddings(), table_name="memory_v2", metadata_columns=kept, **options
    )


def test_a_short_v2_page_is_run_again_exactly_and_the_stores_own_ef_search_stays(pg_database: Database, v2_store):
    """One pool search on its own: the forced index returns the rare page
    short, and the completion is Postgres' exact answer (an engine that
    cannot scan an index gives it: the same ids in order, the same
    distances). A store whose ``index_query_options`` ask ``ef_search =
    1000`` (more than the table holds) gets that, not the sizing's 20: its
    first index batch holds 20 rare rows and nothing is run again."""
    from langchain_postgres import PGEngine
    from langchain_postgres.v2.indexes import HNSWQueryOptions

    from poolsplit_adapters.recall import Search
    from poolsplit_adapters.stores.vectorstores.pgvector_v2_search import PGVectorStorePlanSearch

    search = Search("pool:rare", 20, types=("rare",), namespaces=("t",), pool="rare")
    vector = HashedNgramEmbeddings().embed_query(QUERY)
    seqscan = PGEngine.from_connection_string(pg_database.url, connect_args={"options": "-c enable_indexscan=off"})
    try:
        oracle = v2_like(v2_store, seqscan).similarity_search_with_score_by_vector(
            vector, k=20, filter={"type": "rare"}
        )
    finally:
        seqscan._run_as_sync(seqscan.close())
    wanted = sorted((score, str(doc.id)) for doc, score in oracle)
    assert len(wanted) == 20

    run = PGVectorStorePlanSearch(store=v2_store, search=search, vector=vector, with_scores=True)
    found = run.invoke(QUERY)
    assert run.completed
    assert [(run.scores[str(d.id)], d.id) for d in found] == wanted

    wide = v2_like(v2_store, v2_store._engine, index_query_options=HNSWQueryOptions(ef_search=1000))
    run = PGVectorStorePlanSearch(store=wide, search=search, vector=vector, with_scores=True)
    found = run.invoke(QUERY)
    assert not run.completed
    assert len(found) == 20  # the index's own nearest 20 (approximate, so not compared with the exact ones)
    assert all(d.metadata["type"] == "rare" for d in found)
