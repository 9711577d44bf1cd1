"""One HNSW index per memory type on LangGraph's PostgresStore(index=), on the
embedded Postgres + pgvector: a type whose items lie behind nearer items of
another type is walked through its own index (no exact read of the type),
gives what the exact ranking gives, and every kind of write keeps the codes
the search relies on."""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Tuple

import psycopg
import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore
from pg_embeddings import DIMS, hashed_ngrams
from pg_server import Database
from psycopg.rows import dict_row

from poolsplit_adapters import Pool
from poolsplit_adapters.checks import ArgumentError
from poolsplit_adapters.langchain import BaseStoreMemory
from poolsplit_adapters.stores.langgraph.postgres_store_search import PostgresStoreSearch, type_index_ef
from poolsplit_adapters.stores.langgraph.ranked_search import RankedSearch
from poolsplit_adapters.stores.postgres import SKIP_COUNT
from poolsplit_adapters.stores.type_indexes import (
    CODES_SECONDS,
    ainstall_type_indexes,
    install_type_indexes,
    type_index_name,
)

PostgresStore = pytest.importorskip("langgraph.store.postgres").PostgresStore
AsyncPostgresStore = pytest.importorskip("langgraph.store.postgres.aio").AsyncPostgresStore

U1, U2 = ("memories", "u1"), ("memories", "u2")
QUERY = "deploy the checkout service to staging"
NOTES, FAR = 1500, 60
WORDS = ["deploy", "checkout", "staging", "service", "build"]
FAR_WORDS = ["quarterly", "tax", "ledger", "archive", "audit", "receipts", "invoice"]


class Hashed(Embeddings):
    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        return [hashed_ngrams(t) for t in texts]

    def embed_query(self, text: str) -> List[float]:
        return hashed_ngrams(text)


def index_config(**extra: Any) -> Dict[str, Any]:
    return {"dims": DIMS, "embed": Hashed(), "fields": ["content"], **extra}


def items() -> List[Tuple[Tuple[str, ...], str, Dict[str, Any]]]:
    """U1's notes (every one near the query) and episodes (every one far from
    it, so a walk of the store's one index meets every note first), and
    another user's episodes."""
    found = []
    for i in range(NOTES):
        text = " ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 5)) + " note %d" % i
        found.append((U1, "note-%04d" % i, {"content": text, "type": "note"}))
    for i in range(FAR):
        text = " ".join(FAR_WORDS[(i * k) % len(FAR_WORDS)] for k in range(1, 5)) + " episode %d" % i
        found.append((U1, "ep-%02d" % i, {"content": text, "type": "episode"}))
    for i in range(5):
        found.append((U2, "u2-ep-%d" % i, {"content": "deploy checkout staging %d" % i, "type": "episode"}))
    return found


@pytest.fixture
def loaded(pg_database: Database) -> Database:
    """The database, its store set up and filled with :func:`items` in one
    batch (the embeddings in one call), then analysed."""
    with pg_database.connect() as conn:
        store = PostgresStore(conn, index=index_config())
        store.setup()
        store.batch([PutOp(ns, key, value) for ns, key, value in items()])
        conn.execute("ANALYZE")
    return pg_database


@pytest.fixture
def store(loaded: Database) -> Iterator[Any]:
    with loaded.connect() as conn:
        yield PostgresStore(conn, index=index_config())


def walked(search: PostgresStoreSearch, kind: str, k: int = 10) -> List[Any]:
    """``k`` items of ``kind`` in U1 nearest the query, the filter-first count
    skipped (its filter remembered as large), so the search walks an index."""
    # Every filter remembered as larger than its bound (SKIP_COUNT), as a
    # type of many items is: no count, no exact read first, a walk.
    search.large_filters.bound = lambda s, rows: SKIP_COUNT  # type: ignore[method-assign]
    return list(search.run([RankedSearch(U1, k, type=kind)], QUERY)[0])


def exact(kind: str, k: int = 10) -> List[float]:
    """The exact ranking's top ``k`` cosine scores of U1's items of ``kind``."""
    query = hashed_ngrams(QUERY)
    scores = [
        sum(a * b for a, b in zip(query, hashed_ngrams(value["content"])))
        for ns, key, value in items()
        if ns == U1 and value["type"] == kind
    ]
    return [round(s, 4) for s in sorted(scores, reverse=True)[:k]]


def code_of(store: Any, key: str) -> Any:
    with store._cursor() as cur:
        cur.execute("SELECT poolsplit_type_code FROM store_vectors WHERE prefix = 'memories.u1' AND key = %s", (key,))
        row = cur.fetchone()
        return None if row is None else row["poolsplit_type_code"]


def test_a_far_type_walks_its_own_index_and_gives_the_exact_ranking(loaded: Database, store):
    # One batch of the walk only (the session's hnsw.max_scan_tuples, which a
    # search never raises): a table as small as a test's is then as a large one.
    with loaded.connect("-c hnsw.max_scan_tuples=1") as conn:
        short = PostgresStore(conn, index=index_config())
        before = PostgresStoreSearch(short)
        got = walked(before, "episode")
        # Mostly "exact" (the store's index meets the notes first and comes back
        # short); an HNSW graph is random, and now and then its first batch holds them.
        assert before.last_paths[0] in ("exact", "index")
        scores = [round(i.score, 4) for i in got]
        if before.last_paths[0] == "exact":
            assert scores == exact("episode")
        else:  # the store's own walk is approximate, as every HNSW walk
            assert len(got) == 10 and {i.value["type"] for i in got} == {"episode"}
            assert scores == sorted(scores, reverse=True)
            assert set(scores) <= set(exact("episode", k=FAR))

        codes = install_type_indexes(store, ["episode", "note"])
        assert [name for name, _ in codes] == ["episode", "note"]
        search = PostgresStoreSearch(short)
        got = walked(search, "episode")
        assert search.last_paths == ["type index"]  # the type's own index: its first batch holds its nearest
        assert search.type_codes == dict(codes)
        assert [round(i.score, 4) for i in got] == exact("episode")  # ef_search 100 >= the 60 episodes
        assert {i.namespace for i in got} == {U1}  # never another user's, though theirs are nearer
    search = PostgresStoreSearch(store)
    notes = walked(search, "note")  # 1500 near-duplicates: approximate, as every HNSW walk
    assert search.last_paths == ["type index"]
    assert len(notes) == 10 and {i.value["type"] for i in notes} == {"note"}
    scores = [round(i.score, 4) for i in notes]
    assert scores == sorted(scores, reverse=True) and scores[0] == exact("note")[0]


def test_the_walk_uses_the_types_partial_index(store):
    codes = dict(install_type_indexes(store, ["episode"]))
    search = PostgresStoreSearch(store)
    search.run([RankedSearch(U1, 10, type="episode")], QUERY)  # reads the codes
    sql = search._index_sql(" AND s.value->>'type' = %(type)s", code=codes["episode"])
    params = {"namespace": "memories.u1", "type": "episode", "rows": 21, "vector": search.embed(QUERY)}
    with store._cursor() as cur, cur.connection.transaction():
        cur.execute("SELECT set_config('enable_sort', 'off', true)")
        cur.execute("EXPLAIN (FORMAT JSON) " + sql, params)
        plan = str(cur.fetchone())
    assert type_index_name(codes["episode"]) in plan
    assert "'episode'" not in sql and "%(type)s" in sql  # the type itself stays a bound parameter


def test_every_kind_of_write_keeps_the_codes(store):
    codes = dict(install_type_indexes(store, ["episode", "note"]))
    assert code_of(store, "ep-00") == codes["episode"] and code_of(store, "note-0000") == codes["note"]
    # A new item (LangGraph's own put: the item first, then its vector).
    store.put(U1, "ep-new", {"content": QUERY, "type": "episode"})
    assert code_of(store, "ep-new") == codes["episode"]
    search = PostgresStoreSearch(store)
    assert walked(search, "episode", 3)[0].key == "ep-new"  # the nearest episode now
    assert search.last_paths == ["type index"]
    # Its type changes (re-embedded), then changes back without re-embedding (index=False keeps the vector).
    store.put(U1, "ep-new", {"content": QUERY, "type": "note"})
    assert code_of(store, "ep-new") == codes["note"]
    assert "ep-new" not in [i.key for i in walked(search, "episode", 3)]
    store.put(U1, "ep-new", {"content": QUERY, "type": "episode"}, index=False)
    assert code_of(store, "ep-new") == codes["episode"]
    # A type not listed: code 0 (kept, in no type's index); deleted, its vector is gone with it.
    store.put(U1, "ep-new", {"content": QUERY, "type": "task"})
    assert code_of(store, "ep-new") == 0
    store.delete(U1, "ep-new")
    with store._cursor() as cur:
        cur.execute("SELECT count(*) AS n FROM store_vectors WHERE key = 'ep-new'")
        assert cur.fetchone()["n"] == 0


def test_installing_again_or_with_more_types_keeps_the_codes(store):
    first = install_type_indexes(store, ["episode"])
    again = install_type_indexes(store, ["note", "episode", "note"])
    assert dict(again)["episode"] == dict(first)["episode"]
    assert sorted(dict(again)) == ["episode", "note"]
    assert code_of(store, "note-0007") == dict(again)["note"]  # the new type's vectors: backfilled


def test_a_disabled_trigger_or_a_dropped_index_stops_the_codes_being_used(store):
    codes = dict(install_type_indexes(store, ["episode"]))
    search = PostgresStoreSearch(store)
    now = [0.0]
    search.clock = lambda: now[0]
    walked(search, "episode")
    assert search.last_paths == ["type index"]
    with store._cursor() as cur:
        cur.execute("ALTER TABLE store DISABLE TRIGGER poolsplit_store_type_moved")
    walked(search, "episode")
    assert search.last_paths == ["type index"]  # read within the window: kept
    now[0] += CODES_SECONDS
    walked(search, "episode")
    assert search.type_codes == {} and "type index" not in search.last_paths
    with store._cursor() as cur:
        cur.execute("ALTER TABLE store ENABLE TRIGGER poolsplit_store_type_moved")
        cur.execute("DROP INDEX %s" % type_index_name(codes["episode"]))
    now[0] += CODES_SECONDS
    walked(search, "episode")
    assert search.type_codes == {} and "type index" not in search.last_paths


def test_a_vector_written_without_the_triggers_turns_its_namespace_back_to_the_stores_index(store):
    """Written while the vector trigger was off (or by a session replicating
    with triggers off), a vector has no code: its namespace is searched
    without the type indexes (and the item is found), until an install
    gives it its code."""
    install_type_indexes(store, ["episode"])
    with store._cursor() as cur:
        cur.execute("ALTER TABLE store_vectors DISABLE TRIGGER poolsplit_vector_type_code")
    store.put(U1, "ep-blind", {"content": QUERY, "type": "episode"})
    with store._cursor() as cur:
        cur.execute("ALTER TABLE store_vectors ENABLE TRIGGER poolsplit_vector_type_code")
    assert code_of(store, "ep-blind") is None
    search = PostgresStoreSearch(store)
    found = walked(search, "episode", 3)
    # The store's own index (approximate: it may or may not meet the new item first).
    assert "type index" not in search.last_paths and {i.value["type"] for i in found} == {"episode"}
    with connect_replica(store) as replica:  # another blind write, as a logical-replication apply
        PostgresStore(replica, index=index_config()).put(U2, "u2-blind", {"content": QUERY, "type": "episode"})
    install_type_indexes(store, ["episode"])  # again: every code as the rule gives it
    assert code_of(store, "ep-blind") == search.type_codes["episode"]
    found = walked(search, "episode", 3)
    assert search.last_paths == ["type index"] and found[0].key == "ep-blind"


def connect_replica(store: Any) -> psycopg.Connection:
    info = store.conn.info
    return psycopg.Connection.connect(
        "host=%s dbname=%s user=%s" % (info.host, info.dbname, info.user),
        autocommit=True,
        prepare_threshold=0,
        row_factory=dict_row,
        options="-c session_replication_role=replica",
    )


def test_hostile_type_names_are_values_not_sql(store):
    hostile = ["x'); DROP TABLE store; --", 'ü\u2028"q"', "a%(type)sb"]
    for n, name in enumerate(hostile):
        store.put(U1, "h-%d" % n, {"content": QUERY + " %d" % n, "type": name})
    codes = dict(install_type_indexes(store, hostile))
    assert sorted(codes) == sorted(hostile)
    search = PostgresStoreSearch(store)
    for n, name in enumerate(hostile):
        found = search.run([RankedSearch(U1, 5, type=name)], QUERY)[0]
        assert [i.key for i in found] == ["h-%d" % n]
    with store._cursor() as cur:
        cur.execute("SELECT count(*) AS n FROM store")
        assert cur.fetchone()["n"] == len(items()) + len(hostile)


@pytest.mark.parametrize(
    "types, words",
    [
        ("episode", "list of type names"),
        ([], "empty"),
        (["episode", 3], "types[1]"),
        (["episode", ""], "types[1]"),
        (["bad\x00type"], "types[0]"),
        (["ok", "lone \ud800"], "types[1]"),
        (["t" * 1001], "types[0] is 1001 bytes"),
    ],
)
def test_bad_types_are_refused_by_name_before_anything_runs(store, types, words):
    with pytest.raises(ArgumentError, match=words.replace("[", r"\[").replace("]", r"\]")):
        install_type_indexes(store, types)
    with store._cursor() as cur:
        cur.execute("SELECT to_regclass('poolsplit_vector_types') IS NULL AS missing")
        assert cur.fetchone()["missing"]


def test_other_stores_are_refused_with_what_to_use(loaded: Database):
    with pytest.raises(ArgumentError, match="PostgresStore"):
        install_type_indexes(InMemoryStore(index=index_config()), ["episode"])
    with loaded.connect() as conn:
        with pytest.raises(ArgumentError, match="index="):
            install_type_indexes(PostgresStore(conn), ["episode"])
        flat = PostgresStore(conn, index=index_config(ann_index_config={"kind": "flat"}))
        with pytest.raises(ArgumentError, match="HNSW"):
            install_type_indexes(flat, ["episode"])


def test_the_runs_ef_search_is_raised_only_for_type_walks():
    assert type_index_ef(20) == 100
    assert type_index_ef(100) == 500
    assert type_index_ef(400) == 1000  # pgvector's cap


async def test_the_async_install_and_search_walk_the_type_index(loaded: Database):
    async with AsyncPostgresStore.from_conn_string(loaded.conninfo, index=index_config()) as astore:
        with pytest.raises(ArgumentError, match="await ainstall_type_indexes"):
            install_type_indexes(astore, ["episode"])
        codes = await ainstall_type_indexes(astore, ["episode"])
        search = PostgresStoreSearch(astore)
        search.large_filters.bound = lambda s, rows: SKIP_COUNT  # type: ignore[method-assign]  # a walk
        found = (await search.arun([RankedSearch(U1, 10, type="episode")], QUERY))[0]
        assert search.type_codes == dict(codes) and search.last_paths == ["type index"]
        assert [round(i.score, 4) for i in found] == exact("episode")
    with loaded.connect() as conn, pytest.raises(ArgumentError, match="a sync store: install_type_indexes"):
        await ainstall_type_indexes(PostgresStore(conn, index=index_config()), ["episode"])


def test_the_middleware_recall_over_type_indexes_is_the_exact_one(store):
    install_type_indexes(store, ["episode", "note"])
    pools = [Pool("episodes", 10_000, 5, ("episode",)), Pool("notes", 10_000, 5, ("note",))]
    memory = BaseStoreMemory(store, U1, fetch_k=5)
    recall = memory.recall(pools, {"message": QUERY})
    search = memory._ranked_search
    assert search is not None and search.last_paths[0] in ("type index", "filter")  # 60 episodes: few, read exactly
    recall = memory.recall(pools, {"message": QUERY})  # their filter remembered as small: the same answer
    got = sorted(round(recall.scores[e["id"]], 4) for e in recall.entries if e["type"] == "episode")
    assert got == sorted(exact("episode", 5))


def test_writes_during_an_install_wait_for_it_and_get_their_codes(loaded: Database, store):
    """The install locks the tables in the order LangGraph's writes take
    them (no deadlock with a put), and a write that waited gets its code."""
    import threading

    errors: List[BaseException] = []
    done = threading.Event()

    def writer() -> None:
        with loaded.connect() as conn:
            other = PostgresStore(conn, index=index_config())
            n = 0
            try:
                while not done.is_set() or n < 20:
                    other.put(U1, "w-%03d" % n, {"content": "%s %d" % (QUERY, n), "type": "episode"})
                    n += 1
            except BaseException as err:  # noqa: BLE001 - reported below
                errors.append(err)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        codes = dict(install_type_indexes(store, ["episode", "note"]))
    finally:
        done.set()
        thread.join()
    assert errors == []
    with store._cursor() as cur:
        cur.execute(
            "SELECT count(*) AS n FROM store_vectors WHERE key LIKE 'w-%%' AND poolsplit_type_code IS DISTINCT FROM %s",
            (codes["episode"],),
        )
        assert cur.fetchone()["n"] == 0


def test_a_generic_plan_of_the_search_still_walks_the_types_index(store):
    """psycopg prepares a statement run often; Postgres may then plan it once
    for every value. The type's code is a literal in the text for this: the
    planner proves a partial index's predicate from a literal only."""
    import re

    codes = dict(install_type_indexes(store, ["episode"]))
    search = PostgresStoreSearch(store)
    search.run([RankedSearch(U1, 10, type="episode")], QUERY)  # reads the codes
    sql, _ = search._statement(RankedSearch(U1, 10, type="episode"), SKIP_COUNT)
    names: Dict[str, int] = {}
    numbered = re.sub(r"%\((\w+)\)s", lambda m: "$%d" % names.setdefault(m.group(1), len(names) + 1), sql)
    with store._cursor() as cur, cur.connection.transaction():
        cur.execute("SELECT set_config('enable_sort', 'off', true)")
        # The simple query protocol: parameters named but given no value (a generic plan).
        result = cur.connection.pgconn.exec_(("EXPLAIN (GENERIC_PLAN) " + numbered.replace("%%", "%")).encode())
        plan = "\n".join((result.get_value(row, 0) or b"").decode() for row in range(result.ntuples))
    assert "$1" in numbered and type_index_name(codes["episode"]) in plan, plan


def test_a_run_raises_ef_search_only_when_it_walks_a_type_index(store):
    install_type_indexes(store, ["episode"])
    search = PostgresStoreSearch(store)
    sent: List[Tuple[str, Dict[str, Any]]] = []
    own = search._steps

    def recorded(*args: Any) -> Any:  # our own statements, recorded as the run sends them
        steps = own(*args)
        answer = None
        try:
            while True:
                statement = steps.send(answer)
                sent.append(statement)
                answer = yield statement
        except StopIteration as done:
            return done.value

    search._steps = recorded  # type: ignore[method-assign]

    def ef_set() -> List[Any]:
        return [params.get("ef") for sql, params in sent if "hnsw.max_scan_tuples" in sql]

    search.run([RankedSearch(U1, 10, type="episode")], QUERY)
    assert ef_set() == [type_index_ef(10)]
    assert all("set_config('hnsw.ef_search'" in sql for sql, params in sent if params.get("ef"))
    sent.clear()
    search.run([RankedSearch(U1, 10, type="note"), RankedSearch(U1, 10, untyped=True)], QUERY)  # no type index
    assert ef_set() == [None]
