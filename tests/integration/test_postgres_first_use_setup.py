"""A retriever over ``PGVector`` creates the filter index its pool searches
need on its first search: once, never again, not at all when told not to,
once when two processes start on a fresh database at the same moment, and
without changing a single result.

Why it is the default: an independent run over 100k rows measured the pool
split at 13-23x one plain filtered search without the index, and most users
never read the paragraph saying to run ``install_filter_index``. Each test
here runs against a real Postgres (a fresh database per test) and counts
the DDL the retriever sends by listening on the engine.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Iterator, List

import psycopg
import pytest
import sqlalchemy
from filter_index_plan import QUERY, K
from langchain_core.documents import Document
from pg_embeddings import DIMS, HashedNgramEmbeddings
from pg_server import Database

from poolsplit_adapters import Pool, Visibility
from poolsplit_adapters.stores.postgres import FILTER_INDEX, SETUP_LOCK, StoreSetupWarning

langchain_postgres = pytest.importorskip("langchain_postgres")
from poolsplit_adapters.langchain import PoolSplitRetriever  # noqa: E402

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
QUERIES = [QUERY, "audit the refund ledger", "growth on the staging service", "quarterly budget"]


def corpus() -> List[Document]:
    """Tenant ``t``: facts, a few skills and growth notes, two corrections;
    tenant ``o``: skills of its own (which must never load for ``t``)."""
    docs = [
        Document("Quote amounts in cents.", id="fix-0", metadata={"type": "correction", "scope": "always"}),
        Document("Never force-push to main.", id="fix-1", metadata={"type": "correction", "scope": "always"}),
        Document("Quarterly budget spreadsheet cells.", id="fact-budget", metadata={"type": "fact"}),
    ]
    # Similarity falls strictly with each entry's number (one more " again"
    # each): no ties, so "the same documents" has one answer.
    docs += [
        Document("deploy checkout staging note" + " again" * i, id="fact-%02d" % i, metadata={"type": "fact"})
        for i in range(40)
    ]
    docs += [
        Document("skill audit ledger refund" + " again" * i, id="skill-%d" % i, metadata={"type": "skill"})
        for i in range(6)
    ]
    docs += [
        Document("growth service staging" + " again" * i, id="growth-%d" % i, metadata={"type": "growth"})
        for i in range(2)
    ]
    for doc in docs:
        doc.metadata["namespace"] = "t"
    docs += [
        Document(
            "deploy checkout skill" + " again" * i, id="other-%02d" % i, metadata={"type": "skill", "namespace": "o"}
        )
        for i in range(20)
    ]
    return docs


def make_store(engine: Any, **kwargs: Any) -> Any:
    return langchain_postgres.PGVector(HashedNgramEmbeddings(), connection=engine, embedding_length=DIMS, **kwargs)


def retriever(store: Any, **kwargs: Any) -> PoolSplitRetriever:
    return PoolSplitRetriever.from_vectorstore(store, POOLS, fetch_k=K, visibility=Visibility(namespace="t"), **kwargs)


class DDL:
    """The DDL statements one engine sent (``CREATE INDEX`` and ``ANALYZE``)."""

    def __init__(self, engine: Any) -> None:
        self.sent: List[str] = []
        target = engine.sync_engine if hasattr(engine, "sync_engine") else engine
        sqlalchemy.event.listen(target, "before_cursor_execute", self._seen)

    def _seen(self, conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        if statement.lstrip().upper().startswith(("CREATE INDEX", "ANALYZE")):
            self.sent.append(statement.split("(")[0].strip())

    def clear(self) -> None:
        self.sent.clear()


def filter_indexes(db: Database) -> List[str]:
    with psycopg.connect(db.conninfo) as conn:
        rows = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'langchain_pg_embedding' AND indexname = %s",
            (FILTER_INDEX,),
        ).fetchall()
    return [r[0] for r in rows]


@pytest.fixture
def engine(pg_database: Database) -> Iterator[sqlalchemy.Engine]:
    """A database holding the corpus through ``PGVector`` (no filter index yet)."""
    engine = sqlalchemy.create_engine(pg_database.url)
    make_store(engine).add_documents(corpus())
    yield engine
    engine.dispose()


def ids(docs: List[Document]) -> List[str]:
    return [str(d.id) for d in docs]


def test_the_first_use_creates_the_index_once_and_the_second_use_creates_nothing(pg_database, engine):
    assert filter_indexes(pg_database) == []
    ddl = DDL(engine)
    first = retriever(make_store(engine))
    got = ids(first.invoke(QUERY))
    assert ddl.sent == [
        "CREATE INDEX IF NOT EXISTS poolsplit_pool_filter ON langchain_pg_embedding",
        "ANALYZE langchain_pg_embedding",
    ]
    assert first._recall is not None and first._recall.setup.created is True
    assert filter_indexes(pg_database) == [FILTER_INDEX]
    assert got[:2] == ["fix-0", "fix-1"]  # the always-scope corrections, every call

    ddl.clear()
    assert ids(first.invoke(QUERY)) == got  # the same retriever: no check, no DDL
    same_store = retriever(first.vectorstore)  # a new retriever over the same store (the middleware, per turn)
    assert same_store._recall is not None and not same_store._recall.setup.pending  # nothing to check
    assert ids(same_store.invoke(QUERY)) == got
    second = retriever(make_store(engine))  # a second use (a new retriever, e.g. another process)
    assert ids(second.invoke(QUERY)) == got
    assert ddl.sent == []
    assert second._recall is not None and second._recall.setup.created is False
    assert filter_indexes(pg_database) == [FILTER_INDEX]


def test_an_index_made_on_the_empty_table_gets_its_statistics_once_the_rows_are_there(pg_database):
    """An application's first call on an empty store makes the index (and
    analyzes an empty table); the rows come later. Until autovacuum comes by
    (off for this table here) the planner has no statistics of the index's
    expressions, so the next retriever's first use runs ANALYZE, once, and
    creates nothing; the one after does nothing."""
    engine = sqlalchemy.create_engine(pg_database.url)
    try:
        store = make_store(engine)  # PGVector's own tables and indexes
        with engine.begin() as conn:
            conn.exec_driver_sql("ALTER TABLE langchain_pg_embedding SET (autovacuum_enabled = false)")
        ddl = DDL(engine)
        retriever(store).invoke(QUERY)  # the empty store
        assert [s.split()[0] for s in ddl.sent] == ["CREATE", "ANALYZE"]
        store.add_documents(corpus())
        ddl.clear()
        later = retriever(make_store(engine))
        got = ids(later.invoke(QUERY))
        assert ddl.sent == ["ANALYZE langchain_pg_embedding"]
        assert later._recall is not None and later._recall.setup.created is False
        with engine.connect() as conn:
            counted = conn.exec_driver_sql(
                "SELECT reltuples FROM pg_class WHERE oid = 'langchain_pg_embedding'::regclass"
            ).scalar()
        assert counted == len(corpus())
        ddl.clear()
        assert ids(retriever(make_store(engine)).invoke(QUERY)) == got
        assert ddl.sent == []
        assert got[:2] == ["fix-0", "fix-1"]
    finally:
        engine.dispose()


def test_setup_store_false_creates_nothing(pg_database, engine):
    ddl = DDL(engine)
    plain = retriever(make_store(engine), setup_store=False)
    for query in QUERIES:
        assert ids(plain.invoke(query))[:2] == ["fix-0", "fix-1"]
    assert ddl.sent == []
    assert filter_indexes(pg_database) == []
    assert plain._recall is not None and plain._recall.setup.created is None


def test_a_filter_builder_of_your_own_creates_nothing(pg_database, engine):
    """A caller's filter builder keeps PGVector's own search, which the index
    does not serve: nothing to create for it."""
    from poolsplit_adapters.langchain import dict_filter

    def mine(search: Any) -> Any:
        return dict_filter(search)

    retriever(make_store(engine), filter_builder=mine).invoke(QUERY)
    assert filter_indexes(pg_database) == []


def test_results_are_identical_with_and_without_the_setup(pg_database, engine):
    """No ANN index here, so both ways are exact: whatever differs would be
    the setup changing a result, not an approximation. Every tenant's
    corrections load either way."""
    without = retriever(make_store(engine), setup_store=False)
    before = [ids(without.invoke(q)) for q in QUERIES]
    assert filter_indexes(pg_database) == []
    default = retriever(make_store(engine))
    after = [ids(default.invoke(q)) for q in QUERIES]
    assert filter_indexes(pg_database) == [FILTER_INDEX]
    assert after == before
    assert all(got[:2] == ["fix-0", "fix-1"] for got in after)
    assert not [i for got in after for i in got if i.startswith("other-")]
    # And the same retriever without the setup, now that the index is there:
    assert [ids(without.invoke(q)) for q in QUERIES] == before


def test_concurrent_first_use_from_two_connections_creates_the_index_once(pg_database, engine):
    """Two engines (two processes' pools) start at the same moment on a
    database without the index: both wait on the setup's advisory lock
    (held here until both are waiting), then one creates the index and the
    other finds it. Neither fails, both return the same documents."""
    engines = [sqlalchemy.create_engine(pg_database.url) for _ in range(2)]
    ddls = [DDL(e) for e in engines]
    retrievers = [retriever(make_store(e)) for e in engines]
    results: List[Any] = [None, None]

    def use(i: int) -> None:
        try:
            results[i] = ids(retrievers[i].invoke(QUERY))
        except BaseException as err:  # reported below, with the other thread's outcome
            results[i] = err

    with psycopg.connect(pg_database.conninfo, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s, %s)", SETUP_LOCK)
        threads = [threading.Thread(target=use, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            waiting = holder.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database ="
                " (SELECT oid FROM pg_database WHERE datname = current_database())"
            ).fetchone()
            if waiting is not None and waiting[0] == 2:
                break
            time.sleep(0.02)
        else:
            pytest.fail("the two first uses never both waited on the setup lock")
        holder.execute("SELECT pg_advisory_unlock(%s, %s)", SETUP_LOCK)
    for thread in threads:
        thread.join(timeout=60)
    for engine_ in engines:
        engine_.dispose()
    assert not [r for r in results if isinstance(r, BaseException)], results
    assert results[0] == results[1]
    assert sorted(len([s for s in d.sent if s.startswith("CREATE INDEX")]) for d in ddls) == [0, 1]
    created = sorted(r._recall.setup.created for r in retrievers if r._recall is not None)
    assert created == [False, True]
    assert filter_indexes(pg_database) == [FILTER_INDEX]


async def test_the_async_first_use_creates_the_index_once(pg_database, engine):
    from sqlalchemy.ext.asyncio import create_async_engine

    aengine = create_async_engine(pg_database.url)
    try:
        ddl = DDL(aengine)
        first = retriever(make_store(aengine, async_mode=True))
        got = ids(await first.ainvoke(QUERY))
        assert [s.split()[0] for s in ddl.sent] == ["CREATE", "ANALYZE"]
        ddl.clear()
        second = retriever(make_store(aengine, async_mode=True))
        assert ids(await second.ainvoke(QUERY)) == got
        assert ddl.sent == []
        assert filter_indexes(pg_database) == [FILTER_INDEX]
        assert got == ids(retriever(make_store(engine), setup_store=False).invoke(QUERY))
    finally:
        await aengine.dispose()


def test_a_role_that_may_not_create_the_index_gets_a_warning_and_the_same_results(pg_database, engine):
    """Refused (not the table's owner): one StoreSetupWarning saying so and
    what to run instead; the searches go on without the index."""
    with psycopg.connect(pg_database.conninfo, autocommit=True) as admin:
        admin.execute("CREATE ROLE poolsplit_reader LOGIN")
        admin.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO poolsplit_reader")
    reader = sqlalchemy.create_engine(pg_database.url.replace("postgres@", "poolsplit_reader@", 1))
    try:
        store = make_store(reader, create_extension=False)
        refused = retriever(store)
        with pytest.warns(StoreSetupWarning, match="install_filter_index"):
            got = ids(refused.invoke(QUERY))
        assert filter_indexes(pg_database) == []
        assert got == ids(retriever(make_store(engine), setup_store=False).invoke(QUERY))
        assert ids(refused.invoke(QUERY)) == got  # once: no second attempt, no second warning
    finally:
        reader.dispose()
