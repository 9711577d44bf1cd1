""":func:`install_filter_index` over LlamaIndex's ``PGVectorStore``: a pool
whose filter matches few rows is read through the index and ordered exactly;
a pool with many still walks the HNSW index (the store's own query).

The same premise as ``test_postgres_filter_index.py`` (LangChain's
``PGVector``), on the store's table ``data_<table_name>`` and its
``metadata_`` column: sessions with sequential scans off and pgvector's
iterative scan cut to one batch (``hnsw.max_scan_tuples = 1``, so an HNSW
page comes back short and has to be completed), the store's own HNSW index
(``hnsw_kwargs``). Exact expected nodes, computed in Python.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest
import sqlalchemy
from filter_index_plan import GROWTH, NOTES, OTHER, POOLS, QUERY, SHORT_SCANS, SKILLS, K
from pg_embeddings import DIMS, HashedNgramLlamaEmbedding, hashed_ngrams
from pg_server import Database

from poolsplit_adapters import Visibility
from poolsplit_adapters.recall import RecallPlan, Search
from poolsplit_adapters.stores.postgres import filter_first_bound, install_filter_index

postgres = pytest.importorskip("llama_index.vector_stores.postgres")

from llama_index.core import VectorStoreIndex  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402

from poolsplit_adapters.llama_index import PoolSplitRetriever  # noqa: E402
from poolsplit_adapters.stores.vectorstores.llama_index_search import PGVectorStoreSearch  # noqa: E402

HNSW = {"hnsw_m": 16, "hnsw_ef_construction": 64, "hnsw_ef_search": 40, "hnsw_dist_method": "vector_cosine_ops"}
#: Farther from the query than anything else (cosine distance above 1,
#: beyond an HNSW scan's first batch), each skill at its own distance (the
#: exact order has no ties; the more " again", the nearer).
SKILL = "skill audit ledger refund reconcile invoice tax report payroll vendor ledger audit refund staging"


def corpus() -> List[Tuple[str, str, Dict[str, Any]]]:
    """(id, text, metadata): tenant ``t`` has many notes near the query, a
    dozen skills and three growth notes far from it, two corrections, one
    untyped note; tenant ``o`` many skills near the query. Similarity falls
    strictly with each entry's number (one more " again" each): no ties."""
    items: List[Tuple[str, str, Dict[str, Any]]] = [
        ("fix-0", "Quote amounts in cents.", {"type": "correction", "scope": "always"}),
        ("fix-1", "Never force-push to main.", {"type": "correction", "scope": "always"}),
        ("untyped", "Quarterly budget spreadsheet cells.", {}),
    ]
    items += [("note-%03d" % i, "deploy checkout staging note" + " again" * i, {"type": "note"}) for i in range(NOTES)]
    items += [("skill-%02d" % i, SKILL + " again" * i, {"type": "skill"}) for i in range(SKILLS)]
    items += [("growth-%d" % i, "growth service staging" + " again" * i, {"type": "growth"}) for i in range(GROWTH)]
    for _, _, metadata in items:
        metadata["namespace"] = "t"
    items += [
        ("other-%03d" % i, "deploy checkout " + " again" * i, {"type": "skill", "namespace": "o"}) for i in range(OTHER)
    ]
    return items


def make_store(database: Database, table: str = "memory", **engine: Any) -> Any:
    return postgres.PGVectorStore(
        connection_string=database.url,
        async_connection_string=database.url,
        table_name=table,
        embed_dim=DIMS,
        hnsw_kwargs=dict(HNSW),
        **engine,
    )


def dispose(store: Any) -> None:
    if store._engine is not None:  # the store's own close() is async-only
        store._engine.dispose()


@pytest.fixture
def loaded(pg_database: Database) -> Iterator[Any]:
    """The corpus in ``data_memory`` (the store's own HNSW index), analyzed."""
    store = make_store(pg_database)
    nodes = [TextNode(text=text, id_=node_id, metadata=dict(metadata)) for node_id, text, metadata in corpus()]
    for node in nodes:
        node.excluded_embed_metadata_keys = list(node.metadata)
    VectorStoreIndex.from_vector_store(store, embed_model=HashedNgramLlamaEmbedding()).insert_nodes(nodes)
    with store._engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE data_memory")
    yield store
    dispose(store)


@pytest.fixture
def short(pg_database: Database, loaded: Any) -> Iterator[Any]:
    """The loaded table, on sessions that must use an index and cut HNSW to one batch."""
    store = make_store(pg_database, create_engine_kwargs={"connect_args": SHORT_SCANS})
    yield store
    dispose(store)


@pytest.fixture
def indexed(loaded: Any, short: Any) -> Any:
    """:func:`short`, the filter index installed."""
    install_filter_index(loaded)
    return short


def exact_top(prefix: str, k: int) -> List[str]:
    """The ``k`` nodes of ``prefix`` in tenant ``t`` nearest the query, by cosine in Python."""
    query = hashed_ngrams(QUERY)

    def distance(text: str) -> float:
        vec = hashed_ngrams(text)
        return 1.0 - sum(a * b for a, b in zip(query, vec)) / math.sqrt(sum(v * v for v in vec))

    mine = [(distance(text), i) for i, text, m in corpus() if i.startswith(prefix) and m["namespace"] == "t"]
    return [i for _, i in sorted(mine)][:k]


def by_label() -> Dict[str, Search]:
    return {s.label: s for s in RecallPlan(POOLS, fetch_k=K).searches(Visibility(namespace="t"))}


def run(store: Any, search: Search, type_key: str = "type") -> Tuple[List[str], bool, List[str]]:
    """(node ids, read through the filter index, searches completed) of one search."""
    runner = PGVectorStoreSearch(store, type_key)
    rows = runner.rows(search, hashed_ngrams(QUERY))
    return [r.node_id for r in rows], runner.filtered(search, rows), runner.completed


def index_names(store: Any) -> List[str]:
    with store._engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT tablename || ':' || indexname || ':' || indexdef FROM pg_indexes"
            " WHERE indexname LIKE 'poolsplit_pool_filter%%' ORDER BY 1"
        )
        return list(rows.scalars())


def test_install_filter_index_puts_one_index_on_each_table(pg_database: Database, loaded: Any):
    install_filter_index(loaded)
    install_filter_index(loaded)  # again: harmless
    other = make_store(pg_database, table="other")
    try:
        install_filter_index(other)  # a second table of the same schema gets its own
        found = index_names(loaded)
    finally:
        dispose(other)
    assert [row.split(":")[:2] for row in found] == [
        ["data_memory", "poolsplit_pool_filter_data_memory"],
        ["data_other", "poolsplit_pool_filter_data_other"],
    ]
    assert "'namespace'" in found[0] and "'type'" in found[0] and "'scope'" in found[0] and "metadata_" in found[0]


def test_without_the_index_a_rare_pools_short_hnsw_page_is_completed(short: Any):
    """The premise: without the filter index the rare pool walks HNSW, comes
    back short (one batch) and needs the exact completion."""
    found, filtered, completed = run(short, by_label()["pool:skills"])
    assert (found, filtered, completed) == (exact_top("skill-", K), False, ["pool:skills"])


def test_a_rare_pool_is_read_through_the_filter_index_exactly(indexed: Any):
    searches = by_label()
    assert run(indexed, searches["pool:skills"]) == (exact_top("skill-", K), True, [])
    # Fewer rows than k: the whole type, and no completion (the page is exact already).
    assert run(indexed, searches["pool:growth"]) == (["growth-0", "growth-1", "growth-2"], True, [])


def test_a_dense_pool_still_walks_the_hnsw_index(indexed: Any):
    """300 notes > filter_first_bound(5, 618): the store's query through HNSW
    (the notes are the query's nearest, so its first batch holds k)."""
    assert filter_first_bound(K, len(corpus())) < NOTES
    found, filtered, _ = run(indexed, by_label()["pool:content"])
    assert (found, filtered) == (exact_top("note-", K), False)


def test_untyped_entries_are_found_exactly_through_the_index(indexed: Any):
    assert run(indexed, by_label()["pool:content:untyped"]) == (["untyped"], True, [])


def test_another_type_key_searches_as_without_the_index(indexed: Any):
    """The index serves ``type`` only: with another key the search walks HNSW and is completed."""
    search = Search("pool:skills", K, types=("skill",), namespaces=("t",), pool="skills")
    found, filtered, completed = run(indexed, search, type_key="kind")
    assert (found, filtered, completed) == ([], False, ["pool:skills"])  # no node has a "kind"


def test_the_retriever_over_the_indexed_store_loads_every_correction_and_the_rare_pools(indexed: Any):
    index = VectorStoreIndex.from_vector_store(indexed, embed_model=HashedNgramLlamaEmbedding())
    retriever = PoolSplitRetriever.from_vector_store_index(index, POOLS, fetch_k=K)
    nodes, selection = retriever.retrieve_with_selection(QUERY, namespace="t")
    got = [n.node.node_id for n in nodes]
    assert got[:2] == ["fix-0", "fix-1"]
    seen = [c.entry["id"] for c in selection.chosen] + [d.entry["id"] for d in selection.dropped]
    assert sorted(i for i in seen if i.startswith("skill-")) == ["skill-%02d" % i for i in range(SKILLS)]
    assert sorted(i for i in seen if i.startswith("growth-")) == ["growth-0", "growth-1", "growth-2"]
    assert not [i for i in seen if i.startswith("other-")]  # the other tenant's skills stay out
    assert selection.notes["recall"]["store_ran_out"] == ["skills", "growth"]


async def test_the_async_search_reads_a_rare_pool_through_the_index(indexed: Any):
    runner = PGVectorStoreSearch(indexed)
    search = by_label()["pool:skills"]
    rows = await runner.arows(search, hashed_ngrams(QUERY))
    assert [r.node_id for r in rows] == exact_top("skill-", K)
    assert runner.filtered(search, rows) and runner.completed == []
    nodes = await runner.asearch(search, hashed_ngrams(QUERY))
    assert [n.node.node_id for n in nodes] == exact_top("skill-", K)
    assert all(n.score is not None and "poolsplit_exact" not in n.node.metadata for n in nodes)
    if indexed._async_engine is not None:
        await indexed._async_engine.dispose()


@pytest.mark.parametrize(
    "field, value",
    [("namespace", "t'); DROP TABLE data_memory; --"), ("type", "skill' OR '1'='1")],
)
def test_hostile_values_stay_parameters_through_the_filter_first_statement(indexed: Any, field: str, value: str):
    types: Optional[Tuple[str, ...]] = (value,) if field == "type" else ("skill",)
    namespaces = (value,) if field == "namespace" else ("t",)
    found, _, _ = run(indexed, Search("pool:x", K, types=types, namespaces=namespaces, pool="x"))
    assert found == []
    assert run(indexed, by_label()["pool:skills"]) == (exact_top("skill-", K), True, [])
    with indexed._engine.connect() as conn:
        assert conn.execute(sqlalchemy.text("SELECT count(*) FROM data_memory")).scalar() == len(corpus())


async def test_a_pool_found_large_skips_its_count_on_the_next_call_sync_and_async(indexed: Any):
    """PGVectorStore's searches follow PGVector's rule for large filters: the
    dense pool's count said "many", so its next searches (sync and async)
    send the bound that reads no row and walk HNSW at once, with the same
    page; the rare pool is counted and read exactly every time."""
    from poolsplit_adapters.stores.postgres import SKIP_COUNT, LargeFilters

    bounds: List[Any] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        if isinstance(parameters, dict):
            bounds.extend(v for k, v in parameters.items() if k.startswith("bound"))

    large = LargeFilters()
    runner = PGVectorStoreSearch(indexed, large_filters=large)
    dense, rare = by_label()["pool:content"], by_label()["pool:skills"]
    bound = filter_first_bound(K, len(corpus()))
    indexed._initialize()  # its engines exist after it
    engines = [indexed._engine] + ([indexed._async_engine.sync_engine] if indexed._async_engine is not None else [])
    for engine in engines:
        sqlalchemy.event.listen(engine, "before_cursor_execute", capture)
    try:
        pages = []
        for call in range(3):
            bounds.clear()
            if call < 2:
                found = [runner.rows(s, hashed_ngrams(QUERY)) for s in (dense, rare)]
            else:
                found = [await runner.arows(s, hashed_ngrams(QUERY)) for s in (dense, rare)]
            pages.append([[r.node_id for r in rows] for rows in found])
            assert bounds == ([bound, bound] if call == 0 else [SKIP_COUNT, bound])
            assert [runner.filtered(s, rows) for s, rows in zip((dense, rare), found)] == [False, True]
        assert pages[0] == pages[1] == pages[2] == [exact_top("note-", K), exact_top("skill-", K)]
        assert runner.completed == []
    finally:
        for engine in engines:
            sqlalchemy.event.remove(engine, "before_cursor_execute", capture)
        if indexed._async_engine is not None:
            await indexed._async_engine.dispose()


def test_a_large_filter_made_small_by_deletions_is_still_found_whole_within_its_window(indexed: Any):
    """As over PGVector: within the window the search skips the count, its
    HNSW page comes back short (one batch) and is completed exactly; after
    the window the count finds the notes left few and reads them exactly."""
    from poolsplit_adapters.stores.postgres import LargeFilters

    now = [0.0]
    runner = PGVectorStoreSearch(indexed, large_filters=LargeFilters(seconds=60.0, clock=lambda: now[0]))
    dense = by_label()["pool:content"]
    rows = runner.rows(dense, hashed_ngrams(QUERY))
    assert not runner.filtered(dense, rows) and len(rows) == K
    left = ["note-%03d" % i for i in range(NOTES - 3, NOTES)]  # the three farthest from the query
    indexed.delete_nodes(node_ids=["note-%03d" % i for i in range(NOTES - 3)])
    rows = runner.rows(dense, hashed_ngrams(QUERY))
    assert [r.node_id for r in rows] == left and runner.completed == ["pool:content"]
    assert not runner.filtered(dense, rows)
    now[0] = 61.0
    rows = runner.rows(dense, hashed_ngrams(QUERY))
    assert [r.node_id for r in rows] == left and runner.filtered(dense, rows)
    assert runner.completed == ["pool:content"]  # no second completion: the page was exact


def test_the_retriever_keeps_its_memory_of_large_filters_between_calls(indexed: Any):
    from poolsplit_adapters.stores.postgres import SKIP_COUNT

    index = VectorStoreIndex.from_vector_store(indexed, embed_model=HashedNgramLlamaEmbedding())
    retriever = PoolSplitRetriever.from_vector_store_index(
        index, POOLS, fetch_k=K, visibility=Visibility(namespace="t")
    )
    first = [n.node.node_id for n in retriever.retrieve(QUERY)]
    large = retriever._recall.large_filters  # type: ignore[union-attr]
    assert large.bound(by_label()["pool:content"], len(corpus())) == SKIP_COUNT
    assert large.bound(by_label()["pool:skills"], len(corpus())) == filter_first_bound(K, len(corpus()))
    assert [n.node.node_id for n in retriever.retrieve(QUERY)] == first


def test_a_table_name_holding_percent_finds_its_filter_index(pg_database: Database):
    """The index name travels as a bound parameter, where ``%`` is itself
    (the dialect doubles it only for SQL text): doubled, the search looked
    for an index that is not there and never read through it."""
    store = make_store(pg_database, table="mem%")
    try:
        nodes = [TextNode(text=text, id_=node_id, metadata=dict(metadata)) for node_id, text, metadata in corpus()]
        for node in nodes:
            node.excluded_embed_metadata_keys = list(node.metadata)
        VectorStoreIndex.from_vector_store(store, embed_model=HashedNgramLlamaEmbedding()).insert_nodes(nodes)
        install_filter_index(store)
        found, filtered, _ = run(store, by_label()["pool:skills"])
        assert filtered and found == exact_top("skill-", K)
    finally:
        dispose(store)
