"""Benchmark: pool-split recall over LlamaIndex's ``PGVectorStore`` (HNSW),
before and after ``install_filter_index``, against one plain filtered top-k
measured in the same run.

    python benchmarks/stores_pg_llama_index.py                    # 100k entries, 10 tenants, 30 queries
    python benchmarks/stores_pg_llama_index.py --entries 20000 --queries 20

The LlamaIndex counterpart of ``benchmarks/stores_pg.py`` (same synthetic
store, tenants, pools and embedding; its own throwaway Postgres): the
entries go into ``data_memory`` through ``PGVectorStore.add`` (embeddings
computed first, outside the timing), then an HNSW index. Per query, for
the query's tenant:

- plain: ``index.as_retriever(similarity_top_k=k, filters=namespace ==
  tenant).retrieve(query)``, the store's own filtered search (k = the
  pools' total contextual entry cap), with ``hnsw.iterative_scan =
  relaxed_order`` for the session so it returns its k;
- pools: ``PoolSplitRetriever.from_vector_store_index(index, pools,
  setup_store=False).retrieve_with_selection(query, namespace=tenant)``
  (by default its first search would create the filter index, which the
  first row here measures without).

Printed (nothing is written to the docs): latency p50/p95 of both, their
ratio, how many of the tenant's corrections each result holds, and each
search of the recall plan timed alone (with how often it was read through
the filter index, or completed by an exact search).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import synth  # noqa: E402
from pg_embeddings import DIMS, HashedNgramLlamaEmbedding, hashed_ngrams  # noqa: E402
from pg_server import EmbeddedPostgres  # noqa: E402

from poolsplit_adapters.llama_index import PoolSplitRetriever  # noqa: E402
from poolsplit_adapters.llama_index.nodes import nodes_from  # noqa: E402
from poolsplit_adapters.stores.postgres import install_filter_index  # noqa: E402

SERVER_SETTINGS = {"maintenance_work_mem": "1GB", "shared_buffers": "512MB", "autovacuum": "off"}
SESSION = {"options": "-c hnsw.iterative_scan=relaxed_order"}


def percentiles(samples: Sequence[float]) -> Tuple[float, float]:
    """(p50, p95) in milliseconds."""
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return statistics.median(ordered) * 1000, p95 * 1000


def make_store(url: str, **engine: Any) -> Any:
    from llama_index.vector_stores.postgres import PGVectorStore

    return PGVectorStore(
        connection_string=url, async_connection_string=url, table_name="memory", embed_dim=DIMS, **engine
    )


def tenant_of(position: int, tenants: int) -> str:
    return "tenant-%d" % (position % tenants)


def run_queries(store: Any, queries: List[Dict[str, Any]], k: int, fetch_k: int, tenants: int) -> Dict[str, Any]:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters

    index = VectorStoreIndex.from_vector_store(store, embed_model=HashedNgramLlamaEmbedding())
    # setup_store=False: the "before install_filter_index" row stands for a
    # store without the index, which the retriever's first use would create.
    retriever = PoolSplitRetriever.from_vector_store_index(
        index, synth.POOLS, fetch_k=fetch_k, now=synth.NOW, setup_store=False
    )
    plain_t: List[float] = []
    pool_t: List[float] = []
    plain_fix: List[int] = []
    pool_fix: List[int] = []
    for position, context in enumerate(queries):
        tenant = tenant_of(position, tenants)
        only = MetadataFilters(filters=[MetadataFilter(key="namespace", value=tenant, operator=FilterOperator.EQ)])
        start = time.perf_counter()
        top = index.as_retriever(similarity_top_k=k, filters=only).retrieve(context["message"])
        plain_t.append(time.perf_counter() - start)
        start = time.perf_counter()
        got, _ = retriever.retrieve_with_selection(context["message"], namespace=tenant)
        pool_t.append(time.perf_counter() - start)
        plain_fix.append(sum(1 for n in top if n.node.metadata.get("scope") == "always"))
        pool_fix.append(sum(1 for n in got if n.node.metadata.get("scope") == "always"))
    return {
        "plain": percentiles(plain_t),
        "pools": percentiles(pool_t),
        "fix": (plain_fix, pool_fix),
        "sub": sub_searches(store, queries, fetch_k, tenants),
    }


def sub_searches(store: Any, queries: List[Dict[str, Any]], fetch_k: int, tenants: int) -> Dict[str, Any]:
    """Each search of the recall plan alone (its statements, one after
    another): label -> ((p50, p95) ms, read through the filter index in
    how many of the queries, completed by an exact search in how many)."""
    from poolsplit_adapters import Visibility
    from poolsplit_adapters.recall import RecallPlan
    from poolsplit_adapters.stores.vectorstores.llama_index_search import PGVectorStoreSearch

    times: Dict[str, List[float]] = {}
    filtered: Dict[str, int] = {}
    completed: Dict[str, int] = {}
    for position, context in enumerate(queries):
        vector = hashed_ngrams(context["message"])
        plan = RecallPlan(synth.POOLS, fetch_k=fetch_k).searches(Visibility(namespace=tenant_of(position, tenants)))
        for search in plan:
            runner = PGVectorStoreSearch(store)
            start = time.perf_counter()
            rows = runner.rows(search, vector)
            times.setdefault(search.label, []).append(time.perf_counter() - start)
            filtered[search.label] = filtered.get(search.label, 0) + runner.filtered(search, rows)
            completed[search.label] = completed.get(search.label, 0) + len(runner.completed)
    return {label: (percentiles(ts), filtered[label], completed[label]) for label, ts in times.items()}


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--batch", type=int, default=1000, help="nodes per PGVectorStore.add call")
    parser.add_argument("--fetch-k", type=int, default=20, help="per-pool recall size")
    parser.add_argument("--tenants", type=int, default=10, help="namespaces the entries are spread over")
    args = parser.parse_args(argv)

    entries = synth.make_store(args.entries, corrections=12 * args.tenants)
    for position, entry in enumerate(entries):
        entry["namespace"] = tenant_of(position, args.tenants)
    nodes = nodes_from(entries)
    for node in nodes:
        node.embedding = hashed_ngrams(node.get_content())
    queries = synth.make_queries(args.queries)
    k = sum(p.max_entries for p in synth.POOLS)
    print(
        "LlamaIndex PGVectorStore HNSW benchmark: %d entries in %d tenants (12 corrections each), %d queries, "
        "dims %d, k %d, fetch_k %d, %d cores"
        % (args.entries, args.tenants, args.queries, DIMS, k, args.fetch_k, os.cpu_count() or 0)
    )
    with EmbeddedPostgres(SERVER_SETTINGS) as pg:
        url = pg.create_database("bench").url
        loader = make_store(url)
        start = time.perf_counter()
        for i in range(0, len(nodes), args.batch):
            loader.add(nodes[i : i + args.batch])
        print("ingest: %d nodes in %.1fs" % (len(nodes), time.perf_counter() - start))
        start = time.perf_counter()
        with loader._engine.begin() as conn:
            conn.exec_driver_sql("CREATE INDEX memory_hnsw ON data_memory USING hnsw (embedding vector_cosine_ops)")
            conn.exec_driver_sql("ANALYZE data_memory")
        print("HNSW build (m=16, ef_construction=64) and ANALYZE: %.1fs" % (time.perf_counter() - start))
        for label, setup in (("HNSW, after ANALYZE", False), ("HNSW + install_filter_index", True)):
            if setup:
                install_filter_index(loader)
            store = make_store(url, create_engine_kwargs={"connect_args": SESSION})
            run_queries(store, queries[: args.tenants], k, args.fetch_k, args.tenants)  # warm-up
            result = run_queries(store, queries, k, args.fetch_k, args.tenants)
            store._engine.dispose()
            (plain50, plain95), (pool50, pool95) = result["plain"], result["pools"]
            plain_fix, pool_fix = result["fix"]
            print("\n%s" % label)
            print(
                "  plain top-k: p50 %.1f ms, p95 %.1f ms; corrections %.2f of 12"
                % (plain50, plain95, statistics.mean(plain_fix))
            )
            print(
                "  pool split:  p50 %.1f ms, p95 %.1f ms; corrections %.2f of 12 (min %d)"
                % (pool50, pool95, statistics.mean(pool_fix), min(pool_fix))
            )
            print("  ratio pool split / plain top-k: %.1fx at p50, %.1fx at p95" % (pool50 / plain50, pool95 / plain95))
            for sub, ((p50, p95), filtered, completed) in sorted(result["sub"].items()):
                print(
                    "  - search %s alone: p50 %.1f ms, p95 %.1f ms; read through the filter index %d, completed %d"
                    " (of %d)" % (sub, p50, p95, filtered, completed, len(queries))
                )
        loader._engine.dispose()


if __name__ == "__main__":
    main()
