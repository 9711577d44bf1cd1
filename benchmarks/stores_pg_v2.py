"""Benchmark: pool-split recall over langchain-postgres v2's ``PGVectorStore``
(HNSW), our sized and completed pool searches against the store's own.

    python benchmarks/stores_pg_v2.py                       # 20k entries, 10 tenants, 20 queries
    python benchmarks/stores_pg_v2.py --entries 5000 --queries 10
    python benchmarks/stores_pg_v2.py --force-index       # the planner must use the index

Starts its own throwaway Postgres (tests/pg_server.py), loads a synthetic
mixed-type store (benchmarks/synth.py, the entries spread over
``--tenants`` namespaces) into a v2 table through ``add_embeddings``, builds
the store's ``HNSWIndex`` and runs ANALYZE, then, for each query and its
tenant, on connections with pgvector's defaults (no iterative scan set;
``--force-index``: no sequential scans either, as the planner chooses at
larger tables):

- plain: ``store.similarity_search(query, k, filter={"namespace": tenant})``,
  k = the pools' total contextual entry cap;
- own: ``PoolSplitRetriever.from_vectorstore(store, pools, ...)`` with a
  ``filter_builder`` of its own (the dict filter, wrapped), which keeps the
  store's own filtered similarity search per pool (what v2 got before);
- ours: the default retriever: each pool search is our statement on the
  store's table, the HNSW scan sized to ``k`` with the iterative scan on, a
  short page run again exactly.

Reported: latency p50/p95 of each, how many non-correction pools each
result reaches, and how many pools the recall says the store ran out for
(``notes["recall"]["store_ran_out"]``; for "own" that count includes pools
the index, not the table, ran out for).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import synth  # noqa: E402
from pg_embeddings import DIMS, HashedNgramEmbeddings, hashed_ngrams  # noqa: E402
from pg_server import EmbeddedPostgres  # noqa: E402

from poolsplit_adapters import Visibility  # noqa: E402
from poolsplit_adapters.langchain import PoolSplitRetriever, dict_filter  # noqa: E402
from poolsplit_adapters.recall import Search  # noqa: E402


def percentiles(samples: Sequence[float]) -> Tuple[float, float]:
    """(p50, p95) in milliseconds."""
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return statistics.median(ordered) * 1000, p95 * 1000


def tenant_of(position: int, tenants: int) -> str:
    return "tenant-%d" % (position % tenants)


def load(url: str, entries: List[Dict[str, Any]]) -> None:
    """The entries into table ``memory`` through the store, then its HNSW index and statistics."""
    from langchain_postgres import Column, PGEngine, PGVectorStore
    from langchain_postgres.v2.indexes import HNSWIndex
    from sqlalchemy import text

    engine = PGEngine.from_connection_string(url)
    try:
        engine.init_vectorstore_table("memory", DIMS, id_column=Column("langchain_id", "TEXT", nullable=False))
        store = PGVectorStore.create_sync(engine, embedding_service=HashedNgramEmbeddings(), table_name="memory")
        for i in range(0, len(entries), 500):
            batch = entries[i : i + 500]
            store.add_embeddings(
                [e["content"] for e in batch],
                [hashed_ngrams(e["content"]) for e in batch],
                metadatas=[{k: v for k, v in e.items() if k not in ("content", "id")} for e in batch],
                ids=[e["id"] for e in batch],
            )
        store.apply_vector_index(HNSWIndex())

        async def analyze() -> None:
            async with engine._pool.connect() as conn:
                await conn.execute(text("ANALYZE memory"))
                await conn.commit()

        engine._run_as_sync(analyze())
    finally:
        engine._run_as_sync(engine.close())


def pools_reached(docs: Sequence[Any]) -> int:
    """How many of the pool plan's non-correction pools have an entry here."""
    present = {d.metadata.get("type") for d in docs}
    return sum(1 for p in synth.POOLS if p.types and "correction" not in p.types and present & set(p.types))


def run(
    label: str, call: Callable[[str, str], Tuple[List[Any], Optional[int]]], queries: List[str], tenants: int
) -> str:
    times: List[float] = []
    reached: List[int] = []
    ran_out: List[int] = []
    for position, message in enumerate(queries):
        start = time.perf_counter()
        docs, out = call(message, tenant_of(position, tenants))
        times.append(time.perf_counter() - start)
        reached.append(pools_reached(docs))
        if out is not None:
            ran_out.append(out)
    p50, p95 = percentiles(times)
    line = "%-6s p50 %7.1f ms  p95 %7.1f ms  pools reached %.2f/3" % (label, p50, p95, statistics.mean(reached))
    if ran_out:
        line += "  store_ran_out %.2f pools/call" % statistics.mean(ran_out)
    return line


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=20_000)
    parser.add_argument("--tenants", type=int, default=10)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--fetch-k", type=int, default=20)
    parser.add_argument(
        "--force-index",
        action="store_true",
        help="query connections with enable_seqscan = off (the planner must use HNSW)",
    )
    args = parser.parse_args(argv)
    from langchain_postgres import PGEngine, PGVectorStore

    entries = synth.make_store(args.entries, corrections=12 * args.tenants)
    for position, entry in enumerate(entries):
        entry["namespace"] = tenant_of(position, args.tenants)
    queries = [q["message"] for q in synth.make_queries(args.queries)]
    k = sum(p.max_entries for p in synth.POOLS)
    with EmbeddedPostgres() as server:
        url = server.create_database("bench_v2").url
        started = time.perf_counter()
        load(url, entries)
        print(
            "v2 PGVectorStore, HNSW%s: %d entries in %d tenants, %d queries, fetch_k %d, loaded in %.0f s"
            % (
                " forced" if args.force_index else "",
                len(entries),
                args.tenants,
                len(queries),
                args.fetch_k,
                time.perf_counter() - started,
            )
        )
        options = {"connect_args": {"options": "-c enable_seqscan=off"}} if args.force_index else {}
        engine = PGEngine.from_connection_string(url, **options)
        try:
            store = PGVectorStore.create_sync(engine, embedding_service=HashedNgramEmbeddings(), table_name="memory")

            def wrapped(search: Search) -> Any:
                return dict_filter(search)

            def retriever(own: bool, tenant: str) -> PoolSplitRetriever:
                return PoolSplitRetriever.from_vectorstore(
                    store,
                    synth.POOLS,
                    fetch_k=args.fetch_k,
                    now=synth.NOW,
                    visibility=Visibility(namespace=tenant),
                    filter_builder=wrapped if own else None,
                )

            kept = {
                (own, t): retriever(own, tenant_of(t, args.tenants))
                for own in (True, False)
                for t in range(args.tenants)
            }

            def pools(own: bool) -> Callable[[str, str], Tuple[List[Any], Optional[int]]]:
                def call(message: str, tenant: str) -> Tuple[List[Any], Optional[int]]:
                    r = kept[(own, int(tenant.rsplit("-", 1)[1]))]
                    docs = r.invoke(message)
                    assert r.last_selection is not None
                    return docs, len(r.last_selection.notes["recall"]["store_ran_out"])

                return call

            def plain(message: str, tenant: str) -> Tuple[List[Any], Optional[int]]:
                return store.similarity_search(message, k=k, filter={"namespace": tenant}), None

            for call in (plain, pools(True), pools(False)):  # warm the cache once
                call(queries[0], tenant_of(0, args.tenants))
            print(run("plain", plain, queries, args.tenants))
            print(run("own", pools(True), queries, args.tenants))
            print(run("ours", pools(False), queries, args.tenants))
        finally:
            engine._run_as_sync(engine.close())


if __name__ == "__main__":
    main()
