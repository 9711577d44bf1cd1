"""PoolSplitRetriever over ``langchain_postgres.PGVector`` on a real Postgres +
pgvector (started by the ``pg_server`` fixture), unchanged: the adapter's
default dict filters are PGVector's own filter dialect."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterator, List, Optional, Set, Tuple

import pytest
import sqlalchemy
from langchain_core.documents import Document
from pg_corpus import NOW, POOLS, QUERY, documents, entries
from pg_embeddings import DIMS, HashedNgramEmbeddings, hashed_ngrams
from pg_server import Database
from sqlalchemy.ext.asyncio import create_async_engine

from poolsplit_adapters import Visibility
from poolsplit_adapters.langchain import SELECTION_KEY, PoolSplitRetriever, capture_selections
from poolsplit_adapters.recall import Search
from poolsplit_adapters.stores.vectorstores.langchain_filters import dict_filter, type_filter

langchain_postgres = pytest.importorskip("langchain_postgres")
PGVector = langchain_postgres.PGVector


@pytest.fixture
def engine(pg_database: Database) -> Iterator[sqlalchemy.Engine]:
    engine = sqlalchemy.create_engine(pg_database.url)
    yield engine
    engine.dispose()


def pgvector(engine: Any, docs: List[Document], collection: str = "memory") -> Any:
    store = PGVector(HashedNgramEmbeddings(), connection=engine, collection_name=collection, embedding_length=DIMS)
    store.add_documents(docs)
    return store


def ids(docs: List[Document]) -> List[Optional[str]]:
    return [d.id for d in docs]


def test_plain_top_k_over_pgvector_sees_only_the_flood(engine):
    """The baseline the pools are measured against: the store's own top-k
    for the busy turn is deploy notes only."""
    memory = entries()
    store = pgvector(engine, documents(memory))
    query = hashed_ngrams(QUERY)
    similarity = [sum(a * b for a, b in zip(query, hashed_ngrams(e["content"]))) for e in memory]
    assert [e["id"] for _, e in sorted(zip(similarity, memory), key=lambda p: -p[0])][:9] == [
        "note-%02d" % n for n in range(9)
    ]  # the corpus guarantees a strict order
    assert ids(store.similarity_search(QUERY, k=9)) == ["note-%02d" % n for n in range(9)]


def test_pool_split_over_pgvector_reaches_every_pool_and_loads_corrections_first(engine):
    docs = documents(entries())
    store = pgvector(engine, docs)
    retriever = PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=20, now=NOW)
    got = retriever.invoke(QUERY)
    # Every pool recalled all its candidates (fetch_k >= its size), so the
    # selection is exactly the one over the whole memory held in-process.
    oracle = PoolSplitRetriever(documents=docs, pools=POOLS, now=NOW).invoke(QUERY)
    assert ids(got) == ids(oracle)
    assert ids(got)[:3] == ["fix-0", "fix-1", "fix-2"]
    assert all(d.metadata[SELECTION_KEY]["always"] for d in got[:3])
    pools = [d.metadata[SELECTION_KEY]["pool"] for d in got[3:]]
    assert pools == ["content"] * 6 + ["skills"] * 2 + ["growth"]
    top = store.similarity_search(QUERY, k=len(got) - 3)
    assert not {d.metadata["type"] for d in top} & {"correction", "skill", "growth"}


def test_each_pool_recalls_its_own_top_fetch_k_from_pgvector(engine):
    """With fetch_k below a pool's size, its candidates are the fetch_k most
    similar of its own types: the same as InMemoryVectorStore's recall."""
    from langchain_core.vectorstores import InMemoryVectorStore

    docs = documents(entries(notes=30))
    store = pgvector(engine, docs)
    in_memory = InMemoryVectorStore(HashedNgramEmbeddings())
    in_memory.add_documents(docs)
    over_pg = PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=4, max_fetch_k=4, now=NOW)
    over_memory = PoolSplitRetriever.from_vectorstore(in_memory, POOLS, fetch_k=4, max_fetch_k=4, now=NOW)
    got = over_pg.invoke(QUERY)
    assert ids(got) == ids(over_memory.invoke(QUERY))
    # The content pool chose among the 4 most similar notes only (no growth: max_fetch_k=fetch_k).
    content = [d.id for d in got if d.metadata[SELECTION_KEY]["pool"] == "content"]
    assert sorted(content) == ["note-00", "note-01", "note-02", "note-03"]
    assert ids(got)[:3] == ["fix-0", "fix-1", "fix-2"]  # fetched by scope, not by similarity
    # Growing (the default), both stores recall alike until the pools are filled.
    grown_pg = PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=4, now=NOW).invoke(QUERY)
    grown_memory = PoolSplitRetriever.from_vectorstore(in_memory, POOLS, fetch_k=4, now=NOW).invoke(QUERY)
    assert ids(grown_pg) == ids(grown_memory)
    assert len([d for d in grown_pg if d.metadata[SELECTION_KEY]["pool"] == "content"]) == 6  # the pool's cap


def test_default_filters_are_pgvectors_dialect(engine):
    """``type_filter`` builds dicts (``$in``, equality, ``$and``); PGVector
    answers each with exactly the matching documents."""
    store = pgvector(engine, documents(entries("ops") + entries("lab", prefix="lab-")))
    build = type_filter(store)

    def found(search: Search) -> List[Optional[str]]:
        return sorted(ids(store.similarity_search(QUERY, k=search.k, filter=build(search))))

    assert found(Search("pool:low", 100, types=("skill", "growth"))) == sorted(
        ["skill-0", "skill-1", "skill-2", "growth-0", "growth-1"]
        + ["lab-skill-0", "lab-skill-1", "lab-skill-2", "lab-growth-0", "lab-growth-1"]
    )
    assert found(Search("always", 100, always=True)) == [
        "fix-0",
        "fix-1",
        "fix-2",
        "lab-fix-0",
        "lab-fix-1",
        "lab-fix-2",
    ]
    assert found(Search("pool:growth", 100, types=("growth",), namespaces=("lab",))) == ["lab-growth-0", "lab-growth-1"]
    assert found(Search("always", 100, always=True, namespaces=("ops", "nowhere"))) == ["fix-0", "fix-1", "fix-2"]


def pgvector_filter(search: Search) -> Any:
    """PGVector's dialect can say "no ``type``" (``$exists``): the untyped
    search then asks for exactly the untyped documents."""
    if not search.untyped:
        return dict_filter(search)
    rest = dict_filter(replace(search, untyped=False))
    missing = {"type": {"$exists": False}}
    return missing if rest is None else {"$and": [missing, rest]}


def test_untyped_documents_are_recalled_exactly_with_pgvectors_exists(engine):
    """The default dict filter cannot say "missing", so the untyped search of
    a pool that admits "note" runs without a type condition: an untyped
    document far from the query is not among its fetch_k nearest
    (``setup_store=False``: without the filter index). PGVector's ``$exists``
    says it, and the same document is recalled; so does the default, whose
    first search creates the filter index, which answers "no type" exactly."""
    untyped = Document(page_content="Quarterly budget spreadsheet cells.", id="untyped", metadata={})
    store = pgvector(engine, documents(entries()) + [untyped])

    def recalled(**options: Any) -> Set[Any]:
        retriever = PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=3, now=NOW, **options)
        retriever.invoke(QUERY)
        sel = retriever.last_selection
        assert sel is not None
        return {c.entry.get("id") for c in sel.chosen} | {d.entry.get("id") for d in sel.dropped}

    assert "untyped" not in recalled(setup_store=False)
    assert "untyped" in recalled(filter_builder=pgvector_filter, setup_store=False)
    assert "untyped" in recalled()


def _tenants() -> Tuple[List[Document], List[Document]]:
    """A big tenant with more entries of every type than ``fetch_k``, all
    matching the query better than a small tenant's: without push-down, the
    small tenant's recall is empty."""
    big = entries("big", prefix="big-", notes=30) + entries("big", prefix="big2-", notes=0)
    for entry in big:
        entry["content"] = "checkout deploy staging finish: " + entry["content"]
    small = entries("small", prefix="small-", notes=3)
    return documents(big), documents(small)


def test_namespace_is_pushed_down_to_pgvector(engine):
    big, small = _tenants()
    store = pgvector(engine, big + small)
    scoped = PoolSplitRetriever.from_vectorstore(
        store, POOLS, fetch_k=3, now=NOW, visibility=Visibility(namespace="small")
    )
    got = scoped.invoke(QUERY)
    oracle = PoolSplitRetriever(
        documents=big + small, pools=POOLS, now=NOW, visibility=Visibility(namespace="small")
    ).invoke(QUERY)
    assert ids(got) == ids(oracle)
    assert {d.metadata["namespace"] for d in got} == {"small"}
    assert {d.metadata["type"] for d in got} == {"correction", "note", "skill", "growth"}
    # Per call, the same: invoke(..., namespace=...).
    unscoped = PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=3, now=NOW)
    assert ids(unscoped.invoke(QUERY, namespace="small")) == ids(got)


def test_without_the_namespace_push_down_the_small_tenant_starves(engine):
    """The control for the test above: a filter builder that drops the
    namespace recalls the big tenant's top-k, which visibility then removes."""
    big, small = _tenants()
    store = pgvector(engine, big + small)
    default = type_filter(store)

    def no_namespace(search: Search) -> Any:
        return default(replace(search, namespaces=()))

    small_only = Visibility(namespace="small")
    starved = PoolSplitRetriever.from_vectorstore(
        store, POOLS, fetch_k=3, max_fetch_k=3, now=NOW, visibility=small_only, filter_builder=no_namespace
    )
    got = starved.invoke(QUERY)
    assert {d.metadata["type"] for d in got} == {"correction"}  # always-scope fetch only: every pool starved
    # Growing recall digs through the big tenant until the small one's pools fill, at the cost of
    # more rounds: pushing the namespace down is what keeps recall at fetch_k.
    grown = PoolSplitRetriever.from_vectorstore(
        store, POOLS, fetch_k=3, now=NOW, visibility=small_only, filter_builder=no_namespace
    )
    with capture_selections() as mine:
        found = grown.invoke(QUERY)
    assert {d.metadata["type"] for d in found} == {"correction", "note", "skill", "growth"}
    assert mine[0].notes["recall"]["rounds"] > 1


async def test_async_retrieval_needs_an_async_pgvector(pg_database):
    """PGVector is sync or async per instance (``async_mode``): the retriever's
    ``ainvoke`` works over an async-mode store and gives the sync result."""
    docs = documents(entries())
    sync_engine = sqlalchemy.create_engine(pg_database.url)
    async_engine = create_async_engine(pg_database.url)
    try:
        expected = ids(PoolSplitRetriever.from_vectorstore(pgvector(sync_engine, docs), POOLS, now=NOW).invoke(QUERY))
        store = PGVector(
            HashedNgramEmbeddings(), connection=async_engine, collection_name="memory", embedding_length=DIMS
        )
        got = await PoolSplitRetriever.from_vectorstore(store, POOLS, now=NOW).ainvoke(QUERY)
        assert ids(got) == expected
        with pytest.raises(AssertionError, match="async"):
            # A sync-mode store has no async path at all (PGVector's own assertion).
            await PoolSplitRetriever.from_vectorstore(pgvector(sync_engine, docs), POOLS, now=NOW).ainvoke(QUERY)
    finally:
        sync_engine.dispose()
        await async_engine.dispose()
