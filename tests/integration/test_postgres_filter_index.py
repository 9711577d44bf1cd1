"""With :func:`install_filter_index`, a pool whose filter matches few rows is
read through that index and ordered exactly; a pool with many still walks
the HNSW index.

A filtered HNSW scan visits rows until ``k`` of them match, so a rare type
(one tenant's skills) cost thousands of visited rows per search. With the
btree index on (collection, namespace, type), each pool search first counts
its matching rows (at most ``filter_first_bound(k, N)``), in the same
statement, and when they are few reads just those. Here, on a real Postgres
with sequential scans off and pgvector's iterative scan cut to one batch
(``hnsw.max_scan_tuples = 1``, so an HNSW page comes back short and has to
be completed): a rare pool's page is exact without any completion, a dense
pool's page still comes from the HNSW scan, untyped entries are found
exactly, corrections all load, and no value reaches SQL text.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest
import sqlalchemy
from filter_index_plan import GROWTH, NOTES, OTHER, POOLS, QUERY, SHORT_SCANS, SKILLS, K
from langchain_core.documents import Document
from pg_embeddings import DIMS, HashedNgramEmbeddings, hashed_ngrams
from pg_server import Database

from poolsplit_adapters import Visibility
from poolsplit_adapters.recall import RecallPlan, Search
from poolsplit_adapters.stores.postgres import FILTER_INDEX, filter_first_bound, install_filter_index

langchain_postgres = pytest.importorskip("langchain_postgres")


def corpus() -> List[Document]:
    """Tenant ``t``: many notes, a dozen skills, three growth notes, two
    corrections, one untyped note far from the query (the skills are far
    too: an HNSW scan's first batch holds none); tenant ``o``: many skills
    near the query. Similarity to the query falls strictly with each entry's
    number (one more " again" each), so the exact order has no ties."""
    docs = [
        Document("Quote amounts in cents.", id="fix-0", metadata={"type": "correction", "scope": "always"}),
        Document("Never force-push to main.", id="fix-1", metadata={"type": "correction", "scope": "always"}),
        Document("Quarterly budget spreadsheet cells.", id="untyped", metadata={}),
    ]
    for i in range(NOTES):
        docs.append(
            Document("deploy checkout staging note" + " again" * i, id="note-%03d" % i, metadata={"type": "note"})
        )
    for i in range(SKILLS):
        docs.append(
            Document("skill audit ledger refund" + " again" * i, id="skill-%02d" % i, metadata={"type": "skill"})
        )
    for i in range(GROWTH):
        docs.append(Document("growth service staging" + " again" * i, id="growth-%d" % i, metadata={"type": "growth"}))
    for doc in docs:
        doc.metadata["namespace"] = "t"
    for i in range(OTHER):
        docs.append(
            Document(
                "deploy checkout " + " again" * i, id="other-%03d" % i, metadata={"type": "skill", "namespace": "o"}
            )
        )
    return docs


def make_store(engine: Any) -> Any:
    return langchain_postgres.PGVector(HashedNgramEmbeddings(), connection=engine, embedding_length=DIMS)


@pytest.fixture
def loaded(pg_database: Database) -> Iterator[sqlalchemy.Engine]:
    """The corpus through PGVector, an HNSW index and planner statistics."""
    engine = sqlalchemy.create_engine(pg_database.url)
    make_store(engine).add_documents(corpus())
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE INDEX hnsw ON langchain_pg_embedding USING hnsw (embedding vector_cosine_ops)")
        conn.exec_driver_sql("ANALYZE langchain_pg_embedding")
    yield engine
    engine.dispose()


@pytest.fixture
def indexed(pg_database: Database, loaded: sqlalchemy.Engine) -> Iterator[Any]:
    """The store with the filter index installed, on short-scanning sessions."""
    install_filter_index(make_store(loaded))
    engine = sqlalchemy.create_engine(pg_database.url, connect_args=SHORT_SCANS)
    yield make_store(engine)
    engine.dispose()


def exact_top(prefix: str, k: int) -> List[str]:
    """The ``k`` documents of ``prefix`` nearest the query, by cosine in Python."""
    query = hashed_ngrams(QUERY)

    def distance(doc: Document) -> float:
        vec = hashed_ngrams(doc.page_content)
        return 1.0 - sum(a * b for a, b in zip(query, vec)) / math.sqrt(sum(v * v for v in vec))

    mine = [d for d in corpus() if str(d.id).startswith(prefix) and d.metadata.get("namespace") == "t"]
    return [str(d.id) for d in sorted(mine, key=lambda d: (distance(d), d.id))][:k]


def run(store: Any, searches: List[Search]) -> Any:
    from poolsplit_adapters.stores.vectorstores.pgvector_search import PGVectorPlanSearch

    search = PGVectorPlanSearch(store=store, searches=searches, vector=hashed_ngrams(QUERY))
    search.invoke(QUERY)
    return search


def by_label(searches: List[Search]) -> Dict[str, Search]:
    return {s.label: s for s in searches}


def plan() -> List[Search]:
    return RecallPlan(POOLS, fetch_k=K).searches(Visibility(namespace="t"))


def test_install_filter_index_creates_the_index_once(pg_database: Database, loaded: sqlalchemy.Engine):
    store = make_store(loaded)
    install_filter_index(store)
    install_filter_index(store)  # again: harmless
    with loaded.connect() as conn:
        found = (
            conn.exec_driver_sql(
                "SELECT indexdef FROM pg_indexes WHERE tablename = 'langchain_pg_embedding' AND indexname = %(name)s",
                {"name": FILTER_INDEX},
            )
            .scalars()
            .all()
        )
    assert len(found) == 1
    assert "collection_id" in found[0] and "'namespace'" in found[0] and "'type'" in found[0]


def test_without_the_index_a_rare_pools_short_hnsw_page_is_completed(pg_database: Database, loaded):
    """The premise: without the filter index the rare pool walks HNSW, comes
    back short (one batch) and needs the exact completion."""
    engine = sqlalchemy.create_engine(pg_database.url, connect_args=SHORT_SCANS)
    try:
        searches = by_label(plan())
        done = run(make_store(engine), [searches["pool:skills"]])
        assert done.completed == ["pool:skills"]
        assert done.filtered == []
        assert [d.id for d in done.found[0]] == exact_top("skill-", K)
    finally:
        engine.dispose()


def test_a_rare_pool_is_read_through_the_filter_index_exactly(indexed):
    searches = by_label(plan())
    done = run(indexed, [searches["pool:skills"], searches["pool:growth"]])
    assert [d.id for d in done.found[0]] == exact_top("skill-", K)
    # Fewer rows than k: the whole type, and no completion (the page is exact already).
    assert [d.id for d in done.found[1]] == exact_top("growth-", K) == ["growth-0", "growth-1", "growth-2"]
    assert done.filtered == ["pool:skills", "pool:growth"]
    assert done.completed == []


def test_a_dense_pool_still_walks_the_hnsw_index(indexed):
    """300 notes > filter_first_bound(5, 618): the HNSW scan (the notes are
    the query's nearest, so its first batch holds k of them)."""
    assert filter_first_bound(K, len(corpus())) < NOTES
    done = run(indexed, [by_label(plan())["pool:content"]])
    assert done.filtered == []
    assert [d.id for d in done.found[0]] == exact_top("note-", K)


def test_every_search_of_the_plan_in_one_statement_finds_what_each_alone_does(indexed):
    searches = plan()
    together = run(indexed, searches)
    alone = [run(indexed, [s]).found[0] for s in searches]
    assert [[d.id for d in docs] for docs in together.found] == [[d.id for d in docs] for docs in alone]
    assert [d.id for d in together.found[-1]] == ["fix-0", "fix-1"]  # the always fetch, in id order


def test_untyped_entries_are_found_exactly_through_the_index(indexed):
    """Without the index the untyped side search has no type condition (the
    untyped note, far from the query, is not among the nearest); with it,
    "no type" is said exactly and cheaply."""
    untyped = by_label(plan())["pool:content:untyped"]
    done = run(indexed, [untyped])
    assert [d.id for d in done.found[0]] == ["untyped"]
    assert done.filtered == ["pool:content:untyped"]


def test_the_retriever_over_the_indexed_store_loads_every_correction_and_the_rare_pools(indexed):
    from poolsplit_adapters.langchain import PoolSplitRetriever

    retriever = PoolSplitRetriever.from_vectorstore(indexed, POOLS, fetch_k=K, visibility=Visibility(namespace="t"))
    got = [str(d.id) for d in retriever.invoke(QUERY)]
    assert got[:2] == ["fix-0", "fix-1"]
    assert sorted(i for i in got if i.startswith("skill-")) == ["skill-%02d" % i for i in range(SKILLS)]
    assert sorted(i for i in got if i.startswith("growth-")) == ["growth-0", "growth-1", "growth-2"]
    assert not [i for i in got if i.startswith("other-")]  # the other tenant's skills stay out
    selection = retriever.last_selection
    assert selection is not None
    assert selection.notes["recall"]["store_ran_out"] == ["skills", "growth"]


async def test_the_async_search_reads_a_rare_pool_through_the_index(pg_database: Database, indexed):
    from sqlalchemy.ext.asyncio import create_async_engine

    from poolsplit_adapters.stores.vectorstores.pgvector_search import PGVectorPlanSearch

    engine = create_async_engine(pg_database.url, connect_args=SHORT_SCANS)
    try:
        store = langchain_postgres.PGVector(
            HashedNgramEmbeddings(), connection=engine, embedding_length=DIMS, async_mode=True
        )
        searches = by_label(plan())
        done = PGVectorPlanSearch(store=store, searches=[searches["pool:skills"]], vector=hashed_ngrams(QUERY))
        await done.ainvoke(QUERY)
        assert [d.id for d in done.found[0]] == exact_top("skill-", K)
        assert done.filtered == ["pool:skills"] and done.completed == []
    finally:
        await engine.dispose()


@pytest.mark.parametrize(
    "field, value",
    [("namespace", "t'); DROP TABLE langchain_pg_embedding; --"), ("type", "skill' OR '1'='1")],
)
def test_hostile_values_stay_parameters_through_the_filter_first_statement(indexed, field: str, value: str):
    types: Optional[Tuple[str, ...]] = (value,) if field == "type" else ("skill",)
    namespaces = (value,) if field == "namespace" else ("t",)
    done = run(indexed, [Search("pool:x", K, types=types, namespaces=namespaces, pool="x")])
    assert done.found == [[]]
    still = run(indexed, [by_label(plan())["pool:skills"]])
    assert [d.id for d in still.found[0]] == exact_top("skill-", K)


@contextlib.contextmanager
def bounds_sent(engine: Any) -> Iterator[List[Any]]:
    """The filter-first bounds of the statements ``engine`` (a sync engine)
    sends while the block runs, in the order sent."""
    bounds: List[Any] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        if isinstance(parameters, dict):
            bounds.extend(v for k, v in sorted(parameters.items()) if k.startswith("filter_first_bound_"))

    sqlalchemy.event.listen(engine, "before_cursor_execute", capture)
    try:
        yield bounds
    finally:
        sqlalchemy.event.remove(engine, "before_cursor_execute", capture)


def sent_bounds(engine: Any, store: Any, searches: List[Search], large: Any) -> Tuple[List[Any], Any]:
    """The filter-first bounds the plan search's statements were sent with,
    and the finished search (``large``: the retriever's memory of large filters)."""
    from poolsplit_adapters.stores.vectorstores.pgvector_search import PGVectorPlanSearch

    with bounds_sent(engine) as bounds:
        search = PGVectorPlanSearch(store=store, searches=searches, vector=hashed_ngrams(QUERY), large_filters=large)
        search.invoke(QUERY)
    return bounds, search


@pytest.fixture
def windowed(pg_database: Database, loaded: sqlalchemy.Engine) -> Iterator[Tuple[Any, Any, Any, List[float]]]:
    """The indexed store on short-scanning sessions, its engine, and a
    memory of large filters on a clock the test moves (``now[0]``)."""
    from poolsplit_adapters.stores.postgres import LargeFilters

    install_filter_index(make_store(loaded))
    engine = sqlalchemy.create_engine(pg_database.url, connect_args=SHORT_SCANS)
    now = [0.0]
    yield engine, make_store(engine), LargeFilters(seconds=60.0, clock=lambda: now[0]), now
    engine.dispose()


def test_a_pool_found_large_skips_its_count_on_the_next_call_and_finds_the_same_rows(windowed):
    """The dense pool's count said "many": the next call sends the bound
    that reads no row (SKIP_COUNT) and walks HNSW at once, with the same
    page; the rare pool is counted (and read exactly) on every call; after
    the memory's window the dense pool is counted again."""
    from poolsplit_adapters.stores.postgres import SKIP_COUNT

    engine, store, large, now = windowed
    searches = by_label(plan())
    dense, rare = searches["pool:content"], searches["pool:skills"]
    bound = filter_first_bound(K, len(corpus()))
    first, done = sent_bounds(engine, store, [dense, rare], large)
    assert first == [bound, bound]
    pages = [[d.id for d in docs] for docs in done.found]
    assert pages == [exact_top("note-", K), exact_top("skill-", K)] and done.filtered == ["pool:skills"]
    now[0] = 59.0
    second, done = sent_bounds(engine, store, [dense, rare], large)
    assert second == [SKIP_COUNT, bound]
    assert [[d.id for d in docs] for docs in done.found] == pages and done.filtered == ["pool:skills"]
    assert done.completed == []
    now[0] = 60.0  # the window is over: counted again (the skipped call did not extend it)
    third, done = sent_bounds(engine, store, [dense, rare], large)
    assert third == [bound, bound]
    assert [[d.id for d in docs] for docs in done.found] == pages


def test_the_retriever_keeps_its_memory_of_large_filters_between_calls(indexed):
    from poolsplit_adapters.langchain import PoolSplitRetriever
    from poolsplit_adapters.stores.postgres import SKIP_COUNT

    retriever = PoolSplitRetriever.from_vectorstore(indexed, POOLS, fetch_k=K, visibility=Visibility(namespace="t"))
    first = [str(d.id) for d in retriever.invoke(QUERY)]
    content = by_label(plan())["pool:content"]
    large = retriever._recall.large_filters  # type: ignore[union-attr]
    assert large.bound(content, len(corpus())) == SKIP_COUNT
    assert large.bound(by_label(plan())["pool:skills"], len(corpus())) == filter_first_bound(K, len(corpus()))
    assert [str(d.id) for d in retriever.invoke(QUERY)] == first


def test_a_large_filter_made_small_by_deletions_is_still_found_whole_within_its_window(windowed):
    """Only deletions (or rewrites to another type or namespace) can make a large filter small. Within the window its
    search skips the count and walks HNSW, whose page comes back short
    here (one batch) and is completed exactly: the notes left, all of them,
    in the exact order; after the window the count finds them few and reads
    them through the filter index."""
    from poolsplit_adapters.stores.postgres import SKIP_COUNT

    engine, store, large, now = windowed
    dense = by_label(plan())["pool:content"]
    first, done = sent_bounds(engine, store, [dense], large)
    assert first == [filter_first_bound(K, len(corpus()))] and done.filtered == []
    left = ["note-%03d" % i for i in range(NOTES - 3, NOTES)]  # the three farthest from the query
    store.delete(ids=["note-%03d" % i for i in range(NOTES - 3)])
    second, done = sent_bounds(engine, store, [dense], large)
    assert second == [SKIP_COUNT, SKIP_COUNT]  # the search, then its exact completion
    assert [d.id for d in done.found[0]] == left  # exact order: one more " again" each
    assert done.completed == ["pool:content"] and done.filtered == []
    now[0] = 61.0
    third, done = sent_bounds(engine, store, [dense], large)
    assert third == [filter_first_bound(K, len(corpus()))]
    assert [d.id for d in done.found[0]] == left and done.filtered == ["pool:content"]


async def test_the_async_search_skips_a_large_filters_count_too(pg_database: Database, indexed):
    from sqlalchemy.ext.asyncio import create_async_engine

    from poolsplit_adapters.stores.postgres import SKIP_COUNT, LargeFilters
    from poolsplit_adapters.stores.vectorstores.pgvector_search import PGVectorPlanSearch

    engine = create_async_engine(pg_database.url, connect_args=SHORT_SCANS)
    try:
        store = langchain_postgres.PGVector(
            HashedNgramEmbeddings(), connection=engine, embedding_length=DIMS, async_mode=True
        )
        large = LargeFilters()
        dense, rare = by_label(plan())["pool:content"], by_label(plan())["pool:skills"]
        bound = filter_first_bound(K, len(corpus()))
        pages = []
        for expected in ([bound, bound], [SKIP_COUNT, bound]):
            done = PGVectorPlanSearch(
                store=store, searches=[dense, rare], vector=hashed_ngrams(QUERY), large_filters=large
            )
            with bounds_sent(engine.sync_engine) as bounds:
                await done.ainvoke(QUERY)
            assert bounds == expected and done.filtered == ["pool:skills"]
            pages.append([[d.id for d in docs] for docs in done.found])
        assert pages[0] == pages[1] == [exact_top("note-", K), exact_top("skill-", K)]
    finally:
        await engine.dispose()


def test_the_untyped_side_search_is_counted_on_every_call(pg_database, loaded):
    """Its short page is never completed (its pool's typed search says
    whether the pool is full), so only the count makes it exact: it is
    never remembered as large. 400 untyped notes > the bound; deletions
    leave three, far from the query, which the next call still finds."""
    from poolsplit_adapters.stores.postgres import LargeFilters

    extra = [
        Document("deploy checkout untyped" + " again" * i, id="loose-%03d" % i, metadata={"namespace": "t"})
        for i in range(400)
    ]
    make_store(loaded).add_documents(extra)
    install_filter_index(make_store(loaded))
    engine = sqlalchemy.create_engine(pg_database.url, connect_args=SHORT_SCANS)
    try:
        store = make_store(engine)
        large = LargeFilters()
        untyped = by_label(plan())["pool:content:untyped"]
        bound = filter_first_bound(K, len(corpus()) + len(extra))
        first, done = sent_bounds(engine, store, [untyped], large)
        assert first == [bound] and done.filtered == [] and len(done.found[0]) == K
        store.delete(ids=["loose-%03d" % i for i in range(397)] + ["untyped"])
        second, done = sent_bounds(engine, store, [untyped], large)
        assert second == [bound]
        assert [d.id for d in done.found[0]] == ["loose-397", "loose-398", "loose-399"]
        assert done.filtered == ["pool:content:untyped"]
    finally:
        engine.dispose()
