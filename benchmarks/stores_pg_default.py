"""Benchmark: what a user gets by default over LangChain's PGVector: the pool
split's per-pool recall against one plain filtered ``similarity_search``,
measured in the same run, on data shaped like a user's, with and without the
retriever's first-use setup.

    python benchmarks/stores_pg_default.py                      # 100k entries, 10 tenants, 50 queries
    python benchmarks/stores_pg_default.py --entries 20000 --queries 20

Why a second Postgres benchmark: ``benchmarks/stores_pg.py`` (six types spread
evenly over 10 equal tenants, 15-45-word texts, 256 dimensions, every
setting chosen by hand) reported the pool split at 2.3-3.4x a plain top-k
after ``install_filter_index``, while an independent run over 100k rows of
its own measured 13-23x without the index and 17.6x after running
``install_filter_index`` where the docs' example runs it (before the data).
What differs here, on purpose:

- the data: :func:`synth.make_user_store` (10 tenants of skewed sizes, seven
  types with skewed counts, texts of a sentence to a few paragraphs, the
  metadata an agent stamps), 384 dimensions (a small real model's); a row
  then no longer fits a page's inline share, and Postgres keeps each vector
  out of line (TOAST): an exact read pays a second lookup per row;
- the baseline: the plain search as a user calls it, under pgvector's
  defaults (which returns fewer than ``k`` rows when its filter is selective:
  "returned" says how many); next to it the same search with
  ``hnsw.iterative_scan = relaxed_order`` on its connection, which returns
  its ``k`` (what ``stores_pg.py``'s recommended row compared against);
- the setup: nobody runs anything. The store is made and each tenant's
  retriever used once on the empty store (an application starting): the
  first creates the filter index
  (:func:`~poolsplit_adapters.stores.postgres.ensure_filter_index`) on the
  empty table, the others find it; then the data is loaded and the HNSW
  index built (langchain-postgres leaves that to the user). Before any
  retriever touched it, the empty database was copied; the rows are copied
  into that copy (binary ``COPY``), where they are laid out as Postgres
  does by default (each vector out of line), with its own HNSW index.
  Measured four ways: without the setup (the copy, the retrievers made with
  ``setup_store=False``); the copy again, with retrievers whose first use
  comes after the load (they make the filter index and run ``ANALYZE``; the
  rows keep their layout: what a store loaded before its first use gets);
  with the early retrievers (rows kept whole by the first use's
  ``toast_tuple_target``, still no statistics of the rows: autovacuum is
  off here, so this is the state before autovacuum comes by); and with
  retrievers made after the load, whose first use finds the index and the
  rows never counted, and runs ``ANALYZE`` once.

Per configuration: p50/p95 of the plain search, of the whole pool split call
(all its searches at once, then the selection) and of each of its searches
(timed on its own while the others run beside it; tags ``pool:<name>``,
``always``), each also as a multiple of the plain search's p50/p95 measured in
the same loop; how many rows each returned; and the calls holding all of the
tenant's always-scope corrections (every one, on every call, is the rule).
Every query is one tenant's (query ``i``: tenant ``i mod tenants``), through
that tenant's retriever (``Visibility(namespace=tenant)``), kept across
calls as an application keeps it; the first ``tenants`` queries warm each
retriever and the server's cache, untimed. Autovacuum is off (stable
statistics). The tables go to
``docs/benchmarks/_generated/stores_pg_default.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import docs_tables  # noqa: E402
import synth  # noqa: E402
from pg_embeddings import HashedNgramEmbeddings, hashed_ngrams  # noqa: E402
from pg_server import EmbeddedPostgres  # noqa: E402
from stores_pg import GIN_CLEAN, SERVER_SETTINGS, SubSearchTimer, percentiles, tenant_retrievers  # noqa: E402

from poolsplit_adapters import call as call_module  # noqa: E402
from poolsplit_adapters.langchain import PoolSplitRetriever, capture_selections  # noqa: E402
from poolsplit_adapters.stores.vectorstores import langchain_search  # noqa: E402

#: The plain search's connection options besides pgvector's defaults.
ITERATIVE = "-c hnsw.iterative_scan=relaxed_order"


def make_store(engine: Any, dims: int) -> Any:
    from langchain_postgres import PGVector

    return PGVector(HashedNgramEmbeddings(dims), connection=engine, collection_name="memory", embedding_length=dims)


def tenant(position: int, tenants: int) -> str:
    return "tenant-%d" % (position % tenants)


def retrievers(store: Any, tenants: int, fetch_k: int, setup: bool) -> List[PoolSplitRetriever]:
    """One retriever per tenant over the user-shaped pools."""
    return tenant_retrievers(store, synth.USER_POOLS, tenants, tenant, fetch_k, setup_store=setup)


def setup_outcome(mine: Sequence[PoolSplitRetriever]) -> List[Optional[bool]]:
    """What each retriever's first-use setup did: True made the index, False found it."""
    return [r._recall.setup.created for r in mine if r._recall is not None]


def rows_counted(database: Any) -> int:
    """The table's rows as its statistics counted them (``pg_class.reltuples``; 0 or -1: never)."""
    import psycopg

    with psycopg.connect(database.conninfo) as conn:
        row = conn.execute("SELECT reltuples FROM pg_class WHERE oid = 'langchain_pg_embedding'::regclass").fetchone()
    return int(row[0]) if row is not None else -1


def ingest(store: Any, entries: List[Dict[str, Any]], dims: int, batch: int) -> float:
    """Seconds to add ``entries`` through ``PGVector.add_embeddings`` (the
    vectors computed first, outside the timing)."""
    texts = [e["content"] for e in entries]
    vectors = [hashed_ngrams(t, dims) for t in texts]
    metadatas = [{k: v for k, v in e.items() if k not in ("content", "id")} for e in entries]
    ids = [e["id"] for e in entries]
    start = time.perf_counter()
    for i in range(0, len(entries), batch):
        part = slice(i, i + batch)
        store.add_embeddings(texts[part], vectors[part], metadatas=metadatas[part], ids=ids[part])
    return time.perf_counter() - start


def copy_rows(source: Any, target: Any) -> None:
    """The store's rows from ``source`` into ``target``'s table (binary
    ``COPY``), written there as that table lays them out."""
    import psycopg

    table = "langchain_pg_embedding"
    with psycopg.connect(source.conninfo) as src, psycopg.connect(target.conninfo) as dst:
        out = src.cursor().copy("COPY %s TO STDOUT (FORMAT BINARY)" % table)
        into = dst.cursor().copy("COPY %s FROM STDIN (FORMAT BINARY)" % table)
        with out as reading, into as writing:
            for data in reading:
                writing.write(data)
        dst.commit()


def build_hnsw(database: Any) -> str:
    """The HNSW index on ``database``'s embeddings (langchain-postgres leaves
    it to the user), the GIN pending list cleaned; what it took and how the
    rows are laid out."""
    import psycopg

    start = time.perf_counter()
    with psycopg.connect(database.conninfo, autocommit=True) as conn:
        conn.execute("CREATE INDEX memory_hnsw ON langchain_pg_embedding USING hnsw (embedding vector_cosine_ops)")
        conn.execute(GIN_CLEAN)
        row = conn.execute(
            "SELECT pg_relation_size('langchain_pg_embedding'), pg_table_size('langchain_pg_embedding'),"
            " (SELECT reloptions FROM pg_class WHERE oid = 'langchain_pg_embedding'::regclass)"
        ).fetchone()
    assert row is not None
    return "HNSW build (m=16, ef_construction=64) %.0f s; table %.0f MB, of which %.0f MB out of line (TOAST); %s" % (
        time.perf_counter() - start,
        row[1] / 2**20,
        (row[1] - row[0]) / 2**20,
        "table options %s" % ", ".join(row[2]) if row[2] else "no table options",
    )


class PhaseTimer:
    """Where a pool split call's time goes: its search rounds (each round's
    searches at once, ``VectorRecall.run``) and its selections (one per
    round, ``StoreCall.choose``), summed per call, wall time; both wrapped
    on their classes while :meth:`timing` runs, unchanged otherwise."""

    def __init__(self) -> None:
        self.call: Dict[str, float] = {}

    def _timed(self, phase: str, method: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.call[phase] = self.call.get(phase, 0.0) + time.perf_counter() - start

        return timed

    def timing(self) -> Any:
        import contextlib

        @contextlib.contextmanager
        def wrapped() -> Any:
            run, choose = langchain_search.VectorRecall.run, call_module.StoreCall.choose
            langchain_search.VectorRecall.run = self._timed("searches", run)  # type: ignore[method-assign]
            call_module.StoreCall.choose = self._timed("selections", choose)  # type: ignore[method-assign]
            try:
                yield
            finally:
                langchain_search.VectorRecall.run = run  # type: ignore[method-assign]
                call_module.StoreCall.choose = choose  # type: ignore[method-assign]

        return wrapped()


def run_queries(
    url: str,
    dims: int,
    queries: List[Dict[str, Any]],
    k: int,
    tenants: int,
    mine: Sequence[PoolSplitRetriever],
    corrections: int,
) -> Dict[str, Any]:
    """Each query as a plain filtered search (pgvector's defaults, then with
    the iterative scan on its own engine) and through its tenant's
    retriever in ``mine``; the first ``tenants`` warm up, untimed."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(url)
    iterative = sqlalchemy.create_engine(url, connect_args={"options": ITERATIVE})
    store, plain_iterative = make_store(engine, dims), make_store(iterative, dims)
    timer, phases = SubSearchTimer(), PhaseTimer()
    times: Dict[str, List[float]] = {"plain": [], "iterative": [], "pools": [], "searches": [], "selections": []}
    rounds: List[int] = []
    returned: Dict[str, List[int]] = {"plain": [], "iterative": []}
    complete, results = [], []
    for position, context in enumerate(queries):
        message, where = context["message"], {"namespace": tenant(position, tenants)}
        warm = position < tenants
        for name, plain in (("plain", store), ("iterative", plain_iterative)):
            start = time.perf_counter()
            top = plain.similarity_search(message, k=k, filter=where)
            if not warm:
                times[name].append(time.perf_counter() - start)
                returned[name].append(len(top))
        phases.call = {}
        with phases.timing(), capture_selections() as selections:
            start = time.perf_counter()
            got = mine[position % tenants].invoke(message, config={} if warm else {"callbacks": [timer]})
            took = time.perf_counter() - start
        if warm:
            continue
        times["pools"].append(took)
        for phase in ("searches", "selections"):
            times[phase].append(phases.call.get(phase, 0.0))
        rounds.append(selections[-1].notes["recall"]["rounds"])
        held = {d.id for d in got if d.metadata.get("scope") == "always"}
        complete.append(len(held) == corrections)
        results.append([d.id for d in got])
    engine.dispose()
    iterative.dispose()
    return {
        "times": {name: percentiles(ts) for name, ts in times.items()},
        "returned": {name: statistics.mean(n) for name, n in returned.items()},
        "sub": {tag: percentiles(ts) for tag, ts in timer.times.items()},
        "sub_returned": {tag: statistics.mean(n) for tag, n in timer.returned.items()},
        "complete": complete,
        "results": results,
        "rounds": rounds,
    }


def report(label: str, r: Dict[str, Any], k: int) -> List[str]:
    """The configuration's table, each time also as a multiple of the plain search's."""
    p50, p95 = r["times"]["plain"]
    rows: List[Tuple[str, float, float, str]] = [
        ("plain `similarity_search(k=%d)`, pgvector defaults" % k, p50, p95, "%.1f" % r["returned"]["plain"]),
        (
            "plain, `hnsw.iterative_scan = relaxed_order`",
            *r["times"]["iterative"],
            "%.1f" % r["returned"]["iterative"],
        ),
        ("**pool split, whole call** (searches at once + selection)", *r["times"]["pools"], ""),
        ("- its search rounds (each round's searches at once)", *r["times"]["searches"], ""),
        ("- its selections (one per round)", *r["times"]["selections"], ""),
    ]
    for tag, (s50, s95) in sorted(r["sub"].items(), key=lambda item: (item[0] == "always", item[0])):
        rows.append(("- search `%s`" % tag, s50, s95, "%.1f" % r["sub_returned"][tag]))
    out = [
        "\n%s\n" % label,
        "| | p50 ms | p95 ms | x plain p50 | x plain p95 | returned |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, a, b, got in rows:
        out.append("| %s | %.1f | %.1f | %.1f | %.1f | %s |" % (name, a, b, a / p50, b / p95, got))
    complete, rounds = r["complete"], r["rounds"]
    out.append(
        "\ncalls that searched again (a pool's budget still had room after the first round): %d of %d"
        " (%s rounds)" % (sum(1 for n in rounds if n > 1), len(rounds), ", ".join(sorted({str(n) for n in rounds})))
    )
    out.append(
        "\nall of the tenant's always-scope corrections loaded: %d of %d calls (%.0f%%)"
        % (sum(complete), len(complete), 100.0 * sum(complete) / max(1, len(complete)))
    )
    for line in out:
        print(line)
    return out


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50, help="timed queries (after one warm-up per tenant)")
    parser.add_argument("--tenants", type=int, default=10)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--fetch-k", type=int, default=20)
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args(argv)

    import psycopg
    import sqlalchemy

    entries = synth.make_user_store(args.entries, args.tenants)
    queries = synth.make_queries(args.queries + args.tenants, seed=5)
    k = sum(p.max_entries for p in synth.USER_POOLS)
    per_tenant = {t: 0 for t in range(args.tenants)}
    for e in entries:
        per_tenant[int(e["namespace"].split("-")[1])] += 1
    types: Dict[str, int] = {}
    for e in entries:
        types[e["type"]] = types.get(e["type"], 0) + 1
    facts = [
        "%d entries, %d tenants of %d to %d entries, each with its own %d always-scope corrections; types: %s;"
        " texts %d characters on average; %d dimensions; %d timed queries (after %d warm-up), k %d, fetch_k %d;"
        " Python %s on %s, %d cores"
        % (
            len(entries),
            args.tenants,
            min(per_tenant.values()),
            max(per_tenant.values()),
            types.get("correction", 0) // args.tenants,
            ", ".join("%s %d" % kv for kv in sorted(types.items(), key=lambda kv: -kv[1])),
            statistics.mean(len(e["content"]) for e in entries),
            args.dims,
            args.queries,
            args.tenants,
            k,
            args.fetch_k,
            platform.python_version(),
            platform.machine(),
            os.cpu_count() or 0,
        )
    ]
    with EmbeddedPostgres(SERVER_SETTINGS) as pg:
        db = pg.create_database("bench")
        engine = sqlalchemy.create_engine(db.url)
        store = make_store(engine, args.dims)
        # The same store that nothing ever set up: a copy of the empty database
        # (its tables, its collection), before any retriever touched it.
        engine.dispose()
        with psycopg.connect(pg.database().conninfo, autocommit=True) as admin:
            admin.execute('CREATE DATABASE "bench_without" TEMPLATE "%s"' % db.name)
        without = pg.database("bench_without")
        # An application starting: each tenant's retriever, its first call on the empty store.
        early = retrievers(store, args.tenants, args.fetch_k, True)
        for retriever in early:
            retriever.invoke("hello")
        facts.append(
            "first use on the empty store: filter index created by %d retriever, found by %d"
            % (setup_outcome(early).count(True), setup_outcome(early).count(False))
        )
        seconds = ingest(store, entries, args.dims, args.batch)
        facts.append("ingest: %.0f entries/s (filter index in place)" % (len(entries) / seconds))
        engine.dispose()
        copy_rows(db, without)
        for label, database in (("with the setup", db), ("without it", without)):
            facts.append("%s: %s" % (label, build_hnsw(database)))

        written: List[str] = []
        outcome: Dict[str, Dict[str, Any]] = {}
        corrections = types["correction"] // args.tenants
        configurations = (
            (
                "without",
                "Without the setup (`setup_store=False`: no filter index, each row laid out as Postgres does by"
                " default, its vector out of line): every pool search walks the HNSW index",
                without,
                lambda: retrievers(
                    make_store(sqlalchemy.create_engine(without.url), args.dims), args.tenants, args.fetch_k, False
                ),
            ),
            (
                "late",
                "Default, first used after the load, on the same rows as without the setup (the first use makes the"
                " filter index and runs ANALYZE; rows written before it keep their vectors out of line)",
                without,
                lambda: retrievers(
                    make_store(sqlalchemy.create_engine(without.url), args.dims), args.tenants, args.fetch_k, True
                ),
            ),
            (
                "early",
                "Default, nothing run by hand, retrievers in use since before the load (their first use made the"
                " filter index on the empty store; no statistics of the rows since: autovacuum is off here)",
                db,
                lambda: early,
            ),
            (
                "default",
                "Default, nothing run by hand, retrievers made after the load (the first one's first use finds the"
                " index and runs ANALYZE: the rows were never counted; what autovacuum also does after a load)",
                db,
                lambda: retrievers(
                    make_store(sqlalchemy.create_engine(db.url), args.dims), args.tenants, args.fetch_k, True
                ),
            ),
        )
        for key, label, database, made in configurations:
            counted = rows_counted(database)
            mine = made()
            result = run_queries(database.url, args.dims, queries, k, args.tenants, mine, corrections)
            outcome[key] = result
            written += report(label, result, k)
            line = "rows the planner's statistics counted: %d before these calls, %d after" % (
                counted,
                rows_counted(database),
            )
            if key in ("default", "late"):
                line += "; first use of each tenant's retriever: index created %d, found %d" % (
                    setup_outcome(mine).count(True),
                    setup_outcome(mine).count(False),
                )
            written.append(line)
            print(line)
        same = sum(1 for a, b in zip(outcome["without"]["results"], outcome["default"]["results"]) if a == b)
        overlap = statistics.mean(
            len(set(a) & set(b)) / max(1, len(set(a)))
            for a, b in zip(outcome["without"]["results"], outcome["default"]["results"])
        )
        line = (
            "\npool split, default vs without: identical result on %d of %d queries, mean overlap %.0f%% (without"
            " the index every pool search is an approximate HNSW walk; with it a pool of at most sqrt(10 k N) rows"
            " is read and ordered exactly)" % (same, len(outcome["without"]["results"]), overlap * 100)
        )
        written.append(line)
        print(line)
        intro = "".join("- %s\n" % fact for fact in facts)
        docs_tables.write_table("stores_pg_default", intro + "\n".join(written))


if __name__ == "__main__":
    main()
