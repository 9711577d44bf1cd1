"""Benchmark: what ``PoolSplitMemoryMiddleware`` adds to one agent turn, by
namespace size and LangGraph store.

    python benchmarks/middleware_turn.py                       # 10k and 100k; every store kind
    python benchmarks/middleware_turn.py --stores postgres postgres-counter
    python benchmarks/middleware_turn.py --sizes 10000 --stores memory sqlite
    python benchmarks/middleware_turn.py --stores memory-index sqlite-index postgres-index postgres-index-spread postgres-index-types

One user's namespace holds N memories (20 always-scope corrections, the rest
mixed episodes, facts, skills, notes and tasks). A real ``create_agent``
agent (LangChain's ``GenericFakeChatModel``, a checkpointer) answers one
human message per turn on one thread, with and without the middleware; the
overhead is the difference of the medians. Two kinds of turn:

- **quiet**: nothing is written between turns (``max_turns`` above the
  number of turns): the middleware reads its watermark and selects over the
  index it kept;
- **demoting**: ``max_turns=1``, so every turn writes the oldest turn back
  to the store as an episode before the model call: the watermark moves and
  the changed items are read again.

Reported per store and size: the turn's p50 / p95 with the middleware, the
overhead (p50 with - p50 without), and the store round trips (``batch`` /
``abatch`` calls, and our ranked searches' transactions) per turn, excluding the checkpointer's. The corrections
are checked on every model call: a turn whose model request lacks one of
them stops the run.

PostgresStore runs on a throwaway embedded Postgres (tests/pg_server.py,
unix socket only); its watermark is a server-side digest of the namespace
(one query per turn, O(namespace) in the server), or, as
``postgres-counter``, the per-namespace change counter that
``stores.postgres.install_change_counter`` keeps with triggers (one
primary-key lookup); it is skipped with a line when the server cannot
start.

The ``-index`` kinds are the same stores built with a vector index
(``index={"dims": ..., "embed": ..., "fields": ["content"]}``: a
deterministic offline embedding, tests/pg_embeddings.py's hashed word
n-grams; PostgresStore's default HNSW index) and the middleware given
``fetch_k``: each pool's types are recalled by similarity, ``fetch_k``
items a type, and the corrections come from the middleware's kept index of
them. Over ``InMemoryStore`` the ranked searches are ours
(``stores/langgraph/memory_store_search.py``: a kept matrix of the namespace's
vectors, one NumPy pass a query; the store counts its batches through
instance attributes, so its class stays the store's own and is served);
``SqliteStore`` (sqlite-vec) searches with its own ``search``, which
compares the query with every vector of the namespace. Over PostgresStore
the ranked searches are ours
(``stores/langgraph/postgres_store_search.py``: the HNSW index walked, a type of few
items read exactly through ``install_filter_index``'s index, a walk that
gives up completed exactly), timed as one round trip of the store.
``postgres-index`` keeps the memories whose words follow their type (a
query about deploys is near the episodes only: every other type's search
ends in the exact read of its items); ``postgres-index-spread`` is the same
store with every type holding memories of every word;
``postgres-index-types`` is the first corpus with
``stores.type_indexes.install_type_indexes`` run for every type (each type
walks its own HNSW index).
Reported for every kind: the time spent inside the store per turn (its
``batch`` calls and our ranked searches; p50), so what the middleware itself
adds is the overhead less it. The run writes the table and draws
docs/benchmarks/plots/middleware_turn.svg from it (``--plot-only``: from
the table already written, measuring nothing).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from itertools import repeat
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import docs_tables  # noqa: E402
import plots  # noqa: E402
from basestore_recall import POOLS, TYPES  # noqa: E402  (the same memory and pools)
from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402
from langgraph.store.sqlite import SqliteStore  # noqa: E402
from pg_embeddings import HashedNgramEmbeddings  # noqa: E402

from poolsplit_adapters.langchain import BaseStoreMemory, PoolSplitMemoryMiddleware, RecallConfig, WriteConfig  # noqa: E402
from poolsplit_adapters.render import parse_markers  # noqa: E402
from poolsplit_adapters.stores.langgraph.memory_store_search import InMemoryStoreSearch  # noqa: E402
from poolsplit_adapters.stores.langgraph.postgres_store_search import PostgresStoreSearch  # noqa: E402

#: fetch_k of the middleware over a vector-indexed store: items each type's search recalls.
FETCH_K = 20

U1 = ("memories", "u1")
FIXES = 20
WORDS = "deploy refund checkout staging invoice currency retry webhook ledger rollout".split()


#: The table's columns (the async benchmark adds one).
HEADER = (
    "store",
    "memories",
    "turn",
    "p50",
    "p95",
    "overhead (p50)",
    "store round trips / turn",
    "in the store (p50)",
)


def counter(text: str) -> int:
    return max(1, len(text) // 4)


def memories(size: int, spread: bool = False) -> List[Dict[str, Any]]:
    """The namespace's memories. Memory ``n`` has type ``n % 5`` and words
    picked by ``n`` (so the words follow the type: every memory about a
    deploy is an episode) or, ``spread``, by ``n // 5`` (every type holds
    memories about every word)."""
    entries = [
        {"id": "fix-%02d" % n, "type": "correction", "scope": "always", "content": "Standing correction %d." % n}
        for n in range(FIXES)
    ]
    entries += [
        {
            "id": "m%06d" % n,
            "type": TYPES[n % 5],
            "content": "memory %d about %s and %s" % (n, WORDS[w % 10], WORDS[(w * 7) % 10]),
            "created": "2026-11-%02dT10:00:00Z" % (1 + n % 28),
        }
        for n, w in ((n, n // 5 if spread else n) for n in range(size - FIXES))
    ]
    return entries


def counting(cls: type) -> type:
    """``cls`` (a LangGraph store class) counting its batches: the real store answers."""

    class Counting(cls):  # type: ignore[misc, valid-type]
        calls = 0
        seconds = 0.0

        def batch(self, ops: Any) -> Any:
            self.calls += 1
            start = time.perf_counter()
            try:
                return super().batch(ops)
            finally:
                self.seconds += time.perf_counter() - start

        async def abatch(self, ops: Any) -> Any:
            self.calls += 1
            start = time.perf_counter()
            try:
                return await super().abatch(ops)
            finally:
                self.seconds += time.perf_counter() - start

    return Counting


_own_runs = {PostgresStoreSearch: PostgresStoreSearch.run, InMemoryStoreSearch: InMemoryStoreSearch.run}


def _counted_run(self: Any, searches: Any, query: Optional[str] = None) -> Any:
    """Our own ranked searches over PostgresStore(index=) (one transaction
    of statements, not a ``batch``), counted as one round trip of the store
    and timed with its batches."""
    start = time.perf_counter()
    try:
        return _own_runs[type(self)](self, searches, query)
    finally:
        if hasattr(self.store, "calls"):
            self.store.calls += 1
            self.store.seconds += time.perf_counter() - start


_own_aruns = {PostgresStoreSearch: PostgresStoreSearch.arun, InMemoryStoreSearch: InMemoryStoreSearch.arun}


async def _counted_arun(self: Any, searches: Any, query: Optional[str] = None) -> Any:
    """:func:`_counted_run` of the async run (an ``AsyncPostgresStore``'s)."""
    start = time.perf_counter()
    try:
        return await _own_aruns[type(self)](self, searches, query)
    finally:
        if hasattr(self.store, "calls"):
            self.store.calls += 1
            self.store.seconds += time.perf_counter() - start


PostgresStoreSearch.run = _counted_run  # type: ignore[method-assign]
PostgresStoreSearch.arun = _counted_arun  # type: ignore[method-assign]
InMemoryStoreSearch.run = _counted_run  # type: ignore[method-assign]  # the same count for the in-memory searches
InMemoryStoreSearch.arun = _counted_arun  # type: ignore[method-assign]


def vector_index() -> Dict[str, Any]:
    """A LangGraph store's ``index=`` config: the offline hashed n-gram embedding of each item's content."""
    embeddings = HashedNgramEmbeddings()
    return {"dims": embeddings.dims, "embed": embeddings, "fields": ["content"]}


def counted_instance(store: Any) -> Any:
    """``store`` counting its batches through instance attributes: its class
    stays the store's own, so the middleware serves its ranked searches as
    it would a user's (a subclass with its own ``batch`` keeps its own search)."""
    store.calls, store.seconds = 0, 0.0
    own_batch, own_abatch = store.batch, store.abatch

    def batch(ops: Any) -> Any:
        store.calls += 1
        start = time.perf_counter()
        try:
            return own_batch(ops)
        finally:
            store.seconds += time.perf_counter() - start

    async def abatch(ops: Any) -> Any:
        store.calls += 1
        start = time.perf_counter()
        try:
            return await own_abatch(ops)
        finally:
            store.seconds += time.perf_counter() - start

    store.batch, store.abatch = batch, abatch
    return store


class PlainInMemoryStore(InMemoryStore):
    """``InMemoryStore`` itself (no method of its own), with an instance
    ``__dict__`` (the store declares ``__slots__``) for the counting wrappers."""


@contextlib.contextmanager
def in_memory(indexed: bool = False) -> Iterator[Any]:
    yield counted_instance(PlainInMemoryStore(index=vector_index() if indexed else None))


@contextlib.contextmanager
def sqlite(indexed: bool = False) -> Iterator[Any]:
    with tempfile.TemporaryDirectory() as folder:
        conn = sqlite3.connect(os.path.join(folder, "lg.db"), check_same_thread=False, isolation_level=None)
        store = counting(SqliteStore)(conn, index=vector_index() if indexed else None)
        if indexed and not hasattr(conn, "enable_load_extension"):
            conn.close()
            raise RuntimeError("this Python's sqlite3 cannot load extensions, and SqliteStore's index needs sqlite-vec")
        store.setup()
        try:
            yield store
        finally:
            conn.close()


@contextlib.contextmanager
def postgres(counted: bool = False, indexed: bool = False, typed: bool = False) -> Iterator[Any]:
    from langgraph.store.postgres import PostgresStore
    from pg_server import EmbeddedPostgres
    from psycopg import Connection
    from psycopg.rows import dict_row

    from poolsplit_adapters.stores.postgres import install_change_counter, install_filter_index
    from poolsplit_adapters.stores.type_indexes import install_type_indexes

    with EmbeddedPostgres() as pg:
        db = pg.create_database("turns")
        with Connection.connect(db.conninfo, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
            store = counting(PostgresStore)(conn, index=vector_index() if indexed else None)  # HNSW by default
            store.setup()
            if counted:
                install_change_counter(store)
            if indexed:  # bulk load, then build the HNSW index (as LangGraph's setup defines it): minutes faster
                with conn.cursor() as cur:
                    cur.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'store_vectors_embedding_idx'")
                    definition = cur.fetchone()["indexdef"]
                    cur.execute("DROP INDEX store_vectors_embedding_idx")

                def loaded() -> None:
                    with conn.cursor() as cur:
                        cur.execute("SET maintenance_work_mem = '512MB'")
                        if typed:  # before the store's own index: the codes' backfill re-indexes nothing
                            install_type_indexes(store, TYPES)
                        cur.execute(definition)
                        cur.execute("ANALYZE")
                    install_filter_index(store)  # as the docs advise for the ranked searches

                store.loaded = loaded
            yield store


@contextlib.contextmanager
def postgres_counted() -> Iterator[Any]:
    """PostgresStore with the change counter's triggers installed (O(1) watermark)."""
    with postgres(counted=True) as store:
        yield store


STORES: Dict[str, Callable[[], Any]] = {
    "memory": in_memory,
    "sqlite": sqlite,
    "postgres": postgres,
    "postgres-counter": postgres_counted,
    "memory-index": lambda: in_memory(indexed=True),
    "sqlite-index": lambda: sqlite(indexed=True),
    "postgres-index": lambda: postgres(counted=True, indexed=True),
    "postgres-index-spread": lambda: postgres(counted=True, indexed=True),
    "postgres-index-types": lambda: postgres(counted=True, indexed=True, typed=True),
}
#: The kinds whose memories spread every word over every type (:func:`memories`).
SPREAD = ("postgres-index-spread",)
NAMES = {
    "memory": "InMemoryStore",
    "sqlite": "SqliteStore",
    "postgres": "PostgresStore",
    "postgres-counter": "PostgresStore + install_change_counter",
    "memory-index": "InMemoryStore(index=), fetch_k=%d" % FETCH_K,
    "sqlite-index": "SqliteStore(index=, sqlite-vec), fetch_k=%d" % FETCH_K,
    "postgres-index": "PostgresStore(index=, HNSW) + install_change_counter + install_filter_index, fetch_k=%d"
    % FETCH_K,
    "postgres-index-spread": "the same, every type holding memories of every word",
    "postgres-index-types": "the same as two rows up (words follow the type) + install_type_indexes",
}


def _fixes_seen(model_requests: List[List[BaseMessage]]) -> int:
    text = str(model_requests[-1][0].text) if model_requests and model_requests[-1] else ""
    return sum(1 for m in parse_markers(text) if m.get("scope") == "always")


class RecordingModel(GenericFakeChatModel):
    """LangChain's fake chat model, keeping each request's messages."""

    requests: List[List[BaseMessage]] = []

    def _generate(self, messages: List[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        self.requests.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kw)


def turns(
    store: Any,
    middleware: Optional[PoolSplitMemoryMiddleware],
    count: int,
    run: Optional[Callable[[Any, Any, Any], Any]] = None,
) -> Tuple[List[float], List[int], List[float]]:
    """Seconds, store round trips and seconds inside the store's batches of
    each of ``count`` turns on one thread (after one warm-up turn); ``run``
    runs one turn (``run(agent, input, config)``), ``agent.invoke`` by default."""
    model = RecordingModel(messages=repeat(AIMessage("ok")), requests=[])
    agent = create_agent(
        model, middleware=[middleware] if middleware else [], checkpointer=InMemorySaver(), store=store
    )
    config = {"configurable": {"thread_id": "t-%d" % id(model)}}
    run = run or (lambda agent, given, config: agent.invoke(given, config))
    run(agent, {"messages": [HumanMessage("warm up: deploy")]}, config)
    times, trips, inside = [], [], []
    for n in range(count):
        before, spent = store.calls, store.seconds
        start = time.perf_counter()
        run(agent, {"messages": [HumanMessage("what about the %s %d?" % (WORDS[n % 10], n))]}, config)
        times.append(time.perf_counter() - start)
        trips.append(store.calls - before)
        inside.append(store.seconds - spent)
        if middleware is not None and _fixes_seen(model.requests) != FIXES:
            raise SystemExit("turn %d: the model call lacked a correction" % n)
    return times, trips, inside


def p95(values: List[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def measure(kind: str, size: int, count: int) -> List[List[str]]:
    rows = []
    with STORES[kind]() as store:
        begin = time.perf_counter()
        loader, items = BaseStoreMemory(store, U1, token_counter=counter), memories(size, kind in SPREAD)
        for start in range(0, size, 2_000):  # SqliteStore binds every value of one batch: keep batches small
            loader.put_many(items[start : start + 2_000])
        getattr(store, "loaded", lambda: None)()
        loaded = time.perf_counter() - begin
        bare, _, _ = turns(store, None, count)
        fetch_k = FETCH_K if "-index" in kind else None
        for label, max_turns in (("quiet", count + 10), ("demoting", 1)):
            middleware = PoolSplitMemoryMiddleware(
                POOLS,
                namespace=U1,
                max_turns=max_turns,
                recall=RecallConfig(token_counter=counter, fetch_k=fetch_k),
                write=WriteConfig(remember=False),
            )
            first = time.perf_counter()
            times, trips, inside = turns(store, middleware, count)
            total = time.perf_counter() - first
            overhead = statistics.median(times) - statistics.median(bare)
            rows.append(
                [
                    NAMES[kind],
                    f"{size:,}",
                    label,
                    "%.1f ms" % (1000 * statistics.median(times)),
                    "%.1f ms" % (1000 * p95(times)),
                    "%.1f ms" % (1000 * overhead),
                    "%.1f" % statistics.mean(trips),
                    "%.1f ms" % (1000 * statistics.median(inside)),
                ]
            )
            print(" | ".join(rows[-1]), "(load %.1f s, %d turns + warm-up in %.1f s)" % (loaded, count, total))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--stores", nargs="+", choices=sorted(STORES), default=list(STORES))
    parser.add_argument("--turns", type=int, default=15)
    parser.add_argument("--plot-only", action="store_true", help="redraw the plot from the table written before")
    args = parser.parse_args()
    if args.plot_only:
        plots.middleware_turn()
        return
    header = list(HEADER)
    rows: List[List[str]] = []
    skipped: List[str] = []
    for kind in args.stores:
        for size in args.sizes:
            try:
                rows += measure(kind, size, args.turns)
            except ImportError as err:
                skipped.append("%s skipped: %s" % (NAMES[kind], err))
                break
            except RuntimeError as err:  # the embedded Postgres did not start
                skipped.append("%s skipped: %s" % (NAMES[kind], str(err).splitlines()[0]))
                break
    for line in skipped:
        print(line)
    body = docs_tables.markdown_table(header, rows, "lllrrrrr")
    if skipped:
        body += "\n\n" + "\n".join("*%s.*" % line for line in skipped)
    docs_tables.write_table("middleware_turn", body)
    plots.middleware_turn()


if __name__ == "__main__":
    main()
