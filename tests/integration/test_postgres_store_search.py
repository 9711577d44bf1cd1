"""Ranked type searches over LangGraph's PostgresStore(index=), on the embedded
Postgres + pgvector: our own statements walk the HNSW index, read a rare
type through the filter index, complete a short page exactly, and give the
items and scores the store's own search gives."""

from __future__ import annotations

import asyncio
import math
from typing import Any, Dict, Iterator, List, Tuple

import psycopg
import pytest
from agent_fakes import ToolCallingFakeModel, scripted_agent, system_text, thread
from langchain_core.embeddings import Embeddings
from langgraph.store.memory import InMemoryStore
from pg_embeddings import DIMS, hashed_ngrams
from pg_server import Database

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import BaseStoreMemory, PoolSplitMemoryMiddleware, RecallConfig, WriteConfig
from poolsplit_adapters.stores.langgraph.postgres_store_search import (
    PostgresStoreSearch,
    serves_postgres_store,
    walk_budget,
)
from poolsplit_adapters.stores.langgraph.ranked_search import RankedSearch
from poolsplit_adapters.stores.postgres import filter_first_bound, install_filter_index

PostgresStore = pytest.importorskip("langgraph.store.postgres").PostgresStore

U1, U2 = ("memories", "u1"), ("memories", "u2")
QUERY = "deploy the checkout service to staging"
NOTES, RARE = 240, 6
POOLS = [
    Pool("corrections", 0, 0, ("correction",)),
    Pool("notes", 10_000, 100, ("note",)),
    Pool("rare", 10_000, 100, ("rare",)),
]
WORDS = ["deploy", "checkout", "staging", "ledger", "refund", "cache", "queue", "service", "build", "audit"]


class CountedEmbeddings(Embeddings):
    """The tests' hashed n-gram embedding, counting the texts it embeds."""

    def __init__(self) -> None:
        self.texts: List[str] = []

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        self.texts += texts
        return [hashed_ngrams(t) for t in texts]

    def embed_query(self, text: str) -> List[float]:
        self.texts.append(text)
        return hashed_ngrams(text)


def items() -> List[Tuple[Tuple[str, ...], str, Dict[str, Any]]]:
    """(namespace, key, value): U1's notes, rare items, untyped items and
    corrections, and the same kinds in a child namespace and another user's."""
    found = [
        (U1, "fix-%d" % i, {"content": "Quote amounts in cents %d." % i, "type": "correction", "scope": "always"})
        for i in range(2)
    ]
    for i in range(NOTES):
        text = " ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 6)) + " note %d" % i
        found.append((U1, "note-%03d" % i, {"content": text, "type": "note"}))
    for i in range(RARE):
        found.append((U1, "rare-%d" % i, {"content": "rare fact %d about the audit ledger" % i, "type": "rare"}))
    for i in range(2):  # no type at all: counts as a note
        found.append((U1, "bare-%d" % i, {"content": "deploy checkout staging bare %d" % i}))
    for ns in (U1 + ("drafts",), U2):
        for i in range(5):
            found.append(
                (ns, "%s-note-%d" % (ns[-1], i), {"content": "deploy the checkout service %d" % i, "type": "note"})
            )
            found.append((ns, "%s-rare-%d" % (ns[-1], i), {"content": "rare fact %d" % i, "type": "rare"}))
    return found


def index_config(embeddings: Embeddings, **extra: Any) -> Dict[str, Any]:
    return {"dims": DIMS, "embed": embeddings, "fields": ["content"], **extra}


#: Every item's own time: the stores stamp a put with the second it ran in,
#: so under load a fill crossing a second would give the two stores other
#: recency boosts and tie-breaks between notes whose relevance is equal.
CREATED = "2026-11-01T00:00:00Z"


def fill(store: Any) -> None:
    for ns, key, value in items():
        store.put(ns, key, {**value, "created": CREATED})


@pytest.fixture
def loaded(pg_database: Database) -> Database:
    with PostgresStore.from_conn_string(pg_database.conninfo, index=index_config(CountedEmbeddings())) as store:
        store.setup()
        fill(store)
        with store._cursor() as cur:
            cur.execute("ANALYZE")
    return pg_database


def connect(database: Database, options: str = "") -> psycopg.Connection:
    return database.connect(options)  # type: ignore[no-any-return]


@pytest.fixture
def store(loaded: Database) -> Iterator[Any]:
    with connect(loaded) as conn:
        yield PostgresStore(conn, index=index_config(CountedEmbeddings()))


@pytest.fixture
def short_store(loaded: Database) -> Iterator[Any]:
    """The store with pgvector's iterative scan cut after its first batch."""
    with connect(loaded, "-c hnsw.max_scan_tuples=1") as conn:
        yield PostgresStore(conn, index=index_config(CountedEmbeddings()))


def recalled(memory: BaseStoreMemory, pools: List[Pool] = POOLS) -> List[str]:
    return sorted(e["id"] for e in memory.recall(pools, {"message": QUERY}).entries)


def paths(memory: BaseStoreMemory) -> List[str]:
    search = memory._ranked_search
    assert search is not None
    return search.last_paths


def test_a_vector_indexed_postgres_store_is_served_and_others_are_not(store):
    assert serves_postgres_store(store)
    assert not serves_postgres_store(InMemoryStore(index=index_config(CountedEmbeddings())))
    assert not serves_postgres_store(PostgresStore(store.conn))  # no index: nothing to rank with
    ttl = PostgresStore(store.conn, index=index_config(CountedEmbeddings()), ttl={"default_ttl": 5})
    assert not serves_postgres_store(ttl)  # expiry and refresh-on-read stay the store's


def test_each_type_is_walked_through_the_hnsw_index_with_the_stores_own_scores(store):
    memory = BaseStoreMemory(store, U1, fetch_k=10)
    recall = memory.recall(POOLS, {"message": QUERY})
    assert paths(memory) == ["index", "filter", "filter"]  # notes: many, walked; untyped (2) and rare (6): few, read
    notes = [e for e in recall.entries if e.get("type") == "note"]
    assert len(notes) == 10
    query = hashed_ngrams(QUERY)
    for entry in recall.entries:
        if entry.get("scope") == "always":
            continue
        cosine = sum(a * b for a, b in zip(query, hashed_ngrams(entry["content"])))
        assert math.isclose(recall.scores[entry["id"]], cosine, abs_tol=1e-5)  # the store's score: 1 - distance
    # Never a child namespace's or another user's item; corrections by filter, whole.
    assert {e["namespace"] for e in recall.entries} == {"memories.u1"}
    assert sorted(e["id"] for e in recall.entries if e.get("scope") == "always") == ["fix-0", "fix-1"]
    assert sorted(e["id"] for e in recall.entries if e.get("type") == "rare") == ["rare-%d" % i for i in range(RARE)]


def test_a_larger_ef_search_of_the_session_stays_and_the_walk_is_then_exhaustive(loaded: Database):
    """HNSW is approximate; with the session's ``hnsw.ef_search`` above the
    table's size (kept: a search only ever raises it) the walk reaches every
    note, so it gives what an exact ranking of U1's notes gives, up to ties."""
    with connect(loaded, "-c hnsw.ef_search=1000") as conn:
        store = PostgresStore(conn, index=index_config(CountedEmbeddings()))
        memory = BaseStoreMemory(store, U1, fetch_k=10)
        recall = memory.recall(POOLS[:2], {"message": QUERY})
        assert paths(memory)[0] == "index"
    got = sorted(round(recall.scores[e["id"]], 5) for e in recall.entries if e.get("type") == "note")
    query = hashed_ngrams(QUERY)
    every = [
        round(sum(a * b for a, b in zip(query, hashed_ngrams(value["content"]))), 5)
        for ns, key, value in items()
        if ns == U1 and value.get("type") == "note"
    ]
    assert got == sorted(every)[-10:]


def test_items_without_a_type_are_recalled_as_notes(store):
    """LangGraph's filter ``{"type": None}`` matches a stored JSON null, not
    a missing key (the premise), so its own search never found them."""
    own = store.search(U1, filter={"type": None}, query=QUERY, limit=10)
    assert [i.key for i in own] == []
    memory = BaseStoreMemory(store, U1, fetch_k=10)
    assert {"bare-0", "bare-1"} <= set(recalled(memory, POOLS[:2]))


def test_a_short_page_is_completed_exactly(short_store):
    """A walk cut short (here by the session's own ``hnsw.max_scan_tuples``,
    which a search never raises) is completed by the exact read. The rare
    type's filter is remembered as large (as after deletions within the
    window), so its search walks the index instead of counting."""
    memory = BaseStoreMemory(short_store, U1, fetch_k=10)
    search = memory._ranked_search
    assert search is not None
    rare = RankedSearch(U1, 10, type="rare")  # a Search of the namespace "memories.u1"
    search.large_filters.saw(rare, filter_first_bound(10, table_rows(short_store)), found=10, exact=False)
    got = recalled(memory)
    assert [i for i in got if i.startswith("rare-")] == ["rare-%d" % i for i in range(RARE)]
    assert paths(memory)[2] == "exact"
    # The premise: the index walk alone comes back short of k (10), so only
    # the exact read can say whether the table holds more.
    condition = " AND s.value->>'type' = %(type)s"
    with short_store._cursor(pipeline=True) as cur, cur.connection.transaction():
        cur.execute(
            "SELECT set_config('enable_sort', 'off', true), set_config('hnsw.iterative_scan', 'relaxed_order', true)"
        )
        params = {"namespace": "memories.u1", "type": "rare", "rows": 21, "vector": search.embed(QUERY)}
        cur.execute(search._index_sql(condition), params)
        assert len(cur.fetchall()) < 10


def table_rows(store: Any) -> float:
    with store._cursor() as cur:
        cur.execute("SELECT reltuples FROM pg_class WHERE oid = to_regclass('store')")
        return float(cur.fetchone()["reltuples"])


def test_a_search_never_raises_the_sessions_own_scan_budget(short_store):
    memory = BaseStoreMemory(short_store, U1, fetch_k=10)
    memory.recall(POOLS, {"message": QUERY})
    with short_store._cursor() as cur:
        cur.execute("SHOW hnsw.max_scan_tuples")
        assert cur.fetchone()["hnsw.max_scan_tuples"] == "1"  # and the transaction's own setting is gone


def test_the_walk_budget_follows_the_filter_first_bound():
    assert walk_budget(20, 100_000) == 4 * filter_first_bound(20, 100_000) // 10 == 1788
    assert walk_budget(20, 0) == 80  # at least two rounds of ef_search
    assert walk_budget(200, 0) == 400


def test_with_the_filter_index_a_rare_type_is_read_exactly_and_a_common_one_walked(short_store):
    install_filter_index(short_store)
    memory = BaseStoreMemory(short_store, U1, fetch_k=10)
    got = recalled(memory)
    assert paths(memory) == ["index", "filter", "filter"]  # notes: many; untyped and rare: few
    assert [i for i in got if i.startswith("rare-")] == ["rare-%d" % i for i in range(RARE)]
    assert {"bare-0", "bare-1"} <= set(got)
    assert recalled(memory) == got  # the notes' filter is now remembered as large: same answer
    assert paths(memory) == ["index", "filter", "filter"]


def test_the_filter_index_makes_the_ranking_exact_as_langgraphs_in_memory_store(loaded: Database):
    with connect(loaded) as conn:
        store = PostgresStore(conn, index=index_config(CountedEmbeddings()))
        install_filter_index(store)
        pools = [POOLS[0], Pool("notes", 60, 3, ("note",)), POOLS[2]]
        memory = BaseStoreMemory(store, U1, fetch_k=300)  # every note: under the filter-first bound
        got = [(c.entry["id"], c.pool) for c in memory.select(pools, {"message": QUERY}).chosen]
        assert set(paths(memory)) == {"filter"}
    oracle = InMemoryStore(index=index_config(CountedEmbeddings()))
    fill(oracle)
    want = [
        (c.entry["id"], c.pool)
        for c in BaseStoreMemory(oracle, U1, fetch_k=300).select(pools, {"message": QUERY}).chosen
    ]
    # The same selection; the order within a pool may differ where two scores
    # differ only past float4 (pgvector stores float4, InMemoryStore float64).
    assert sorted(got) == sorted(want)


def test_hostile_namespaces_and_types_are_values_not_sql(store):
    ns = ("memories", "x'); DROP TABLE store; --")
    kind = "fact'; DROP TABLE store_vectors; --"
    store.put(ns, "k1", {"content": "deploy checkout", "type": kind})
    memory = BaseStoreMemory(store, ns, fetch_k=5)
    got = memory.recall([Pool("odd", 100, 5, (kind,))], {"message": QUERY})
    assert [e["id"] for e in got.entries] == ["k1"]
    assert len(store.search(U1, limit=1000)) > NOTES  # both tables are still there


async def test_the_async_recall_is_the_sync_recall(store):
    memory = BaseStoreMemory(store, U1, fetch_k=10)
    want = recalled(memory)
    got = await memory.arecall(POOLS, {"message": QUERY})
    assert sorted(e["id"] for e in got.entries) == want


def _counted(store: Any, fetch_k: Any) -> Tuple[CountedEmbeddings, BaseStoreMemory]:
    """The store's connection with counting embeddings, and a memory over it."""
    embeddings = CountedEmbeddings()
    return embeddings, BaseStoreMemory(PostgresStore(store.conn, index=index_config(embeddings)), U1, fetch_k=fetch_k)


@pytest.mark.parametrize("fetch_k", [10, None])
def test_one_query_embedding_per_recall(store, fetch_k):
    # fetch_k=None (every item ranked, the store's own search) asked the
    # store to embed the query once per type op: three times a call.
    embeddings, memory = _counted(store, fetch_k)
    got = memory.recall(POOLS, {"message": QUERY})
    assert embeddings.texts == [QUERY]  # three ranked searches, one embedding
    every = BaseStoreMemory(PostgresStore(store.conn), U1).recall(POOLS, {"message": QUERY})  # no index: read whole
    if fetch_k is None:  # every item of the plan's types, each with the store's own score for it
        assert sorted(e["id"] for e in got.entries) == sorted(e["id"] for e in every.entries)
        own = {i.key: i.score for i in store.search(U1, query=QUERY, limit=10_000)}
        assert got.scores and all(abs(score - own[key]) < 1e-6 for key, score in got.scores.items())


@pytest.mark.parametrize("fetch_k", [10, None])
def test_a_selection_with_the_stores_own_model_embeds_the_query_once(store, fetch_k):
    # The middleware's scorer with embeddings= the store's model embedded the
    # message again after our ranked search had, and every recalled entry too.
    from poolsplit_adapters.relevance.embedding import EmbeddingScorer

    embeddings, memory = _counted(store, fetch_k)
    recall = memory.recall(POOLS, {"message": QUERY})
    memory.select_from(recall, POOLS, {"message": QUERY}, scorer=EmbeddingScorer(embeddings))
    assert embeddings.texts.count(QUERY) == 1
    unscored = {e["content"] for e in recall.entries if e["id"] not in recall.scores}
    assert recall.scores and set(embeddings.texts) - {QUERY} <= unscored  # only what the store gave no score for


def test_an_item_with_several_vectors_comes_back_once(pg_database: Database):
    config = index_config(CountedEmbeddings(), fields=["content", "title"])
    with PostgresStore.from_conn_string(pg_database.conninfo, index=config) as store:
        store.setup()
        for i in range(30):
            store.put(
                U1, "n%d" % i, {"content": "deploy checkout %d" % i, "title": "staging service %d" % i, "type": "note"}
            )
        memory = BaseStoreMemory(store, U1, fetch_k=8)
        ids = [e["id"] for e in memory.recall(POOLS[:2], {"message": QUERY}).entries]
        assert len(ids) == len(set(ids)) == 8
        searches = [RankedSearch(U1, 8, type="note")]
        [found] = PostgresStoreSearch(store).run(searches, QUERY)
        own = store.search(U1, filter={"type": "note"}, query=QUERY, limit=8)
        assert [round(i.score, 5) for i in found] == [round(i.score, 5) for i in own]  # each item's best field


class BatchCountingPostgresStore(PostgresStore):  # type: ignore[misc, valid-type]
    """The real store, keeping the ranked search ops its own batch ran."""

    ranked_ops: List[Any] = []

    def batch(self, ops: Any) -> Any:
        ops = list(ops)
        self.ranked_ops += [op for op in ops if getattr(op, "query", None)]
        return super().batch(ops)


def test_the_agent_sees_every_correction_and_the_nearest_notes_on_each_turn(loaded: Database):
    with connect(loaded) as conn:
        store = BatchCountingPostgresStore(conn, index=index_config(CountedEmbeddings()))
        store.ranked_ops = []
        middleware = PoolSplitMemoryMiddleware(
            POOLS, namespace=U1, recall=RecallConfig(fetch_k=10), write=WriteConfig(remember=False)
        )
        model = ToolCallingFakeModel()
        agent = scripted_agent(middleware, store, model=model)
        for text in (QUERY, "and the audit ledger?"):
            agent.invoke({"messages": [("user", text)]}, thread("t1"))
            system = system_text(model.requests[-1])
            assert "Quote amounts in cents 0." in system and "Quote amounts in cents 1." in system
            assert "rare fact 0 about the audit ledger" in system
        assert store.ranked_ops == []  # every ranked search was ours, none the store's own


def _plans(node: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from _plans(child)


def test_a_large_filters_statement_never_starts_the_exact_read(store):
    """The filter-first count says "many" (here: the count skipped, as for
    a filter remembered as large): the exact read behind the fence must not
    run at all, not even to launch its parallel workers and find its gate false."""
    search = PostgresStoreSearch(store)
    sql, params = search._statement(RankedSearch(U1, 10, type="note"), -1)
    params.update(namespace="memories.u1", vector=search.embed(QUERY))
    with store._cursor(pipeline=True) as cur, cur.connection.transaction():
        cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        [plan] = cur.fetchone()["QUERY PLAN"]
        cur.execute(sql, params)
        rows = cur.fetchall()
    fence = [n for n in _plans(plan["Plan"]) if n.get("Subplan Name") == "CTE matching"]
    assert len(fence) == 1 and fence[0]["Actual Loops"] == 0
    assert len(rows) == 21 and not any(row["exact"] for row in rows)  # the walk's 2k + 1 vectors, all of them


def test_a_writes_near_duplicate_search_is_ours_and_still_finds_the_repeat(loaded: Database):
    with connect(loaded) as conn:
        store = BatchCountingPostgresStore(conn, index=index_config(CountedEmbeddings()))
        store.ranked_ops = []
        memory = BaseStoreMemory(store, U1)
        kept = dict(next(v for ns, key, v in items() if key == "note-005"))
        report = memory.write(
            [{"content": kept["content"] + " ", "type": "note"}, {"content": "a new note", "type": "note"}]
        )
        assert report.kept == ["note-005", None]
        assert store.ranked_ops == []  # the near-duplicate searches (NEAR_K a type) were ours
        assert memory._ranked_search is not None and memory._ranked_search.last_paths  # and ran


@pytest.mark.parametrize("how", [{"pipeline": True}, {"pool_config": {"min_size": 1, "max_size": 2}}])
def test_a_pipelined_or_pooled_store_is_searched_the_same(loaded: Database, how: Dict[str, Any]):
    with connect(loaded) as conn:
        want = recalled(BaseStoreMemory(PostgresStore(conn, index=index_config(CountedEmbeddings())), U1, fetch_k=10))
    with PostgresStore.from_conn_string(loaded.conninfo, index=index_config(CountedEmbeddings()), **how) as store:
        memory = BaseStoreMemory(store, U1, fetch_k=10)
        assert recalled(memory) == want
        assert paths(memory) == ["index", "filter", "filter"]
        store.put(U1, "later", {"content": "deploy the checkout service to staging now", "type": "rare"})
        assert "later" in recalled(memory)  # the transaction ended: the next one sees the write


AsyncPostgresStore = pytest.importorskip("langgraph.store.postgres.aio").AsyncPostgresStore


class AsyncCountedEmbeddings(CountedEmbeddings):
    """Counting the async embeddings apart: the async store embeds with ``aembed_documents``."""

    def __init__(self) -> None:
        super().__init__()
        self.async_texts: List[str] = []

    async def aembed_documents(self, texts: List[str]) -> List[List[float]]:
        self.async_texts += texts
        return [hashed_ngrams(t) for t in texts]


class AsyncBatchCounting(AsyncPostgresStore):  # type: ignore[misc, valid-type]
    """The real async store, keeping the ranked search ops its own abatch ran."""

    ranked_ops: List[Any] = []

    async def abatch(self, ops: Any) -> Any:
        ops = list(ops)
        self.ranked_ops += [op for op in ops if getattr(op, "query", None)]
        return await super().abatch(ops)


async def test_an_async_postgres_store_is_searched_by_our_statements_as_the_sync_one(loaded: Database, store):
    want = recalled(BaseStoreMemory(store, U1, fetch_k=10))
    embeddings = AsyncCountedEmbeddings()
    async with AsyncBatchCounting.from_conn_string(loaded.conninfo, index=index_config(embeddings)) as astore:
        astore.ranked_ops = []
        assert serves_postgres_store(astore)
        memory = BaseStoreMemory(astore, U1, fetch_k=10)
        got = await memory.arecall(POOLS, {"message": QUERY})
        assert sorted(e["id"] for e in got.entries) == want
        assert {"bare-0", "bare-1"} <= set(want)  # the untyped items, which its own filter never finds
        assert astore.ranked_ops == []  # every ranked search ours, none the store's own
        assert paths(memory) == ["index", "filter", "filter"]
        assert embeddings.async_texts == [QUERY] and embeddings.texts == []  # one async embedding per recall


async def test_a_sync_recall_over_an_async_store_on_its_own_loop_is_refused(loaded: Database):
    async with AsyncPostgresStore.from_conn_string(loaded.conninfo, index=index_config(CountedEmbeddings())) as astore:
        memory = BaseStoreMemory(astore, U1, fetch_k=10)
        search = memory._ranked_search
        assert search is not None and search.asynchronous
        with pytest.raises(asyncio.InvalidStateError, match="use the async interface"):
            search.run([RankedSearch(U1, 5, type="note")], QUERY)


def test_a_sync_recall_over_an_async_store_from_another_thread_waits_on_its_loop(loaded: Database, store):
    want = recalled(BaseStoreMemory(store, U1, fetch_k=10))

    async def main() -> List[str]:
        config = index_config(CountedEmbeddings())
        async with AsyncPostgresStore.from_conn_string(loaded.conninfo, index=config) as astore:
            memory = BaseStoreMemory(astore, U1, fetch_k=10)
            return await asyncio.to_thread(recalled, memory)

    assert asyncio.run(main()) == want


async def test_the_agent_over_an_async_store_sees_every_correction_and_the_nearest_notes(loaded: Database):
    async with AsyncBatchCounting.from_conn_string(loaded.conninfo, index=index_config(CountedEmbeddings())) as astore:
        astore.ranked_ops = []
        middleware = PoolSplitMemoryMiddleware(
            POOLS, namespace=U1, recall=RecallConfig(fetch_k=10), write=WriteConfig(remember=False)
        )
        model = ToolCallingFakeModel()
        agent = scripted_agent(middleware, astore, model=model)
        for text in (QUERY, "and the audit ledger?"):
            await agent.ainvoke({"messages": [("user", text)]}, thread("t1"))
            system = system_text(model.requests[-1])
            assert "Quote amounts in cents 0." in system and "Quote amounts in cents 1." in system
            assert "rare fact 0 about the audit ledger" in system
            assert "deploy checkout staging bare 0" in system  # an untyped note
        assert astore.ranked_ops == []


def test_a_store_we_do_not_serve_still_recalls_untyped_items_as_notes(store):
    """With a TTL the store searches itself; its ``{"type": None}`` filter
    finds no untyped item, so they come from a search of any type, kept
    when untyped (the nearest of them: here both)."""
    ttl = PostgresStore(store.conn, index=index_config(CountedEmbeddings()), ttl={"default_ttl": 5})
    memory = BaseStoreMemory(ttl, U1, fetch_k=10)
    assert memory._ranked_search is None
    got = memory.recall(POOLS[:2], {"message": QUERY}).entries
    assert {"bare-0", "bare-1"} <= {e["id"] for e in got}
    assert all(e.get("type") in ("note", "correction", None) for e in got)  # the side search keeps only untyped
    # Its prefix match finds the children's notes too: the nearest ten of U1's
    # own, from the first page (10, 40, ...) that holds ten of them, not of the prefix's.
    limit = 10
    while True:
        ranked = ttl.search(U1, filter={"type": "note"}, query=QUERY, limit=limit)
        own = [i.key for i in ranked if tuple(i.namespace) == U1][:10]
        if len(own) == 10 or len(ranked) < limit:
            break
        limit *= 4
    assert limit > 10  # the children crowded the first page
    assert {e["id"] for e in got if e.get("type") == "note"} == set(own)


@pytest.mark.parametrize("fetch_k", [10, 2000, None], ids=["ours", "past-ours", "every-item"])
def test_a_served_store_recalls_untyped_items_whatever_fetch_k(store, fetch_k):
    """A limit past our statements' (and no fetch_k: every item) goes to the
    store's own search, which finds no untyped item: the side search does."""
    memory = BaseStoreMemory(store, U1, fetch_k=fetch_k)
    assert memory._ranked_search is not None
    assert {"bare-0", "bare-1"} <= set(recalled(memory, POOLS[:2]))


def test_a_foreign_items_number_type_is_not_a_pools_string_type(store):
    """``value->>'type'`` reads the number 5 as the text "5"; the store's own
    filter (and every other engine) compares the JSON values: no match."""
    store.put(U1, "foreign", {"content": QUERY, "type": 5})
    store.put(U1, "five", {"content": QUERY + " five", "type": "5"})
    memory = BaseStoreMemory(store, U1, fetch_k=5)
    got = recalled(memory, [Pool("fives", 10_000, 5, ("5",))])
    assert [i for i in got if not i.startswith("fix-")] == ["five"]  # and the corrections, as always
